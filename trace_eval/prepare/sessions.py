"""A benchmark of sessions from a released benchmark's folders and several systems' outputs.

The release holds one folder per sample with the user's channel (`input.wav`, as Full-Duplex-Bench and FLEXI
ship them) and its annotations; each system's outputs lie in a copy of that tree, `output.wav` (and the
benchmark's `output.json` transcript, where made) in each sample's folder, as those benchmarks' inference
scripts write them. The benchmark written:

    OUT/<system>/<sample>/input.wav, output.wav, the annotations, output.json where the system's folder has one
    OUT/sessions.jsonl   one line per session: {"id", "system", "sample", "folder"} (sessions/manifest.py)
    OUT/SOURCE.json      the release and the systems' folders, and what was missing

`python -m trace_eval sessions OUT --judge ...` judges it; `sessions OUT/<system>` scores one system. A system
with no output for a sample has not answered: its session is written with a silent channel (so it loses its
pairs) and SOURCE.json says so; an output that does not decode is refused with its path, or with `skip_bad`
that session is left out with the reason.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import soundfile as sf

from trace_eval.io import atomic_write_text, write_json
from trace_eval.prepare.folder import SOURCE_FILE, Prepared, PrepareError, Problem

__all__ = ["prepare_sessions"]

USER_FILE = "input.wav"
SYSTEM_FILE = "output.wav"
KEPT = ("pause.json", "turn_taking.json", "interrupt.json", "metadata.json", "input.json")


def prepare_sessions(
    out: str | Path,
    release: str | Path,
    systems: dict[str, str | Path],
    *,
    skip_bad: bool = False,
    progress: bool = True,
    force: bool = False,
) -> Prepared:
    from tqdm import tqdm

    from trace_eval.audio import AudioLoadingError, load_channels

    out, release = Path(out), Path(release)
    samples = sorted(p.parent.relative_to(release) for p in release.rglob(USER_FILE))
    if not samples:
        raise PrepareError(f"{release}: no sample folder (none holds an {USER_FILE})")
    for name, folder in systems.items():
        if not Path(folder).is_dir():
            raise PrepareError(f"--system {name}={folder}: not a folder")
        if name in (SOURCE_FILE, "sessions.jsonl") or "/" in name:
            raise PrepareError(f"--system {name}: not a name a folder can have here")
    written = reused = 0
    missing: dict[str, list[str]] = {}
    left_out: list[Problem] = []
    lines = []
    work = [(name, Path(folder), sample) for name, folder in systems.items() for sample in samples]
    for name, folder, sample in tqdm(work, unit="session", desc="sessions", disable=not progress):
        target = out / name / sample
        answer = folder / sample / SYSTEM_FILE
        if answer.is_file():
            try:
                load_channels(answer)
            except AudioLoadingError as e:
                if not skip_bad:
                    raise PrepareError(f"{answer}: {e} (--skip-bad leaves this session out)") from None
                left_out.append(Problem(f"{name}/{sample}", f"{answer}: {e}"))
                continue
        else:
            missing.setdefault(name, []).append(str(sample))
        if (target / SYSTEM_FILE).is_file() and not force:
            reused += 1
        else:
            _write_session(release / sample, answer if answer.is_file() else None, folder / sample, target)
            written += 1
        lines.append(
            json.dumps({"id": f"{name}/{sample}", "system": name, "sample": str(sample), "folder": f"{name}/{sample}"})
        )
    atomic_write_text(out / "sessions.jsonl", "\n".join(lines) + "\n")
    write_json(
        out / SOURCE_FILE,
        {
            "kind": "sessions",
            "release": str(release.resolve()),
            "systems": {name: str(Path(folder).resolve()) for name, folder in systems.items()},
            "samples": len(samples),
            "missing": missing,
            "missing_means": "the system gave no output for the sample: its session holds a silent channel",
            "left_out": [{"item": p.item, "reason": p.reason} for p in left_out],
        },
    )
    notes = [f"{len(lines)} sessions of {len(systems)} systems on {len(samples)} user channels in sessions.jsonl"]
    for name, ids in missing.items():
        shown = ", ".join(ids[:5]) + (f", ... ({len(ids)} in all)" if len(ids) > 5 else "")
        notes.append(f"{name}: no {SYSTEM_FILE} for {len(ids)} sample(s), written as silence (it loses them): {shown}")
    return Prepared(out, len(lines), written, reused, left_out, False, notes)


def _write_session(sample: Path, answer: Path | None, answered_in: Path, target: Path) -> None:
    """The session folder, written whole into a temporary folder beside it, then renamed."""
    scratch = target.with_name(f".{target.name}.tmp")
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    _link_or_copy(sample / USER_FILE, scratch / USER_FILE)
    for name in KEPT:
        if (sample / name).is_file():
            _link_or_copy(sample / name, scratch / name)
    if answer is not None:
        _link_or_copy(answer, scratch / SYSTEM_FILE)
        if (answered_in / "output.json").is_file():
            _link_or_copy(answered_in / "output.json", scratch / "output.json")
    else:  # no answer: silence as long as the user's channel
        info = sf.info(sample / USER_FILE)
        sf.write(scratch / SYSTEM_FILE, np.zeros(info.frames, dtype=np.float32), info.samplerate)
    if target.exists():
        shutil.rmtree(target)
    os.replace(scratch, target)


def _link_or_copy(source: Path, target: Path) -> None:
    try:
        os.link(source, target)  # the release's audio is not duplicated where the file system allows
    except OSError:
        shutil.copy2(source, target)
