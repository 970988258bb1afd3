"""Full-Duplex-Bench v1.5's timing task (`--task timing`) on the user-interruption samples built from recorded
English speech (planted_sessions.py): a system that stops 0.3 s after the user begins and answers 0.8 s after the
user's end, and one that talks on. Compat gives get_timing.py's intervals (checked against the script by
scripts/full_duplex_bench_compat.py, 0 differences); the default gives back what was planted."""

from __future__ import annotations

import json

import pytest
from planted_sessions import full_duplex_bench_samples

from trace_eval.sessions.full_duplex_bench import score_task

TOLERANCE_S = 0.08


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("timing")
    planted = full_duplex_bench_samples(root, "en")
    return root / "user_interruption", {k.split("/")[1]: v for k, v in planted.items() if "interruption" in k}


def _samples(result: dict) -> dict[str, dict]:
    return {s["sample"].rsplit("/", 1)[-1]: s for s in result["samples"]}


def test_compat_gives_the_scripts_intervals(built):
    root, planted = built
    samples = _samples(score_task(root, "timing", compat="full-duplex-bench"))
    stops = samples["stops-and-answers"]
    # The overlap of the user's interruption and the system: from the barge-in to where the system stopped.
    ((start, end),) = stops["latency_stop_list"]
    assert abs(start - planted["stops-and-answers"]["barge_in"]) <= TOLERANCE_S
    assert abs(end - planted["stops-and-answers"]["system_end"]) <= TOLERANCE_S
    # The response after the interruption: from its end to the answer.
    user_end, answer = stops["latency_resp_list"][-1]
    assert abs(answer - user_end - 0.8) <= TOLERANCE_S
    ((start, end),) = samples["talks-through"]["latency_stop_list"]
    assert end - start > 2  # the system talked on through the whole interruption


def test_the_default_reads_barge_ins_and_answers_from_the_timeline(built, capsys):
    from trace_eval.cli import main

    root, planted = built
    result = score_task(root, "timing")
    samples = _samples(result)
    (barge,) = samples["stops-and-answers"]["barge_ins"]
    assert barge["stopped"] and abs(barge["stop_latency_s"] - 0.3) <= TOLERANCE_S
    assert abs(samples["stops-and-answers"]["answers"][-1]["latency_s"] - 0.8) <= TOLERANCE_S
    (barge,) = samples["talks-through"]["barge_ins"]
    assert not barge["stopped"] and barge["stop_latency_s"] > 2
    assert samples["talks-through"]["unanswered"] == 1
    summary = result["summary"]
    assert summary["stopped_rate"]["k"] == 1 and summary["stopped_rate"]["n"] == 2
    # The command: every folder of two channels is the task's sample, the annotations notwithstanding.
    assert main(["sessions", str(root), "--task", "timing", "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "timing (2 samples, default)" in printed and "stop_latency_s" in printed
    out = root.parent / "timing.json"
    assert main(["sessions", str(root), "--task", "timing", "--compat", "full-duplex-bench", "--out", str(out)]) == 0
    written = json.loads(out.read_text())["tasks"]["timing"]["samples"]
    assert all("latency_stop_list" in s and "latency_resp_list" in s for s in written)
