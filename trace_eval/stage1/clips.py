"""Audio handed over from code (a path, a file's bytes, or samples with their rate) as clips of a working folder.

Every clip is written once under its content's sha256 (`clips/<sha256><suffix>`), so the same audio is the
same clip whatever form it came in, and the folder is an ordinary benchmark folder: Stage 1 runs on it through
`pipeline.run_blueprints` and its store, as `python -m trace_eval blueprints` does. Its manifest lists the
clips of the latest request, one single-answer item per clip; the blueprint store's path index keeps
every clip ever seen.

The folder is `$TRACE_CACHE_DIR/clips`, else `$XDG_CACHE_HOME/trace-eval/clips`, else
`~/.cache/trace-eval/clips`, beside the answer cache.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Union

from trace_eval.audio import sha256_file
from trace_eval.io import atomic_write_bytes, write_json
from trace_eval.resources import user_cache_dir

__all__ = ["AudioInput", "ClipFolder", "default_clip_dir"]

# A path to an audio file, the bytes of one, or (samples, sample rate): samples of shape (n,) or (n, channels).
AudioInput = Union[str, "os.PathLike[str]", bytes, tuple[Any, int]]

CLIPS = "clips"
# Container signatures, so that a decoder that goes by the suffix is given the right one.
_SIGNATURES = ((b"RIFF", ".wav"), (b"fLaC", ".flac"), (b"OggS", ".ogg"), (b"ID3", ".mp3"), (b"\xff\xfb", ".mp3"))


def default_clip_dir() -> Path:
    """$TRACE_CACHE_DIR/clips, else $XDG_CACHE_HOME/trace-eval/clips, else ~/.cache/trace-eval/clips."""
    return user_cache_dir(CLIPS)


def _suffix_of(data: bytes) -> str:
    if data[8:12] == b"WAVE" or data[:4] == b"RIFF":
        return ".wav"
    return next((suffix for magic, suffix in _SIGNATURES if data.startswith(magic)), ".audio")


def _encode(samples: Any, rate: int) -> bytes:
    """(samples, rate) as a 32-bit float WAV file: the samples exactly, in a file every decoder reads."""
    import numpy as np
    import soundfile as sf

    array = np.asarray(samples)
    if array.ndim not in (1, 2) or array.size == 0:
        raise ValueError(f"audio samples must have shape (n,) or (n, channels) with n > 0; got shape {array.shape}")
    if not isinstance(rate, int) or isinstance(rate, bool) or rate <= 0:
        raise ValueError(f"the sample rate must be a positive integer (Hz); got {rate!r}")
    if np.issubdtype(array.dtype, np.integer):
        subtype = {2: "PCM_16", 4: "PCM_32"}.get(array.dtype.itemsize, "FLOAT")
        array = array if subtype != "FLOAT" else array.astype(np.float32)
    else:
        subtype = "FLOAT"
        array = array.astype(np.float32, copy=False)
        if not np.isfinite(array).all():
            raise ValueError("audio samples contain NaN or infinity")
    buffer = io.BytesIO()
    sf.write(buffer, array, rate, format="WAV", subtype=subtype)
    return buffer.getvalue()


class ClipFolder:
    """A working benchmark folder of content-addressed clips, and their blueprints from Stage 1."""

    def __init__(self, root: str | Path | None = None):
        self.root = Path(root) if root is not None else default_clip_dir()
        self._lock = threading.Lock()

    def add(self, audio: AudioInput) -> str:
        """The clip's path relative to the folder, written there unless it already is."""
        clips = self.root / CLIPS
        if isinstance(audio, (bytes, bytearray, memoryview)):
            data = bytes(audio)
            if not data:
                raise ValueError("empty audio bytes")
            return self._write(data, _suffix_of(data))
        if isinstance(audio, tuple):
            if len(audio) != 2:
                raise ValueError("audio as a tuple is (samples, sample rate)")
            return self._write(_encode(*audio), ".wav")
        if isinstance(audio, (str, os.PathLike)):
            path = Path(audio)
            if not path.is_file():
                raise FileNotFoundError(f"{path}: audio file not found")
            sha = sha256_file(path)
            suffix = path.suffix.lower() or ".audio"
            relative = f"{CLIPS}/{sha}{suffix}"
            if not (self.root / relative).is_file():
                clips.mkdir(parents=True, exist_ok=True)
                tmp = clips / f".{sha}.{os.getpid()}.{threading.get_ident()}.tmp"
                shutil.copyfile(path, tmp)  # a copy: a later edit of the source cannot change the clip
                os.replace(tmp, self.root / relative)
            return relative
        raise TypeError(
            f"audio must be a path, the bytes of an audio file, or (samples, sample rate); got {type(audio).__name__}"
        )

    def _write(self, data: bytes, suffix: str) -> str:
        relative = f"{CLIPS}/{hashlib.sha256(data).hexdigest()}{suffix}"
        if not (self.root / relative).is_file():
            atomic_write_bytes(self.root / relative, data)
        return relative

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """One Stage 1 at a time on the folder, across threads and processes (where fcntl exists)."""
        self.root.mkdir(parents=True, exist_ok=True)
        with self._lock, open(self.root / ".lock", "a") as handle:
            try:
                import fcntl
            except ImportError:  # Windows: threads of this process only
                yield
                return
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def blueprints(
        self, clips: Iterable[str], options: Any = None, language: str | None = None, expects: tuple[str, ...] = ()
    ) -> tuple[dict[str, dict | None], dict[str, str], Any]:
        """({clip: its blueprint or None}, {clip: why it has none}, Stage 1's summary), Stage 1 run on `clips`
        with `options` (pipeline.BlueprintOptions) through the normal pipeline and store; `language`: the
        language the clips are declared in (their blueprints are then the declared variant), else detected;
        `expects`: the languages their pairs expect them in, as answers (the variant that tests them)."""
        from trace_eval.stage1.pipeline import run_blueprints
        from trace_eval.stage1.store import BlueprintStore

        wanted = list(dict.fromkeys(clips))
        with self._locked():
            declared = {"audio_language": language} if language else {}
            # The instruction is a placeholder too short to read as any language; an expected language is
            # declared as the instruction's, one item for each.
            items = [
                {"id": f"{clip}:{code}" if code else clip, "instruction_text": "(clip)", "audio_path": clip}
                | declared
                | ({"instruction_language": code} if code else {})
                for clip in wanted
                for code in (expects or ("",))
            ]
            write_json(self.root / "manifest.json", items)
            summary = run_blueprints(self.root, options)
            store = BlueprintStore(self.root)
            found = {clip: store.get_by_path(clip) for clip in wanted}
            failures = store.recorded_failures()
        return (
            found,
            {clip: failures.get(clip, "no blueprint made") for clip, bp in found.items() if bp is None},
            summary,
        )
