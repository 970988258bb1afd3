"""Full-Duplex-Bench's backchannel task on samples built from recorded English speech (planted_sessions.py): a
system that says "mm-hm" in the user's pauses, one that then takes the turn, one that says nothing. The reference
distributions are built here, one matching the planted backchannels and one elsewhere (the benchmark's own
`icc_gt_distribution.json` is read from a checkout, never copied: scripts/full_duplex_bench_compat.py --built
checks compat against its script, 0 differences)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from planted_sessions import backchannel_samples

from trace_eval.sessions import SessionError
from trace_eval.sessions.backchannel import BIN_S, coverage, js_divergence, read_reference
from trace_eval.sessions.full_duplex_bench import score_sample, score_task
from trace_eval.sessions.segments import Segment

TOLERANCE_S = 0.08


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("backchannel")
    return root, backchannel_samples(root / "samples")


def _reference(planted: dict, shift_s: float = 0.0) -> dict[str, list[float]]:
    """Each speaker's distribution: people's backchannels where sample 0's were planted (moved by `shift_s`)."""
    bins = int(24 / BIN_S) + 1
    found = coverage([Segment(s + shift_s, e + shift_s) for s, e in planted["0"]["backchannels"]], 24.0)[:bins]
    distribution = (found + 1e-3) / (found + 1e-3).sum()
    return {sample: distribution.tolist() for sample in planted}


def _samples(result: dict) -> dict[str, dict]:
    return {s["sample"].rsplit("/", 1)[-1]: s for s in result["samples"]}


def test_compat_mode_follows_the_benchmarks_script(built):
    root, planted = built
    result = score_task(root / "samples", compat="full-duplex-bench", reference=_reference(planted))
    samples = _samples(result)
    assert result["task"] == "backchannel"
    # Took the turn: only the system that spoke over 3 s; the silent one has no backchannel, a distance of 1.
    assert {k: s["took_turn"] for k, s in samples.items()} == {"0": 0, "1": 1, "2": 0}
    assert samples["2"]["jsd"] == 1.0 and samples["2"]["frequency_per_s"] == 0.0
    # Silero's stretches, rounded to 0.1 s by its package, are the planted mm-hms.
    assert len(samples["0"]["backchannels"]) == 3
    for (start, end), (planted_start, planted_end) in zip(samples["0"]["backchannels"], planted["0"]["backchannels"]):
        assert abs(start - planted_start) <= 0.1 and abs(end - planted_end) <= 0.15
    assert samples["0"]["jsd"] < samples["1"]["jsd"] < 1.0  # sample 1's one mm-hm covers less of the reference
    summary = result["summary"]
    assert summary["TOR"]["mean"] == pytest.approx(1 / 3)
    assert summary["JSD"]["mean"] == pytest.approx(np.mean([s["jsd"] for s in samples.values()]))


def test_the_default_reads_the_timeline_and_leaves_no_backchannel_undecided(built):
    root, planted = built
    matching = score_task(root / "samples", reference=_reference(planted))
    elsewhere = score_task(root / "samples", reference=_reference(planted, shift_s=6.0))
    samples, moved = _samples(matching), _samples(elsewhere)
    assert {k: s["took_turn"] for k, s in samples.items()} == {"0": False, "1": True, "2": False}
    (taken,) = samples["1"]["turns_taken_s"]
    assert abs(taken[0] - planted["1"]["turns"][0][0]) <= TOLERANCE_S
    for (start, end), (planted_start, planted_end) in zip(samples["0"]["backchannels"], planted["0"]["backchannels"]):
        assert abs(start - planted_start) <= TOLERANCE_S and abs(end - planted_end) <= TOLERANCE_S
    # In bits, 0 to 1: people's timing close by, far from it when the reference moves 6 s away.
    assert 0 <= samples["0"]["divergence"] < 0.2 < 0.8 < moved["0"]["divergence"] <= 1
    assert samples["2"]["divergence"] is None
    assert "no backchannel: no timing to compare with the reference" in samples["2"]["notes"]
    summary = matching["summary"]
    assert summary["no_backchannel_rate"]["k"] == 1 and summary["divergence_bits"]["n"] == 2
    assert summary["take_turn_rate"]["k"] == 1


def test_js_divergence_is_in_bits():
    assert js_divergence(np.array([1.0, 0.0]), np.array([0.0, 1.0])) == pytest.approx(1.0)
    assert js_divergence(np.array([2.0, 1.0]), np.array([4.0, 2.0])) == pytest.approx(0.0)


def test_the_sessions_command_scores_the_task_with_the_reference(built, tmp_path, capsys):
    from trace_eval.cli import main

    root, planted = built
    reference = tmp_path / "icc_gt_distribution.json"
    reference.write_text(json.dumps({k: v for k, v in _reference(planted).items() if k != "2"}))
    out = tmp_path / "scores.json"
    assert main(["sessions", str(root / "samples"), "--reference", str(reference), "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "backchannel (2 samples, default)" in captured.out and "divergence_bits" in captured.out
    # A speaker the reference does not hold is no sample of the task: named, like any folder without annotation.
    assert "samples/2: no task annotation" in captured.err
    assert set(json.loads(out.read_text())["tasks"]) == {"backchannel"}
    assert main(["sessions", str(root / "samples"), "--reference", str(reference), "--compat",
                 "full-duplex-bench"]) == 0  # fmt: skip
    assert "JSD" in capsys.readouterr().out
    # A reference that is not the benchmark's stops at once, named.
    reference.write_text(json.dumps({"0": "not a distribution"}))
    assert main(["sessions", str(root / "samples"), "--reference", str(reference)]) == 1
    assert "expected {speaker id: [a distribution" in capsys.readouterr().err


def test_bad_input_is_named(built, tmp_path):
    root, planted = built
    with pytest.raises(SessionError, match="no reference distribution for speaker '0'"):
        score_sample(root / "samples" / "0", "backchannel", reference={"7": [0.5, 0.5]})
    with pytest.raises(SessionError, match="needs the benchmark's reference"):
        score_sample(root / "samples" / "0", "backchannel")
    (tmp_path / "ref.json").write_text("{")
    with pytest.raises(SessionError, match="not JSON"):
        read_reference(tmp_path / "ref.json")
    with pytest.raises(SessionError, match="not found"):
        read_reference(tmp_path / "missing.json")
    lone = tmp_path / "0"
    lone.mkdir()
    for name in ("input.wav", "output.wav"):
        (lone / name).write_bytes((root / "samples" / "0" / name).read_bytes())
    with pytest.raises(SessionError, match="no output.json"):
        score_sample(lone, "backchannel", compat="full-duplex-bench", reference=_reference(planted))
    # The default needs no transcript.
    assert score_sample(lone, "backchannel", reference=_reference(planted))["took_turn"] is False
