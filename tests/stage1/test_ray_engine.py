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
from trace_eval.stage1 import ray_engine  # noqa: E402
from trace_eval.stage1.pipeline import BlueprintOptions, run_blueprints  # noqa: E402
from trace_eval.stage1.record import Recorder  # noqa: E402
from trace_eval.stage1.store import BlueprintStore  # noqa: E402
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
    items = [
        {
            "index": f"p{i}",
            "instruction_path": names[i],
            "audio1_path": names[(i + 1) % count],
            "audio2_path": names[(i + 2) % count],
        }
        for i in range(count)
    ]
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
    texts = [
        "The train leaves at half past seven.",
        "Please bring the signed forms tomorrow.",
        "Water ice was found near the lunar pole.",
    ]
    for i, (text, voice) in enumerate(zip(texts, voices)):
        speak(text, tmp_path / "local" / "audio" / f"s{i}.wav", voice)
    items = [
        {
            "index": "p0",
            "instruction_path": "audio/s0.wav",
            "audio1_path": "audio/s1.wav",
            "audio2_path": "audio/s2.wav",
        }
    ]
    (tmp_path / "local" / "manifest.json").write_text(json.dumps(items))
    shutil.copytree(tmp_path / "local", tmp_path / "ray")
    # every extractor (emotion and accent have no weights offline); each folder keeps its own blueprints, so
    # both engines compute them
    common = dict(device="cpu", profile="cpu", store="bench")
    local = run_blueprints(tmp_path / "local", BlueprintOptions(progress=False, **common))
    first = run_blueprints(tmp_path / "ray", options(**common))
    assert first.ok and first.computed == 3 and first.engine == "ray"
    assert first.sections == local.sections and set(first.unavailable) == set(local.unavailable) == {
        "emotion",
        "accent",
    }
    for i in range(3):
        a = BlueprintStore(tmp_path / "local").get_by_path(f"audio/s{i}.wav")
        b = BlueprintStore(tmp_path / "ray").get_by_path(f"audio/s{i}.wav")
        assert {e["engine"] for e in b["provenance"]["extractors"].values()} == {"ray"}
        assert comparable(a) == comparable(b)
        assert b["agent_response"] and b["agent_audio_quality"] and b["agent_audio_properties"]["Speech_Rate_WPM"]
        assert b["agent_prosody"]["words"]  # needs the audio and asr's words: an actor stage after asr's

    again = run_blueprints(tmp_path / "ray", options(**common))
    assert again.computed == 0 and again.cached == 3 and not again.unavailable
    assert set(again.kept_unavailable) == {"emotion", "accent"}  # not probed again


# Speech that exercises every path of Stage 1: plain, fast, noisy, high and low voices, clips that make the
# recogniser fall back to sampling (330 wpm, whispered), and recorded human speech (LibriVox at 16 kHz,
# Asterisk prompts at 8 kHz).
SAME_AUDIO = [
    ("The train leaves at half past seven.", Voice(wpm=150)),
    ("Please bring the signed forms tomorrow.", Voice(wpm=190, voice="en-gb", pitch=70)),
    ("Water ice was found near the lunar pole.", Voice(wpm=170, voice="en-us+f3", noise_db=-30)),
    ("The quick brown fox jumps over the lazy dog.", Voice(wpm=330)),
    ("The quick brown fox jumps over the lazy dog.", Voice(wpm=200, voice="en+whisper")),
    ("Everyone please gather at the front entrance.", Voice(wpm=260, noise_db=-12)),
    ("We are going to the beach on Sunday morning.", Voice(pitch=85, voice="en-us+f3", noise_db=-15)),
    ("The thunder rolled across the distant hills.", Voice(wpm=90, pitch=15, voice="en-gb")),
    ("Call me when you arrive at the station.", Voice(wpm=120, voice="en-gb-scotland", gain_db=-20)),
    ("My favourite colour is green.", Voice(wpm=160, voice="en-us+f2", pad_s=1.0)),
]
RECORDED = [
    Path("/usr/share/pocketsphinx/test/data/librivox/sense_and_sensibility_01_austen_64kb-0880.wav"),
    Path("/usr/share/pocketsphinx/test/data/librivox/sense_and_sensibility_01_austen_64kb-0920.wav"),
    Path("/usr/share/pocketsphinx/test/data/librivox/sense_and_sensibility_01_austen_64kb-0930.wav"),
    Path("/usr/share/asterisk/sounds/en/agent-pass.wav"),
    Path("/usr/share/asterisk/sounds/en/conf-onlyperson.wav"),
    Path("/usr/share/asterisk/sounds/en/cannot-complete-as-dialed.wav"),
]


def _bench(root: Path, names: list[str], audio: Path, order: list[int]) -> Path:
    (root / "audio").mkdir(parents=True)
    for name in names:
        shutil.copy(audio / name, root / "audio" / name)
    items = [
        {
            "index": f"p{k}",
            "instruction_path": f"audio/{names[order[k]]}",
            # Read surely as English: every clip is made once, an answer tested in English, in any order (where
            # only the audio told the language, a clip that is an instruction too would be made twice).
            "instruction_text": "Please repeat the following sentence exactly as you hear it.",
            "audio1_path": f"audio/{names[order[(k + 1) % len(order)]]}",
            "audio2_path": f"audio/{names[order[(k + 2) % len(order)]]}",
        }
        for k in range(len(order))
    ]
    (root / "manifest.json").write_text(json.dumps(items))
    return root


def _by_sha(root: Path) -> dict[str, dict]:
    store = BlueprintStore(root)
    found = {}
    for path in store.index():
        blueprint = comparable(store.get_by_path(path))
        found[blueprint["provenance"]["audio_sha256"]] = blueprint
    return found


def test_the_same_audio_gives_the_same_blueprint_alone_in_a_shuffled_batch_and_on_ray(tmp_path, monkeypatch):
    # Every cue at the precision stored, the transcript, its reliability and word times included.
    audio = tmp_path / "audio"
    names = []
    monkeypatch.setenv("SOX_OPTS", "-D -R")  # the added noise is the same on every run
    for i, (text, voice) in enumerate(SAME_AUDIO):
        speak(text, audio / f"s{i:02}.wav", voice)
        names.append(f"s{i:02}.wav")
    for path in RECORDED:
        if not path.exists():
            pytest.fail(f"{path} is missing: apt-get install pocketsphinx-testdata asterisk-core-sounds-en-wav")
        shutil.copy(path, audio / path.name)
        names.append(path.name)
    assert len(names) == 16
    only = ["asr", "dnsmos", "pitch", "loudness", "rate", "voicing"]
    common = dict(device="cpu", profile="cpu", only=only, store="bench")  # each folder computes its own
    batch = _bench(tmp_path / "batch", names, audio, list(range(16)))
    assert run_blueprints(batch, BlueprintOptions(progress=False, **common)).computed == 16
    reference = _by_sha(batch)
    shuffled = _bench(tmp_path / "shuffled", names, audio, [5, 12, 0, 15, 9, 3, 7, 14, 1, 10, 6, 13, 2, 8, 11, 4])
    assert run_blueprints(shuffled, BlueprintOptions(progress=False, workers=1, **common)).computed == 16
    on_ray = _bench(tmp_path / "ray", names, audio, list(reversed(range(16))))
    assert run_blueprints(on_ray, options(**common)).computed == 16
    for other in (_by_sha(shuffled), _by_sha(on_ray)):
        assert other.keys() == reference.keys()
        for sha, blueprint in reference.items():
            assert other[sha] == blueprint, sha
    # Alone: the fast clip that falls back to sampling, the whispered one, one LibriVox and one Asterisk recording.
    for name in ("s03.wav", "s04.wav", RECORDED[0].name, RECORDED[3].name):
        alone = _bench(tmp_path / f"alone-{name}", [name], audio, [0])
        run_blueprints(alone, BlueprintOptions(progress=False, **common))
        [(sha, blueprint)] = _by_sha(alone).items()
        assert blueprint == reference[sha], name
    fell_back = [
        b for b in reference.values() if "after decoding at temperatures" in (b["transcript_quality"]["reason"] or "")
    ]
    assert fell_back, "no clip exercised the sampled fallback"
    numerics = reference[next(iter(reference))]["provenance"]["extractors"]["asr"]["numerics"]
    assert numerics["compute_type"] == "int8" and numerics["class"] in ("avx2", "generic"), numerics


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
    common = dict(
        only=["rate"],
        device="cpu",
        profile="cpu",
        settings={"asr": {"model_path": str(tmp_path / "none")}},
        store="bench",
    )
    local = run_blueprints(tmp_path / "local", BlueprintOptions(progress=False, **common))
    remote = run_blueprints(tmp_path / "ray", options(**common))
    assert remote.sections == local.sections == {"asr": {"unavailable": 3}, "rate": {"unavailable": 3}}
    assert remote.unavailable == local.unavailable
    for i in range(3):
        a = BlueprintStore(tmp_path / "local").get_by_path(f"audio/c{i}.wav")
        b = BlueprintStore(tmp_path / "ray").get_by_path(f"audio/c{i}.wav")
        assert comparable(a) == comparable(b)


class Heard(Extractor):
    """A batched model that reads the language a clip is declared in (as asr does)."""

    name = "test_heard"
    version = "1"
    batched = True
    uses_gpu = True
    reads_declared_language = True
    outputs = ("test.heard",)

    def extract(self, clips):
        return [
            Section({"test": {"heard": clip.language or f"peak {np.abs(clip.samples(SR)).max():.3f}"}})
            for clip in clips
        ]


class HeardAfter(Extractor):
    """A batched model that depends on another one (as accent depends on asr) and reads what it gave."""

    name = "test_heard_after"
    version = "1"
    batched = True
    uses_gpu = True
    depends_on = ("test_heard",)
    outputs = ("test.after",)

    def extract(self, clips):
        return [Section({"test": {"after": f"{clip.blueprint['test']['heard']} ({clip.language})"}}) for clip in clips]


def test_a_model_after_another_reads_its_values_and_the_declared_language_as_locally(tmp_path):
    """Both engines hand a dependant model what its dependency gave in this run, or what is stored, and every
    model the language the manifest declares for the clip."""
    register(Heard)
    register(HeardAfter)
    try:
        for engine in ("local", "ray"):
            root = tone_bench(tmp_path / engine, 3)
            items = json.loads((root / "manifest.json").read_text())
            (root / "manifest.json").write_text(json.dumps({"audio1_language": "fr", "items": items[:1]}))
            only = ["test_heard", "test_heard_after"]
            common = dict(only=only, device="cpu", store="bench", progress=False)
            assert run_blueprints(root, BlueprintOptions(engine=engine, **common)).ok
            HeardAfter.version = "2"  # the dependant alone is stale: it reads the stored value
            try:
                again = run_blueprints(root, BlueprintOptions(engine=engine, **common))
            finally:
                HeardAfter.version = "1"
            assert again.sections["test_heard"] == {"cached": 3} and again.sections["test_heard_after"] == {"ok": 3}
        for i in range(3):
            local = comparable(BlueprintStore(tmp_path / "local").get_by_path(f"audio/c{i}.wav"))
            on_ray = comparable(BlueprintStore(tmp_path / "ray").get_by_path(f"audio/c{i}.wav"))
            assert local == on_ray
        heard = {i: BlueprintStore(tmp_path / "ray").get_by_path(f"audio/c{i}.wav")["test"] for i in range(3)}
        assert heard[1] == {"heard": "fr", "after": "fr (fr)"}  # audio1 of the one item: declared French
        assert heard[0]["heard"].startswith("peak") and heard[0]["after"] == f"{heard[0]['heard']} (None)"
    finally:
        REGISTRY.pop(Heard.name, None)
        REGISTRY.pop(HeardAfter.name, None)


def test_a_dependant_that_needs_audio_reads_the_stored_section_it_depends_on(tmp_path):
    # prosody needs the audio and asr's words. With asr stored and only prosody stale, both engines give it
    # the stored words.
    speak("Is it raining in the city tonight?", tmp_path / "local" / "audio" / "q.wav", Voice(wpm=140))
    items = [{"id": "q", "audio_path": "audio/q.wav", "instruction_text": "(clip)"}]
    (tmp_path / "local" / "manifest.json").write_text(json.dumps(items))
    shutil.copytree(tmp_path / "local", tmp_path / "ray")
    common = dict(device="cpu", profile="cpu", store="bench")
    for root, make in (
        (tmp_path / "local", lambda **kw: BlueprintOptions(progress=False, **kw)),
        (tmp_path / "ray", options),
    ):
        assert run_blueprints(root, make(only=["asr"], **common)).sections == {"asr": {"ok": 1}}
        second = run_blueprints(root, make(only=["prosody"], **common))
        assert second.sections["prosody"] == {"ok": 1} and second.sections["asr"] == {"cached": 1}
    a = BlueprintStore(tmp_path / "local").get_by_path("audio/q.wav")
    b = BlueprintStore(tmp_path / "ray").get_by_path("audio/q.wav")
    assert comparable(a) == comparable(b)
    assert len(b["agent_prosody"]["words"]) == len(b["words"]) > 3
