"""The plan of a Stage 1 run: which sections of which unique audio are stale.

Built from the store and the extractors' fingerprints alone (no audio decoded, no
model loaded), so a run with nothing stale answers at once. Every engine carries
out the same plan, which is why they give the same blueprints.

A failure is data like any result: a file that did not decode, or a section that
failed, is not tried again while what it was tried with is unchanged (the file's
content, the extractor's fingerprint, the installed packages); `--force` tries again.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

from extractors import Extractor
from trace_eval.bench import Benchmark
from trace_eval.stage1.store import BlueprintStore

__all__ = ["Job", "Plan", "RecordedFailure", "installed_packages", "make_plan", "resolved_from"]


@dataclass
class Job:
    """One unique audio content and the sections to compute for it."""

    path: str  # relative to the benchmark folder (first one seen for this content)
    sha: str
    blueprint: dict | None  # as stored, None when there is none yet
    needed: list[str]  # extractor names to compute, in dependency order
    # provenance.extractors as the plan read them: what another process wrote since differs from this
    stored_sections: dict = field(default_factory=dict)


@dataclass
class Missing:
    """An audio path of the manifest with no file behind it."""

    path: str
    reason: str


@dataclass
class RecordedFailure:
    """A failure of an earlier run kept as it was recorded, since what it was tried with is unchanged."""

    path: str
    sha: str
    stage: str  # "decode" (the clip has no blueprint) or the extractor whose section failed
    reason: str


@dataclass
class Plan:
    bench: Benchmark
    store: BlueprintStore
    extractors: list[Extractor]  # dependencies first
    fingerprints: dict[str, str]
    jobs: dict[str, Job]  # sha256 -> job, every unique audio found
    missing: list[Missing]
    references: int  # audio references in the manifest
    sources: dict[str, str] = field(default_factory=dict)  # extractor -> resolved_from(extractor)
    # Sections recorded as unavailable and not probed again (what the weights resolve from is unchanged).
    kept_unavailable: dict[str, str] = field(default_factory=dict)  # extractor -> recorded reason
    kept_failures: list[RecordedFailure] = field(default_factory=list)  # not tried again
    packages: str = ""  # installed_packages(), recorded with a decode failure

    @property
    def undecodable(self) -> list[RecordedFailure]:
        """Files recorded as not decodable and unchanged since: clips without a blueprint, not jobs."""
        return [f for f in self.kept_failures if f.stage == "decode"]

    @property
    def by_name(self) -> dict[str, Extractor]:
        return {e.name: e for e in self.extractors}

    def todo(self) -> list[Job]:
        """Jobs with work to do, shortest audio first (clips of similar length share a batch)."""
        jobs = [j for j in self.jobs.values() if j.needed]
        return sorted(jobs, key=lambda j: self.duration(j))

    def active(self) -> set[str]:
        return {n for j in self.jobs.values() for n in j.needed}

    def duration(self, job: Job) -> float:
        """Seconds of audio, from the stored blueprint or the file header (no decoding)."""
        known = (job.blueprint or {}).get("duration_s")
        if known:
            return float(known)
        try:
            import soundfile as sf

            return float(sf.info(str(self.bench.resolve(job.path))).duration)
        except Exception:
            return 10.0  # unreadable header: only the order of the work depends on it

    def drop_unrunnable(self, unavailable: dict[str, str]) -> None:
        """An extractor that cannot run leaves what is stored as it is: a section made earlier (its
        provenance says by what) is kept rather than wiped, and one already recorded as unavailable
        is not rewritten (the reason's wording, e.g. a network error, may differ between runs) unless
        what it resolves from changed."""
        for job in self.jobs.values():
            job.needed = [n for n in job.needed if not (n in unavailable and self.keeps_stored(job, n))]

    def keeps_stored(self, job: Job, name: str) -> bool:
        """Whether an extractor that cannot run leaves this job's stored section alone."""
        stored = (job.blueprint or {}).get("provenance", {}).get("extractors", {}).get(name, {})
        return stored.get("status") == "ok" or (
            stored.get("status") == "unavailable"
            and stored.get("fingerprint") == self.fingerprints[name]
            and stored.get("resolved_from") == self.sources[name]
        )


def make_plan(
    bench: Benchmark,
    store: BlueprintStore,
    extractors: list[Extractor],
    fingerprints: dict[str, str],
    force: bool = False,
    retry_unavailable: bool = False,
) -> Plan:
    """Hash every audio file (reusing the index) and list each one's stale sections."""
    sources = {e.name: resolved_from(e) for e in extractors}
    plan = Plan(
        bench,
        store,
        extractors,
        fingerprints,
        {},
        [],
        sum(len(p.audio_paths()) for p in bench.pairs),
        sources,
        packages=installed_packages(),
    )
    recorded_undecodable = {} if force else store.recorded_decode_failures()
    undecodable: set[str] = set()
    for rel in bench.audio_files():
        path = bench.resolve(rel)
        if not path.is_file():
            plan.missing.append(Missing(rel, f"{path}: file not found"))
            continue
        sha = store.hash_of(rel)
        if sha in plan.jobs or sha in undecodable:
            continue  # identical audio under several paths is processed once
        blueprint = store.get(sha)
        failure = recorded_undecodable.get(rel, {})
        if blueprint is None and failure.get("sha256") == sha and failure.get("packages") == plan.packages:
            plan.kept_failures.append(RecordedFailure(rel, sha, "decode", failure.get("reason") or "not decodable"))
            undecodable.add(sha)
            continue
        current = (blueprint or {}).get("provenance", {}).get("extractors", {})
        needed: list[str] = []
        for e in extractors:  # dependencies come first, so a redone one takes its dependants along
            entry = current.get(e.name, {})
            fresh = entry.get("fingerprint") == fingerprints[e.name]
            # A section that could not be made is not tried again while what it resolves from is unchanged.
            recorded = (
                fresh
                and entry.get("status") in ("unavailable", "failed")
                and entry.get("resolved_from") == sources[e.name]
                and not (retry_unavailable and entry.get("status") == "unavailable")
            )
            if (
                force
                or not fresh
                or any(d in needed for d in e.depends_on)
                or (entry.get("status") != "ok" and not recorded)
            ):
                needed.append(e.name)
            elif recorded and entry["status"] == "unavailable":
                plan.kept_unavailable[e.name] = entry.get("reason") or "unavailable"
            elif recorded:
                plan.kept_failures.append(RecordedFailure(rel, sha, e.name, entry.get("reason") or "failed"))
        plan.jobs[sha] = Job(rel, sha, blueprint, needed, copy.deepcopy(current))
    store.save_index()
    return plan


def resolved_from(ext: Extractor) -> str:
    """A short hash of what an extractor's weights and packages resolve from.

    A section recorded as unavailable is probed again only when this changes: the
    explicit model path, $TRACE_MODELS_DIR, the hub cache folder of its model, the
    offline switches, or the installed packages (site-packages changes on every
    install). Cheap: a few stat calls, nothing imported.
    """
    model_id = ext.model().id
    hub = None
    if model_id and "/" in model_id:
        hub = _hub_cache() / f"models--{model_id.replace('/', '--')}" / "snapshots"
    payload = {
        "model_path": _stamp(getattr(ext.config, "model_path", None)),
        "models_dir": _stamp(os.environ.get("TRACE_MODELS_DIR")),
        "hub": _stamp(hub),
        "offline": [os.environ.get(v, "") for v in ("HF_HUB_OFFLINE", "TRACE_OFFLINE")],
        "packages": _stamp(sysconfig.get_paths()["purelib"]),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def installed_packages() -> str:
    """A short hash that changes on every install into this environment (the decoders come with packages)."""
    return hashlib.sha256(str(_stamp(sysconfig.get_paths()["purelib"])).encode()).hexdigest()[:16]


def _stamp(path: str | Path | None) -> str | None:
    if not path:
        return None
    try:
        return f"{path}@{os.stat(Path(path).expanduser()).st_mtime_ns}"
    except OSError:
        return f"{path}@absent"


def _hub_cache() -> Path:
    """The Hugging Face hub cache folder, by the variables huggingface_hub reads."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    return Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")).expanduser() / "huggingface" / "hub"
