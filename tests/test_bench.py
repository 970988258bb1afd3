import json

import numpy as np
import pytest
import soundfile as sf

from trace_eval.bench import ManifestError, load_benchmark, normalise_label


def _wav(path, seconds=0.5, sr=16000):
    path.parent.mkdir(parents=True, exist_ok=True)
    t = np.arange(int(seconds * sr)) / sr
    sf.write(path, 0.1 * np.sin(2 * np.pi * 220 * t), sr)


@pytest.fixture
def folder(tmp_path):
    for name in ("q", "a", "b"):
        _wav(tmp_path / "audio" / f"{name}.wav")
    return tmp_path


def hcot_item(index, **extra):
    """An item shaped like the released SpeakBench / S2S-Arena HCoT annotation files."""
    item = {
        "index": index,
        "instruction_path": "audio/q.wav",
        "instruction_text": "Say hello slowly.",
        "audio1_path": "audio/a.wav",
        "audio2_path": "audio/b.wav",
        "model_a": "gpt4o",
        "model_b": "moshi",
        "label": {"content": "both_good", "voice_quality": "1", "paralinguistics": "2", "overall": "2"},
        "hcot": {"content": "Both answers say hello.", "paralinguistics": "B is slower."},
    }
    item.update(extra)
    return item


def test_json_list_loads_unchanged_with_extra_fields(folder):
    (folder / "manifest.json").write_text(json.dumps([hcot_item(0), hcot_item(1, context="a quiz")]))
    bench = load_benchmark(folder)
    assert [p.id for p in bench] == ["0", "1"]
    pair = bench.pairs[1]
    assert pair.label == {"content": "both_good", "voice_quality": "1", "paralinguistics": "2", "overall": "2"}
    assert pair.extra["context"] == "a quiz" and "hcot" in pair.extra
    assert bench.audio_files() == ["audio/q.wav", "audio/a.wav", "audio/b.wav"]


def test_jsonl_with_id_field(folder):
    items = [hcot_item(0) for _ in range(3)]
    for i, item in enumerate(items):
        del item["index"]
        item["id"] = f"x{i}"
    lines = [json.dumps(item) for item in items]
    (folder / "manifest.jsonl").write_text("\n".join(lines) + "\n")
    assert [p.id for p in load_benchmark(folder)] == ["x0", "x1", "x2"]


def test_every_problem_is_reported_at_once(folder):
    items = [
        hcot_item("dup"),
        hcot_item("dup"),
        hcot_item("bad-label", label={"overall": "tie"}),
        hcot_item("gone", audio2_path="audio/missing.wav"),
        {"instruction_path": "audio/q.wav", "audio1_path": "audio/a.wav", "audio2_path": "audio/b.wav"},
    ]
    (folder / "manifest.json").write_text(json.dumps(items))
    with pytest.raises(ManifestError) as err:
        load_benchmark(folder)
    text = "\n".join(err.value.problems)
    assert "item dup: duplicate id" in text
    assert "item bad-label: label.overall = 'tie'" in text
    assert "item gone: audio2_path audio/missing.wav does not exist" in text
    assert "item 4:" in text  # no id at all
    assert len(err.value.problems) == 4


def test_label_spellings_are_normalised():
    assert normalise_label(1) == "1"
    assert normalise_label("Both Good") == "both_good"
    assert normalise_label("both-bad") == "both_bad"
    assert normalise_label("tie") is None


def test_missing_manifest_names_the_expected_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="manifest.json or manifest.jsonl"):
        load_benchmark(tmp_path)
