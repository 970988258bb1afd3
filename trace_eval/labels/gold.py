"""Gold pairs: pairs whose answer is known without anyone's label, mixed in among a team's pairs to check
each annotator's attention (team.py).

trace-eval makes them from the benchmark's own audio: a response against its own copy 20 dB quieter, with
noise at 5 dB SNR, or clipped; the intact copy is the better one, overall and on voice quality. The lead may
also mark pairs of their own as gold, with their answer (`label gold BENCH FILE`). Gold pairs and the labels
given on them live apart, in `BENCH/labels/team/gold/`, so they never count as labels of the benchmark.
"""

from __future__ import annotations

import os
import random
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trace_eval.io import read_json, write_json
from trace_eval.labels.store import (
    FOLDER,
    LabelError,
    PairContent,
    _rows,
    content_key,
    label_spaces,
    sha256_of,
    swapped,
)

if TYPE_CHECKING:
    from trace_eval.bench import Benchmark
    from trace_eval.items import Pair
    from trace_eval.rubrics import Rubric

__all__ = ["CHANGES", "GoldItem", "gold_dir", "make_gold", "mark_gold", "read_gold"]

KIND = "trace-eval gold pairs"
TEAM = "team"  # labels/team: the team's settings, hand-outs and gold, beside the annotators' files
# How a response is changed, and what the change does to the samples (float, [-1, 1]).
CHANGES = ("quieter 20 dB", "noise 5 dB SNR", "clipped")


def gold_dir(root: str | Path) -> Path:
    return Path(root) / FOLDER / TEAM / "gold"


@dataclass
class GoldItem:
    """A pair with a known answer: response 1 and 2 in this item's numbering, `answer` in that numbering."""

    id: str  # "gold:g0003" (made) or "gold:<pair id>" (the lead's)
    kind: str  # one of CHANGES, or "lead"
    source: str  # the benchmark pair it was made from (or is)
    instruction_path: str | None
    instruction_text: str | None
    audio1_path: str
    audio2_path: str
    answer: dict[str, Any]  # dimension (and overall) -> the right label
    languages: dict[str, str] = field(default_factory=dict)
    note: str | None = None  # the lead's words on why

    def pair(self) -> Pair:
        """As a benchmark item, for the page: it looks like any other pair."""
        from trace_eval.items import Pair

        return Pair(
            id=self.id,
            instruction_path=self.instruction_path,
            instruction_text=self.instruction_text,
            audio1_path=self.audio1_path,
            audio2_path=self.audio2_path,
            languages=dict(self.languages),
        )

    def content(self, root: Path) -> PairContent:
        instruction = sha256_of(root / self.instruction_path) if self.instruction_path else None
        responses = (sha256_of(root / self.audio1_path), sha256_of(root / self.audio2_path))
        return PairContent(self.id, instruction, responses, content_key(instruction, responses))


def read_gold(root: str | Path) -> list[GoldItem]:
    path = gold_dir(root) / "gold.json"
    if not path.is_file():
        return []
    doc = read_json(path)
    return [GoldItem(**item) for item in doc.get("items", [])]


def _write(root: Path, items: list[GoldItem]) -> None:
    write_json(gold_dir(root) / "gold.json", {"kind": KIND, "format_version": 1, "items": [asdict(i) for i in items]})


def _answer(rubric: Rubric) -> dict[str, Any]:
    """What a listener must say of intact (1) against changed (2): better overall, and on voice quality."""
    spaces = label_spaces(rubric)
    answer: dict[str, Any] = {k: "1" for k in ("voice_quality", "overall") if k in spaces and "1" in spaces[k].values}
    if not answer:
        raise LabelError(
            f"the {rubric.name} rubric has neither an overall label nor voice quality: made gold pairs need one; "
            "give --gold-rate 0, or mark pairs of your own as gold (label gold BENCH FILE)"
        )
    return answer


def _changed(samples: Any, kind: str, rng: random.Random) -> Any:
    import numpy as np

    if kind == CHANGES[0]:
        return samples * 10 ** (-20 / 20)
    if kind == CHANGES[1]:
        power = float(np.mean(samples**2)) or 1e-6
        noise = np.random.default_rng(rng.randrange(2**32)).standard_normal(samples.shape)
        mixed = samples + noise * np.sqrt(power / 10 ** (5 / 10))
        return np.clip(mixed, -1.0, 1.0)
    peak = float(np.max(np.abs(samples))) or 1.0
    return np.clip(samples * 8.0, -peak / 2, peak / 2)  # flat tops at half the peak: heard as distortion


def _write_wav(path: Path, samples: Any, rate: int) -> None:
    """16-bit PCM, written beside and renamed into place."""
    import soundfile as sf

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".wav", dir=path.parent)
    os.close(fd)
    try:
        sf.write(tmp, samples, rate, subtype="PCM_16")
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def make_gold(bench: Benchmark, rubric: Rubric, n: int, seed: int) -> list[GoldItem]:
    """Every gold pair, with made ones added until there are `n` (kept: the same pairs on every start)."""
    from trace_eval.audio import load_audio

    items = read_gold(bench.root)
    made = [i for i in items if i.kind in CHANGES]
    if len(made) >= n:
        return items
    answer = _answer(rubric)
    usable = [p for p in bench.pairs if not p.pointwise and p.audio1_path and p.audio2_path]
    if not usable:
        raise LabelError("the benchmark has no pair with two responses to make gold pairs from")
    rng = random.Random(f"{seed}:gold")
    folder = gold_dir(bench.root)
    used = {(i.audio1_path, i.kind) for i in made}
    for k in range(len(made), n):
        rng = random.Random(f"{seed}:gold:{k}")  # each made pair its own draw: the same however many are asked
        kind = CHANGES[k % len(CHANGES)]
        # A clip changed the same way twice would be one pair twice (the same audio): draw another clip.
        for _ in range(100):
            source = rng.choice(usable)
            path = source.audio1_path if rng.random() < 0.5 else source.audio2_path
            if (path, kind) not in used:
                break
        assert path is not None
        if (path, kind) in used:
            break  # the benchmark has no clip left to change this way
        used.add((path, kind))
        try:
            audio = load_audio(bench.resolve(path))
        except Exception as e:  # noqa: BLE001 - any decoder's failure: name the clip and go on with another
            raise LabelError(f"gold pair from {path}: the clip does not decode ({e})") from e
        name = f"g{k:04d}.wav"
        _write_wav(folder / name, _changed(audio.samples, kind, rng), audio.sample_rate)
        changed = (folder / name).relative_to(bench.root).as_posix()
        items.append(
            GoldItem(
                id=f"gold:g{k:04d}",
                kind=kind,
                source=source.id,
                instruction_path=source.instruction_path,
                instruction_text=source.instruction_text,
                audio1_path=path,
                audio2_path=changed,
                answer=dict(answer),
                languages={k: v for k, v in source.languages.items() if k == "instruction_language"},
            )
        )
    _write(bench.root, items)
    return items


def mark_gold(bench: Benchmark, rubric: Rubric, path: str | Path) -> tuple[int, list[str]]:
    """The lead's own gold pairs from a CSV or JSON file (`id`, a column per label, optional `note`): each
    checked against the pair (its labels in the rubric's sets; no winner between two identical clips; not
    against the manifest's own label); nothing is marked when any row is refused. Returns (marked, problems)."""
    rows = _rows(Path(path))
    spaces = label_spaces(rubric)
    by_id = {p.id: p for p in bench.pairs}
    items = read_gold(bench.root)
    known = {i.id for i in items}
    problems: list[str] = []
    new: list[GoldItem] = []
    for n, row in enumerate(rows, 1):
        where = f"{Path(path).name} row {n}"
        pid = str(row.get("id") or row.get("pair_id") or "")
        pair = by_id.get(pid)
        if pair is None:
            problems.append(f"{where}: no pair {pid!r} in the benchmark")
            continue
        if pair.pointwise or not (pair.audio1_path and pair.audio2_path):
            problems.append(f"{where}: pair {pid} has one response: gold pairs have two")
            continue
        unknown = sorted(k for k in row if k not in spaces and k not in ("id", "pair_id", "note"))
        if unknown:
            problems.append(
                f"{where}: {', '.join(unknown)}: not a label of the {rubric.name} rubric ({', '.join(spaces)})"
            )
        answer: dict[str, Any] = {}
        for key, space in spaces.items():
            if row.get(key) in (None, ""):
                continue
            label = space.normalise_human(row[key])
            if label is None:
                problems.append(f"{where}: {key} = {row[key]!r} is not {space.describe()}")
            else:
                answer[key] = label
        if not answer:
            problems.append(f"{where}: no answer: give the right label in a column per dimension (overall, ...)")
            continue
        same = sha256_of(bench.resolve(pair.audio1_path)) == sha256_of(bench.resolve(pair.audio2_path))
        for key, label in answer.items():
            if same and label in ("1", "2"):
                problems.append(
                    f"{where}: {key} = {label!r} contradicts pair {pid}: its two responses are the same audio, so "
                    "neither can be better (both_good or both_bad)"
                )
            given = pair.label.get(key)
            if given is not None and spaces[key].normalise_human(given) not in (None, label):
                problems.append(
                    f"{where}: {key} = {label!r} contradicts pair {pid}: the manifest labels it {given!r}; fix the "
                    "file, or the manifest"
                )
        gid = f"gold:{pid}"
        if gid in known:
            problems.append(f"{where}: pair {pid} is gold already")
            continue
        known.add(gid)
        new.append(
            GoldItem(
                id=gid,
                kind="lead",
                source=pid,
                instruction_path=pair.instruction_path,
                instruction_text=pair.instruction_text,
                audio1_path=pair.audio1_path,
                audio2_path=pair.audio2_path,
                answer=answer,
                languages={k: v for k, v in pair.languages.items() if k == "instruction_language"},
                note=str(row["note"]) if row.get("note") else None,
            )
        )
    if problems:
        return 0, problems
    _write(bench.root, items + new)
    return len(new), []


def agrees(answer: dict[str, Any], labels: dict[str, Any], flip: bool) -> bool:
    """Whether `labels` (in the other numbering when `flip`) give the gold answer on every dimension it names."""
    mine = swapped(labels) if flip else labels
    return all(mine.get(k) == v for k, v in answer.items())
