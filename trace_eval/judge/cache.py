"""Persistent cache of backbone answers: one JSON file per request key, written atomically.

The key hashes everything that changes an answer (backbone, API base, prompt
version, the rendered messages, sampling settings, structured-output schema,
sample index) and nothing that does not (concurrency, timeouts, retries, the run
folder). The raw answer text is cached rather than the parsed verdict, so a
better parser applies to old answers without a single call.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from trace_eval.io import write_json
from trace_eval.resources import user_cache_dir

__all__ = ["AnswerCache", "default_cache_dir", "request_key"]

FORMAT_VERSION = 1


def default_cache_dir() -> Path:
    """$TRACE_CACHE_DIR/judge, else $XDG_CACHE_HOME/trace-eval/judge, else ~/.cache/trace-eval/judge."""
    return user_cache_dir("judge")


def request_key(request: dict[str, Any]) -> str:
    """sha256 over the canonical JSON of the request description."""
    canonical = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class AnswerCache:
    """Answers by request key. `read=False` ignores what is cached but still stores fresh answers."""

    def __init__(self, directory: str | Path, read: bool = True, write: bool = True):
        self.dir = Path(directory)
        self.read = read
        self.write = write

    def _path(self, key: str) -> Path:
        return self.dir / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict | None:
        if not self.read:
            return None
        path = self._path(key)
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, json.JSONDecodeError):
            return None  # a damaged entry is asked again, never trusted
        if not isinstance(entry, dict) or entry.get("format_version") != FORMAT_VERSION or "text" not in entry:
            return None
        return entry

    def put(self, key: str, entry: dict) -> None:
        if self.write:
            write_json(self._path(key), {"format_version": FORMAT_VERSION, **entry}, indent=None)
