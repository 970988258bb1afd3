"""The judge against a real local OpenAI-compatible server, spoken to directly over HTTP as `judge` does.

Every test starts tests/llm_server.py on a random port and judges a small
synthetic benchmark with model "openai/<name>" and api_base pointing at it
(test_openai_http.py holds the same calls through litellm to the same answers).
"""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path

import pytest
from llm_server import (
    Fail,
    LLMServer,
    PairSpec,
    Reply,
    blueprint,
    fenced,
    prompt_text,
    prose_wrapped,
    verdict_json,
    write_benchmark,
)

from trace_eval.judge import JudgeError, JudgeOptions, RetryPolicy, run_judge
from trace_eval.judge.runfolder import read_results

FAST_RETRY = RetryPolicy(max_retries=2, base_delay_s=0.01, max_delay_s=0.05)


@pytest.fixture
def server():
    with LLMServer() as s:
        yield s


def _specs(n: int) -> list[PairSpec]:
    # Each response says which pair and side it is, so a responder can route on the prompt.
    return [
        PairSpec(id=f"p{i}", response_1=blueprint(f"answer {i} one"), response_2=blueprint(f"answer {i} two"))
        for i in range(n)
    ]


@pytest.fixture
def bench(tmp_path):
    return write_benchmark(tmp_path / "bench", _specs(4))


def judge(bench: Path, server: LLMServer, tmp_path: Path, out: str = "run", **options):
    options.setdefault("model", "openai/test-judge")
    options.setdefault("retry", FAST_RETRY)
    return run_judge(
        JudgeOptions(
            bench=bench,
            api_base=server.api_base,
            api_key="dummy",
            cache_dir=tmp_path / "cache",
            out=tmp_path / out,
            progress=False,
            **options,
        ),
        notice=lambda message: None,
    )


def _by_id(outcome) -> dict[str, dict]:
    return {r["id"]: r for r in read_results(outcome.out / "results.jsonl").records}


def _pair_of(body: dict) -> int:
    text = prompt_text(body)
    return next(i for i in range(100) if f"answer {i} one" in text)


def test_valid_fenced_prose_and_release_key_answers(bench, server, tmp_path):
    answers = {
        0: verdict_json("1", "2", "both_good"),
        1: fenced(verdict_json("2", "both_bad", "1")),
        2: prose_wrapped(verdict_json("both_good", "1", "2")),
        3: verdict_json("both_bad", "both_good", None, instruction_following_audio="1"),
    }
    server.responder = lambda body: Reply(answers[_pair_of(body)])
    outcome = judge(bench, server, tmp_path)
    records = _by_id(outcome)
    assert [records[f"p{i}"]["status"] for i in range(4)] == ["ok"] * 4
    assert records["p0"]["verdicts"] == {"content": "1", "voice_quality": "2", "paralinguistics": "both_good"}
    assert records["p1"]["verdicts"] == {"content": "2", "voice_quality": "both_bad", "paralinguistics": "1"}
    assert records["p2"]["verdicts"]["paralinguistics"] == "2"
    assert records["p3"]["verdicts"]["paralinguistics"] == "1"
    assert records["p1"]["raw"] == answers[1]
    assert records["p0"]["tokens"] == {"prompt": 100, "completion": 20}
    assert records["p0"]["overall"] == records["p0"]["fused"]["cap"] == "1"
    assert server.request_count == 4
    body = server.requests[0]
    assert body["model"] == "test-judge" and body["temperature"] == 0
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    # litellm does not know this model, but a server of --api-base is asked for structured output (auto)
    assert body["response_format"]["type"] == "json_schema"
    config = json.loads((outcome.out / "config.json").read_text())
    assert config["bench"] == str(bench.resolve()) and config["prompt_version"] == "trace-v5"
    assert "dummy" not in (outcome.out / "config.json").read_text()  # no API key in the run folder
    summary = json.loads((outcome.out / "summary.json").read_text())
    assert summary["status"]["ok"] == 4 and summary["tokens"] == {"prompt": 400, "completion": 80}


def test_rerun_is_answered_from_the_cache(bench, server, tmp_path):
    first = judge(bench, server, tmp_path, out="first", concurrency=4)
    assert server.request_count == 4
    # Concurrency and timeouts do not change answers, so they do not change the cache key.
    second = judge(bench, server, tmp_path, out="second", concurrency=1, timeout_s=7.0)
    assert server.request_count == 4
    assert second.summary["run"]["calls"] == 0 and second.summary["run"]["cache_hits"] == 4
    again = _by_id(second)
    assert all(r["cache_hit"] and r["latency_s"] == 0 for r in again.values())
    assert {k: r["verdicts"] for k, r in again.items()} == {k: r["verdicts"] for k, r in _by_id(first).items()}
    judge(bench, server, tmp_path, out="third", temperature=0.5)  # sampling settings are part of the key
    assert server.request_count == 8
    judge(bench, server, tmp_path, out="fourth", use_cache=False)
    assert server.request_count == 12


def test_invalid_answer_is_repaired(tmp_path, server):
    bench = write_benchmark(tmp_path / "bench", 1)
    server.push(Reply(verdict_json(content="tie")))
    outcome = judge(bench, server, tmp_path)
    record = _by_id(outcome)["p0000"]
    assert record["status"] == "ok" and record["repairs"] == 1
    assert server.request_count == 2
    repair = server.requests[1]["messages"]
    assert repair[-2] == {"role": "assistant", "content": verdict_json(content="tie")}
    assert repair[-1]["role"] == "user" and "content" in repair[-1]["content"] and "tie" in repair[-1]["content"]
    assert record["tokens"] == {"prompt": 200, "completion": 40}


@pytest.mark.parametrize(
    "answer",
    [verdict_json(content="tie"), verdict_json(paralinguistics=None), "Response 1 is better on every dimension."],
)
def test_answer_still_invalid_after_repair_is_recorded_never_guessed(tmp_path, server, answer):
    bench = write_benchmark(tmp_path / "bench", 1)
    server.default = Reply(answer)
    outcome = judge(bench, server, tmp_path)
    record = _by_id(outcome)["p0000"]
    assert record["status"] == "invalid" and record["reason"]
    assert record["raw"] == answer
    assert record["verdicts"] == {"content": None, "voice_quality": None, "paralinguistics": None}
    assert record["overall"] is None and set(record["fused"].values()) == {None}
    assert server.request_count == 2  # the answer and one repair
    assert outcome.summary["status"]["invalid"] == 1


def test_rate_limit_waits_for_retry_after(tmp_path, server):
    bench = write_benchmark(tmp_path / "bench", 1)
    server.push(Fail(429, "slow down", retry_after=0.6))
    start = time.perf_counter()
    outcome = judge(bench, server, tmp_path)
    assert time.perf_counter() - start >= 0.6
    assert _by_id(outcome)["p0000"]["status"] == "ok"
    assert server.request_count == 2 and outcome.summary["run"]["retries"] == 1


def test_server_errors_are_retried_a_bounded_number_of_times(tmp_path, server):
    bench = write_benchmark(tmp_path / "bench", 2)
    server.push(Fail(500), Fail(503))
    outcome = judge(bench, server, tmp_path, concurrency=1, limit=1)
    assert _by_id(outcome)["p0000"]["status"] == "ok" and server.request_count == 3

    server.default = Fail(500, "the server is on fire")
    outcome = judge(bench, server, tmp_path, out="broken", concurrency=1)
    record = _by_id(outcome)["p0001"]
    assert record["status"] == "error" and "server is on fire" in record["reason"]
    assert server.request_count == 3 + 1 + FAST_RETRY.max_retries  # p0000 is cached; p0001: one try + retries


def test_slow_answers_time_out_and_are_retried(tmp_path, server):
    bench = write_benchmark(tmp_path / "bench", 1)
    server.push(Reply(verdict_json(), delay_s=1.5))
    outcome = judge(bench, server, tmp_path, timeout_s=0.4)
    assert _by_id(outcome)["p0000"]["status"] == "ok" and server.request_count == 2

    server.default = Reply(verdict_json(), delay_s=1.5)
    outcome = judge(
        bench,
        server,
        tmp_path,
        out="slow",
        timeout_s=0.4,
        temperature=0.1,
        retry=RetryPolicy(max_retries=1, base_delay_s=0.01),
    )
    record = _by_id(outcome)["p0000"]
    assert record["status"] == "error" and "timed out" in record["reason"] and "--timeout" in record["reason"]


@pytest.mark.parametrize(
    "failure, words",
    [
        (Fail(401, "invalid api key"), ["HTTP 401", "OPENAI_API_KEY", "TRACE_JUDGE_API_KEY"]),
        (Fail(403, "key lacks access"), ["HTTP 403", "OPENAI_API_KEY"]),
        (Fail(404, "model not found"), ["HTTP 404", "unknown model"]),
    ],
)
def test_rejected_key_or_unknown_model_stops_the_run_at_once(tmp_path, server, failure, words):
    bench = write_benchmark(tmp_path / "bench", 30)
    server.default = failure
    start = time.perf_counter()
    outcome = judge(bench, server, tmp_path, concurrency=2, retry=RetryPolicy())  # the default, slow backoff
    assert time.perf_counter() - start < 8
    assert outcome.stopped and all(w in outcome.stopped for w in words) and server.api_base in outcome.stopped
    assert "Traceback" not in outcome.stopped and "\n" not in outcome.stopped
    assert server.request_count <= 3  # not once per pair, never retried
    assert outcome.summary["run"]["retries"] == 0
    assert read_results(outcome.out / "results.jsonl").records == []
    assert len(outcome.summary["run"]["not_run"]) == 30


def test_missing_key_stops_before_any_call(tmp_path, monkeypatch):
    bench = write_benchmark(tmp_path / "bench", 1)
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "TRACE_JUDGE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(JudgeError, match="GEMINI_API_KEY"):
        run_judge(
            JudgeOptions(
                bench=bench,
                model="gemini/gemini-2.5-flash",
                cache_dir=tmp_path / "cache",
                out=tmp_path / "run",
                progress=False,
            ),
            notice=lambda message: None,
        )


def test_reasoning_per_dimension_is_ok_without_a_repair(tmp_path, server):
    bench = write_benchmark(tmp_path / "bench", 1)
    reasoning = {"content": "1 answers", "voice_quality": "both clean", "paralinguistics": "2 is calmer"}
    server.default = Reply(
        json.dumps({"reasoning": reasoning, "content": "1", "voice_quality": "both_good", "paralinguistics": "2"})
    )
    record = _by_id(judge(bench, server, tmp_path))["p0000"]
    assert record["status"] == "ok" and record["repairs"] == 0 and record["reasoning"] == reasoning
    assert server.request_count == 1


def test_a_token_budget_is_sent_by_default_and_overridden(tmp_path, server):
    from trace_eval.judge.backbones import default_token_budget

    bench = write_benchmark(tmp_path / "bench", 1)
    judge(bench, server, tmp_path)
    assert server.requests[-1]["max_tokens"] == default_token_budget(3, reasons_first=False)
    judge(bench, server, tmp_path, out="explicit", max_tokens=77, structured="off")
    assert server.requests[-1]["max_tokens"] == 77
    assert server.request_count == 2  # the budget is part of the cache key

    # With --max-tokens the key is what it was before budgets existed: those cached answers stay valid.
    from trace_eval.bench import load_benchmark
    from trace_eval.judge.cache import request_key
    from trace_eval.judge.runner import build_cases
    from trace_eval.rubrics import load_rubric

    prompt = load_rubric("trace").prompt(None)
    loaded = load_benchmark(bench)
    case = build_cases(loaded, loaded.pairs, load_rubric("trace"), prompt, ())[0]["p0000"][0]
    key = request_key(
        {
            "backbone": "openai/test-judge",
            "api_base": server.api_base,
            "prompt_version": prompt.id,
            "messages": prompt.render(case),
            "sampling": {"temperature": 0.0, "max_tokens": 77},
            "response_format": None,
            "sample_index": 0,
        }
    )
    assert (tmp_path / "cache" / key[:2] / f"{key}.json").is_file()


def test_an_answer_cut_at_the_budget_is_repaired_with_a_reminder_to_be_brief(tmp_path, server):
    bench = write_benchmark(tmp_path / "bench", 1)
    cut = '{"reasoning": "Response 1 opens with a warm greeting and then goes on to'
    server.push(Reply(cut, finish_reason="length"))
    record = _by_id(judge(bench, server, tmp_path, max_tokens=64))["p0000"]
    assert record["status"] == "ok" and record["repairs"] == 1
    reminder = server.requests[1]["messages"][-1]["content"]
    assert "cut at the token budget of 64 tokens" in reminder and "briefly" in reminder

    server.default = Reply(cut, finish_reason="length")
    record = _by_id(judge(bench, server, tmp_path, out="cut", max_tokens=65))["p0000"]
    assert record["status"] == "invalid" and record["reason"] == "cut at the token budget (65 tokens)"
    assert record["raw"] == cut and server.request_count == 4


def test_swap_maps_the_second_order_back_and_measures_consistency(bench, server, tmp_path):
    def responder(body):
        # Content: always prefers whatever is shown first (position bias).
        # Voice quality: always prefers "answer N one" wherever it is shown (consistent).
        text = prompt_text(body)
        one_first = text.index(' one"') < text.index(' two"')
        return Reply(verdict_json("1", "1" if one_first else "2", "both_good"))

    server.responder = responder
    outcome = judge(bench, server, tmp_path, swap=True)
    record = _by_id(outcome)["p0"]
    assert record["orders"]["original"] == {"content": "1", "voice_quality": "1", "paralinguistics": "both_good"}
    assert record["orders"]["swapped"] == {"content": "2", "voice_quality": "1", "paralinguistics": "both_good"}
    assert record["verdicts"] == {"content": "both_good", "voice_quality": "1", "paralinguistics": "both_good"}
    assert [s["order"] for s in record["samples"]] == ["original", "swapped"]
    assert server.request_count == 8
    consistency = outcome.summary["position_consistency"]
    assert consistency["rate"] == pytest.approx(2 / 3)
    assert consistency["per_dimension"] == {"content": 0.0, "voice_quality": 1.0, "paralinguistics": 1.0}


def test_samples_majority_and_sample_index_in_the_cache_key(tmp_path, server):
    bench = write_benchmark(tmp_path / "bench", 1)
    server.push(
        Reply(verdict_json("2", "1", "both_bad")),
        Reply(verdict_json("1", "1", "both_bad")),
        Reply(verdict_json("2", "both_good", "both_bad")),
    )
    outcome = judge(bench, server, tmp_path, samples=3, temperature=0.7)
    record = _by_id(outcome)["p0000"]
    assert record["verdicts"] == {"content": "2", "voice_quality": "1", "paralinguistics": "both_bad"}
    assert sorted(s["sample"] for s in record["samples"]) == [0, 1, 2]
    assert server.request_count == 3
    judge(bench, server, tmp_path, out="more", samples=4, temperature=0.7)
    assert server.request_count == 4  # samples 0-2 are cached, only sample 3 is new


def test_samples_majority_is_over_the_usable_answers(tmp_path, server):
    bench = write_benchmark(tmp_path / "bench", 2)
    # pair 0: one of three answers is garbage; pair 1: every answer is garbage
    server.push(
        Reply(verdict_json("2", "1", "both_bad")),
        Reply("no verdict here"),
        Reply(verdict_json("2", "both_good", "both_bad")),
        Reply("nothing"),
        Reply("still nothing"),
        Reply("no"),
    )
    outcome = judge(bench, server, tmp_path, samples=3, temperature=0.7, repair_attempts=0, concurrency=1)
    records = _by_id(outcome)
    usable = records["p0000"]
    assert usable["status"] == "ok" and "1 of 3 answers unusable" in usable["reason"]
    assert usable["verdicts"] == {"content": "2", "voice_quality": "1", "paralinguistics": "both_bad"}
    assert [s["status"] for s in sorted(usable["samples"], key=lambda s: s["sample"])] == ["ok", "invalid", "ok"]
    assert records["p0001"]["status"] == "invalid" and records["p0001"]["verdicts"]["content"] is None


def test_drop_hides_blueprint_groups_from_the_request(tmp_path, server):
    bench = write_benchmark(tmp_path / "bench", 1)
    judge(bench, server, tmp_path, drop=("emotion", "quality"))
    text = prompt_text(server.requests[0]).split("Response 1 blueprint (language: not recorded):")[1]
    assert "agent_emotion" not in text and "agent_audio_quality" not in text
    assert "agent_accent" in text and "agent_audio_properties" in text


def test_audio_judge_sends_audio_parts(tmp_path, server):
    bench = write_benchmark(tmp_path / "bench", 1, with_blueprints=False)  # the audio judge needs none
    outcome = judge(bench, server, tmp_path, judge="audio")
    assert _by_id(outcome)["p0000"]["status"] == "ok"
    parts = server.requests[0]["messages"][1]["content"]
    audio = [p["input_audio"] for p in parts if p.get("type") == "input_audio"]
    assert len(audio) == 3 and {a["format"] for a in audio} == {"wav"}
    assert base64.b64decode(audio[1]["data"]) == (bench / "audio" / "p0000_audio1.wav").read_bytes()


def test_structured_output_sends_the_verdict_schema(tmp_path, server):
    bench = write_benchmark(tmp_path / "bench", 1)
    judge(bench, server, tmp_path, structured="on")
    response_format = server.requests[0]["response_format"]
    assert response_format["type"] == "json_schema"
    schema = response_format["json_schema"]["schema"]
    assert schema["required"] == ["reasoning", "content", "voice_quality", "paralinguistics"]


def test_max_cost_stops_new_calls_and_skips_the_rest(tmp_path, server):
    bench = write_benchmark(tmp_path / "bench", 6)
    # 100 prompt tokens at 1000 USD per million: 0.10 USD per call.
    options = dict(model="openai/priced-judge", price_in_per_mtok=1000.0, price_out_per_mtok=0.0, concurrency=1)
    outcome = judge(bench, server, tmp_path, max_cost=0.25, **options)
    statuses = [r["status"] for r in read_results(outcome.out / "results.jsonl").records]
    assert statuses == ["ok"] * 3 + ["skipped"] * 3
    assert server.request_count == 3
    skipped = _by_id(outcome)["p0005"]
    assert skipped["reason"] == "max-cost reached" and skipped["verdicts"]["content"] is None
    assert outcome.summary["run"]["spent_usd"] == pytest.approx(0.3)
    assert outcome.summary["cost_usd"] == pytest.approx(0.3)
    with pytest.raises(JudgeError, match="--price-in"):
        judge(bench, server, tmp_path, out="unpriced", model="openai/unpriced-judge", max_cost=1.0)


def test_rerun_with_the_same_out_resumes(tmp_path, server):
    bench = write_benchmark(tmp_path / "bench", _specs(4))
    server.responder = lambda body: Fail(500) if _pair_of(body) == 2 else Reply(verdict_json())
    first = judge(bench, server, tmp_path)
    assert first.summary["status"] == {"ok": 3, "invalid": 0, "error": 1, "skipped": 0}
    calls = server.request_count
    # A run interrupted while writing p3 leaves its line cut short: it is ignored and p3 judged again.
    results = first.out / "results.jsonl"
    lines = [line for line in results.read_text().splitlines() if '"p3"' not in line]
    results.write_text("\n".join(lines) + '\n{"id": "p3", "status": "o')
    server.responder = None
    second = judge(bench, server, tmp_path, use_cache=False)
    assert server.request_count == calls + 2  # the failed pair and the cut one
    assert second.summary["status"]["ok"] == 4
    assert [r["id"] for r in read_results(second.out / "results.jsonl").records] == ["p0", "p1", "p2", "p3"]
    with pytest.raises(JudgeError, match="other settings"):
        judge(bench, server, tmp_path, model="openai/another-judge")


def test_rpm_spaces_calls(tmp_path, server):
    bench = write_benchmark(tmp_path / "bench", 4)
    start = time.perf_counter()
    judge(bench, server, tmp_path, rpm=300, concurrency=4)  # one call every 0.2 s
    assert time.perf_counter() - start >= 0.6


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # nobody listens there once the socket is closed


def test_refused_connection_stops_the_run_at_once(tmp_path):
    bench = write_benchmark(tmp_path / "bench", 10)
    api_base = f"http://127.0.0.1:{_closed_port()}/v1"
    start = time.perf_counter()
    outcome = run_judge(
        JudgeOptions(
            bench=bench,
            model="openai/test-judge",
            api_base=api_base,
            api_key="dummy",
            cache_dir=tmp_path / "cache",
            out=tmp_path / "run",
            progress=False,
            concurrency=2,
        ),
        notice=lambda message: None,
    )  # default, slow retry policy
    assert time.perf_counter() - start < 8
    assert outcome.stopped and "connection refused" in outcome.stopped and api_base in outcome.stopped
    assert "Traceback" not in outcome.stopped
    assert outcome.summary["run"]["retries"] == 0 and outcome.summary["run"]["calls"] == 0
    assert len(outcome.summary["run"]["not_run"]) == 10


def test_retries_counted_are_retries_made(tmp_path, server):
    bench = write_benchmark(tmp_path / "bench", 2)
    server.default = Fail(500, "down")
    outcome = judge(bench, server, tmp_path, concurrency=1)
    assert server.request_count == 2 * (1 + FAST_RETRY.max_retries)
    assert outcome.summary["run"]["retries"] == 2 * FAST_RETRY.max_retries


def test_audio_judge_needs_no_instruction_text(tmp_path, server):
    bench = write_benchmark(tmp_path / "bench", [PairSpec(id="a", instruction_text=None)], with_blueprints=False)
    outcome = judge(bench, server, tmp_path, judge="audio")
    assert _by_id(outcome)["a"]["status"] == "ok"


def test_a_spoken_instruction_heard_as_no_words_is_judged_on_what_needs_no_instruction(tmp_path, server):
    unheard = {**blueprint(""), "transcript_quality": {"reliable": False, "reason": "Whisper recognised no words"}}
    spec = PairSpec(id="a", instruction_text=None, instruction=unheard)
    bench = write_benchmark(tmp_path / "bench", [spec])
    server.responder = lambda body: Reply(verdict_json(None, "2", None))
    record = _by_id(judge(bench, server, tmp_path))["a"]
    body = server.requests[0]
    assert "(not known: the spoken instruction audio/a_instruction.wav has no recognised words" in prompt_text(body)
    assert body["response_format"]["json_schema"]["schema"]["required"] == ["reasoning", "voice_quality"]
    assert record["status"] == "ok"
    assert record["verdicts"] == {"content": None, "voice_quality": "2", "paralinguistics": None}
    why = "the spoken instruction audio/a_instruction.wav has no recognised words (Whisper recognised no words)"
    assert record["undetermined"] == {"content": why, "paralinguistics": why}
    assert record["overall"] is None  # Content decides first, and it is not known
    cues = _by_id(judge(bench, server, tmp_path, out="cues", model="cues"))["a"]
    assert cues["status"] == "ok" and cues["verdicts"]["content"] is None and cues["undetermined"]["content"] == why
    assert cues["verdicts"]["voice_quality"] is not None


def test_results_without_config_are_not_overwritten(tmp_path, server):
    bench = write_benchmark(tmp_path / "bench", 1)
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "results.jsonl").write_text('{"id": "precious"}\n')
    with pytest.raises(JudgeError, match="no config.json"):
        judge(bench, server, tmp_path)
    assert "precious" in (tmp_path / "run" / "results.jsonl").read_text()


def test_dry_run_counts_uncached_calls_tokens_and_price_and_asks_nothing(tmp_path, server):
    import litellm

    from trace_eval.judge.backbones import default_token_budget
    from trace_eval.judge.runner import dry_run
    from trace_eval.rubrics import load_rubric

    bench = write_benchmark(tmp_path / "bench", 3)
    judge(bench, server, tmp_path, limit=1)  # p0000 is cached from here on
    assert server.request_count == 1
    options = JudgeOptions(
        bench=bench,
        model="openai/test-judge",
        api_base=server.api_base,
        api_key="dummy",
        cache_dir=tmp_path / "cache",
        out=tmp_path / "dry",
        progress=False,
        price_in_per_mtok=1.0,
        price_out_per_mtok=2.0,
    )
    plan = dry_run(options)
    assert server.request_count == 1 and not (tmp_path / "dry").exists()
    assert (plan["pairs"], plan["calls"], plan["cached"]) == (3, 2, 1)

    # The two uncached prompts, counted as litellm counts them (a stand-in tokenizer for this model).
    prompt = load_rubric("trace").prompt(None)
    from trace_eval.bench import load_benchmark
    from trace_eval.judge.runner import build_cases

    loaded = load_benchmark(bench)
    cases, _ = build_cases(loaded, loaded.pairs[1:], load_rubric("trace"), prompt, ())
    expected = sum(
        litellm.token_counter(model="openai/test-judge", messages=prompt.render(original))
        for original, _ in cases.values()
    )
    assert plan["prompt_tokens"] == expected > 1000
    assert plan["tokens_exact"] is False
    budget = default_token_budget(3, reasons_first=False)
    assert plan["answer_tokens_max"] == 2 * budget
    assert plan["cost_usd_max"] == pytest.approx(expected * 1e-6 + 2 * budget * 2e-6)

    unpriced = dry_run(
        JudgeOptions(
            bench=bench,
            model="openai/test-judge",
            api_base=server.api_base,
            cache_dir=tmp_path / "cache",
            progress=False,
            use_cache=False,
        )
    )
    assert unpriced["price"] == "unknown price" and unpriced["cost_usd_max"] is None and unpriced["calls"] == 3
    assert server.request_count == 1


def test_dry_run_of_a_priced_openai_model_counts_with_its_tokenizer(tmp_path, monkeypatch):
    from trace_eval.judge.runner import dry_run

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # a dry run needs no key
    bench = write_benchmark(tmp_path / "bench", 1)
    plan = dry_run(JudgeOptions(bench=bench, model="openai/gpt-4o", cache_dir=tmp_path / "cache", progress=False))
    assert plan["tokens_exact"] is True and plan["calls"] == 1
    assert plan["price"]["input_per_mtok"] > 0 and plan["cost_usd_max"] > 0
