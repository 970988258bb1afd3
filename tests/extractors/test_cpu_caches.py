"""The CPU's caches do not reach a blueprint: what moved the recogniser between two AVX2 CPUs, found and held.

oneDNN's AVX2 convolution (`brgconv:avx2`, Whisper's two input convolutions) cuts its sum over input channels
into blocks sized from the L1 data cache that CPUID reports: the real size on Intel CPUs, a fixed 32 KiB on AMD
ones (its CPUID reader skips their cache leaf). An Intel Xeon with 48 KiB of L1 summed in another order than a
Zen 3, and its transcripts moved ("fast dumps over the radio" for "fast-stumps over the radar", the language
probability 0.613 for 0.651). The avx2 class caps oneDNN at AVX, whose convolution's blocks are fixed.

Each test runs Stage 1 on one clip in processes that see other caches: tests/cpu_caches.c, loaded with
LD_PRELOAD, rewrites CPUID's cache leaf through the kernel's CPUID faulting (a CPU flag not every CPU has).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from extractors import numerics

ROOT = Path(__file__).resolve().parents[2]
CLIP = "tests/goldens/audio/fox-330wpm.flac"  # the golden clip whose transcript moved with the L1 size
INTEL_XEON = {"L1": 48 * 1024, "L2": 2048 * 1024}  # family 6, model 207 (and this suite's other Xeons)
ONEDNN_GUESS = {"L1": 32 * 1024, "L2": 512 * 1024}  # what oneDNN assumes where CPUID gives no sizes (AMD)
EXTRACT = """
import json, sys, tempfile
from pathlib import Path
sys.path.insert(0, "tests")
from script_modules import load_script
goldens = load_script("make_goldens")
one = goldens.GoldenSet("one", (sys.argv[1],), only=("asr",))
with tempfile.TemporaryDirectory() as workdir:
    blueprint = goldens.extract(one, Path(workdir))[Path(sys.argv[1]).name]
print(json.dumps(blueprint))
"""


@pytest.fixture(scope="module")
def cache_shim(tmp_path_factory) -> Path:
    if "cpuid_fault" not in numerics._cpu_flags():
        pytest.skip("this CPU (or its hypervisor) has no CPUID faulting: no process here can see other caches")
    if numerics.default_class() != "avx2":
        pytest.skip("the avx2 class needs a CPU with AVX2 and FMA")
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler to build tests/cpu_caches.c")
    library = tmp_path_factory.mktemp("shim") / "libcpu_caches.so"
    source = ROOT / "tests" / "cpu_caches.c"
    subprocess.run([compiler, "-O2", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    return library


def _blueprint(shim: Path, caches: dict[str, int], clip: str = CLIP, **env: str) -> dict:
    """A clip's blueprint (its asr section) in a new process that sees `caches`, with `env` over the suite's."""
    spec = ",".join(f"{level}={size}" for level, size in caches.items())
    proc = subprocess.run(
        [sys.executable, "-c", EXTRACT, clip],
        cwd=ROOT,
        env={**os.environ, "LD_PRELOAD": str(shim), "TEST_CPU_CACHES": spec, **env},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


def _recognised(blueprint: dict) -> tuple:
    return blueprint["agent_response"], blueprint["language"], blueprint["words"], blueprint["transcript_quality"]


def _fingerprint(blueprint: dict) -> str:
    return blueprint["provenance"]["extractors"]["asr"]["fingerprint"]


def test_the_avx2_class_gives_one_blueprint_whatever_caches_the_cpu_reports(cache_shim):
    intel = _blueprint(cache_shim, INTEL_XEON)
    guessed = _blueprint(cache_shim, ONEDNN_GUESS)
    golden = json.loads((ROOT / "tests/goldens/avx2/fallback.json").read_text())["clips"]["fox-330wpm.flac"]
    assert _fingerprint(intel) == _fingerprint(guessed) == _fingerprint(golden)  # both ran the avx2 class
    assert _recognised(intel) == _recognised(guessed) == _recognised(golden)


def _intel_only() -> None:
    if "GenuineIntel" not in numerics._cpuinfo().get("vendor_id", ""):
        pytest.skip("oneDNN reads the cache sizes from CPUID on Intel CPUs only")


OLD_CAP = {"ONEDNN_MAX_CPU_ISA": "AVX2"}  # the avx2 class's cap before the convolution's blocks were found


def test_oneDNN_capped_at_avx2_sums_by_the_l1_size_as_the_xeon_and_zen_3_did(cache_shim):
    """The arithmetic the class held before: the Xeon's values with its caches, Zen 3's with oneDNN's guess."""
    _intel_only()
    xeon = _blueprint(cache_shim, INTEL_XEON, **OLD_CAP)
    zen3 = _blueprint(cache_shim, ONEDNN_GUESS, **OLD_CAP)
    only_l1 = _blueprint(cache_shim, {"L1": ONEDNN_GUESS["L1"]}, **OLD_CAP)
    # As the Xeon's blueprint and the golden files written on Zen 3 held them before the AVX cap.
    assert xeon["agent_response"] == "with run fast dumps over the radio."
    assert zen3["agent_response"] == "with run fast-stumps over the radar."
    assert _recognised(only_l1) == _recognised(zen3)  # the L1 size alone decides


def test_english_speech_stays_english_under_the_arithmetic_that_heard_vietnamese(cache_shim):
    """mini-07_b.wav on the Xeon's old arithmetic: the language token put Vietnamese (0.40 on Whisper's 30 s input)
    and Thai first and English third, and with two candidates decoded the English answer was heard as Vietnamese.
    Read on the window's own frames the token is as unsure (Thai 0.27, Vietnamese 0.22, Khmer 0.22, English 0.21);
    with its first guesses decoded, the English transcript is far the most likely: English whichever arithmetic
    ran."""
    _intel_only()
    clip = "examples/mini/audio/mini-07_b.wav"
    xeon = _blueprint(cache_shim, INTEL_XEON, clip, **OLD_CAP)
    evidence = xeon["language"]["evidence"]
    token = evidence["token"]
    assert max(token, key=token.get) == "th" and round(token["en"], 2) == 0.21, evidence
    assert "en" in evidence["guesses"], evidence
    assert xeon["language"]["code"] == "en" and xeon["language"]["probability"] > 0.7, xeon["language"]
    assert xeon["agent_response"] == _blueprint(cache_shim, ONEDNN_GUESS, clip)["agent_response"]
