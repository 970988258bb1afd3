"""Speed of the judge's call path against a local server that takes a fixed time per answer.

    python scripts/bench_judge.py                        # 200 pairs, 1 s per answer (the serial run takes ~200 s)
    python scripts/bench_judge.py --pairs 50 --latency 0.5
    python scripts/bench_judge.py --answer-size          # tokens of realistic answers vs the default budget

Measures, on a synthetic benchmark judged through litellm:
1. --concurrency 1 (every call waits for the previous one);
2. --concurrency 32, fresh cache (target: at least 20x faster than 1);
3. the same command again (target: zero calls, under 2 s).

--answer-size counts, with litellm's token_counter, realistic answers (two sentences of
reasoning per dimension, the longest the prompts ask for) for the TRACE rubric and a
five-dimension pointwise rubric, against the default token budget (target: at least 3x).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # this checkout, not an installed copy

from llm_server import LLMServer, Reply, verdict_json, write_benchmark  # noqa: E402

from trace_eval.judge import JudgeOptions, run_judge  # noqa: E402
from trace_eval.judge.litellm_backbone import import_litellm  # noqa: E402


def timed_run(bench: Path, server: LLMServer, cache: Path, out: Path, concurrency: int) -> dict:
    calls_before = server.request_count
    start = time.perf_counter()
    outcome = run_judge(
        JudgeOptions(
            bench=bench,
            model="openai/bench-judge",
            api_base=server.api_base,
            api_key="dummy",
            concurrency=concurrency,
            cache_dir=cache,
            out=out,
            progress=False,
        ),
        notice=lambda message: None,
    )
    wall = time.perf_counter() - start
    return {
        "concurrency": concurrency,
        "wall_s": round(wall, 2),
        "server_requests": server.request_count - calls_before,
        "ok": outcome.summary["status"]["ok"],
        "cache_hits": outcome.summary["run"]["cache_hits"],
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
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--latency", type=float, default=1.0, help="seconds the server takes per answer")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument(
        "--answer-size",
        action="store_true",
        help="only measure realistic answers' tokens against the default token budget",
    )
    args = parser.parse_args(argv)
    if args.answer_size:
        rows = answer_sizes()
        return 0 if all(row["margin"] >= 3 for row in rows.values()) else 1

    import_litellm()  # its import (seconds) is not what is measured
    with tempfile.TemporaryDirectory() as tmp, LLMServer(default=Reply(verdict_json(), delay_s=args.latency)) as server:
        work = Path(tmp)
        bench = write_benchmark(work / "bench", args.pairs)
        serial = timed_run(bench, server, work / "cache-serial", work / "run-serial", 1)
        print(f"concurrency 1:  {serial['wall_s']:8.2f} s  ({serial['server_requests']} calls)", flush=True)
        parallel = timed_run(bench, server, work / "cache", work / "run-parallel", args.concurrency)
        print(
            f"concurrency {args.concurrency}: {parallel['wall_s']:8.2f} s  ({parallel['server_requests']} calls)",
            flush=True,
        )
        cached = timed_run(bench, server, work / "cache", work / "run-cached", args.concurrency)
        print(f"cached re-run:  {cached['wall_s']:8.2f} s  ({cached['server_requests']} calls)", flush=True)

    speedup = serial["wall_s"] / parallel["wall_s"]
    report = {
        "pairs": args.pairs,
        "latency_s": args.latency,
        "runs": [serial, parallel, cached],
        "speedup": round(speedup, 1),
        "targets": {
            "speedup_at_least_20x": speedup >= 20,
            "cached_rerun_zero_calls": cached["server_requests"] == 0,
            "cached_rerun_under_2s": cached["wall_s"] < 2.0,
        },
    }
    print(json.dumps(report, indent=2))
    return 0 if all(report["targets"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
