"""Stage 1: turn every unique audio file of a benchmark into a blueprint.

A run is a plan carried out by an engine:
- the plan (trace_eval.stage1.plan) lists which sections of which unique audio are
  stale, from the store and the extractors' fingerprints alone;
- an engine carries it out: `local` (trace_eval.stage1.local: worker processes for
  decoding and signal extractors, batched models in this process) or `ray`
  (trace_eval.stage1.ray_engine: a Ray Data pipeline, on one machine or a cluster);
- the recorder (trace_eval.stage1.record) turns results into blueprints and is the
  only writer of the store, so both engines give the same blueprints.

With nothing stale a run answers at once: no model is loaded and no model library
(torch, funasr, speechbrain, transformers) imported.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from extractors import REGISTRY, Extractor, numerics
from trace_eval.bench import load_benchmark
from trace_eval.stage1.local import runs_in_workers
from trace_eval.stage1.plan import fingerprints, make_plan, passes
from trace_eval.stage1.record import ClipFailure, Recorder, RunSummary, save_summary
from trace_eval.stage1.settings import make_config
from trace_eval.stage1.shelf import is_url
from trace_eval.stage1.store import BENCH_STORE, BlueprintStore

__all__ = [
    "BlueprintOptions",
    "ClipFailure",
    "ENGINES",
    "RunSummary",
    "build_extractors",
    "resolve_device",
    "run_blueprints",
    "run_one_model_at_a_time",
    "runs_in_workers",
]

ENGINES = ("local", "ray")


@dataclass
class BlueprintOptions:
    only: list[str] | None = None  # extractor names; None = every registered one
    device: str = "auto"  # auto | cpu | cuda | cuda:N
    workers: int | None = None  # local engine: decode/signal processes; None = all cores
    force: bool = False  # recompute sections even when current (and probe unavailable models again)
    settings: dict[str, dict[str, Any]] = field(default_factory=dict)  # extractor -> config (and pool) overrides
    profile: str | None = None  # paper | cpu; None = paper with CUDA, cpu without
    progress: bool = True
    engine: str = "local"  # local | ray
    ray_address: str | None = None  # ray engine: the cluster to join; None = $RAY_ADDRESS, else a local Ray
    retry_unavailable: bool = False  # probe models recorded as unavailable even when nothing they resolve from changed
    # where blueprints are written: a folder or URL, "bench" (BENCH/blueprints), None = the store this benchmark
    # was given with --store before, else the default one (trace_eval.stage1.store.default_store: $TRACE_STORE, ...)
    store: str | None = None


# ---------------------------------------------------------------------------------------
# Extractor set-up


def resolve_device(device: str) -> str:
    """auto -> cuda when a GPU is visible, else cpu; a CUDA device asked for must exist.

    torch is imported only when the CUDA driver reports a device: without one, torch
    cannot see any either, and a cached run must not pay for importing it.
    """
    if device == "cpu":
        return device
    has_cuda = torch_missing = False
    if _cuda_driver_devices():
        try:
            import torch

            has_cuda = torch.cuda.is_available()
        except ImportError:
            torch_missing = True
    if device == "auto":
        return "cuda" if has_cuda else "cpu"
    if device.startswith("cuda") and torch_missing:
        raise ValueError(
            f"--device {device} needs torch, which the models extra installs: "
            "pip install 'trace-eval[models]' (or make install); or use --device cpu"
        )
    if device.startswith("cuda") and not has_cuda:
        raise ValueError(f"--device {device}, but torch sees no CUDA device here; use --device auto or cpu")
    return device


def _cuda_driver_devices() -> int:
    """GPUs the CUDA driver library reports (0 without the driver), read in a few milliseconds."""
    import ctypes

    for name in ("libcuda.so.1", "libcuda.so", "nvcuda.dll"):
        try:
            driver = ctypes.CDLL(name)
            break
        except OSError:
            continue
    else:
        return 0
    count = ctypes.c_int(0)
    if driver.cuInit(0) != 0 or driver.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return 0
    return count.value


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
    from trace_eval.stage1.profiles import profile_settings

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


# ---------------------------------------------------------------------------------------
# The run


def run_blueprints(bench_dir: str | Path, options: BlueprintOptions | None = None) -> RunSummary:
    """Plan, carry the plan out on the chosen engine, record; returns the summary (also in summary.json).

    In a process whose libraries loaded before the numeric class was pinned (numpy imported by a script before
    trace_eval), the local engine's models would compute with other kernels than the class's: the run then goes
    to a new Python process with the class's environment, so every entry point gives the same blueprints."""
    options = BlueprintOptions() if options is None else options
    if options.engine == "local" and not os.environ.get(_IN_CLASS_PROCESS) and numerics.loaded_before_pinning():
        return _in_a_new_process(bench_dir, options)
    started = time.perf_counter()
    if options.engine not in ENGINES:
        raise ValueError(f"unknown engine {options.engine!r}; expected one of: {', '.join(ENGINES)}")
    remote = None
    if isinstance(bench_dir, str) and bench_dir.startswith("file://"):
        bench_dir = bench_dir[len("file://") :]
    if is_url(bench_dir):  # a folder in object storage: Stage 1 works on a local mirror (trace_eval.stage1.remote)
        from trace_eval.stage1.remote import mirror_bench

        remote = mirror_bench(str(bench_dir))
        bench_dir = remote.root
        if options.store == BENCH_STORE:  # the benchmark keeps its blueprints: beside its index, at the URL
            options = dataclasses.replace(options, store=f"{remote.url.rstrip('/')}/blueprints")
    bench = load_benchmark(bench_dir, check_audio=False)
    if remote is not None:
        bench.origin = remote.url
    store = BlueprintStore(bench.root, options.store)
    started_ray = False
    if options.engine == "ray":
        from trace_eval.stage1 import ray_engine

        device = options.device
        if device == "auto":  # the cluster's GPUs decide; a device named outright is checked once there is work
            started_ray = ray_engine.connect(options.ray_address)
            device = ray_engine.resolve_device(device)
    else:
        device = resolve_device(options.device)
    try:
        extractors, profile = build_extractors(options, device)
        summaries: list[RunSummary] = []
        progress = _progress(options.progress)
        try:  # spoken instructions whose language their answers are tested against first (plan.passes)
            for paths, expected in passes(bench, store, extractors):
                pass_started = time.perf_counter() if summaries else started  # the first pass's wall: the run's so far
                plan = make_plan(
                    bench,
                    store,
                    extractors,
                    fingerprints(extractors),
                    options.force,
                    options.retry_unavailable,
                    profile,
                    paths=paths,
                    expected=expected,
                )
                recorder = Recorder(plan, options.engine)
                if options.engine == "ray" and plan.active():
                    started_ray = ray_engine.connect(options.ray_address) or started_ray
                    ray_engine.resolve_device(device)
                    ray_engine.execute(plan, recorder, options.settings, device, progress)
                elif options.engine == "local":
                    from trace_eval.stage1 import local

                    local.execute(plan, recorder, options.workers, progress)
                # Saved once for the run: a pass's own would drop the failures recorded of the other's clips.
                summaries.append(recorder.summary(device, profile, time.perf_counter() - pass_started, save=False))
        finally:
            progress.close()
    finally:
        if started_ray:
            import ray

            ray.shutdown()
    summary = summaries[0] if len(summaries) == 1 else _add_up(summaries)
    if remote is not None:
        summary.bench = remote.location
    save_summary(store, summary)
    if remote is not None:
        remote.upload_records()
    return summary


_IN_CLASS_PROCESS = "TRACE_STAGE1_CLASS_PROCESS"  # set in the new process: it never hands the run on again


def _in_a_new_process(bench_dir: str | Path, options: BlueprintOptions) -> RunSummary:
    """`run_blueprints` in a new Python with this environment (the class's variables set): its summary."""
    with tempfile.TemporaryDirectory(prefix="trace-stage1-") as tmp:
        job, result = Path(tmp) / "job.pickle", Path(tmp) / "summary.pickle"
        job.write_bytes(pickle.dumps((bench_dir, options)))
        code = "import sys; from trace_eval.stage1.pipeline import _run_pickled; _run_pickled(*sys.argv[1:])"
        env = {**os.environ, _IN_CLASS_PROCESS: "1", "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        proc = subprocess.run([sys.executable, "-c", code, str(job), str(result)], env=env)
        if proc.returncode != 0 or not result.exists():
            raise RuntimeError(f"Stage 1 in a new process (for the numeric class's kernels) exited {proc.returncode}")
        outcome = pickle.loads(result.read_bytes())
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome


def _run_pickled(job: str, result: str) -> None:
    bench_dir, options = pickle.loads(Path(job).read_bytes())
    try:
        outcome: Any = run_blueprints(bench_dir, options)
    except Exception as e:  # noqa: BLE001 - raised again in the process that asked
        outcome = e
    Path(result).write_bytes(pickle.dumps(outcome))


def _progress(enabled: bool):
    from tqdm import tqdm

    return tqdm(total=0, unit="clip", desc="blueprints", disable=not enabled, dynamic_ncols=True)


def run_one_model_at_a_time(bench_dir: str | Path, options: BlueprintOptions) -> RunSummary:
    """For small GPUs: one pass per GPU model (its dependants ride along), freeing it before the next.

    Each pass is an ordinary resumable run restricted to some extractors, so a pass
    interrupted or repeated redoes nothing already stored. The summary adds the passes up.
    """
    if is_url(bench_dir):
        raise ValueError("--one-model-at-a-time needs a local benchmark folder, not a URL")
    if options.engine != "local":
        raise ValueError(
            "--one-model-at-a-time is for the local engine; on ray, give each model its GPU share "
            "with --set NAME.num_gpus=FRACTION"
        )
    device = resolve_device(options.device)
    extractors, _ = build_extractors(options, device)
    gpu = [e.name for e in extractors if e.uses_gpu]
    others = [e.name for e in extractors if not e.uses_gpu and not set(e.depends_on) & set(gpu)]
    # A GPU model's pass takes its CPU dependants along; a GPU dependant (accent after asr) has its own pass.
    passes = [others] + [[g] + [e.name for e in extractors if g in e.depends_on and not e.uses_gpu] for g in gpu]
    summaries = []
    for names in passes:
        if names:
            summaries.append(run_blueprints(bench_dir, dataclasses.replace(options, only=names)))
            _free_gpu()
    return _combine(summaries, passes=[p for p in passes if p], store=options.store)


def _combine(summaries: list[RunSummary], passes: list[list[str]], store: str | None = None) -> RunSummary:
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
        kept_unavailable={k: v for s in summaries for k, v in s.kept_unavailable.items()},
        wall_seconds=round(sum(s.wall_seconds for s in summaries), 3),
    )
    save_summary(BlueprintStore(last.bench, store), combined)
    return combined


def _add_up(summaries: list[RunSummary]) -> RunSummary:
    """One summary of passes over different clips (`passes`): the counts added up."""
    first, last = summaries[0], summaries[-1]
    sections: dict[str, dict[str, int]] = {}
    for s in summaries:
        for name, counts in s.sections.items():
            for key, n in counts.items():
                sections.setdefault(name, {})[key] = sections.get(name, {}).get(key, 0) + n
    seconds: dict[str, float] = defaultdict(float)
    for s in summaries:
        for name, secs in s.seconds_per_extractor.items():
            seconds[name] += secs
    # A clip made in both passes (an instruction that is an answer too) keeps the first pass's failure.
    failures = {(f.path, f.stage): f for s in reversed(summaries) for f in s.failures}
    return dataclasses.replace(
        last,
        **{n: sum(getattr(s, n) for s in summaries) for n in ("clips", "unique_audio", "cached", "computed", "failed")},
        seconds_per_extractor={k: round(v, 3) for k, v in sorted(seconds.items())},
        sections=sections,
        failures=list(failures.values()),
        unavailable={k: v for s in summaries for k, v in s.unavailable.items()},
        kept_unavailable={k: v for s in summaries for k, v in s.kept_unavailable.items()},
        standin={**first.standin, **last.standin},
        wall_seconds=round(sum(s.wall_seconds for s in summaries), 3),
    )


def _free_gpu() -> None:
    import gc
    import sys

    gc.collect()
    torch = sys.modules.get("torch")  # a pass that loaded no model imported no torch
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()
