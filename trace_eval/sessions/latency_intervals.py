"""Full-Duplex-Bench v1.5's timing task: how long the system spoke on once the user spoke over it, and how long it
took to answer.

A sample is any folder with `input.wav` (the user) and `output.wav` (the system); v1.5's folders hold more (the
clean references), which this task does not read. `sessions DIR --task timing`.

`compat="full-duplex-bench"` gives what its `get_timing.py` writes into each folder as `latency_intervals.json`:
speech found by Silero VAD (the `silero-vad` package's model at its defaults, the audio resampled to 16 kHz by
torchaudio), the user's stretches merged across silences of 0.6 s or less and the system's across 0.5 s;
`latency_stop_list`, each overlap of a user stretch and a system stretch (the shortest of those that end at the
same millisecond), and `latency_resp_list`, from each user stretch's end to the next system start after it (the
latest user end for each such start). The script writes the lists and summarises nothing. Its Silero comes from
`torch.hub` (the repository's current model); the package ships the same model, so nothing is downloaded here.

The default reads the session's timeline: each barge-in (a user turn begun while the system spoke, no
backchannel) with how long the system went on and whether it stopped, and each user turn's answer with its
signed latency from the user's end; summarised as distributions with the median's interval. Where the two part:
a pause inside the user's turn is no end the system answers (timeline.py's turns follow the user), an overlap
that is a backchannel is no interruption, and a jump-in is a negative latency, not a missing one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from trace_eval.sessions.errors import SessionError
from trace_eval.sessions.metrics import distribution, rate
from trace_eval.sessions.package_silero import speech_timestamps
from trace_eval.sessions.segments import Segment, union

__all__ = ["TASK", "default_sample", "script_sample", "summarise"]

TASK = "timing"
RATE = 16000  # the script's SR
USER_MERGE_GAP_S = 0.6
SYSTEM_MERGE_GAP_S = 0.5


# -- as get_timing.py computes --------------------------------------------------------------------------------------


def _load(path: Path) -> np.ndarray:
    """The file's samples at 16 kHz as the script has them (torchaudio's resampler where the rate differs)."""
    import soundfile as sf

    try:
        samples, rate_ = sf.read(path, dtype="float32", always_2d=True)
    except (sf.LibsndfileError, RuntimeError) as e:
        raise SessionError(f"{path}: not audio ({e})") from None
    if samples.shape[1] != 1:
        raise SessionError(f"{path}: {samples.shape[1]} channels: the script's detector takes one")
    mono = samples[:, 0]
    if rate_ != RATE:
        import torch
        import torchaudio.functional as F

        mono = F.resample(torch.from_numpy(np.ascontiguousarray(mono))[None], rate_, RATE)[0].numpy()
    return mono


def _stretches(samples: np.ndarray, gap_s: float) -> list[tuple[float, float]]:
    """The script's stretches: Silero's, merged across silences of `gap_s` or less."""
    found = speech_timestamps(samples, sampling_rate=RATE)
    merged = union((Segment(s["start"] / RATE, s["end"] / RATE) for s in found), bridge=gap_s)
    return [(s.start, s.end) for s in merged]


def _overlaps(user: list[tuple[float, float]], system: list[tuple[float, float]]) -> list[list[float]]:
    """Each overlap of a user and a system stretch, walked in step; the shortest per end (to the millisecond)."""
    found = []
    i = j = 0
    while i < len(user) and j < len(system):
        start, end = max(user[i][0], system[j][0]), min(user[i][1], system[j][1])
        if end > start:
            found.append((start, end))
        if user[i][1] < system[j][1]:
            i += 1
        else:
            j += 1
    shortest: dict[int, tuple[float, float]] = {}
    for start, end in found:
        key = int(round(end * 1000))
        if key not in shortest or end - start < shortest[key][1] - shortest[key][0]:
            shortest[key] = (start, end)
    return [[round(s, 3), round(e, 3)] for s, e in sorted(shortest.values(), key=lambda x: x[1])]


def _response_gaps(user: list[tuple[float, float]], system: list[tuple[float, float]]) -> list[list[float]]:
    """From each user stretch's end to the next system start after it; the latest user end per start."""
    starts = [s for s, _ in system]
    latest: dict[int, list[float]] = {}
    for _, user_end in user:
        following = next((s for s in starts if s > user_end), None)
        if following is None:
            continue
        key = int(round(following * 1000))
        candidate = [round(user_end, 3), round(following, 3)]
        if key not in latest or candidate[0] > latest[key][0]:
            latest[key] = candidate
    return [gap for _, gap in sorted(latest.items(), key=lambda item: item[1][1])]


def script_sample(folder: Path) -> dict[str, Any]:
    """One folder's `latency_intervals.json`, as the script writes it."""
    user = _stretches(_load(folder / "input.wav"), USER_MERGE_GAP_S)
    system = _stretches(_load(folder / "output.wav"), SYSTEM_MERGE_GAP_S)
    return {"latency_stop_list": _overlaps(user, system), "latency_resp_list": _response_gaps(user, system)}


# -- as the task means -------------------------------------------------------------------------------------------


def default_sample(timeline: Any) -> dict[str, Any]:
    """One session's stops and answers, from its timeline."""
    return {
        "barge_ins": [b.record() for b in timeline.barge_ins],
        "answers": [a.record() for a in timeline.answers if a.system_turn is not None],
        "unanswered": sum(a.system_turn is None for a in timeline.answers),
        "notes": list(timeline.notes),
    }


def summarise(samples: list[dict[str, Any]], *, compat: str | None = None) -> dict[str, Any]:
    """Over the samples: the intervals' lengths (compat: the script summarises nothing; these are the lists'
    lengths, pooled), or the default's distributions and rates."""
    if compat:
        return {
            "overlap_s": distribution(e - s for x in samples for s, e in x["latency_stop_list"]),
            "response_gap_s": distribution(e - s for x in samples for s, e in x["latency_resp_list"]),
        }
    barge_ins = [b for s in samples for b in s["barge_ins"]]
    answers = [a for s in samples for a in s["answers"]]
    return {
        "stop_latency_s": distribution(b["stop_latency_s"] for b in barge_ins),
        "stopped_rate": rate(sum(b["stopped"] for b in barge_ins), len(barge_ins)),
        "response_latency_s": distribution(a["latency_s"] for a in answers),
        "answered_rate": rate(len(answers), len(answers) + sum(s["unanswered"] for s in samples)),
    }
