"""Writing a benchmark folder from a plan: every clip at the path the labels name, the manifest, SOURCE.json.

Every source (SpeakBench, S2S-Arena, SageLM, any audio dataset, systems' outputs) ends in a `Plan`: the
manifest items, the clips to write and where each comes from, the problems its join check found, and what
the sources were. From here on nothing depends on where the files came from (a download or a local copy).

A clip is written either as the reference preparation writes it (`encode`: decoded, then written at its
native rate as 16-bit PCM wav, mono) or as it was published (`copy`: the bytes as they are, once they are
known to decode). Each write is atomic, so a file that exists is whole: an interrupted run resumes where it
stopped. SOURCE.json says what the folder was made from; a run whose sources are those of a complete folder
writes nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from trace_eval.audio import AudioLoadingError, load_audio, sha256_file
from trace_eval.io import close_match, read_json, write_json

__all__ = [
    "Clip",
    "Plan",
    "PrepareError",
    "Prepared",
    "Problem",
    "SOURCE_FILE",
    "close_match",
    "prepare_folder",
    "file_entry",
    "file_reader",
    "merge_clips",
    "print_prepared",
]

SOURCE_FILE = "SOURCE.json"
SOURCE_VERSION = 1


class PrepareError(Exception):
    """Preparation cannot go on or did not finish; the message says why and what to do."""


@dataclass(frozen=True)
class Problem:
    """An item that cannot be prepared as its label file says, and why."""

    item: str
    reason: str

    def __str__(self) -> str:
        return f"item {self.item}: {self.reason}"


@dataclass
class Clip:
    """One audio file of the benchmark folder and where its bytes come from."""

    path: str  # relative to the benchmark folder, exactly as the label file names it
    items: list[str]  # the items that use it
    origin: str  # where it comes from, in words, for messages and SOURCE.json
    read: Callable[[], bytes]  # the encoded source audio; raises FileNotFoundError/KeyError when absent
    mode: Literal["encode", "copy"] = "encode"
    suffix: str = ".wav"  # what the source bytes are (a decoder hint)
    # A system's answer (`prepare pairs`): copied as it is even when it is empty or does not decode, since a
    # system that returned nothing, or a broken file, has answered badly and loses its pairs (the judge reads it
    # as an answer that says nothing) rather than leave them out of the count.
    answer: bool = False


@dataclass
class Plan:
    """What a source prepares: the manifest, its clips, the problems its join check found, its sources."""

    benchmark: str
    items: list[dict[str, Any]]
    clips: list[Clip]
    problems: list[Problem] = field(default_factory=list)
    sources: list[dict[str, Any]] = field(default_factory=list)  # repository, revision, files with hashes
    notes: list[str] = field(default_factory=list)  # what the join check could not check, and other remarks
    missing: dict[str, list[str]] = field(default_factory=dict)  # per system: instructions it has no answer for


@dataclass
class Prepared:
    """What `prepare_folder` did."""

    root: Path
    items: int
    written: int  # clips written by this run
    reused: int  # clips an earlier, interrupted run had written
    left_out: list[Problem]
    unchanged: bool  # the folder was already complete from the same sources: nothing was written
    notes: list[str] = field(default_factory=list)
    missing: dict[str, list[str]] = field(default_factory=dict)
    failed_answers: dict[str, str] = field(default_factory=dict)  # answer path -> why it does not decode


def file_entry(path: Path, name: str | None = None) -> dict[str, Any]:
    """A source file as SOURCE.json records it: its name in its repository, size and sha256."""
    return {"path": name or path.name, "bytes": path.stat().st_size, "sha256": sha256_file(path)}


def file_reader(path: Path) -> Callable[[], bytes]:
    """A clip's bytes from a local file (a snapshot's, a system's answer)."""

    def read() -> bytes:
        if not path.is_file():
            raise FileNotFoundError(f"{path} does not exist")
        return path.read_bytes()

    return read


def merge_clips(clips: list[Clip], problems: list[Problem]) -> list[Clip]:
    """One clip per path; two items naming one path for different audio is a problem of both."""
    by_path: dict[str, Clip] = {}
    for clip in clips:
        seen = by_path.get(clip.path)
        if seen is None:
            by_path[clip.path] = clip
        elif seen.origin == clip.origin:
            seen.items += [i for i in clip.items if i not in seen.items]
        else:
            problems += [
                Problem(i, f"{clip.path} is named for {seen.origin} and for {clip.origin}")
                for i in (*seen.items, *clip.items)
            ]
    return list(by_path.values())


def _fingerprint(plan: Plan) -> str:
    """What the folder's content is a function of: the sources, the manifest and how each clip is made."""
    made = [(c.path, c.mode, c.origin) for c in plan.clips]
    text = json.dumps([plan.benchmark, plan.sources, plan.items, made], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _complete(root: Path, fingerprint: str) -> bool:
    """The folder holds a complete preparation from exactly these sources, every file still in place."""
    try:
        source = read_json(root / SOURCE_FILE)
    except (OSError, ValueError):
        return False
    if not isinstance(source, dict) or source.get("fingerprint") != fingerprint or not source.get("complete"):
        return False
    outputs = source.get("outputs", {})
    manifest = root / "manifest.json"
    return manifest.is_file() and all(
        (root / rel).is_file() and (root / rel).stat().st_size == entry.get("bytes") for rel, entry in outputs.items()
    )


def _write_clip(clip: Clip, target: Path) -> None:
    """Decode the source (it must be audio) and write it atomically, encoded or as it is."""
    data = clip.read()
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, probe = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=clip.suffix or ".bin")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        audio = load_audio(probe)  # undecodable, empty or too short audio raises here, naming nothing yet
        if clip.mode == "encode":
            import soundfile as sf

            fd2, encoded = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".wav")
            os.close(fd2)
            try:
                # As the reference preparation: the decoded mono array at its own rate, 16-bit PCM wav.
                sf.write(encoded, audio.samples, audio.sample_rate, subtype="PCM_16", format="WAV")
                _replace(encoded, target)
            except BaseException:
                Path(encoded).unlink(missing_ok=True)
                raise
        else:
            _replace(probe, target)
            probe = ""
    finally:
        if probe:
            Path(probe).unlink(missing_ok=True)


def _write_as_it_is(clip: Clip, target: Path) -> None:
    """A system's answer that does not decode, written atomically byte for byte."""
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(clip.read())
        _replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _replace(tmp: str, target: Path) -> None:
    with open(tmp, "rb") as f:
        os.fsync(f.fileno())
    os.chmod(tmp, 0o644)
    os.replace(tmp, target)


def prepare_folder(
    root: str | Path, plan: Plan, *, skip_bad: bool = False, progress: bool = True, force: bool = False
) -> Prepared:
    """Write `plan` into the benchmark folder `root`; raise PrepareError naming every item it could not prepare
    (unless `skip_bad`, which leaves those items out of the manifest and records why in SOURCE.json)."""
    from tqdm import tqdm

    root = Path(root).resolve()
    _check_items(plan)
    fingerprint = _fingerprint(plan)
    # A label file that is not the release's is said where it is seen, not only in SOURCE.json.
    plan.notes += [
        f"the label file {source.get('local')} is not the release's ({source['release']}): its labels are used as given"
        for source in plan.sources
        if source.get("matches_release") is False and source.get("release")
    ]
    if not force and _complete(root, fingerprint):
        kept = _read_source(root).get("failed_answers") or {}
        return Prepared(root, len(plan.items), 0, 0, [], True, plan.notes, plan.missing, kept)
    root.mkdir(parents=True, exist_ok=True)
    earlier = _read_source(root)
    # Files an interrupted run made from the same sources are whole (atomic writes) and are kept.
    resumable = not force and earlier.get("fingerprint") == fingerprint
    write_json(root / SOURCE_FILE, _source_record(plan, fingerprint, complete=False, outputs={}, left_out=[]))

    problems = list(plan.problems)
    failed: dict[str, str] = {}  # answers written as they are: empty, or not decodable
    joined_badly = {p.item for p in plan.problems}  # their clips are not written: they would go unused
    outputs: dict[str, dict[str, Any]] = {}
    written = reused = 0
    bar = tqdm(total=len(plan.clips), unit="clip", desc=f"prepare {plan.benchmark}", disable=not progress)
    with bar:
        for clip in plan.clips:
            target = root / clip.path
            found = len(problems)
            if all(item in joined_badly for item in clip.items):
                bar.update(1)
                continue
            if not _inside(root, target):
                problems += [Problem(item, f"{clip.path}: outside the benchmark folder") for item in clip.items]
            elif resumable and target.is_file():
                reused += 1
                if clip.answer and clip.path in earlier.get("failed_answers", {}):
                    failed[clip.path] = earlier["failed_answers"][clip.path]
            else:
                try:
                    _write_clip(clip, target)
                    written += 1
                except (FileNotFoundError, KeyError) as error:
                    problems += [
                        Problem(i, f"{clip.path}: missing from the source ({_said(error)})") for i in clip.items
                    ]
                except AudioLoadingError as error:
                    # Named by its path in the folder, not by the temporary copy it was tried as.
                    probe = re.escape(str(target.parent)) + r"/\.[^'\"\s]+"
                    reason = re.sub(probe, clip.path, str(error).split(": ", 1)[-1])
                    if clip.answer:
                        _write_as_it_is(clip, target)
                        failed[clip.path] = reason
                        written += 1
                    else:
                        problems += [Problem(i, f"{clip.path}: {reason} (from {clip.origin})") for i in clip.items]
            if target.is_file() and len(problems) == found:
                outputs[clip.path] = {
                    "bytes": target.stat().st_size,
                    "sha256": sha256_file(target),
                    "from": clip.origin,
                }
            bar.update(1)

    bad = {p.item for p in problems}
    if problems and not skip_bad:
        write_json(
            root / SOURCE_FILE,
            _source_record(plan, fingerprint, complete=False, outputs=outputs, left_out=problems, failed=failed),
        )
        raise PrepareError(_problems_message(plan.benchmark, problems))
    items = [item for item in plan.items if _item_id(item) not in bad]
    if not items:
        raise PrepareError(f"{plan.benchmark}: no item could be prepared")
    write_json(root / "manifest.json", items)
    record = _source_record(plan, fingerprint, complete=True, outputs=outputs, left_out=problems, failed=failed)
    write_json(root / SOURCE_FILE, record)
    _check_loads(root)
    return Prepared(root, len(items), written, reused, problems, False, plan.notes, plan.missing, failed)


def _said(error: BaseException) -> str:
    text = str(error.args[0]) if isinstance(error, KeyError) and error.args else str(error)
    return text or type(error).__name__


def _inside(root: Path, target: Path) -> bool:
    return os.path.normpath(target).startswith(str(root) + os.sep)


def _item_id(item: dict[str, Any]) -> str:
    return str(item.get("id", item.get("index")))


def _read_source(root: Path) -> dict[str, Any]:
    try:
        source = read_json(root / SOURCE_FILE)
    except (OSError, ValueError):
        return {}
    return source if isinstance(source, dict) else {}


def _source_record(
    plan: Plan,
    fingerprint: str,
    complete: bool,
    outputs: dict[str, Any],
    left_out: list[Problem],
    failed: dict[str, str] | None = None,
) -> dict[str, Any]:
    from trace_eval import __version__

    return {
        "version": SOURCE_VERSION,
        "benchmark": plan.benchmark,
        "prepared_by": f"trace-eval {__version__}",
        "complete": complete,
        "fingerprint": fingerprint,
        "sources": plan.sources,
        "notes": plan.notes,
        "missing_answers": plan.missing,
        "left_out": [{"item": p.item, "reason": p.reason} for p in left_out],
        "failed_answers": dict(sorted((failed or {}).items())),
        "outputs": outputs,
    }


def _problems_message(benchmark: str, problems: list[Problem]) -> str:
    items = sorted({p.item for p in problems}, key=lambda s: (len(s), s))
    shown = "\n  ".join(str(p) for p in problems[:50])
    more = f"\n  ... and {len(problems) - 50} more (all in SOURCE.json, left_out)" if len(problems) > 50 else ""
    return (
        f"{benchmark}: {len(items)} item(s) could not be prepared:\n  {shown}{more}\n"
        "The clips of the other items are written and kept. Fix the source or the label file and run again "
        "(done work is reused), or pass --skip-bad to write the manifest without these items."
    )


def _check_items(plan: Plan) -> None:
    """The items must make a manifest the other commands read (labels in their label space, no misspelled
    field): checked before any audio is written."""
    from trace_eval.bench import ManifestError, load_benchmark

    with tempfile.TemporaryDirectory(prefix="trace-eval-manifest-") as tmp:
        write_json(Path(tmp) / "manifest.json", plan.items)
        try:
            load_benchmark(tmp, check_audio=False)
        except ManifestError as error:
            shown = "\n  ".join(error.problems[:50])
            raise PrepareError(
                f"{plan.benchmark}: the items do not make a valid manifest "
                f"({len(error.problems)} problem(s)):\n  {shown}"
            ) from error


def _check_loads(root: Path) -> None:
    """The folder must be one the other commands read unchanged."""
    from trace_eval.bench import ManifestError, load_benchmark

    try:
        load_benchmark(root)
    except ManifestError as error:  # a bug here, not the user's: say so plainly
        raise PrepareError(f"the prepared manifest does not load: {error}") from error


def print_prepared(done: Prepared, out: Any = None) -> None:
    """The summary a command prints."""
    out = out or sys.stdout
    if done.unchanged:
        print(f"{done.root}: already complete from the same sources ({done.items} items); nothing written", file=out)
    else:
        again = f", {done.reused} kept from an earlier run" if done.reused else ""
        print(f"{done.root}: {done.items} items, {done.written} clips written{again}", file=out)
    for problem in done.left_out:
        print(f"  left out: {problem}", file=out)
    for path, reason in done.failed_answers.items():
        print(f"  failed answer, kept (it loses its pairs): {path}: {reason}", file=out)
    for system, ids in done.missing.items():
        shown = ", ".join(ids[:10]) + (f", ... ({len(ids)} in all)" if len(ids) > 10 else "")
        print(f"  {system}: no answer for {len(ids)} instruction(s): {shown}", file=out)
    for note in done.notes:
        print(f"  note: {note}", file=out)
