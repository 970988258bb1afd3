"""An OpenAI-compatible server at --api-base spoken to directly over HTTP, against the same calls through litellm.

Both paths talk to the real local server of tests/llm_server.py: the same requests, answers, cache keys, token
counts, cost and failures (TRACE_JUDGE_VIA_LITELLM sends the calls through litellm).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import socket
from pathlib import Path

import pytest
from llm_server import Fail, LLMServer, Reply, prompt_text, verdict_json, write_benchmark

from trace_eval.judge import JudgeOptions, RetryPolicy, run_judge
from trace_eval.judge.backbones import BackboneError, BackboneSettings, make_backbone
from trace_eval.judge.openai_http import VIA_LITELLM, speaks_directly
from trace_eval.judge.runfolder import read_results
from trace_eval.rubrics import load_rubric

FAST_RETRY = RetryPolicy(max_retries=2, base_delay_s=0.01, max_delay_s=0.05)
LABELS = ("1", "2", "both_good", "both_bad")


def _varied(body: dict) -> Reply:
    """A verdict that depends on the prompt, so that answers kept for the wrong request would show."""
    digest = hashlib.sha256(prompt_text(body).encode()).digest()
    content, quality, para = (LABELS[b % 4] for b in digest[:3])
    return Reply(verdict_json(content, quality, para), prompt_tokens=100 + digest[3], completion_tokens=20 + digest[4])


def _judge(bench: Path, server: LLMServer, cache: Path, out: Path, **options):
    return run_judge(
        JudgeOptions(
            bench=bench,
            model="openai/local-judge",
            api_base=server.api_base,
            api_key="dummy",
            retry=FAST_RETRY,
            cache_dir=cache,
            out=out,
            progress=False,
            **options,
        ),
        notice=lambda message: None,
    )


def _records(outcome) -> dict[str, dict]:
    """What each pair's record says that both paths must agree on (not latency)."""
    keep = ("status", "verdicts", "overall", "raw", "tokens", "cost_usd", "confidence")
    return {r["id"]: {k: r.get(k) for k in keep} for r in read_results(outcome.out / "results.jsonl").records}


def _cache_entries(cache: Path) -> dict[str, dict]:
    entries = {}
    for path in cache.rglob("*.json"):
        entry = json.loads(path.read_text())
        entries[path.stem] = {k: v for k, v in entry.items() if k not in ("created", "latency_s")}
    return entries


def test_only_an_openai_id_with_an_api_base_is_spoken_to_directly(monkeypatch):
    monkeypatch.delenv(VIA_LITELLM, raising=False)
    assert speaks_directly("openai/qwen2.5:7b", "http://localhost:11434/v1")
    assert not speaks_directly("openai/gpt-4o", None)
    # OpenAI's own models behind a proxy: litellm knows which parameters they refuse, and their price.
    assert not speaks_directly("openai/gpt-4o", "https://proxy.example/v1")
    assert not speaks_directly("openai/o3-mini", "https://proxy.example/v1")
    assert not speaks_directly("gemini/gemini-2.5-flash", "http://localhost:8000/v1")
    monkeypatch.setenv(VIA_LITELLM, "1")
    assert not speaks_directly("openai/qwen2.5:7b", "http://localhost:11434/v1")
    monkeypatch.setenv(VIA_LITELLM, "0")
    assert speaks_directly("openai/qwen2.5:7b", "http://localhost:11434/v1")


@pytest.mark.parametrize("prompt", ["trace", "audio"])
def test_both_paths_send_the_same_requests_and_keep_the_same_answers_under_the_same_keys(prompt, tmp_path, monkeypatch):
    bench = write_benchmark(tmp_path / "bench", 5)
    # Log-probabilities and prices: every field of a request and of a record is compared.
    options = {"judge": prompt, "logprobs": True, "price_in_per_mtok": 1.0, "price_out_per_mtok": 2.0}
    with LLMServer(responder=_varied) as server:
        monkeypatch.setenv(VIA_LITELLM, "1")
        via_litellm = _judge(bench, server, tmp_path / "cache", tmp_path / "litellm", **options)
        through_litellm = list(server.requests)
        monkeypatch.delenv(VIA_LITELLM)
        # The same cache read directly: every key is found, nothing is asked.
        cached = _judge(bench, server, tmp_path / "cache", tmp_path / "cached", **options)
        assert server.request_count == len(through_litellm) == 5
        assert cached.summary["run"]["calls"] == 0 and cached.summary["run"]["cache_hits"] == 5
        direct = _judge(bench, server, tmp_path / "direct-cache", tmp_path / "direct", **options)
        directly = server.requests[len(through_litellm) :]

    def canonical(bodies: list[dict]) -> list[str]:
        return sorted(json.dumps(body, sort_keys=True) for body in bodies)

    assert canonical(directly) == canonical(through_litellm)
    assert "response_format" in directly[0] and directly[0]["logprobs"] is True
    assert _records(direct) == _records(via_litellm) == _records(cached)
    assert {r["verdicts"]["content"] for r in _records(direct).values()} != {None}
    assert all(r["cost_usd"] and r["tokens"]["prompt"] >= 100 for r in _records(direct).values())
    assert _cache_entries(tmp_path / "direct-cache") == _cache_entries(tmp_path / "cache")
    assert direct.summary["cost_usd"] == pytest.approx(via_litellm.summary["cost_usd"])


def test_without_prices_a_local_server_s_answers_cost_nothing_known(tmp_path, monkeypatch):
    monkeypatch.delenv(VIA_LITELLM, raising=False)
    bench = write_benchmark(tmp_path / "bench", 2)
    with LLMServer() as server:
        outcome = _judge(bench, server, tmp_path / "cache", tmp_path / "run")
    assert [r["cost_usd"] for r in _records(outcome).values()] == [None, None]
    assert outcome.summary["cost_usd"] is None  # "answers cost unknown", as through litellm


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # nobody listens there once the socket is closed


def _failure_of(monkeypatch, via_litellm: bool, api_base: str, timeout_s: float = 30.0) -> tuple:
    """What one call fails with: (exception, message, kind, Retry-After) of the path asked for."""
    if via_litellm:
        monkeypatch.setenv(VIA_LITELLM, "1")
    else:
        monkeypatch.delenv(VIA_LITELLM, raising=False)
    rubric = load_rubric("trace")
    settings = BackboneSettings(
        model="openai/local-judge", rubric=rubric, prompt=rubric.prompt(None), api_base=api_base, timeout_s=timeout_s
    )
    backbone = make_backbone("litellm", settings)
    messages = [{"role": "user", "content": "judge"}]

    async def call() -> None:
        try:
            await backbone.complete(messages, None, None, 64)  # type: ignore[arg-type]
        finally:
            await backbone.close()

    try:
        asyncio.run(call())
    except BackboneError as e:
        return type(e).__name__, str(e), getattr(e, "kind", None), getattr(e, "retry_after_s", None)
    return ("answered",)


@pytest.mark.parametrize(
    "failure",
    [
        Fail(401, "invalid key"),
        Fail(403, "not allowed"),
        Fail(404, "no model named local-judge"),
        Fail(400, "prompt is longer than the context"),
        Fail(422, "unprocessable"),
        Fail(429, "slow down", retry_after=2),
        Fail(500, "the model crashed"),
        Fail(503, "loading the model"),
        Fail(408, "request timeout"),
    ],
    ids=lambda f: str(f.status),
)
def test_an_error_status_fails_the_same_way_on_both_paths(failure, monkeypatch):
    with LLMServer() as server:
        server.push(failure, failure)
        through_litellm = _failure_of(monkeypatch, True, server.api_base)
        directly = _failure_of(monkeypatch, False, server.api_base)
    assert directly == through_litellm
    assert directly[0] != "answered" and "Exception" not in directly[1]


@pytest.mark.parametrize("where", ["refused", "name", "tls", "timeout"])
def test_no_answer_fails_the_same_way_on_both_paths(where, monkeypatch):
    with LLMServer(default=Reply(verdict_json(), delay_s=1.0)) as server:
        api_base, timeout_s = {
            "refused": (f"http://127.0.0.1:{_closed_port()}/v1", 30.0),
            "name": ("http://judge.invalid:8000/v1", 30.0),
            "tls": (f"https://127.0.0.1:{server.port}/v1", 30.0),
            "timeout": (server.api_base, 0.2),
        }[where]
        through_litellm = _failure_of(monkeypatch, True, api_base, timeout_s)
        directly = _failure_of(monkeypatch, False, api_base, timeout_s)
    assert directly == through_litellm
    assert directly[0] == "TransientBackboneError" and directly[2] == where


def test_an_answer_that_is_no_verdict_is_repaired_then_recorded_as_invalid(tmp_path, monkeypatch):
    monkeypatch.delenv(VIA_LITELLM, raising=False)
    bench = write_benchmark(tmp_path / "bench", 1)
    with LLMServer() as server:
        server.push(Reply("Response 1 is better."), Reply(verdict_json()))
        repaired = _judge(bench, server, tmp_path / "cache", tmp_path / "repaired")
        server.default = Reply("I cannot decide.")
        invalid = _judge(bench, server, tmp_path / "other-cache", tmp_path / "invalid")
        assert server.request_count == 4  # each answer, and one repair of each
    assert _records(repaired)["p0000"]["status"] == "ok"
    assert _records(invalid)["p0000"]["status"] == "invalid" and _records(invalid)["p0000"]["raw"] == "I cannot decide."
