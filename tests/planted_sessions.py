"""Sessions laid out from recorded speech (Asterisk's prompts) with planted timing, and sample folders in
Full-Duplex-Bench's v1 layout built the same way, each showing where its scripts and the default computation
part (used by the tests and by scripts/full_duplex_bench_compat.py --built).

A prompt is first cut to its speech by its own energy (`energy_edges`, a reference independent of the speech
detector), so a planted start or end is where the speech is.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf
from recorded_speech import ENGLISH_PROMPTS, asterisk, plain_prompts

from trace_eval.sessions.session import RATE

# Where the samples part: sample -> (what the benchmark's scripts give, what the default gives).
FULL_DUPLEX_BENCH_SAMPLES = {
    "pause_handling/answers-after-the-end": "took_turn 1 (any speech counts) / false (answered after the end)",
    "pause_handling/takes-over-in-the-pause": "took_turn 1 / took_turn true, in the pause",
    "pause_handling/waits": "took_turn 0 / took_turn false",
    "smooth_turn_taking/answers-after-0.8-s": "latency from the annotation / latency 0.8 s from the user's end",
    "smooth_turn_taking/jumps-in": "latency 0 (clipped) / latency -0.6 s",
    "smooth_turn_taking/mm-hm-then-answers": "latency of the mm-hm / latency 2.5 s, the answer's",
    "user_interruption/stops-and-answers": "latency 0.8 s / stopped 0.3 s after the barge-in, answered 0.8 s after",
    "user_interruption/talks-through": "latency 0 (its words go on past the interruption) / not stopped, no answer",
}


class Speech:
    """A prompt cut to its speech, with its words."""

    def __init__(self, samples: np.ndarray, text: str) -> None:
        self.samples, self.text = samples, text

    @property
    def seconds(self) -> float:
        return len(self.samples) / RATE


def energy_edges(samples: np.ndarray, below_db: float = 40.0, over_floor_db: float = 15.0) -> tuple[int, int]:
    """The first and last sample of a clean recording's speech, by its own energy: its 5 ms frames within
    `below_db` of its loudest and `over_floor_db` over the recording's floor (its 10th percentile frame: the hiss
    of its silences, which a gate on the loudest alone counts as speech at the prompt's ends)."""
    hop = RATE // 200
    frames = samples[: len(samples) // hop * hop].reshape(-1, hop).astype(np.float64)
    level = 10 * np.log10(np.mean(frames**2, axis=1) + 1e-12)
    gate = max(level.max() - below_db, np.percentile(level, 10) + over_floor_db)
    loud = np.flatnonzero(level >= gate)
    return int(loud[0] * hop), int((loud[-1] + 1) * hop)


def speech_only(samples: np.ndarray) -> np.ndarray:
    """The prompt from where its speech starts to where it ends, by its own energy (not the detector's)."""
    start, end = energy_edges(samples)
    return samples[start:end]


def prompts(language: str, count: int = 12) -> list[Speech]:
    """Up to 8 prompts in `language`, shortest first."""
    names = ENGLISH_PROMPTS[:count] if language == "en" else plain_prompts(language, count)
    found = [Speech(speech_only(r.clip.audio.at(RATE)), r.reference) for r in asterisk(language, names)]
    return sorted(found, key=lambda s: s.seconds)[:8]


class Track:
    """One channel being laid out: prompts placed at chosen seconds; where each lies, as planted; the words
    of what was placed, spread evenly over each prompt (as a recogniser with word times would give them)."""

    def __init__(self, seconds: float) -> None:
        self.samples = np.zeros(int(seconds * RATE), dtype=np.float32)
        self.words: list[dict] = []

    def place(self, clip: np.ndarray | Speech, at_s: float, text: str | None = None) -> tuple[float, float]:
        if isinstance(clip, Speech):
            clip, text = clip.samples, text or clip.text
        start = int(round(at_s * RATE))
        if start + len(clip) > len(self.samples):
            self.samples = np.pad(self.samples, (0, start + len(clip) - len(self.samples) + RATE))
        self.samples[start : start + len(clip)] += clip
        end_s = at_s + len(clip) / RATE
        if text:
            words = text.split()
            step = (end_s - at_s) / len(words)
            self.words += [
                {"text": w, "timestamp": [round(at_s + k * step, 3), round(at_s + (k + 1) * step, 3)]}
                for k, w in enumerate(words)
            ]
        return at_s, end_s


def write_sample(
    folder: Path, user: Track, system: Track, annotation: tuple[str, Any] | None, words_from_s: float = 0.0
) -> None:
    """A sample folder in Full-Duplex-Bench's v1 layout: both channels, the system's words, the annotation (none
    for the backchannel task)."""
    folder.mkdir(parents=True, exist_ok=True)
    n = max(len(user.samples), len(system.samples))
    for name, track in (("input.wav", user), ("output.wav", system)):
        sf.write(folder / name, np.pad(track.samples, (0, n - len(track.samples))), RATE)
    # The benchmark transcribes the system's channel (for an interruption, from the interruption's end on).
    words = []
    for w in system.words:
        start, end = w["timestamp"]
        if end > words_from_s:
            words.append({"text": w["text"], "timestamp": [max(start, words_from_s), end]})
    text = " ".join(w["text"] for w in words)
    (folder / "output.json").write_text(json.dumps({"text": text, "chunks": words}, indent=1))
    # The user's words, as FLEXI's pause handling reads them.
    heard = {"text": " ".join(w["text"] for w in user.words), "chunks": user.words}
    (folder / "input.json").write_text(json.dumps(heard, indent=1))
    if annotation is not None:
        name, events = annotation
        (folder / name).write_text(json.dumps(events))


def full_duplex_bench_samples(root: Path, language: str = "en", layout: str = "full-duplex-bench") -> dict[str, dict]:
    """The samples of FULL_DUPLEX_BENCH_SAMPLES under root/<task>/<sample>, in the benchmark's v1 layout (or
    FLEXI's, `layout="flexi"`: the whole output transcribed, `pause.json` one object); returns each sample's
    planted times."""
    flexi = layout == "flexi"
    said = prompts(language)
    planted: dict[str, dict] = {}
    mm_hm = Speech(said[0].samples[: int(0.4 * RATE)], "mm-hm")

    for sample in ("answers-after-the-end", "takes-over-in-the-pause", "waits"):
        user, system = Track(14), Track(14)
        _, first_end = user.place(said[1], 0.5)
        second_start, user_end = user.place(said[2], first_end + 1.5)
        if sample == "answers-after-the-end":
            system.place(said[5], user_end + 0.6)
        elif sample == "takes-over-in-the-pause":
            system.place(said[5], first_end + 0.3)
        pause_at = {"text": "[PAUSE]", "timestamp": [first_end, second_start]}
        pause = ("pause.json", pause_at if flexi else [pause_at])
        write_sample(root / "pause_handling" / sample, user, system, pause)
        planted[f"pause_handling/{sample}"] = {"user_end": user_end, "pause": (first_end, second_start)}

    for sample, at in (("answers-after-0.8-s", 0.8), ("jumps-in", -0.6), ("mm-hm-then-answers", 2.5)):
        user, system = Track(14), Track(14)
        _, user_end = user.place(said[3], 0.5)
        if sample == "mm-hm-then-answers":
            system.place(mm_hm, user_end + 0.2)
        system_start, _ = system.place(said[6], user_end + at)
        turn = ("turn_taking.json", [{"text": "[TURN-TAKING]", "timestamp": [user_end + 0.1, user_end + 0.5]}])
        write_sample(root / "smooth_turn_taking" / sample, user, system, turn)
        planted[f"smooth_turn_taking/{sample}"] = {"user_end": user_end, "system_start": system_start}

    for sample in ("stops-and-answers", "talks-through"):
        user, system = Track(24), Track(24)
        _, context_end = user.place(said[1], 0.5)
        talk = Speech(np.concatenate([s.samples for s in said[5:8]]), " ".join(s.text for s in said[5:8]))
        system_start = context_end + 0.6
        barge = system_start + 1.5
        if sample == "stops-and-answers":
            cut = int((barge - system_start + 0.3) * RATE)
            words = talk.text.split()
            kept = " ".join(words[: max(1, round(len(words) * cut / len(talk.samples)))])
            system_end = system.place(Speech(talk.samples[:cut], kept), system_start)[1]
        else:
            system_end = system.place(talk, system_start)[1]
        _, interrupt_end = user.place(said[4], barge)
        answer = None
        if sample == "stops-and-answers":
            answer = system.place(said[2], interrupt_end + 0.8)[0]
        events = [{"context": said[1].text, "interrupt": said[4].text, "timestamp": [barge, interrupt_end]}]
        cropped = 0.0 if flexi else interrupt_end  # Full-Duplex-Bench transcribes from the interruption's end
        write_sample(root / "user_interruption" / sample, user, system, ("interrupt.json", events), cropped)
        planted[f"user_interruption/{sample}"] = {
            "barge_in": barge,
            "interrupt_end": interrupt_end,
            "system_end": system_end,
            "answer": answer,
        }
    return planted


# The backchannel task's samples, named by speaker id as the benchmark's are (its script reads digits only).
BACKCHANNEL_SAMPLES = {
    "0": "says mm-hm in three of the user's pauses",
    "1": "says mm-hm, then answers for over 3 s while the user talks on",
    "2": "says nothing",
}


def backchannel_samples(root: Path, language: str = "en") -> dict[str, dict]:
    """root/<speaker id>/{input.wav,output.wav,output.json} for each of BACKCHANNEL_SAMPLES, the user talking on
    for about 20 s with pauses of 0.6 to 0.9 s; returns each sample's planted backchannels and turns."""
    said = prompts(language)
    mm_hm = Speech(said[0].samples[: int(0.4 * RATE)], "mm-hm")
    long_answer = Speech(np.concatenate([s.samples for s in said[5:7]]), " ".join(s.text for s in said[5:7]))
    planted: dict[str, dict] = {}
    for sample in BACKCHANNEL_SAMPLES:
        user, system = Track(24), Track(24)
        at, gaps = 0.5, []
        for k, gap in zip(range(1, 5), (0.9, 0.6, 0.8, 0.7)):
            _, end = user.place(said[k], at)
            gaps.append((end, end + gap))
            at = end + gap
        user_end = user.place(said[7], at)[1]
        marks: dict[str, Any] = {"user_end": user_end, "backchannels": [], "turns": []}
        if sample in ("0", "1"):
            for start, _ in gaps[: 3 if sample == "0" else 1]:
                marks["backchannels"].append(system.place(mm_hm, start + 0.1))
        if sample == "1":
            marks["turns"].append(system.place(long_answer, gaps[2][0] - 1.0))
        write_sample(root / sample, user, system, None)
        planted[sample] = marks
    return planted


INTERACTION_SYSTEMS = {
    "prompt": "answers 0.5 s after each user turn, stops 0.3 s after the user talks over it",
    "slow": "answers 2.5 s after each user turn",
    "deaf": "answers 0.5 s after the first turn and talks on through the user's second, leaving it unanswered",
}


def interaction_benchmark(root: Path, language: str = "en", samples: int = 2) -> dict[str, dict]:
    """root/<system>/<sample>/{input.wav,output.wav} for each of INTERACTION_SYSTEMS, on the same user
    channels: the user speaks, then speaks again 4 s after the end of the first turn."""
    said = prompts(language)
    long_answer = np.concatenate([s.samples for s in said[5:8]])
    planted: dict[str, dict] = {}
    for k in range(samples):
        user = Track(30)
        _, first_end = user.place(said[k], 0.5)
        second_start, second_end = user.place(said[k + 2], first_end + 4.0)
        for system in INTERACTION_SYSTEMS:
            track = Track(30)
            if system == "prompt":
                track.place(long_answer[: int((second_start + 0.3 - first_end - 0.5) * RATE)], first_end + 0.5)
                track.place(said[4], second_end + 0.5)
            elif system == "slow":
                track.place(said[3].samples[: int(1.2 * RATE)], first_end + 2.5)
                track.place(said[4], second_end + 2.5)
            else:
                track.place(long_answer, first_end + 0.5)
            folder = root / system / f"session-{k}"
            folder.mkdir(parents=True)
            n = max(len(user.samples), len(track.samples))
            for name, channel in (("input.wav", user), ("output.wav", track)):
                sf.write(folder / name, np.pad(channel.samples, (0, n - len(channel.samples))), RATE)
        planted[f"session-{k}"] = {"first_end": first_end, "second": (second_start, second_end)}
    return planted
