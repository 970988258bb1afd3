"""Confidence, calibration and the cascade end to end, against the local OpenAI-compatible test server."""

from __future__ import annotations

import json
import math
import random
import re
import threading
from pathlib import Path

import pytest
from llm_server import LLMServer, PairSpec, Reply, blueprint, prompt_text, verdict_json, write_benchmark

from trace_eval.cli import main as cli
from trace_eval.judge import JudgeError, JudgeOptions, RetryPolicy, run_judge
from trace_eval.judge.cascade import run_cascade

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


def judge(bench: Path, out: Path, cache: Path | None = None, **options) -> list[dict]:
    options.setdefault("retry", FAST_RETRY)
    options.setdefault("progress", False)
    if cache is not None:
        options["cache_dir"] = cache
    outcome = run_judge(JudgeOptions(bench=bench, out=out, **options), notice=lambda m: None)
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


# -- the cascade ------------------------------------------------------------------------------------


def calibration_file(path: Path, thresholds: dict[str, tuple[float | None, int]]) -> Path:
    """A calibration file as `calibrate` writes it, with chosen thresholds: {MODEL@PROMPT: (threshold, samples)}."""
    judges = {}
    for key, (threshold, samples) in thresholds.items():
        model, judge_prompt = key.split("@")
        judges[key] = {
            "threshold": threshold,
            "reason": None if threshold is not None else "no threshold meets 85% agreement at delta 0.1",
            "settings": {
                "model": model,
                "judge": judge_prompt,
                "rubric": "trace",
                "fusion": "cap",
                "samples": samples,
                "swap": False,
                "drop": [],
                "temperature": 0.0,
            },
        }
    doc = {
        "kind": "trace-eval calibration",
        "format_version": 1,
        "target_agreement": 0.85,
        "delta": 0.1,
        "label": "overall",
        "judges": judges,
    }
    path.write_text(json.dumps(doc))
    return path


class Judges:
    """The text and the audio judge on one test server, told apart by the model asked for.

    Pairs: even ones the cues backbone trusts (clean clips); odd ones reach the text judge (response 2 just
    above the P.808 floor). The text judge is sure of pairs 1, 5, 9 (always "1"), and torn on 3, 7, 11
    (answers alternate). The audio judge is sure of 3 and 11, torn on 7.
    """

    def __init__(self, bench: Path, n: int, audio_fails: bool = False):
        import base64

        self.pair_of_audio = {
            base64.b64encode((bench / "audio" / f"p{i:03d}_audio1.wav").read_bytes()).decode(): i for i in range(n)
        }
        self.audio_fails = audio_fails
        self.asked: dict[tuple[str, int], int] = {}
        self.audio_parts: list[int] = []
        self.by_model: dict[str, int] = {}
        self.lock = threading.Lock()

    def __call__(self, body: dict):
        from llm_server import Fail

        model = body["model"]
        with self.lock:
            self.by_model[model] = self.by_model.get(model, 0) + 1
        if model == "audio":
            if self.audio_fails:
                return Fail(401, "invalid key")
            parts = [p for m in body["messages"] if isinstance(m["content"], list) for p in m["content"]]
            audio = [p["input_audio"]["data"] for p in parts if p.get("type") == "input_audio"]
            self.audio_parts.append(len(audio))
            pair = next(self.pair_of_audio[a] for a in audio if a in self.pair_of_audio)
            torn = pair % 8 == 7
        else:
            pair = int(re.search(r"answer (\d+) one", prompt_text(body)).group(1))
            torn = pair % 4 == 3
        with self.lock:
            sample = self.asked[(model, pair)] = self.asked.get((model, pair), -1) + 1
        label = "2" if torn and sample % 3 == 1 else "1"
        return Reply(verdict_json(label, label, label))


def cascade_bench(root: Path, n: int) -> Path:
    """Response 1 says the quoted words; so does response 2, nearly: Content both_good, so on the odd pairs the
    overall label rests on a Voice Quality winner by a hair (P.808 2.75 against the floor of 2.7)."""
    specs = [
        PairSpec(
            id=f"p{i:03d}",
            instruction_text=f'Say "answer {i} one" please.',
            response_1=blueprint(f"answer {i} one"),
            response_2=blueprint(f"answer {i} two", p808=2.75 if i % 2 else 3.6),
            label=RIGHT,
        )
        for i in range(n)
    ]
    return write_benchmark(root, specs)


def test_cascade_escalates_resumes_and_names_the_deciding_judge(tmp_path):
    n = 12
    bench = cascade_bench(tmp_path / "bench", n)
    calibration = calibration_file(
        tmp_path / "calibration.json",
        {"cues@trace": (0.8, 1), "openai/text@trace": (0.9, 3), "openai/audio@audio": (0.9, 3)},
    )
    cascade = ["cues", "openai/text", "openai/audio@audio"]
    common = {"cache_dir": tmp_path / "cache", "api_key": "dummy", "retry": FAST_RETRY, "progress": False}

    # A single-judge run of the text judge first: the cascade reuses its cached answers.
    judges = Judges(bench, n, audio_fails=True)
    with LLMServer(responder=judges) as server:
        judge(bench, tmp_path / "single", model="openai/text", api_base=server.api_base, samples=3, **common)
        assert judges.by_model == {"text": 3 * n}
        options = JudgeOptions(bench=bench, api_base=server.api_base, out=tmp_path / "cascade", **common)
        # The audio judge's key is rejected: the cascade stops there; what it decided is kept.
        stopped = run_cascade(options, cascade, calibration, notice=lambda m: None)
        assert judges.by_model["text"] == 3 * n  # every text answer came from the cache
        assert stopped.stopped and "openai/audio@audio" in stopped.stopped
        first = {r["id"]: r for r in stopped.records}
        assert first["p003"]["status"] == "skipped" and "not finished" in first["p003"]["reason"]
        assert first["p000"]["cascade"]["decided_by"] == "cues@trace"

        # The same command again, the key fixed: only what is left is asked.
        judges.audio_fails, judges.by_model = False, {}
        outcome = run_cascade(options, cascade, calibration, notice=lambda m: None)
    assert outcome.stopped is None
    assert judges.by_model == {"audio": 3 * 3}  # the three pairs that reached the audio judge
    assert judges.audio_parts == [3] * 9  # instruction and both responses, as audio
    by_id = {r["id"]: r for r in outcome.records}
    for i in range(0, n, 2):
        assert by_id[f"p{i:03d}"]["cascade"]["decided_by"] == "cues@trace"
    for i in (1, 5, 9):
        record = by_id[f"p{i:03d}"]
        assert record["cascade"]["decided_by"] == "openai/text@trace" and record["cascade"]["confidence"] == 1.0
        assert [s["judge"] for s in record["cascade"]["steps"]] == ["cues@trace", "openai/text@trace"]
    for i in (3, 11):
        assert by_id[f"p{i:03d}"]["cascade"]["decided_by"] == "openai/audio@audio"
        assert by_id[f"p{i:03d}"]["overall"] == "1"
    torn = by_id["p007"]
    assert torn["cascade"]["decided_by"] is None and torn["overall"] is None
    assert torn["undetermined"]["content"] == "confidence 0.67 below 0.90 for openai/audio@audio"
    assert [s["trusted"] for s in torn["cascade"]["steps"]] == [False, False, False]
    assert outcome.summary["cascade"]["undetermined"] == 1
    assert outcome.summary["cascade"]["decided_by"] == {
        "cues@trace": 6,
        "openai/text@trace": 3,
        "openai/audio@audio": 2,
    }
    # Each judge's answers sit in a run folder of its own, over the pairs that reached it.
    folders = sorted(p.name for p in (tmp_path / "cascade" / "judges").iterdir())
    assert folders == ["1-cues-trace", "2-openai-text-trace", "3-openai-audio-audio"]

    # evaluate: agreement on the trusted verdicts, coverage, the risk-coverage picture.
    assert cli(["evaluate", str(tmp_path / "cascade"), "--out", str(tmp_path / "eval")]) == 0
    trust = json.loads((tmp_path / "eval" / "metrics.json").read_text())["trust"]["runs"][0]
    assert trust["coverage"]["correct"] == 11 and trust["coverage"]["n"] == n
    assert trust["agreement"]["n"] == 11 and trust["agreement"]["ci95"] is not None
    assert trust["decided_by"]["undetermined"] == 1
    assert (tmp_path / "eval" / "risk_coverage.png").is_file()
    assert "## Trusted verdicts" in (tmp_path / "eval" / "report.md").read_text()


def test_a_cascade_keeps_the_dimensions_its_judge_decided(tmp_path):
    """Free-form instructions: cues leaves Content undetermined and decides the other two; the cascade keeps them."""
    specs = [
        PairSpec(id="quoted", response_1=blueprint("hello there"), response_2=blueprint("goodbye")),
        PairSpec(
            id="free",
            instruction_text="Tell me about your day.",
            response_1=blueprint("it was fine"),
            response_2=blueprint("a long day", p808=2.0),
        ),
    ]
    bench = write_benchmark(tmp_path / "bench", specs)
    items = json.loads((bench / "manifest.json").read_text())
    (bench / "manifest.json").write_text(json.dumps([{**item, "model_a": "x", "model_b": "y"} for item in items]))
    calibration = calibration_file(tmp_path / "calibration.json", {"cues@trace": (0.6, 1)})
    single = judge(bench, tmp_path / "single", model="cues")
    outcome = run_cascade(JudgeOptions(bench=bench, out=tmp_path / "cascade"), ["cues"], calibration, lambda m: None)
    free = {r["id"]: r for r in outcome.records}["free"]
    alone = {r["id"]: r for r in single}["free"]
    assert alone["verdicts"] == {"content": None, "voice_quality": "1", "paralinguistics": "both_good"}
    assert free["verdicts"] == alone["verdicts"] and free["overall"] is None
    assert list(free["undetermined"]) == ["content"] and "no quoted words" in free["undetermined"]["content"]
    assert free["confidence"]["voice_quality"] == alone["confidence"]["voice_quality"] is not None
    assert free["cascade"]["decided_by"] is None and "left it undetermined" in free["cascade"]["reason"]
    assert outcome.summary["undetermined"] == {"content": 1, "voice_quality": 0, "paralinguistics": 0, "overall": 1}
    assert outcome.summary["cascade"]["undetermined"] == 1

    # --trusted-only: the pair the judge could not decide is undetermined, not "not trusted"; the Voice Quality
    # verdict it did give is one no calibration vouches for.
    assert cli(["leaderboard", str(tmp_path / "cascade"), "--trusted-only", "--by", "all"]) == 0
    board = json.loads((tmp_path / "cascade" / "leaderboard-trusted" / "leaderboard.json").read_text())
    tables = board["sources"][0]["tables"]
    assert tables["overall"]["left_out"]["undetermined"] == 1 and tables["overall"]["left_out"]["not_trusted"] == 0
    assert tables["content"]["left_out"]["undetermined"] == 1 and tables["content"]["left_out"]["not_trusted"] == 0
    assert tables["voice_quality"]["left_out"]["not_trusted"] == 1


def test_a_judge_the_calibration_does_not_know_is_refused(tmp_path):
    bench = cascade_bench(tmp_path / "bench", 2)
    calibration = calibration_file(tmp_path / "calibration.json", {"cues@trace": (0.8, 1)})
    with pytest.raises(JudgeError, match=r"openai/x@trace is not calibrated in .*it holds cues@trace"):
        run_cascade(JudgeOptions(bench=bench, out=tmp_path / "c"), ["cues", "openai/x"], calibration)


def test_logprobs_give_each_label_the_probability_of_its_tokens(tmp_path):
    import math

    bench = labelled_bench(tmp_path / "bench", 2)
    content = verdict_json("both_good", "1", "2")
    # Every token certain except the label tokens: "both" (p 0.9) "_good" (p 0.8); "1" p 0.6; "2" p 0.95.
    tokens = re.findall(r"both|_good|\w+|\W", content)
    chances = iter([0.9, 0.8, 0.6, 0.95])
    spelled = []
    for token in tokens:
        label_token = token in ("both", "_good") or (token in ("1", "2") and spelled and spelled[-1][0] == '"')
        spelled.append((token, math.log(next(chances)) if label_token else 0.0))
    with LLMServer(default=Reply(content, token_logprobs=tuple(spelled))) as server:
        records = judge(
            bench,
            tmp_path / "run",
            tmp_path / "cache",
            model="openai/lp",
            api_base=server.api_base,
            api_key="dummy",
            logprobs=True,
        )
        assert all(body.get("logprobs") is True for body in server.requests)
        # The same run again: the answers, log-probabilities included, come from the cache.
        again = judge(
            bench,
            tmp_path / "run2",
            tmp_path / "cache",
            model="openai/lp",
            api_base=server.api_base,
            api_key="dummy",
            logprobs=True,
        )
        assert server.request_count == 2
    for record in (records[0], again[0]):
        assert record["confidence_source"] == "logprobs"
        assert record["confidence"]["content"] == pytest.approx(0.72)
        assert record["confidence"]["voice_quality"] == pytest.approx(0.6)
        assert record["confidence"]["paralinguistics"] == pytest.approx(0.95)
        # cap: Paralinguistics names the winner, within Content's cap; Voice Quality's 0.6 decides nothing.
        assert record["decided_by"] == ["content", "paralinguistics"]
        assert record["confidence"]["overall"] == pytest.approx(0.72)


def test_leaderboard_and_view_can_use_trusted_verdicts_only(tmp_path):
    from trace_eval.evaluation.leaderboard import leaderboard
    from trace_eval.view import write_view

    n = 40
    # Systems: response 1 by "a", response 2 by "b"; an LLM sure of the first half of the pairs.
    specs = [
        PairSpec(
            id=f"p{i:03d}",
            response_1=blueprint(f"answer {i} one"),
            response_2=blueprint(f"answer {i} two"),
            label=RIGHT,
        )
        for i in range(n)
    ]
    bench = write_benchmark(tmp_path / "bench", specs)
    manifest = json.loads((bench / "manifest.json").read_text())
    for item in manifest:
        item["model_a"], item["model_b"] = "a", "b"
    (bench / "manifest.json").write_text(json.dumps(manifest))
    with LLMServer(responder=KnownJudge({i: 1.0 if i < n // 2 else 0.5 for i in range(n)})) as server:
        judge(
            bench,
            tmp_path / "run",
            tmp_path / "cache",
            model="openai/half",
            api_base=server.api_base,
            api_key="dummy",
            samples=3,
        )
    calibration = calibration_file(tmp_path / "calibration.json", {"openai/half@trace": (1.0, 3)})
    with pytest.raises(Exception, match="nothing says which verdicts are trusted"):
        leaderboard([tmp_path / "run"], trusted_only=True)
    board = leaderboard([tmp_path / "run"], trusted_only=True, calibration=calibration)
    everything = leaderboard([tmp_path / "run"])
    assert json.dumps(board) != json.dumps(everything)
    # Verdicts below the threshold are "not trusted", counted apart from those the judge left undetermined.
    left = board["sources"][1]["tables"]["overall"]["left_out"]
    assert left["not_trusted"] > 0 and left["undetermined"] == 0
    assert board["trusted_only"]["calibration"] == str(calibration)
    # The command writes a folder of its own and says what was trusted, by which threshold and file.
    assert cli(["leaderboard", str(tmp_path / "run")]) == 0
    assert cli(["leaderboard", str(tmp_path / "run"), "--trusted-only", "--calibration", str(calibration)]) == 0
    trusted_md = (tmp_path / "run" / "leaderboard-trusted" / "leaderboard.md").read_text()
    assert "Trusted verdicts only (run: confidence >= 1 (openai/half@trace, calibration))" in trusted_md
    assert "not_trusted" in trusted_md
    assert "Trusted verdicts only" not in (tmp_path / "run" / "leaderboard" / "leaderboard.md").read_text()

    files = write_view([tmp_path / "run"], tmp_path / "view", trusted_only=True, calibration=calibration)
    data = (files.index.parent / "data.js").read_text()
    assert "not trusted: confidence >= 1" in data and '"confidence_source":"agreement"' in data


# -- the cues backbone's margins --------------------------------------------------------------------


def _cues_confidence(instruction: str, bp1: dict, bp2: dict) -> dict:
    from trace_eval.judge.cues import DEFAULT_THRESHOLDS, judge_case
    from trace_eval.judge.prompts import Case, blueprint_view, load_prompt

    keys = load_prompt("trace").blueprint_keys
    views = (blueprint_view(bp1, keys, ()), blueprint_view(bp2, keys, ()))
    case = Case("x", None, instruction, views, (None, None, None), False, (bp1, bp2), (), {})
    verdict = judge_case(case, DEFAULT_THRESHOLDS)
    return {
        dim: (verdict[dim], verdict.get("confidence", {}).get(dim))
        for dim in ("content", "voice_quality", "paralinguistics")
    }


def test_cues_confidence_grows_with_the_distance_from_the_threshold():
    say = 'Say "hello there" please.'
    near = _cues_confidence(say, blueprint("hello there", p808=3.0), blueprint("hello there", p808=2.75))
    far = _cues_confidence(say, blueprint("hello there"), blueprint("hello there", p808=2.0))
    assert near["voice_quality"][0] == "both_good" and far["voice_quality"][0] == "1"
    # 0.05 above the P.808 floor of 2.7 (a sixth of a unit) against 0.7 below it (2.3 units).
    assert near["voice_quality"][1] == pytest.approx(1 - 0.5 * math.exp(-0.05 / 0.3), abs=1e-3)
    assert far["voice_quality"][1] == pytest.approx(1 - 0.5 * math.exp(-0.7 / 0.3), abs=1e-3)
    # No manner asked: acceptable by default, one unit.
    assert near["paralinguistics"] == ("both_good", pytest.approx(1 - 0.5 * math.exp(-1.0), abs=1e-3))
    # Silence fails every dimension surely.
    silent = _cues_confidence(say, blueprint("hello there"), blueprint(""))
    # Response 1 says every quoted word at the quote's whole length: sure, as silence is.
    assert silent["content"] == ("1", pytest.approx(1 - 0.5 * math.exp(-3.0), abs=1e-3))


def test_cues_content_confidence_follows_the_match_not_the_quote_s_length():
    """A clear loss, a tie of two full answers and a tie with a shortened answer differ (all three were 0.857)."""
    say = 'Say "the quick brown fox jumps over the lazy dog" please.'
    full = "the quick brown fox jumps over the lazy dog"
    tie = _cues_confidence(say, blueprint(full), blueprint(full))["content"]
    shorter = _cues_confidence(say, blueprint(full), blueprint("the quick brown fox jumps over the dog"))["content"]
    loss = _cues_confidence(say, blueprint(full), blueprint("seven purple elephants danced under a moon"))["content"]
    assert tie[0] == shorter[0] == "both_good" and loss[0] == "1"
    assert len({tie[1], shorter[1], loss[1]}) == 3, (tie, shorter, loss)
    # Every quoted word at the quote's whole length is sure; a word short is less so; unrelated words are a sure loss.
    assert tie[1] >= 0.95 and shorter[1] < tie[1] and loss[1] >= 0.9


def test_the_overall_confidence_follows_the_dimensions_that_decided_it():
    from trace_eval.judge.runfolder import set_overall
    from trace_eval.rubrics import load_rubric

    trace = load_rubric("trace")
    record = {
        "status": "ok",
        "verdicts": {"content": "1", "voice_quality": "both_good", "paralinguistics": "both_good"},
        "confidence": {"content": 0.95, "voice_quality": 0.6, "paralinguistics": 0.9},
        "confidence_source": "stated",
    }
    # cap: Content names the winner, capped by Content and Paralinguistics; Voice Quality decides nothing.
    set_overall(record, "cap", trace)
    assert record["overall"] == "1" and record["decided_by"] == ["content", "paralinguistics"]
    assert record["confidence"]["overall"] == 0.9
    set_overall(record, "content-first", trace)
    assert record["decided_by"] == ["content"] and record["confidence"]["overall"] == 0.95
    # Where Voice Quality names the winner, its small margin is what the overall label rests on.
    record["verdicts"] = {"content": "both_good", "voice_quality": "1", "paralinguistics": "both_good"}
    set_overall(record, "cap", trace)
    assert record["decided_by"] == ["content", "paralinguistics", "voice_quality"]
    assert record["confidence"]["overall"] == 0.6
    record["verdicts"]["content"] = None
    set_overall(record, "cap", trace)
    assert record["overall"] is None and record["decided_by"] is None and record["confidence"]["overall"] is None


def test_cues_confidence_of_a_manner_is_the_distance_of_its_reading():
    slow = "Say it slowly."
    just = _cues_confidence(slow, blueprint(wpm=125.0), blueprint(wpm=210.0))
    clear = _cues_confidence(slow, blueprint(wpm=90.0), blueprint(wpm=210.0))
    assert just["paralinguistics"][0] == clear["paralinguistics"][0] == "1"
    assert just["paralinguistics"][1] < clear["paralinguistics"][1]


def test_calibrate_refuses_runs_of_one_judge_made_with_other_settings(tmp_path, capsys):
    bench = labelled_bench(tmp_path / "bench", 3)
    judge(bench, tmp_path / "a", model="cues")
    judge(bench, tmp_path / "b", model="cues", drop=("emotion",))
    out = tmp_path / "calibration.json"
    assert cli(["calibrate", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(out)]) == 2
    assert "runs of cues@trace were made with different drop" in capsys.readouterr().err
    assert not out.exists()


def test_fusing_again_recomputes_the_confidence_of_the_overall_label(tmp_path):
    from trace_eval.judge.runfolder import read_results, refuse

    n = 6
    bench = labelled_bench(tmp_path / "bench", n)
    with LLMServer(responder=KnownJudge({i: 0.6 for i in range(n)}, seed=3)) as server:
        judge(
            bench,
            tmp_path / "run",
            tmp_path / "cache",
            model="openai/m",
            api_base=server.api_base,
            api_key="dummy",
            samples=5,
        )
    refuse(tmp_path / "run", "vote")
    for record in read_results(tmp_path / "run" / "results.jsonl").records:
        answers = [s["verdicts"] for s in record["samples"]]
        from trace_eval.rubrics import load_rubric

        fused = [load_rubric("trace").fusion.fuse_all(a)["vote"] for a in answers]
        assert record["confidence"]["overall"] == pytest.approx(fused.count(record["overall"]) / len(fused))


def test_calibrate_on_runs_without_human_labels_stops_and_says_how_to_label(tmp_path, capsys):
    specs = [PairSpec(id=f"p{i}", response_1=blueprint(f"answer {i} one"), response_2=blueprint("x")) for i in range(3)]
    bench = write_benchmark(tmp_path / "bench", specs)
    run = tmp_path / "run"
    assert cli(["judge", "--bench", str(bench), "--model", "cues", "--out", str(run), "--quiet"]) == 0
    out = tmp_path / "calibration.json"
    assert cli(["calibrate", str(run), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no pair of" in err and "has a human overall label" in err
    assert f"python -m trace_eval label {bench} --annotator NAME" in err and '"label"' in err
    assert not out.exists()  # no file that trusts nothing


def test_a_cascade_that_trusts_no_judge_warns_and_names_no_default_judge(tmp_path, capsys):
    bench = cascade_bench(tmp_path / "bench", 2)
    calibration = calibration_file(tmp_path / "calibration.json", {"cues@trace": (None, 1)})
    assert cli(["judge", "--bench", str(bench), "--cascade", "cues", "--out", str(tmp_path / "c")]) == 2
    assert "python -m trace_eval calibrate" in capsys.readouterr().err  # where the calibration file comes from
    cascade = ["judge", "--bench", str(bench), "--cascade", "cues", "--calibration", str(calibration)]
    assert cli([*cascade, "--out", str(tmp_path / "c"), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert f"warning: {calibration} trusts no judge of this cascade" in err and "coverage 0%" in err
    assert "no --model" not in err and "judging with the offline" not in err
