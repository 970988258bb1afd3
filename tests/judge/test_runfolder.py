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


def test_two_judges_into_one_folder_never_lose_a_pair(tmp_path):
    """Two real `judge` processes started together with one --out: one judges, the other stops at once and
    names the process that holds the folder; run again, it resumes. Every pair is kept, once."""
    import os
    import subprocess
    import sys

    from llm_server import LLMServer, PairSpec, Reply, blueprint, verdict_json

    pairs = [PairSpec(id=f"p{i:02d}", response_1=blueprint(f"answer {i} one")) for i in range(24)]
    bench = write_benchmark(tmp_path / "bench", pairs)
    out = tmp_path / "run"
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "TRACE_JUDGE_API_KEY": "dummy", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env["TRACE_CACHE_DIR"] = str(tmp_path / "cache")
    with LLMServer(responder=lambda body: Reply(verdict_json("1", "both_good", "2"), delay_s=0.25)) as server:
        command = [
            sys.executable,
            "-m",
            "trace_eval",
            "judge",
            "--bench",
            str(bench),
            "--model",
            "openai/test-judge",
            "--api-base",
            server.api_base,
            "--concurrency",
            "1",
            "--out",
            str(out),
            "--quiet",
        ]
        judges = [
            subprocess.Popen(command, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(2)
        ]
        ended = [(p, *p.communicate(timeout=300)) for p in judges]
        codes = sorted(p.returncode for p in judges)
        assert codes == [0, 2], [(p.returncode, err) for p, _, err in ended]
        [(winner, _, _)] = [e for e in ended if e[0].returncode == 0]
        [(_, _, refused)] = [e for e in ended if e[0].returncode == 2]
        assert f"{out} is in use by process {winner.pid} (judge, since" in refused, refused
        assert "Wait for it to end (then run again to resume), or give another --out" in refused
        again = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    ids = [record["id"] for record in read_results(out / "results.jsonl").records]
    assert sorted(ids) == [p.id for p in pairs]  # every pair, once
    assert (out / ".lock").read_text() == ""  # released: nobody holds it
