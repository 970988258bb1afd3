"""`python -m trace_eval live URL --user FILE --out DIR`: play a user's audio in real time to a system behind a
WebSocket and record the session."""

from __future__ import annotations

import argparse
import sys

HELP = (
    "play a user's audio in real time to a system behind a WebSocket and record the session (both channels, "
    "the event log) in a new folder"
)


def configure(parser: argparse.ArgumentParser) -> None:
    from trace_eval.sessions.live import LiveSettings

    defaults = LiveSettings()
    parser.add_argument("url", metavar="URL", help="the system's WebSocket: ws://host:port/path or wss://...")
    parser.add_argument("--user", required=True, metavar="FILE", help="the user's audio (any file that decodes)")
    parser.add_argument(
        "--out", required=True, metavar="DIR", help="the session folder to write; it must not exist yet"
    )
    parser.add_argument(
        "--tail",
        type=float,
        default=defaults.tail_s,
        metavar="S",
        help="seconds to listen after the user's audio ends (default: %(default)s)",
    )
    parser.add_argument(
        "--rate",
        type=int,
        default=defaults.sample_rate,
        metavar="HZ",
        help="the sample rate declared for both ways; the user's audio is resampled to it (default: %(default)s)",
    )
    parser.add_argument(
        "--setup-timeout",
        type=float,
        default=defaults.setup_timeout_s,
        metavar="S",
        help="seconds to wait for the connection, then for the system to accept the declaration (default: %(default)s)",
    )


def run(args: argparse.Namespace) -> int:
    from trace_eval.sessions import make_timeline, read_session
    from trace_eval.sessions.live import LiveError, LiveSettings, record_session

    settings = LiveSettings(sample_rate=args.rate, tail_s=args.tail, setup_timeout_s=args.setup_timeout)
    try:
        recorded = record_session(args.url, args.user, args.out, settings)
    except LiveError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(
        f"wrote {recorded.folder}: {recorded.duration_s:.2f} s, the user's audio {recorded.user_audio_s:.2f} s sent, "
        f"the system's {recorded.system_audio_s:.2f} s received"
    )
    closed = recorded.closed
    if closed["by"] == "system":
        why = f": {closed['reason']}" if closed["reason"] else ""
        print(f"the system closed the connection at {closed['t']:.2f} s (code {closed['code']}{why})")
    # Per user turn, as the timeline finds the user's turns on the channel sent.
    first = make_timeline(read_session(recorded.folder)).client or {}
    found = first.get("time_to_first_audio_s") or []
    shown = ", ".join("none" if v is None else f"{v:.3f} s" for v in found) or "no user turn"
    print(f"time to first audio (client's clock, from each user turn's last frame sent): {shown}")
    return 0
