"""Confidence, calibration and the cascade end to end, against the local OpenAI-compatible test server."""

from __future__ import annotations

import json
import random
import re
import threading
from pathlib import Path

from llm_server import LLMServer, PairSpec, Reply, blueprint, prompt_text, verdict_json, write_benchmark

from trace_eval.cli import main as cli
from trace_eval.judge import JudgeOptions, RetryPolicy, run_judge

FAST_RETRY = RetryPolicy(max_retries=2, base_delay_s=0.01, max_delay_s=0.05)
RIGHT = {"content": "1", "voice_quality": "1", "paralinguistics": "1", "overall": "1"}


class KnownJudge:
    """Answers pair i right (every label "1", as people said) with probability accuracy[i], else "2";
    seeded per pair and sample, so reruns answer alike."""

    def __init__(self, accuracy: dict[int, float], seed: int = 0):
        self.accuracy = accuracy
        self.seed = seed
        self.asked: dict[int, int] = {}
        self.lock = threading.Lock()

    def __call__(self, body: dict) -> Reply:
        pair = int(re.search(r"answer (\d+) one", prompt_text(body)).group(1))
        with self.lock:
            sample = self.asked[pair] = self.asked.get(pair, -1) + 1
        right = random.Random(f"{self.seed}-{pair}-{sample}").random() < self.accuracy[pair]
        label = "1" if right else "2"
        return Reply(verdict_json(label, label, label))


def labelled_bench(root: Path, n: int) -> Path:
    specs = [
        PairSpec(
            id=f"p{i:03d}",
            response_1=blueprint(f"answer {i} one"),
            response_2=blueprint(f"answer {i} two"),
            label=RIGHT,
        )
        for i in range(n)
    ]
    return write_benchmark(root, specs)


def judge(bench: Path, out: Path, cache: Path, **options) -> list[dict]:
    options.setdefault("retry", FAST_RETRY)
    outcome = run_judge(
        JudgeOptions(bench=bench, cache_dir=cache, out=out, progress=False, **options), notice=lambda m: None
    )
    return outcome.records


def test_samples_give_an_agreement_confidence_and_calibration_trusts_the_confident(tmp_path):
    n = 160
    # Three kinds of pairs: easy (right 97% of the time), middling (75%), hard (a coin).
    accuracy = {i: (0.97, 0.75, 0.5)[i % 3] for i in range(n)}
    bench = labelled_bench(tmp_path / "bench", n)
    with LLMServer(responder=KnownJudge(accuracy)) as server:
        records = judge(
            bench,
            tmp_path / "run",
            tmp_path / "cache",
            model="openai/known",
            api_base=server.api_base,
            api_key="dummy",
            samples=5,
            concurrency=16,
        )
    assert all(r["confidence_source"] == "agreement" for r in records)
    by_id = {r["id"]: r for r in records}
    easy = [by_id[f"p{i:03d}"]["confidence"]["overall"] for i in range(0, n, 3)]
    hard = [by_id[f"p{i:03d}"]["confidence"]["overall"] for i in range(2, n, 3)]
    assert sum(easy) / len(easy) > sum(hard) / len(hard) + 0.2
    # A single answer states no confidence, and says how to get one.
    record = records[0]
    assert set(record["confidence"]) == {"content", "voice_quality", "paralinguistics", "overall"}

    out = tmp_path / "calibration.json"
    assert cli(["calibrate", str(tmp_path / "run"), "--agreement", "0.85", "--delta", "0.1", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    result = doc["judges"]["openai/known@trace"]
    assert result["threshold"] is not None and result["n"] == n
    assert 0.2 < result["coverage"] < 1.0  # the coin-flip pairs are not all trusted
    trusted = [r for r in records if r["confidence"]["overall"] >= result["threshold"]]
    assert sum(r["overall"] == "1" for r in trusted) / len(trusted) >= 0.85
    assert doc["assumptions"] and "exchangeable" in doc["assumptions"][0]
    assert result["settings"]["samples"] == 5


def test_a_judge_no_threshold_can_trust_is_said_plainly(tmp_path, capsys):
    n = 60
    bench = labelled_bench(tmp_path / "bench", n)
    with LLMServer(responder=KnownJudge({i: 0.5 for i in range(n)})) as server:
        judge(
            bench,
            tmp_path / "run",
            tmp_path / "cache",
            model="openai/coin",
            api_base=server.api_base,
            api_key="dummy",
            samples=3,
        )
    out = tmp_path / "calibration.json"
    assert cli(["calibrate", str(tmp_path / "run"), "--agreement", "0.9", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "openai/coin@trace: NO THRESHOLD" in printed and "no threshold meets 90% agreement" in printed
    assert json.loads(out.read_text())["judges"]["openai/coin@trace"]["threshold"] is None


def test_one_answer_has_no_confidence_and_says_why(tmp_path):
    bench = labelled_bench(tmp_path / "bench", 3)
    with LLMServer(responder=KnownJudge({i: 1.0 for i in range(3)})) as server:
        records = judge(
            bench,
            tmp_path / "run",
            tmp_path / "cache",
            model="openai/one",
            api_base=server.api_base,
            api_key="dummy",
        )
    assert all(r["confidence"]["overall"] is None and r["confidence_source"] is None for r in records)
    assert "--samples" in records[0]["confidence_reason"]
