"""The ray engine on a local Ray (2 CPUs, 2 logical GPUs): same blueprints as the local engine,
worker faults, an interrupted driver, actor placement on GPUs."""
from __future__ import annotations

import json
import os
import shutil
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

ray = pytest.importorskip("ray", reason="the ray engine needs: pip install 'trace-eval[ray]'")

from extractors import REGISTRY, Extractor, Section, register  # noqa: E402
from extractors.base import Pool  # noqa: E402
from trace_eval.pipeline import BlueprintOptions, run_blueprints  # noqa: E402
from trace_eval.stage1 import ray_engine  # noqa: E402
from trace_eval.stage1.record import Recorder  # noqa: E402
from trace_eval.store import BlueprintStore  # noqa: E402
from trace_eval.synth import Voice, speak  # noqa: E402

# The extractors below run in Ray workers, which cannot import this test module: ship them by value.
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])

SR = 16000


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    ray_engine.start_local(num_cpus=2, num_gpus=2)  # logical GPUs: placement is tested, nothing runs on them
    yield
    ray.shutdown()


def tone_bench(root: Path, count: int) -> Path:
    audio = root / "audio"
    audio.mkdir(parents=True)
    for i in range(count):
        t = np.arange(int((0.4 + 0.1 * i) * SR)) / SR
        sf.write(audio / f"c{i}.wav", 0.2 * np.sin(2 * np.pi * (150 + 25 * i) * t), SR)
    names = [f"audio/c{i}.wav" for i in range(count)]
    items = [{"index": f"p{i}", "instruction_path": names[i], "audio1_path": names[(i + 1) % count],
              "audio2_path": names[(i + 2) % count]} for i in range(count)]
    (root / "manifest.json").write_text(json.dumps(items))
    return root


class Marked(Extractor):
    """A batched "model": the process id and GPU ids of the actor that ran it; it can kill its
    own process once, on its first batch, as a crashing worker would."""

    name = "test_marked"
    version = "1"
    batched = True
    uses_gpu = True
    outputs = ("test.marked",)
    pool = Pool(actors=2, num_gpus=1.0, num_cpus=0.5, batch_clips=1)

    @dataclass
    class Config:
        folder: str = ""  # where actors leave their marks
        kill_once: bool = False

    def load(self):
        folder = Path(self.config.folder)
        (folder / f"actor-{os.getpid()}.json").write_text(json.dumps(ray.get_gpu_ids()))

    def extract(self, clips):
        flag = Path(self.config.folder) / "killed"
        if self.config.kill_once and not flag.exists():
            flag.write_text("")
            os.kill(os.getpid(), signal.SIGKILL)
        return [Section({"test": {"marked": [os.getpid(), float(np.abs(c.samples(SR)).max())]}}) for c in clips]


@pytest.fixture
def marked():
    register(Marked)
    yield
    REGISTRY.pop(Marked.name, None)


def options(**kw) -> BlueprintOptions:
    return BlueprintOptions(engine="ray", progress=False, **kw)


def comparable(blueprint: dict) -> dict:
    """A blueprint less what may differ between engines: timings and the engine's name."""
    for entry in blueprint["provenance"]["extractors"].values():
        entry.pop("seconds"), entry.pop("engine")
    return blueprint


def test_ray_gives_the_blueprints_of_the_local_engine_and_a_second_run_computes_nothing(tmp_path):
    voices = [Voice(wpm=150), Voice(wpm=190, voice="en-gb", pitch=70), Voice(wpm=170, voice="en-us+f3", noise_db=-30)]
    texts = ["The train leaves at half past seven.", "Please bring the signed forms tomorrow.",
             "Water ice was found near the lunar pole."]
    for i, (text, voice) in enumerate(zip(texts, voices)):
        speak(text, tmp_path / "local" / "audio" / f"s{i}.wav", voice)
    items = [{"index": "p0", "instruction_path": "audio/s0.wav", "audio1_path": "audio/s1.wav",
              "audio2_path": "audio/s2.wav"}]
    (tmp_path / "local" / "manifest.json").write_text(json.dumps(items))
    shutil.copytree(tmp_path / "local", tmp_path / "ray")
    common = dict(device="cpu", profile="cpu")  # every extractor; emotion and accent have no weights offline
    local = run_blueprints(tmp_path / "local", BlueprintOptions(progress=False, **common))
    first = run_blueprints(tmp_path / "ray", options(**common))
    assert first.ok and first.computed == 3 and first.engine == "ray"
    assert first.sections == local.sections and set(first.unavailable) == set(local.unavailable) == {"emotion", "accent"}
    for i in range(3):
        a = BlueprintStore(tmp_path / "local").get_by_path(f"audio/s{i}.wav")
        b = BlueprintStore(tmp_path / "ray").get_by_path(f"audio/s{i}.wav")
        assert {e["engine"] for e in b["provenance"]["extractors"].values()} == {"ray"}
        assert comparable(a) == comparable(b)
        assert b["agent_response"] and b["agent_audio_quality"] and b["agent_audio_properties"]["Speech_Rate_WPM"]

    again = run_blueprints(tmp_path / "ray", options(**common))
    assert again.computed == 0 and again.cached == 3 and not again.unavailable
    assert set(again.kept_unavailable) == {"emotion", "accent"}  # not probed again


def test_a_killed_actor_loses_and_duplicates_no_clip(tmp_path, marked, monkeypatch):
    root = tone_bench(tmp_path / "bench", 6)
    written: list[str] = []
    write = Recorder.write
    monkeypatch.setattr(Recorder, "write", lambda self, job, bp: (written.append(job.sha), write(self, job, bp)))
    settings = {"test_marked": {"folder": str(tmp_path), "kill_once": "true"}}
    summary = run_blueprints(root, options(only=["test_marked", "loudness"], device="cpu", settings=settings))
    assert (tmp_path / "killed").exists()  # a worker did die mid-run
    assert summary.ok and summary.computed == 6 and summary.sections["test_marked"] == {"ok": 6}
    assert sorted(written) == sorted(set(written)) and len(written) == 6
    store = BlueprintStore(root)
    for i in range(6):
        blueprint = store.get_by_path(f"audio/c{i}.wav")
        assert blueprint["test"]["marked"][1] == pytest.approx(0.2, abs=1e-3)


def test_an_interrupted_driver_resumes_from_what_it_wrote(tmp_path, monkeypatch):
    root = tone_bench(tmp_path, 7)
    write = Recorder.write

    def write_three(self, job, bp):
        if self.computed == 3:
            raise KeyboardInterrupt
        write(self, job, bp)

    monkeypatch.setattr(Recorder, "write", write_three)
    with pytest.raises(KeyboardInterrupt):
        run_blueprints(root, options(only=["pitch", "loudness"], device="cpu"))
    monkeypatch.setattr(Recorder, "write", write)
    summary = run_blueprints(root, options(only=["pitch", "loudness"], device="cpu"))
    assert summary.cached == 3 and summary.computed == 4 and summary.ok


def test_logical_gpus_get_one_model_actor_each(tmp_path, marked):
    root = tone_bench(tmp_path / "bench", 4)
    settings = {"test_marked": {"folder": str(tmp_path)}}
    summary = run_blueprints(root, options(only=["test_marked"], device="cuda", settings=settings))
    assert summary.ok and summary.device == "cuda"
    gpus = sorted(json.loads(p.read_text()) for p in tmp_path.glob("actor-*.json"))
    assert gpus == [[0], [1]]  # two actors, as declared, each holding one whole GPU


def test_cuda_on_a_cluster_without_gpus_is_refused_and_an_unknown_engine_named(tmp_path, monkeypatch):
    root = tone_bench(tmp_path, 1)
    monkeypatch.setattr(ray, "cluster_resources", lambda: {"CPU": 2.0})
    with pytest.raises(ValueError, match="the Ray cluster has no GPU"):
        run_blueprints(root, options(device="cuda"))
    with pytest.raises(ValueError, match="expected one of: local, ray"):
        run_blueprints(root, BlueprintOptions(engine="spark"))


def test_a_model_that_cannot_load_takes_its_dependants_along_as_locally(tmp_path):
    root = tone_bench(tmp_path / "local", 3)
    shutil.copytree(root, tmp_path / "ray")
    common = dict(only=["rate"], device="cpu", profile="cpu", settings={"asr": {"model_path": str(tmp_path / "none")}})
    local = run_blueprints(tmp_path / "local", BlueprintOptions(progress=False, **common))
    remote = run_blueprints(tmp_path / "ray", options(**common))
    assert remote.sections == local.sections == {"asr": {"unavailable": 3}, "rate": {"unavailable": 3}}
    assert remote.unavailable == local.unavailable
    for i in range(3):
        a = BlueprintStore(tmp_path / "local").get_by_path(f"audio/c{i}.wav")
        b = BlueprintStore(tmp_path / "ray").get_by_path(f"audio/c{i}.wav")
        assert comparable(a) == comparable(b)
