"""Speed of the Python API (docs/api.md): `import trace_eval`, and `Judge(model="cues").compare` per pair once
the blueprints are in the store.

    python scripts/bench_api.py                 # 20 fresh processes for the import; 5 passes over examples/mini
    python scripts/bench_api.py --imports 50 --passes 10

1. `import trace_eval`, each in a fresh process: the seconds inside the process (perf_counter around the import)
   and the whole process's wall seconds beside those of `python -c pass`, medians.
2. `compare` over every pair of examples/mini (8 pairs, 23 clips) with the `cues` backbone, in a scratch cache
   ($TRACE_CACHE_DIR in a temporary folder, so nothing of the user's is read or written):
   - first pass: Stage 1 runs on the clips (CPU profile) — timed, but not the figure asked for;
   - "new judge": a Judge made afresh for each pass (as a new process would), Stage 1 finding every blueprint
     current in the store; per pair;
   - "same judge": one Judge over every pass, its blueprints already in memory; per pair.
   Wall and CPU seconds (user + system of this process) are reported: on a shared machine wall time counts
   the other work too.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MINI = ROOT / "examples" / "mini"
IMPORT = "import time; t = time.perf_counter(); import trace_eval; print(time.perf_counter() - t)"


def _process_seconds(code: str, repeat: int) -> tuple[list[float], list[float]]:
    """(wall seconds of each process, what each printed as a float, if anything)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    walls, printed = [], []
    for _ in range(repeat):
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
        walls.append(time.perf_counter() - started)
        if done.stdout.strip():
            printed.append(float(done.stdout.strip()))
    return walls, printed


def _cpu() -> float:
    usage = os.times()
    return usage.user + usage.system


def bench_import(repeat: int) -> dict:
    walls, inside = _process_seconds(IMPORT, repeat)
    bare, _ = _process_seconds("pass", repeat)
    return {
        "processes": repeat,
        "import_s_median": round(statistics.median(inside), 4),
        "process_wall_s_median": round(statistics.median(walls), 4),
        "bare_python_wall_s_median": round(statistics.median(bare), 4),
    }


def bench_compare(passes: int) -> dict:
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["TRACE_CACHE_DIR"] = scratch
        sys.path.insert(0, str(ROOT))
        import trace_eval
        from trace_eval.bench import load_benchmark

        bench = load_benchmark(MINI)
        pairs = [
            (bench.resolve(p.instruction_path), bench.resolve(p.audio1_path), bench.resolve(p.audio2_path), p)
            for p in bench.pairs
            if p.instruction_path and p.audio1_path and p.audio2_path
        ]

        def one_pass(judge) -> tuple[float, float]:
            wall, cpu = time.perf_counter(), _cpu()
            for instruction, a, b, pair in pairs:
                verdict = judge.compare(instruction, a, b, pair.instruction_text, id=pair.id)
                assert verdict.ok, verdict.reason
            return (time.perf_counter() - wall) / len(pairs), (_cpu() - cpu) / len(pairs)

        first = trace_eval.Judge(model="cues")
        first_wall, first_cpu = one_pass(first)
        fresh = [one_pass(trace_eval.Judge(model="cues")) for _ in range(passes)]
        same = trace_eval.Judge(model="cues")
        one_pass(same)  # its blueprints into memory
        kept = [one_pass(same) for _ in range(passes)]
        return {
            "pairs": len(pairs),
            "passes": passes,
            "first_pass_stage1_blueprints_made": first.blueprints_made,
            "first_pass_s_per_pair": {"wall": round(first_wall, 3), "cpu": round(first_cpu, 3)},
            "new_judge_s_per_pair": {
                "wall": round(statistics.median(w for w, _ in fresh), 4),
                "cpu": round(statistics.median(c for _, c in fresh), 4),
            },
            "same_judge_s_per_pair": {
                "wall": round(statistics.median(w for w, _ in kept), 4),
                "cpu": round(statistics.median(c for _, c in kept), 4),
            },
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--imports", type=int, default=20, help="fresh processes timing the import (default: 20)")
    parser.add_argument("--passes", type=int, default=5, help="timed passes over the pairs (default: 5)")
    args = parser.parse_args()
    result = {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}",
        "import": bench_import(args.imports),
        "compare_cues": bench_compare(args.passes),
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
