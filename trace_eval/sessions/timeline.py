"""A session's timeline: who spoke when on each channel, and the turns, pauses, overlaps and answers it holds.

Speech activity comes from Silero VAD (the model that ships inside faster-whisper) on each channel alone,
32 ms frames; every threshold used is a setting, recorded with the timeline. What the timeline holds, every time
in seconds from the session's first sample:

- `speech`: each channel's stretches of speech;
- `turns`: a channel's speech with its silences shorter than `turn_gap_s` bridged: a silence that long or longer
  ends a turn, a shorter one is a `pause` inside it;
- `overlaps`: where both channels speak;
- `backchannels`: system turns of at most `backchannel_max_s` that start while the user's turn goes on
  ("mm-hm"): candidates, since what is said is not read here;
- `responses`: for each user turn, the system's first turn (not a backchannel) that ends after it and starts
  before the user's next turn, and the latency from the user's end to the system's start (negative: it started
  before the user ended);
- `barge_ins`: user turns that start while the system speaks, and how long the system went on (its stop latency);
- `words`: with a recogniser (`make_timeline(session, recogniser=...)`, the multilingual Whisper of Stage 1), what
  each channel said, word by word with times, and the language each was heard in; None where not transcribed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from trace_eval.sessions.segments import Segment, gaps, intersection, union
from trace_eval.sessions.session import RATE, Session

__all__ = ["VERSION", "Answer", "BargeIn", "Timeline", "TimelineSettings", "make_timeline", "speech_of"]

VERSION = 1  # of what a timeline holds and how it is found: a stored timeline of another version is made again
CLOCK = "seconds from the session's first sample (both channels start there)"


@dataclass(frozen=True)
class TimelineSettings:
    vad_threshold: float = 0.5  # Silero speech probability above which a 32 ms frame is speech
    # A noise floor added before detection (seeded: the same on every run), in dB below full scale; None: none.
    # After exact digital silence (text-to-speech output, padding) Silero found speech up to 0.45 s late; over a
    # floor at -60 dBFS the same planted turns came back within 0.05 s.
    noise_floor_dbfs: float | None = -60.0
    min_speech_s: float = 0.1  # a shorter burst is not speech (a click, a breath)
    min_silence_s: float = 0.1  # a shorter silence does not split speech
    turn_gap_s: float = 1.0  # a silence this long ends a speaker's turn; a shorter one is a pause inside it
    backchannel_max_s: float = 1.0  # a system turn at most this long, begun while the user speaks, is a candidate


@dataclass
class Answer:
    """The system's answer to a user turn."""

    user_turn: Segment
    system_turn: Segment | None  # None: no answer before the user's next turn (or the session's end)
    latency_s: float | None  # system start - user end; negative when it started first

    def record(self) -> dict[str, Any]:
        return {
            "user_turn": self.user_turn.record(),
            "system_turn": self.system_turn.record() if self.system_turn else None,
            "latency_s": None if self.latency_s is None else round(self.latency_s, 3),
        }


@dataclass
class BargeIn:
    """A user turn begun while the system spoke."""

    user_turn: Segment
    system_turn: Segment
    stop_latency_s: float  # how long the system spoke on after the user began
    stopped_before_user_ended: bool

    def record(self) -> dict[str, Any]:
        return {
            "user_turn": self.user_turn.record(),
            "system_turn": self.system_turn.record(),
            "stop_latency_s": round(self.stop_latency_s, 3),
            "stopped_before_user_ended": self.stopped_before_user_ended,
        }


@dataclass
class Timeline:
    session: str
    duration_s: float
    settings: TimelineSettings
    speech: dict[str, list[Segment]]
    turns: dict[str, list[Segment]]
    pauses: dict[str, list[Segment]]
    overlaps: list[Segment]
    backchannels: list[Segment]
    answers: list[Answer]
    barge_ins: list[BargeIn]
    notes: list[str] = field(default_factory=list)
    # who -> [{"word", "start", "end", "probability"}], None where the channel was not transcribed
    words: dict[str, list[dict[str, Any]] | None] = field(default_factory=lambda: {"user": None, "system": None})
    languages: dict[str, dict[str, Any] | None] = field(default_factory=lambda: {"user": None, "system": None})
    recogniser: str | None = None  # the recogniser's model id, None without words
    # the client's latencies from the session's event log (events.client_latencies), None without a log
    client: dict[str, Any] | None = None

    @property
    def leading_silence_s(self) -> float | None:
        """Silence before the system first speaks; None when it never does."""
        return self.speech["system"][0].start if self.speech["system"] else None

    def record(self) -> dict[str, Any]:
        def segments(items: list[Segment]) -> list[list[float]]:
            return [s.record() for s in items]

        return {
            "version": VERSION,
            "session": self.session,
            "clock": CLOCK,
            "duration_s": round(self.duration_s, 3),
            "settings": asdict(self.settings),
            "speech": {k: segments(v) for k, v in self.speech.items()},
            "turns": {k: segments(v) for k, v in self.turns.items()},
            "pauses": {k: segments(v) for k, v in self.pauses.items()},
            "overlaps": segments(self.overlaps),
            "backchannels": segments(self.backchannels),
            "answers": [a.record() for a in self.answers],
            "barge_ins": [b.record() for b in self.barge_ins],
            "leading_silence_s": None if self.leading_silence_s is None else round(self.leading_silence_s, 3),
            "words": self.words,
            "languages": self.languages,
            "recogniser": self.recogniser,
            "client": self.client,
            "notes": self.notes,
        }

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Timeline:
        """The timeline `record()` gave (a stored one); KeyError or ValueError where it is not one."""
        if record.get("version") != VERSION:
            raise ValueError(f"timeline version {record.get('version')!r}, expected {VERSION}")

        def segments(items: list[list[float]]) -> list[Segment]:
            return [Segment(*map(float, s)) for s in items]

        def maybe(item: list[float] | None) -> Segment | None:
            return None if item is None else Segment(*map(float, item))

        answers = [Answer(Segment(*a["user_turn"]), maybe(a["system_turn"]), a["latency_s"]) for a in record["answers"]]
        barge_ins = [
            BargeIn(Segment(*b["user_turn"]), Segment(*b["system_turn"]), b["stop_latency_s"],
                    b["stopped_before_user_ended"])
            for b in record["barge_ins"]
        ]  # fmt: skip
        return cls(
            record["session"],
            float(record["duration_s"]),
            TimelineSettings(**record["settings"]),
            {k: segments(v) for k, v in record["speech"].items()},
            {k: segments(v) for k, v in record["turns"].items()},
            {k: segments(v) for k, v in record["pauses"].items()},
            segments(record["overlaps"]),
            segments(record["backchannels"]),
            answers,
            barge_ins,
            list(record["notes"]),
            dict(record["words"]),
            dict(record["languages"]),
            record["recogniser"],
            record["client"],
        )


def speech_of(samples: np.ndarray, settings: TimelineSettings) -> list[Segment]:
    """Stretches of speech in one channel (16 kHz), by Silero VAD with the settings' thresholds."""
    from faster_whisper.vad import VadOptions, get_speech_timestamps

    options = VadOptions(
        threshold=settings.vad_threshold,
        min_speech_duration_ms=int(settings.min_speech_s * 1000),
        min_silence_duration_ms=int(settings.min_silence_s * 1000),
        speech_pad_ms=0,
    )
    samples = np.asarray(samples, dtype=np.float32)
    if settings.noise_floor_dbfs is not None:
        floor = np.random.default_rng(0).standard_normal(len(samples)) * 10 ** (settings.noise_floor_dbfs / 20)
        samples = samples + floor.astype(np.float32)
    found = get_speech_timestamps(samples, options, sampling_rate=RATE)
    return [Segment(s["start"] / RATE, s["end"] / RATE) for s in found]


def make_timeline(
    session: Session, settings: TimelineSettings | None = None, recogniser: Any = None, language: str | None = None
) -> Timeline:
    """The session's timeline; with `recogniser` (an extractors.asr.AsrExtractor, loaded or not) the words of
    both channels too, heard in `language` where it is declared (else detected per channel)."""
    settings = settings or TimelineSettings()
    speech = {"user": speech_of(session.user, settings), "system": speech_of(session.system, settings)}
    notes = list(session.notes)
    for who, found in speech.items():
        if not found:
            notes.append(f"no speech on the {who}'s channel")
    turns = {who: union(found, bridge=settings.turn_gap_s) for who, found in speech.items()}
    pauses = {
        who: [g for turn in turns[who] for g in gaps([s for s in speech[who] if turn.overlaps(s)], turn)]
        for who in speech
    }
    user_turns, system_turns = turns["user"], turns["system"]
    backchannels = [
        s for s in system_turns if s.duration <= settings.backchannel_max_s and _inside_any(s.start, user_turns)
    ]
    answers = []
    for k, user in enumerate(user_turns):
        next_user = user_turns[k + 1].start if k + 1 < len(user_turns) else session.duration_s
        answer = next(
            (s for s in system_turns
             if s not in backchannels and s.end > user.end and s.start > user.start and s.start < next_user),
            None,
        )  # fmt: skip
        answers.append(Answer(user, answer, None if answer is None else answer.start - user.end))
    barge_ins = []
    for user in user_turns:
        talking = next((s for s in system_turns if s.start < user.start < s.end and s not in backchannels), None)
        if talking is not None:
            barge_ins.append(BargeIn(user, talking, talking.end - user.start, talking.end < user.end))
    timeline = Timeline(
        session.name,
        session.duration_s,
        settings,
        speech,
        turns,
        pauses,
        intersection(speech["user"], speech["system"]),
        backchannels,
        answers,
        barge_ins,
        notes,
    )
    events = session.annotations.get("events.jsonl")
    if events is not None:
        from trace_eval.sessions.events import client_latencies

        barge_in = barge_ins[0].user_turn.start if barge_ins else None
        timeline.client = client_latencies(events, barge_in_s=barge_in)
    if recogniser is not None:
        from trace_eval.sessions.words import transcribe

        timeline.words, timeline.languages, heard = transcribe(session, recogniser, language)
        timeline.recogniser = recogniser.model().id
        timeline.notes += heard
    return timeline


def _inside_any(t: float, turns: list[Segment]) -> bool:
    return any(s.start < t < s.end for s in turns)
