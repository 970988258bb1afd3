"""How fast sessions are read into timelines and their timing measured, on this machine's CPU.

    python scripts/bench_sessions.py [--sessions 10] [--metrics-of 1000] [--words] [--profile cpu|paper]
    python scripts/bench_sessions.py --onsets 100

Builds two-channel sessions from Asterisk's recorded English prompts (a user's turn, the system's answer after
0.4-1.6 s, three exchanges a session, about 20 s each), times `make_timeline` on each (CPU seconds per second of
session, both channels), then `timing_metrics` over `--metrics-of` timelines. `--words` times the timelines
again with both channels transcribed by Stage 1's recogniser (the profile's models; loading them is timed apart),
against the goal of 0.3 s per second of session.

`--onsets N` measures where speech is found against an independent reference instead: N recorded prompts in each
of English, Spanish and French (Asterisk's, at least four words, no digits or tones), each cut by its own energy
(alone and clean: from the first to the last 5 ms frame within 40 dB of its loudest and 15 dB over the
recording's own floor), placed at a random second
of a 12 s channel, silent or under white noise at -50 dBFS (the seeded generator of `--seed`). The errors of
the first found start and the last found end against the planted ones: median, 90th percentile and maximum of
their sizes (and the signed median), on the tuning half of the prompts (by a hash of each name: the edges'
thresholds are set there) and on the test half, with the timeline's edges (`onset_db` 40, `over_quiet_db` 3), with
6 dB over the quiet (before it was set) and with Silero's own.
"""

from __future__ import annotations

import argparse
import hashlib
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


def onsets(count: int, seed: int) -> None:
    from dataclasses import replace

    from planted_sessions import energy_edges
    from recorded_speech import plain_prompts

    from trace_eval.sessions.timeline import TimelineSettings, speech_of

    rng = np.random.default_rng(seed)
    settings = {
        "the timeline's edges": TimelineSettings(),
        "6 dB over the quiet": replace(TimelineSettings(), over_quiet_db=6.0),  # before it was set on the tuning half
        "Silero's own": replace(TimelineSettings(), onset_db=None),
    }
    errors: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
    for language in ("en", "es", "fr"):
        names = plain_prompts(language, count)
        for recording, name in zip(asterisk(language, names), names):
            # The tuning half (thresholds are set on it) and the test half, by a hash of the prompt.
            half = "tune" if int(hashlib.sha256(f"{language}:{name}".encode()).hexdigest()[:8], 16) % 2 == 0 else "test"
            samples = recording.clip.audio.at(RATE)
            first, last = energy_edges(samples)
            clip = samples[first:last]
            if len(clip) > 10 * RATE:
                continue
            at = int(rng.uniform(0.5, 11.5 - len(clip) / RATE) * RATE)
            for channel in ("silent", "noisy"):
                track = np.zeros(12 * RATE, np.float32)
                if channel == "noisy":
                    track += (rng.standard_normal(len(track)) * 10 ** (-50 / 20)).astype(np.float32)
                track[at : at + len(clip)] += clip
                for setting_name, setting in settings.items():
                    found = speech_of(track, setting)
                    key = (setting_name, half, f"{language} {channel}")
                    if not found:
                        errors.setdefault(key, []).append((np.inf, np.inf))
                        continue
                    planted = (at / RATE, (at + len(clip)) / RATE)
                    errors.setdefault(key, []).append((found[0].start - planted[0], found[-1].end - planted[1]))
    print(
        "onset and end errors in ms, against each prompt's own energy (size: median, p90, max; signed median; "
        "how many over 150 ms):"
    )
    for name in settings:
        for half in ("tune", "test"):
            for edge, k in (("start", 0), ("end", 1)):
                mine = [found for (n, h, _), found in errors.items() if (n, h) == (name, half)]
                pooled = np.array([e[k] for found in mine for e in found])
                print(f"  {name:22} {half} {edge:5} all       {_sizes(pooled)}")
                for (n, h, where), found in sorted(errors.items()):
                    if (n, h) == (name, half):
                        print(f"  {'':22} {'':4} {'':5} {where:9} {_sizes(np.array([e[k] for e in found]))}")


def _sizes(errors: np.ndarray) -> str:
    size = np.abs(errors) * 1000
    return (f"n {len(errors):3}  {np.median(size):5.0f} {np.percentile(size, 90):5.0f} {size.max():6.0f}"
            f"  ({np.median(errors) * 1000:+.0f}; over 150: {int((size > 150).sum())})")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--metrics-of", type=int, default=1000)
    parser.add_argument("--words", action="store_true", help="also with both channels transcribed")
    parser.add_argument("--profile", choices=("cpu", "paper"), default="cpu", help="--words: the recogniser's models")
    parser.add_argument("--onsets", type=int, metavar="N", help="where speech is found, on N prompts a language")
    parser.add_argument("--seed", type=int, default=0, help="--onsets: where the prompts are placed, the noise")
    args = parser.parse_args()
    if args.onsets:
        onsets(args.onsets, args.seed)
        return
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
