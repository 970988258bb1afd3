"""Speed of the judge's call path against a local server that takes a fixed time per answer.

    python scripts/bench_judge.py                        # 200 pairs, 1 s per answer (the serial run takes ~200 s)
    python scripts/bench_judge.py --pairs 50 --latency 0.5

Measures, on a synthetic benchmark judged through litellm:
1. --concurrency 1 (every call waits for the previous one);
2. --concurrency 32, fresh cache (target: at least 20x faster than 1);
3. the same command again (target: zero calls, under 2 s).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from llm_server import LLMServer, Reply, verdict_json, write_benchmark  # noqa: E402
from trace_eval.judge import JudgeOptions, run_judge  # noqa: E402
from trace_eval.judge.backbones import import_litellm  # noqa: E402


def timed_run(bench: Path, server: LLMServer, cache: Path, out: Path, concurrency: int) -> dict:
    calls_before = server.request_count
    start = time.perf_counter()
    outcome = run_judge(JudgeOptions(bench=bench, model="openai/bench-judge", api_base=server.api_base,
                                     api_key="dummy", concurrency=concurrency, cache_dir=cache, out=out,
                                     progress=False), notice=lambda message: None)
    wall = time.perf_counter() - start
    return {"concurrency": concurrency, "wall_s": round(wall, 2),
            "server_requests": server.request_count - calls_before,
            "ok": outcome.summary["status"]["ok"], "cache_hits": outcome.summary["run"]["cache_hits"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--latency", type=float, default=1.0, help="seconds the server takes per answer")
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args(argv)

    import_litellm()  # its import (seconds) is not what is measured
    with tempfile.TemporaryDirectory() as tmp, LLMServer(default=Reply(verdict_json(), delay_s=args.latency)) as server:
        work = Path(tmp)
        bench = write_benchmark(work / "bench", args.pairs)
        serial = timed_run(bench, server, work / "cache-serial", work / "run-serial", 1)
        print(f"concurrency 1:  {serial['wall_s']:8.2f} s  ({serial['server_requests']} calls)", flush=True)
        parallel = timed_run(bench, server, work / "cache", work / "run-parallel", args.concurrency)
        print(f"concurrency {args.concurrency}: {parallel['wall_s']:8.2f} s  ({parallel['server_requests']} calls)",
              flush=True)
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
