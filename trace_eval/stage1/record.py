"""Recording a Stage 1 run: results into blueprints, blueprints into the store, the summary.

Engines hand every result here; only this code (in the driver process) writes the
store, so both engines give the same blueprints, fingerprints and provenance.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

from extractors import ClipError, Extractor, ExtractorUnavailable, Section
from trace_eval.io import write_json
from trace_eval.stage1.plan import Job, Plan
from trace_eval.stage1.store import BlueprintStore, apply_section, new_blueprint, section_errors

__all__ = ["AudioInfo", "ClipFailure", "Recorder", "RunSummary"]


@dataclass
class ClipFailure:
    path: str
    sha256: str | None
    stage: str  # "decode", "worker" or an extractor name
    status: str  # failed | unavailable
    reason: str
    packages: str | None = None  # decode failures: the installed packages it was decoded with (tried again on a change)
    recorded: bool = False  # kept as an earlier run recorded it: not tried again with the same file and set-up


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
    unavailable: dict[str, str]  # extractor -> reason it could not run (probed this run)
    device: str
    profile: str
    wall_seconds: float
    engine: str = "local"
    # extractor -> reason recorded earlier; not probed again (see --retry-unavailable)
    kept_unavailable: dict[str, str] = dataclasses.field(default_factory=dict)
    # extractor -> why its weights are stand-ins (trace_eval/stage1/standins.py), for those that ran on them
    standin: dict[str, str] = dataclasses.field(default_factory=dict)
    store: str = ""  # where the blueprints are: `bench`, a folder or a URL (BENCH/blueprints/store.json)

    @property
    def ok(self) -> bool:
        return self.failed == 0

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


@dataclass
class AudioInfo:
    """What the blueprint records about the decoded audio itself."""

    duration_s: float
    sample_rate: int
    channels: int


class Recorder:
    def __init__(self, plan: Plan, engine: str):
        self.plan = plan
        self.engine = engine
        self.failures = [ClipFailure(m.path, None, "decode", "failed", m.reason) for m in plan.missing]
        self.failures += [
            ClipFailure(f.path, f.sha, f.stage, "failed", f.reason, self._packages(f.stage), recorded=True)
            for f in plan.kept_failures
        ]
        self.sections: dict[str, dict[str, int]] = {e.name: defaultdict(int) for e in plan.extractors}
        self.seconds: dict[str, float] = defaultdict(float)
        self.unavailable: dict[str, str] = {}
        self.computed = 0
        self.failed = 0
        for job in plan.jobs.values():  # found in another shelf (an old layout, an earlier store): copied over
            if job.blueprint is not None:
                plan.store.adopt(job.key, job.blueprint)

    def blueprint(self, job: Job, audio: AudioInfo | None) -> dict:
        """The blueprint results go into: the stored one, or a new one for decoded audio."""
        if job.blueprint is not None:
            return job.blueprint
        if audio is None:
            raise ValueError(f"{job.path}: no stored blueprint and no decoded audio to start one")
        return new_blueprint(job.sha, audio.duration_s, audio.sample_rate, audio.channels)

    def apply(self, bp: dict, job: Job, ext: Extractor, result: Any, seconds: float | None) -> bool:
        """One extractor's result for one clip, into its blueprint (not yet written); False when
        the blueprint is left as it was (an unavailable extractor keeps what is stored)."""
        if isinstance(result, ExtractorUnavailable):
            self.unavailable.setdefault(ext.name, str(result))
            if self.plan.keeps_stored(job, ext.name):
                self.sections[ext.name]["cached"] += 1
                return False
        if seconds:
            self.seconds[ext.name] += seconds
        fingerprint = self.plan.fingerprints_of(job)[ext.name]
        if isinstance(result, Section):
            try:
                result = Section(_plain(result.values), result.null_reasons, result.numerics)
                problems = section_errors(result.values)
                if problems:
                    raise ValueError(f"values the blueprint schema does not allow: {'; '.join(problems[:3])}")
            except ValueError as e:
                result = ClipError(f"{ext.name} returned {e}")
        if isinstance(result, Section):
            entry = self._entry(
                ext, fingerprint, "ok", seconds, null_reasons=result.null_reasons, numerics=result.numerics
            )
            apply_section(bp, ext.outputs, entry, result.values)
            self.sections[ext.name]["ok"] += 1
            return True
        status = "unavailable" if isinstance(result, ExtractorUnavailable) else "failed"
        reason = str(result) or type(result).__name__
        apply_section(bp, ext.outputs, self._entry(ext, fingerprint, status, seconds, reason), None)
        self.sections[ext.name][status] += 1
        if status == "failed":
            self.failures.append(ClipFailure(job.path, job.sha, ext.name, status, reason))
        return True

    def fail(self, job: Job, stage: str, reason: str) -> None:
        """A clip that gets no blueprint this run (undecodable, or lost with its worker)."""
        self.failures.append(ClipFailure(job.path, job.sha, stage, "failed", reason, self._packages(stage)))
        self.failed += 1

    def _packages(self, stage: str) -> str | None:
        return self.plan.packages if stage == "decode" else None

    def write(self, job: Job, bp: dict) -> None:
        """Write a blueprint, keeping the sections another process wrote into the store since the plan read it
        (two benchmarks sharing audio, blueprinted at once, with other extractors or settings)."""
        store = self.plan.store
        with store.shelf.lock():
            latest = store.latest(job.key)
            if latest is not None and latest["provenance"]["extractors"] != job.stored_sections:
                ours, before = bp["provenance"]["extractors"], job.stored_sections
                for ext in self.plan.extractors:
                    if ext.name in ours and ours[ext.name] != before.get(ext.name):  # made by this run
                        apply_section(latest, ext.outputs, ours[ext.name], bp)
                bp = latest
            store.put(job.key, bp)
        self.computed += 1

    def summary(self, device: str, profile: str, wall_seconds: float, save: bool = True) -> RunSummary:
        """What the run did; with `save`, recorded in the store (summary.json, failures.jsonl)."""
        for job in self.plan.jobs.values():
            for name in self.sections:
                if name not in job.needed:
                    self.sections[name]["cached"] += 1
        no_audio = len(self.plan.missing) + len(self.plan.undecodable)
        failed = self.failed + no_audio
        summary = RunSummary(
            bench=str(self.plan.bench.root),
            clips=self.plan.references,
            unique_audio=len(self.plan.jobs) + no_audio,
            cached=len(self.plan.jobs) - self.computed - self.failed,
            computed=self.computed,
            failed=failed,
            seconds_per_extractor={k: round(v, 3) for k, v in sorted(self.seconds.items())},
            sections={k: dict(v) for k, v in self.sections.items()},
            failures=self.failures,
            unavailable=self.unavailable,
            device=device,
            profile=profile,
            wall_seconds=round(wall_seconds, 3),
            engine=self.engine,
            kept_unavailable={k: v for k, v in self.plan.kept_unavailable.items() if k not in self.unavailable},
            standin={
                e.name: note
                for e in self.plan.extractors
                if self.sections[e.name].get("ok") and (note := e.model().standin)
            },
        )
        if save:
            save_summary(self.plan.store, summary)
        return summary

    def _entry(
        self,
        ext: Extractor,
        fingerprint: str,
        status: str,
        seconds: float | None,
        reason: str | None = None,
        null_reasons: dict[str, str] | None = None,
        numerics: dict | None = None,
    ) -> dict:
        model = ext.model()
        entry: dict[str, Any] = {
            "name": ext.name,
            "version": ext.version,
            "fingerprint": fingerprint,
            "model_id": model.id,
            "revision": model.revision,
            "device": ext.device,
            "engine": self.engine,
            "seconds": None if seconds is None else round(seconds, 4),
            "status": status,
            "reason": reason,
        }
        if model.standin:
            entry["standin"] = model.standin
        if status != "ok":  # tried again only when this changes (or with --retry-unavailable, --force)
            entry["resolved_from"] = self.plan.sources[ext.name]
        if null_reasons:
            entry["null_reasons"] = dict(null_reasons)
        if numerics:
            entry["numerics"] = _plain(numerics)
        return entry


def save_summary(store: BlueprintStore, summary: RunSummary) -> None:
    summary.store = store.location
    store.record_store()
    write_json(store.dir / "summary.json", summary.to_json())
    store.write_failures([dataclasses.asdict(f) for f in summary.failures])


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
