"""The numeric class: which arithmetic makes a blueprint's numbers, held the same on every machine of a class.

A value stored at 4 decimals flips whenever the arithmetic beneath it moves near a rounding boundary, and a
sampled temperature of Whisper's fallback amplifies the last bit of a matrix product into another sentence;
so "the same blueprint on every CPU" needs the same arithmetic, not close arithmetic. Every library whose
arithmetic reaches a stored value picks its code paths from the CPU it finds, when it loads. A class fixes
each choice through the variable the library reads (`pin`, before any of them loads), and `check` reads back
what each library actually runs:

| library | what it chooses from the CPU | how a class fixes it | what `check` reads |
|---|---|---|---|
| numpy | its SIMD dispatch (AVX-512 kernels for exp, log, sin ...) | `NPY_DISABLE_CPU_FEATURES` | `__cpu_features__` |
| OpenBLAS (numpy's and scipy's) | its kernels (SkylakeX on AVX-512) | `OPENBLAS_CORETYPE` | threadpoolctl |
| CTranslate2 | its own kernels (softmax, layer norm, GELU) | `CT2_FORCE_CPU_ISA` | the variable |
| oneDNN (CTranslate2's and torch's GEMMs and convolutions) | its JIT kernels | `ONEDNN_MAX_CPU_ISA` | the variable |
| Intel MKL | its branch | `CT2_USE_MKL=0` keeps it out of the recogniser; `MKL_CBWR` for torch's | the variables |
| torch (ATen) | its kernels | `ATEN_CPU_CAPABILITY` | `get_cpu_capability()`, once torch is loaded |
| onnxruntime (MLAS) | its kernels, from CPUID: nothing pins them | see below | the CPU's flags, as MLAS reads them |
| soxr | float engine with or without SSE | `SOXR_USE_SIMD32` | the engine of a resampler |

- ``avx2`` (the default where the CPU has AVX2 and FMA): every library on its AVX2/FMA3 code, AVX-512 CPUs
  included (numpy without its X86_V4 group, OpenBLAS on its Haswell kernels ...), but oneDNN, which is
  capped at AVX: its AVX2 convolution (`brgconv:avx2`, Whisper's two input convolutions) cuts the sum over
  input channels into blocks sized from the CPU's L1 and L2 caches as CPUID reports them (Intel's real
  sizes; on AMD CPUs, which its CPUID reader skips, fixed guesses of 32 KiB and 512 KiB), so two AVX2 CPUs
  with other caches summed in another order. Under the AVX cap it runs the `jit:avx2` convolution in its
  AVX mode, whose blocks are fixed (8 channels; the caches there only cap a thread count), and its AVX
  GEMMs, whose blocking follows the instruction set alone (tests/extractors/test_cpu_caches.py).
  onnxruntime's MLAS runs its AVX-512F kernels on AVX-512 CPUs; of those, the networks here (DNSMOS,
  Silero VAD) reach only the float GEMM, whose AVX-512F kernel accumulates every product in the same order
  as the FMA3 one, once the NCHWc layout (blocks of 16 channels on AVX-512, 8 elsewhere) is off:
  `onnx_session_options` holds onnxruntime's graph optimisation below its layout level. DNSMOS runs on that
  layout by default, its scores then within 1e-4 between CPUs (`dnsmos.layout=reference` holds them too).
- ``generic`` (``TRACE_NUMERIC_CLASS=generic``, and the class named on CPUs without AVX2): every library
  that can be pinned on its baseline x86-64 code. onnxruntime cannot be: on a CPU without AVX2 it runs its
  AVX or SSE2 kernels where the generic golden files hold the FMA3 ones, so such a process is `unpinned`
  and says why.

Both also turn off MKL's and OpenMP's dynamic thread adjustment, so a busy machine cannot change how a product
is cut up; the recogniser runs each window on one thread (extractors/_whisper_ct2.py), so no thread count
enters a sum. A variable already set to another value is left as it is: the process is then ``unpinned``,
and `check` names the variable. The class in force enters the recogniser's fingerprint and every section's
provenance, so blueprints of two classes are never mixed silently; the committed golden blueprints
(tests/goldens/) hold the numbers of each class (docs/reproducibility.md).
"""

from __future__ import annotations

import functools
import os
import platform
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = [
    "CHOOSE",
    "CLASSES",
    "Check",
    "NumericClass",
    "check",
    "ctranslate2_kernels",
    "default_class",
    "kernels",
    "loaded_before_pinning",
    "numeric_class",
    "onnx_session_options",
    "pin",
]

CHOOSE = "TRACE_NUMERIC_CLASS"  # avx2 | generic: which class to pin when the process starts


@dataclass(frozen=True)
class NumericClass:
    """One arithmetic: the variables that choose it, and what each library must then report (`kernels`)."""

    name: str
    environment: Mapping[str, str]
    kernels: Mapping[str, tuple[str, ...]]  # library -> the kernels it may run in this class
    needs: frozenset[str] = field(default_factory=frozenset)  # CPU flags the class needs


# Same results whatever the load: no library may change its thread count while it runs. OpenBLAS on one
# thread: its float32 products (Whisper's log-mel filter bank) round differently on one thread than on two,
# and a scheduler sets its own count (Ray gives an actor OMP_NUM_THREADS of its CPUs).
_THREADS = {"MKL_DYNAMIC": "FALSE", "OMP_DYNAMIC": "FALSE", "OPENBLAS_NUM_THREADS": "1"}
# soxr's float engine (the one HQ resampling uses) with its SSE code, which every x86-64 CPU has.
_SOXR = {"SOXR_USE_SIMD32": "1"}
# numpy >= 2.4 dispatches by groups (X86_V3: AVX2 and FMA3; X86_V4 and later: AVX-512), older numpy by feature.
_NUMPY_AVX512 = {"new": "X86_V4 AVX512_ICL AVX512_SPR", "old": "AVX512F AVX512CD AVX512_KNL AVX512_KNM "
                 "AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL AVX512_SPR"}  # fmt: skip
_NUMPY_AVX2 = {"new": "X86_V3", "old": "AVX F16C FMA3 AVX2"}

CLASSES: dict[str, NumericClass] = {
    "avx2": NumericClass(
        "avx2",
        {
            "NPY_DISABLE_CPU_FEATURES": "{numpy_avx512}",
            "OPENBLAS_CORETYPE": "Haswell",
            "CT2_FORCE_CPU_ISA": "AVX2",
            "CT2_USE_MKL": "0",
            "ONEDNN_MAX_CPU_ISA": "AVX",  # not AVX2: its convolution's blocks follow the caches (above)
            "ATEN_CPU_CAPABILITY": "avx2",
            "MKL_CBWR": "COMPATIBLE,STRICT",
            **_SOXR,
            **_THREADS,
        },
        {
            "numpy": ("X86_V3", "AVX2"),
            "openblas": ("Haswell",),
            "ctranslate2": ("AVX2",),
            "onednn": ("AVX",),
            "torch": ("AVX2",),
            "onnxruntime": ("FMA3", "AVX512F"),
            "soxr": ("cr32s",),
        },
        frozenset({"avx2", "fma"}),
    ),
    "generic": NumericClass(
        "generic",
        {
            "NPY_DISABLE_CPU_FEATURES": "{numpy_avx2} {numpy_avx512}",
            "OPENBLAS_CORETYPE": "Nehalem",
            "CT2_FORCE_CPU_ISA": "GENERIC",
            "CT2_USE_MKL": "0",
            "ONEDNN_MAX_CPU_ISA": "SSE41",
            "ATEN_CPU_CAPABILITY": "default",
            "MKL_CBWR": "COMPATIBLE,STRICT",
            **_SOXR,
            **_THREADS,
        },
        {
            "numpy": ("X86_V2", "SSE42"),
            "openblas": ("Nehalem",),
            "ctranslate2": ("GENERIC",),
            "onednn": ("SSE41",),
            "torch": ("DEFAULT",),
            "onnxruntime": ("FMA3", "AVX512F"),
            "soxr": ("cr32s",),
        },
    ),
}


# ---------------------------------------------------------------------------------------
# The CPU


@functools.cache
def _cpuinfo() -> dict[str, str]:
    fields: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            name, sep, value = line.partition(":")
            if sep and name.strip() not in fields:
                fields[name.strip()] = value.strip()
    except OSError:
        pass
    return fields


def _cpu_flags() -> frozenset[str]:
    return frozenset(_cpuinfo().get("flags", "").split())


def default_class() -> str | None:
    """The class this machine runs unless told otherwise; None off x86-64 (docs/reproducibility.md: ARM)."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return None
    return "avx2" if CLASSES["avx2"].needs <= _cpu_flags() else "generic"


def _chosen() -> str | None:
    return os.environ.get(CHOOSE) or default_class()


def environment(name: str) -> dict[str, str]:
    """The variables of class `name`, as `pin` sets them for the numpy installed here."""
    numpy_style = "new" if _numpy_version() >= (2, 4) else "old"
    names = {"numpy_avx512": _NUMPY_AVX512[numpy_style], "numpy_avx2": _NUMPY_AVX2[numpy_style]}
    return {k: v.format(**names) for k, v in CLASSES[name].environment.items()}


@functools.cache
def _numpy_version() -> tuple[int, ...]:
    try:
        return tuple(int(p) for p in metadata.version("numpy").split(".")[:2])
    except (metadata.PackageNotFoundError, ValueError):
        return (2, 4)


def pin() -> None:
    """Set the chosen class's variables (those not already set); called when `extractors` is imported,
    before numpy, OpenBLAS, CTranslate2, oneDNN, torch or soxr load (each reads them once)."""
    chosen = _chosen()
    if chosen is None:
        return
    if chosen not in CLASSES:
        raise ValueError(f"{CHOOSE}={chosen!r}; expected one of: {', '.join(CLASSES)}")
    missing = CLASSES[chosen].needs - _cpu_flags()
    if missing:
        raise ValueError(f"{CHOOSE}={chosen} on a CPU without {', '.join(sorted(missing))}: set {CHOOSE}=generic")
    for name, value in environment(chosen).items():
        os.environ.setdefault(name, value)


# ---------------------------------------------------------------------------------------
# What each library runs


def _numpy() -> str:
    """The widest SIMD target numpy dispatches to (its baseline when none is enabled)."""
    import importlib

    umath = importlib.import_module("numpy._core._multiarray_umath")
    enabled = [t for t in umath.__cpu_dispatch__ if umath.__cpu_features__.get(t)]
    return enabled[-1] if enabled else umath.__cpu_baseline__[-1]


def _openblas() -> str:
    """The kernels of every OpenBLAS loaded (numpy's and scipy's each have their own), one name if they agree."""
    import numpy  # noqa: F401  (loads numpy's OpenBLAS)
    import scipy.linalg  # noqa: F401  (loads scipy's)
    from threadpoolctl import threadpool_info

    found = sorted({str(lib.get("architecture")) for lib in threadpool_info() if lib.get("internal_api") == "openblas"})
    return "/".join(found) if found else "none"


def _onnxruntime() -> str:
    """MLAS's kernel set, chosen from CPUID as MLAS does (platform.cpp): onnxruntime reports none of it."""
    flags = _cpu_flags()
    if "avx512f" in flags:
        return "AVX512F"
    if {"avx2", "fma"} <= flags:
        return "FMA3"
    return "AVX" if "avx" in flags else "SSE2"


def _soxr() -> str:
    import soxr

    stream = soxr.ResampleStream(44100, 16000, 1, dtype="float32", quality="HQ")
    return str(stream._csoxr.engine())  # the engine libsoxr picked: cr32s is its float one with SSE


def _torch() -> str | None:
    """torch's ATen kernels, when torch is loaded (never imported here: it is a heavy import)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    return str(torch.backends.cpu.get_cpu_capability())


def _onednn() -> str:
    return os.environ.get("ONEDNN_MAX_CPU_ISA") or os.environ.get("DNNL_MAX_CPU_ISA") or "ALL"


def _ctranslate2() -> str:
    """CTranslate2's instruction set: the one forced, else the widest it has kernels for (its cpu/cpu_isa.cc)."""
    forced = os.environ.get("CT2_FORCE_CPU_ISA")
    if forced:
        return forced
    flags = _cpu_flags()
    widest = (("avx512f", "AVX512"), ("avx2", "AVX2"), ("avx", "AVX"))
    return next((isa for flag, isa in widest if flag in flags), "GENERIC")


_READERS = {
    "numpy": _numpy,
    "openblas": _openblas,
    "ctranslate2": _ctranslate2,
    "onednn": _onednn,
    "onnxruntime": _onnxruntime,
    "soxr": _soxr,
}


def kernels() -> dict[str, str]:
    """What each library runs in this process ({library: kernels}); torch only once it is loaded."""
    found = dict(_loaded_kernels())
    torch = _torch()
    if torch is not None:
        found["torch"] = torch
    return found


@functools.cache
def _loaded_kernels() -> tuple[tuple[str, str], ...]:
    """Read once per process: a library's kernels are fixed when it loads."""
    found = []
    for name, read in _READERS.items():
        try:
            value = read()
        except (ImportError, AttributeError):  # not installed; soxr without its engine() (another version)
            value = None
        if value is not None:
            found.append((name, value))
    return tuple(found)


@dataclass(frozen=True)
class Check:
    """The class this process runs, what each library runs, and why the process is unpinned (if it is)."""

    numeric_class: str  # a class name, or "unpinned"
    kernels: dict[str, str]
    reasons: tuple[str, ...] = ()

    def record(self) -> dict[str, Any]:
        """For provenance."""
        record: dict[str, Any] = {"class": self.numeric_class, "kernels": dict(self.kernels)}
        if self.reasons:
            record["unpinned"] = list(self.reasons)
        return record


def check() -> Check:
    """Read what every library runs and compare it with the class chosen when the process started."""
    chosen = _chosen()
    found = kernels()
    if chosen is None:
        return Check("unpinned", found, (f"no numeric class on {platform.machine()} (docs/reproducibility.md)",))
    reasons = [
        f"{name}={os.environ.get(name)!r} where class {chosen} sets {value!r}"
        for name, value in environment(chosen).items()
        if os.environ.get(name) != value
    ]
    wanted = CLASSES[chosen].kernels
    for library, running in found.items():
        if running not in wanted[library]:
            reasons.append(f"{library} runs {running} kernels where class {chosen} runs {' or '.join(wanted[library])}")
    if any(r.startswith("numpy runs") or r.startswith("openblas runs") for r in reasons):
        reasons.append(
            "numpy and OpenBLAS choose their kernels when numpy is imported: import extractors (or trace_eval's "
            "Stage 1) before numpy, or start Python with the class's variables set"
        )
    return Check(chosen if not reasons else "unpinned", found, tuple(reasons))


def loaded_before_pinning() -> bool:
    """Whether this process runs outside its class only because a library loaded before `pin` set the class's
    variables (a script that imports numpy before trace_eval): a new process with this environment runs the
    class, where this one cannot (a library's kernels are fixed when it loads)."""
    chosen = _chosen()
    if chosen is None or numeric_class() != "unpinned":
        return False
    return all(os.environ.get(name) == value for name, value in environment(chosen).items())


@functools.cache
def numeric_class() -> str:
    """The class this process runs: its name when every library is in it, else "unpinned" (`check` says why)."""
    return check().numeric_class


def onnx_session_options(options: Any) -> Any:
    """onnxruntime session options that keep its arithmetic that of the class: graph optimisations below the
    layout level, whose NCHWc convolutions block channels by 16 on AVX-512 CPUs and by 8 elsewhere."""
    import onnxruntime as ort

    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    return options


def ctranslate2_kernels() -> dict[str, Any]:
    """The CPU kernels CTranslate2 runs: its instruction set and the library of its matrix products."""
    use_mkl = os.environ.get("CT2_USE_MKL")
    # CTranslate2 uses MKL on Intel CPUs only unless CT2_USE_MKL says otherwise (its cpu/backend.cc).
    intel = "GenuineIntel" in _cpuinfo().get("vendor_id", "")
    mkl = intel if use_mkl is None else use_mkl.strip().lower() in ("1", "true", "on", "yes")
    found: dict[str, Any] = {"isa": _ctranslate2(), "gemm": "MKL" if mkl else "oneDNN"}
    if mkl:
        found["mkl_cbwr"] = os.environ.get("MKL_CBWR")
    else:
        found["onednn"] = _onednn()
    return found
