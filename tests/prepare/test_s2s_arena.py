"""`prepare s2s-arena` offline, from the two dataset repositories as folders of wav and mp3 files."""

from __future__ import annotations

import json

import pytest
from release_snapshots import to_mp3

from trace_eval.audio import sha256_file
from trace_eval.cli import main

# (index, instruction file, its text, model_a, answer a, model_b, answer b)
ITEMS = [
    (
        100,
        "emotion/emotion2-2.wav",
        "[emotion: sad]What should I do now?",
        "speechgpt",
        "SpeechGPT/emotion/emotion2-2.wav",
        "4o_cascade",
        "cascade/emotion/emotion2-2.wav",
    ),
    (
        101,
        "emotion/emotion2-1.mp3",
        "[emotion: happy]What should I do now?",
        "4o",
        "ChatGPT-4o/emotion/emotion2-1/a.wav",
        "4o_cascade",
        "cascade/emotion/emotion2-1.wav",
    ),
    (
        102,
        "emotion/emotion2-2.wav",
        "[emotion: sad]What should I do now?",
        "4o",
        "ChatGPT-4o/emotion/emotion2-2/a.wav",
        "speechgpt",
        "SpeechGPT/emotion/answer_2.wav",
    ),
]


def write_arena(base, clips, items=ITEMS):
    """DIR/input (FreedomIntelligence/S2S-Arena) and DIR/output (FreedomIntelligence/S2S-Arena-output)."""
    for n, (_, question, _, _, answer_a, _, answer_b) in enumerate(items):
        target = base / "input" / question
        target.parent.mkdir(parents=True, exist_ok=True)
        if question.endswith(".mp3"):
            to_mp3(clips[(0, 16000)], target)
        else:
            target.write_bytes(clips[(0, 16000)])
        for k, answer in enumerate((answer_a, answer_b)):
            target = base / "output" / answer
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(clips[(1 + (n + k) % 8, 24000)])
    return base


def write_labels(path, items=ITEMS):
    path.write_text(
        json.dumps(
            [
                {
                    "index": index,
                    "instruction_path": f"input/{question}",
                    "instruction_text": text,
                    "model_a": model_a,
                    "model_b": model_b,
                    "audio1_path": f"output/{answer_a}",
                    "audio2_path": f"output/{answer_b}",
                    "label": {"content": "both_good", "voice_quality": "1", "paralinguistics": "1", "overall": "1"},
                    "instruction_id": f"emotion_{question}",
                }
                for index, question, text, model_a, answer_a, model_b, answer_b in items
            ],
            indent=4,
        )
    )
    return path


def prepare(out, base, labels, *extra) -> int:
    return main(["prepare", "s2s-arena", str(out), "--from", str(base), "--labels", str(labels), "--quiet", *extra])


@pytest.fixture
def arena(tmp_path, clips):
    return write_arena(tmp_path / "arena", clips), write_labels(tmp_path / "s2sarena.json")


def test_the_files_are_copied_as_published_to_the_paths_the_labels_name(tmp_path, arena, capsys):
    base, labels = arena
    out = tmp_path / "bench"
    assert prepare(out, base, labels) == 0
    assert "3 items, 8 clips written" in capsys.readouterr().out  # the shared instruction once
    assert json.loads((out / "manifest.json").read_text()) == json.loads(labels.read_text())
    for item in json.loads(labels.read_text()):
        for field in ("instruction_path", "audio1_path", "audio2_path"):
            prefix, _, rest = item[field].partition("/")
            assert sha256_file(out / item[field]) == sha256_file(base / prefix / rest)
    assert (out / "input/emotion/emotion2-1.mp3").read_bytes()[:2] in (b"ID", b"\xff\xfb", b"\xff\xf3")  # still mp3
    record = json.loads((out / "SOURCE.json").read_text())
    repos = [s["repo"] for s in record["sources"]]
    assert repos == [
        None,
        "hf:datasets/FreedomIntelligence/S2S-Arena",
        "hf:datasets/FreedomIntelligence/S2S-Arena-output",
    ]
    assert {f["path"] for f in record["sources"][1]["files"]} == {"emotion/emotion2-2.wav", "emotion/emotion2-1.mp3"}
    capsys.readouterr()
    assert prepare(out, base, labels) == 0 and "nothing written" in capsys.readouterr().out


def test_a_system_missing_file_and_undecodable_file_are_named_by_item(tmp_path, arena, capsys):
    base, _ = arena
    swapped = list(ITEMS)
    swapped[2] = (
        102,
        "emotion/emotion2-2.wav",
        "[emotion: sad]What should I do now?",
        "speechgpt",
        "ChatGPT-4o/emotion/emotion2-2/a.wav",
        "4o",
        "SpeechGPT/emotion/answer_2.wav",
    )
    labels = write_labels(tmp_path / "swapped.json", swapped)
    (base / "output/cascade/emotion/emotion2-1.wav").unlink()
    (base / "output/cascade/emotion/emotion2-2.wav").write_bytes(b"\x00" * 2000)
    assert prepare(tmp_path / "bench", base, labels) == 1
    err = capsys.readouterr().err
    assert (
        "item 102: model_a is 'speechgpt' but output/ChatGPT-4o/emotion/emotion2-2/a.wav is in output/ChatGPT-4o/"
        in err
    )
    assert "item 101: output/cascade/emotion/emotion2-1.wav: missing from the source" in err
    assert "item 100: output/cascade/emotion/emotion2-2.wav: not decodable audio" in err


def test_from_must_hold_both_repositories(tmp_path, arena, capsys):
    base, labels = arena
    assert prepare(tmp_path / "bench", base / "input", labels) == 1
    assert "expected the two dataset repositories" in capsys.readouterr().err


def test_the_pipeline_runs_on_the_prepared_folder(tmp_path, arena):
    base, labels = arena
    out = tmp_path / "bench"
    assert prepare(out, base, labels) == 0
    assert (
        main(["blueprints", str(out), "--profile", "cpu", "--workers", "0", "--only", "loudness,pitch", "--quiet"]) == 0
    )
    run = tmp_path / "run"
    assert main(["judge", "--bench", str(out), "--model", "cues", "--out", str(run), "--quiet"]) == 0
    assert len((run / "results.jsonl").read_text().splitlines()) == 3
    assert main(["evaluate", str(run)]) == 0
