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
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from extractors import Extractor
from trace_eval.bench import Benchmark
from trace_eval.judge.languages import answer_languages, heard_instruction_languages
from trace_eval.stage1.store import BlueprintStore, blueprint_key

__all__ = [
    "Job",
    "Plan",
    "RecordedFailure",
    "Stale",
    "expected_languages",
    "fingerprints",
    "installed_packages",
    "make_plan",
    "passes",
    "resolved_from",
    "variant_of",
]

DEFAULT_PROFILE = "cpu"  # the profile whose blueprints are an audio's default variant


def variant_of(profile: str, language: str | None, expects: tuple[str, ...] = ()) -> str:
    """Which of an audio's blueprints a run makes and reads: the settings that give the same audio other sections
    are kept apart in the store, side by side, so that neither run recomputes the other's ("" for the cpu
    profile with the language detected; "language-es", "paper", "paper.language-es", "expects-es" for an answer
    tested against the language its instruction expects ...)."""
    parts = [] if profile == DEFAULT_PROFILE else [profile]
    if language:
        parts.append(f"language-{language}")
    elif expects:
        parts.append("expects-" + "+".join(expects))
    return ".".join(parts)


@dataclass
class Job:
    """One unique audio content and the sections to compute for it."""

    path: str  # relative to the benchmark folder (first one seen for this content)
    sha: str
    blueprint: dict | None  # as stored, None when there is none yet
    needed: list[str]  # extractor names to compute, in dependency order
    # provenance.extractors as the plan read them: what another process wrote since differs from this
    stored_sections: dict = field(default_factory=dict)
    language: str | None = None  # the language the manifest declares for this audio; None: detected
    expects: tuple[str, ...] = ()  # the languages its items' contexts expect it in (Clip.expects)
    variant: str = ""  # the variant of settings its blueprint is made in (variant_of)

    @property
    def key(self) -> str:
        """The name its blueprint is kept under in the store."""
        return blueprint_key(self.sha, self.variant)


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
class Stale:
    """What a run makes of one extractor's sections: how many clips, how much audio, and of those how many had a
    section made otherwise before (another version, settings, model, or a dependency's) that is made again."""

    clips: int = 0
    audio_s: float = 0.0
    made_again: int = 0


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
    # (declared language, expected languages) -> their fingerprints
    _declared: dict[tuple[str | None, tuple[str, ...]], dict[str, str]] = field(default_factory=dict)

    @property
    def undecodable(self) -> list[RecordedFailure]:
        """Files recorded as not decodable and unchanged since: clips without a blueprint, not jobs."""
        return [f for f in self.kept_failures if f.stage == "decode"]

    @property
    def by_name(self) -> dict[str, Extractor]:
        return {e.name: e for e in self.extractors}

    def fingerprints_of(self, job: Job) -> dict[str, str]:
        """The fingerprints a job's sections are made with: those of the run, and for a clip whose manifest
        declares its language (or whose context expects one), those of the extractors that read it (and of their
        dependants) with it."""
        if job.language is None and not job.expects:
            return self.fingerprints
        key = (job.language, job.expects)
        if key not in self._declared:
            self._declared[key] = fingerprints(self.extractors, job.language, job.expects)
        return self._declared[key]

    def todo(self) -> list[Job]:
        """Jobs with work to do, shortest audio first (clips of similar length share a batch)."""
        jobs = [j for j in self.jobs.values() if j.needed]
        return sorted(jobs, key=lambda j: self.duration(j))

    def active(self) -> set[str]:
        return {n for j in self.jobs.values() for n in j.needed}

    def stale(self) -> dict[str, Stale]:
        """Per extractor of the run (dependencies first), the sections it makes: what `store stale` shows."""
        found = {e.name: Stale() for e in self.extractors}
        for job in self.jobs.values():
            for name in job.needed:
                found[name].clips += 1
                found[name].audio_s += self.duration(job)
                found[name].made_again += name in job.stored_sections
        return found

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
            and stored.get("fingerprint") == self.fingerprints_of(job)[name]
            and stored.get("resolved_from") == self.sources[name]
        )


def make_plan(
    bench: Benchmark,
    store: BlueprintStore,
    extractors: list[Extractor],
    fingerprints: dict[str, str],
    force: bool = False,
    retry_unavailable: bool = False,
    profile: str = DEFAULT_PROFILE,
    record: bool = True,
    paths: Collection[str] | None = None,
    expected: Mapping[str, tuple[str, ...]] | None = None,
) -> Plan:
    """Hash every audio file (reusing the index) and list each one's stale sections, in the variant of the
    settings the run makes it with (`variant_of`: the profile, a language declared for it or for the run, the
    languages an answer's context expects it in). With `record`, the benchmark's index keeps the hashes and the
    variant each path now reads; without, a look at what a run would do writes nothing. `paths`: these audio
    files only, and `expected`: their `expected_languages`, as `passes` gives them."""
    sources = {e.name: resolved_from(e) for e in extractors}
    plan = Plan(
        bench,
        store,
        extractors,
        fingerprints,
        {},
        [],
        sum(1 for p in bench.pairs for a in p.audio_paths() if paths is None or a in paths),
        sources,
        packages=installed_packages(),
    )
    recorded_undecodable = {} if force else store.recorded_decode_failures()
    declared = bench.declared_languages()
    expected = expected_languages(bench, store, extractors) if expected is None else expected
    asr = next((e for e in extractors if e.name == "asr"), None)
    run_language = getattr(asr.config, "language", None) if asr is not None else None  # --set asr.language=xx
    conflicts: list[str] = []
    undecodable: set[str] = set()
    files = [r for r in bench.audio_files() if paths is None or r in paths]
    for rel in files:
        path = bench.resolve(rel)
        if not path.is_file():
            plan.missing.append(Missing(rel, f"{path}: file not found"))
            continue
        sha = store.hash_of(rel)
        expects = () if run_language else expected.get(sha, ())
        variant = variant_of(profile, declared.get(rel) or run_language, expects)
        if sha in plan.jobs:  # identical audio under several paths is processed once, in the language declared
            job = plan.jobs[sha]
            if declared.get(rel) not in (None, job.language):
                if job.language is not None:
                    conflicts.append(f"{job.path} ({job.language}) and {rel} ({declared[rel]}) are the same audio")
                    continue
                job.language, job.variant = declared[rel], variant
                job.blueprint = _stored_or_started(store, sha, variant)
                job.stored_sections = copy.deepcopy(_sections(job.blueprint))
                plan.kept_failures = [f for f in plan.kept_failures if f.sha != sha]
                job.needed = _stale(plan, job, force, retry_unavailable)
            continue
        if sha in undecodable:
            continue
        blueprint = _stored_or_started(store, sha, variant)
        failure = recorded_undecodable.get(rel, {})
        if blueprint is None and failure.get("sha256") == sha and failure.get("packages") == plan.packages:
            plan.kept_failures.append(RecordedFailure(rel, sha, "decode", failure.get("reason") or "not decodable"))
            undecodable.add(sha)
            continue
        job = Job(rel, sha, blueprint, [], copy.deepcopy(_sections(blueprint)), declared.get(rel), expects, variant)
        job.needed = _stale(plan, job, force, retry_unavailable)
        plan.jobs[sha] = job
    if record:
        for rel in files:  # every path of an audio reads the one variant made of it
            made = plan.jobs.get(store.index().get(rel, {}).get("sha256", ""))
            if made is not None:
                store.set_variant(rel, made.variant)
        store.save_index()
    if conflicts:
        raise ValueError(
            f"{bench.manifest_path}: audio declared in two languages: {'; '.join(conflicts)}. "
            "One blueprint serves both paths: declare one language for them, or none"
        )
    return plan


def expected_languages(bench: Benchmark, store: BlueprintStore, extractors: list[Extractor]) -> dict[str, tuple]:
    """sha256 -> the languages the items of every path with that audio hold it to, as an answer (`held_language`:
    an audio that answers a Spanish and an English instruction is tested in both), the spoken instructions already
    heard included (`passes`). Empty where no extractor of the run tests an expected language (asr): then they make no
    variant."""
    if not any(e.reads_expected_languages for e in extractors):
        return {}
    found: dict[str, set[str]] = {}
    heard = heard_instruction_languages(bench.pairs, store.get_by_path)
    for rel, codes in answer_languages(bench.pairs, heard).items():
        if bench.resolve(rel).is_file():
            found.setdefault(store.hash_of(rel), set()).update(codes)
    return {sha: tuple(sorted(codes)) for sha, codes in found.items()}


def passes(
    bench: Benchmark, store: BlueprintStore, extractors: list[Extractor]
) -> Iterator[tuple[Collection[str] | None, dict[str, tuple[str, ...]] | None]]:
    """The audio files a run makes in turn, with their expected languages (`make_plan`'s `paths` and `expected`;
    None: every file, and computed by the plan), each asked for once the pass before it is done: the spoken
    instructions whose answers wait on their language first (`Pair.waits_on_instruction`), then the other files
    and those of the first whose expected languages the instructions heard changed, so that each answer is tested
    against its instruction's language as it is made (one decoding, not one before and one after). One pass where
    nothing waits, or where no extractor of the run tests an expected language."""
    first = {p.instruction_path for p in bench.pairs if p.instruction_path and p.waits_on_instruction()}
    if not first or not any(e.reads_expected_languages for e in extractors):
        yield None, None
        return
    before = expected_languages(bench, store, extractors)
    yield first, before
    after = expected_languages(bench, store, extractors)  # with the instructions the first pass heard
    changed = {sha for sha in before.keys() | after.keys() if before.get(sha) != after.get(sha)}
    rest = [
        r for r in bench.audio_files() if r not in first or (bench.resolve(r).is_file() and store.hash_of(r) in changed)
    ]
    yield rest, after


def _stored_or_started(store: BlueprintStore, sha: str, variant: str) -> dict | None:
    """The stored blueprint of this variant; for a variant not made yet, a copy of the audio's default one, whose
    sections the variant's settings do not change are current for it too (only the others are computed)."""
    found = store.get(blueprint_key(sha, variant))
    if found is None and variant:
        default = store.get(sha)
        return copy.deepcopy(default) if default is not None else None
    return found


def _sections(blueprint: dict | None) -> dict:
    return (blueprint or {}).get("provenance", {}).get("extractors", {})


def _stale(plan: Plan, job: Job, force: bool, retry_unavailable: bool) -> list[str]:
    """The extractors whose sections of this job are to be made (dependencies first); records the failures and
    unavailable sections kept as they were."""
    current = job.stored_sections
    fingerprints = plan.fingerprints_of(job)
    needed: list[str] = []
    for e in plan.extractors:  # dependencies come first, so a redone one takes its dependants along
        entry = current.get(e.name, {})
        fresh = entry.get("fingerprint") == fingerprints[e.name]
        # A section that could not be made is not tried again while what it resolves from is unchanged.
        recorded = (
            fresh
            and entry.get("status") in ("unavailable", "failed")
            and entry.get("resolved_from") == plan.sources[e.name]
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
            plan.kept_failures.append(RecordedFailure(job.path, job.sha, e.name, entry.get("reason") or "failed"))
    return needed


def fingerprints(
    extractors: list[Extractor], declared_language: str | None = None, expects: tuple[str, ...] = ()
) -> dict[str, str]:
    """Each extractor's own fingerprint combined with those of its dependencies (for a clip declared to be in
    `declared_language`, None for one whose language is detected, and whose context expects `expects`)."""
    result: dict[str, str] = {}
    for ext in extractors:  # dependencies come first
        parts = [ext.fingerprint(declared_language, expects)] + [result[d] for d in ext.depends_on]
        result[ext.name] = parts[0] if len(parts) == 1 else hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]
    return result


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
