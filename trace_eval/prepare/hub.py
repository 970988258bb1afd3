"""Getting the published files: dataset repositories through `huggingface_hub`, label files from GitHub at a
pinned commit. Both stop at once, with the fix, when they cannot work (no network, offline mode, a gated or
missing repository, no token); `--from` and `--labels` are the offline way to the same files.

`huggingface_hub` reads HF_HOME (its cache), HF_TOKEN and HF_HUB_OFFLINE itself. A label file is kept under
$TRACE_CACHE_DIR/labels (else $XDG_CACHE_HOME/trace-eval/labels, else ~/.cache/trace-eval/labels) and is
checked against the hash pinned with its commit.
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trace_eval.audio import sha256_file
from trace_eval.io import atomic_write_text
from trace_eval.prepare.folder import PrepareError

__all__ = ["GitHubFile", "Snapshot", "download_dataset", "download_label_file", "local_label_file", "offline"]


@dataclass(frozen=True)
class GitHubFile:
    """A file of a GitHub repository at a pinned commit, with the sha256 it had there."""

    repo: str
    commit: str
    path: str
    sha256: str

    @property
    def url(self) -> str:
        return f"https://raw.githubusercontent.com/{self.repo}/{self.commit}/{self.path}"

    def record(self, local: Path) -> dict[str, Any]:
        return {
            "kind": "labels",
            "repo": f"github:{self.repo}",
            "revision": self.commit,
            "files": [{"path": self.path, "bytes": local.stat().st_size, "sha256": sha256_file(local)}],
        }


@dataclass(frozen=True)
class Snapshot:
    """A dataset repository's files on this machine, and the revision they are (None when not known)."""

    repo: str
    root: Path
    revision: str | None


def offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def _labels_cache() -> Path:
    if os.environ.get("TRACE_CACHE_DIR"):
        return Path(os.environ["TRACE_CACHE_DIR"]) / "labels"
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "trace-eval" / "labels"


def download_label_file(pinned: GitHubFile, flag: str = "--labels FILE") -> Path:
    """The label file at its pinned commit: from the cache, else downloaded; its hash is checked either way."""
    local = _labels_cache() / pinned.repo / pinned.commit / pinned.path
    if not local.is_file():
        if offline():
            raise PrepareError(
                f"HF_HUB_OFFLINE is set, so {pinned.url} is not downloaded: unset it, or pass {flag} "
                f"with a copy of {pinned.path} from {pinned.repo} at commit {pinned.commit[:7]}"
            )
        try:
            with urllib.request.urlopen(pinned.url, timeout=30) as answer:
                text = answer.read().decode("utf-8")
        except (urllib.error.URLError, OSError, UnicodeDecodeError) as error:
            raise PrepareError(
                f"could not download {pinned.url} ({error}); with no network, pass {flag} with a copy of "
                f"{pinned.path} from {pinned.repo} at commit {pinned.commit[:7]}"
            ) from error
        atomic_write_text(local, text)
    found = sha256_file(local)
    if found != pinned.sha256:
        raise PrepareError(
            f"{local}: sha256 {found} is not that of {pinned.path} at {pinned.repo}@{pinned.commit[:7]} "
            f"({pinned.sha256}); delete it and run again"
        )
    return local


def local_label_file(path: str | Path, pinned: GitHubFile | None) -> tuple[Path, dict[str, Any]]:
    """A label file given with --labels, and its SOURCE.json record (said to match the release, or not)."""
    path = Path(path)
    if not path.is_file():
        raise PrepareError(f"{path}: label file not found")
    digest = sha256_file(path)
    record: dict[str, Any] = {
        "kind": "labels",
        "repo": None,
        "revision": None,
        "local": str(path.resolve()),
        "files": [{"path": path.name, "bytes": path.stat().st_size, "sha256": digest}],
    }
    if pinned is not None:
        record["release"] = f"github:{pinned.repo}@{pinned.commit}:{pinned.path}"
        record["matches_release"] = digest == pinned.sha256
    return path, record


def download_dataset(
    repo: str, revision: str | None, allow_patterns: list[str] | None = None, flag: str = "--from PATH"
) -> Snapshot:
    """A dataset repository (the files matching `allow_patterns`) in the hub cache; setup errors stop at once."""
    try:
        from huggingface_hub import errors as hub_errors
        from huggingface_hub import snapshot_download
    except ImportError as error:  # pragma: no cover - a declared dependency
        raise PrepareError("downloading needs huggingface_hub: pip install huggingface_hub") from error
    page = f"https://huggingface.co/datasets/{repo}"
    try:
        root = snapshot_download(
            repo, repo_type="dataset", revision=revision, allow_patterns=allow_patterns, library_name="trace-eval"
        )
    except hub_errors.GatedRepoError as error:
        raise PrepareError(
            f"{repo} is gated: accept its conditions at {page}, then set HF_TOKEN (or run `hf auth login`)"
        ) from error
    except hub_errors.RepositoryNotFoundError as error:
        raise PrepareError(
            f"{repo}: not found, or private and no token was given (set HF_TOKEN); see {page}"
        ) from error
    except hub_errors.RevisionNotFoundError as error:
        raise PrepareError(f"{repo}: no revision {revision!r} (--revision); see {page}") from error
    except hub_errors.LocalEntryNotFoundError as error:
        if offline():
            why, fix = "HF_HUB_OFFLINE is set", "unset HF_HUB_OFFLINE where there is network"
        else:
            why, fix = "the hub cannot be reached", "check the network (proxy, HF_ENDPOINT)"
        cache = os.environ.get("HF_HOME", "~/.cache/huggingface")
        raise PrepareError(
            f"{repo}: {why} and the files are not in the hub cache ({cache}); "
            f"{fix}, or pass {flag} with a local copy of the dataset"
        ) from error
    except (hub_errors.HfHubHTTPError, OSError) as error:
        raise PrepareError(f"{repo}: download failed ({error}); run again to resume, or pass {flag}") from error
    path = Path(str(root))
    resolved = path.name if path.parent.name == "snapshots" else revision
    return Snapshot(repo, path, resolved)


def snapshot_record(snapshot: Snapshot, files: list[dict[str, Any]], local: bool) -> dict[str, Any]:
    """A dataset source as SOURCE.json records it."""
    record: dict[str, Any] = {
        "kind": "dataset",
        "repo": f"hf:datasets/{snapshot.repo}",
        "revision": snapshot.revision,
        "files": files,
    }
    if local:
        record["local"] = str(snapshot.root.resolve())
    return record


def local_snapshot(repo: str, path: str | Path) -> Snapshot:
    """A local copy given with --from; its revision is known when it is a hub cache snapshot folder."""
    root = Path(path)
    if not root.exists():
        raise PrepareError(f"{root}: not found")
    resolved = root.resolve()
    revision = resolved.name if resolved.parent.name == "snapshots" else None
    return Snapshot(repo, root, revision)
