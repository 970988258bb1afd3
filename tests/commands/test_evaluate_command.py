"""`python -m trace_eval evaluate` on runs judged from the command line: what it says of the items it did
not score, and of human labels whose winners sit in one position."""

from __future__ import annotations

import json
from pathlib import Path

from llm_server import Fail, LLMServer, PairSpec, Reply, blueprint, prompt_text, verdict_json, write_benchmark

from trace_eval.cli import main

LABEL = {"content": "1", "voice_quality": "1", "paralinguistics": "1", "overall": "1"}


def _bench_of_four(root: Path) -> Path:
    """Four labelled pairs: "whole", "unmeasured" (answer 1's speech quality was not measured), "refused" and
    "gone", whose answer 2 does not exist."""
    specs = [
        PairSpec(
            id=name,
            response_1=blueprint(f"{name} one", p808=None if name == "unmeasured" else 3.6),
            response_2=blueprint(f"{name} two", p808=2.0),
            label=LABEL,
        )
        for name in ("whole", "unmeasured", "refused", "gone")
    ]
    bench = write_benchmark(root, specs)
    manifest = json.loads((bench / "manifest.json").read_text())
    manifest[3]["audio2_path"] = "audio/does_not_exist.wav"
    (bench / "manifest.json").write_text(json.dumps(manifest))
    return bench


def _by_pair(body: dict) -> Reply | Fail:
    """The backbone's answer: a verdict, prose that is none, or a rejected request."""
    text = prompt_text(body)
    if "unmeasured one" in text:
        return Reply("Response 1 sounds fine to me.")
    if "refused one" in text:
        return Fail(400, "request rejected")
    return Reply(verdict_json("1", "1", "1"))


def test_items_without_a_score_are_called_what_they_are(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TRACE_CACHE_DIR", str(tmp_path / "cache"))
    bench = _bench_of_four(tmp_path / "bench")
    cues, model = tmp_path / "cues", tmp_path / "model"
    assert (
        main(["judge", "--bench", str(bench), "--model", "cues", "--skip-failed", "--out", str(cues), "--quiet"]) == 0
    )
    with LLMServer(responder=_by_pair) as server:
        assert (
            main(
                [
                    "judge",
                    "--bench",
                    str(bench),
                    "--model",
                    "openai/judge",
                    "--api-base",
                    server.api_base,
                    "--skip-failed",
                    "--out",
                    str(model),
                    "--quiet",
                ]
            )
            == 0
        )
    capsys.readouterr()

    assert main(["evaluate", str(cues)]) == 0
    out = capsys.readouterr().out
    assert "scored 2 of 4 judged item(s); excluded 2: 1 undetermined, 1 skipped\n" in out
    assert "failed" not in out

    assert main(["evaluate", str(model)]) == 0
    out = capsys.readouterr().out
    assert "scored 1 of 4 judged item(s); excluded 3: 1 invalid, 1 failed, 1 skipped\n" in out
    report = (model / "evaluation" / "report.md").read_text()
    assert "| model | openai/judge | cap | 4 | 1 | 0 | 1 | 1 | 1 | 0 |" in report
    assert "| gone | skipped | audio/does_not_exist.wav does not exist |" in report
    assert "| refused | failed |" in report and "| unmeasured | invalid |" in report
    items = json.loads((model / "evaluation" / "metrics.json").read_text())["runs"][0]["items"]
    assert (items["undetermined"], items["invalid"], items["failed"], items["skipped"]) == (0, 1, 1, 1)


def test_lopsided_human_labels_are_warned_about_with_the_baseline(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TRACE_CACHE_DIR", str(tmp_path / "cache"))
    labels = [LABEL] * 7 + [{**LABEL, "overall": "2"}, {**LABEL, "overall": "both_bad"}]
    bench = write_benchmark(
        tmp_path / "bench",
        [
            PairSpec(
                id=f"p{n}",
                response_1=blueprint(f"answer {n} one"),
                response_2=blueprint(f"answer {n} two"),
                label=label,
            )
            for n, label in enumerate(labels)
        ],
    )
    with LLMServer(default=Reply(verdict_json("1", "1", "1"))) as server:  # a judge that always says "1"
        assert (
            main(
                [
                    "judge",
                    "--bench",
                    str(bench),
                    "--model",
                    "openai/judge",
                    "--api-base",
                    server.api_base,
                    "--out",
                    str(tmp_path / "run"),
                    "--quiet",
                ]
            )
            == 0
        )
    capsys.readouterr()

    assert main(["evaluate", str(tmp_path / "run")]) == 0
    captured = capsys.readouterr()
    assert "4-way 77.8%" in captured.out
    assert "overall winners in position 1 / 2: this run 9 / 0, humans 7 / 1" in captured.out
    assert (
        "warning: the human overall winners are lopsided (7 in position 1, 1 in position 2 (88% / 12%), above "
        '70% in one position): a judge that always answers "1" scores 77.8% 4-way here (87.5% on the 8 '
        "winners)"
    ) in captured.err
    metrics = json.loads((tmp_path / "run" / "evaluation" / "metrics.json").read_text())
    human = metrics["positions"]["human"]["overall"]
    assert (human["1"], human["2"], human["lopsided"], human["majority"]) == (7, 1, True, "1")
    report = (tmp_path / "run" / "evaluation" / "report.md").read_text()
    assert "Warning: the human overall winners are lopsided" in report


def test_balanced_human_labels_raise_no_warning(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TRACE_CACHE_DIR", str(tmp_path / "cache"))
    labels = [{**LABEL, "overall": winner} for winner in ("1", "2", "1", "2")]
    bench = write_benchmark(
        tmp_path / "bench",
        [
            PairSpec(
                id=f"p{n}",
                response_1=blueprint(f"answer {n} one"),
                response_2=blueprint(f"answer {n} two"),
                label=label,
            )
            for n, label in enumerate(labels)
        ],
    )
    with LLMServer(default=Reply(verdict_json("1", "1", "1"))) as server:
        assert (
            main(
                [
                    "judge",
                    "--bench",
                    str(bench),
                    "--model",
                    "openai/judge",
                    "--api-base",
                    server.api_base,
                    "--out",
                    str(tmp_path / "run"),
                    "--quiet",
                ]
            )
            == 0
        )
    capsys.readouterr()
    assert main(["evaluate", str(tmp_path / "run")]) == 0
    captured = capsys.readouterr()
    assert "this run 4 / 0, humans 2 / 2" in captured.out and "lopsided" not in captured.err
