"""The audit's own benchmark: chosen response clips, their changed copies, and every pair in both orders.

Written as an ordinary benchmark folder (manifest.json + audio), so Stage 1 and the judge run on it unchanged,
with their caches: copies are deterministic, so their blueprints are found again by audio hash on a re-run.

    AUDIT/bench/manifest.json            items <clip>.<probe>.copy1 (copy first) and .copy2 (copy second)
    AUDIT/bench/audio/<clip>/original.wav  the response as it is (its bytes, when a mono 16-bit wav)
    AUDIT/bench/audio/<clip>/<probe>.wav   the changed copy
    AUDIT/bench/audio/<clip>/<probe>.reference.wav  the reference, where the original had to be lowered
    AUDIT/bench/instructions/<sha>.<ext>   the instructions, as they are
    AUDIT/copies.json                    what each copy is: clip, probe, seed, notes (clipping avoided, ...);
                                         `skipped`: the clips a word probe had no words to change in, and why
"""

from __future__ import annotations

import difflib
import hashlib
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from trace_eval.audio import AudioLoadingError, load_audio, sha256_file
from trace_eval.bench import Benchmark, Pair
from trace_eval.io import read_json, write_json
from trace_eval.stage1.store import BlueprintStore

from .probes import PROBES, ClipWords, probe_seed

__all__ = ["Clip", "ProbePair", "choose_clips", "write_audit_bench", "COPIES"]

COPIES = "copies.json"
ORDERS = ("copy1", "copy2")  # the copy in position 1, then in position 2


@dataclass(frozen=True)
class Clip:
    """A response clip of the benchmark being audited, with the item it answers."""

    key: str  # folder name inside the audit bench
    path: str  # relative to the benchmark
    pair: Pair


@dataclass(frozen=True)
class ProbePair:
    """One item of the audit bench: a copy and its reference, in one order."""

    id: str
    clip: str
    probe: str
    copy_position: int  # 1 or 2


def _key(path: str) -> str:
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(path).stem).strip("-")[:40] or "clip"
    return f"{stem}-{hashlib.sha256(path.encode()).hexdigest()[:8]}"


def choose_clips(
    bench: Benchmark,
    count: int | None,
    seed: int = 0,
    ids: list[str] | None = None,
    decidable: Callable[[Pair], bool] | None = None,
) -> list[Clip]:
    """`count` response clips (all when None), in a seeded order over their paths: the same benchmark and seed
    always choose the same clips, and a larger count adds clips without changing the ones chosen before.

    `ids`: only the response clips of these items. `decidable`: the items a judge can decide come first (the
    `cues` judge decides Content only where the instruction quotes the words to say), so a few clips are not
    all answers it must leave undetermined."""
    clips: dict[str, Pair] = {}
    if ids is not None:
        known = {pair.id for pair in bench}
        unknown = [i for i in ids if i not in known]
        if unknown:
            close = difflib.get_close_matches(unknown[0], sorted(known), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise ValueError(f"--ids: no item {', '.join(unknown)} in {bench.root}{hint}")
    for pair in bench:
        if ids is not None and pair.id not in ids:
            continue
        for path in [pair.audio_path] if pair.pointwise else [pair.audio1_path, pair.audio2_path]:
            if path and path not in clips:
                clips[path] = pair
    order = sorted(clips, key=lambda p: hashlib.sha256(f"{seed}:{p}".encode()).hexdigest())
    if decidable is not None:
        order = sorted(order, key=lambda p: not decidable(clips[p]))  # stable: the seeded order within each
    chosen = order if count is None else order[:count]
    return [Clip(_key(p), p, clips[p]) for p in chosen]


def _is_plain_wav(path: Path) -> bool:
    import soundfile as sf

    try:
        info = sf.info(str(path))
    except Exception:  # not a file libsndfile reads: decoded and written again
        return False
    return info.format == "WAV" and info.subtype == "PCM_16" and info.channels == 1


def _write_wav(path: Path, samples: np.ndarray, rate: int) -> None:
    """16-bit PCM mono, written to a temporary name and renamed (an interrupted run leaves no half file)."""
    import soundfile as sf

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    sf.write(str(tmp), np.clip(samples, -1.0, 1.0), rate, subtype="PCM_16", format="WAV")
    tmp.replace(path)


def _copy_file(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    shutil.copyfile(source, tmp)
    tmp.replace(target)


def _reuse_blueprint(source: BlueprintStore, target: BlueprintStore, path: Path, relative: str) -> None:
    """Give the audit bench the source's blueprint of the same audio (`relative` in the source benchmark), in the
    variant the benchmark made of it, so Stage 1 does not make it again (the plan still checks every section
    against the present extractors)."""
    key = source.key_for_path(relative) or sha256_file(path)
    if target.get(key) is None:
        found = source.get(key)
        if found is not None:
            target.put(key, found)


def clip_words(bench: Benchmark, store: BlueprintStore, clip: Clip, audio_sha: str) -> ClipWords:
    """The recognised words of a clip (from its stored blueprint) and its item's instruction, for the probes that
    change chosen words; the instruction as written, else as recognised."""
    instruction = clip.pair.instruction_text or ""
    if not instruction.strip() and clip.pair.instruction_path:
        spoken = store.get_by_path(clip.pair.instruction_path) or {}
        instruction = str(spoken.get("agent_response") or "")
    blueprint = store.get_by_path(clip.path) or store.get(audio_sha)  # the variant its benchmark made
    if blueprint is None:
        why = f"no blueprint of the answer: make the benchmark's first (python -m trace_eval blueprints {bench.root})"
        return ClipWords(None, instruction, why)
    quality = blueprint.get("transcript_quality") or {}
    if quality.get("reliable") is False:
        return ClipWords(
            None, instruction, f"transcript unreliable ({quality.get('reason')}): its word times place nothing"
        )
    # The prosody extractor's word times, moved onto the syllables the signal holds, where it made them; else the
    # recogniser's (about 0.1 s late on clear speech).
    section = blueprint.get("agent_prosody")
    words = section.get("words") if isinstance(section, dict) else blueprint.get("words")
    if not isinstance(words, list) or not words:
        return ClipWords(None, instruction, "no word times in the answer's blueprint")
    return ClipWords(words, instruction)


def write_audit_bench(
    bench: Benchmark, clips: list[Clip], probe_names: list[str], out: Path
) -> tuple[list[ProbePair], dict]:
    """Write the audit bench under `out`/bench; returns its items and the record of the copies
    (also written to `out`/copies.json). A clip that cannot be decoded is recorded with its reason and left out."""
    root = out / "bench"
    source_store, target_store = BlueprintStore(bench.root), BlueprintStore(root)
    items: list[dict] = []
    pairs: list[ProbePair] = []
    record: dict = {"bench": str(bench.root), "probes": probe_names, "clips": [], "failed": [], "skipped": []}
    instructions: dict[str, str] = {}
    for clip in clips:
        source = bench.resolve(clip.path)
        try:
            audio = load_audio(source)
        except AudioLoadingError as e:
            record["failed"].append({"clip": clip.path, "reason": str(e)})
            continue
        audio_sha = sha256_file(source)
        folder = root / "audio" / clip.key
        original = folder / "original.wav"
        if _is_plain_wav(source):
            if not original.is_file():
                _copy_file(source, original)
            _reuse_blueprint(source_store, target_store, original, clip.path)
            encoded = "copied"
        else:
            _write_wav(original, audio.samples, audio.sample_rate)
            encoded = "decoded to mono and written as 16-bit PCM wav"
        instruction = None
        if clip.pair.instruction_path:
            given = bench.resolve(clip.pair.instruction_path)
            if clip.pair.instruction_path not in instructions:
                digest = sha256_file(given) if given.is_file() else hashlib.sha256(b"").hexdigest()
                instructions[clip.pair.instruction_path] = f"instructions/{digest[:16]}{given.suffix}"
                target = root / instructions[clip.pair.instruction_path]
                if given.is_file() and not target.is_file():
                    _copy_file(given, target)
                if target.is_file():
                    _reuse_blueprint(source_store, target_store, target, clip.pair.instruction_path)
            instruction = instructions[clip.pair.instruction_path]
        entry: dict = {
            "clip": clip.key,
            "path": clip.path,
            "item": clip.pair.id,
            "audio_sha256": audio_sha,
            "original": f"audio/{clip.key}/original.wav",
            "original_encoding": encoded,
            "duration_s": round(audio.duration_s, 3),
            "copies": {},
        }
        words: ClipWords | None = None
        for name in probe_names:
            probe, seed = PROBES[name], probe_seed(audio_sha, name)
            if probe.choose is None:
                changed = probe.make(audio.samples, audio.sample_rate, seed)
            else:
                words = words or clip_words(bench, source_store, clip, audio_sha)
                choice = probe.choose(words, seed)
                if isinstance(choice, str):
                    record["skipped"].append({"clip": clip.path, "probe": name, "reason": choice})
                    continue
                changed = probe.make(audio.samples, audio.sample_rate, seed, choice)
            copy_path = f"audio/{clip.key}/{name}.wav"
            _write_wav(root / copy_path, changed.samples, audio.sample_rate)
            reference = entry["original"]
            if changed.reference is not None:
                reference = f"audio/{clip.key}/{name}.reference.wav"
                _write_wav(root / reference, changed.reference, audio.sample_rate)
            entry["copies"][name] = {
                "copy": copy_path,
                "reference": reference,
                "seed": seed,
                "duration_s": round(len(changed.samples) / audio.sample_rate, 3),
                **changed.notes,
            }
            for position, order in zip((1, 2), ORDERS):
                item_id = f"{clip.key}.{name}.{order}"
                first, second = (copy_path, reference) if position == 1 else (reference, copy_path)
                item: dict = {"id": item_id, "audio1_path": first, "audio2_path": second}
                if instruction:
                    item["instruction_path"] = instruction
                if clip.pair.instruction_text:
                    item["instruction_text"] = clip.pair.instruction_text
                item.update(clip.pair.extra)  # free-form context some rubrics read
                items.append(item)
                pairs.append(ProbePair(item_id, clip.key, name, position))
        record["clips"].append(entry)
    if not items:
        reasons = "; ".join(f"{f['clip']}: {f['reason']}" for f in record["failed"]) or "no response clips"
        raise ValueError(f"nothing to audit in {bench.root}: {reasons}")
    write_json(root / "manifest.json", items)
    write_json(out / COPIES, record)
    return pairs, record


def read_copies(out: Path) -> dict:
    return read_json(out / COPIES)
