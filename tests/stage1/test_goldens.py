"""A fresh extraction gives the committed golden blueprints, on whatever machine runs the suite: every value exactly,
DNSMOS's scores within 1e-4 (onnxruntime's NCHWc layout sums its convolutions by the CPU's blocks).

tests/goldens/<class>/*.json hold the example's blueprints and those of clips that make Whisper fall back to
sampling, at stored precision (scripts/make_goldens.py writes and documents them). The class this process
runs (extractors/numerics.py: avx2 on a CPU with AVX2, else generic; the suite pins it before numpy loads, in
tests/conftest.py) is compared in process, with every library on the class's kernels, AVX-512 CPUs included;
the generic class, which every x86-64 CPU with AVX2 can also run, is compared in a subprocess on the clips that
fall back, so both classes are checked on every such machine. On a CPU with AVX-512 the avx2 class is also
compared in a process that sees no AVX-512 (as an AVX2 CPU, whose NCHWc blocks are 8 channels, not 16). A failure
names the clip, section, field and both values; a process outside its class fails with the reason.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cpu_shim import build_cpu_shim, without_avx512
from script_modules import load_script

from extractors.numerics import CHOOSE, check, default_class, environment, numeric_class

goldens = load_script("make_goldens")
ROOT = Path(__file__).resolve().parents[2]
SETS = {s.name: s for s in goldens.golden_sets()}


def _report(found: list[str]) -> str:
    shown = "\n  ".join(found[:40])
    more = f"\n  ... and {len(found) - 40} more" if len(found) > 40 else ""
    return f"{len(found)} values differ from the golden files:\n  {shown}{more}"


@pytest.mark.parametrize("name", list(SETS))
def test_a_fresh_extraction_gives_the_golden_blueprints(name, tmp_path):
    numerics = numeric_class()
    if default_class() is None:
        pytest.skip("no numeric class on this machine (docs/reproducibility.md); golden files hold pinned ones")
    assert numerics != "unpinned", "this process runs outside its numeric class: " + "; ".join(check().reasons)
    golden = goldens.read_golden(SETS[name], numerics)
    missing = f"no golden file {goldens.golden_path(SETS[name], numerics)}"
    if golden is None and numerics != "avx2":  # the default class must have every set; generic holds the fallback
        pytest.skip(missing)
    assert golden is not None, missing
    found = goldens.differences(golden, goldens.extract(SETS[name], tmp_path))
    assert not found, _report(found)


def test_the_generic_class_gives_its_golden_blueprints_on_this_machine():
    if numeric_class() == "generic":
        pytest.skip("the generic class is the one compared in process")
    env = {k: v for k, v in os.environ.items() if k not in environment("generic")}
    env[CHOOSE] = "generic"
    proc = subprocess.run(
        [sys.executable, "scripts/make_goldens.py", "--check", "--sets", "fallback,loop-whole"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert "fallback (generic): identical" in proc.stdout and "loop-whole (generic): identical" in proc.stdout


def test_without_avx512_dnsmos_agrees_within_its_tolerance_and_every_other_value_exactly(tmp_path):
    """The golden files written where MLAS sums DNSMOS's convolutions by 16 channels hold on a CPU that sums by 8:
    shown on this one, in a process whose CPUID hides AVX-512 (tests/cpu_caches.c)."""
    if numeric_class() != "avx2":
        pytest.skip("the golden files of a CPU without AVX-512 are the avx2 class's")
    env = {**os.environ, **without_avx512(build_cpu_shim(tmp_path))}
    proc = subprocess.run(
        [sys.executable, "scripts/make_goldens.py", "--check", "--sets", "example,fallback"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    for name in ("example", "fallback"):
        assert f"{name} (avx2): identical" in proc.stdout, proc.stdout[-6000:]


def test_dnsmos_scores_agree_within_its_tolerance_and_every_other_value_exactly():
    golden = {"a.wav": {"agent_response": "hi", "agent_audio_quality": {"P808_Overall_Quality": 3.1235}}}
    fresh = {"a.wav": {"agent_response": "hi", "agent_audio_quality": {"P808_Overall_Quality": 3.1234}}}
    assert goldens.differences(golden, fresh) == []
    assert goldens.tolerated(golden, fresh) == [
        "a.wav: section dnsmos, field agent_audio_quality.P808_Overall_Quality: golden 3.1235, fresh 3.1234"
    ]
    fresh["a.wav"]["agent_audio_quality"]["P808_Overall_Quality"] = 3.1233
    assert len(goldens.differences(golden, fresh)) == 1 and goldens.tolerated(golden, fresh) == []
    fresh["a.wav"].update(agent_response="hi.", agent_audio_quality=golden["a.wav"]["agent_audio_quality"])
    assert goldens.differences(golden, fresh) == ["a.wav: section asr, field agent_response: golden 'hi', fresh 'hi.'"]


def test_a_difference_names_the_clip_section_field_and_both_values():
    golden = {"a.wav": {"agent_response": "hello", "words": [{"word": "hello", "probability": 0.2763}]}}
    fresh = {"a.wav": {"agent_response": "hello", "words": [{"word": "hello", "probability": 0.2764}]}}
    assert goldens.differences(golden, fresh) == [
        "a.wav: section asr, field words[0].probability: golden 0.2763, fresh 0.2764"
    ]
    fresh["a.wav"]["agent_audio_quality"] = {"P808_Overall_Quality": 3.0}
    assert goldens.differences(golden, {"b.wav": {}}) == [
        "a.wav: missing from the fresh run",
        "b.wav: not in the golden file",
    ]
    assert "section dnsmos, field agent_audio_quality: golden '<absent>'" in goldens.differences(golden, fresh)[1]


def test_the_class_in_force_enters_the_recogniser_fingerprint_and_provenance():
    from extractors.asr import AsrConfig, AsrExtractor

    asr = AsrExtractor()
    assert asr.config.numeric_class == numeric_class()
    assert asr.numerics()["class"] == numeric_class()
    other = "generic" if numeric_class() != "generic" else "avx2"
    with pytest.raises(ValueError, match=f"{CHOOSE}={other}"):
        AsrExtractor(AsrConfig(numeric_class=other))
    assert AsrExtractor(AsrConfig(numeric_class=numeric_class())).fingerprint() == asr.fingerprint()
    elsewhere = AsrExtractor()
    elsewhere.config = dataclasses.replace(elsewhere.config, numeric_class=other)  # as a machine of the other class
    assert elsewhere.fingerprint() != asr.fingerprint()
