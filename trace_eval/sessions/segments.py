"""Time on a timeline, as pyannote.core keeps it: a segment is a start and an end in seconds from the session's
first sample; a timeline is a sorted list of segments that do not overlap. Every other module of sessions/ does
its interval arithmetic here."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Segment", "gaps", "intersection", "union"]


@dataclass(frozen=True, order=True)
class Segment:
    """[start, end) in seconds from the recording's first sample."""

    start: float
    end: float

    @property
    def duration(self) -> float:
        return self.end - self.start

    def overlaps(self, other: Segment) -> bool:
        return self.start < other.end and other.start < self.end

    def __and__(self, other: Segment) -> Segment | None:
        start, end = max(self.start, other.start), min(self.end, other.end)
        return Segment(start, end) if start < end else None

    def record(self) -> list[float]:
        return [round(self.start, 3), round(self.end, 3)]


def union(segments: Iterable[Segment], bridge: float = 0.0) -> list[Segment]:
    """The segments merged where they overlap or where less than `bridge` seconds separate them, in order."""
    merged: list[Segment] = []
    for s in sorted(segments):
        if merged and s.start - merged[-1].end <= bridge:
            merged[-1] = Segment(merged[-1].start, max(merged[-1].end, s.end))
        else:
            merged.append(s)
    return merged


def intersection(a: list[Segment], b: list[Segment]) -> list[Segment]:
    """Where two timelines (each sorted, without overlaps) both hold."""
    found, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        common = a[i] & b[j]
        if common is not None:
            found.append(common)
        if a[i].end <= b[j].end:
            i += 1
        else:
            j += 1
    return found


def gaps(timeline: list[Segment], within: Segment | None = None) -> list[Segment]:
    """The stretches between a timeline's segments (inside `within`, when given, its edges included)."""
    bounds = within or (Segment(timeline[0].start, timeline[-1].end) if timeline else None)
    if bounds is None:
        return []
    found, cursor = [], bounds.start
    for s in timeline:
        if s.start > cursor:
            found.append(Segment(cursor, min(s.start, bounds.end)))
        cursor = max(cursor, s.end)
        if cursor >= bounds.end:
            break
    if cursor < bounds.end:
        found.append(Segment(cursor, bounds.end))
    return [g for g in found if g.duration > 0]
