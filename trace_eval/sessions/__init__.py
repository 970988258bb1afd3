"""Sessions in real time: a user's channel and a system's on one timeline, what happened when, and its timing.

    from trace_eval.sessions import read_session, make_timeline, timing_metrics
    timeline = make_timeline(read_session("fdb/v1/pause_handling/1"))   # a Full-Duplex-Bench folder
    timing_metrics([timeline])["response_latency_s"]

`session.py` reads the layouts sessions are recorded in, `timeline.py` finds speech, turns, pauses, overlaps,
answers and barge-ins (thresholds as settings), `metrics.py` gives the timing metrics as distributions, each
with where its clock starts; `segments.py` holds the interval arithmetic. Guide: docs/realtime.md.
"""

from trace_eval.sessions.metrics import DEFINITIONS, timing_metrics
from trace_eval.sessions.segments import Segment
from trace_eval.sessions.session import Session, SessionError, read_session
from trace_eval.sessions.timeline import Timeline, TimelineSettings, make_timeline

__all__ = [
    "DEFINITIONS",
    "Segment",
    "Session",
    "SessionError",
    "Timeline",
    "TimelineSettings",
    "make_timeline",
    "read_session",
    "timing_metrics",
]
