"""How long the judge command takes to start: to refuse a missing benchmark, and to make its first call.

    python scripts/bench_judge_start.py                  # 8 pairs, 3 runs of each measurement
    python scripts/bench_judge_start.py --pairs 12 --runs 5

Every figure is a whole `python -m trace_eval judge` process, as a user runs it:
1. `judge --bench MISSING`: the wall time to say that the benchmark folder does not exist;
2. an LLM judge (`--model openai/...`) over a synthetic benchmark of --pairs pairs against the local
   OpenAI-compatible test server (tests/llm_server.py), which answers at once: the time from the command's
   start to the server's first request, and to the command's end (target: 8 pairs in at most 8 s);
3. the same benchmark with `--model cues`: its wall time, and whether litellm was imported (it must not be).

Each is the median of --runs runs, with the CPU time the processes used; run it on a quiet machine (say the
load, `uptime`, beside the figures).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # this checkout, not an installed copy

from llm_server import LLMServer, Reply, verdict_json, write_benchmark  # noqa: E402


def _command(args: list[str], env: dict[str, str]) -> tuple[float, float, subprocess.CompletedProcess]:
    """(wall s, CPU s of the process, the finished process) of `python -m trace_eval ARGS`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.time()
    done = subprocess.run(
        [sys.executable, "-m", "trace_eval", *args], env=env, capture_output=True, text=True, cwd=ROOT
    )
    wall = time.time() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "TRACE_JUDGE_API_KEY": "dummy",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    env.pop("TRACE_JUDGE_MODEL", None)
    result: dict = {"pairs": args.pairs, "runs": args.runs, "load": os.getloadavg()}

    missing = [_command(["judge", "--bench", "/no/such/benchmark", "--model", "cues"], env) for _ in range(args.runs)]
    assert all(done.returncode == 2 and "not found" in done.stderr for *_, done in missing), missing[0][2].stderr
    result["missing_bench"] = {
        "wall_s": _median([w for w, *_ in missing]),
        "cpu_s": _median([c for _, c, _ in missing]),
    }

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        # A store of its own, for the benchmark written here and the commands that read it.
        os.environ["TRACE_STORE"] = env["TRACE_STORE"] = str(work / "store")
        bench = write_benchmark(work / "bench", args.pairs)
        env["TRACE_CACHE_DIR"] = str(work / "cache")
        first: list[float] = []
        lock = threading.Lock()

        def answer(body: dict) -> Reply:
            with lock:
                first.append(time.time())
            return Reply(verdict_json("1", "both_good", "2"))

        llm = {"first_call_s": [], "wall_s": [], "cpu_s": []}
        with LLMServer(responder=answer) as server:
            for n in range(args.runs):
                first.clear()
                started = time.time()
                argv_ = ["judge", "--bench", str(bench), "--model", "openai/start-judge", "--api-base"]
                argv_ += [server.api_base, "--no-cache", "--out", str(work / f"run-{n}"), "--quiet"]
                wall, cpu, done = _command(argv_, env)
                assert done.returncode == 0, done.stderr[-2000:]
                assert len(first) == args.pairs, (len(first), done.stderr[-2000:])
                llm["first_call_s"].append(min(first) - started)
                llm["wall_s"].append(wall)
                llm["cpu_s"].append(cpu)
        result["llm_judge"] = {key: _median(values) for key, values in llm.items()}

        cues = []
        for n in range(args.runs):
            argv_ = ["judge", "--bench", str(bench), "--model", "cues", "--out", str(work / f"cues-{n}"), "--quiet"]
            cues.append(_command(argv_, env))
        assert all(done.returncode == 0 for *_, done in cues), cues[0][2].stderr
        imported = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "trace_eval", *argv_[:-3], "--out", str(work / "cues-x")],
            env=env,
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        result["cues"] = {
            "wall_s": _median([w for w, *_ in cues]),
            "cpu_s": _median([c for _, c, _ in cues]),
            "imports_litellm": any(line.rstrip().endswith("| litellm") for line in imported.stderr.splitlines()),
        }
    result["load_after"] = os.getloadavg()
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
