"""A benchmark's sample folder in Full-Duplex-Bench's layout (FLEXI keeps it): the system's words with times
(`output.json`, from the benchmark's recogniser), the task's annotation, a stored rating. Read here for both
benchmarks' scoring (full_duplex_bench.py, flexi.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trace_eval.sessions.errors import SessionError

__all__ = [
    "TASKS",
    "TURN_MAX_WORDS",
    "TURN_MIN_S",
    "Word",
    "read_annotation",
    "read_annotations",
    "read_json",
    "read_words",
    "stored_rating",
    "task_of",
]

# The benchmark's rule for "the system took the turn": its words span at least TURN_MIN_S, or number more than
# TURN_MAX_WORDS (fewer, shorter words are a backchannel). Kept in both modes: it is the benchmark's definition.
TURN_MIN_S = 1.0
TURN_MAX_WORDS = 3
TASKS = {
    "pause.json": "pause_handling",
    "turn_taking.json": "smooth_turn_taking",
    "interrupt.json": "user_interruption",
}


@dataclass(frozen=True)
class Word:
    text: str
    start: float
    end: float | None  # the benchmark's recogniser leaves some ends null


def read_words(path: Path) -> list[Word]:
    """The system's words from an `output.json`, in the file's order."""
    data = read_json(path)
    chunks = data.get("chunks") if isinstance(data, dict) else None
    if not isinstance(chunks, list):
        raise SessionError(f"{path}: expected {{'text': ..., 'chunks': [{{'text', 'timestamp': [start, end]}}]}}")
    words = []
    for k, chunk in enumerate(chunks):
        stamp = chunk.get("timestamp") if isinstance(chunk, dict) else None
        if not isinstance(stamp, list) or len(stamp) != 2 or not isinstance(stamp[0], int | float):
            raise SessionError(f"{path}: chunk {k} has no [start, end] timestamp: {chunk!r}")
        words.append(Word(str(chunk.get("text", "")), float(stamp[0]), None if stamp[1] is None else float(stamp[1])))
    return words


def task_of(folder: Path) -> str:
    """The task a sample folder belongs to, from the annotation it holds."""
    found = [task for name, task in TASKS.items() if (folder / name).is_file()]
    if len(found) != 1:
        raise SessionError(
            f"{folder}: {'no' if not found else 'more than one'} task annotation; expected exactly one of "
            + ", ".join(TASKS)
        )
    return found[0]


def stored_rating(folder: Path) -> int | None:
    path = folder / "rating.json"
    if not path.is_file():
        return None
    rating = read_json(path).get("rating")
    return rating if isinstance(rating, int) else None


def read_json(path: Path) -> Any:
    if not path.is_file():
        raise SessionError(f"{path}: not found")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise SessionError(f"{path}: not JSON ({e})") from None


def read_annotations(folder: Path, task: str) -> list[dict[str, Any]]:
    name = next(n for n, t in TASKS.items() if t == task)
    found = read_json(folder / name)
    if isinstance(found, dict):  # FLEXI's layout: one annotation, not a list of them
        found = [found]
    ok = isinstance(found, list) and all(
        isinstance(a, dict) and isinstance(a.get("timestamp"), list) and len(a["timestamp"]) == 2 for a in found
    )
    if not ok or not found:
        raise SessionError(f"{folder / name}: expected a list of {{..., 'timestamp': [start, end]}}")
    return found


def read_annotation(folder: Path, task: str) -> dict[str, Any]:
    return read_annotations(folder, task)[0]  # the benchmark annotates one event per sample and reads the first
