"""Sessions in real time: a user's channel and a system's on one timeline, what happened when, and its timing.

    from trace_eval.sessions import read_session, make_timeline, timing_metrics
    timeline = make_timeline(read_session("fdb/v1/pause_handling/1"))   # a Full-Duplex-Bench folder
    timing_metrics([timeline])["response_latency_s"]

`session.py` reads the layouts sessions are recorded in (`manifest.py`: which sessions a folder holds),
`timeline.py` finds speech, turns, pauses, overlaps, answers and barge-ins (thresholds as settings; `words.py`:
what each channel said, from Stage 1's recogniser), `store.py` keeps timelines beside the blueprints, `metrics.py`
gives the timing metrics as distributions, each with where its clock starts; `segments.py` holds the interval
arithmetic. `full_duplex_bench.py` and `flexi.py` score those benchmarks' folders (`samples.py` reads them), as
their scripts do or as their tasks mean; `interaction.py` judges two systems' sessions pairwise and ranks them,
`pairs.py` writes such pairs as a benchmark for the interaction rubric; `live.py` records a session from a system
behind a WebSocket (`events.py`: its event log); `page.py` draws sessions. Guide: docs/realtime.md.
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
