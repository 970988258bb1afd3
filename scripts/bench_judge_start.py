"""How long the judge command takes to start: to refuse a missing benchmark, and to make its first call.

    python scripts/bench_judge_start.py                  # 8 pairs, 3 runs of each measurement
    python scripts/bench_judge_start.py --pairs 12 --runs 5

Every figure is a whole `python -m trace_eval judge` process, as a user runs it:
1. `judge --bench MISSING`: the wall time to say that the benchmark folder does not exist;
2. an LLM judge (`--model openai/NAME --api-base URL`) over a synthetic benchmark of --pairs pairs against the
   local OpenAI-compatible test server (tests/llm_server.py), which answers at once: the time from the command's
   start to the server's first request (target: within 1 s), and to the command's end; the modules it imports
   (targets: no litellm, no OpenAI client, no torch) and the heaviest of them;
3. the same through litellm (TRACE_JUDGE_VIA_LITELLM=1), as every such judge ran before it was spoken to directly;
4. the same benchmark with `--model cues`: its wall time, and whether litellm was imported (it must not be).

Each is the median of --runs runs, after one run that writes the bytecode an installed package has, with the
CPU time the processes used; run it on a quiet machine (say the load, `uptime`, beside the figures).
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

VIA_LITELLM = "TRACE_JUDGE_VIA_LITELLM"


def _command(args: list[str], env: dict[str, str]) -> tuple[float, float, subprocess.CompletedProcess]:
    """(wall s, CPU s of the process, the finished process) of `python -m trace_eval ARGS` (`-X OPTION` first:
    the interpreter's)."""
    interpreter = args[:2] if args[:1] == ["-X"] else []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.time()
    done = subprocess.run(
        [sys.executable, *interpreter, "-m", "trace_eval", *args[len(interpreter) :]],
        env=env,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    wall = time.time() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 2)


def _imports(stderr: str) -> dict[str, tuple[float, bool]]:
    """Each module imported: (seconds with what it imported, whether it was imported at the top level rather
    than by another module), from `python -X importtime`'s report."""
    found = {}
    for line in stderr.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            _, cumulative, name = line.split("|")
            if cumulative.strip().isdigit():
                found[name.strip()] = (int(cumulative) / 1e6, not name.startswith("  "))
    return found


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
    env.pop("TRACE_JUDGE_VIA_LITELLM", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package has its bytecode: the runs below use it
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

        with LLMServer(responder=answer) as server:
            argv_ = ["judge", "--bench", str(bench), "--model", "openai/start-judge", "--api-base", server.api_base]
            argv_ += ["--no-cache", "--quiet"]
            for name, run_env in (("llm_judge", env), ("llm_judge_through_litellm", env | {VIA_LITELLM: "1"})):
                llm: dict[str, list[float]] = {"first_call_s": [], "wall_s": [], "cpu_s": []}
                for n in range(-1, args.runs):  # run -1 writes the bytecode
                    first.clear()
                    started = time.time()
                    wall, cpu, done = _command([*argv_, "--out", str(work / f"{name}-{n}")], run_env)
                    assert done.returncode == 0, done.stderr[-2000:]
                    assert len(first) == args.pairs, (len(first), done.stderr[-2000:])
                    if n >= 0:
                        llm["first_call_s"].append(min(first) - started)
                        llm["wall_s"].append(wall)
                        llm["cpu_s"].append(cpu)
                result[name] = {key: _median(values) for key, values in llm.items()}
            imported = _imports(_command(["-X", "importtime", *argv_, "--out", str(work / "imports")], env)[2].stderr)
        result["llm_judge"]["imports"] = {name: name in imported for name in ("litellm", "openai", "torch")}
        heaviest = sorted(((s, name) for name, (s, top) in imported.items() if top), reverse=True)[:6]
        result["llm_judge"]["heaviest_imports_s"] = {name: round(s, 3) for s, name in heaviest}
        result["targets"] = {
            "first_call_within_1s": result["llm_judge"]["first_call_s"] <= 1.0,
            "no_litellm_openai_or_torch": not any(result["llm_judge"]["imports"].values()),
        }

        cues = []
        for n in range(args.runs):
            argv_ = ["judge", "--bench", str(bench), "--model", "cues", "--out", str(work / f"cues-{n}"), "--quiet"]
            cues.append(_command(argv_, env))
        assert all(done.returncode == 0 for *_, done in cues), cues[0][2].stderr
        imported = _imports(_command(["-X", "importtime", *argv_[:-3], "--out", str(work / "cues-x")], env)[2].stderr)
        result["cues"] = {
            "wall_s": _median([w for w, *_ in cues]),
            "cpu_s": _median([c for _, c, _ in cues]),
            "imports_litellm": "litellm" in imported,
        }
    result["load_after"] = os.getloadavg()
    print(json.dumps(result, indent=2))
    return 0 if all(result["targets"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
