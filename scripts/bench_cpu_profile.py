"""The CPU profile on the example as a user meets it: one whole process, a fresh store, nothing cached.

    python scripts/bench_cpu_profile.py                   # three runs of this checkout
    python scripts/bench_cpu_profile.py --tree ../main    # the same runs of another checkout (before/after)
    python scripts/bench_cpu_profile.py --repeat 5 --out figures.json
    python scripts/bench_cpu_profile.py --set asr.language=en   # the example's language declared: no detection
    python scripts/bench_cpu_profile.py --set dnsmos.layout=reference   # DNSMOS in the class's arithmetic

Each run copies examples/mini (23 clips, 89.6 s of audio) to a temporary folder and runs, in a new process,

    python -m trace_eval blueprints COPY --store EMPTY --device cpu --profile cpu

with the checkout's own code, then reports for the run:
- wall seconds and wall / audio seconds (the real-time factor the CPU profile is held to: 0.15 on 2 cores);
- CPU seconds, user + system, of the process and every process it started, and CPU / audio seconds;
- the seconds each extractor took (the run's summary.json);
- the numeric class and the kernels every library ran (the recogniser's provenance), and how DNSMOS summed;
- how busy the machine was: the load average, and the CPU seconds that other processes used meanwhile
  (/proc/stat). Wall seconds measure the other work too: the figure to report is that of runs with next to
  no other CPU time, and on a shared machine CPU seconds are the better guide.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = "examples/mini"


def _busy_jiffies() -> int | None:
    """CPU time every process of the machine has used so far (all cores), in clock ticks; None off Linux."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except OSError:
        return None
    values = [int(v) for v in fields]
    idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
    return sum(values[:8]) - idle


def _audio_seconds(folder: Path) -> float:
    import soundfile as sf

    return sum(sf.info(str(p)).duration for p in sorted((folder / "audio").glob("*.wav")))


def one_run(tree: Path, workdir: Path, settings: list[str] = ()) -> dict:
    bench = workdir / "mini"
    shutil.copytree(tree / EXAMPLE, bench, ignore=shutil.ignore_patterns("blueprints"))
    store = workdir / "store"
    command = [sys.executable, "-m", "trace_eval", "blueprints", str(bench), "--store", str(store)]
    command += ["--device", "cpu", "--profile", "cpu"] + [arg for s in settings for arg in ("--set", s)]
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("TRACE_STORE", None)
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    load_before = os.getloadavg()[0]
    busy_before = _busy_jiffies()
    usage_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    busy_after = _busy_jiffies()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    cpu = (usage.ru_utime - usage_before.ru_utime) + (usage.ru_stime - usage_before.ru_stime)
    others = None if busy_before is None or busy_after is None else (busy_after - busy_before) / tick - cpu
    summary = json.loads((bench / "blueprints" / "summary.json").read_text())
    numerics = _recogniser_numerics(store)
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "others_cpu_s": None if others is None else round(max(others, 0.0), 1),
        "load_before": round(load_before, 2),
        "load_after": round(os.getloadavg()[0], 2),
        "seconds_per_extractor": summary["seconds_per_extractor"],
        "computed": summary["computed"],
        "failed": summary["failed"],
        "numerics": numerics,
    }


def _recogniser_numerics(store: Path) -> dict:
    """The numeric set-up the recogniser recorded, and DNSMOS's layout (any blueprint: one process made them all)."""
    for path in sorted(store.rglob("*.json")):
        try:
            blueprint = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        entries = blueprint.get("provenance", {}).get("extractors", {}) if isinstance(blueprint, dict) else {}
        numerics = (entries.get("asr") or {}).get("numerics")
        if numerics:
            found = {k: numerics.get(k) for k in ("class", "kernels", "compute_type", "ctranslate2")}
            found["dnsmos_layout"] = (entries.get("dnsmos") or {}).get("numerics", {}).get("onnxruntime_layout")
            return found
    return {}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs, each a fresh process on a fresh store")
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout to run (default: this one)")
    parser.add_argument("--out", type=Path, help="also write every figure to this JSON file")
    parser.add_argument(
        "--set",
        dest="settings",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an extractor setting for every run (e.g. asr.language=en: the example's language declared)",
    )
    args = parser.parse_args(argv)
    tree = args.tree.resolve()
    audio_s = _audio_seconds(tree / EXAMPLE)
    commit = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    print(
        f"CPU profile on {EXAMPLE} ({audio_s:.1f} s of audio), checkout {tree} at {commit.stdout.strip() or '?'}, "
        f"{os.cpu_count()} cores" + "".join(f", --set {s}" for s in args.settings)
    )
    print(
        f"  {'run':<4} {'wall s':>7} {'x real time':>11} {'CPU s':>7} {'CPU/audio':>9} {'others CPU s':>12} "
        f"{'load':>5}  seconds per extractor"
    )
    runs = []
    for run in range(max(1, args.repeat)):
        with tempfile.TemporaryDirectory(prefix="bench_cpu_profile_") as tmp:
            figures = one_run(tree, Path(tmp), args.settings)
        runs.append(figures)
        per = ", ".join(f"{k} {v:.1f}" for k, v in sorted(figures["seconds_per_extractor"].items()) if v >= 0.05)
        others = "?" if figures["others_cpu_s"] is None else f"{figures['others_cpu_s']:.1f}"
        print(
            f"  {run + 1:<4} {figures['wall_s']:>7.1f} {figures['wall_s'] / audio_s:>11.3f} {figures['cpu_s']:>7.1f} "
            f"{figures['cpu_s'] / audio_s:>9.3f} {others:>12} {figures['load_before']:>5.1f}  {per}",
            flush=True,
        )
    best = min(runs, key=lambda r: r["wall_s"])
    print(
        f"  fastest run: {best['wall_s']:.1f} s wall ({best['wall_s'] / audio_s:.3f}x real time), "
        f"median CPU {statistics.median(r['cpu_s'] for r in runs):.1f} s "
        f"({statistics.median(r['cpu_s'] for r in runs) / audio_s:.3f} CPU s per audio s)"
    )
    print(f"  numerics: {json.dumps(best['numerics'])}")
    if args.out:
        args.out.write_text(json.dumps({"tree": str(tree), "audio_s": audio_s, "runs": runs}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
