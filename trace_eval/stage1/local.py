"""The local engine: worker processes for decoding and signal extractors, batched models here.

Work is split by where it runs best:
- decoding, resampling and the per-clip signal extractors (parselmouth is not
  thread-safe) run in worker processes, one clip per task, over all cores;
- batched extractors (DNSMOS, the neural models) run in this process on whole
  chunks of clips, while the workers already decode the next chunk; those on the
  CPU run beside each other, in threads (their libraries leave Python's lock while
  they compute);
- extractors that need no audio (speaking rate from ASR words) run last.

Each blueprint is written as soon as its chunk is done, so an interrupted run
resumes where it stopped.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from extractors import Clip, ClipError, Extractor, ExtractorUnavailable, Section
from trace_eval.audio import Audio, AudioLoadingError, load_audio
from trace_eval.stage1.plan import Job, Plan
from trace_eval.stage1.record import AudioInfo, Recorder

__all__ = ["CHUNK_CLIPS", "CHUNK_SECONDS", "execute", "runs_in_workers"]

# Chunks bound memory (decoded audio of one chunk is held at a time, plus one prefetched) and
# let the models work on one chunk while the workers decode the next. A chunk holds about one
# full batch of the largest batched extractor, and at least this much audio:
CHUNK_CLIPS = 64
CHUNK_SECONDS = 60.0


def runs_in_workers(ext: Extractor) -> bool:
    """Per-clip extractors that need audio and nothing else run in the worker processes."""
    return not ext.batched and bool(ext.sample_rate) and not ext.depends_on


# ---------------------------------------------------------------------------------------
# Worker processes: decode once, resample once per rate, run the per-clip extractors.

_WORKER_EXTRACTORS: dict[str, Extractor] = {}
_WORKER_UNAVAILABLE: dict[str, str] = {}


def _worker_init(specs: list[tuple[type[Extractor], Any]]) -> None:
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # one process per core already
    load_per_clip(specs, _WORKER_EXTRACTORS, _WORKER_UNAVAILABLE)


def load_per_clip(
    specs: list[tuple[type[Extractor], Any]], loaded: dict[str, Extractor], unavailable: dict[str, str]
) -> None:
    """Per-clip extractors by (class, config), loaded on the CPU; those that cannot load, with why."""
    for cls, config in specs:
        ext = cls(config, "cpu")
        try:
            ext.load()
            loaded[cls.name] = ext
        except ExtractorUnavailable as e:
            unavailable[cls.name] = str(e)


@dataclass
class Decoded:
    audio: Audio | None
    error: str | None
    sections: dict[str, tuple[Section | ClipError | ExtractorUnavailable, float]]


def decode_and_extract(
    path: str,
    sha: str,
    per_clip: list[str],
    rates: list[int],
    loaded: dict[str, Extractor],
    unavailable: dict[str, str],
) -> Decoded:
    """Decode one file, resample it once per rate, run the per-clip extractors on it."""
    try:
        audio = load_audio(path)
    except AudioLoadingError as e:
        return Decoded(None, str(e), {})
    except Exception as e:  # a decoder bug must not take the run down
        return Decoded(None, f"{path}: {type(e).__name__}: {e}", {})
    for rate in rates:
        audio.at(rate)
    sections: dict[str, tuple[Any, float]] = {}
    clip = Clip(sha, audio)
    for name in per_clip:
        if name in unavailable:
            sections[name] = (ExtractorUnavailable(unavailable[name]), 0.0)
            continue
        start = time.perf_counter()
        try:
            result = with_numerics(loaded[name], loaded[name].extract([clip])[0])
        except Exception as e:  # an extractor bug on one clip is recorded, not fatal
            result = ClipError(f"{type(e).__name__}: {e}")
        sections[name] = (result, time.perf_counter() - start)
    return Decoded(audio, None, sections)


def _in_worker(path: str, sha: str, per_clip: list[str], rates: list[int]) -> Decoded:
    return decode_and_extract(path, sha, per_clip, rates, _WORKER_EXTRACTORS, _WORKER_UNAVAILABLE)


def _done(value: Any) -> Future:
    future: Future = Future()
    future.set_result(value)
    return future


def _start_pool(workers: int, specs: list[tuple[type[Extractor], Any]]):
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
        return _done(fn(*args))

    def shutdown(self, wait=True, cancel_futures=False):
        pass


# ---------------------------------------------------------------------------------------
# The run


def _chunks(jobs: list[Job], durations: dict[str, float], chunk_seconds: float) -> list[list[Job]]:
    chunks: list[list[Job]] = []
    current: list[Job] = []
    seconds = 0.0
    for job in jobs:
        d = durations[job.sha]
        if current and (len(current) >= CHUNK_CLIPS or seconds + d > chunk_seconds):
            chunks.append(current)
            current, seconds = [], 0.0
        current.append(job)
        seconds += d
    if current:
        chunks.append(current)
    return chunks


def execute(plan: Plan, recorder: Recorder, workers: int | None, progress) -> None:
    """Carry out the plan; every result goes to the recorder, which writes the store."""
    by_name = plan.by_name
    unavailable = recorder.unavailable
    active = plan.active()
    if not active:
        return
    # Load what has work to do; a model that cannot load makes its sections unavailable.
    in_workers = [e for e in plan.extractors if e.name in active and runs_in_workers(e)]
    for ext in in_workers:  # light by design; loaded here too, so that one that cannot load is known here
        try:
            ext.load()
        except ExtractorUnavailable as e:
            unavailable[ext.name] = str(e)
    in_workers = [e for e in in_workers if e.name not in unavailable]
    in_main = [e for e in plan.extractors if e.name in active and e not in in_workers]
    specs = [(type(e), e.config) for e in in_workers]
    pool = _start_pool((os.cpu_count() or 1) if workers is None else workers, specs)
    try:
        chunk_seconds = max([CHUNK_SECONDS] + [getattr(e.config, "batch_seconds", 0.0) for e in in_main])

        def chunked() -> tuple[list[Job], list[int], list[list[Job]]]:
            plan.drop_unrunnable(unavailable)
            todo = plan.todo()
            rates = sorted({e.sample_rate for e in in_main if e.sample_rate and e.name not in unavailable})
            return todo, rates, _chunks(todo, {j.sha: plan.duration(j) for j in todo}, chunk_seconds)

        def submit(chunk: list[Job]) -> list[Future]:
            return [
                pool.submit(
                    _in_worker,
                    str(plan.bench.resolve(j.path)),
                    j.sha,
                    [e.name for e in in_workers if e.name in j.needed],
                    rates,
                )
                if any(by_name[n].sample_rate for n in j.needed)
                else _done(Decoded(None, None, {}))
                for j in chunk
            ]

        # The workers decode the first chunk while the models load; it is planned again only when a model
        # turns out to be unavailable.
        todo, rates, chunks = chunked()
        pending = submit(chunks[0]) if chunks else []
        unavailable_before = set(unavailable)
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
        if set(unavailable) != unavailable_before:
            submitted = chunks[0] if chunks else []
            todo, rates, chunks = chunked()
            if (chunks[0] if chunks else []) != submitted:
                pending = submit(chunks[0]) if chunks else []
        progress.reset(total=len(todo))
        for k, chunk in enumerate(chunks):
            decoded = [f.result() for f in pending]
            pending = submit(chunks[k + 1]) if k + 1 < len(chunks) else []  # decode ahead while models run
            _run_chunk(plan, recorder, chunk, decoded, in_main)
            progress.update(len(chunk))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _run_chunk(plan: Plan, recorder: Recorder, chunk: list[Job], decoded: list[Decoded], in_main: list[Extractor]):
    by_name = plan.by_name
    unavailable = recorder.unavailable
    blueprints: dict[str, dict] = {}
    changed: dict[str, bool] = {}
    clips: dict[str, Clip] = {}
    jobs = {j.sha: j for j in chunk}
    for job, dec in zip(chunk, decoded):
        if dec.audio is None and job.blueprint is not None and dec.error is None:
            # only audio-free sections (e.g. speaking rate) are stale: no decoding needed
            blueprints[job.sha] = job.blueprint
            clips[job.sha] = Clip(job.sha, None, job.blueprint, job.language, job.expects)
            changed[job.sha] = False
            continue
        if dec.audio is None:
            recorder.fail(job, "decode", dec.error or "not decodable")
            continue
        info = AudioInfo(dec.audio.duration_s, dec.audio.sample_rate, dec.audio.channels)
        bp = blueprints[job.sha] = recorder.blueprint(job, info)
        changed[job.sha] = job.blueprint is None
        clips[job.sha] = Clip(job.sha, dec.audio, bp, job.language, job.expects)
        for name, (result, secs) in dec.sections.items():
            changed[job.sha] |= recorder.apply(bp, job, by_name[name], result, secs)

    def batch_of(ext: Extractor) -> list[Clip]:
        return [clips[j.sha] for j in chunk if j.sha in clips and ext.name in j.needed]

    for stage in _stages(in_main):
        runnable = [e for e in stage if e.name not in unavailable and batch_of(e)]
        outcomes = dict(zip((e.name for e in runnable), _run_beside_each_other(runnable, batch_of)))
        for ext in stage:  # recorded in the plan's order, whatever finished first
            outcome: Sequence[tuple[Clip, Any, float | None]]
            if ext.name in outcomes:
                outcome = outcomes[ext.name]
            else:
                outcome = [(clip, ExtractorUnavailable(unavailable[ext.name]), None) for clip in batch_of(ext)]
            for clip, result, seconds in outcome:
                changed[clip.sha256] |= recorder.apply(clip.blueprint, jobs[clip.sha256], ext, result, seconds)

    for sha, bp in blueprints.items():
        if changed[sha]:
            recorder.write(jobs[sha], bp)


def _stages(extractors: list[Extractor]) -> list[list[Extractor]]:
    """The extractors in stages: each stage needs only the values of earlier ones (speaking rate after ASR)."""
    stages: list[list[Extractor]] = []
    placed: dict[str, int] = {}
    for ext in extractors:  # in dependency order
        stage = max((placed[d] + 1 for d in ext.depends_on if d in placed), default=0)
        placed[ext.name] = stage
        if stage == len(stages):
            stages.append([])
        stages[stage].append(ext)
    return stages


def _run_beside_each_other(extractors: list[Extractor], batch_of) -> list[list[tuple[Clip, Any, float]]]:
    """Each extractor over its batch; those on the CPU in threads beside each other, so that one's idle moments
    (its Python parts, its last window) are another's working ones; those on a GPU one after the other, in this
    thread (one model's working memory at a time). What each computes does not depend on what runs beside it
    (docs/reproducibility.md); its seconds are its own wall time, the others' work included."""
    beside = [e for e in extractors if e.device == "cpu"] if len(extractors) > 1 else []
    with ThreadPoolExecutor(max(1, len(beside)), thread_name_prefix="model") as pool:
        futures = {e.name: pool.submit(run_batched, e, batch_of(e)) for e in beside}
        alone = {e.name: run_batched(e, batch_of(e)) for e in extractors if e.name not in futures}
        return [futures[e.name].result() if e.name in futures else alone[e.name] for e in extractors]


def run_batched(ext: Extractor, batch: list[Clip]) -> list[tuple[Clip, Any, float]]:
    """A batched extractor over clips: (clip, result, seconds attributed by duration) each."""
    start = time.perf_counter()
    try:
        results = ext.extract(batch)
    except Exception as e:  # a whole-batch failure is recorded per clip
        results = [ClipError(f"{type(e).__name__}: {e}")] * len(batch)
    elapsed = time.perf_counter() - start
    total = sum(c.duration_s for c in batch) or 1.0
    return [
        (clip, with_numerics(ext, result), elapsed * clip.duration_s / total) for clip, result in zip(batch, results)
    ]


def with_numerics(ext: Extractor, result: Any) -> Any:
    """A section stamped with the numeric set-up of the process that computed it (a Ray actor may run elsewhere)."""
    if isinstance(result, Section) and not result.numerics:
        result.numerics = ext.numerics()
    return result
