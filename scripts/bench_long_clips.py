"""Stage 1 on long clips: time and peak memory of `blueprints` on one clip of 5, 10 and 20 minutes.

    python scripts/bench_long_clips.py [--minutes 5 10 20] [--only NAMES] [--work DIR]

Each clip is recorded human speech (the Asterisk prompts in
/usr/share/asterisk/sounds/en, in name order, resampled to 16 kHz), each prompt
followed by silence half its length: two thirds speech, one third silence, made the
same way every time. Each run is `python -m trace_eval blueprints DIR --device cpu`
on an empty store (every extractor, or --only), as a whole process: wall seconds,
CPU seconds (user + sys, children included), the peak resident memory of its
largest process (what /usr/bin/time reports) and the peak of all its processes
together (sampled every 0.1 s), and the seconds each extractor took.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import soundfile as sf

ROOT = Path(__file__).resolve().parent.parent
PROMPTS = Path("/usr/share/asterisk/sounds/en")
RATE = 16000


def make_clip(path: Path, minutes: float) -> None:
    import soxr

    prompts = sorted(PROMPTS.glob("*.wav"))
    if not prompts:
        raise SystemExit(f"no recordings in {PROMPTS}: apt-get install asterisk-core-sounds-en-wav")
    target = int(minutes * 60 * RATE)
    parts, length, i = [], 0, 0
    while length < target:
        speech, rate = sf.read(prompts[i % len(prompts)], dtype="float32")
        speech = soxr.resample(speech, rate, RATE).astype(np.float32)
        for part in (speech, np.zeros(len(speech) // 2, np.float32)):
            parts.append(part)
            length += len(part)
        i += 1
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(path, np.concatenate(parts)[:target], RATE, subtype="PCM_16")


def tree_rss_mb(pid: int) -> float:
    """Resident memory of a process and all its descendants, MB."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        todo.extend(children.get(current, []))
        try:
            status = (Path("/proc") / str(current) / "status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1]) / 1024
    return total


def run(bench: Path, only: str | None) -> dict:
    shutil.rmtree(bench / "blueprints", ignore_errors=True)
    command = [sys.executable, "-m", "trace_eval", "blueprints", str(bench), "--device", "cpu", "--quiet"]
    command += ["--store", "bench"]  # computed again, never found in the user's store
    if only:
        command += ["--only", only]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak_tree = 0.0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak_tree
        while not done.wait(0.1):
            peak_tree = max(peak_tree, tree_rss_mb(process.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stderr = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    done.set()
    sampler.join()
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(command)} failed ({process.returncode}):\n{stderr.decode()[-3000:]}")
    summary = json.loads((bench / "blueprints" / "summary.json").read_text())
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_mb": usage.ru_maxrss / 1024,
        "peak_tree_mb": peak_tree,
        "seconds": summary["seconds_per_extractor"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, nargs="+", default=[5, 10, 20])
    parser.add_argument("--only", help="comma-separated extractors (default: all)")
    parser.add_argument("--work", type=Path, help="folder for the clips and blueprints (default: a temporary one)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        print(
            f"blueprints --device cpu{' --only ' + args.only if args.only else ''}, one clip each "
            f"(load average before: {os.getloadavg()[0]:.1f})"
        )
        print(f"{'clip':>8s} {'wall s':>8s} {'cpu s':>8s} {'peak MB':>8s} {'all MB':>8s}  seconds per extractor")
        for minutes in args.minutes:
            bench = work / f"long-{minutes:g}min"
            clip = bench / "audio" / "long.wav"
            if not clip.is_file():
                make_clip(clip, minutes)
                item = {"id": "long", "audio_path": "audio/long.wav", "instruction_text": "(a long answer)"}
                (bench / "manifest.json").write_text(json.dumps([item]))
            r = run(bench, args.only)
            per = "  ".join(f"{k} {v:.0f}" for k, v in r["seconds"].items() if v >= 0.5)
            print(
                f"{minutes:>5g} min {r['wall_s']:8.1f} {r['cpu_s']:8.1f} {r['peak_mb']:8.0f} "
                f"{r['peak_tree_mb']:8.0f}  {per}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
