"""Pairs from systems' outputs: the instructions, one folder of answers per system, and a schedule.

Instructions are a folder of audio files (an instruction's id is its path without the suffix; its text,
when given, in `<id>.txt` beside it) or a
manifest (JSON list or JSON lines of `{"id", "instruction_path", "instruction_text"}`, paths relative to
it). A system's answer to instruction `ID` is `ID.<wav|mp3|flac|ogg|m4a|opus>` in its folder. Files are
copied into the benchmark folder as they are (`instructions/`, `answers/<system>/`) once they decode.

Schedules:
- `reference`: every system against one reference system, on every instruction both answered;
- `all`: every two systems on every instruction both answered;
- `sample`: `per_instruction` pairs drawn per instruction with a fixed seed.
In every schedule each system sits first and second as often as can be (to within one pair), so a judge's
position bias does not favour a system. An instruction a system did not answer is reported for that system,
and the pairs it would be in are not made.
"""

from __future__ import annotations

import dataclasses
import difflib
import itertools
import json
import random
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trace_eval.languages import code_problem
from trace_eval.prepare.folder import (
    Clip,
    Plan,
    Prepared,
    PrepareError,
    Problem,
    close_match,
    file_entry,
    file_reader,
    merge_clips,
    prepare_folder,
)

__all__ = ["AUDIO_SUFFIXES", "SCHEDULES", "Instruction", "plan_pairs", "prepare_pairs", "read_instructions"]

AUDIO_SUFFIXES = (".wav", ".mp3", ".flac", ".ogg", ".m4a", ".opus")
SCHEDULES = ("reference", "all", "sample")


@dataclass(frozen=True)
class Instruction:
    id: str
    audio: Path | None
    text: str | None
    language: str | None = None  # declared: the manifest row's instruction_language, else --instruction-language


def read_instructions(path: str | Path, language: str | None = None) -> list[Instruction]:
    """The instructions of a folder or a manifest; `language`, declared for those that declare none."""
    path = Path(path)
    if language is not None and code_problem(language):
        raise PrepareError(f"--instruction-language: {code_problem(language)}")
    if path.is_dir():
        found = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in AUDIO_SUFFIXES)
        if not found:
            raise PrepareError(f"{path}: no audio files ({', '.join(AUDIO_SUFFIXES)})")
        instructions = [Instruction(p.relative_to(path).with_suffix("").as_posix(), p, _sidecar(p)) for p in found]
    elif path.is_file():
        instructions = _manifest_instructions(path)
    else:
        raise PrepareError(f"--instructions {path}: not found{close_match(path)}")
    if language is not None:
        instructions = [i if i.language else dataclasses.replace(i, language=language) for i in instructions]
    counts = Counter(i.id for i in instructions)
    twice = sorted(i for i, n in counts.items() if n > 1)
    if twice:
        raise PrepareError(f"{path}: instruction id(s) given twice: {', '.join(twice)}")
    return instructions


def _sidecar(audio: Path) -> str | None:
    """The text of an instruction from `<id>.txt` beside its audio, when there is one."""
    text = audio.with_suffix(".txt")
    if not text.is_file():
        return None
    return _utf8(text).strip() or None


def _utf8(path: Path) -> str:
    """A text file's text; one in another encoding stops with where it breaks and how to convert it."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise PrepareError(
            f"{path}: not UTF-8 text (byte 0x{error.object[error.start]:02x} at offset {error.start}); save it as "
            f"UTF-8, e.g. iconv -f latin1 -t utf-8 {path} > {path.name}.utf8 && mv {path.name}.utf8 {path}"
        ) from None


def _manifest_instructions(path: Path) -> list[Instruction]:
    text = _utf8(path)
    try:
        rows = (
            [json.loads(line) for line in text.splitlines() if line.strip()]
            if path.suffix == ".jsonl"
            else json.loads(text)
        )
    except json.JSONDecodeError as error:
        raise PrepareError(f"{path}: not JSON ({error})") from error
    if not isinstance(rows, list) or not rows:
        raise PrepareError(f"{path}: expected a list of instructions")
    out = []
    for n, row in enumerate(rows):
        iid = row.get("id", row.get("index")) if isinstance(row, dict) else None
        audio, said = (
            (row.get("instruction_path"), row.get("instruction_text")) if isinstance(row, dict) else (None, None)
        )
        if iid is None or not (audio or said):
            raise PrepareError(f"{path}: row {n} needs an id and an instruction_path or instruction_text")
        language = row.get("instruction_language")
        if language is not None and code_problem(language):
            raise PrepareError(f"{path}: row {n}, instruction_language: {code_problem(language)}")
        out.append(Instruction(str(iid), path.parent / audio if audio else None, said, language))
    return out


def prepare_pairs(
    out: str | Path,
    instructions: str | Path,
    systems: dict[str, str | Path],
    schedule: str = "reference",
    reference: str | None = None,
    per_instruction: int = 1,
    seed: int = 0,
    skip_bad: bool = False,
    progress: bool = True,
    force: bool = False,
    instruction_language: str | None = None,
) -> Prepared:
    """The benchmark folder of pairs `out`; `instruction_language`: the language the instructions are in, for
    those whose manifest row declares none (docs/languages.md: declare what the audio cannot tell surely)."""
    found = read_instructions(instructions, instruction_language)
    plan = plan_pairs(found, systems, schedule, reference, per_instruction, seed)
    return prepare_folder(out, plan, skip_bad=skip_bad, progress=progress, force=force)


def _answers(name: str, folder: Path, ids: list[str], problems: list[Problem]) -> dict[str, Path]:
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "not found"
        raise PrepareError(f"--system {name}={folder}: {what}{close_match(folder)}")
    found: dict[str, Path] = {}
    for iid in ids:
        files = [folder / f"{iid}{s}" for s in AUDIO_SUFFIXES if (folder / f"{iid}{s}").is_file()]
        if len(files) > 1:
            problems.append(Problem(f"{iid}/{name}", f"{len(files)} answers: {', '.join(f.name for f in files)}"))
        elif files:
            found[iid] = files[0]
    return found


def _matches_nothing(name: str, folder: Path, ids: list[str]) -> str:
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    held = (
        f"its {len(files)} file(s): {', '.join(files[:5])}{', …' if len(files) > 5 else ''}" if files else "it is empty"
    )
    return (
        f"system {name}: no answer in {folder} is named after an instruction ({held}); an answer to instruction "
        f"ID is ID.wav (or .mp3, .flac, ...), with instruction ids {', '.join(ids[:5])}{', …' if len(ids) > 5 else ''}"
    )


def plan_pairs(
    instructions: list[Instruction],
    systems: dict[str, str | Path],
    schedule: str = "reference",
    reference: str | None = None,
    per_instruction: int = 1,
    seed: int = 0,
) -> Plan:
    if len(systems) < 2:
        raise PrepareError("pairs need at least two systems (--system NAME=FOLDER, repeated)")
    if schedule not in SCHEDULES:
        raise PrepareError(f"schedule {schedule!r}: expected one of {', '.join(SCHEDULES)}")
    if schedule == "reference" and reference is None:
        raise PrepareError(
            f"the reference schedule (the default) pits every system against one: name it with --reference "
            f"({' or '.join(systems) if len(systems) == 2 else 'one of ' + ', '.join(systems)}), or pass "
            "--schedule all for every two systems"
        )
    if schedule == "reference" and reference not in systems:
        close = difflib.get_close_matches(str(reference), list(systems), n=1)
        hint = f"; did you mean {close[0]}?" if close else ""
        raise PrepareError(f"--reference {reference}: not one of the systems ({', '.join(systems)}){hint}")
    if schedule == "sample" and per_instruction < 1:
        raise PrepareError("--per-instruction must be at least 1")
    problems: list[Problem] = []
    ids = [i.id for i in instructions]
    answers = {name: _answers(name, Path(folder), ids, problems) for name, folder in systems.items()}
    for name, found in answers.items():
        if not found:  # never dropped in silence: its folder holds something else
            raise PrepareError(_matches_nothing(name, Path(systems[name]), ids))
    missing = {name: [i for i in ids if i not in found] for name, found in answers.items()}
    missing = {name: gone for name, gone in missing.items() if gone}

    names = list(systems)
    first: Counter = Counter()
    second: Counter = Counter()
    rng = random.Random(seed)
    scheduled: list[tuple[Instruction, str, str]] = []
    for instruction in instructions:
        present = [n for n in names if instruction.id in answers[n]]
        if schedule == "reference":
            if reference not in present:
                continue
            candidates = [(s, reference) for s in present if s != reference]
        else:
            candidates = list(itertools.combinations(present, 2))
            if schedule == "sample":
                candidates = rng.sample(candidates, min(per_instruction, len(candidates)))
        for a, b in candidates:
            # Seat first whichever has sat first less often; the seed breaks a tie.
            lead_a = first[a] - second[a]
            lead_b = first[b] - second[b]
            if lead_a > lead_b or (lead_a == lead_b and rng.random() < 0.5):
                a, b = b, a
            first[a] += 1
            second[b] += 1
            scheduled.append((instruction, a, b))

    items: list[dict[str, Any]] = []
    clips: list[Clip] = []
    for instruction, a, b in scheduled:
        pid = f"{instruction.id}:{a}-vs-{b}"
        item: dict[str, Any] = {"id": pid, "instruction_id": instruction.id}
        if instruction.audio is not None:
            rel = f"instructions/{instruction.id}{instruction.audio.suffix.lower()}"
            item["instruction_path"] = rel
            clips.append(
                Clip(
                    rel, [pid], str(instruction.audio), file_reader(instruction.audio), "copy", instruction.audio.suffix
                )
            )
        if instruction.text:
            item["instruction_text"] = instruction.text
        if instruction.language:
            item["instruction_language"] = instruction.language
        for field, system in (("audio1_path", a), ("audio2_path", b)):
            source = answers[system][instruction.id]
            rel = f"answers/{system}/{instruction.id}{source.suffix.lower()}"
            item[field] = rel
            clips.append(Clip(rel, [pid], str(source), file_reader(source), "copy", source.suffix, answer=True))
        item["model_a"], item["model_b"] = a, b
        items.append(item)
    if not items:
        raise PrepareError(
            "no pair could be made: no instruction has answers from two systems"
            + (f" (with the reference {reference})" if schedule == "reference" else "")
        )
    clips = merge_clips(clips, problems)
    sources: list[dict[str, Any]] = [
        {
            "kind": "system",
            "system": name,
            "local": str(Path(folder).resolve()),
            "files": [file_entry(p, p.name) for p in answers[name].values()],
        }
        for name, folder in systems.items()
    ]
    sources.insert(
        0,
        {
            "kind": "instructions",
            "files": [file_entry(i.audio, i.id + i.audio.suffix) for i in instructions if i.audio is not None],
            "texts": {i.id: i.text for i in instructions if i.text},
        },
    )
    balance = ", ".join(f"{n} {first[n]}/{second[n]}" for n in names)
    notes = [f"{schedule} schedule, seed {seed}: {len(items)} pairs; first/second per system: {balance}"]
    return Plan("pairs", items, clips, problems, sources, notes, missing)
