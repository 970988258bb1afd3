"""The live client: a user's channel played in real time to a system behind a WebSocket, and the session recorded.

    from trace_eval.sessions.live import record_session
    record_session("ws://127.0.0.1:8765/talk", "question.wav", "sessions/s1", tail_s=3.0)
    read_session("sessions/s1")  # then make_timeline, timing_metrics, client_latencies

The protocol, from the client's side:

1. a text message declares the audio, both ways: `{"sample_rate": 16000, "channels": 1, "frame_ms": 20,
   "format": "pcm_s16le"}`;
2. the system accepts it with a text message `{"event": "ready", ...}`, or refuses it with `{"error": "why"}`
   or by closing the connection (its reason is reported);
3. the client sends the user's audio as binary messages of 20 ms of 16-bit little-endian mono PCM, each once its
   20 ms have played (as a microphone delivers them), scheduled from a monotonic clock so the pace does not drift;
   meanwhile it takes the system's binary messages (PCM in the same format) and its text messages, logged;
4. after the user's audio, the client goes on sending frames of silence (a microphone left open) and listening
   for `tail_s`, then closes. A system may close first, at any moment: before accepting the declaration the
   session cannot be set up (LiveError, nothing written); after, the session ends there and is written with
   what was sent and received until then, and who closed it, with its code and reason (`session.json`).

The session folder (written whole or not at all: into a temporary folder beside it, then renamed):
`user.wav` (the user's audio as sent), `system.wav`, `events.jsonl` (trace_eval.sessions.events) and
`session.json` (what was recorded, from where, with which settings). Both files start at the session clock's
zero, the user's first sample. `system.wav` holds the system's audio where a client playing it as it arrived
would have played it: each frame from the moment it arrived, or right after the frame before it while that still
plays; silence where nothing arrived. A latency measured between the two files is what the user would have
heard: the system's own time, the network both ways and the 20 ms a frame takes to be captured.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from trace_eval.audio import AudioLoadingError, load_audio
from trace_eval.sessions.events import event_lines, read_events
from trace_eval.sessions.session import LIVE_FILES, LIVE_LAYOUT, LIVE_MANIFEST, SessionError

__all__ = ["LiveError", "LiveRecording", "LiveSettings", "record_session"]

VERSION = 1
FRAME_MS = 20
FORMAT = "pcm_s16le"
CLOCK = "seconds from the session's first sample, the user's first, on the client's monotonic clock"


class LiveError(SessionError):
    """A session that could not be recorded, with the URL and the cause; nothing of it is written."""


@dataclass(frozen=True)
class LiveSettings:
    sample_rate: int = 16000  # declared for both ways: the user's audio is resampled to it
    tail_s: float = 3.0  # how long the client listens after the user's audio ends
    setup_timeout_s: float = 5.0  # to open the connection, and again for the system to accept the declaration


@dataclass
class LiveRecording:
    folder: Path
    duration_s: float  # session clock, zero to the close
    user_audio_s: float  # of the user's audio sent: all of it, unless the system hung up first
    system_audio_s: float  # seconds of audio received
    events: list[dict[str, Any]]
    closed: dict[str, Any]  # by whom ("client" or "system"), when, the code and the reason


def record_session(
    url: str, user: str | Path, out: str | Path, settings: LiveSettings | None = None, **changes: Any
) -> LiveRecording:
    """Play `user` (any file trace_eval.audio reads) to the system at `url` in real time and write the session
    to the new folder `out`. `changes` set LiveSettings fields (`tail_s=2`). Raises LiveError, naming the URL
    and the cause, when the session cannot be set up; nothing is written then."""
    settings = settings or LiveSettings()
    if changes:
        settings = LiveSettings(**{**asdict(settings), **changes})
    if settings.sample_rate <= 0 or settings.sample_rate * FRAME_MS % 1000:
        raise LiveError(f"sample rate {settings.sample_rate}: a {FRAME_MS} ms frame must be a whole number of samples")
    if settings.tail_s < 0 or settings.setup_timeout_s <= 0:
        raise LiveError(f"tail {settings.tail_s} s, setup timeout {settings.setup_timeout_s} s: the tail cannot be "
                        "negative, the timeout must be more than 0")  # fmt: skip
    out = Path(out)
    if out.exists():
        raise LiveError(f"{out}: already exists; a session is written to a new folder")
    try:
        audio = load_audio(user)
    except AudioLoadingError as e:
        raise LiveError(str(e)) from None
    frame = settings.sample_rate * FRAME_MS // 1000
    samples = _pcm16(audio.at(settings.sample_rate))
    samples = np.pad(samples, (0, -len(samples) % frame))  # the last frame filled with silence
    heard = asyncio.run(_converse(url, samples, frame, settings))
    return _write(out, url, str(user), samples, heard, settings)


@dataclass
class _Heard:
    events: list[dict[str, Any]]  # `t` on the client's monotonic clock until _converse returns
    chunks: list[tuple[int, np.ndarray]]  # the system's frames: (first sample on the session clock, samples)
    end_s: float  # the close, on the session clock
    user_sent: int  # samples of the user's audio sent: all of it, unless the system hung up first


async def _converse(url: str, user: np.ndarray, frame: int, settings: LiveSettings) -> _Heard:
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI

    events: list[dict[str, Any]] = []

    def log(name: str, **fields: Any) -> None:
        events.append({"t": time.monotonic(), "event": name, **fields})

    rate = settings.sample_rate
    try:
        # No compression: PCM hardly compresses, and deflating each frame costs time on both sides.
        ws = await connect(url, open_timeout=settings.setup_timeout_s, compression=None, close_timeout=2)
    except InvalidURI as e:
        raise LiveError(f"{url}: not a WebSocket URL ({e}); expected ws://host:port/path or wss://...") from None
    except InvalidHandshake as e:
        raise LiveError(f"{url}: the server refused the WebSocket connection ({e})") from None
    except (OSError, asyncio.TimeoutError, TimeoutError) as e:  # distinct before Python 3.11
        raise LiveError(f"{url}: cannot connect ({e or type(e).__name__})") from None
    try:
        log("connected", url=url)
        declaration = {"sample_rate": rate, "channels": 1, "frame_ms": FRAME_MS, "format": FORMAT}
        try:
            await ws.send(json.dumps(declaration))
            answer = await asyncio.wait_for(ws.recv(), settings.setup_timeout_s)
        except asyncio.TimeoutError:
            raise LiveError(
                f"{url}: no answer to the declaration within {settings.setup_timeout_s:g} s "
                '(expected {"event": "ready"})'
            ) from None
        except ConnectionClosed as e:
            raise LiveError(
                f"{url}: the system closed the connection instead of accepting {declaration} ({e})"
            ) from None
        message = _json_or_none(answer)
        if message is None or message.get("event") != "ready":
            why = message.get("error") if isinstance(message, dict) and "error" in message else None
            raise LiveError(
                f"{url}: the system refused the declaration {declaration}: {why}"
                if why is not None
                else f"{url}: the system answered the declaration with {str(answer)[:200]!r}, where "
                '{"event": "ready"} (or {"error": ...}) is expected'
            )
        log("ready", sample_rate=rate, message=message)
        return await _stream(ws, user, frame, rate, settings.tail_s, events, log)
    finally:
        await ws.close()


async def _stream(ws, user: np.ndarray, frame: int, rate: int, tail_s: float, events: list, log) -> _Heard:
    from websockets.exceptions import ConnectionClosed

    frame_s = frame / rate
    zero = time.monotonic()  # the session clock's zero: the user's first sample starts "playing" now
    chunks: list[tuple[int, np.ndarray]] = []
    closing = False
    sent = 0  # frames sent, the user's audio and the silence after it

    async def send() -> bool:
        """Every frame sent, then True; False where the system hung up first."""
        nonlocal sent
        count = len(user) // frame
        silence = bytes(2 * frame)
        for k in range(count + round(tail_s / frame_s)):
            # From the clock, not from the last send: a late frame does not delay the ones after it.
            await asyncio.sleep(max(0.0, zero + (k + 1) * frame_s - time.monotonic()))
            try:
                await ws.send(user[k * frame : (k + 1) * frame].astype("<i2").tobytes() if k < count else silence)
            except ConnectionClosed:
                return False  # the system hung up: receive() logs it
            sent = k + 1
            if k == 0:
                log("audio_sent", frame="first", end_s=round(frame_s, 6))
            if k == count - 1:
                log("audio_sent", frame="last", end_s=round(count * frame_s, 6))
        return True

    async def receive() -> None:
        played_until = 0  # in samples on the session clock: where the audio received so far stops playing
        try:
            async for message in ws:
                if closing:
                    break  # what arrives after the client closed is after the session's end
                arrived = time.monotonic() - zero
                if isinstance(message, str):
                    log("text_received", text=message)
                    continue
                samples = np.frombuffer(message[: len(message) // 2 * 2], dtype="<i2")  # an odd byte is no sample
                at = max(round(arrived * rate), played_until)
                played_until = at + len(samples)
                chunks.append((at, samples))
                name = "audio_received" if len(chunks) > 1 else "first_audio_received"
                log(name, samples=len(samples), at=round(at / rate, 6), until=round(played_until / rate, 6))
        except ConnectionClosed:
            pass
        if not closing:
            log("closed", by="system", code=ws.close_code, reason=ws.close_reason or "")

    receiving = asyncio.create_task(receive())
    try:
        if await send() and not receiving.done():
            closing = True
            log("closed", by="client", code=1000, reason="the tail after the user's audio is over")
            await ws.close()
        await receiving
    finally:
        receiving.cancel()  # when sending failed: nothing is left running
    end = next(e["t"] for e in reversed(events) if e["event"] == "closed") - zero
    for e in events:
        e["t"] -= zero
    return _Heard(events, chunks, end, min(len(user), sent * frame))


def _json_or_none(message: str | bytes) -> dict[str, Any] | None:
    if not isinstance(message, str):
        return None
    try:
        found = json.loads(message)
    except json.JSONDecodeError:
        return None
    return found if isinstance(found, dict) else None


def _pcm16(samples: np.ndarray) -> np.ndarray:
    return (np.clip(samples, -1.0, 1.0) * 32767).round().astype(np.int16)


def _write(out: Path, url: str, source: str, user: np.ndarray, heard: _Heard, settings: LiveSettings) -> LiveRecording:
    import soundfile as sf

    rate = settings.sample_rate
    user = user[: heard.user_sent]  # what the system heard of it
    last = next(e for e in reversed(heard.events) if e["event"] == "closed")
    closed: dict[str, Any] = {k: last[k] for k in ("by", "code", "reason")} | {"t": round(last["t"], 3)}
    length = max(round(heard.end_s * rate), len(user), max((at + len(s) for at, s in heard.chunks), default=0))
    system = np.zeros(length, dtype=np.int16)
    for at, samples in heard.chunks:
        system[at : at + len(samples)] = samples
    received_s = sum(len(s) for _, s in heard.chunks) / rate
    manifest = {
        "layout": LIVE_LAYOUT,
        "version": VERSION,
        "files": LIVE_FILES,
        "clock": CLOCK,
        "url": url,
        "user_source": source,
        "declaration": {"sample_rate": rate, "channels": 1, "frame_ms": FRAME_MS, "format": FORMAT},
        "settings": asdict(settings),
        "recorded_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "duration_s": round(length / rate, 3),
        "user_audio_s": round(len(user) / rate, 3),
        "system_audio_s": round(received_s, 3),
        "closed": closed,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.parent / f".{out.name}.partial-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)  # left by a run of this process that died mid-write
    try:
        partial.mkdir()
        # The user's channel runs to the session's end in silence, so both files are one length.
        sf.write(partial / LIVE_FILES["user"], np.pad(user, (0, length - len(user))), rate, subtype="PCM_16")
        sf.write(partial / LIVE_FILES["system"], system, rate, subtype="PCM_16")
        (partial / LIVE_FILES["events"]).write_text(event_lines(heard.events), encoding="utf-8")
        (partial / LIVE_MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        for path in partial.iterdir():
            with open(path, "rb") as f:
                os.fsync(f.fileno())
        os.rename(partial, out)  # fails, rather than merging, if `out` appeared meanwhile
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    events = read_events(out / LIVE_FILES["events"])
    return LiveRecording(out, length / rate, len(user) / rate, received_s, events, closed)
