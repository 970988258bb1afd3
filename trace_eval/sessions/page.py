"""The sessions page: each session's two channels drawn on one time axis, its audio played from any point, and the
pairs of systems with their interaction verdicts beside the drawings.

`write_page(result, out)` reads what `python -m trace_eval sessions DIR --out FILE` writes (the file or its
dict) and writes a folder that opens from disk (out/index.html, no server, nothing from the network):

    index.html, page.js, page.css   the page, copied from this package
    data.js                         the sessions, their timelines and the verdicts, read as a script
    audio/NNN.flac                  each session's channels as one stereo file: the user left, the system right

Each session's audio is read again from its folder (`read_session`); a folder that can no longer be read is
listed with the reason and drawn without audio.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trace_eval.io import atomic_write_bytes, atomic_write_text, read_json

__all__ = ["PAGE_FILES", "PageError", "PageFiles", "write_page"]

HERE = Path(__file__).resolve().parent
PAGE_FILES = {"page.html": "index.html", "page.js": "page.js", "page.css": "page.css"}  # in the package -> written
DATA_FILE = "data.js"
DATA_PREFIX = "window.TRACE_SESSIONS = "
VERSION = 1


class PageError(ValueError):
    """The result holds nothing the page can draw (say what to pass instead)."""


@dataclass(frozen=True)
class PageFiles:
    """What `write_page` wrote."""

    index: Path
    sessions: int
    pairs: int
    audio: int  # sessions with their audio written
    without_audio: list[str]  # "system/sample: reason" for each session drawn without its audio


def write_page(result: str | Path | dict[str, Any], out: str | Path) -> PageFiles:
    """Write the page of `result` (the JSON `sessions --out` writes, or its dict) into the folder `out`.

    A session's folder given as a relative path is looked for from the current folder, then from the result
    file's folder. Raises PageError when the result holds no timeline (Full-Duplex-Bench's task scores).
    """
    base = None if isinstance(result, dict) else Path(result).resolve().parent
    result = result if isinstance(result, dict) else read_json(result)
    sessions = _sessions_of(result)
    out = Path(out)
    (out / "audio").mkdir(parents=True, exist_ok=True)
    shown, without_audio = [], []
    for k, entry in enumerate(sessions):
        audio, problem = _write_audio(entry, base, out / "audio" / f"{k:03d}.flac")
        if problem:
            without_audio.append(f"{_name(entry)}: {problem}")
        shown.append(
            {
                "system": entry.get("system"),
                "sample": entry.get("sample") or entry["timeline"].get("session"),
                "folder": entry.get("folder"),
                "audio": f"audio/{k:03d}.flac" if audio else None,
                "problem": problem,
                "timeline": entry["timeline"],
            }
        )
    index = {(s["system"], s["sample"]): k for k, s in enumerate(shown)}
    pairs = [
        {
            **{key: v.get(key) for key in ("sample", "systems", "label", "why", "events", "judge", "reasoning")},
            "sessions": [index.get((system, v["sample"])) for system in v["systems"]],
        }
        for v in result.get("verdicts") or []
    ]
    data = {
        "version": VERSION,
        "judge": result.get("judge"),
        "ranking": result.get("ranking"),
        "sessions": shown,
        "pairs": pairs,
        "failed": result.get("failed") or [],  # sessions the run could not read: listed, not drawn
    }
    text = DATA_PREFIX + json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":")) + ";\n"
    atomic_write_text(out / DATA_FILE, text)
    for source, name in PAGE_FILES.items():
        atomic_write_text(out / name, (HERE / source).read_text(encoding="utf-8"))
    written = len(shown) - len(without_audio)
    return PageFiles(out / "index.html", len(shown), len(pairs), written, without_audio)


def page_of_run(result: dict[str, Any], out: str | Path) -> int:
    """`sessions --page DIR`: write the page of the run just made; the exit code."""
    try:
        files = write_page(result, out)
    except PageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for line in files.without_audio:
        print(f"page: drawn without audio: {line}", file=sys.stderr)
    pairs = f", {files.pairs} pairs" if files.pairs else ""
    print(f"page: {files.sessions} sessions ({files.audio} with audio){pairs}: {files.index.resolve().as_uri()}")
    return 0


def _sessions_of(result: dict[str, Any]) -> list[dict[str, Any]]:
    if result.get("sessions"):
        return list(result["sessions"])
    if result.get("tasks") is not None:
        raise PageError(
            "the result holds Full-Duplex-Bench's scores as its scripts compute them, without timelines: run "
            "`sessions` without --compat for a page"
        )
    raise PageError("the result holds no session (no 'sessions' list): write it with `python -m trace_eval sessions`")


def _name(entry: dict[str, Any]) -> str:
    sample = entry.get("sample") or entry["timeline"].get("session")
    return f"{entry['system']}/{sample}" if entry.get("system") else str(sample)


def _write_audio(entry: dict[str, Any], base: Path | None, path: Path) -> tuple[bool, str | None]:
    """The session's two channels as one stereo file at `path`: (written, why not)."""
    from trace_eval.sessions.session import SessionError, read_session

    if isinstance(entry.get("source"), dict):  # how the run read it: a folder, two files, a stereo recording
        from trace_eval.sessions.manifest import SessionEntry

        try:
            session = SessionEntry.from_record(entry["source"]).read()
        except (SessionError, OSError) as e:
            return False, str(e)
    else:
        if not entry.get("folder"):
            return False, "the result names no folder for this session"
        folder = Path(entry["folder"])
        if not folder.is_dir() and base is not None and not folder.is_absolute() and (base / folder).is_dir():
            folder = base / folder
        if not folder.is_dir():
            return False, f"{entry['folder']}: no such folder (moved or deleted since the run)"
        try:
            session = read_session(folder)
        except (SessionError, OSError) as e:
            return False, str(e)
    measured = entry["timeline"].get("duration_s")
    if measured is not None and abs(session.duration_s - measured) > 0.05:
        return False, (
            f"{entry['folder']}: its audio lasts {session.duration_s:.2f} s where the timeline measured "
            f"{measured:.2f} s: changed since the run"
        )
    atomic_write_bytes(path, session.stereo_flac())
    return True, None
