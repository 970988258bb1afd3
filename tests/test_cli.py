"""What the command line says first: the top-level help, a reader that goes away, and what `evaluate`
says about the items it did not score."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from trace_eval.cli import EXAMPLES, VERBS, main

ROOT = Path(__file__).resolve().parent.parent
MINI = ROOT / "examples" / "mini"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def test_the_top_level_help_lists_the_tasks_in_order_with_an_example_each(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert VERBS == (
        "prepare",
        "label",
        "blueprints",
        "judge",
        "fuse",
        "evaluate",
        "calibrate",
        "leaderboard",
        "export",
        "view",
        "audit",
        "show",
        "store",
        "live",
        "sessions",
    )
    places = [out.index(f"\n  {verb} ") for verb in VERBS]
    assert places == sorted(places)
    for verb in VERBS:
        assert EXAMPLES[verb].startswith(f"python -m trace_eval {verb} ") and EXAMPLES[verb] in out
    assert "module" not in out


def test_no_task_prints_the_help(capsys):
    assert main([]) == 2
    assert "tasks (python -m trace_eval TASK --help" in capsys.readouterr().out


def _closed_pipe_run(args: list[str], cwd: Path = ROOT) -> tuple[int, str]:
    """Run the CLI with stdout a pipe nobody reads (as `... | head` once head has exited)."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "trace_eval", *args],
            stdout=write,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=ENV,
            text=True,
            timeout=300,
        )
    finally:
        os.close(write)
    return done.returncode, done.stderr


def test_a_reader_that_goes_away_ends_the_output_quietly(tmp_path):
    bench = tmp_path / "bench"
    bench.mkdir()
    t = np.arange(16000) / 16000
    for name in ("q", "a", "b"):
        sf.write(bench / f"{name}.wav", 0.1 * np.sin(2 * np.pi * 220 * t), 16000)
    (bench / "manifest.json").write_text(
        json.dumps([{"id": "p", "instruction_path": "q.wav", "audio1_path": "a.wav", "audio2_path": "b.wav"}])
    )
    assert main(["blueprints", str(bench), "--only", "pitch", "--quiet"]) == 0
    # 1, as Python itself exits on EPIPE; argparse ignores a failed write of the help and exits 0.
    for args, expected in (
        (["show", str(bench / "a.wav")], 1),
        (["evaluate", "--oracle", str(MINI)], 1),
        (["--help"], 0),
    ):
        code, err = _closed_pipe_run(args)
        assert err == "" and code == expected, (args, err)


def _run_folder(path: Path, bench: Path, records: list[dict], rubric: str = "trace") -> Path:
    path.mkdir()
    (path / "config.json").write_text(json.dumps({"bench": str(bench), "rubric": rubric, "fusion": "cap"}))
    (path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_evaluate_says_how_many_items_were_excluded_and_why(tmp_path, capsys):
    bench = tmp_path / "bench"
    shutil.copytree(MINI, bench, ignore=shutil.ignore_patterns("blueprints"))
    items = json.loads((bench / "manifest.json").read_text())
    del items[0]["label"]["overall"]
    (bench / "manifest.json").write_text(json.dumps(items))
    good = {"content": "both_good", "voice_quality": "both_good", "paralinguistics": "both_good"}
    records = [{"id": item["index"], "status": "ok", "verdicts": good} for item in items[:5]]
    records[1] = {"id": items[1]["index"], "status": "invalid", "reason": "not JSON", "verdicts": None}
    records.append({"id": "stranger", "status": "ok", "verdicts": good})
    run = _run_folder(tmp_path / "run", bench, records)
    assert main(["evaluate", str(run)]) == 0
    out = capsys.readouterr().out
    assert (
        "scored 3 of 6 judged item(s); excluded 3: 1 without a human overall label, 1 invalid, "
        f"1 not in the manifest; {len(items) - 5} manifest item(s) have no result in this run"
    ) in out


def test_evaluate_of_a_complete_run_says_every_item_was_scored(tmp_path, capsys):
    bench = tmp_path / "bench"
    shutil.copytree(MINI, bench, ignore=shutil.ignore_patterns("blueprints"))
    items = json.loads((bench / "manifest.json").read_text())
    records = [{"id": item["index"], "status": "ok", "verdicts": item["label"] | {"overall": None}} for item in items]
    for record in records:
        del record["verdicts"]["overall"]
    run = _run_folder(tmp_path / "run", bench, records)
    assert main(["evaluate", str(run)]) == 0
    out = capsys.readouterr().out
    assert f"  scored {len(items)} of {len(items)} judged item(s)\n" in out


def test_evaluate_of_another_rubric_says_what_it_left_out(tmp_path, capsys):
    bench = tmp_path / "bench"
    shutil.copytree(ROOT / "examples" / "mini-style", bench, ignore=shutil.ignore_patterns("blueprints"))
    items = json.loads((bench / "manifest.json").read_text())
    single = [item for item in items if "style_following" in item["label"]]
    records = [
        {"id": item["id"], "status": "ok", "verdicts": {"style_following": n}}
        for n, item in enumerate(single[:4], start=2)
    ]
    records[0] = {"id": single[0]["id"], "status": "error", "reason": "timed out", "verdicts": None}
    run = _run_folder(tmp_path / "run", bench, records, rubric="style")
    assert main(["evaluate", str(run)]) == 0
    out = capsys.readouterr().out
    assert (
        f"scored 3 of 4 judged item(s); excluded 1: 1 failed; {len(items) - 4} manifest "
        "item(s) have no result in this run"
    ) in out
    assert "human labels among the 4 judged manifest item(s): style_following 4, style 0, realism 0" in out
