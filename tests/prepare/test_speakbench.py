"""`prepare speakbench` offline, from a parquet snapshot of the release's layout and a label file of its shape."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import soundfile as sf
from release_snapshots import SENTENCES, decode, speakbench_labels, write_speakbench

from trace_eval.audio import sha256_file
from trace_eval.cli import main
from trace_eval.prepare import PrepareError, prepare_speakbench
from trace_eval.prepare import folder as folder_module


@pytest.fixture
def snapshot(tmp_path, clips):
    return write_speakbench(tmp_path / "snapshot", clips), speakbench_labels(tmp_path / "speakbench.json")


def prepare(out, snapshot_root, labels, *extra) -> int:
    return main(
        ["prepare", "speakbench", str(out), "--from", str(snapshot_root), "--labels", str(labels), "--quiet", *extra]
    )


def test_the_folder_holds_the_label_files_items_and_audio_written_as_the_reference_does(
    tmp_path, snapshot, clips, capsys
):
    root, labels = snapshot
    out = tmp_path / "bench"
    assert prepare(out, root, labels) == 0
    printed = capsys.readouterr().out
    assert "3 items, 9 clips written" in printed
    # A label file that is not the release's is said on screen, not only in SOURCE.json.
    assert f"note: the label file {labels.resolve()} is not the release's (github:" in printed
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest == json.loads(labels.read_text())  # the label file's items, unchanged
    for item in manifest:
        for field, column in (
            ("instruction_path", "instruction"),
            ("audio1_path", "audio_a"),
            ("audio2_path", "audio_b"),
        ):
            info = sf.info(out / item[field])
            assert (info.format, info.subtype, info.channels) == ("WAV", "PCM_16", 1)
            model = {"audio_a": item["model_a"], "audio_b": item["model_b"]}.get(column)
            assert info.samplerate == (24000 if model in ("moshi", "gemini2-flash-exp") else 16000), (item, field)
    # The samples are the source's (native rate, nothing else done to them).
    written, rate = decode((out / "audio_data/speakbench508_audio/2/audio_a.wav").read_bytes())
    source, source_rate = decode(clips[(4, 24000)])
    assert rate == source_rate == 24000 and np.array_equal(written, source)
    # The 11 few-shot rows of the release (here one) are in no item; nothing else is left out.
    assert not (out / "audio_data/speakbench508_audio/0").exists()

    record = json.loads((out / "SOURCE.json").read_text())
    assert record["complete"] and record["left_out"] == []
    label_source, data_source = record["sources"]
    assert label_source["files"][0]["sha256"] == sha256_file(labels) and label_source["matches_release"] is False
    assert data_source["repo"] == "hf:datasets/potsawee/speakbench-v1-labelled-508"
    assert data_source["files"][0]["path"] == "data/train-00000-of-00001.parquet"
    assert data_source["files"][0]["sha256"] == sha256_file(root / "data/train-00000-of-00001.parquet")
    assert record["outputs"]["audio_data/speakbench508_audio/1/instruction.wav"]["sha256"] == sha256_file(
        out / "audio_data/speakbench508_audio/1/instruction.wav"
    )
    assert "instruction_ID 0" in record["notes"][0]


def test_a_second_run_on_a_complete_folder_writes_nothing(tmp_path, snapshot, capsys):
    root, labels = snapshot
    out = tmp_path / "bench"
    assert prepare(out, root, labels) == 0
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*")}
    capsys.readouterr()
    assert prepare(out, root, labels) == 0
    assert "already complete from the same sources (3 items); nothing written" in capsys.readouterr().out
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*")} == before


def test_an_interrupted_run_resumes_with_the_clips_it_had_written(tmp_path, snapshot, monkeypatch):
    root, labels = snapshot
    out = tmp_path / "bench"
    real = folder_module._write_clip
    calls = []

    def interrupted(clip, target):
        if len(calls) == 4:
            raise KeyboardInterrupt
        calls.append(clip.path)
        real(clip, target)

    monkeypatch.setattr(folder_module, "_write_clip", interrupted)
    with pytest.raises(KeyboardInterrupt):
        prepare_speakbench(out, root, labels, progress=False)
    assert not (out / "manifest.json").exists()
    assert not [p for p in out.rglob("*.tmp")] and not [p for p in out.rglob(".*.wav")]  # no half-written file
    monkeypatch.setattr(folder_module, "_write_clip", real)
    done = prepare_speakbench(out, root, labels, progress=False)
    assert (done.reused, done.written, done.items) == (4, 5, 3)


def test_labels_that_disagree_with_the_data_name_every_item_and_the_reason(tmp_path, snapshot, capsys):
    root, _ = snapshot
    labels = speakbench_labels(
        tmp_path / "wrong.json",
        change={
            1: {"model_a": "moshi"},  # a system the row does not have
            2: {"instruction_text": "Something else entirely."},
            3: {"index": 99},  # no such row
        },
    )
    out = tmp_path / "bench"
    assert prepare(out, root, labels) == 1
    err = capsys.readouterr().err
    assert "3 item(s) could not be prepared" in err
    assert "item 1: model_a is 'moshi' in the label file but model_a is 'gpt4o-audio' in row 1" in err
    assert "item 2: instruction_text is 'Something else entirely.' in the label file but instruction_text is" in err
    assert "item 99: index 99 is no row of the dataset" in err
    assert not (out / "manifest.json").exists()  # nothing is silently dropped
    assert not (out / "audio_data/speakbench508_audio/1").exists()  # no audio for an item that is not joined

    # The same with --skip-bad: the manifest holds the rest, SOURCE.json says what was left out and why.
    wrong_id = speakbench_labels(tmp_path / "one.json", change={2: {"instruction_id": 8}})
    assert prepare(out, root, wrong_id, "--skip-bad") == 0
    assert [i["index"] for i in json.loads((out / "manifest.json").read_text())] == [1, 3]
    left = json.loads((out / "SOURCE.json").read_text())["left_out"]
    assert left == [
        {"item": "2", "reason": "instruction_id is 8 in the label file but instruction_ID is 7 in row 2 of the dataset"}
    ]
    assert "left out: item 2: instruction_id is 8" in capsys.readouterr().out


def test_missing_and_undecodable_audio_name_the_item_and_the_file(tmp_path, clips, capsys):
    root = write_speakbench(
        tmp_path / "snapshot",
        clips,
        broken={(2, "audio_b"): b"RIFF....WAVEfmt not audio at all", (3, "instruction"): None},
    )
    labels = speakbench_labels(tmp_path / "speakbench.json")
    out = tmp_path / "bench"
    assert prepare(out, root, labels) == 1
    err = capsys.readouterr().err
    assert "item 2: audio_data/speakbench508_audio/2/audio_b.wav: not decodable audio" in err
    assert "(from potsawee/speakbench-v1-labelled-508 row 2 column audio_b)" in err
    assert "item 3: audio_data/speakbench508_audio/3/instruction.wav: missing from the source" in err
    assert "item 1" not in err
    assert (out / "audio_data/speakbench508_audio/1/audio_b.wav").is_file()  # the good items' work is kept


def test_a_label_that_is_no_label_stops_before_any_audio_is_written(tmp_path, snapshot):
    root, _ = snapshot
    labels = speakbench_labels(tmp_path / "bad.json", change={1: {"label": {"overall": "a"}}})
    with pytest.raises(PrepareError, match="item 1: label.overall = 'a' is not"):
        prepare_speakbench(tmp_path / "bench", root, labels, progress=False)
    assert not list((tmp_path / "bench").rglob("*.wav")) if (tmp_path / "bench").exists() else True


def test_audiojudges_prepared_audio_data_folder_is_copied_as_it_is(tmp_path, snapshot):
    root, labels = snapshot
    first = tmp_path / "first"
    prepare_speakbench(first, root, labels, progress=False)
    # AudioJudge's preparation leaves audio_data/ beside its datasets/: give that folder.
    done = prepare_speakbench(tmp_path / "again", first / "audio_data", labels, progress=False)
    assert done.items == 3
    for path in (first / "audio_data").rglob("*.wav"):
        assert sha256_file(path) == sha256_file(tmp_path / "again" / path.relative_to(first))
    record = json.loads((tmp_path / "again" / "SOURCE.json").read_text())
    assert "paths alone" in record["notes"][0] and len(record["sources"][1]["files"]) == 9


def test_without_network_the_download_stops_at_once_with_the_fix(tmp_path, snapshot, monkeypatch, capsys):
    _, labels = snapshot
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("TRACE_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["prepare", "speakbench", str(tmp_path / "a"), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "HF_HUB_OFFLINE is set" in err and "--labels FILE" in err and "9cb2a59" in err
    assert main(["prepare", "speakbench", str(tmp_path / "b"), "--labels", str(labels), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "potsawee/speakbench-v1-labelled-508: HF_HUB_OFFLINE is set" in err and "--from PATH" in err
    assert not os.path.exists(tmp_path / "b" / "manifest.json")


def test_the_pipeline_runs_on_the_prepared_folder(tmp_path, snapshot):
    root, labels = snapshot
    out = tmp_path / "bench"
    assert prepare(out, root, labels) == 0
    assert (
        main(["blueprints", str(out), "--profile", "cpu", "--workers", "0", "--only", "loudness,pitch", "--quiet"]) == 0
    )
    run = tmp_path / "run"
    assert main(["judge", "--bench", str(out), "--model", "cues", "--out", str(run), "--quiet"]) == 0
    statuses = [json.loads(line)["status"] for line in (run / "results.jsonl").read_text().splitlines()]
    assert len(statuses) == 3
    assert main(["evaluate", str(run)]) == 0
    assert (run / "evaluation" / "metrics.json").is_file()
    assert SENTENCES  # the speech the blueprints were made from
