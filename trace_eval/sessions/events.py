"""A session's event log: what the client did and saw, when, as JSON lines beside the audio.

One event a line, `{"t": seconds, "event": name, ...}`, in the order they happened. `t` is on the session
clock: seconds from the session's first sample (the first sample of the user's channel), read from the client's
monotonic clock; what happened before that sample (connecting) has a negative `t`. The live client writes:

- `connected`: the WebSocket is open (`url`);
- `ready`: the system accepted the declaration (what it said, as it said it, in `message`);
- `audio_sent`: the first and last frames of the user's audio (`frame`: "first" or "last"; `end_s`: where its
  audio ends on the session clock); a frame is sent once its 20 ms have played, as a microphone delivers it, and
  frames of silence follow the last until the close;
- `first_audio_received`, then `audio_received`: each binary frame of the system's (`samples`; `at` and `until`:
  where it is placed on the session clock: on arrival, or right after the audio before it while that still plays);
- `text_received`: a text message from the system (`text`);
- `closed`: the connection ended (`by`: "client" or "system"; `code`, `reason`).

`client_latencies` gives the figures the log alone holds, each with where its clock starts; they sit beside the
ones measured on the audio (trace_eval.sessions.metrics), which also count what the system put in its own
audio (a silence before it speaks).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from trace_eval.sessions.errors import SessionError
from trace_eval.sessions.segments import Segment, union

__all__ = ["CLIENT_LATENCIES", "client_latencies", "event_lines", "read_events"]

# Received audio closer than this to the audio before it continues it (a frame that arrived a little late).
CONTINUES_WITHIN_S = 0.1

CLIENT_LATENCIES = {
    "setup_s": "the client's clock, from the connection opened to the system accepting the declaration",
    "time_to_first_audio_s": "per user turn, the client's clock, from the turn's last frame sent to the system's "
    "next frame received (before the user's next turn; None where none came)",
    "first_audio_s": "the session clock, from the session's first sample to the system's first frame received",
    "stop_latency_s": "the session clock, from barge_in_s (the user starting to speak over the system) to the end "
    "of the system's received audio that was playing then",
}


def event_lines(events: Iterable[dict[str, Any]]) -> str:
    """The log as written: one JSON object a line, `t` rounded to the microsecond."""
    return "".join(json.dumps({**e, "t": round(e["t"], 6)}, ensure_ascii=False) + "\n" for e in events)


def read_events(path: str | Path) -> list[dict[str, Any]]:
    """The events of a log, checked: each line a JSON object with a number `t` and a name `event`, the times
    never going backwards. What is not is refused (SessionError) naming the file and the line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise SessionError(f"{path}: cannot be read as an event log ({e})") from None
    events: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}, line {number}"
        try:
            event = json.loads(line)
        except json.JSONDecodeError as e:
            raise SessionError(f"{where}: not JSON ({e})") from None
        if not isinstance(event, dict):
            raise SessionError(f"{where}: an event is a JSON object with t and event, not {type(event).__name__}")
        t = event.get("t")
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t):
            raise SessionError(f"{where}: no time: t must be a number of seconds on the session clock")
        if not isinstance(event.get("event"), str) or not event["event"]:
            raise SessionError(f"{where}: no event name (the field event)")
        if events and t < events[-1]["t"]:
            raise SessionError(
                f"{where}: out of order: t {t} comes after t {events[-1]['t']} on line {events[-1]['_line']}; "
                "a log lists its events as they happened"
            )
        events.append({**event, "_line": number})
    return [{k: v for k, v in e.items() if k != "_line"} for e in events]


def client_latencies(
    events: list[dict[str, Any]], *, barge_in_s: float | None = None, user_turns: list[Segment] | None = None
) -> dict[str, Any]:
    """The latencies the event log holds, in seconds (None where the log has no such event), with where each
    clock starts (`clocks`). `barge_in_s`: where the user started to speak over the system, on the session
    clock (a barge-in of the timeline, or where it was planted); without it there is no stop latency.
    `user_turns`: the timeline's, each with a time to first audio; without them the user's audio is one turn
    that ends with its last frame."""

    def first(name: str, **match: Any) -> float | None:
        return next(
            (e["t"] for e in events if e["event"] == name and all(e.get(k) == v for k, v in match.items())), None
        )

    connected, ready = first("connected"), first("ready")
    found: dict[str, float | None] = {
        "setup_s": None if connected is None or ready is None else ready - connected,
        "first_audio_s": first("first_audio_received"),
        "stop_latency_s": None,
    }
    if barge_in_s is not None:
        playing = next((s for s in _received_audio(events) if s.start <= barge_in_s < s.end), None)
        found["stop_latency_s"] = None if playing is None else playing.end - barge_in_s
    return {
        **{k: None if v is None else round(v, 3) for k, v in found.items()},
        "time_to_first_audio_s": [None if v is None else round(v, 3) for v in _first_audio(events, user_turns)],
        "clocks": CLIENT_LATENCIES,
    }


def _first_audio(events: list[dict[str, Any]], user_turns: list[Segment] | None) -> list[float | None]:
    """For each user turn, from its last frame sent (the frame its end falls in, sent once it had played) to
    the first of the system's frames that arrived after it and before the user's next turn."""
    sent = [e for e in events if e["event"] == "audio_sent"]
    if not sent:
        return []
    frame_s = next((e["end_s"] for e in sent if e.get("frame") == "first"), 0.02)
    if user_turns is None:
        last = next((e["end_s"] for e in sent if e.get("frame") == "last"), None)
        user_turns = [] if last is None else [Segment(0.0, last)]
    arrivals = [e["t"] for e in events if e["event"] in ("first_audio_received", "audio_received")]
    found: list[float | None] = []
    for k, turn in enumerate(user_turns):
        last_frame = math.ceil(turn.end / frame_s - 1e-6) * frame_s
        until = user_turns[k + 1].start if k + 1 < len(user_turns) else math.inf
        found.append(next((t - last_frame for t in arrivals if last_frame < t < until), None))
    return found


def _received_audio(events: list[dict[str, Any]]) -> list[Segment]:
    """The stretches of the session clock the system's received audio covers, as placed."""
    frames = [
        Segment(e["at"], e["until"])
        for e in events
        if e["event"] in ("first_audio_received", "audio_received") and "at" in e and "until" in e
    ]
    return union(frames, bridge=CONTINUES_WITHIN_S)
