"""Backbones by name: the built-in ones, a third-party one found through its package's entry point,
and the error for a name nobody registered."""

from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path

import pytest
from llm_server import write_benchmark

from trace_eval.judge import JudgeError, JudgeOptions, run_judge
from trace_eval.judge.backbones import (
    ENTRY_POINT_GROUP,
    BackboneSettings,
    FatalBackboneError,
    UnknownBackboneError,
    available_backbones,
    backbone_for,
    make_backbone,
)
from trace_eval.judge.runfolder import read_results
from trace_eval.rubrics import load_rubric

TRACE = load_rubric("trace")

# A package that adds a backbone: one module and the entry point its metadata declares.
ECHO_MODULE = '''
import json

from trace_eval.judge.backbones import Backbone, Completion


class EchoBackbone(Backbone):
    """Says "1" on every dimension it is asked about, and counts the times it was asked."""

    asked = 0

    async def complete(self, messages, case, response_format, max_tokens):
        type(self).asked += 1
        labels = {dimension: "1" for dimension in case.dimensions}
        return Completion(json.dumps({"reasoning": f"echo at {max_tokens} tokens", **labels}), 10, 5)

    def recorded_settings(self):
        return {"echo": {"says": "1"}}
'''


@pytest.fixture
def echo_package(tmp_path, monkeypatch):
    """An installed distribution `echo-backbone` declaring backbone `echo` (and trying to take `cues`)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "echo_backbone.py").write_text(ECHO_MODULE)
    info = site / "echo_backbone-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: echo-backbone\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        textwrap.dedent(f"""\
        [{ENTRY_POINT_GROUP}]
        echo = echo_backbone:EchoBackbone
        cues = echo_backbone:EchoBackbone
        gone = echo_backbone_uninstalled:GoneBackbone
        """)
    )
    monkeypatch.syspath_prepend(str(site))
    yield
    sys.modules.pop("echo_backbone", None)


def settings(model: str, **fields) -> BackboneSettings:
    return BackboneSettings(model=model, rubric=TRACE, prompt=TRACE.prompt(None), **fields)


def test_the_built_in_backbones_and_which_one_a_model_id_goes_to():
    assert {"cues", "litellm"} <= set(available_backbones())
    assert backbone_for("cues") == "cues"
    assert backbone_for("openai/gpt-4o") == backbone_for("litellm") == "litellm"
    assert make_backbone("cues", settings("cues")).recorded_settings()["cues"]["version"]
    litellm = make_backbone("litellm", settings("openai/gpt-4o", check_key=False))
    assert litellm.cacheable and litellm.prices_per_token() is not None


def test_an_unknown_backbone_name_lists_the_choices():
    with pytest.raises(UnknownBackboneError, match=r"unknown backbone 'nope'; expected one of: cues, litellm"):
        make_backbone("nope", settings("nope"))


def test_a_backbone_that_cannot_judge_the_run_says_why():
    style = load_rubric("style")
    with pytest.raises(FatalBackboneError, match="only judges the trace rubric"):
        make_backbone("cues", BackboneSettings(model="cues", rubric=style, prompt=style.prompt(None)))


def test_a_package_adds_a_backbone_through_its_entry_point(echo_package, tmp_path):
    found = available_backbones()
    assert found["echo"].value == "echo_backbone:EchoBackbone"
    assert found["cues"].value == "trace_eval.judge.cues:CuesBackbone"  # a package cannot replace a built-in
    assert backbone_for("echo") == "echo"

    bench = write_benchmark(tmp_path / "bench", 3)
    options = JudgeOptions(
        bench=bench, model="echo", max_tokens=99, cache_dir=tmp_path / "cache", out=tmp_path / "run", progress=False
    )
    outcome = run_judge(options, notice=lambda message: None)
    records = read_results(outcome.out / "results.jsonl").records
    assert [r["status"] for r in records] == ["ok"] * 3
    assert records[0]["verdicts"] == {"content": "1", "voice_quality": "1", "paralinguistics": "1"}
    assert records[0]["reasoning"] == "echo at 99 tokens" and records[0]["tokens"] == {"prompt": 10, "completion": 5}
    config = json.loads((outcome.out / "config.json").read_text())
    assert (config["backbone"], config["model"], config["echo"]) == ("echo", "echo", {"says": "1"})

    import echo_backbone

    assert echo_backbone.EchoBackbone.asked == 3
    again = run_judge(
        JudgeOptions(
            bench=bench,
            model="echo",
            max_tokens=99,
            cache_dir=tmp_path / "cache",
            out=tmp_path / "again",
            progress=False,
        ),
        notice=lambda message: None,
    )
    assert echo_backbone.EchoBackbone.asked == 3  # its answers are cached like any model's
    assert all(r["cache_hit"] for r in read_results(again.out / "results.jsonl").records)


def test_a_backbone_whose_package_is_gone_says_so(echo_package, tmp_path):
    bench = write_benchmark(tmp_path / "bench", 1)
    with pytest.raises(
        JudgeError,
        match=r"backbone 'gone' \(echo_backbone_uninstalled:GoneBackbone\) cannot be "
        r"imported: No module named 'echo_backbone_uninstalled'; install",
    ):
        run_judge(JudgeOptions(bench=bench, model="gone", out=tmp_path / "run", progress=False))


def test_a_run_folder_resumes_only_with_the_settings_its_backbone_recorded(echo_package, tmp_path):
    bench = write_benchmark(tmp_path / "bench", 1)
    run_judge(
        JudgeOptions(bench=bench, model="echo", cache_dir=tmp_path / "cache", out=tmp_path / "run", progress=False),
        notice=lambda message: None,
    )
    config_path = tmp_path / "run" / "config.json"
    config = json.loads(config_path.read_text())
    config_path.write_text(json.dumps({**config, "echo": {"says": "2"}}))
    with pytest.raises(JudgeError, match=r"other settings \(echo: \{'says': '2'\} -> \{'says': '1'\}\)"):
        run_judge(
            JudgeOptions(bench=bench, model="echo", cache_dir=tmp_path / "cache", out=tmp_path / "run", progress=False),
            notice=lambda message: None,
        )


def test_the_runner_and_the_commands_ask_backbones_and_never_look_at_their_type():
    root = Path(__file__).resolve().parents[2] / "trace_eval"
    paths = [*(root / "judge").glob("*.py"), *(root / "commands").glob("*.py")]
    assert len(paths) > 10
    for path in paths:
        assert not re.search(r"isinstance\([^)]*Backbone", path.read_text(encoding="utf-8")), path
