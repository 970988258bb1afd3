"""Stage 1: turn every unique audio file of a benchmark into a blueprint.

Work is split by where it runs best:
- decoding, resampling and the per-clip signal extractors (parselmouth is not
  thread-safe) run in worker processes, one clip per task, over all cores;
- batched extractors (DNSMOS, the neural models) run in this process on whole
  chunks of clips, while the workers already decode the next chunk;
- extractors that need no audio (speaking rate from ASR words) run last.

Only sections whose fingerprint is stale are computed; each blueprint is written
atomically as soon as its chunk is done, so an interrupted run resumes where it
stopped.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import multiprocessing
import os
import time
from collections import defaultdict
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from extractors import REGISTRY, Clip, ClipError, Extractor, ExtractorUnavailable, Section
from trace_eval.audio import Audio, AudioLoadingError, load_audio
from trace_eval.bench import load_benchmark
from trace_eval.io import write_json
from trace_eval.store import BlueprintStore, apply_section, new_blueprint, section_errors

__all__ = [
    "BlueprintOptions",
    "RunSummary",
    "build_extractors",
    "resolve_device",
    "run_blueprints",
    "run_one_model_at_a_time",
    "runs_in_workers",
]

# Chunks bound memory (decoded audio of one chunk is held at a time, plus one prefetched) and
# let the models work on one chunk while the workers decode the next. A chunk holds about one
# full batch of the largest batched extractor, and at least this much audio:
CHUNK_CLIPS = 64
CHUNK_SECONDS = 60.0


@dataclass
class BlueprintOptions:
    only: list[str] | None = None  # extractor names; None = every registered one
    device: str = "auto"  # auto | cpu | cuda | cuda:N
    workers: int | None = None  # decode/signal processes; None = all cores
    force: bool = False  # recompute sections even when current
    settings: dict[str, dict[str, Any]] = field(default_factory=dict)  # extractor -> config overrides
    profile: str | None = None  # paper | cpu; None = paper with CUDA, cpu without
    progress: bool = True


@dataclass
class ClipFailure:
    path: str
    sha256: str | None
    stage: str  # "decode" or an extractor name
    status: str  # failed | unavailable
    reason: str


@dataclass
class RunSummary:
    bench: str
    clips: int  # audio references in the manifest
    unique_audio: int
    cached: int  # unique audio whose every section was already current
    computed: int  # unique audio with at least one section computed this run
    failed: int  # unique audio without a blueprint
    seconds_per_extractor: dict[str, float]
    sections: dict[str, dict[str, int]]  # extractor -> {ok, failed, unavailable, cached}
    failures: list[ClipFailure]
    unavailable: dict[str, str]  # extractor -> reason it could not run
    device: str
    profile: str
    wall_seconds: float

    @property
    def ok(self) -> bool:
        return self.failed == 0

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


# ---------------------------------------------------------------------------------------
# Extractor set-up


def resolve_device(device: str) -> str:
    """auto -> cuda when a GPU is visible, else cpu; a CUDA device asked for must exist."""
    if device == "cpu":
        return device
    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except ImportError:
        has_cuda = False
    if device == "auto":
        return "cuda" if has_cuda else "cpu"
    if device.startswith("cuda") and not has_cuda:
        raise ValueError(f"--device {device}, but torch sees no CUDA device here; use --device auto or cpu")
    return device


def _coerce(value: Any, default: Any) -> Any:
    """Turn a CLI string into the type of the config field's default."""
    if not isinstance(value, str):
        return value
    if value.lower() in ("none", "null"):
        return None
    if isinstance(default, bool):
        return value.lower() in ("1", "true", "yes", "on")
    for kind in (int, float):
        if isinstance(default, kind):
            return kind(value)
    if default is None:
        for kind in (int, float):
            try:
                return kind(value)
            except ValueError:
                pass
    return value


def make_config(cls: type[Extractor], overrides: dict[str, Any]) -> Any:
    fields = {f.name: f for f in dataclasses.fields(cls.Config)}
    unknown = set(overrides) - set(fields)
    if unknown:
        raise ValueError(
            f"{cls.name} has no setting {', '.join(sorted(unknown))}; expected one of: {', '.join(fields) or '(none)'}"
        )
    base = cls.Config()
    return dataclasses.replace(base, **{k: _coerce(v, getattr(base, k)) for k, v in overrides.items()})


def _with_dependencies(names: Iterable[str]) -> list[str]:
    """Names plus everything they depend on, dependencies first."""
    ordered: list[str] = []

    def visit(name: str, trail: tuple[str, ...]) -> None:
        if name in ordered:
            return
        if name not in REGISTRY:
            raise ValueError(f"unknown extractor {name!r}; expected one of: {', '.join(sorted(REGISTRY))}")
        if name in trail:
            raise ValueError(f"dependency cycle: {' -> '.join(trail + (name,))}")
        for dep in REGISTRY[name].depends_on:
            visit(dep, trail + (name,))
        ordered.append(name)

    for name in names:
        visit(name, ())
    return ordered


def build_extractors(options: BlueprintOptions, device: str) -> tuple[list[Extractor], str]:
    from trace_eval.profiles import profile_settings

    profile = options.profile or ("paper" if device.startswith("cuda") else "cpu")
    settings = profile_settings(profile)
    for name, overrides in options.settings.items():
        settings.setdefault(name, {}).update(overrides)
    unknown = set(settings) - set(REGISTRY)
    if unknown:
        raise ValueError(f"settings for unknown extractor(s) {', '.join(sorted(unknown))}")
    names = _with_dependencies(options.only or sorted(REGISTRY))
    built = [REGISTRY[n](make_config(REGISTRY[n], settings.get(n, {})), device) for n in names]
    return built, profile


def fingerprints(extractors: list[Extractor]) -> dict[str, str]:
    """Each extractor's own fingerprint combined with those of its dependencies."""
    result: dict[str, str] = {}
    for ext in extractors:  # dependencies come first
        parts = [ext.fingerprint()] + [result[d] for d in ext.depends_on]
        result[ext.name] = parts[0] if len(parts) == 1 else hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]
    return result


# ---------------------------------------------------------------------------------------
# Worker processes: decode once, resample once per rate, run the per-clip extractors.

_WORKER_EXTRACTORS: dict[str, Extractor] = {}
_WORKER_UNAVAILABLE: dict[str, str] = {}


def runs_in_workers(ext: Extractor) -> bool:
    """Per-clip extractors that need audio and nothing else run in the worker processes."""
    return not ext.batched and bool(ext.sample_rate) and not ext.depends_on


def _worker_init(specs: list[tuple[str, Any]]) -> None:
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # one process per core already
    for name, config in specs:
        ext = REGISTRY[name](config, "cpu")
        try:
            ext.load()
            _WORKER_EXTRACTORS[name] = ext
        except ExtractorUnavailable as e:
            _WORKER_UNAVAILABLE[name] = str(e)


@dataclass
class _Decoded:
    index: int
    audio: Audio | None
    error: str | None
    sections: dict[str, tuple[Section | ClipError | ExtractorUnavailable, float]]


def _decode_and_extract(index: int, path: str, sha: str, per_clip: list[str], rates: list[int]) -> _Decoded:
    try:
        audio = load_audio(path)
    except AudioLoadingError as e:
        return _Decoded(index, None, str(e), {})
    except Exception as e:  # a decoder bug must not take the run down
        return _Decoded(index, None, f"{path}: {type(e).__name__}: {e}", {})
    for rate in rates:
        audio.at(rate)
    sections: dict[str, tuple[Any, float]] = {}
    clip = Clip(sha, audio)
    for name in per_clip:
        if name in _WORKER_UNAVAILABLE:
            sections[name] = (ExtractorUnavailable(_WORKER_UNAVAILABLE[name]), 0.0)
            continue
        start = time.perf_counter()
        try:
            result = _WORKER_EXTRACTORS[name].extract([clip])[0]
        except Exception as e:  # an extractor bug on one clip is recorded, not fatal
            result = ClipError(f"{type(e).__name__}: {e}")
        sections[name] = (result, time.perf_counter() - start)
    return _Decoded(index, audio, None, sections)


def _from_blueprint(index: int, job: _Job) -> Future:
    future: Future = Future()
    future.set_result(_Decoded(index, None, None, {}))
    return future


def _start_pool(workers: int, specs: list[tuple[str, Any]]):
    """Worker processes, started before any model is loaded here.

    They are forked, so they inherit this process's registry and need no importable
    __main__ (scripts, notebooks and stdin work), and forked now, while this process
    holds none of the thread pools that torch and onnxruntime start with a model.
    """
    if workers <= 0:
        return _InlineExecutor(specs)
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_worker_init, initargs=(specs,))
    pool.submit(int).result()  # with fork, the first task starts every worker
    return pool


class _InlineExecutor:
    """Same interface as a process pool, for --workers 0 (debugging, profiling)."""

    def __init__(self, specs):
        _worker_init(specs)

    def submit(self, fn, *args) -> Future:
        future: Future = Future()
        future.set_result(fn(*args))
        return future

    def shutdown(self, wait=True, cancel_futures=False):
        pass


# ---------------------------------------------------------------------------------------
# The run


@dataclass
class _Job:
    path: str  # relative to the benchmark folder (first one seen for this content)
    sha: str
    blueprint: dict | None
    needed: list[str]  # extractor names to compute, in dependency order


def _entry(ext: Extractor, fingerprint: str, status: str, seconds: float | None, reason: str | None = None,
           null_reasons: dict[str, str] | None = None) -> dict:
    model = ext.model()
    entry = {
        "name": ext.name,
        "version": ext.version,
        "fingerprint": fingerprint,
        "model_id": model.id,
        "revision": model.revision,
        "device": ext.device,
        "seconds": None if seconds is None else round(seconds, 4),
        "status": status,
        "reason": reason,
    }
    if null_reasons:
        entry["null_reasons"] = dict(null_reasons)
    return entry


def _probe_duration(path: Path) -> float:
    """Duration from the file header (no decoding), for sorting and chunking; a guess when unreadable."""
    try:
        import soundfile as sf

        return float(sf.info(str(path)).duration)
    except Exception:
        return 10.0


def _chunks(jobs: list[_Job], durations: dict[str, float], chunk_seconds: float) -> list[list[_Job]]:
    chunks: list[list[_Job]] = []
    current: list[_Job] = []
    seconds = 0.0
    for job in jobs:
        d = durations.get(job.sha, 10.0)
        if current and (len(current) >= CHUNK_CLIPS or seconds + d > chunk_seconds):
            chunks.append(current)
            current, seconds = [], 0.0
        current.append(job)
        seconds += d
    if current:
        chunks.append(current)
    return chunks


def run_blueprints(bench_dir: str | Path, options: BlueprintOptions = BlueprintOptions()) -> RunSummary:
    started = time.perf_counter()
    bench = load_benchmark(bench_dir, check_audio=False)
    store = BlueprintStore(bench.root)
    device = resolve_device(options.device)
    extractors, profile = build_extractors(options, device)
    fps = fingerprints(extractors)
    by_name = {e.name: e for e in extractors}

    failures: list[ClipFailure] = []
    sections: dict[str, dict[str, int]] = {e.name: defaultdict(int) for e in extractors}
    seconds: dict[str, float] = defaultdict(float)
    unavailable: dict[str, str] = {}

    # 1. Content hashes: identical audio under several paths is processed once.
    references = [p for pair in bench.pairs for p in pair.audio_paths()]
    jobs: dict[str, _Job] = {}
    for rel in bench.audio_files():
        path = bench.resolve(rel)
        if not path.is_file():
            failures.append(ClipFailure(rel, None, "decode", "failed", f"{path}: file not found"))
            continue
        sha = store.hash_of(rel)
        if sha in jobs:
            continue
        blueprint = store.get(sha)
        current = (blueprint or {}).get("provenance", {}).get("extractors", {})
        needed: list[str] = []
        for e in extractors:  # dependencies come first, so a redone one takes its dependants along
            entry = current.get(e.name, {})
            if (options.force or entry.get("fingerprint") != fps[e.name] or entry.get("status") != "ok"
                    or any(d in needed for d in e.depends_on)):
                needed.append(e.name)
        jobs[sha] = _Job(rel, sha, blueprint, needed)
    store.save_index()

    # 2. Load what has work to do; a model that cannot load makes its sections unavailable.
    active = {n for j in jobs.values() for n in j.needed}
    in_workers = [e for e in extractors if e.name in active and runs_in_workers(e)]
    for ext in in_workers:  # light by design; loaded here too, so that one that cannot load is known here
        try:
            ext.load()
        except ExtractorUnavailable as e:
            unavailable[ext.name] = str(e)
    in_workers = [e for e in in_workers if e.name not in unavailable]
    in_main = [e for e in extractors if e.name in active and e not in in_workers]
    specs = [(e.name, e.config) for e in in_workers]
    workers = options.workers if options.workers is not None else (os.cpu_count() or 1)
    pool = _start_pool(workers, specs) if in_workers or in_main else _InlineExecutor([])
    try:
        for ext in in_main:
            if ext.name in unavailable:
                continue
            missing = [d for d in ext.depends_on if d in unavailable]
            if missing:
                unavailable[ext.name] = f"depends on {', '.join(missing)}, which is unavailable"
                continue
            try:
                ext.load()
            except ExtractorUnavailable as e:
                unavailable[ext.name] = str(e)
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    # An extractor that cannot run leaves what is stored as it is: a section made earlier (its
    # provenance says by what) is kept rather than wiped, and one already recorded as unavailable
    # is not rewritten (the reason's wording, e.g. a network error, may differ between runs).
    for job in jobs.values():
        stored = (job.blueprint or {}).get("provenance", {}).get("extractors", {})
        job.needed = [
            n for n in job.needed
            if not (n in unavailable and (stored.get(n, {}).get("status") == "ok"
                                          or (stored.get(n, {}).get("status") == "unavailable"
                                              and stored[n].get("fingerprint") == fps[n])))
        ]

    todo = [j for j in jobs.values() if j.needed]
    cached = len(jobs) - len(todo)
    for job in jobs.values():
        for name in by_name:
            if name not in job.needed:
                sections[name]["cached"] += 1

    rates = sorted({e.sample_rate for e in in_main if e.sample_rate and e.name not in unavailable})
    durations = {sha: float((j.blueprint or {}).get("duration_s") or _probe_duration(bench.resolve(j.path)))
                 for sha, j in jobs.items()}
    # Sorting by length keeps clips of similar duration in one batch (less padding).
    todo.sort(key=lambda j: durations[j.sha])
    chunk_seconds = max([CHUNK_SECONDS] + [getattr(e.config, "batch_seconds", 0.0) for e in in_main])
    chunks = _chunks(todo, durations, chunk_seconds)

    progress = _progress(len(todo), options.progress)
    computed = failed = 0
    try:
        def submit(chunk: list[_Job]) -> list[Future]:
            return [
                pool.submit(_decode_and_extract, i, str(bench.resolve(j.path)), j.sha,
                            [e.name for e in in_workers if e.name in j.needed], rates)
                if any(by_name[n].sample_rate for n in j.needed) else _from_blueprint(i, j)
                for i, j in enumerate(chunk)
            ]

        pending = submit(chunks[0]) if chunks else []
        for k, chunk in enumerate(chunks):
            decoded = [f.result() for f in pending]
            pending = submit(chunks[k + 1]) if k + 1 < len(chunks) else []  # decode ahead while models run

            blueprints: dict[str, dict] = {}
            clips: dict[str, Clip] = {}
            for job, dec in zip(chunk, decoded):
                if dec.audio is None and job.blueprint is not None and dec.error is None:
                    # only audio-free sections (e.g. speaking rate) are stale: no decoding needed
                    blueprints[job.sha] = job.blueprint
                    clips[job.sha] = Clip(job.sha, None, job.blueprint)
                    continue
                if dec.audio is None:
                    failures.append(ClipFailure(job.path, job.sha, "decode", "failed", dec.error or "not decodable"))
                    failed += 1
                    continue
                bp = job.blueprint or new_blueprint(job.sha, dec.audio.duration_s, dec.audio.sample_rate, dec.audio.channels)
                blueprints[job.sha] = bp
                clips[job.sha] = Clip(job.sha, dec.audio, bp)
                for name, (result, secs) in dec.sections.items():
                    _record(bp, by_name[name], fps[name], result, secs, job, failures, sections, seconds)

            for ext in in_main:
                batch = [clips[j.sha] for j in chunk if j.sha in clips and ext.name in j.needed]
                if not batch:
                    continue
                if ext.name in unavailable:
                    for clip in batch:
                        job = jobs[clip.sha256]
                        _record(clip.blueprint, ext, fps[ext.name], ExtractorUnavailable(unavailable[ext.name]), None,
                                job, failures, sections, seconds)
                    continue
                start = time.perf_counter()
                try:
                    results = ext.extract(batch)
                except Exception as e:  # a whole-batch failure is recorded per clip
                    results = [ClipError(f"{type(e).__name__}: {e}")] * len(batch)
                elapsed = time.perf_counter() - start
                total = sum(c.duration_s for c in batch) or 1.0
                for clip, result in zip(batch, results):
                    _record(clip.blueprint, ext, fps[ext.name], result, elapsed * clip.duration_s / total,
                            jobs[clip.sha256], failures, sections, seconds)

            for sha, bp in blueprints.items():
                store.put(sha, bp)
                computed += 1
            progress.update(len(chunk))
    finally:
        progress.close()
        pool.shutdown(wait=True, cancel_futures=True)

    summary = RunSummary(
        bench=str(bench.root),
        clips=len(references),
        unique_audio=len(jobs) + sum(1 for f in failures if f.sha256 is None),
        cached=cached,
        computed=computed,
        failed=failed + sum(1 for f in failures if f.sha256 is None),
        seconds_per_extractor={k: round(v, 3) for k, v in sorted(seconds.items())},
        sections={k: dict(v) for k, v in sections.items()},
        failures=failures,
        unavailable=unavailable,
        device=device,
        profile=profile,
        wall_seconds=round(time.perf_counter() - started, 3),
    )
    write_json(store.dir / "summary.json", summary.to_json())
    _write_failures(store.dir / "failures.jsonl", failures)
    return summary


def _record(bp: dict, ext: Extractor, fingerprint: str, result: Any, secs: float | None, job: _Job,
            failures: list[ClipFailure], sections: dict, seconds: dict) -> None:
    if secs:
        seconds[ext.name] += secs
    if isinstance(result, Section):
        try:
            result = Section(_plain(result.values), result.null_reasons)
            problems = section_errors(result.values)
            if problems:
                raise ValueError(f"values the blueprint schema does not allow: {'; '.join(problems[:3])}")
        except ValueError as e:
            result = ClipError(f"{ext.name} returned {e}")
    if isinstance(result, Section):
        apply_section(bp, ext.outputs, _entry(ext, fingerprint, "ok", secs, null_reasons=result.null_reasons), result.values)
        sections[ext.name]["ok"] += 1
        return
    status = "unavailable" if isinstance(result, ExtractorUnavailable) else "failed"
    reason = str(result) or type(result).__name__
    apply_section(bp, ext.outputs, _entry(ext, fingerprint, status, secs, reason), None)
    sections[ext.name][status] += 1
    if status == "failed":
        failures.append(ClipFailure(job.path, job.sha, ext.name, status, reason))


def _plain(value: Any) -> Any:
    """Plain JSON types; extractors must give null with a reason, never NaN or infinity."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not np.isfinite(value):
        raise ValueError(f"a non-finite number ({value})")
    return value


def _write_failures(path: Path, failures: list[ClipFailure]) -> None:
    from trace_eval.io import atomic_write_text

    atomic_write_text(path, "".join(json.dumps(dataclasses.asdict(f)) + "\n" for f in failures))


def _progress(total: int, enabled: bool):
    from tqdm import tqdm

    return tqdm(total=total, unit="clip", desc="blueprints", disable=not enabled or total == 0, dynamic_ncols=True)


def run_one_model_at_a_time(bench_dir: str | Path, options: BlueprintOptions) -> RunSummary:
    """For small GPUs: one pass per GPU model (its dependants ride along), freeing it before the next.

    Each pass is an ordinary resumable run restricted to some extractors, so a pass
    interrupted or repeated redoes nothing already stored. The summary adds the passes up.
    """
    device = resolve_device(options.device)
    extractors, _ = build_extractors(options, device)
    gpu = [e.name for e in extractors if e.uses_gpu]
    others = [e.name for e in extractors if not e.uses_gpu and not set(e.depends_on) & set(gpu)]
    passes = [others] + [[g] + [e.name for e in extractors if g in e.depends_on] for g in gpu]
    summaries = []
    for names in passes:
        if names:
            summaries.append(run_blueprints(bench_dir, dataclasses.replace(options, only=names)))
            _free_gpu()
    return _combine(summaries, passes=[p for p in passes if p])


def _combine(summaries: list[RunSummary], passes: list[list[str]]) -> RunSummary:
    """One summary of several passes, each extractor counted in the pass that ran it."""
    last = summaries[-1]
    sections = {name: s.sections[name] for s, names in zip(summaries, passes) for name in names if name in s.sections}
    seconds: dict[str, float] = defaultdict(float)
    failures: dict[tuple, ClipFailure] = {}
    for s in summaries:
        for name, secs in s.seconds_per_extractor.items():
            seconds[name] += secs
        for f in s.failures:
            failures[(f.path, f.stage)] = f
    computed = max(s.computed for s in summaries)
    combined = dataclasses.replace(
        last,
        computed=computed,
        cached=last.unique_audio - last.failed - computed,
        seconds_per_extractor={k: round(v, 3) for k, v in sorted(seconds.items())},
        sections=sections,
        failures=list(failures.values()),
        unavailable={k: v for s in summaries for k, v in s.unavailable.items()},
        wall_seconds=round(sum(s.wall_seconds for s in summaries), 3),
    )
    store_dir = BlueprintStore(last.bench).dir
    write_json(store_dir / "summary.json", combined.to_json())
    _write_failures(store_dir / "failures.jsonl", combined.failures)
    return combined


def _free_gpu() -> None:
    import gc

    gc.collect()
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except ImportError:
        pass
