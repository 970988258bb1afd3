"""Which sessions a folder holds: its `sessions.jsonl` manifest where it has one, else every session folder in it.

The manifest, one JSON object a line, paths relative to the manifest's folder:

    {"id": "s1", "system": "moshi", "sample": "v1/1", "folder": "moshi/v1/1"}     a session folder (any layout)
    {"id": "s2", "system": "gpt", "sample": "v1/1", "user_path": "u.wav", "system_path": "gpt/1.wav"}
    {"id": "s3", "audio_path": "call.wav", "user_channel": 0, "system_channel": 1}  one stereo recording

`system` names the system that spoke (sessions of several systems on the same `sample`, the same user recording,
are judged against each other); `sample` defaults to the id. `events_path` adds a client's event log to a session
of two files or a stereo recording. Without a manifest, every folder holding audio is a session; where the
folder's first level names systems (`DIR/<system>/<session>/`), each session belongs to its folder's system.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trace_eval.sessions.errors import SessionError
from trace_eval.sessions.events import read_events
from trace_eval.sessions.session import Session, read_session

__all__ = ["MANIFEST", "SessionEntry", "find_sessions", "read_manifest_file"]

MANIFEST = "sessions.jsonl"
_FIELDS = {"id", "system", "sample", "folder", "user_path", "system_path", "audio_path", "user_channel",
           "system_channel", "events_path"}  # fmt: skip


@dataclass(frozen=True)
class SessionEntry:
    """One session: how it is read, the system that spoke and the user recording (`sample`) it answers."""

    id: str
    sample: str
    system: str | None
    folder: Path | None = None  # a session folder ...
    user: Path | None = None  # ... or the user's file (a stereo recording: both channels) ...
    other: Path | None = None  # ... and the system's
    channels: tuple[int, int] | None = None  # a stereo recording's user and system channels
    events: Path | None = None

    @property
    def where(self) -> str:
        return str(self.folder or self.user)

    def read(self) -> Session:
        if self.folder is not None:
            if not self.folder.is_dir():
                raise SessionError(f"{self.folder}: no such folder (moved or deleted?)")
            return read_session(self.folder)
        assert self.user is not None
        if self.channels is not None:
            session = read_session(self.user, user_channel=self.channels[0], system_channel=self.channels[1])
        else:
            session = read_session(self.user, self.other)
        session.name = self.id
        if self.events is not None:
            session.annotations["events.jsonl"] = read_events(self.events)
        return session

    def record(self) -> dict[str, Any]:
        """The session as a manifest line, its paths absolute (`from_record` reads it back)."""
        found: dict[str, Any] = {"id": self.id, "sample": self.sample, "system": self.system}
        if self.folder is not None:
            found["folder"] = str(self.folder.resolve())
        elif self.user is not None and self.channels is not None:
            found["audio_path"] = str(self.user.resolve())
            found["user_channel"], found["system_channel"] = self.channels
        elif self.user is not None and self.other is not None:
            found["user_path"], found["system_path"] = str(self.user.resolve()), str(self.other.resolve())
        if self.events is not None:
            found["events_path"] = str(self.events.resolve())
        return found

    @classmethod
    def from_record(cls, row: Any, base: Path = Path("."), where: str = "a session") -> SessionEntry:
        """A session from a manifest line (paths relative to `base`); SessionError naming `where` if it is none."""
        if not isinstance(row, dict) or not isinstance(row.get("id"), str | int):
            raise SessionError(f"{where}: expected an object with an id")
        unknown = sorted(set(row) - _FIELDS)
        if unknown:
            raise SessionError(f"{where}: unknown field(s) {', '.join(unknown)}; expected {', '.join(sorted(_FIELDS))}")
        entry_id = str(row["id"])
        system = None if row.get("system") is None else str(row["system"])
        sample = str(row.get("sample", entry_id))
        events = base / row["events_path"] if row.get("events_path") else None
        if "folder" in row:
            return cls(entry_id, sample, system, folder=base / row["folder"])
        if "user_path" in row and "system_path" in row:
            user, other = base / row["user_path"], base / row["system_path"]
            return cls(entry_id, sample, system, user=user, other=other, events=events)
        if "audio_path" in row and all(isinstance(row.get(k), int) for k in ("user_channel", "system_channel")):
            channels = (row["user_channel"], row["system_channel"])
            return cls(entry_id, sample, system, user=base / row["audio_path"], channels=channels, events=events)
        raise SessionError(
            f"{where}: no session: give folder, or user_path and system_path, or audio_path with user_channel and "
            "system_channel"
        )


def read_manifest_file(path: str | Path) -> list[SessionEntry]:
    """The sessions a manifest lists; a line that names no session is refused with the file and line."""
    path = Path(path)
    entries, seen = [], set()
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path} line {n}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise SessionError(f"{where}: not JSON ({e})") from None
        entry = SessionEntry.from_record(row, path.parent, where)
        if entry.id in seen:
            raise SessionError(f"{where}: id {entry.id!r} given twice")
        seen.add(entry.id)
        entries.append(entry)
    if not entries:
        raise SessionError(f"{path}: no session listed")
    return entries


def find_sessions(root: str | Path, by_system: bool = False) -> list[SessionEntry]:
    """The sessions under `root`: its manifest's, else every folder holding audio; `by_system`: the folders'
    first level names the systems (DIR/<system>/<session>/)."""
    root = Path(root)
    if (root / MANIFEST).is_file():
        return read_manifest_file(root / MANIFEST)
    folders = sorted({p.parent for p in root.rglob("*.wav")} | {p.parent for p in root.rglob("*.flac")})
    entries = []
    for folder in folders:
        relative = folder.relative_to(root)
        if by_system:
            if len(relative.parts) < 2:
                continue  # audio beside the systems' folders is no system's session
            system, sample = relative.parts[0], str(Path(*relative.parts[1:]))
            entries.append(SessionEntry(str(relative), sample, system, folder=folder))
        else:
            entries.append(SessionEntry(str(relative), str(relative), None, folder=folder))
    return entries
