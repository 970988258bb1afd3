"""How fast sessions are read into timelines and their timing measured, on this machine's CPU.

    python scripts/bench_sessions.py [--sessions 10] [--metrics-of 1000] [--words] [--profile cpu|paper]

Builds two-channel sessions from Asterisk's recorded English prompts (a user's turn, the system's answer after
0.4-1.6 s, three exchanges a session, about 20 s each), times `make_timeline` on each (CPU seconds per second of
session, both channels), then `timing_metrics` over `--metrics-of` timelines. `--words` times the timelines
again with both channels transcribed by Stage 1's recogniser (the profile's models; loading them is timed apart),
against the goal of 0.3 s per second of session.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import extractors  # noqa: E402, F401, I001  (pins the numeric class before numpy's libraries load)
import numpy as np  # noqa: E402
from recorded_speech import ENGLISH_PROMPTS, asterisk  # noqa: E402
from trace_eval.sessions import make_timeline, timing_metrics  # noqa: E402
from trace_eval.sessions.session import RATE, Session  # noqa: E402


def sessions(count: int) -> list[Session]:
    prompts = [r.clip.audio.at(RATE) for r in asterisk("en", ENGLISH_PROMPTS)]
    made = []
    for n in range(count):
        user, system = np.zeros(30 * RATE, np.float32), np.zeros(30 * RATE, np.float32)
        t = 0.5
        for k, delay in enumerate((0.4, 0.9, 1.6)):
            said, answer = prompts[(n + k) % len(prompts)], prompts[(n + k + 5) % len(prompts)]
            start = int(t * RATE)
            user[start : start + len(said)] += said[: len(user) - start]
            start = int((t + len(said) / RATE + delay) * RATE)
            system[start : start + len(answer)] += answer[: len(system) - start]
            t = start / RATE + len(answer) / RATE + 1.0
            if t > 25:
                break
        made.append(Session(f"s{n}", user, system, "two-files", {"user": RATE, "system": RATE}))
    return made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--metrics-of", type=int, default=1000)
    parser.add_argument("--words", action="store_true", help="also with both channels transcribed")
    parser.add_argument("--profile", choices=("cpu", "paper"), default="cpu", help="--words: the recogniser's models")
    args = parser.parse_args()
    made = sessions(args.sessions)
    seconds = sum(s.duration_s for s in made)
    cpu, wall = time.process_time(), time.perf_counter()
    timelines = [make_timeline(s) for s in made]
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    print(f"timelines of {len(made)} sessions ({seconds:.0f} s, two channels): {wall:.2f} s wall, {cpu:.2f} CPU s, "
          f"{cpu / seconds:.4f} CPU s per second of session")  # fmt: skip
    many = [timelines[i % len(timelines)] for i in range(args.metrics_of)]
    wall = time.perf_counter()
    latency = timing_metrics(many)["response_latency_s"]
    print(f"timing metrics of {len(many)} sessions: {time.perf_counter() - wall:.3f} s wall")
    print(f"  response latency median {latency['median']} s over {latency['n']} answers (planted 0.4-1.6 s after")
    print("  each prompt, whose own silence at either end counts here: the prompts are not trimmed)")
    if args.words:
        from trace_eval.sessions.words import stage1_recogniser

        recogniser = stage1_recogniser(args.profile)
        device = recogniser.device
        wall = time.perf_counter()
        recogniser.load()
        print(f"recogniser {recogniser.model().id} on {device}: loaded in {time.perf_counter() - wall:.1f} s")
        cpu, wall = time.process_time(), time.perf_counter()
        heard = [make_timeline(s, recogniser=recogniser) for s in made]
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        words = sum(len(t.words["user"] or []) + len(t.words["system"] or []) for t in heard)
        print(f"timelines with words of {len(made)} sessions ({seconds:.0f} s, two channels, {words} words): "
              f"{wall:.1f} s wall ({wall / seconds:.3f} s per second of session), {cpu:.1f} CPU s")  # fmt: skip


if __name__ == "__main__":
    main()
