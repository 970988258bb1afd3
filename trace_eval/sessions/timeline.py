"""A session's timeline: who spoke when on each channel, and the turns, pauses, overlaps, answers and barge-ins.

Speech activity comes from Silero VAD (the model that ships inside faster-whisper) on each channel alone,
32 ms frames; every threshold used is a setting, recorded with the timeline. Turn, pause, answer, backchannel,
barge-in and stop are defined here once; the timing metrics, Full-Duplex-Bench's default scores, the interaction
judge and the page read them from the timeline. Every time in seconds from the session's first sample:

- `speech`: each channel's stretches of speech;
- the user's `turns` follow the user, not the silence. A silence between two stretches of the user's speech is a
  `pause` inside the turn when (1) the session's pause annotation (Full-Duplex-Bench's `pause.json`) marks a
  pause there; else (2) it is shorter than `turn_gap_s`, whatever the system did; else (3) it lasts at most
  `max_pause_s` and the system said nothing longer than a backchannel in it (the user resumed after it). Any
  other silence ends the turn: the system filled it (its speech there is an answer), or nobody spoke for long;
- the system's turns: its speech with silences shorter than `turn_gap_s` bridged, but a system the user began
  to speak over (a barge-in) ends its turn at its first silence of `stop_gap_s` or more (heard as a stop): what
  it says after that is a turn of its own, which can be the answer;
- `backchannels`: system turns of at most `backchannel_max_s` (and at most 3 words, where the system's words are
  known: Full-Duplex-Bench's rule) begun inside a user's turn (its pauses included)
  or followed by another system turn before the user's next turn ("mm-hm" before the answer): never an answer;
- `answers`: for each user turn, the system's first turn (no backchannel) begun after the user's turn began and
  before the user's next turn, and the latency from the user's end to its start (negative: it started inside
  the user's turn, a jump-in: in a pause, or over the user);
- `barge_ins`: user turns begun while the system spoke (no backchannel), how long the system went on (its stop
  latency, to that stop), and whether it `stopped`: within `stop_within_s`;
- `overlaps`: where both channels speak;
- `words`: with a recogniser (`make_timeline(session, recogniser=...)`, the multilingual Whisper of Stage 1), what
  each channel said, word by word with times, and the language each channel and each of its turns was heard in
  (words.py); None where not transcribed.
"""

from __future__ import annotations

import bisect
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from trace_eval.sessions.segments import Segment, gaps, intersection, union
from trace_eval.sessions.session import RATE, Session

__all__ = ["VERSION", "Answer", "BargeIn", "Timeline", "TimelineSettings", "make_timeline", "speech_of", "words_in"]

VERSION = 4  # of what a timeline holds and how it is found: a stored timeline of another version is made again
CLOCK = "seconds from the session's first sample (both channels start there)"
# More words than this take the turn, however short: Full-Duplex-Bench's rule (its samples.TURN_MAX_WORDS).
BACKCHANNEL_MAX_WORDS = 3


def setting(default: float | None, help: str) -> Any:
    """A threshold with what it decides: the command line's help (commands/sessions.py) is read from here."""
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class TimelineSettings:
    vad_threshold: float = setting(0.5, "Silero's speech probability above which a 32 ms frame is speech")
    # Seeded (the same on every run). After exact digital silence (text-to-speech output, padding) Silero found
    # speech up to 0.45 s late; over a floor at -60 dBFS the same planted turns came back within 0.05 s.
    noise_floor_dbfs: float | None = setting(-60.0, "a noise floor added before detection, dB under full scale")
    # Silero's probability rises a few frames after a loud onset (up to 0.34 s on recorded Spanish prompts) and
    # falls a few after the speech ends: scripts/bench_sessions.py --onsets measures both against the prompts'
    # own energy.
    onset_db: float | None = setting(
        40.0, "each edge of speech moved to where the energy turns this many dB under the stretch's loudest 10 ms"
    )
    # Set on the tuning half of scripts/bench_sessions.py --onsets: the largest margin of 6, 4.5 and 3 dB with no
    # end over 150 ms from the prompts' own (6 dB cut quiet last syllables under noise); 1 dB takes the noise in.
    over_quiet_db: float = setting(
        3.0, "an edge's 10 ms frames are this many dB over the channel's quiet (its 10th percentile: silence, noise)"
    )
    min_speech_s: float = setting(0.1, "a shorter burst is not speech (a click, a breath)")
    min_silence_s: float = setting(0.1, "a shorter silence does not split speech")
    turn_gap_s: float = setting(
        1.0, "a user's silence shorter than this is a pause whatever the system does; a system's does not end its turn"
    )
    max_pause_s: float = setting(
        3.0, "a user's silence up to this long, resumed while the system said no more than a backchannel, is a pause"
    )
    # Longer than the silences inside the recorded prompts' sentences (at most 0.29 s).
    stop_gap_s: float = setting(0.3, "spoken over, a system silent this long has stopped (its turn ends there)")
    stop_within_s: float = setting(1.0, "spoken over, a system that goes on longer than this did not stop")
    backchannel_max_s: float = setting(1.0, "a system turn at most this long is a backchannel where it answers nothing")


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
    system_turn: Segment  # the system's turn spoken over, to where it stopped
    stop_latency_s: float  # how long the system spoke on after the user began
    stopped: bool  # within the settings' stop_within_s

    def record(self) -> dict[str, Any]:
        return {
            "user_turn": self.user_turn.record(),
            "system_turn": self.system_turn.record(),
            "stop_latency_s": round(self.stop_latency_s, 3),
            "stopped": self.stopped,
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
    annotated_pauses: list[Segment] = field(default_factory=list)  # the session's pause annotation, as read

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
            "annotated_pauses": segments(self.annotated_pauses),
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
            BargeIn(Segment(*b["user_turn"]), Segment(*b["system_turn"]), b["stop_latency_s"], b["stopped"])
            for b in record["barge_ins"]
        ]
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
            segments(record["annotated_pauses"]),
        )


def speech_of(samples: np.ndarray, settings: TimelineSettings) -> list[Segment]:
    """Stretches of speech in one channel (16 kHz), by Silero VAD with the settings' thresholds, each boundary
    then moved out to where the channel's energy says the speech begins and ends (`onset_db`)."""
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
    found = [Segment(s["start"] / RATE, s["end"] / RATE) for s in get_speech_timestamps(samples, options, RATE)]
    if settings.onset_db is None:
        return found
    return _to_energy_edges(samples, found, settings.onset_db, settings.min_silence_s, settings.over_quiet_db)


ENERGY_FRAME_S = 0.01
# How far an edge may move to the energy's: Silero was found up to 0.46 s late on a loud onset (it missed a word).
ENERGY_REACH_S = 0.5


def _to_energy_edges(
    samples: np.ndarray, found: list[Segment], below_db: float, bridge_s: float, over_quiet_db: float
) -> list[Segment]:
    """Each stretch's edges moved to where its 10 ms frames turn louder than `below_db` under its loudest frame
    (and `over_quiet_db` over the channel's quiet: its 10th percentile frame): out over loud frames, in over quiet ones,
    by at most ENERGY_REACH_S, across quiet shorter than `bridge_s` (a silence that does not split speech), never
    into the stretch before or after it. Silero's probability rises a few frames after a loud onset, later still
    where the speech sits on its frame grid, and falls a few frames after the speech ends; the energy says where
    the speech is."""
    hop = int(ENERGY_FRAME_S * RATE)
    frames = samples[: len(samples) // hop * hop].reshape(-1, hop).astype(np.float64)
    if not len(frames) or not found:
        return found
    level = 10 * np.log10(np.mean(frames**2, axis=1) + 1e-12)
    quiet = float(np.percentile(level, 10)) + over_quiet_db
    reach = int(ENERGY_REACH_S / ENERGY_FRAME_S)
    bridge = max(1, int(round(bridge_s / ENERGY_FRAME_S)))
    moved: list[Segment] = []
    for k, seg in enumerate(found):
        first, last = int(seg.start / ENERGY_FRAME_S), min(len(level), int(np.ceil(seg.end / ENERGY_FRAME_S)))
        if last <= first:
            moved.append(seg)
            continue
        gate = max(float(level[first:last].max()) - below_db, quiet)
        lowest = max(first - reach, int(np.ceil(moved[-1].end / ENERGY_FRAME_S)) if moved else 0)
        highest = min(last + reach, int(found[k + 1].start / ENERGY_FRAME_S) if k + 1 < len(found) else len(level))
        loud = level >= gate
        start, end = first, last
        # Out, over loud frames Silero heard late (across quiet shorter than a silence that splits speech) ...
        i = first - 1
        while i >= lowest and first - i <= reach and not (i + bridge < first and not loud[i : i + bridge + 1].any()):
            start = i if loud[i] else start
            i -= 1
        i = last
        while i < highest and i - last < reach and not (i - bridge >= last and not loud[i - bridge : i + 1].any()):
            end = i + 1 if loud[i] else end
            i += 1
        # ... or in, off quiet frames it took for speech.
        while start < min(first + reach, end - 1) and not loud[start]:
            start += 1
        while end > max(last - reach, start + 1) and not loud[end - 1]:
            end -= 1
        moved.append(Segment(start * ENERGY_FRAME_S, end * ENERGY_FRAME_S))
    return moved


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
    annotated = annotated_pauses(session.annotations, session.duration_s, notes)
    user_turns = user_turns_of(speech["user"], speech["system"], annotated, settings)
    system_turns, barge_ins = system_turns_of(speech["system"], user_turns, settings)
    words: dict[str, list[dict[str, Any]] | None] = {"user": None, "system": None}
    languages: dict[str, dict[str, Any] | None] = {"user": None, "system": None}
    if recogniser is not None:  # each turn heard in its own language where none is declared (words.py)
        from trace_eval.sessions.words import transcribe

        turns = {"user": user_turns, "system": system_turns}
        words, languages, heard = transcribe(session, recogniser, language, turns)
        notes += heard
    backchannels = backchannels_of(system_turns, user_turns, settings, words["system"])
    barge_ins = [b for b in barge_ins if b.system_turn not in backchannels]
    turns = {"user": user_turns, "system": system_turns}
    pauses = {
        who: [g for turn in turns[who] for g in gaps([s for s in speech[who] if turn.overlaps(s)], turn)]
        for who in speech
    }
    timeline = Timeline(
        session.name,
        session.duration_s,
        settings,
        speech,
        turns,
        pauses,
        intersection(speech["user"], speech["system"]),
        backchannels,
        answers_of(user_turns, system_turns, backchannels, session.duration_s),
        barge_ins,
        notes,
        words,
        languages,
        None if recogniser is None else recogniser.model().id,
        annotated_pauses=annotated,
    )
    events = session.annotations.get("events.jsonl")
    if events is not None:
        from trace_eval.sessions.events import client_latencies

        barge_in = barge_ins[0].user_turn.start if barge_ins else None
        timeline.client = client_latencies(events, barge_in_s=barge_in, user_turns=user_turns)
    return timeline


def annotated_pauses(annotations: dict[str, Any], duration_s: float, notes: list[str]) -> list[Segment]:
    """The pauses a session's `pause.json` marks (Full-Duplex-Bench's list of {..., timestamp: [start, end]}, or
    FLEXI's one object); one that is not a pair of times, or lies past the audio's end, is left out with a note."""
    found = annotations.get("pause.json")
    if found is None:
        return []
    pauses = []
    for item in found if isinstance(found, list) else [found]:
        stamp = item.get("timestamp") if isinstance(item, dict) else None
        if not (isinstance(stamp, list) and len(stamp) == 2 and all(isinstance(t, int | float) for t in stamp)):
            notes.append(f"pause.json: {item!r} has no [start, end] timestamp: not read")
        elif not 0 <= stamp[0] < stamp[1]:
            notes.append(f"pause.json: the pause {stamp} does not end after it starts: not read")
        elif stamp[0] >= duration_s:
            notes.append(f"pause.json: the pause at {stamp[0]:.2f} s lies past the audio's end ({duration_s:.2f} s)")
        else:
            pauses.append(Segment(float(stamp[0]), min(float(stamp[1]), duration_s)))
    return pauses


def user_turns_of(
    user: list[Segment], system: list[Segment], annotated: list[Segment], settings: TimelineSettings
) -> list[Segment]:
    """The user's speech joined into turns across its pauses (the module's rules 1 to 3)."""
    # What the system says in a silence, as turns: a piece longer than a backchannel fills it.
    said = union(system, bridge=settings.turn_gap_s)

    def is_pause(silence: Segment) -> bool:
        if any(a.overlaps(silence) for a in annotated):
            return True
        if silence.duration < settings.turn_gap_s:
            return True
        filled = any(s.overlaps(silence) and s.duration > settings.backchannel_max_s for s in said)
        return not filled and silence.duration <= settings.max_pause_s

    turns: list[Segment] = []
    for s in user:
        if turns and is_pause(Segment(turns[-1].end, s.start)):
            turns[-1] = Segment(turns[-1].start, s.end)
        else:
            turns.append(s)
    return turns


def system_turns_of(
    system: list[Segment], user_turns: list[Segment], settings: TimelineSettings
) -> tuple[list[Segment], list[BargeIn]]:
    """The system's turns, each barge-in ending one at the system's stop, and the barge-ins."""
    # A run: the system's speech without a silence heard as a stop.
    runs = union(system, bridge=settings.stop_gap_s)
    spoken_over = {}
    for user in user_turns:
        run = next((r for r in runs if r.start < user.start < r.end), None)
        if run is not None and run not in spoken_over:
            spoken_over[run] = user
    turns: list[Segment] = []
    joinable = False  # whether the last turn may go on into the next run
    for run in runs:
        if turns and joinable and run.start - turns[-1].end < settings.turn_gap_s:
            turns[-1] = Segment(turns[-1].start, run.end)
        else:
            turns.append(run)
        joinable = run not in spoken_over
    barge_ins = []
    for run, user in spoken_over.items():
        turn = next(t for t in turns if t.start <= run.start and run.end == t.end)
        went_on = run.end - user.start
        barge_ins.append(BargeIn(user, turn, went_on, went_on <= settings.stop_within_s))
    return turns, barge_ins


def backchannels_of(
    system_turns: list[Segment],
    user_turns: list[Segment],
    settings: TimelineSettings,
    words: list[dict[str, Any]] | None = None,
) -> list[Segment]:
    """Short system turns (at most backchannel_max_s, and at most BACKCHANNEL_MAX_WORDS words where the system's
    words are known) begun inside a user's turn, or followed by another system turn before the user's next."""
    found = []
    for k, turn in enumerate(system_turns):
        said = len(words_in(words or [], turn))
        if turn.duration > settings.backchannel_max_s or said > BACKCHANNEL_MAX_WORDS:
            continue
        inside = any(u.start < turn.start < u.end for u in user_turns)
        next_user = next((u.start for u in user_turns if u.start > turn.start), float("inf"))
        followed = k + 1 < len(system_turns) and system_turns[k + 1].start < next_user
        if inside or followed:
            found.append(turn)
    return found


def words_in(words: list[dict[str, Any]], turn: Segment) -> list[dict[str, Any]]:
    """The words said in a turn: those that start in it, or just before (a recogniser's word may start a frame
    early)."""
    return [w for w in words if turn.start - 0.1 <= w["start"] < turn.end]


def answers_of(
    user_turns: list[Segment], system_turns: list[Segment], backchannels: list[Segment], duration_s: float
) -> list[Answer]:
    """Each user turn's answer: the system's first turn (no backchannel) begun after the user's turn began and
    before the user's next turn; its latency from the user's end (negative: a jump-in)."""
    short = set(backchannels)
    answering = [s for s in system_turns if s not in short]
    starts = [s.start for s in answering]  # in order
    answers = []
    for k, user in enumerate(user_turns):
        next_user = user_turns[k + 1].start if k + 1 < len(user_turns) else duration_s
        first = bisect.bisect_right(starts, user.start)
        answer = answering[first] if first < len(answering) and answering[first].start < next_user else None
        answers.append(Answer(user, answer, None if answer is None else answer.start - user.end))
    return answers
