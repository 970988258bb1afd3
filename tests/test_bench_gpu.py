"""scripts/bench_gpu.py and scripts/gpu_carry.py: the clips the GPU benchmark makes without espeak-ng,
the stand-ins that let faster_whisper import without CTranslate2 and PyAV, and (opt-in) a whole CPU run."""

from __future__ import annotations

import hashlib
import json
import re
import types
from pathlib import Path
from typing import Optional

import pytest
import soundfile as sf
import tomllib
from script_modules import load_script

from trace_eval.bench import load_benchmark

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def bench_gpu():
    return load_script("bench_gpu")


def test_clips_are_unique_5_to_20_s_and_a_benchmark_the_pipeline_loads(bench_gpu, tmp_path):
    paths = bench_gpu.make_benchmark(7, tmp_path, seed=3)
    durations = [sf.info(p).duration for p in paths]
    assert all(5.0 <= d <= 20.0 for d in durations)
    assert len({hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}) == 7
    bench = load_benchmark(tmp_path)
    assert len(bench) == 4 and bench.pairs[-1].pointwise  # three pairs and the odd clip alone
    assert sorted(bench.audio_files()) == sorted(f"audio/{p.name}" for p in paths)
    again = bench_gpu.make_benchmark(2, tmp_path / "fewer", seed=3)  # clip i does not depend on the count
    assert again[1].read_bytes() == paths[1].read_bytes()


def test_batch_invariance_names_each_value_that_differs_and_where(bench_gpu):
    whole = {"words": [{"word": "a", "end": 9.96}, {"word": "b", "start": 9.96}], "text": "a b"}
    alone = {"words": [{"word": "a", "end": 9.98}, {"word": "b", "start": 9.98}], "text": "a b"}
    assert list(bench_gpu.differences(whole["words"], alone["words"], "words")) == [
        ("words[0].end", 9.96, 9.98),
        ("words[1].start", 9.96, 9.98),
    ]
    assert list(bench_gpu.differences(whole, whole, "")) == []
    # lists of other lengths differ as a whole: which items were dropped is not guessed
    assert list(bench_gpu.differences([1, 2], [1], "x")) == [("x", [1, 2], [1])]


def test_carried_packages_are_pinned_and_the_stubs_import_but_refuse_use():
    carry = load_script("gpu_carry")
    pins = carry.pins()
    assert set(pins) == set(carry.CARRIED) and all(pins.values())
    assert not set(carry.STUBBED) & set(carry.CARRIED)
    stub = types.ModuleType("ctranslate2")
    exec(carry.STUB, stub.__dict__)
    Optional[stub.StorageView]  # noqa: UP045 (the spelling faster_whisper uses) faster_whisper.transcribe's annotations, evaluated at import
    with pytest.raises(ImportError, match="left out of the GPU carry"):
        stub.models.Whisper("model")
    assert carry.RUN.startswith("mkdir -p /tmp/site && python3 -c") and "export PYTHONPATH=/tmp/site:$PWD" in carry.RUN


def test_every_dependency_is_on_the_gpu_machine_carried_or_not_needed_there():
    """A dependency Stage 1 imports and the GPU machine lacks stops the device run at once (py3langid did): each is
    on the machine, carried, stubbed, or named with the reason the paper profile never imports it there."""
    carry = load_script("gpu_carry")
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    names = {carry.normalized(re.split(r"[<>=!~\[; ]", d)[0]) for d in pyproject["project"]["dependencies"]}
    covered = set(carry.MACHINE) | set(carry.CARRIED) | set(carry.STUBBED) | set(carry.NOT_CARRIED)
    assert not names - covered, f"add to gpu_carry.py's CARRIED, or NOT_CARRIED with why: {sorted(names - covered)}"
    assert not set(carry.NOT_CARRIED) - names, "NOT_CARRIED names a package the project no longer depends on"


@pytest.mark.slow
def test_a_cpu_run_with_tiny_models_times_every_extractor_and_stage1(bench_gpu, tmp_path):
    from tiny_models import build_tiny_whisper
    from tiny_neural_models import build_tiny_ecapa, build_tiny_emotion2vec

    models = tmp_path / "models"
    build_tiny_whisper(models / "whisper-large-v3")
    build_tiny_emotion2vec(models / "emotion2vec_plus_large")
    build_tiny_ecapa(models / "accent-commonaccent-ecapa")
    out = tmp_path / "report.json"
    assert (
        bench_gpu.main(
            [
                "--device",
                "cpu",
                "--clips",
                "2",
                "--models",
                str(models),
                "--no-build",
                "--workers",
                "1",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    report = json.loads(out.read_text())
    assert {t["name"]: t["status"] for t in report["extractors"]} == dict.fromkeys(
        ["accent", "asr", "dnsmos", "emotion", "loudness", "pitch", "rate", "voicing"], "ok"
    )
    assert report["stage1"]["computed"] == 2 and report["stage1"]["failed"] == 0
    transcripts = report["stage1"]["transcripts"]  # read from the blueprints: the tiny Whisper is random, unplanted
    assert transcripts["clips"] == 2 and transcripts["windows_decoded"] == 2 and transcripts["planted_sentence"] == 0
    assert report["stage1"]["whisper"]["generate_calls"] >= 1  # the probe saw the tool's own decoding
    assert report["settings"]["overrides"] == {}
    assert report["weights"]["kind"] == "stand-ins (random weights)"
