"""Reading a run folder back: one reader for the judge's resume, `fuse` and `evaluate`, which reports
every line it cannot use (with its line number) instead of dropping it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from llm_server import write_benchmark

from trace_eval.cli import main
from trace_eval.judge.runfolder import RunFolderError, read_results, read_run_folder

GOOD = {"content": "1", "voice_quality": "1", "paralinguistics": "1"}


def _write(path: Path, *lines: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_every_unusable_line_is_reported_with_its_number(tmp_path):
    results = _write(
        tmp_path / "results.jsonl",
        json.dumps({"id": "a", "status": "error"}),
        "",
        "not json",
        json.dumps(["a list"]),
        json.dumps({"status": "ok"}),
        json.dumps({"id": "a", "status": "ok", "verdicts": GOOD}),
        '{"id": "b", "status": "ok", "verd',
    )  # cut short by an interruption
    read = read_results(results)
    assert read.problems == [
        "results.jsonl line 3: not JSON (Expecting value); skipped",
        "results.jsonl line 4: no id; skipped",
        "results.jsonl line 5: no id; skipped",
        "id a: appears more than once; the last line is used",
        "results.jsonl line 7: not JSON (Unterminated string starting at); skipped",
    ]
    assert [r["status"] for r in read.records] == ["error", "ok"]  # every usable line, in file order
    assert read.latest() == {"a": {"id": "a", "status": "ok", "verdicts": GOOD}}  # the last line of an id wins
    assert read_results(tmp_path / "absent.jsonl").records == []


def test_a_run_folder_needs_results_and_a_readable_config(tmp_path):
    with pytest.raises(RunFolderError, match="no results.jsonl"):
        read_run_folder(tmp_path)
    _write(tmp_path / "results.jsonl", json.dumps({"id": "a", "status": "ok", "verdicts": GOOD}), "{")
    folder = read_run_folder(tmp_path)  # no config.json, no summary.json: a hand-made run
    assert (folder.config, folder.summary, list(folder.records)) == ({}, {}, ["a"])
    assert folder.problems == [
        "results.jsonl line 2: not JSON (Expecting property name enclosed in double quotes); skipped"
    ]
    _write(tmp_path / "config.json", "{bad")
    with pytest.raises(RunFolderError, match="config.json: not JSON"):
        read_run_folder(tmp_path)


def test_resume_and_fuse_report_a_line_cut_short(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("TRACE_JUDGE_MODEL", raising=False)
    bench = write_benchmark(tmp_path / "bench", 3)
    out = tmp_path / "run"
    assert main(["judge", "--bench", str(bench), "--out", str(out), "--quiet"]) == 0
    capsys.readouterr()
    lines = (out / "results.jsonl").read_text().splitlines()
    (out / "results.jsonl").write_text("\n".join(lines[:2]) + "\n" + lines[2][:30])  # interrupted mid-line

    assert main(["judge", "--bench", str(bench), "--out", str(out), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert f"warning: {out}: results.jsonl line 3: not JSON" in err  # said, then judged again
    assert "2 pair(s) already judged" in err
    assert [r["id"] for r in read_results(out / "results.jsonl").records] == [json.loads(line)["id"] for line in lines]

    with open(out / "results.jsonl", "a") as f:
        f.write("garbage\n")
    assert main(["fuse", str(out), "--fusion", "vote"]) == 0
    assert f"warning: {out}: results.jsonl line 4: not JSON (Expecting value); skipped" in capsys.readouterr().err
