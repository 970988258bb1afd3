"""The ray engine: the plan carried out as a Ray Data pipeline, on one machine or a cluster.

    rows (one per unique audio with work to do)
      -> map: decode once, resample once per model rate, run the per-clip signal
         extractors (CPU tasks, retried when a worker dies)
      -> map_batches per model extractor: an actor pool, each actor loading its model
         once, sized by the extractor's `pool` (actors, GPU share, CPUs, clips per call);
         an extractor that needs audio and the values of another (prosody after asr)
         runs the same way, after the stages it depends on
      -> rows streamed back to the driver, which runs the audio-free dependants
         (speaking rate) and writes each blueprint as it arrives.

Only the driver writes the store, so an interrupted run resumes from what was
written. The decoded audio crosses the object store once, as float32 bytes at the
rates the models want, and is dropped before rows come back to the driver.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
import pickle
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from extractors import Clip, Extractor, ExtractorUnavailable, Section
from extractors.base import Pool
from trace_eval.audio import Audio
from trace_eval.stage1.local import Decoded, decode_and_extract, load_per_clip, run_batched, runs_in_workers
from trace_eval.stage1.plan import Job, Plan
from trace_eval.stage1.record import AudioInfo, Recorder
from trace_eval.stage1.remote import local_copy
from trace_eval.stage1.settings import coerce
from trace_eval.stage1.shelf import display_location
from trace_eval.stage1.store import apply_section

__all__ = ["EngineUnavailable", "connect", "execute", "resolve_device", "start_local"]

INSTALL = "pip install 'trace-eval[ray]' (or: pip install 'ray[data]==2.60.0')"
ROWS_PER_BLOCK = 4  # small blocks: a worker that dies takes few clips with it, and results stream early
RETRIES = 3  # per task, and restarts per actor: a worker fault is retried, a clip that kills every try is not


class EngineUnavailable(RuntimeError):
    """The engine cannot start here; the message says how to fix it."""


def _ray():
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError as e:
        raise EngineUnavailable(f"--engine ray needs Ray Data, which is not installed: {INSTALL}") from e
    return ray


def _project_root() -> str:
    import trace_eval

    return str(Path(trace_eval.__file__).resolve().parent.parent)


def start_local(**init_args: Any) -> None:
    """Start a Ray instance on this machine whose workers import this very copy of the project."""
    ray = _ray()
    path = os.pathsep.join(p for p in (_project_root(), os.environ.get("PYTHONPATH")) if p)
    ray.init(
        runtime_env={"env_vars": {"PYTHONPATH": path}},
        include_dashboard=False,
        logging_level=logging.WARNING,
        log_to_driver=False,
        **init_args,
    )


def connect(address: str | None) -> bool:
    """Join the cluster at `address` (or $RAY_ADDRESS), else start a local Ray; True when started here."""
    ray = _ray()
    if ray.is_initialized():
        return False
    address = address or os.environ.get("RAY_ADDRESS")
    if address:
        try:
            ray.init(address=address, logging_level=logging.WARNING, log_to_driver=False)
        except ConnectionError as e:
            raise EngineUnavailable(
                f"cannot reach the Ray cluster at {address}: {e}. Check --ray-address "
                "(or RAY_ADDRESS), e.g. ray://HEAD:10001 or auto on a cluster node"
            ) from e
    else:
        start_local()
    return True


def resolve_device(device: str) -> str:
    """auto -> cuda when the cluster has GPUs (the driver itself may have none)."""
    gpus = _ray().cluster_resources().get("GPU", 0)
    if device == "auto":
        return "cuda" if gpus else "cpu"
    if device.startswith("cuda") and not gpus:
        raise ValueError(f"--device {device}, but the Ray cluster has no GPU; use --device auto or cpu")
    return device


# ---------------------------------------------------------------------------------------
# What runs on the workers


_TASK_EXTRACTORS: dict[tuple[str, str], Extractor] = {}
_TASK_UNAVAILABLE: dict[tuple[str, str], str] = {}


def _decode(row: dict, per_clip: list[tuple[type[Extractor], Any, str]], rates: list[int]) -> dict:
    """CPU task: decode one file, run its per-clip extractors, ship the audio at the model rates."""
    loaded: dict[str, Extractor] = {}
    unavailable: dict[str, str] = {}
    for cls, config, fingerprint in per_clip:  # loaded once per worker process
        key = (cls.name, fingerprint)
        if key not in _TASK_EXTRACTORS and key not in _TASK_UNAVAILABLE:
            ok: dict[str, Extractor] = {}
            missing: dict[str, str] = {}
            load_per_clip([(cls, config)], ok, missing)
            # one extractor asked for: at most one entry in either
            _TASK_EXTRACTORS.update((key, e) for e in ok.values())
            _TASK_UNAVAILABLE.update((key, r) for r in missing.values())
        if key in _TASK_EXTRACTORS:
            loaded[cls.name] = _TASK_EXTRACTORS[key]
        else:
            unavailable[cls.name] = _TASK_UNAVAILABLE[key]
    names = [n for n in json.loads(row["per_clip"])]
    needs_audio = bool(json.loads(row["models"]))
    shown = display_location(row["path"])
    try:
        with local_copy(row["path"]) as path:  # a URL: the worker fetches the clip itself
            dec = decode_and_extract(path, row["sha"], names, rates if needs_audio else [], loaded, unavailable)
            if dec.error:
                dec.error = dec.error.replace(path, shown)
    except OSError as e:  # the URL could not be read from this node
        dec = Decoded(None, f"{shown}: cannot fetch: {type(e).__name__}: {e}", {})
    out = {
        "sha": row["sha"],
        "language": row["language"],
        "expects": row["expects"],
        "blueprint": row["blueprint"],
        "models": row["models"],
        "error": dec.error or "",
        "info": "",
        "results": pickle.dumps(dec.sections),
    }
    if dec.audio is not None:
        out["info"] = json.dumps([dec.audio.duration_s, dec.audio.sample_rate, dec.audio.channels])
    for rate in rates:
        out[f"audio_{rate}"] = dec.audio.at(rate).tobytes() if dec.audio is not None and needs_audio else b""
    return out


class ShippedAudio(Audio):
    """Decoded audio as a model actor receives it: samples at the rates the models want,
    with the duration of the original (the same value the local engine's models see)."""

    def __init__(self, by_rate: dict[int, np.ndarray], duration_s: float, channels: int):
        rate, samples = next(iter(by_rate.items()))
        super().__init__(samples, rate, channels, dict(by_rate))
        self._duration_s = duration_s

    @property
    def duration_s(self) -> float:
        return self._duration_s


class ModelActor:
    """One actor of a model's pool: loads the model once, then extracts batch after batch.

    A model that depends on another (accent reads the language asr found) sees each clip's stored blueprint
    with what its dependencies gave in this run, as on the local engine.
    """

    def __init__(
        self,
        cls: type[Extractor],
        config: Any,
        device: str,
        rates: list[int],
        dependencies: dict[str, tuple[str, ...]] | None = None,  # dependency -> the blueprint keys it owns
    ):
        self.ext = cls(config, device)
        self.rates = rates
        self.dependencies = dependencies or {}
        self.unavailable: str | None = None
        try:
            self.ext.load()
        except ExtractorUnavailable as e:  # every clip gets the reason, as on the local engine
            self.unavailable = str(e)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        name = self.ext.name
        results = [pickle.loads(r) for r in batch["results"]]
        chosen = [i for i in range(len(results)) if not batch["error"][i] and name in json.loads(batch["models"][i])]
        if self.unavailable is not None:
            for i in chosen:
                results[i][name] = (ExtractorUnavailable(self.unavailable), None)
        else:
            clips = []
            for i in chosen:
                duration_s, _, channels = json.loads(batch["info"][i])
                by_rate = {r: np.frombuffer(batch[f"audio_{r}"][i], dtype=np.float32) for r in self.rates}
                audio = ShippedAudio(by_rate, duration_s, channels)
                blueprint = self._blueprint(batch["blueprint"][i], results[i])
                expects = tuple(c for c in str(batch["expects"][i]).split(",") if c)
                clips.append(Clip(str(batch["sha"][i]), audio, blueprint, str(batch["language"][i]) or None, expects))
            for i, (_, result, seconds) in zip(chosen, run_batched(self.ext, clips)):
                results[i][name] = (result, seconds)
        batch["results"] = np.array([pickle.dumps(r) for r in results], dtype=object)
        return batch

    def _blueprint(self, stored: str, results: dict[str, tuple[Any, float | None]]) -> dict:
        """The stored blueprint with this run's results of the dependencies (the keys of one that failed removed)."""
        if not self.dependencies:
            return {}
        blueprint = {**json.loads(stored or "{}"), "provenance": {"extractors": {}}}
        for name, outputs in self.dependencies.items():
            if name in results:
                result = results[name][0]
                apply_section(
                    blueprint, outputs, {"name": name}, result.values if isinstance(result, Section) else None
                )
        return blueprint


# ---------------------------------------------------------------------------------------
# The driver


def pool_of(ext: Extractor, settings: dict[str, dict[str, Any]]) -> Pool:
    """The extractor's declared pool with the --set overrides of its pool fields."""
    base = type(ext).pool
    overrides = {
        k: coerce(v, getattr(base, k))
        for k, v in settings.get(ext.name, {}).items()
        if k in {f.name for f in dataclasses.fields(Pool)}
    }
    return dataclasses.replace(base, **overrides)


def execute(plan: Plan, recorder: Recorder, settings: dict[str, dict[str, Any]], device: str, progress) -> None:
    ray = _ray()
    active = plan.active()
    by_name = plan.by_name
    per_clip = [e for e in plan.extractors if e.name in active and runs_in_workers(e)]
    # Models, and per-clip extractors that need audio and another's values: actor stages in plan order, so a
    # dependant's stage comes after those of what it depends on.
    models = [e for e in plan.extractors if e.name in active and e.sample_rate and e not in per_clip]
    in_driver = [e for e in plan.extractors if e.name in active and e not in per_clip and e not in models]
    for ext in in_driver:
        try:
            ext.load()
        except ExtractorUnavailable as e:
            recorder.unavailable[ext.name] = str(e)
    todo = plan.todo()
    progress.reset(total=len(todo))
    # Stale sections that need no audio (e.g. speaking rate after a change of its settings) need no workers.
    audio_free = [j for j in todo if not any(by_name[n].sample_rate for n in j.needed)]
    for job in audio_free:
        _finish(plan, recorder, job, recorder.blueprint(job, None), {}, in_driver)
        progress.update(1)
    dependants = {e.name for e in models if e.depends_on}
    rows = [
        {
            "sha": j.sha,
            "language": j.language or "",
            "expects": ",".join(j.expects),
            # what a model that depends on others reads of the stored blueprint (accent: the language; prosody: words)
            "blueprint": json.dumps(j.blueprint or {}) if dependants & set(j.needed) else "",
            "path": plan.bench.source(j.path),
            "per_clip": json.dumps([e.name for e in per_clip if e.name in j.needed]),
            "models": json.dumps([e.name for e in models if e.name in j.needed]),
        }
        for j in todo
        if j not in audio_free
    ]
    if not rows:
        return

    logging.getLogger("ray.data").setLevel(logging.ERROR)  # our own progress bar and summary say it
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    context.max_errored_blocks = -1  # a block whose worker died past its retries: its clips are recorded failed

    rates = sorted({e.sample_rate for e in models if e.sample_rate is not None})  # every model hears audio
    cpus = ray.cluster_resources().get("CPU", 1.0)
    blocks = min(len(rows), max(math.ceil(len(rows) / ROWS_PER_BLOCK), int(2 * cpus)))  # enough to keep all busy
    ds = ray.data.from_items(rows, override_num_blocks=blocks)
    # Ray 2.60 bounds retries (infinite by default) only through ray_remote_args, which it already
    # announces as deprecated for 2.64: the version is pinned in constraints.txt.
    warnings.filterwarnings("ignore", message="`ray_remote_args` is deprecated")
    ds = ds.map(
        _decode,
        fn_kwargs={"per_clip": [(type(e), e.config, plan.fingerprints[e.name]) for e in per_clip], "rates": rates},
        num_cpus=1,
        max_retries=RETRIES,
    )
    pools = {e.name: pool_of(e, settings) for e in models}
    reserved = sum(p.actors * p.num_cpus for p in pools.values()) or 1.0
    cpu_scale = min(1.0, cpus / 2 / reserved)  # models together reserve at most half the CPUs: decoding needs some
    for ext in models:
        pool = pools[ext.name]
        ds = ds.map_batches(
            ModelActor,
            fn_constructor_args=(
                type(ext),
                ext.config,
                ext.device,
                rates,
                {d: by_name[d].outputs for d in ext.depends_on},
            ),
            batch_size=pool.batch_clips,
            compute=ray.data.ActorPoolStrategy(size=pool.actors),
            num_cpus=pool.num_cpus * cpu_scale,
            num_gpus=pool.num_gpus if ext.uses_gpu and device.startswith("cuda") else 0,
            batch_format="numpy",
            max_restarts=RETRIES,
            max_task_retries=RETRIES,
        )
    ds = ds.drop_columns(["blueprint"] + [f"audio_{r}" for r in rates])

    pending = {row["sha"] for row in rows}
    for row in ds.iter_rows():
        job = plan.jobs[row["sha"]]
        pending.discard(job.sha)
        if row["error"]:
            recorder.fail(job, "decode", row["error"])
        else:
            info = AudioInfo(*json.loads(row["info"]))
            _finish(
                plan,
                recorder,
                job,
                recorder.blueprint(job, info),
                pickle.loads(row["results"]),
                in_driver,
                _Length(info.duration_s),
            )
        progress.update(1)
    for sha in sorted(pending):
        recorder.fail(
            plan.jobs[sha],
            "worker",
            f"the Ray workers processing this clip died {RETRIES + 1} times; "
            "not retried further this run (run again to retry)",
        )


class _Length:
    """What an audio-free dependant reads of decoded audio: its exact length (the blueprint's is rounded),
    as on the local engine."""

    def __init__(self, duration_s: float):
        self.duration_s = duration_s


def _finish(
    plan: Plan,
    recorder: Recorder,
    job: Job,
    bp: dict,
    results: dict[str, tuple[Any, float | None]],
    in_driver: list[Extractor],
    audio: _Length | None = None,
) -> None:
    """Record a clip's results in the order the local engine does, run the audio-free dependants, write."""
    changed = job.blueprint is None
    order = [e for e in plan.extractors if runs_in_workers(e)] + [e for e in plan.extractors if not runs_in_workers(e)]
    for ext in order:
        if ext.name not in job.needed:
            continue
        if ext.name in results:
            result, seconds = results[ext.name]
        elif ext in in_driver:
            missing = [d for d in ext.depends_on if d in recorder.unavailable]  # known once their results came
            if ext.name in recorder.unavailable or missing:
                reason = recorder.unavailable.get(ext.name) or f"depends on {', '.join(missing)}, which is unavailable"
                result, seconds = ExtractorUnavailable(reason), None
            else:
                [(_, result, seconds)] = run_batched(ext, [Clip(job.sha, audio, bp, job.language, job.expects)])
        else:
            continue
        changed |= recorder.apply(bp, job, ext, result, seconds)
    if changed:
        recorder.write(job, bp)
