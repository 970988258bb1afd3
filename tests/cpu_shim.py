"""tests/cpu_caches.c built, for the tests whose processes see another CPU: other cache sizes, or no AVX-512.

The shim rewrites what CPUID answers through the kernel's CPUID faulting, a CPU flag not every CPU (or
hypervisor) has; a test that needs it is skipped where it cannot work.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from extractors import numerics

SOURCE = Path(__file__).resolve().parent / "cpu_caches.c"


def build_cpu_shim(folder: Path) -> Path:
    """The shim as a shared library in `folder`, for LD_PRELOAD (with TEST_CPU_CACHES or TEST_CPU_NO_AVX512)."""
    if "cpuid_fault" not in numerics._cpu_flags():
        pytest.skip("this CPU (or its hypervisor) has no CPUID faulting: no process here can see another CPU")
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler to build tests/cpu_caches.c")
    library = folder / "libcpu_caches.so"
    subprocess.run([compiler, "-O2", "-shared", "-fPIC", "-o", str(library), str(SOURCE)], check=True)
    return library


def without_avx512(shim: Path) -> dict[str, str]:
    """The environment of a process that sees this CPU without AVX-512 (as an AVX2 CPU such as AMD Zen 3)."""
    if "avx512f" not in numerics._cpu_flags():
        pytest.skip("this CPU has no AVX-512 to hide: the test suite's own process runs without it")
    return {"LD_PRELOAD": str(shim), "TEST_CPU_NO_AVX512": "1"}
