"""Atomic file writes (a reader never sees half a file, an interrupted write loses nothing), JSON read back, and
the entry a mistyped path most likely meant."""

from __future__ import annotations

import difflib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["atomic_write_bytes", "atomic_write_text", "close_match", "write_json", "read_json"]


def atomic_write_bytes(path: str | Path, data: bytes, private: bool = False) -> None:
    """Write to a temporary file beside `path`, flush to disk, then rename over it. `private`: readable and
    writable by its owner alone (0600), as a secret is kept; else the usual permissions."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(tmp, 0o600 if private else 0o666 & ~_umask())  # mkstemp makes 0600 files
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write to a temporary file beside `path`, flush to disk, then rename over it."""
    atomic_write_bytes(path, text.encode("utf-8"))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_json(path: str | Path, data: Any, indent: int | None = 2, private: bool = False) -> None:
    """Atomic JSON write; NaN or infinity is a bug upstream, so it raises instead of writing invalid JSON.
    `private`: owner-only permissions (atomic_write_bytes)."""
    text = json.dumps(data, indent=indent, ensure_ascii=False, allow_nan=False) + "\n"
    atomic_write_bytes(path, text.encode("utf-8"), private=private)


def read_json(path: str | Path) -> Any:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def close_match(path: str | Path) -> str:
    """ "; did you mean X?" naming the entry beside `path` spelt most like it, or ""."""
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    try:
        names = sorted(p.name for p in parent.iterdir())
    except OSError:
        return ""
    found = difflib.get_close_matches(path.name, names, n=1, cutoff=0.6)
    return f"; did you mean {parent / found[0]}?" if found else ""
