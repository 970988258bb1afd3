"""`prepare sagelm` offline: LLaMA-Factory JSON rows (one per aspect) grouped into multi-aspect items."""

from __future__ import annotations

import json

import pytest

from trace_eval.audio import sha256_file
from trace_eval.bench import load_benchmark
from trace_eval.cli import main
from trace_eval.rubrics import load_rubric

TEMPLATE = (
    "Below are two responses for a given task. The task is defined by the Instruction. Evaluate in terms of "
    "**{aspect}** and indicate a better response using 1, 2 or Tie.\n### Instruction:\n{question}\n\n"
    "### Response 1:\n<audio>\n\n### Response 2:\n<audio>\n\n"
)


def row(aspect, question, answer, audios):
    return {
        "instruction": TEMPLATE.format(aspect=aspect, question=question),
        "input": "",
        "output": f"{answer}\nResponse {answer} is better because it says so.",
        "audios": audios,
    }


def write_sagelm(tmp_path, clips, semantic_answers=("1", "Tie", "2", "1")):
    audio = tmp_path / "SageLM_testset_audio"
    semantic, acoustic = [], []
    for n, name in enumerate(("flan-5842", "sharegpt-3240")):
        pair = [f"Audio/stage1/{name}-1.wav", f"Audio/stage1/{name}-3.wav"]
        for aspect, answer in zip(
            ("helpfulness", "honesty", "instruction_following", "truthfulness"), semantic_answers
        ):
            semantic.append(row(aspect, f"Question {n}: what is two plus two?", answer, pair))
    pair = ["Audio/stage2/Gender/evol_instruct-13-1-audio1.wav", "Audio/stage2/Gender/evol_instruct-13-1-audio2.wav"]
    acoustic.append(row("gender instruction following", "Read this text with a female voice: hello.", "2", pair))
    for n, rel in enumerate(sorted({a for r in semantic + acoustic for a in r["audios"]})):
        (audio / rel).parent.mkdir(parents=True, exist_ok=True)
        (audio / rel).write_bytes(clips[(n % 9, 16000)])
    (tmp_path / "test_semantic.json").write_text(json.dumps(semantic, indent=4))
    (tmp_path / "test_acoustic.json").write_text(json.dumps(acoustic, indent=4))
    return audio, [tmp_path / "test_semantic.json", tmp_path / "test_acoustic.json"]


def test_rows_of_one_pair_become_one_multi_aspect_item_with_its_audio(tmp_path, clips):
    audio, labels = write_sagelm(tmp_path, clips)
    out = tmp_path / "bench"
    assert main(["prepare", "sagelm", str(out), "--from", str(audio), "--labels", *map(str, labels), "--quiet"]) == 0
    items = json.loads((out / "manifest.json").read_text())
    assert [i["id"] for i in items] == ["semantic-0000", "semantic-0001", "acoustic-0000"]
    first = items[0]
    assert first["label"] == {"helpfulness": "1", "honesty": "tie", "instruction_following": "2", "truthfulness": "1"}
    assert first["instruction_text"] == "Question 0: what is two plus two?" and "instruction_path" not in first
    assert items[2]["label"] == {"speech_instruction_following": "2"}
    assert items[2]["aspect"] == "gender instruction following"
    for item in items:
        for field in ("audio1_path", "audio2_path"):
            assert sha256_file(out / item[field]) == sha256_file(audio / item[field])
    bench = load_benchmark(out, rubric=load_rubric("multi-aspect"))  # the labels are the rubric's
    assert bench.pairs[1].label["helpfulness"] == "1"


def test_a_row_whose_answer_is_no_label_is_named(tmp_path, clips, capsys):
    audio, labels = write_sagelm(tmp_path, clips, semantic_answers=("1", "Tie", "maybe", "1"))
    assert main(["prepare", "sagelm", str(tmp_path / "b"), "--from", str(audio), "--labels", str(labels[0])]) == 1
    err = capsys.readouterr().err
    assert "item semantic#2: output starts 'maybe', not 1, 2 or Tie" in err
    assert "item semantic#6: output starts 'maybe'" in err


def test_the_pipeline_runs_on_the_prepared_folder(tmp_path, clips):
    audio, labels = write_sagelm(tmp_path, clips)
    out = tmp_path / "bench"
    assert main(["prepare", "sagelm", str(out), "--from", str(audio), "--labels", *map(str, labels), "--quiet"]) == 0
    assert (
        main(["blueprints", str(out), "--profile", "cpu", "--workers", "0", "--only", "loudness,pitch", "--quiet"]) == 0
    )
    run = tmp_path / "run"
    assert main(["judge", "--bench", str(out), "--model", "cues", "--out", str(run), "--quiet"]) == 0
    assert len((run / "results.jsonl").read_text().splitlines()) == 3
    assert main(["evaluate", str(run)]) == 0


@pytest.mark.parametrize("sets", ["semantic,accoustic", ""])
def test_sets_are_checked(tmp_path, sets, capsys):
    assert main(["prepare", "sagelm", str(tmp_path / "b"), "--sets", sets]) == 2
    assert "--sets: semantic, acoustic or both" in capsys.readouterr().err
