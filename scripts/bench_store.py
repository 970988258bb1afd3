"""What the shared blueprint store saves: the same audio in a new folder, and a second bias audit.

    python scripts/bench_store.py [--clips 12] [--audit-clips 4] [--only NAMES] [--skip-audit] [--work DIR]

1. Twelve clips of generated speech (espeak-ng), four items of an instruction and two
   answers, as a benchmark folder. `python -m trace_eval blueprints FOLDER --device cpu`
   on it as a whole process, into an empty store (every section computed: the time a
   new folder cost before the store was shared); then the same audio copied to a new
   folder and the same command again (every blueprint found in the store).
2. `python -m trace_eval audit FOLDER --model cues --out A` (the copies' blueprints
   computed), then the same audit with `--out B` (every copy found in the store).

Each run is a new process with its own empty store ($TRACE_STORE in a temporary
folder), so the figures do not depend on what the machine blueprinted before. Wall
and CPU seconds (user + system, children included) are printed with the machine's
core count and load average, as docs/speed.md reports them.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEXTS = [
    "What time does the museum open on Sunday?",
    "It opens at ten in the morning and closes at six.",
    "The museum is closed on Sundays, sorry.",
    "Can you recommend a good book about the ocean?",
    "Try The Sea Around Us by Rachel Carson.",
    "I do not know any books.",
    "Please say something cheerful to start my day.",
    "Good morning! Today is full of bright chances.",
    "Whatever. Another day.",
    "How do I boil an egg?",
    "Put it in boiling water for about nine minutes.",
    "Eggs are laid by hens.",
]


def make_bench(folder: Path, count: int) -> None:
    from trace_eval.synth import Voice, speak

    voices = [Voice(wpm=150), Voice(wpm=175, voice="en-gb", pitch=60), Voice(wpm=165, voice="en-us+f3")]
    items = []
    for i in range(count):
        speak(TEXTS[i % len(TEXTS)], folder / "audio" / f"c{i:02}.wav", voices[i % len(voices)])
    for n in range(count // 3):
        names = [f"audio/c{3 * n + k:02}.wav" for k in range(3)]
        items.append(
            {
                "id": f"q{n}",
                "instruction_path": names[0],
                "audio1_path": names[1],
                "audio2_path": names[2],
                "model_a": "A",
                "model_b": "B",
            }
        )
    (folder / "manifest.json").write_text(json.dumps(items, indent=1))


def measured(command: list[str], env: dict) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (the command and every process it started) and its output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clips", type=int, default=12, help="clips of the benchmark (default: 12)")
    parser.add_argument("--audit-clips", type=int, default=4, help="clips the audit probes (default: 4, as audit)")
    parser.add_argument("--only", default=None, help="Stage 1 extractors (default: every one, as users run it)")
    parser.add_argument("--skip-audit", action="store_true", help="measure the new folder only")
    parser.add_argument("--work", type=Path, default=None, help="keep the folders here (default: a temporary one)")
    args = parser.parse_args()

    work = args.work or Path(tempfile.mkdtemp(prefix="bench_store_"))
    work.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    env["TRACE_STORE"] = str(work / "store")
    env["TRACE_CACHE_DIR"] = str(work / "cache")  # the judge's answer cache too: nothing from earlier runs
    only = ["--only", args.only] if args.only else []
    python = [sys.executable, "-m", "trace_eval"]
    print(
        f"bench_store: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}, "
        f"Python {sys.version.split()[0]}, store {work / 'store'}"
    )
    first = work / "first"
    make_bench(first, args.clips)
    second = work / "second"
    shutil.copytree(first, second)

    results = {}
    for name, folder in (("first folder, empty store", first), ("same audio, new folder", second)):
        wall, cpu, out = measured(python + ["blueprints", str(folder), "--device", "cpu", "--quiet", *only], env)
        summary = json.loads((folder / "blueprints" / "summary.json").read_text())
        results[name] = {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "computed": summary["computed"]}
        print(
            f"  blueprints, {name:28s} wall {wall:6.2f} s  CPU {cpu:6.2f} s  "
            f"computed {summary['computed']}  cached {summary['cached']}"
        )
    if not args.skip_audit:
        for name, out_dir in (("first audit", work / "audit-a"), ("second audit, another --out", work / "audit-b")):
            command = python + ["audit", str(first), "--model", "cues", "--out", str(out_dir), "--device", "cpu"]
            command += ["--clips", str(args.audit_clips), "--quiet", *only]
            wall, cpu, _ = measured(command, env)
            audit = json.loads((out_dir / "audit.json").read_text())
            made = audit["blueprints"] or {}
            results[name] = {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "computed": made.get("computed")}
            print(
                f"  audit,      {name:28s} wall {wall:6.2f} s  CPU {cpu:6.2f} s  "
                f"computed {made.get('computed')}  cached {made.get('cached')}"
            )
    (work / "bench_store.json").write_text(json.dumps(results, indent=1))
    print(f"  figures in {work / 'bench_store.json'}")
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
