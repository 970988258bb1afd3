"""Timelines kept like blueprints: made once per session and settings, in the blueprint store's `timelines/`
folder (a local folder or a URL, shared by every benchmark and machine that uses the store).

A timeline is found by a key over what makes it: both channels' samples (as heard, at 16 kHz), the client's
event log, the pause annotation, the thresholds, the recogniser (its fingerprint: model, revision, settings) and
the declared language.
A stored file that does not read back as a timeline of this version is made again, never trusted.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from typing import Any

from trace_eval.sessions.session import Session
from trace_eval.sessions.timeline import VERSION, Timeline, TimelineSettings, make_timeline

__all__ = ["TimelineStore", "timeline_key", "timeline_of"]

FOLDER = "timelines"


def timeline_key(
    session: Session, settings: TimelineSettings, recogniser: Any = None, language: str | None = None
) -> str:
    digest = hashlib.sha256()
    for samples in (session.user, session.system):
        digest.update(samples.astype("<f4").tobytes())
        digest.update(b"|")
    made_by = {
        "version": VERSION,
        "events": session.annotations.get("events.jsonl"),  # the client's latencies come from the event log
        "pauses": session.annotations.get("pause.json"),  # the user's turns follow the pause annotation
        "settings": asdict(settings),
        "recogniser": None if recogniser is None else recogniser.fingerprint(language),
        "language": language,
    }
    digest.update(json.dumps(made_by, sort_keys=True).encode())
    return digest.hexdigest()


class TimelineStore:
    """The `timelines/` folder of a blueprint store (default: the user-level store, $TRACE_STORE)."""

    def __init__(self, location: str | None = None):
        from trace_eval.stage1.shelf import open_shelf
        from trace_eval.stage1.store import default_store

        base = str(location or default_store()).rstrip("/")
        self.shelf = open_shelf(f"{base}/{FOLDER}")
        self.location = self.shelf.location

    def get(self, key: str) -> Timeline | None:
        text = self.shelf.read(key)
        if text is None:
            return None
        try:
            return Timeline.from_record(json.loads(text))
        except (ValueError, KeyError, TypeError):  # damaged, or of another version: made again
            return None

    def put(self, key: str, timeline: Timeline) -> None:
        self.shelf.write(key, json.dumps(timeline.record(), indent=1, ensure_ascii=False) + "\n")


def timeline_of(
    session: Session,
    settings: TimelineSettings | None = None,
    recogniser: Any = None,
    language: str | None = None,
    store: TimelineStore | None = None,
) -> tuple[Timeline, bool]:
    """(the session's timeline, whether it came from the store): read from `store` where it was made before,
    else made and stored."""
    settings = settings or TimelineSettings()
    if store is None:
        return make_timeline(session, settings, recogniser, language), False
    key = timeline_key(session, settings, recogniser, language)
    found = store.get(key)
    if found is not None:
        found.session = session.name  # the same audio may lie in another folder
        return found, True
    timeline = make_timeline(session, settings, recogniser, language)
    store.put(key, timeline)
    return timeline, False
