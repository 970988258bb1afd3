"""`prepare dataset`: a local Hugging Face audio dataset (save_to_disk or parquet) with a column map."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import soundfile as sf
from release_snapshots import SENTENCES, to_mp3

from trace_eval.cli import main

AUDIO = pa.struct([("bytes", pa.binary()), ("path", pa.string())])


def style_table(clips, tmp_path) -> pa.Table:
    mp3 = to_mp3(clips[(2, 24000)], tmp_path / "answer.mp3").read_bytes()
    return pa.table(
        {
            "uid": ["s1", "s2"],
            "prompt": [SENTENCES[0], SENTENCES[3]],
            "prompt_audio": pa.array(
                [{"bytes": clips[(0, 16000)], "path": "p1.wav"}, {"bytes": clips[(3, 16000)], "path": "p2.wav"}],
                type=AUDIO,
            ),
            "response_a": pa.array(
                [{"bytes": clips[(1, 16000)], "path": "a1.wav"}, {"bytes": mp3, "path": "a2.mp3"}], type=AUDIO
            ),
            "response_b": pa.array(
                [{"bytes": clips[(2, 24000)], "path": "b1.wav"}, {"bytes": None, "path": "b2.wav"}], type=AUDIO
            ),  # not embedded: a file beside
            "system_a": ["x", "y"],
            "system_b": ["y", "x"],
            "preference": ["1", "both_bad"],
        }
    )


def save_to_disk(table: pa.Table, folder) -> None:
    """The layout `Dataset.save_to_disk` writes: Arrow stream files named in state.json."""
    folder.mkdir(parents=True)
    with pa.OSFile(str(folder / "data-00000-of-00001.arrow"), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    (folder / "state.json").write_text(
        json.dumps({"_data_files": [{"filename": "data-00000-of-00001.arrow"}], "_split": "train"})
    )
    (folder / "dataset_info.json").write_text("{}")


MAP = [
    "--map",
    "id=uid",
    "--map",
    "instruction_text=prompt",
    "--map",
    "instruction_path=prompt_audio",
    "--map",
    "audio1_path=response_a",
    "--map",
    "audio2_path=response_b",
    "--map",
    "model_a=system_a",
    "--map",
    "model_b=system_b",
    "--map",
    "label.overall=preference",
]


def test_a_save_to_disk_dataset_becomes_a_benchmark_folder(tmp_path, clips):
    folder = tmp_path / "styleset"
    save_to_disk(style_table(clips, tmp_path), folder)
    (folder / "b2.wav").write_bytes(clips[(5, 16000)])
    out = tmp_path / "bench"
    assert main(["prepare", "dataset", str(out), "--from", str(folder), *MAP, "--quiet"]) == 0
    items = json.loads((out / "manifest.json").read_text())
    assert items[1] == {
        "id": "s2",
        "instruction_text": SENTENCES[3],
        "instruction_path": "audio/s2/instruction.wav",
        "audio1_path": "audio/s2/audio1.wav",
        "audio2_path": "audio/s2/audio2.wav",
        "model_a": "y",
        "model_b": "x",
        "label": {"overall": "both_bad"},
    }
    assert sf.info(out / "audio/s2/audio1.wav").samplerate == 24000  # the mp3, decoded at its own rate
    assert sf.info(out / "audio/s2/audio1.wav").subtype == "PCM_16"
    assert sf.info(out / "audio/s1/audio2.wav").samplerate == 24000
    record = json.loads((out / "SOURCE.json").read_text())
    assert record["sources"][0]["files"][0]["path"] == "data-00000-of-00001.arrow"


def test_a_parquet_dataset_and_a_missing_cell(tmp_path, clips, capsys):
    folder = tmp_path / "parquet"
    folder.mkdir()
    pq.write_table(style_table(clips, tmp_path), folder / "train-00000-of-00001.parquet")
    out = tmp_path / "bench"
    assert main(["prepare", "dataset", str(out), "--from", str(folder), *MAP, "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "item s2: audio/s2/audio2.wav: missing from the source" in err and "b2.wav does not exist" in err
    assert main(["prepare", "dataset", str(out), "--from", str(folder), *MAP, "--quiet", "--skip-bad"]) == 0
    assert [i["id"] for i in json.loads((out / "manifest.json").read_text())] == ["s1"]


def test_a_column_map_without_answers_says_what_it_needs(tmp_path, clips, capsys):
    folder = tmp_path / "styleset"
    save_to_disk(style_table(clips, tmp_path), folder)
    assert main(["prepare", "dataset", str(tmp_path / "b"), "--from", str(folder), "--map", "id=uid"]) == 1
    assert "the Audio columns of this dataset: prompt_audio, response_a, response_b" in capsys.readouterr().err
    assert (
        main(
            [
                "prepare",
                "dataset",
                str(tmp_path / "b"),
                "--from",
                str(folder),
                "--map",
                "audio1_path=nope",
                "--map",
                "audio2_path=response_b",
            ]
        )
        == 1
    )
    assert "--map names no column 'nope'; the columns: uid, prompt, prompt_audio" in capsys.readouterr().err


def test_a_dataset_dict_folder_is_read_by_split(tmp_path, clips, capsys):
    """`DatasetDict.save_to_disk`: dataset_dict.json and one save_to_disk folder per split."""
    folder = tmp_path / "dict"
    save_to_disk(style_table(clips, tmp_path), folder / "test")
    (folder / "test" / "b2.wav").write_bytes(clips[(5, 16000)])
    (folder / "dataset_dict.json").write_text(json.dumps({"splits": ["test"]}))
    assert main(["prepare", "dataset", str(tmp_path / "a"), "--from", str(folder), *MAP]) == 1
    assert "no split 'train'; it has test (--split NAME)" in capsys.readouterr().err
    assert main(["prepare", "dataset", str(tmp_path / "b"), "--from", str(folder), *MAP, "--split", "test"]) == 0
    assert len(json.loads((tmp_path / "b" / "manifest.json").read_text())) == 2


def test_audio_the_rows_point_to_is_fingerprinted_and_a_local_source_recorded_as_local(tmp_path, clips, capsys):
    folder = tmp_path / "parquet"
    folder.mkdir()
    pq.write_table(style_table(clips, tmp_path), folder / "train-00000-of-00001.parquet")
    (folder / "b2.wav").write_bytes(clips[(3, 16000)])  # the answer stored as a path, beside the table
    out = tmp_path / "bench"
    assert main(["prepare", "dataset", str(out), "--from", str(folder), *MAP, "--quiet"]) == 0
    record = json.loads((out / "SOURCE.json").read_text())["sources"][0]
    assert record["repo"] is None and record["local"] == str(folder.resolve())
    assert [f["path"] for f in record["audio_files"]] == ["b2.wav"]
    before = (out / "audio" / "s2" / "audio2.wav").read_bytes()
    # The referenced wav changes: the re-run sees it, and writes the new audio.
    (folder / "b2.wav").write_bytes(clips[(0, 16000)])
    capsys.readouterr()
    assert main(["prepare", "dataset", str(out), "--from", str(folder), *MAP, "--quiet"]) == 0
    assert "already complete" not in capsys.readouterr().out
    assert (out / "audio" / "s2" / "audio2.wav").read_bytes() != before
    assert main(["prepare", "dataset", str(out), "--from", str(tmp_path / "parquett"), *MAP, "--quiet"]) == 1
    assert f"--from {tmp_path / 'parquett'}: not found; did you mean {folder}?" in capsys.readouterr().err
