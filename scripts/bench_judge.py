"""Speed of the judge as a whole command against a local server that takes a fixed time per answer.

    python scripts/bench_judge.py                        # 40 pairs, 1 s per answer, concurrency 16 against 1
    python scripts/bench_judge.py --pairs 200 --concurrency 32
    python scripts/bench_judge.py --answer-size          # tokens of realistic answers vs the default budget

Every figure is a whole `python -m trace_eval judge` process, start and end included, against the local
OpenAI-compatible test server (tests/llm_server.py), whose verdicts depend on the prompt:
1. --concurrency 1, fresh cache (every call waits for the previous one);
2. --concurrency N, fresh cache (target: at least 10x faster than 1);
3. the same command again (target: no call);
4. as 2, through litellm (TRACE_JUDGE_VIA_LITELLM=1), fresh cache: its time, and (targets) the same requests,
   the same verdicts and the same cache keys as 2.

--answer-size counts, with litellm's token_counter, realistic answers (two sentences of
reasoning per dimension, the longest the prompts ask for) for the TRACE rubric and a
five-dimension pointwise rubric, against the default token budget (target: at least 3x).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # this checkout, not an installed copy

from llm_server import LLMServer, Reply, prompt_text, verdict_json, write_benchmark  # noqa: E402

from trace_eval.judge.litellm_backbone import import_litellm  # noqa: E402

LABELS = ("1", "2", "both_good", "both_bad")


def varied(latency_s: float):
    """The server's answers: a verdict that depends on the prompt, after `latency_s` seconds."""

    def answer(body: dict) -> Reply:
        digest = hashlib.sha256(prompt_text(body).encode()).digest()
        return Reply(verdict_json(*(LABELS[b % 4] for b in digest[:3])), delay_s=latency_s)

    return answer


def timed_command(bench: Path, server: LLMServer, cache: Path, out: Path, concurrency: int, env: dict) -> dict:
    """One `judge` command: its wall time, the requests the server got, and the verdicts it wrote."""
    requests_before = server.request_count
    argv = ["judge", "--bench", str(bench), "--model", "openai/bench-judge", "--api-base", server.api_base]
    argv += ["--concurrency", str(concurrency), "--out", str(out), "--quiet"]
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "trace_eval", *argv],
        env={**env, "TRACE_CACHE_DIR": str(cache)},
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    wall = time.perf_counter() - start
    assert done.returncode == 0, done.stderr[-2000:]
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines() if line.strip()]
    return {
        "concurrency": concurrency,
        "wall_s": round(wall, 2),
        "server_requests": server.request_count - requests_before,
        "ok": sum(r["status"] == "ok" for r in records),
        "verdicts": {r["id"]: r["verdicts"] for r in records},
        "requests": server.requests[requests_before:],
        "cache_keys": sorted(path.stem for path in cache.rglob("*.json")),
    }


# Answers as a careful judge writes them: two sentences per dimension, reasoning one text per dimension.
_TRACE_ANSWER = {
    "reasoning": {
        "content": "Response 1 says the requested sentence word for word and adds nothing else. Response 2 "
        "paraphrases it and drops the closing phrase, so it does not do what was asked.",
        "voice_quality": "Both recordings are clean: DNSMOS overall quality is 3.3 and 3.2, with no audible noise, "
        "clipping or artefacts. Neither is clearly better.",
        "paralinguistics": "The instruction asks for a slow, calm delivery. Response 1 speaks at 110 words per "
        "minute with a neutral tone, while Response 2 rushes at 210 words per minute and "
        "sounds excited.",
    },
    "content": "1",
    "voice_quality": "both_good",
    "paralinguistics": "1",
}
_POINTWISE_ANSWER = {
    "reasoning": {
        "logical_coherence": "The answer follows from the question and never contradicts itself. Each step "
        "leads to the next without gaps.",
        "content_relevance": "It stays on the customer's complaint throughout. One aside about the weather "
        "is irrelevant but short.",
        "context_consistency": "It remembers the order number and the delivery date given two turns earlier. "
        "Nothing conflicts with the dialogue history.",
        "emotional_appropriateness": "The tone is apologetic and warm, which suits an upset customer. The "
        "pitch falls at the end of each sentence, which sounds sincere.",
        "style_alignment": "The character is a formal concierge; the wording is polite and measured. The "
        "pace of 140 words per minute matches the unhurried style asked for.",
    },
    "logical_coherence": 5,
    "content_relevance": 4,
    "context_consistency": 5,
    "emotional_appropriateness": 4,
    "style_alignment": 4,
}


def answer_sizes() -> dict:
    from trace_eval.judge.backbones import default_token_budget

    litellm = import_litellm()
    rows = {}
    for name, answer in (("trace (3 dimensions)", _TRACE_ANSWER), ("pointwise (5 dimensions)", _POINTWISE_ANSWER)):
        text = json.dumps(answer, indent=2)
        tokens = litellm.token_counter(model="gpt-4o", text=text)
        budget = default_token_budget(len(answer) - 1, reasons_first=False)
        rows[name] = {"answer_tokens": tokens, "budget": budget, "margin": round(budget / tokens, 1)}
        print(
            f"{name:26} answer {tokens:4d} tokens, default budget {budget:5d} ({budget / tokens:.1f}x); "
            f"models that reason first: {default_token_budget(len(answer) - 1, reasons_first=True)}"
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=40)
    parser.add_argument("--latency", type=float, default=1.0, help="seconds the server takes per answer")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument(
        "--answer-size",
        action="store_true",
        help="only measure realistic answers' tokens against the default token budget",
    )
    args = parser.parse_args(argv)
    if args.answer_size:
        rows = answer_sizes()
        return 0 if all(row["margin"] >= 3 for row in rows.values()) else 1

    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRACE_JUDGE_API_KEY": "dummy"}
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    env.pop("TRACE_JUDGE_VIA_LITELLM", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package has its bytecode: the runs below use it
    with tempfile.TemporaryDirectory() as tmp, LLMServer(responder=varied(args.latency)) as server:
        work = Path(tmp)
        os.environ["TRACE_STORE"] = env["TRACE_STORE"] = str(work / "store")  # a store of its own
        bench = write_benchmark(work / "bench", args.pairs)
        timed_command(bench, server, work / "cache-warm-up", work / "run-warm-up", args.pairs, env)  # bytecode
        serial = timed_command(bench, server, work / "cache-serial", work / "run-serial", 1, env)
        print(f"concurrency 1:  {serial['wall_s']:8.2f} s  ({serial['server_requests']} calls)", flush=True)
        parallel = timed_command(bench, server, work / "cache", work / "run-parallel", args.concurrency, env)
        print(
            f"concurrency {args.concurrency}: {parallel['wall_s']:8.2f} s  ({parallel['server_requests']} calls)",
            flush=True,
        )
        cached = timed_command(bench, server, work / "cache", work / "run-cached", args.concurrency, env)
        print(f"cached re-run:  {cached['wall_s']:8.2f} s  ({cached['server_requests']} calls)", flush=True)
        via_env = {**env, "TRACE_JUDGE_VIA_LITELLM": "1"}
        litellm = timed_command(bench, server, work / "cache-litellm", work / "run-litellm", args.concurrency, via_env)
        print(
            f"through litellm, concurrency {args.concurrency}: {litellm['wall_s']:8.2f} s  "
            f"({litellm['server_requests']} calls)",
            flush=True,
        )

    def canonical(requests: list[dict]) -> list[str]:
        return sorted(json.dumps(body, sort_keys=True) for body in requests)

    speedup = serial["wall_s"] / parallel["wall_s"]
    runs = [serial, parallel, cached, litellm]
    report = {
        "pairs": args.pairs,
        "latency_s": args.latency,
        "runs": [{k: v for k, v in run.items() if k not in ("verdicts", "requests", "cache_keys")} for run in runs],
        "speedup": round(speedup, 1),
        "litellm_wall_s": litellm["wall_s"],
        "targets": {
            "speedup_at_least_10x": speedup >= 10,
            "cached_rerun_no_call": cached["server_requests"] == 0,
            "every_pair_ok": all(run["ok"] == args.pairs for run in runs),
            "litellm_same_requests": canonical(litellm["requests"]) == canonical(parallel["requests"]),
            "litellm_same_verdicts": litellm["verdicts"] == parallel["verdicts"],
            "litellm_same_cache_keys": litellm["cache_keys"] == parallel["cache_keys"],
        },
    }
    print(json.dumps(report, indent=2))
    return 0 if all(report["targets"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
