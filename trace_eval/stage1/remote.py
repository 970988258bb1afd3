"""A benchmark folder behind an fsspec URL (s3://bucket/bench, gs://..., file://...).

Stage 1 on `blueprints s3://bucket/bench` works on a local mirror of the folder: the
manifest, the benchmark's records (blueprints/index.json, store.json, summary.json,
failures.jsonl) and the audio, fetched once and again only when a file's size or
version (ETag, modification time) changed; the driver reads every byte to hash it
anyway. Workers of the ray engine read each clip from the URL itself, so nodes need
no shared disk. At the end the records go back to the URL; the blueprints go to the
store (`--store s3://bucket/store` on a cluster).

fsspec is imported only here, and only for a URL. Credentials come from the
environment or profiles as each fsspec backend reads them; a location shown or
recorded never carries them (trace_eval.stage1.shelf.display_location).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trace_eval.io import read_json, write_json
from trace_eval.stage1.shelf import display_location, is_url

__all__ = ["RemoteBench", "local_copy", "mirror_bench"]

RECORDS = ("index.json", "store.json", "summary.json", "failures.jsonl")


def _fs(url: str) -> tuple[Any, str]:
    try:
        import fsspec
    except ImportError as e:
        raise ImportError(f"{display_location(url)}: URLs need fsspec: pip install 'trace-eval[s3]'") from e
    try:
        fs, path = fsspec.core.url_to_fs(url)
    except ImportError as e:  # the protocol's own package (s3fs, gcsfs) is missing
        raise ImportError(f"{display_location(url)}: {e}") from e
    return fs, path.rstrip("/")


@dataclass
class RemoteBench:
    url: str  # as given (credentials, if any, stay in memory)
    root: Path  # the local mirror Stage 1 works on
    fs: Any
    base: str  # the folder's path within fs

    @property
    def location(self) -> str:
        return display_location(self.url).rstrip("/")

    def upload_records(self) -> None:
        """The benchmark's own records back to the URL (the blueprints are in the store already)."""
        for name in RECORDS:
            local = self.root / "blueprints" / name
            if local.is_file():
                self.fs.put_file(str(local), f"{self.base}/blueprints/{name}")


def _mirror_root(url: str) -> Path:
    """$TRACE_CACHE_DIR/remote/KEY, else $XDG_CACHE_HOME/trace-eval/remote/KEY (~/.cache when unset)."""
    key = hashlib.sha256(display_location(url).rstrip("/").encode()).hexdigest()[:16]
    if os.environ.get("TRACE_CACHE_DIR"):
        return Path(os.environ["TRACE_CACHE_DIR"]).expanduser() / "remote" / key
    cache = os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return Path(cache).expanduser() / "trace-eval" / "remote" / key


def _version(info: dict) -> str:
    """What changes when a remote file does: its size and its ETag or modification time."""
    for key in ("ETag", "etag", "md5Hash", "mtime", "LastModified", "last_modified", "updated"):
        if info.get(key) is not None:
            return f"{info.get('size')}:{info[key]}"
    return f"{info.get('size')}"


def mirror_bench(url: str) -> RemoteBench:
    """Fetch what Stage 1 needs of the folder at `url` into a local mirror; raises FileNotFoundError without a
    manifest there."""
    from trace_eval.bench import load_benchmark

    fs, base = _fs(url)
    root = _mirror_root(url)
    remote = RemoteBench(url, root, fs, base)
    (root / "blueprints").mkdir(parents=True, exist_ok=True)
    found = False
    for name in ("manifest.json", "manifest.jsonl"):
        (root / name).unlink(missing_ok=True)
        if fs.exists(f"{base}/{name}"):
            fs.get_file(f"{base}/{name}", str(root / name))
            found = True
    if not found:
        raise FileNotFoundError(f"{remote.location}: no manifest.json or manifest.jsonl (see docs/benchmark.md)")
    for name in RECORDS:
        if fs.exists(f"{base}/blueprints/{name}"):
            fs.get_file(f"{base}/blueprints/{name}", str(root / "blueprints" / name))
    bench = load_benchmark(root, check_audio=False)
    versions_path = root / ".versions.json"
    try:
        versions: dict[str, str] = read_json(versions_path)
    except (OSError, json.JSONDecodeError):
        versions = {}
    fetch: list[str] = []
    for rel in bench.audio_files():
        try:
            info = fs.info(f"{base}/{rel}")
        except FileNotFoundError:
            (root / rel).unlink(missing_ok=True)  # reported missing by the plan, as a local file would be
            versions.pop(rel, None)
            continue
        version = _version(info)
        if versions.get(rel) != version or not (root / rel).is_file():
            fetch.append(rel)
            versions[rel] = version
    if fetch:
        for rel in fetch:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
        fs.get([f"{base}/{rel}" for rel in fetch], [str(root / rel) for rel in fetch])
    write_json(versions_path, versions)
    return remote


@contextlib.contextmanager
def local_copy(path: str) -> Iterator[str]:
    """A local file for `path`: itself, or for a URL a temporary copy removed afterwards."""
    if not is_url(path):
        yield path
        return
    fs, remote = _fs(path)
    suffix = Path(remote).suffix
    fd, temp = tempfile.mkstemp(suffix=suffix, prefix="trace-clip-")
    os.close(fd)
    try:
        fs.get_file(remote, temp)
        yield temp
    finally:
        Path(temp).unlink(missing_ok=True)
