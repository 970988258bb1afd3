"""A session: the user's channel and the system's on one timeline, read from the layouts people record them in.

- a Full-Duplex-Bench v1/v1.5 sample folder: `input.wav` (the user), `output.wav` (the system), and the
  annotations it may hold (`pause.json`, `turn_taking.json`, `interrupt.json`), read as they are;
- a Full-Duplex-Bench v2 folder: `A.wav` (the examiner, the user) and `B.wav` (the system), or `combined.wav`
  (stereo: left the examiner, right the system);
- any stereo recording with its channels named (`user_channel`, `system_channel`: 0 or 1);
- two mono files.

Both channels start at the session's first sample, the clock every time in a timeline is measured from. Each is
resampled to 16 kHz (the rate the speech detector and the recogniser hear); channels of different lengths are
padded with silence to the longer one, and the session says so. What cannot be a session is refused with the
reason: a mono file where two channels are expected, a channel without a sample, an annotation that is not JSON.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from trace_eval.audio import Audio, AudioLoadingError, load_channels
from trace_eval.sessions.errors import SessionError
from trace_eval.sessions.events import read_events

__all__ = ["RATE", "Session", "SessionError", "read_manifest", "read_session"]

RATE = 16000  # what the channels are heard at
# The live client's layout (live.py writes it): a manifest naming the files.
LIVE_LAYOUT = "trace-eval-live"
LIVE_MANIFEST = "session.json"
LIVE_FILES = {"user": "user.wav", "system": "system.wav", "events": "events.jsonl"}
ANNOTATIONS = ("pause.json", "turn_taking.json", "interrupt.json", "metadata.json")


@dataclass
class Session:
    """The two channels at RATE, of one length, and what the recording came with."""

    name: str
    user: np.ndarray
    system: np.ndarray
    layout: str  # full-duplex-bench-v1 | full-duplex-bench-v2 | stereo | two-files
    rates: dict[str, int]  # each channel's rate as recorded
    annotations: dict[str, Any] = field(default_factory=dict)  # file name -> its JSON, as the benchmark wrote it
    notes: list[str] = field(default_factory=list)  # what reading changed (padding), said in the timeline

    @property
    def duration_s(self) -> float:
        return len(self.user) / RATE

    def stereo_flac(self) -> bytes:
        """Both channels as one stereo FLAC file at RATE, the user left, the system right (to listen to)."""
        import io

        import soundfile as sf

        buffer = io.BytesIO()
        stereo = np.clip(np.stack([self.user, self.system], axis=1), -1.0, 1.0)
        sf.write(buffer, stereo, RATE, format="FLAC", subtype="PCM_16")
        return buffer.getvalue()


def read_session(
    source: str | Path,
    system: str | Path | None = None,
    *,
    user_channel: int | None = None,
    system_channel: int | None = None,
) -> Session:
    """A session from a folder (Full-Duplex-Bench v1/v1.5 or v2), a stereo file with its channels named, or two
    mono files (`source` the user's, `system` the system's)."""
    source = Path(source)
    if not source.exists():
        raise SessionError(f"{source}: no such file or folder")
    if source.is_dir():
        return _folder(source)
    if system is not None:
        return _two_files(source, Path(system))
    if user_channel is None or system_channel is None:
        raise SessionError(
            f"{source}: a single file is a session only in stereo with its channels named "
            "(user_channel and system_channel, 0 or 1); or give the system's file as well"
        )
    data, rate = _channels(source)
    if data.shape[1] < 2:
        raise SessionError(f"{source}: mono, where a session needs two channels (the user's and the system's)")
    if {user_channel, system_channel} - set(range(data.shape[1])) or user_channel == system_channel:
        raise SessionError(
            f"{source}: {data.shape[1]} channels; user_channel {user_channel} and system_channel {system_channel} "
            "must be two of them"
        )
    return _made(source.stem, data[:, user_channel], rate, data[:, system_channel], rate, "stereo", {})


def _folder(folder: Path) -> Session:
    annotations = {}
    for name in ANNOTATIONS:
        path = folder / name
        if path.is_file():
            try:
                annotations[name] = json.loads(path.read_text(encoding="utf-8"))
            except (json.JSONDecodeError, UnicodeDecodeError) as e:
                raise SessionError(f"{path}: not JSON ({e})") from None
    if (folder / "events.jsonl").is_file():  # a client's event log beside any layout: checked, kept
        annotations["events.jsonl"] = read_events(folder / "events.jsonl")
    if (folder / LIVE_MANIFEST).is_file():  # the live client's layout: its manifest names the files
        user_path, system_path, recorded = read_manifest(folder)
        user, user_rate = _mono(user_path)
        system, system_rate = _mono(system_path)
        return _made(folder.name, user, user_rate, system, system_rate, "live", {**annotations, **recorded})
    if (folder / "input.wav").is_file() and (folder / "output.wav").is_file():
        user, user_rate = _mono(folder / "input.wav")
        system, system_rate = _mono(folder / "output.wav")
        return _made(folder.name, user, user_rate, system, system_rate, "full-duplex-bench-v1", annotations)
    if (folder / "A.wav").is_file() and (folder / "B.wav").is_file():
        user, user_rate = _mono(folder / "A.wav")
        system, system_rate = _mono(folder / "B.wav")
        return _made(folder.name, user, user_rate, system, system_rate, "full-duplex-bench-v2", annotations)
    if (folder / "combined.wav").is_file():
        data, rate = _channels(folder / "combined.wav")
        if data.shape[1] != 2:
            raise SessionError(f"{folder / 'combined.wav'}: {data.shape[1]} channel(s), where left is the examiner "
                               "and right the system")  # fmt: skip
        return _made(folder.name, data[:, 0], rate, data[:, 1], rate, "full-duplex-bench-v2", annotations)
    raise SessionError(
        f"{folder}: no session here: expected input.wav and output.wav (Full-Duplex-Bench v1/v1.5), "
        "or A.wav and B.wav, or combined.wav (v2)"
    )


def _two_files(user_path: Path, system_path: Path) -> Session:
    user, user_rate = _mono(user_path)
    system, system_rate = _mono(system_path)
    return _made(user_path.stem, user, user_rate, system, system_rate, "two-files", {})


def _channels(path: Path) -> tuple[np.ndarray, int]:
    try:
        return load_channels(path)
    except AudioLoadingError as e:
        raise SessionError(str(e)) from None


def _mono(path: Path) -> tuple[np.ndarray, int]:
    data, rate = _channels(path)
    if data.shape[1] != 1:
        raise SessionError(f"{path}: {data.shape[1]} channels where one channel is expected (name which one is whose)")
    return data[:, 0], rate


def _made(
    name: str, user: np.ndarray, user_rate: int, system: np.ndarray, system_rate: int, layout: str, annotations: dict
) -> Session:
    notes = []
    for who, samples in (("user", user), ("system", system)):
        if not len(samples):
            raise SessionError(f"{name}: the {who}'s channel holds no sample")
    user, system = Audio(user, user_rate).at(RATE), Audio(system, system_rate).at(RATE)
    longer = max(len(user), len(system))
    for who, samples in (("user", user), ("system", system)):
        if len(samples) < longer:
            notes.append(
                f"the {who}'s channel ends {(longer - len(samples)) / RATE:.2f} s before the other's: silence after it"
            )
    user = np.pad(user, (0, longer - len(user)))
    system = np.pad(system, (0, longer - len(system)))
    rates = {"user": user_rate, "system": system_rate}
    return Session(name, user, system, layout, rates, annotations, notes)


def read_manifest(folder: Path) -> tuple[Path, Path, dict[str, Any]]:
    """A live session folder's user and system files, and what it recorded beside them (the manifest, under
    `session.json`; the checked event log, under `events.jsonl`), as read_session takes them."""
    path = folder / LIVE_MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise SessionError(f"{path}: not JSON ({e})") from None
    if (
        not isinstance(manifest, dict)
        or manifest.get("layout") != LIVE_LAYOUT
        or not isinstance(manifest.get("files"), dict)
    ):
        raise SessionError(f"{path}: not a live session's manifest (expected layout {LIVE_LAYOUT!r} and its files)")
    files = manifest["files"]
    recorded: dict[str, Any] = {LIVE_MANIFEST: manifest}
    if files.get("events"):
        recorded["events.jsonl"] = read_events(folder / files["events"])
    return folder / files.get("user", LIVE_FILES["user"]), folder / files.get("system", LIVE_FILES["system"]), recorded
