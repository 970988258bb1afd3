"""The numeric class: which arithmetic makes the recogniser's numbers, held the same on every machine of a class.

A sampled temperature of Whisper's fallback amplifies the last bit of a matrix product, and a value stored at
4 decimals flips whenever the arithmetic beneath it moves near a rounding boundary; so "the same blueprint on
every CPU" needs the same arithmetic, not close arithmetic. CTranslate2 and its Intel MKL choose their code
paths from the CPU they find (and MKL only on Intel CPUs: oneDNN elsewhere), so those choices are fixed here,
through the variables the libraries read when they load:

- ``avx2`` (the default where the CPU has AVX2 and FMA): CTranslate2's AVX2 kernels (their own vector code
  for exp, no libm), Intel MKL for every float32 matrix product whatever the vendor (``CT2_USE_MKL=1``), on
  MKL's SSE2 branch in strict reproducible mode (``MKL_CBWR=COMPATIBLE,STRICT``: the same products on every
  x86-64 CPU and for any number of threads). MKL's faster AVX2 branch is not used: on other vendors' CPUs
  MKL refuses it and runs its own dispatch (``MKL_VERBOSE`` reports ``CNR:AUTO,STRICT`` on AMD), so Intel and
  AMD machines would compute different products;
- ``generic`` (CPUs without AVX2, or ``TRACE_NUMERIC_CLASS=generic``): CTranslate2's generic C++ kernels
  (libm's exp) and the same MKL branch; every x86-64 CPU runs it.

Both also turn off MKL's and OpenMP's dynamic thread adjustment, so a busy machine cannot change how a product
is cut up. The class in force is recorded in the recogniser's provenance and enters its fingerprint, so
sections of two classes are never mixed silently; the committed golden blueprints (tests/goldens/) hold the
numbers of each class. Whoever sets one of the kernel variables (``CT2_FORCE_CPU_ISA``, ``CT2_USE_MKL``,
``MKL_CBWR``) chooses all three: none is then set here. Arithmetic that names no class is ``unpinned``
(recorded as such, never compared with the goldens).
"""

from __future__ import annotations

import functools
import os
import platform
from pathlib import Path

__all__ = ["CLASSES", "CHOOSE", "ctranslate2_kernels", "default_class", "numeric_class", "pin"]

CHOOSE = "TRACE_NUMERIC_CLASS"  # avx2 | generic: which class to pin when the process starts
# Same results whatever the load: no library may change its thread count while it runs.
_THREADS = {"MKL_DYNAMIC": "FALSE", "OMP_DYNAMIC": "FALSE"}
_KERNELS = ("CT2_FORCE_CPU_ISA", "CT2_USE_MKL", "MKL_CBWR")
CLASSES: dict[str, dict[str, str]] = {
    "avx2": {"CT2_FORCE_CPU_ISA": "AVX2", "CT2_USE_MKL": "1", "MKL_CBWR": "COMPATIBLE,STRICT", **_THREADS},
    "generic": {"CT2_FORCE_CPU_ISA": "GENERIC", "CT2_USE_MKL": "1", "MKL_CBWR": "COMPATIBLE,STRICT", **_THREADS},
}


@functools.cache
def _cpu_flags() -> frozenset[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return frozenset(line.partition(":")[2].split())
    except OSError:
        pass
    return frozenset()


@functools.cache
def _cpuinfo_field(name: str) -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(name):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return ""


def default_class() -> str | None:
    """The class this machine runs unless told otherwise; None off x86-64 (nothing to pin there)."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return None
    return "avx2" if {"avx2", "fma"} <= _cpu_flags() else "generic"


def pin() -> None:
    """Set the chosen class's variables (those not already set); called when `extractors` is imported,
    before CTranslate2, MKL or OpenMP load."""
    chosen = os.environ.get(CHOOSE) or default_class()
    if chosen is None:
        return
    if chosen not in CLASSES:
        raise ValueError(f"{CHOOSE}={chosen!r}; expected one of: {', '.join(CLASSES)}")
    if chosen == "avx2" and not {"avx2", "fma"} <= _cpu_flags():
        raise ValueError(f"{CHOOSE}=avx2 on a CPU without AVX2 and FMA: set {CHOOSE}=generic")
    chosen_by_hand = any(os.environ.get(name) is not None for name in _KERNELS)
    for name, value in CLASSES[chosen].items():
        if name not in _KERNELS or not chosen_by_hand:  # one kernel variable set by hand: the user chose them all
            os.environ.setdefault(name, value)


def numeric_class() -> str:
    """The class whose variables are all in force in this process, else "unpinned"."""
    for name, variables in CLASSES.items():
        if all(os.environ.get(k) == v for k, v in variables.items()):
            return name
    return "unpinned"


def ctranslate2_kernels() -> dict:
    """The CPU kernels CTranslate2 runs: its instruction set, and the library its float32 matrix products use."""
    from extractors.base import cpu_isa

    forced = os.environ.get("CT2_FORCE_CPU_ISA")
    use_mkl = os.environ.get("CT2_USE_MKL")
    # CTranslate2 uses MKL on Intel CPUs only unless CT2_USE_MKL says otherwise (its cpu/backend.cc).
    intel = "GenuineIntel" in _cpuinfo_field("vendor_id")
    mkl = intel if use_mkl is None else use_mkl.strip().lower() in ("1", "true", "on", "yes")
    best = cpu_isa() if cpu_isa() in ("AVX512", "AVX2", "AVX") else "GENERIC"
    kernels: dict[str, str | None] = {"isa": forced or best, "gemm": "MKL" if mkl else "oneDNN"}
    if mkl:
        kernels["mkl_cbwr"] = os.environ.get("MKL_CBWR")
    kernels["class"] = numeric_class()
    return kernels
