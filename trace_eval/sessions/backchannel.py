"""Full-Duplex-Bench's backchannel task: does the system say "mm-hm" where people do, without taking the turn?

A sample is a folder named by its speaker's id, holding `input.wav` (a user talking on) and `output.wav` (the
system), no annotation: what people did is the benchmark's reference, `icc_gt_distribution.json` in its
evaluation folder, one distribution of backchannel time over the session per speaker id. It is read from the
user's checkout (`sessions DIR --reference PATH`), never copied here.

`compat="full-duplex-bench"` gives what its `eval_backchannel.py` prints, quirks included: speech found by the
Silero VAD of the `silero-vad` package at its default settings on the file's samples as if they were 16 kHz;
any stretch longer than 3 s takes the turn and stops the reading of the sample, otherwise the last short stretch
decides (3 words or more of the benchmark's transcript, or 1 s or longer: taken), and every short stretch counts
as a backchannel whatever it was; its "JSD" is the Jensen-Shannon distance (the divergence's square root, in nats)
between the stretches' coverage of 0.2 s bins and the reference stretched to as many bins, and 1 for a sample
with no backchannel; the frequency is backchannels per second of output.

The default reads the session's timeline (timeline.py defines backchannels once for every task): the system took
the turn where a system turn that is no backchannel began before the user's end; its backchannels per minute;
and the Jensen-Shannon divergence, in bits (0: the reference's timing, 1: none in common), of the same coverage
against the same stretched reference, `null` with its reason where the system made no backchannel (no timing to
compare), so a silent system is counted by its rate, not averaged in as a distance.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from trace_eval.sessions.errors import SessionError
from trace_eval.sessions.metrics import distribution, rate
from trace_eval.sessions.package_silero import speech_timestamps
from trace_eval.sessions.samples import Word, read_words
from trace_eval.sessions.segments import Segment

__all__ = ["TASK", "coverage", "default_sample", "js_divergence", "read_reference", "script_sample", "summarise"]

TASK = "backchannel"
REFERENCE = "icc_gt_distribution.json"  # in Full-Duplex-Bench's v1_v1.5/evaluation
BIN_S = 0.2  # the script's window_size
TURN_S = 3.0  # the script's time_threshold: a longer stretch of system speech takes the turn
SCRIPT_RATE = 16000  # the rate its Silero call assumes, whatever the file's


def read_reference(path: str | Path) -> dict[str, list[float]]:
    """The benchmark's reference: {speaker id: a distribution over the session's time}."""
    path = Path(path)
    if not path.is_file():
        raise SessionError(f"{path}: not found (Full-Duplex-Bench's v1_v1.5/evaluation/{REFERENCE})")
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise SessionError(f"{path}: not JSON ({e})") from None
    ok = isinstance(found, dict) and all(
        isinstance(v, list) and len(v) >= 2 and all(isinstance(x, int | float) and x >= 0 for x in v)
        for v in found.values()
    )
    if not ok or not found:
        raise SessionError(f"{path}: expected {{speaker id: [a distribution over time, 2 values or more]}}")
    return {str(k): [float(x) for x in v] for k, v in found.items()}


def _reference_of(folder: Path, reference: Mapping[str, Sequence[float]]) -> Sequence[float]:
    if folder.name not in reference:
        raise SessionError(f"{folder}: no reference distribution for speaker {folder.name!r} in {REFERENCE}")
    return reference[folder.name]


def coverage(stretches: Sequence[Segment], duration_s: float) -> np.ndarray:
    """How many stretches cover each 0.2 s bin of the session (the script's histogram, before normalising)."""
    bins = np.zeros(int(duration_s / BIN_S) + 1)
    for s in stretches:
        first, last = int(s.start / BIN_S), int(s.end / BIN_S)
        bins[first : min(last, len(bins) - 1) + 1] += 1
    return bins


def _stretched(distribution_: Sequence[float], bins: int) -> np.ndarray:
    """The reference stretched to `bins` bins, by position in the session, linearly (as the script does)."""
    return np.interp(np.linspace(0, 1, bins), np.linspace(0, 1, len(distribution_)), np.asarray(distribution_))


def js_divergence(p: np.ndarray, q: np.ndarray) -> float:
    """The Jensen-Shannon divergence of two histograms, each normalised, in bits: 0 to 1."""
    p, q = p / p.sum(), q / q.sum()
    m = (p + q) / 2

    def kl(a: np.ndarray) -> float:
        held = a > 0
        return float(np.sum(a[held] * np.log2(a[held] / m[held])))

    return (kl(p) + kl(q)) / 2


# -- as the benchmark's script computes ---------------------------------------------------------------------------


def _silero_stretches(samples: np.ndarray) -> list[tuple[float, float]]:
    """Speech as the script finds it: the package's Silero at its defaults, in seconds (rounded to 0.1 s by the
    package), the samples read as 16 kHz whatever their rate."""
    found = speech_timestamps(samples, return_seconds=True)
    return [(float(s["start"]), float(s["end"])) for s in found]


def _words_in(words: Sequence[Word], start: float, end: float) -> int:
    """How many of the benchmark transcript's words the script finds in a stretch (its overlap test, null
    timestamps included)."""
    count = 0
    for w in words:
        t_start, t_end = w.start, w.end
        if t_end is None:
            if t_start < end:
                continue
            t_end = t_start
        if (t_start >= start and t_end <= end) or (t_start <= end < t_end) or (t_start <= start < t_end):
            count += 1
    return count


def script_sample(folder: Path, reference: Mapping[str, Sequence[float]]) -> dict[str, Any]:
    """One sample as `eval_backchannel.py` scores it (module docstring)."""
    import soundfile as sf

    distribution_ = _reference_of(folder, reference)
    if not (folder / "output.json").is_file():
        raise SessionError(
            f"{folder}: no output.json: the benchmark's script reads its transcript (and stops with an error on "
            "a first sample without one); the default scores this folder from its audio"
        )
    try:
        samples, sample_rate = sf.read(folder / "output.wav", dtype="float32", always_2d=True)
    except (sf.LibsndfileError, RuntimeError) as e:
        raise SessionError(f"{folder / 'output.wav'}: not audio ({e})") from None
    if samples.shape[1] != 1:
        raise SessionError(f"{folder / 'output.wav'}: {samples.shape[1]} channels: the script's detector takes one")
    notes = []
    if sample_rate != SCRIPT_RATE:
        notes.append(f"output.wav is {sample_rate} Hz: the script's detector reads it as {SCRIPT_RATE} Hz")
    words = read_words(folder / "output.json")
    took_turn = 0
    backchannels: list[tuple[float, float]] = []
    for start, end in _silero_stretches(np.ascontiguousarray(samples[:, 0])):
        if end - start > TURN_S:
            took_turn = 1
            break
        said = _words_in(words, start, end)
        took_turn = int(said > 2 or end - start >= 1)  # the last short stretch decides
        backchannels.append((start, end))
    duration_s = len(samples) / sample_rate
    if backchannels:
        bins = coverage([Segment(s, e) for s, e in backchannels], duration_s) + 1e-10
        distance = _script_distance(bins / bins.sum(), distribution_)
    else:
        distance = 1.0
    return {
        "took_turn": took_turn,
        "backchannels": [[s, e] for s, e in backchannels],
        "frequency_per_s": len(backchannels) / duration_s,
        "jsd": distance,
        "notes": notes,
    }


def _script_distance(p: np.ndarray, distribution_: Sequence[float]) -> float:
    from scipy.interpolate import interp1d
    from scipy.spatial.distance import jensenshannon

    resized = interp1d(np.linspace(0, 1, len(distribution_)), distribution_, kind="linear", fill_value="extrapolate")
    return float(jensenshannon(p, resized(np.linspace(0, 1, len(p)))))


# -- as the task means --------------------------------------------------------------------------------------------


def default_sample(folder: Path, timeline: Any, reference: Mapping[str, Sequence[float]]) -> dict[str, Any]:
    """One sample from its timeline (module docstring)."""
    distribution_ = _reference_of(folder, reference)
    user = timeline.turns["user"]
    if not user:
        return {"took_turn": None, "backchannels": [], "divergence": None, "notes": ["no speech on the user's channel"]}
    backchannels = list(timeline.backchannels)
    taken = [t for t in timeline.turns["system"] if t not in set(backchannels) and t.start < user[-1].end]
    record: dict[str, Any] = {
        "took_turn": bool(taken),
        "turns_taken_s": [t.record() for t in taken],
        "backchannels": [b.record() for b in backchannels],
        "backchannels_per_minute": round(len(backchannels) / (timeline.duration_s / 60), 3),
        "divergence": None,
        "notes": list(timeline.notes),
    }
    if backchannels:
        bins = coverage(backchannels, timeline.duration_s)
        record["divergence"] = round(js_divergence(bins, _stretched(distribution_, len(bins))), 4)
    else:
        record["notes"].append("no backchannel: no timing to compare with the reference")
    return record


def summarise(samples: list[dict[str, Any]], *, compat: str | None = None) -> dict[str, Any]:
    """The task's figures: the script's means and spreads (compat), or rates and distributions."""
    if compat:

        def spread(key: str) -> dict[str, float]:
            values = np.array([s[key] for s in samples], dtype=float)
            return {"mean": float(values.mean()), "std": float(values.std())}

        return {"JSD": spread("jsd"), "TOR": spread("took_turn"), "Frequency": spread("frequency_per_s")}
    known = [s for s in samples if s["took_turn"] is not None]
    return {
        "take_turn_rate": rate(sum(bool(s["took_turn"]) for s in known), len(known)),
        "backchannels_per_minute": distribution(s["backchannels_per_minute"] for s in known),
        "divergence_bits": distribution(s["divergence"] for s in known if s["divergence"] is not None),
        "no_backchannel_rate": rate(sum(s["divergence"] is None for s in known), len(known)),
    }
