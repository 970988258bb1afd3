"""Speed of `python -m trace_eval leaderboard` on a large synthetic benchmark.

    python scripts/bench_leaderboard.py                       # 10,000 pairs, 20 systems, 1,000 resamples
    python scripts/bench_leaderboard.py --pairs 50000 --systems 40 --resamples 2000 --repeat 1

Writes, in a temporary folder, a benchmark manifest with human labels drawn from a Bradley-Terry model
with typed ties (no audio: a leaderboard reads none) and a judge run folder in the judge's format whose
labels agree with the human ones on four pairs in five. Then times the command as a user runs it, a new
Python process each time (start-up and imports included), on:

1. the human labels alone (`--bench DIR`), ranked on overall;
2. the run and the human labels (two sources and their rank agreement), ranked on overall;
3. the same on every dimension (`--by all`: four rankings per source, acceptability on each).

Target: case 2 at 10,000 pairs, 20 systems and 1,000 resamples in a few seconds. Reports the best of
--repeat runs (the machine may be shared) and the time in the leaderboard function itself.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout, not an installed copy

LABELS = ("1", "2", "both_good", "both_bad")
DIMENSIONS = ("content", "voice_quality", "paralinguistics")


def make_benchmark(root: Path, pairs: int, systems: int, seed: int) -> tuple[Path, Path]:
    """The benchmark folder and a run folder that judged it."""
    from trace_eval.rubrics import load_rubric

    fusion = load_rubric("trace").fusion
    rng = np.random.default_rng(seed)
    strengths = np.exp(rng.normal(0.0, 0.8, systems))
    names = [f"system-{n:02d}" for n in range(systems)]
    first = rng.integers(0, systems, pairs)
    second = (first + rng.integers(1, systems, pairs)) % systems
    p_first = strengths[first] / (strengths[first] + strengths[second])

    def draw(p: np.ndarray) -> np.ndarray:
        tie = 0.4 * np.minimum(p, 1 - p)
        u = rng.random(len(p))
        return np.where(
            u < p - tie / 2, "1", np.where(u < p + tie / 2, rng.choice(["both_good", "both_bad"], len(p)), "2")
        )

    human = {d: draw(p_first) for d in DIMENSIONS}
    judged = {d: np.where(rng.random(pairs) < 0.8, human[d], rng.choice(LABELS, pairs)) for d in DIMENSIONS}
    items, lines = [], []
    for n in range(pairs):
        dims = {d: str(human[d][n]) for d in DIMENSIONS}
        verdicts = {d: str(judged[d][n]) for d in DIMENSIONS}
        items.append(
            {
                "id": f"p{n:05d}",
                "instruction_path": f"audio/{n}/q.wav",
                "audio1_path": f"audio/{n}/a.wav",
                "audio2_path": f"audio/{n}/b.wav",
                "model_a": names[first[n]],
                "model_b": names[second[n]],
                "label": {**dims, "overall": fusion.fuse("cap", dims)},
            }
        )
        fused = fusion.fuse_all(verdicts)
        lines.append(
            {
                "id": f"p{n:05d}",
                "status": "ok",
                "reason": None,
                "verdicts": verdicts,
                "undetermined": {},
                "fused": fused,
                "overall": fused["cap"],
            }
        )
    bench = root / "bench"
    bench.mkdir()
    (bench / "manifest.json").write_text(json.dumps(items))
    run = root / "run"
    run.mkdir()
    (run / "config.json").write_text(
        json.dumps({"bench": str(bench), "model": "synthetic", "fusion": "cap", "rubric": "trace"})
    )
    (run / "results.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return bench, run


def timed(command: list[str], repeat: int) -> tuple[float, float]:
    """Best wall time and best CPU time (user + system) of the command as a new process, in seconds. On a
    shared machine the CPU time says more: the wall time counts the waits for a core."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    wall = cpu = float("inf")
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "trace_eval", "leaderboard", *command],
            check=True,
            env=env,
            stdout=subprocess.DEVNULL,
        )
        wall = min(wall, time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = min(cpu, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=10000)
    parser.add_argument("--systems", type=int, default=20)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3, help="runs per case; the best is reported")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    from trace_eval.evaluation import BootstrapSettings
    from trace_eval.evaluation.leaderboard import leaderboard

    with tempfile.TemporaryDirectory() as tmp:
        bench, run = make_benchmark(Path(tmp), args.pairs, args.systems, args.seed)
        resamples = ["--resamples", str(args.resamples)]
        cases = {
            "human labels, overall": ["--bench", str(bench), *resamples],
            "run + human labels, overall": [str(run), *resamples, "--out", str(Path(tmp) / "out")],
            "run + human labels, --by all": [str(run), *resamples, "--by", "all", "--out", str(Path(tmp) / "out-all")],
        }
        print(
            f"{args.pairs} pairs, {args.systems} systems, {args.resamples} resamples; best of {args.repeat}, "
            f"new process each time (start-up included); load average {os.getloadavg()[0]:.1f} on "
            f"{os.cpu_count()} cores"
        )
        for name, command in cases.items():
            wall, cpu = timed(command, args.repeat)
            print(f"  {name:30} wall {wall:6.2f} s   CPU {cpu:6.2f} s")
        start = time.perf_counter()
        board = leaderboard([run], by="overall", settings=BootstrapSettings(resamples=args.resamples))
        print(
            f"  leaderboard() alone, run + human labels, overall: wall {time.perf_counter() - start:.2f} s "
            f"(Kendall tau {board['agreement'][0]['kendall_tau']['value']:.2f})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
