"""Timing metrics of sessions, deterministic functions of their timelines, reported as distributions.

Each metric says where its clock starts. A distribution is n, median, 90th percentile, minimum, maximum and a
95% interval of the median (from the order statistics: no resampling, the same on every run); a rate is k of n
with its Wilson interval. A metric with no event to measure is n 0 and null values, never a made-up number.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
from scipy.stats import binom

from trace_eval.evaluation.metrics import wilson_interval
from trace_eval.sessions.segments import Segment, gaps, union
from trace_eval.sessions.timeline import Timeline

__all__ = ["DEFINITIONS", "distribution", "latency_plot", "rate", "timing_metrics"]

DEFINITIONS = {
    "response_latency_s": "system's start - user's end of turn, for every user turn the system answered (negative: "
    "it started before the user ended); clock: the recording's, from the user's end",
    "jump_in_rate": "share of answers that started before the user's turn ended (in a pause, or over the user)",
    "no_answer_rate": "share of user turns with no system turn (but backchannels) before the user's next turn",
    "stop_latency_s": "how long the system spoke on after the user began to speak over it (barge-in), to its first "
    "silence of stop_gap_s; clock: the recording's, from the user's start",
    "stopped_rate": "share of barge-ins where the system stopped within stop_within_s of the user's start",
    "backchannels_per_user_minute": "system turns of at most backchannel_max_s that answer nothing (begun inside a "
    "user's turn, or followed by another before the user's next), per minute of the user's turns",
    "overlap_share": "seconds both channels speak / seconds either speaks",
    "leading_silence_s": "the system's silence before it first speaks; clock: the session's first sample",
    "client_time_to_first_audio_s": "from the event log, per user turn: the system's next audio received - the "
    "turn's last frame sent; clock: the client's, from that frame sent (sessions with an event log only)",
    "client_stop_latency_s": "from the event log: how long audio kept arriving after the timeline's first "
    "barge-in began; clock: the client's, from the user's start as heard",
}


def distribution(values: Iterable[float]) -> dict[str, Any]:
    found = sorted(float(v) for v in values)
    n = len(found)
    if not n:
        return {"n": 0, "median": None, "p90": None, "min": None, "max": None, "median_interval": None}
    # The median's 95% interval from order statistics: the k-th smallest and largest with P(Bin(n, 0.5) < k) <= 2.5%.
    k = int(binom.ppf(0.025, n, 0.5))
    interval = [round(found[k - 1], 3), round(found[n - k], 3)] if k >= 1 else None
    return {
        "n": n,
        "median": round(float(np.median(found)), 3),
        "p90": round(float(np.percentile(found, 90)), 3),
        "min": round(found[0], 3),
        "max": round(found[-1], 3),
        "median_interval": interval,
    }


def rate(k: int, n: int) -> dict[str, Any]:
    """k of n with the Wilson 95% interval."""
    interval = wilson_interval(k, n)
    return {
        "k": k,
        "n": n,
        "rate": round(k / n, 4) if n else None,
        "interval": [round(v, 4) for v in interval] if interval else None,
    }


def timing_metrics(timelines: list[Timeline]) -> dict[str, Any]:
    """Every metric of DEFINITIONS over the sessions' timelines."""
    answers = [a for t in timelines for a in t.answers]
    latencies = [a.latency_s for a in answers if a.latency_s is not None]
    barge_ins = [b for t in timelines for b in t.barge_ins]
    user_minutes = sum(s.duration for t in timelines for s in t.turns["user"]) / 60
    both = sum(s.duration for t in timelines for s in t.overlaps)
    either = sum(t.duration_s - sum(g.duration for g in _silence(t)) for t in timelines)
    backchannels = sum(len(t.backchannels) for t in timelines)
    leading = [t.leading_silence_s for t in timelines if t.leading_silence_s is not None]
    return {
        "sessions": len(timelines),
        "response_latency_s": distribution(latencies),
        "jump_in_rate": rate(sum(v < 0 for v in latencies), len(latencies)),
        "no_answer_rate": rate(len(answers) - len(latencies), len(answers)),
        "stop_latency_s": distribution(b.stop_latency_s for b in barge_ins),
        "stopped_rate": rate(sum(b.stopped for b in barge_ins), len(barge_ins)),
        "backchannels_per_user_minute": round(backchannels / user_minutes, 2) if user_minutes else None,
        "overlap_share": round(both / either, 4) if either else None,
        "leading_silence_s": distribution(leading),
        "client_time_to_first_audio_s": distribution(_client(timelines, "time_to_first_audio_s")),
        "client_stop_latency_s": distribution(_client(timelines, "stop_latency_s")),
        "definitions": DEFINITIONS,
    }


def latency_plot(systems: dict[str, list[Timeline]], path: str) -> None:
    """A PNG of each system's response latencies (every answer a dot, its median a bar), one row a system."""
    from matplotlib.figure import Figure

    names = sorted(systems)
    figure = Figure(figsize=(7, 0.9 + 0.45 * len(names)), dpi=120)
    axes = figure.add_subplot()
    jitter = np.random.default_rng(0)
    for row, name in enumerate(names):
        values = [a.latency_s for t in systems[name] for a in t.answers if a.latency_s is not None]
        if not values:
            continue
        axes.scatter(values, row + jitter.uniform(-0.15, 0.15, len(values)), s=10, alpha=0.6)
        axes.plot([np.median(values)] * 2, [row - 0.3, row + 0.3], color="black", linewidth=2)
    axes.axvline(0, color="grey", linewidth=0.8, linestyle="--")
    axes.set_yticks(range(len(names)), names)
    axes.set_ylim(-0.6, len(names) - 0.4)
    axes.set_xlabel("response latency, s (from the user's end; negative: a jump-in); bar: median")
    figure.tight_layout()
    figure.savefig(path)


def _client(timelines: list[Timeline], key: str) -> list[float]:
    """A client latency of every session with an event log (per user turn where it is a list)."""
    found = []
    for t in timelines:
        value = (t.client or {}).get(key)
        found += [v for v in value if v is not None] if isinstance(value, list) else [] if value is None else [value]
    return found


def _silence(t: Timeline) -> list[Segment]:
    """Where neither channel speaks."""
    return gaps(union(t.speech["user"] + t.speech["system"]), Segment(0.0, t.duration_s))
