"""Stage 1 pipeline: bad input, resume, content addressing, per-section fingerprints."""

import json
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
import soundfile as sf

from extractors import REGISTRY, ClipError, Extractor, ExtractorUnavailable, Section, register
from trace_eval.cli import main as cli
from trace_eval.schemas import validation_errors
from trace_eval.stage1 import local
from trace_eval.stage1.pipeline import BlueprintOptions, run_blueprints
from trace_eval.stage1.store import BlueprintStore, prune_store, verify_store

SR = 16000


def tone(seconds, sr=SR, f0=220.0, amp=0.2, channels=1):
    t = np.arange(int(seconds * sr)) / sr
    x = amp * np.sin(2 * np.pi * f0 * t) * (1 + 0.3 * np.sin(2 * np.pi * 3 * t))
    return np.stack([x] * channels, axis=1) if channels > 1 else x


# Small real extractors that exercise the pipeline's mechanics without models.
# They are registered only while a test of this module runs (see the fixture below).
class Peak(Extractor):
    name = "test_peak"
    version = "1"
    outputs = ("test.peak",)

    @dataclass
    class Config:
        scale: float = 1.0

    fail = False  # set by a test: every clip fails

    def extract_one(self, clip):
        if Peak.fail:
            raise ClipError("asked to fail")
        x = clip.samples(self.sample_rate)
        return Section({"test": {"peak": float(np.abs(x).max()) * self.config.scale}})


class PeakDb(Extractor):
    name = "test_peak_db"
    version = "1"
    sample_rate = None
    depends_on = ("test_peak",)
    batched = True
    outputs = ("test.peak_db",)
    calls = 0
    interrupt_after: int | None = None

    def extract(self, clips):
        out = []
        for clip in clips:
            PeakDb.calls += 1
            if PeakDb.interrupt_after is not None and PeakDb.calls > PeakDb.interrupt_after:
                raise KeyboardInterrupt
            peak = clip.blueprint.get("test", {}).get("peak")
            if peak is None:  # like speaking rate without words: null, with the reason
                out.append(Section({"test": {"peak_db": None}}, {"test.peak_db": "no peak measured"}))
            elif not peak:
                out.append(ClipError("no peak to convert"))
            else:
                out.append(Section({"test": {"peak_db": round(20 * np.log10(peak), 3)}}))
        return out


class Spoken(Extractor):
    """Says which language a clip is declared in, as asr decodes in it."""

    name = "test_spoken"
    version = "1"
    depends_on = ("test_peak",)
    reads_declared_language = True
    outputs = ("test.spoken",)

    def extract_one(self, clip):
        return Section({"test": {"spoken": clip.language}})


class SpokenLouder(Extractor):
    """A dependant of the language-reading extractor (as accent and rate are of asr)."""

    name = "test_spoken_louder"
    version = "1"
    sample_rate = None
    depends_on = ("test_spoken",)
    outputs = ("test.spoken_louder",)

    def extract_one(self, clip):
        return Section({"test": {"spoken_louder": (clip.blueprint["test"]["spoken"] or "").upper()}})


class Expecting(Extractor):
    """Says which languages a clip's items expect it in, as asr tests an answer in them."""

    name = "test_expecting"
    version = "1"
    depends_on = ("test_peak",)  # runs in the driver, as asr does
    reads_expected_languages = True
    outputs = ("test.expects", "language")

    made: ClassVar[list[tuple[str, tuple[str, ...]]]] = []  # (sha256, expects) of each clip made, in order
    heard_as: ClassVar[dict[float, str]] = {}  # a clip's length (s) -> the language it is heard in, surely

    def extract_one(self, clip):
        Expecting.made.append((clip.sha256, clip.expects))
        heard = Expecting.heard_as.get(round(clip.duration_s, 2))
        language = {"code": heard, "probability": 0.9, "source": "detected"} if heard else None
        return Section({"test": {"expects": list(clip.expects)}, **({"language": language} if heard else {})})


ONLY = ["test_peak", "test_peak_db"]
LANGUAGE = ["test_peak", "test_spoken", "test_spoken_louder"]


@pytest.fixture(autouse=True)
def test_extractors():
    for cls in (Peak, PeakDb, Spoken, SpokenLouder, Expecting):
        register(cls)
    yield
    for name in ONLY + LANGUAGE + ["test_broken", "test_unloadable", "test_expecting"]:
        REGISTRY.pop(name, None)
    Peak.fail = False
    Expecting.made.clear()
    Expecting.heard_as.clear()


def bench(tmp_path, files: dict[str, object], pairs=None):
    """Write audio files (arrays, bytes or callables) and a manifest pairing them up."""
    audio = tmp_path / "audio"
    audio.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        path = audio / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        elif isinstance(content, tuple):
            data, sr, kw = (content + ({},))[:3]
            sf.write(path, data, sr, **kw)
        elif content is not None:
            sf.write(path, content, SR)
    names = list(files)
    pairs = pairs or [
        (names[0], names[i], names[i + 1] if i + 1 < len(names) else names[1]) for i in range(1, len(names), 2)
    ]
    manifest = [
        {"index": f"p{i}", "instruction_path": f"audio/{q}", "audio1_path": f"audio/{a}", "audio2_path": f"audio/{b}"}
        for i, (q, a, b) in enumerate(pairs)
    ]
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    return tmp_path


def opts(**kw):
    return BlueprintOptions(only=kw.pop("only", ONLY), workers=kw.pop("workers", 0), progress=False, **kw)


def test_bad_input_is_recorded_and_everything_else_gets_a_blueprint(tmp_path):
    ok = tone(1.0)
    wav_bytes = tmp_path / "tmp.wav"
    sf.write(wav_bytes, ok, SR)
    good_bytes = wav_bytes.read_bytes()
    nan = tone(1.0).astype(np.float32)
    nan[100:200] = np.nan
    files = {
        "question.wav": ok,
        "empty.wav": b"",
        "truncated.wav": good_bytes[:30],
        "text.wav": b"this is not audio at all\n" * 10,
        "nan.wav": (nan, SR, {"subtype": "FLOAT"}),
        "short.wav": tone(0.1),
        "silence.wav": np.zeros(3 * SR),
        "narrow.wav": (tone(2.0, sr=8000), 8000),
        "stereo.wav": (tone(2.0, sr=48000, channels=2), 48000),
        "long.flac": (np.tile(tone(5.0), 120), SR),  # 10 minutes
    }
    pairs = [
        ("question.wav", a, b)
        for a, b in [
            ("empty.wav", "truncated.wav"),
            ("text.wav", "nan.wav"),
            ("short.wav", "silence.wav"),
            ("narrow.wav", "stereo.wav"),
            ("long.flac", "missing.wav"),
        ]
    ]
    root = bench(tmp_path, files, pairs)
    summary = run_blueprints(root, opts())

    failed = {f.path: f.reason for f in summary.failures if f.stage == "decode"}
    assert set(failed) == {
        "audio/empty.wav",
        "audio/truncated.wav",
        "audio/text.wav",
        "audio/nan.wav",
        "audio/missing.wav",
    }
    assert "empty file" in failed["audio/empty.wav"]
    assert "NaN" in failed["audio/nan.wav"]
    assert "not found" in failed["audio/missing.wav"]
    assert summary.failed == 5 and not summary.ok

    store = BlueprintStore(root)
    for name in ("question.wav", "short.wav", "silence.wav", "narrow.wav", "stereo.wav", "long.flac"):
        bp = store.get_by_path(f"audio/{name}")
        assert bp is not None, name
        assert validation_errors("blueprint", bp) == []
    stereo = store.get_by_path("audio/stereo.wav")
    assert stereo["channels"] == 2 and stereo["sample_rate_hz"] == 48000
    assert store.get_by_path("audio/long.flac")["duration_s"] == pytest.approx(600.0)
    # digital silence has no peak: its dependant section fails with a reason, the blueprint still exists
    silence = store.get_by_path("audio/silence.wav")
    assert silence["provenance"]["extractors"]["test_peak_db"]["status"] == "failed"
    assert "no peak" in silence["provenance"]["extractors"]["test_peak_db"]["reason"]

    lines = [json.loads(line) for line in (root / "blueprints" / "failures.jsonl").read_text().splitlines()]
    assert {line["path"] for line in lines} >= set(failed)
    saved = json.loads((root / "blueprints" / "summary.json").read_text())
    assert saved["failed"] == 5 and saved["clips"] == 15


def test_cli_exit_status_lists_failed_clips(tmp_path, capsys):
    root = bench(tmp_path, {"q.wav": tone(0.5), "a.wav": tone(0.5), "b.wav": b"garbage"})
    code = cli(["blueprints", str(root), "--only", "test_peak", "--workers", "0", "--quiet"])
    out = capsys.readouterr().out
    assert code == 1
    assert "audio/b.wav" in out and "1 clip(s) have no blueprint" in out
    (root / "audio" / "b.wav").unlink()
    sf.write(root / "audio" / "b.wav", tone(0.5, f0=330), SR)
    assert cli(["blueprints", str(root), "--only", "test_peak", "--workers", "0", "--quiet"]) == 0


def test_rerun_computes_nothing_and_force_recomputes(tmp_path, own_store):
    root = bench(tmp_path, {"q.wav": tone(0.5), "a.wav": tone(0.7), "b.wav": tone(0.9)})
    first = run_blueprints(root, opts())
    assert first.computed == 3 and first.cached == 0
    files = sorted(own_store.glob("*.json"))
    stamps = {p: p.stat().st_mtime_ns for p in files if len(p.stem) == 64}
    assert len(stamps) == 3

    again = run_blueprints(root, opts())
    assert again.computed == 0 and again.cached == 3
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps  # nothing rewritten

    forced = run_blueprints(root, opts(force=True))
    assert forced.computed == 3


def test_identical_audio_is_extracted_once(tmp_path):
    same = tone(0.8)
    root = bench(tmp_path, {"q.wav": same, "a.wav": same, "b.wav": tone(0.5)})
    summary = run_blueprints(root, opts())
    assert summary.unique_audio == 2 and summary.computed == 2 and summary.clips == 3
    store = BlueprintStore(root)
    assert store.get_by_path("audio/q.wav") == store.get_by_path("audio/a.wav")


def test_changing_one_extractor_recomputes_it_and_its_dependants_only(tmp_path):
    root = bench(tmp_path, {"q.wav": tone(0.5), "a.wav": tone(0.7), "b.wav": tone(0.9)})
    run_blueprints(root, opts(only=ONLY + ["pitch"]) if "pitch" in REGISTRY else opts())
    store = BlueprintStore(root)
    before = store.get_by_path("audio/a.wav")

    summary = run_blueprints(root, opts(settings={"test_peak": {"scale": "2"}}))
    after = store.get_by_path("audio/a.wav")
    assert summary.sections["test_peak"]["ok"] == 3 and summary.sections["test_peak_db"]["ok"] == 3
    assert after["test"]["peak"] == pytest.approx(2 * before["test"]["peak"])
    assert after["test"]["peak_db"] == pytest.approx(before["test"]["peak_db"] + 6.021, abs=2e-3)
    if "pitch" in REGISTRY:  # an unrelated section is left exactly as it was
        assert after["provenance"]["extractors"]["pitch"] == before["provenance"]["extractors"]["pitch"]
        assert after["agent_audio_properties"] == before["agent_audio_properties"]

    # only the audio-free dependant is stale: it is recomputed from the stored blueprint
    peak_db_fp = after["provenance"]["extractors"]["test_peak_db"]["fingerprint"]
    PeakDb.version = "2"
    try:
        summary = run_blueprints(root, opts(settings={"test_peak": {"scale": "2"}}))
    finally:
        PeakDb.version = "1"
    assert summary.sections["test_peak"].get("ok", 0) == 0 and summary.sections["test_peak_db"]["ok"] == 3
    assert store.get_by_path("audio/a.wav")["provenance"]["extractors"]["test_peak_db"]["fingerprint"] != peak_db_fp


def test_interrupted_run_resumes_where_it_stopped(tmp_path, monkeypatch, own_store):
    files = {f"c{i}.wav": tone(0.3 + 0.1 * i, f0=200 + 20 * i) for i in range(7)}
    root = bench(tmp_path, files)
    monkeypatch.setattr(local, "CHUNK_CLIPS", 2)
    PeakDb.calls, PeakDb.interrupt_after = 0, 4
    try:
        with pytest.raises(KeyboardInterrupt):
            run_blueprints(root, opts())
    finally:
        PeakDb.interrupt_after = None
    done = [p for p in own_store.glob("*.json") if len(p.stem) == 64]
    assert len(done) == 4  # two whole chunks were written before the interruption
    summary = run_blueprints(root, opts())
    assert summary.cached == 4 and summary.computed == 3 and summary.ok


def test_worker_processes_give_the_same_blueprints(tmp_path):
    files = {f"c{i}.wav": tone(0.6 + 0.2 * i, f0=150 + 30 * i) for i in range(5)}
    inline = bench(tmp_path / "inline", files)
    pooled = bench(tmp_path / "pooled", files)
    # each folder keeps its own blueprints, so the second run computes them again instead of finding them
    run_blueprints(inline, opts(only=["pitch", "loudness"], workers=0, store="bench"))
    assert run_blueprints(pooled, opts(only=["pitch", "loudness"], workers=2, store="bench")).computed == 5
    for name in files:
        a = BlueprintStore(inline).get_by_path(f"audio/{name}")
        b = BlueprintStore(pooled).get_by_path(f"audio/{name}")
        assert a["agent_audio_properties"] == b["agent_audio_properties"]
        assert a["agent_audio_properties"]["Mean_Pitch_Hz"] == pytest.approx(150 + 30 * int(name[1]), rel=0.05)


def test_unknown_setting_names_the_choices(tmp_path):
    root = bench(tmp_path, {"q.wav": tone(0.5), "a.wav": tone(0.5), "b.wav": tone(0.5)})
    with pytest.raises(ValueError, match="expected one of: scale"):
        run_blueprints(root, opts(settings={"test_peak": {"gain": "2"}}))


def test_show_prints_the_stored_blueprint(tmp_path, capsys):
    root = bench(tmp_path, {"q.wav": tone(0.5), "a.wav": tone(0.6), "b.wav": tone(0.7)})
    assert cli(["show", str(root / "audio" / "a.wav")]) == 1  # nothing stored yet
    assert "make blueprints" in capsys.readouterr().err
    run_blueprints(root, opts())
    assert cli(["show", str(root / "audio" / "a.wav")]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["duration_s"] == pytest.approx(0.6) and "peak" in shown["test"]


def test_list_names_every_registered_extractor(capsys):
    assert cli(["blueprints", "--list"]) == 0
    listed = {line.split()[0] for line in capsys.readouterr().out.splitlines()}
    assert listed == set(REGISTRY)
    assert cli(["blueprints"]) == 2  # no folder and no --list


def test_one_model_at_a_time_adds_up_its_passes(tmp_path, monkeypatch):
    from trace_eval.stage1.pipeline import run_one_model_at_a_time

    monkeypatch.setattr(Peak, "uses_gpu", True)  # a "GPU model" with a dependant, beside a CPU extractor
    root = bench(tmp_path, {"q.wav": tone(0.6), "a.wav": tone(0.8), "b.wav": tone(1.0)})
    summary = run_one_model_at_a_time(root, opts(only=["pitch"] + ONLY))
    assert summary.computed == 3 and summary.cached == 0 and summary.ok
    assert {name: counts["ok"] for name, counts in summary.sections.items()} == {
        "pitch": 3,
        "test_peak": 3,
        "test_peak_db": 3,
    }
    blueprint = BlueprintStore(root).get_by_path("audio/a.wav")
    assert {"pitch", "test_peak", "test_peak_db"} <= set(blueprint["provenance"]["extractors"])
    again = run_one_model_at_a_time(root, opts(only=["pitch"] + ONLY))
    assert again.computed == 0 and again.cached == 3


def test_a_redone_section_takes_its_dependants_along(tmp_path, monkeypatch):
    root = bench(tmp_path, {"q.wav": tone(0.5), "a.wav": tone(0.6), "b.wav": tone(0.7)})
    Peak.fail = True
    first = run_blueprints(root, opts())
    assert first.sections["test_peak"]["failed"] == 3 and first.sections["test_peak_db"]["ok"] == 3
    Peak.fail = False
    monkeypatch.setattr(Peak, "version", "2")  # a mended extractor is a new version
    second = run_blueprints(root, opts())  # the failed peak is tried again; peak_db must follow it
    assert second.sections["test_peak"]["ok"] == 3 and second.sections["test_peak_db"]["ok"] == 3
    assert BlueprintStore(root).get_by_path("audio/a.wav")["test"]["peak_db"] is not None


class Unloadable(Extractor):
    name = "test_unloadable"
    version = "1"
    outputs = ("test.unloadable",)

    def load(self):
        raise ExtractorUnavailable("no weights; pass --set test_unloadable.model_path=DIR")

    def extract_one(self, clip):
        raise AssertionError("never called")


class Broken(Extractor):
    name = "test_broken"
    version = "1"
    outputs = ("agent_audio_properties.Mean_Pitch_Hz",)

    def extract_one(self, clip):
        return Section({"agent_audio_properties": {"Mean_Pitch_Hz": "n/a"}})


@pytest.mark.parametrize("workers", [0, 2])
def test_a_per_clip_extractor_that_cannot_load_is_unavailable_once(tmp_path, workers):
    register(Unloadable)
    root = bench(tmp_path, {"q.wav": tone(0.5), "a.wav": tone(0.6), "b.wav": tone(0.7)})
    first = run_blueprints(root, opts(only=["test_unloadable", "test_peak"], workers=workers))
    assert "--set test_unloadable.model_path=DIR" in first.unavailable["test_unloadable"]
    assert first.sections["test_unloadable"]["unavailable"] == 3 and first.ok
    again = run_blueprints(root, opts(only=["test_unloadable", "test_peak"], workers=workers))
    assert again.computed == 0 and again.cached == 3  # nothing to redo for the same reason


def test_values_the_schema_forbids_fail_that_section_only(tmp_path):
    register(Broken)
    root = bench(tmp_path, {"q.wav": tone(0.5), "a.wav": tone(0.6), "b.wav": tone(0.7)})
    summary = run_blueprints(root, opts(only=["test_broken", "test_peak"]))
    assert summary.ok and summary.sections["test_broken"]["failed"] == 3
    assert "schema does not allow" in summary.failures[0].reason
    blueprint = BlueprintStore(root).get_by_path("audio/a.wav")
    assert "Mean_Pitch_Hz" not in blueprint.get("agent_audio_properties", {}) and "peak" in blueprint["test"]


def test_one_model_at_a_time_keeps_the_failures_of_every_pass(tmp_path, monkeypatch):
    from trace_eval.stage1.pipeline import run_one_model_at_a_time

    monkeypatch.setattr(PeakDb, "uses_gpu", True)  # passes: [test_peak], then [test_peak_db]
    Peak.fail = True
    root = bench(tmp_path, {"q.wav": tone(0.5), "a.wav": tone(0.6), "b.wav": tone(0.7)})
    summary = run_one_model_at_a_time(root, opts())
    lines = [json.loads(line) for line in (root / "blueprints" / "failures.jsonl").read_text().splitlines()]
    assert {(f["path"], f["stage"]) for f in lines} == {
        (f"audio/{n}", "test_peak") for n in ("q.wav", "a.wav", "b.wav")
    }
    assert len(summary.failures) == 3


def test_an_extractor_that_cannot_run_keeps_what_was_stored(tmp_path, monkeypatch):
    root = bench(tmp_path, {"q.wav": tone(0.5), "a.wav": tone(0.6), "b.wav": tone(0.7)})
    run_blueprints(root, opts())
    before = BlueprintStore(root).get_by_path("audio/a.wav")

    def cannot_load(self):
        raise ExtractorUnavailable("weights gone; pass --set test_peak_db.model_path=DIR")

    monkeypatch.setattr(PeakDb, "load", cannot_load)
    summary = run_blueprints(root, opts(force=True))
    after = BlueprintStore(root).get_by_path("audio/a.wav")
    assert "test_peak_db" in summary.unavailable
    assert after["test"]["peak_db"] == before["test"]["peak_db"]  # kept, not wiped
    assert after["provenance"]["extractors"]["test_peak_db"]["status"] == "ok"


def _cuda_visible() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.mark.skipif(_cuda_visible(), reason="a GPU is visible here")
def test_a_cuda_device_that_is_not_there_is_refused(tmp_path):
    root = bench(tmp_path, {"q.wav": tone(0.5), "a.wav": tone(0.6), "b.wav": tone(0.7)})
    with pytest.raises(ValueError, match="no CUDA device"):
        run_blueprints(root, opts(device="cuda"))


@pytest.mark.parametrize("broken", [False, True], ids=["clean", "one clip failed"])
def test_a_cached_run_imports_no_model_library(tmp_path, broken):
    import subprocess
    import sys
    from pathlib import Path

    files = {"q.wav": tone(0.5), "a.wav": tone(0.6), "b.wav": tone(0.7)}
    if broken:
        files["c.wav"] = b"RIFF but not audio"
    root = bench(tmp_path, files)
    only = "emotion,accent,pitch,dnsmos"  # two models that cannot load offline, recorded as unavailable
    first = run_blueprints(root, BlueprintOptions(only=only.split(","), progress=False))
    assert first.failed == broken
    script = (
        "import sys; from trace_eval.cli import main; code = main(['blueprints', sys.argv[1], '--only', sys.argv[2], "
        "'--quiet']); print('imported:', sorted(m for m in ('torch', 'funasr', 'speechbrain', 'transformers', "
        "'onnxruntime', 'parselmouth') if m in sys.modules)); sys.exit(code)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(root), only],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
        timeout=120,
    )
    assert done.returncode == (1 if broken else 0), done.stderr
    assert "imported: []" in done.stdout and "cached 3" in done.stdout and "computed 0" in done.stdout
    assert "unavailable as recorded: emotion, accent" in done.stdout
    assert ("audio/c.wav [decode, as recorded]" in done.stdout) == broken


def test_a_file_that_did_not_decode_is_tried_again_only_when_it_or_the_packages_change(tmp_path, monkeypatch):
    from trace_eval.stage1 import plan

    decoded = []
    load_audio = local.load_audio
    monkeypatch.setattr(local, "load_audio", lambda path: decoded.append(path.rsplit("/", 1)[-1]) or load_audio(path))
    root = bench(tmp_path, {"q.wav": tone(0.5), "a.wav": tone(0.6), "b.wav": b"garbage"})

    def run(**kw):
        decoded.clear()
        return run_blueprints(root, opts(**kw))

    first = run()
    assert first.failed == 1 and "b.wav" in decoded
    second = run()
    assert decoded == [] and second.failed == 1 and second.computed == 0 and not second.ok
    assert [(f.path, f.stage, f.recorded) for f in second.failures] == [("audio/b.wav", "decode", True)]
    assert second.failures[0].reason == first.failures[0].reason
    assert run(force=True).failed == 1 and "b.wav" in decoded  # --force tries again
    monkeypatch.setattr(plan, "installed_packages", lambda: "a decoder installed since")
    assert run().failed == 1 and decoded == ["b.wav"]
    sf.write(root / "audio" / "b.wav", tone(0.7), SR)  # mended
    mended = run()
    assert mended.ok and decoded == ["b.wav"] and mended.computed == 1


def test_a_failed_section_is_tried_again_only_when_its_extractor_changes(tmp_path):
    root = bench(tmp_path, {"q.wav": tone(0.5), "a.wav": tone(0.6), "b.wav": tone(0.7)})
    Peak.fail = True
    first = run_blueprints(root, opts(only=["test_peak"]))
    assert first.sections["test_peak"]["failed"] == 3 and first.computed == 3
    again = run_blueprints(root, opts(only=["test_peak"]))
    assert again.computed == 0 and again.sections["test_peak"] == {"cached": 3}
    assert {(f.path, f.stage, f.reason, f.recorded) for f in again.failures} == {
        (f"audio/{n}", "test_peak", "asked to fail", True) for n in ("q.wav", "a.wav", "b.wav")
    }
    lines = [json.loads(line) for line in (root / "blueprints" / "failures.jsonl").read_text().splitlines()]
    assert len(lines) == 3  # still recorded for the judge
    Peak.fail = False
    changed = run_blueprints(root, opts(only=["test_peak"], settings={"test_peak": {"scale": 2.0}}))
    assert changed.sections["test_peak"]["ok"] == 3 and not changed.failures


def test_unavailable_is_probed_again_only_when_what_it_resolves_from_changes(tmp_path, monkeypatch):
    register(Unloadable)
    probes = []

    def cannot_load(self):
        probes.append(1)
        raise ExtractorUnavailable("no weights; pass --set test_unloadable.model_path=DIR")

    monkeypatch.setattr(Unloadable, "load", cannot_load)
    monkeypatch.setenv("TRACE_MODELS_DIR", str(tmp_path / "models"))
    root = bench(tmp_path, {"q.wav": tone(0.5), "a.wav": tone(0.6), "b.wav": tone(0.7)})
    only = ["test_unloadable", "test_peak"]

    def run(**kw):
        return run_blueprints(root, opts(only=only, **kw))

    first = run()
    assert "test_unloadable" in first.unavailable and len(probes) == 1
    second = run()
    assert not second.unavailable and "test_unloadable" in second.kept_unavailable and len(probes) == 1
    (tmp_path / "models").mkdir()  # weights may have been put there: look again
    third = run()
    assert third.sections["test_unloadable"].get("unavailable") == 3 and len(probes) == 2
    assert run().kept_unavailable and len(probes) == 2
    assert "test_unloadable" in run(retry_unavailable=True).unavailable and len(probes) == 3


def test_the_ray_engine_without_ray_says_what_to_install(tmp_path, monkeypatch, capsys):
    import sys

    monkeypatch.setitem(sys.modules, "ray", None)  # as if not installed
    root = bench(tmp_path, {"q.wav": tone(0.5), "a.wav": tone(0.6), "b.wav": tone(0.7)})
    assert cli(["blueprints", str(root), "--engine", "ray", "--quiet"]) == 2
    assert "pip install 'trace-eval[ray]'" in capsys.readouterr().err


def test_a_declared_language_keys_the_sections_that_read_it_and_their_dependants(tmp_path):
    """One store, two benchmarks with the same audio: declared in one, detected in the other. The sections that
    read the declaration (and those after them) are made once for each, side by side in the store (the declared
    variant starts from the detected one's other sections); after that neither run computes anything."""
    files = {"q.wav": tone(0.5), "a.wav": tone(0.7), "b.wav": tone(0.9)}
    detected = bench(tmp_path / "detected", files)
    declared = bench(tmp_path / "declared", files)
    items = json.loads((declared / "manifest.json").read_text())
    (declared / "manifest.json").write_text(json.dumps({"instruction_language": "es", "items": items}))

    first = run_blueprints(detected, opts(only=LANGUAGE))
    assert first.computed == 3
    store = BlueprintStore(declared)
    second = run_blueprints(declared, opts(only=LANGUAGE))
    assert second.sections["test_spoken"]["ok"] == 1 and second.sections["test_spoken"]["cached"] == 2
    assert second.sections["test_spoken_louder"]["ok"] == 1 and second.sections["test_peak"].get("ok", 0) == 0
    instruction = store.get_by_path("audio/q.wav")
    assert instruction["test"] == {"peak": pytest.approx(0.26, abs=0.01), "spoken": "es", "spoken_louder": "ES"}
    assert store.get_by_path("audio/a.wav")["test"]["spoken"] is None
    for _ in range(2):  # either way round, each benchmark's variant is current
        assert run_blueprints(declared, opts(only=LANGUAGE)).computed == 0
        assert run_blueprints(detected, opts(only=LANGUAGE)).computed == 0
    assert BlueprintStore(detected).get_by_path("audio/q.wav")["test"]["spoken"] is None
    assert BlueprintStore(declared).get_by_path("audio/q.wav")["test"]["spoken"] == "es"
    sha = store.hash_of("audio/q.wav")
    shelf = Path(store.shelf.location)
    assert (shelf / f"{sha}.json").is_file() and (shelf / f"{sha}.language-es.json").is_file()
    assert store.key_for_path("audio/q.wav") == f"{sha}.language-es"
    assert store.key_for_path("audio/a.wav") == store.hash_of("audio/a.wav")  # its language is not declared
    # Both variants are blueprints the store looks after: valid, and kept by a prune while a benchmark uses them.
    assert verify_store(str(shelf), progress=False) == {}
    assert prune_store(str(shelf), older_than_s=0).removed == []


def test_the_same_audio_declared_in_two_languages_is_refused(tmp_path):
    same = tone(0.6)
    root = bench(tmp_path, {"q.wav": same, "a.wav": same, "b.wav": tone(0.9)})
    items = json.loads((root / "manifest.json").read_text())
    items[0].update(instruction_language="fr", audio1_language="de")
    (root / "manifest.json").write_text(json.dumps(items))
    with pytest.raises(ValueError, match=r"audio/q.wav \(fr\) and audio/a.wav \(de\) are the same audio"):
        run_blueprints(root, opts(only=LANGUAGE))
    items[0]["audio1_language"] = "fr"  # the same declaration twice, or one path left undeclared, is fine
    (root / "manifest.json").write_text(json.dumps(items))
    assert run_blueprints(root, opts(only=LANGUAGE)).unique_audio == 2
    assert BlueprintStore(root).get_by_path("audio/a.wav")["test"]["spoken"] == "fr"


def test_answers_are_made_in_a_variant_that_tests_the_language_their_instruction_expects(tmp_path):
    """An answer to an instruction whose text reads surely as Spanish, or that is declared French, is tested in
    that language (Clip.expects), in a variant of its own; the instruction itself, and an answer whose own
    language is declared, expect nothing."""
    files = {"q.wav": tone(0.5), "a.wav": tone(0.7), "b.wav": tone(0.9), "c.wav": tone(1.1)}
    root = bench(tmp_path, files, pairs=[("q.wav", "a.wav", "b.wav"), ("q.wav", "b.wav", "c.wav")])
    items = json.loads((root / "manifest.json").read_text())
    items[0]["instruction_text"] = "Di: la conferencia ha sido extendida por una hora más."
    items[1].update(instruction_language="fr", audio2_language="de")
    (root / "manifest.json").write_text(json.dumps(items))
    only = ["test_peak", "test_expecting"]
    assert run_blueprints(root, opts(only=only)).computed == 4
    store = BlueprintStore(root)
    expects = {path: store.get_by_path(f"audio/{path}")["test"]["expects"] for path in ("q.wav", "a.wav", "b.wav")}
    assert expects == {"q.wav": [], "a.wav": ["es"], "b.wav": ["es", "fr"]}  # b answers both instructions
    assert store.get_by_path("audio/c.wav")["test"]["expects"] == []  # declared German
    assert store.key_for_path("audio/a.wav") == f"{store.hash_of('audio/a.wav')}.expects-es"
    assert store.key_for_path("audio/b.wav") == f"{store.hash_of('audio/b.wav')}.expects-es+fr"
    assert run_blueprints(root, opts(only=only)).computed == 0


def test_answers_to_a_written_instruction_that_asks_for_another_language_are_tested_in_that_one(tmp_path):
    """ "Translate into Spanish: ..." reads as English, and its answers are held to Spanish: the judge's reading
    (languages.held_language), so Stage 1 tests them in Spanish, not in the text's English."""
    root = bench(tmp_path, {"q.wav": tone(0.5), "a.wav": tone(0.7), "b.wav": tone(0.9)})
    items = json.loads((root / "manifest.json").read_text())
    items[0]["instruction_text"] = "Translate into Spanish: the weather is very nice today, and we are going out."
    (root / "manifest.json").write_text(json.dumps(items))
    assert run_blueprints(root, opts(only=["test_peak", "test_expecting"])).computed == 3
    store = BlueprintStore(root)
    assert [store.get_by_path(f"audio/{p}")["test"]["expects"] for p in ("q.wav", "a.wav", "b.wav")] == [
        [],
        ["es"],
        ["es"],
    ]


def test_a_spoken_instruction_is_heard_first_and_its_answers_tested_in_its_language(tmp_path):
    """An instruction with neither text nor a declared language tells its answers' expected language only once
    it is heard: the run hears it first, then makes each answer once, tested in that language; an instruction
    heard unsurely, or in no language, expects nothing. A second run makes nothing."""
    files = {"q.wav": tone(0.5), "a.wav": tone(0.7), "b.wav": tone(0.9), "r.wav": tone(0.6), "c.wav": tone(1.1)}
    root = bench(tmp_path, files, pairs=[("q.wav", "a.wav", "b.wav"), ("r.wav", "c.wav", "b.wav")])
    Expecting.heard_as.update({0.5: "es"})  # q is surely Spanish; r is heard in no language
    only = ["test_peak", "test_expecting"]
    summary = run_blueprints(root, opts(only=only))
    assert (summary.computed, summary.unique_audio, summary.clips, summary.sections["test_expecting"]["ok"]) == (
        5,
        5,
        6,
        5,
    )
    store = BlueprintStore(root)
    sha = {name: store.hash_of(f"audio/{name}") for name in files}
    instructions = {sha["q.wav"], sha["r.wav"]}
    assert {s for s, _ in Expecting.made[:2]} == instructions  # heard first
    assert sorted(Expecting.made[2:]) == sorted([(sha["a.wav"], ("es",)), (sha["b.wav"], ("es",)), (sha["c.wav"], ())])
    assert store.key_for_path("audio/a.wav") == f"{sha['a.wav']}.expects-es"
    assert store.get_by_path("audio/b.wav")["test"]["expects"] == ["es"]
    assert store.get_by_path("audio/q.wav")["test"]["expects"] == []
    assert run_blueprints(root, opts(only=only)).computed == 0
    assert len(Expecting.made) == 5


def test_an_audio_that_answers_two_instructions_is_tested_in_both_and_an_instruction_that_answers_too_as_each(
    tmp_path,
):
    """The same recording under two paths answers a Spanish and a French instruction: made once, tested in both.
    An instruction that is also an answer is made twice: as an instruction first, then tested as an answer."""
    files = {"q.wav": tone(0.5), "s.wav": tone(0.6), "a.wav": tone(0.7), "a-copy.wav": tone(0.7), "b.wav": tone(0.9)}
    root = bench(tmp_path, files, pairs=[("q.wav", "a.wav", "b.wav"), ("s.wav", "a-copy.wav", "q.wav")])
    Expecting.heard_as.update({0.5: "es", 0.6: "fr"})
    only = ["test_peak", "test_expecting"]
    run_blueprints(root, opts(only=only))
    store = BlueprintStore(root)
    sha = {name: store.hash_of(f"audio/{name}") for name in files}
    assert sorted(Expecting.made) == sorted(
        [
            (sha["q.wav"], ()),
            (sha["s.wav"], ()),
            (sha["a.wav"], ("es", "fr")),
            (sha["b.wav"], ("es",)),
            (sha["q.wav"], ("fr",)),
        ]
    )
    assert store.key_for_path("audio/a-copy.wav") == f"{sha['a.wav']}.expects-es+fr"
    assert store.key_for_path("audio/q.wav") == f"{sha['q.wav']}.expects-fr"
    assert run_blueprints(root, opts(only=only)).computed == 0
