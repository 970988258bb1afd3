"""Where blueprint files lie: a local folder or an fsspec URL (s3://, gs://, file://, ...).

A shelf holds `<sha256>.json` files and writes each one atomically, so several
processes and machines can fill one shelf at once:
- a local folder writes a uniquely named temporary file beside the target, then
  renames it (a rename within a folder is atomic); the merge of a blueprint with one
  another process wrote meanwhile happens under a lock file (`.write.lock`);
- object storage (s3, gs) makes an object visible only once its upload completed, so
  the file is put under its final name; two writers of one blueprint race to the last
  complete upload, and both uploads hold whole blueprints.

fsspec (and s3fs for s3://) is imported only when a URL is given; credentials come
the usual way (environment, profiles) and never appear in a location shown or written.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trace_eval.io import atomic_write_text

__all__ = ["Shelf", "ShelfFile", "StoreLocationError", "check_folder", "display_location", "is_url", "open_shelf"]

_URL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")
_NAME = re.compile(r"^[0-9a-f]{64}(\.[a-z0-9-]+)*\.json$")  # an audio's sha256, then its variant (store.py)
TEMP_SUFFIX = ".tmp"


class StoreLocationError(ValueError):
    """A store location that cannot be a folder of blueprints: it, or a folder above it, is a file."""


def check_folder(folder: Path, named: str = "the blueprint store ") -> None:
    """StoreLocationError unless `folder` is a folder or can be made one (no file in the way)."""
    blocking = next((p for p in (folder, *folder.parents) if p.exists()), None)
    if blocking is not None and not blocking.is_dir():
        where = "it is a file" if blocking == folder else f"{blocking} is a file"
        raise StoreLocationError(
            f"{named}{folder} cannot be a folder of blueprints: {where}. Name a folder (a new one is made) with "
            "--store or $TRACE_STORE, or leave both unset for the default (python -m trace_eval store info says "
            "which)"
        )


def is_url(location: str | Path) -> bool:
    return isinstance(location, str) and bool(_URL.match(location))


def display_location(location: str | Path) -> str:
    """The location without any user:password@ part, fit for logs and records."""
    return re.sub(r"^([a-zA-Z][a-zA-Z0-9+.-]*://)[^/@]*@", r"\1", str(location))


@dataclass
class ShelfFile:
    name: str  # <sha256>.json, or a temporary file an interrupted write left
    size: int
    mtime: float | None  # seconds since the epoch, None where the storage does not say


class Shelf:
    """A local folder of blueprint files."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder).expanduser().resolve()
        check_folder(self.folder)
        self.location = str(self.folder)

    def __repr__(self) -> str:
        return f"Shelf({display_location(self.location)!r})"

    def path(self, sha256: str) -> Path:
        return self.folder / f"{sha256}.json"

    def read(self, sha256: str) -> str | None:
        try:
            return self.path(sha256).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    def write(self, sha256: str, text: str) -> None:
        atomic_write_text(self.path(sha256), text)

    def remove(self, name: str) -> None:
        (self.folder / name).unlink(missing_ok=True)

    def files(self) -> Iterator[ShelfFile]:
        """Every blueprint file and every temporary file an interrupted write left."""
        try:
            entries = list(os.scandir(self.folder))
        except FileNotFoundError:
            return
        for entry in entries:
            if _NAME.match(entry.name) or _is_temp(entry.name):
                try:
                    st = entry.stat()
                except FileNotFoundError:
                    continue  # removed meanwhile
                yield ShelfFile(entry.name, st.st_size, st.st_mtime)

    def read_name(self, name: str) -> str | None:
        try:
            return (self.folder / name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    def write_name(self, name: str, text: str) -> None:
        atomic_write_text(self.folder / name, text)

    def names(self, subfolder: str) -> list[str]:
        """The `.json` files of a subfolder, as names relative to the shelf."""
        try:
            return sorted(
                f"{subfolder}/{e.name}" for e in os.scandir(self.folder / subfolder) if e.name.endswith(".json")
            )
        except FileNotFoundError:
            return []

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Held while a blueprint is read, merged and written, so two processes' sections both survive."""
        self.folder.mkdir(parents=True, exist_ok=True)
        try:
            import fcntl
        except ImportError:  # Windows: the rename is still atomic, only the merge is unguarded
            yield
            return
        with open(self.folder / ".write.lock", "a") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def exists(self) -> bool:
        return self.folder.is_dir()


class RemoteShelf(Shelf):
    """A folder of blueprint files behind an fsspec URL."""

    def __init__(self, url: str):
        try:
            import fsspec
        except ImportError as e:
            raise ImportError(f"{display_location(url)}: URLs need fsspec: pip install 'trace-eval[s3]'") from e
        try:
            self.fs, root = fsspec.core.url_to_fs(url)
        except ImportError as e:  # the protocol's own package (s3fs, gcsfs) is missing
            raise ImportError(f"{display_location(url)}: {e}") from e
        self.root = root.rstrip("/")
        self.location = display_location(url).rstrip("/")
        # Object stores show an object only once its upload completed: no temporary name needed.
        protocols = self.fs.protocol if isinstance(self.fs.protocol, tuple) else (self.fs.protocol,)
        self.atomic_put = any(p in ("s3", "s3a", "gs", "gcs", "az", "abfs", "memory") for p in protocols)

    def _key(self, name: str) -> str:
        return f"{self.root}/{name}"

    def path(self, sha256: str) -> Path:
        raise TypeError(f"{self.location} is not a local folder")

    def read(self, sha256: str) -> str | None:
        return self.read_name(f"{sha256}.json")

    def read_name(self, name: str) -> str | None:
        try:
            return self.fs.cat_file(self._key(name)).decode("utf-8")
        except (FileNotFoundError, UnicodeDecodeError):
            return None

    def write(self, sha256: str, text: str) -> None:
        key = self._key(f"{sha256}.json")
        data = text.encode("utf-8")
        if self.atomic_put:
            self.fs.pipe_file(key, data)
            return
        temp = self._key(f".{sha256}.json.{os.getpid()}.{time.time_ns()}{TEMP_SUFFIX}")
        self.fs.makedirs(self.root, exist_ok=True)
        self.fs.pipe_file(temp, data)
        self.fs.mv(temp, key)

    def write_name(self, name: str, text: str) -> None:
        self.fs.pipe_file(self._key(name), text.encode("utf-8"))  # small records: a rewrite holds it whole

    def names(self, subfolder: str) -> list[str]:
        try:
            entries = self.fs.ls(self._key(subfolder), detail=False, refresh=True)
        except FileNotFoundError:
            return []
        return sorted(
            f"{subfolder}/{str(e).rstrip('/').rsplit('/', 1)[-1]}" for e in entries if str(e).endswith(".json")
        )

    def remove(self, name: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm_file(self._key(name))

    def files(self) -> Iterator[ShelfFile]:
        try:
            entries = self.fs.ls(self.root, detail=True, refresh=True)
        except FileNotFoundError:
            return
        for entry in entries:
            name = str(entry["name"]).rstrip("/").rsplit("/", 1)[-1]
            if _NAME.match(name) or _is_temp(name):
                yield ShelfFile(name, int(entry.get("size") or 0), _mtime(entry))

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        yield  # object storage has no lock; the last whole upload wins

    def exists(self) -> bool:
        return bool(self.fs.exists(self.root))


def _mtime(entry: dict[str, Any]) -> float | None:
    for key in ("LastModified", "mtime", "updated", "last_modified"):
        value = entry.get(key)
        if value is None:
            continue
        if hasattr(value, "timestamp"):
            return float(value.timestamp())
        try:
            return float(value)
        except (TypeError, ValueError):
            continue
    return None


def _is_temp(name: str) -> bool:
    return name.startswith(".") and name.endswith(TEMP_SUFFIX) and ".json." in name


def open_shelf(location: str | Path) -> Shelf:
    """A shelf for a folder or an fsspec URL (file:// URLs are local folders)."""
    if is_url(location):
        text = str(location)
        if text.startswith("file://"):
            return Shelf(text[len("file://") :])
        return RemoteShelf(text)
    return Shelf(location)
