"""The extractor contract and registry.

An extractor is one module in this package holding one class decorated with
`@register`. It declares what it is (name, version), what it needs (sample rate,
other extractors it depends on, GPU or not), which blueprint keys it owns
(`outputs`, dotted paths), and a config dataclass whose fields change its output.

Per-clip extractors (`batched = False`) implement `extract_one` and run in CPU
worker processes; batched extractors (models) implement `extract` over a list of
clips and run in the main process, on the GPU when there is one. On the ray
engine a batched extractor runs as a pool of actors sized by its `pool`.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, ClassVar

import numpy as np

__all__ = [
    "Clip",
    "ClipError",
    "Extractor",
    "ExtractorUnavailable",
    "ModelInfo",
    "POOL_SETTINGS",
    "Pool",
    "REGISTRY",
    "Section",
    "cpu_isa",
    "library_versions",
    "register",
]


class ExtractorUnavailable(Exception):
    """The extractor cannot run on this machine (weights or a package missing).

    The message must name the exact setting or command that would fix it, e.g.
    "set TRACE_MODELS_DIR to a folder holding emotion2vec_plus_large, or pass
    --set emotion.model_path=DIR".
    """


class ClipError(Exception):
    """This extractor cannot process this one clip; the reason is recorded and the run goes on."""


@dataclass(frozen=True)
class ModelInfo:
    """Which weights an extractor runs with, as recorded in provenance."""

    id: str | None = None
    revision: str | None = None
    source: str | None = None  # where the weights were resolved from (path), not part of the fingerprint
    # Why the weights are not the published ones (trace_eval/stage1/standins.py), else None. Part of the
    # fingerprint: blueprints made with stand-ins are recomputed once the real weights are there.
    standin: str | None = None


@dataclass(frozen=True)
class Pool:
    """How the ray engine runs a batched extractor: an actor pool, each actor loading the model once.

    Every field can be set per run with --set NAME.FIELD=VALUE (e.g. asr.actors=8); none
    changes values, so none enters the fingerprint.
    """

    actors: int = 1  # actors in the pool
    num_gpus: float = 0.25  # share of one GPU per actor when the run uses GPUs; 0.25 lets four models share one
    num_cpus: float = 1.0  # CPUs reserved per actor (capped so that decoding always keeps half the CPUs)
    batch_clips: int = 16  # clips per call of `extract` (the extractor batches by seconds within it)


POOL_SETTINGS = frozenset(f.name for f in dataclasses.fields(Pool))


@dataclass
class Section:
    """One extractor's result for one clip.

    values: a nested fragment merged into the blueprint, e.g.
        {"agent_audio_properties": {"Mean_Pitch_Hz": 182.3, ...}}
    null_reasons: dotted key -> why that value is null, e.g.
        {"agent_audio_properties.Mean_Pitch_Hz": "no voiced frames"}
    """

    values: dict[str, Any]
    null_reasons: dict[str, str] = field(default_factory=dict)
    numerics: dict[str, Any] = field(default_factory=dict)  # Extractor.numerics() where it ran (set by the engine)


@dataclass
class Clip:
    """One unique audio file as an extractor sees it."""

    sha256: str
    audio: Any  # trace_eval.audio.Audio, or None for extractors with sample_rate None
    blueprint: dict[str, Any] = field(default_factory=dict)  # values of the extractors it depends on
    language: str | None = (
        None  # the language the manifest declares for this clip (trace_eval/languages.py); None: detect
    )
    # The languages its items' contexts expect it in (an answer to a Spanish instruction: es), tested where its
    # language is detected (trace_eval/language_rule.py)
    expects: tuple[str, ...] = ()

    @property
    def duration_s(self) -> float:
        if self.audio is not None:
            return self.audio.duration_s
        return float(self.blueprint.get("duration_s") or 0.0)

    def samples(self, rate: int) -> np.ndarray:
        """Mono float32 samples at `rate` Hz (resampled once and cached)."""
        return self.audio.at(rate)


@dataclass
class NoConfig:
    pass


class Extractor:
    """Base class; subclasses set the ClassVars and implement extract_one or extract."""

    name: ClassVar[str]
    version: ClassVar[str]
    description: ClassVar[str] = ""
    sample_rate: ClassVar[int | None] = 16000  # None: needs no audio, only its dependencies' values
    depends_on: ClassVar[tuple[str, ...]] = ()
    uses_gpu: ClassVar[bool] = False
    batched: ClassVar[bool] = False
    outputs: ClassVar[tuple[str, ...]] = ()  # dotted blueprint keys this extractor owns
    Config: ClassVar[type] = NoConfig
    pool: ClassVar[Pool] = Pool()  # actor pool on the ray engine (batched extractors)
    libraries: ClassVar[tuple[str, ...]] = ("numpy",)  # the packages whose arithmetic makes the values
    # Whether a language the manifest declares for a clip (Clip.language) changes this extractor's values: the
    # clip's section is then fingerprinted with it, so that the same audio declared otherwise is made again.
    reads_declared_language: ClassVar[bool] = False
    # Whether the languages a clip's context expects (Clip.expects) change this extractor's values, likewise.
    reads_expected_languages: ClassVar[bool] = False

    def __init__(self, config: Any = None, device: str = "cpu"):
        self.config = config if config is not None else self.Config()
        self.device = device if self.uses_gpu else "cpu"

    # -- identity -----------------------------------------------------------------
    def model(self) -> ModelInfo:
        """The weights this extractor runs with (id and revision enter the fingerprint)."""
        return ModelInfo()

    def fingerprint(self, declared_language: str | None = None, expects: tuple[str, ...] = ()) -> str:
        """Hash over everything that changes this extractor's output (not where weights live), for a clip whose
        manifest declares `declared_language` (None: nothing declared) and whose context expects `expects`."""
        model = self.model()
        config = {k: v for k, v in dataclasses.asdict(self.config).items() if k not in _NON_OUTPUT_CONFIG_FIELDS}
        payload = {
            "name": self.name,
            "version": self.version,
            "config": config,
            "model": [model.id, model.revision] + (["standin"] if model.standin else []),
        }
        if declared_language and self.reads_declared_language:
            payload["declared_language"] = declared_language
        elif expects and self.reads_expected_languages:
            payload["expects"] = list(expects)
        return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def numerics(self) -> dict[str, Any]:
        """The numeric set-up that produced this extractor's values (recorded in provenance, never in
        the fingerprint): enough to explain why two machines stored different numbers. The numeric class
        and the kernels every numeric library runs are those of the process (extractors/numerics.py)."""
        from extractors.numerics import check

        record = check().record()
        # torch only where it computes: elsewhere the record would depend on what else the process imported
        if "torch" not in self.libraries:
            record["kernels"].pop("torch", None)
        return {"cpu": cpu_isa(), "libraries": library_versions(self.libraries), **record}

    # -- work ---------------------------------------------------------------------
    def load(self) -> None:
        """Load weights once per run. Raise ExtractorUnavailable with the fixing setting."""

    def extract_one(self, clip: Clip) -> Section | dict:
        raise NotImplementedError

    def extract(self, clips: list[Clip]) -> list[Section | ClipError]:
        """Results in the order of `clips`; a clip that fails gives a ClipError in its place."""
        results: list[Section | ClipError] = []
        for clip in clips:
            try:
                out = self.extract_one(clip)
                results.append(out if isinstance(out, Section) else Section(out))
            except ClipError as e:
                results.append(e)
        return results


# Settings that change speed or memory but never values: left out of fingerprints.
_NON_OUTPUT_CONFIG_FIELDS = frozenset({"model_path", "batch_seconds", "num_threads", "one_model_at_a_time"})

REGISTRY: dict[str, type[Extractor]] = {}


@functools.cache
def cpu_isa() -> str:
    """The widest x86 vector instruction set this CPU has (AVX512, AVX2, AVX, SSE4.2), else the machine."""
    import platform

    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    except OSError:
        flags = []
    for flag, name in (("avx512f", "AVX512"), ("avx2", "AVX2"), ("avx", "AVX"), ("sse4_2", "SSE4.2")):
        if flag in flags:
            return name
    return platform.machine() or "unknown"


def library_versions(packages: tuple[str, ...]) -> dict[str, str | None]:
    return dict(_versions(tuple(packages)))


@functools.cache
def _versions(packages: tuple[str, ...]) -> tuple[tuple[str, str | None], ...]:
    """Looked up once per process: every section of every clip records them."""
    found: list[tuple[str, str | None]] = []
    for package in packages:
        try:
            found.append((package, metadata.version(package)))
        except metadata.PackageNotFoundError:
            found.append((package, None))
    return tuple(found)


def register(cls: type[Extractor]) -> type[Extractor]:
    """Class decorator: make an extractor available by its name."""
    if not getattr(cls, "name", None) or not getattr(cls, "version", None):
        raise TypeError(f"{cls.__name__} must declare name and version")
    if cls.name in REGISTRY and REGISTRY[cls.name] is not cls:
        raise ValueError(f"two extractors named {cls.name!r}: {REGISTRY[cls.name].__module__} and {cls.__module__}")
    REGISTRY[cls.name] = cls
    return cls
