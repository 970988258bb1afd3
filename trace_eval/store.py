"""Content-addressed blueprint store.

Layout inside a benchmark folder:

    blueprints/<sha256>.json   one blueprint per unique audio content
    blueprints/index.json      relative audio path -> sha256 (with size and mtime),
                               so a pair maps to its blueprints without reading audio

A blueprint holds the values of every extractor plus `provenance.extractors`,
where each extractor's entry records its fingerprint. A section is current when
its fingerprint matches the extractor's present one (and, for dependants, their
dependencies' fingerprints); only stale or missing sections are recomputed.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

from trace_eval.audio import sha256_file
from trace_eval.io import atomic_write_text, read_json, write_json
from trace_eval.schemas import validation_errors

__all__ = [
    "BlueprintStore",
    "FORMAT_VERSION",
    "new_blueprint",
    "apply_section",
    "section_errors",
    "get_dotted",
    "set_dotted",
]

FORMAT_VERSION = 1
STORE_DIRNAME = "blueprints"


def get_dotted(doc: dict, key: str, default: Any = None) -> Any:
    node: Any = doc
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node


def set_dotted(doc: dict, key: str, value: Any) -> None:
    *parents, leaf = key.split(".")
    node = doc
    for part in parents:
        node = node.setdefault(part, {})
    node[leaf] = value


def _remove_dotted(doc: dict, key: str) -> None:
    *parents, leaf = key.split(".")
    node: Any = doc
    for part in parents:
        node = node.get(part)
        if not isinstance(node, dict):
            return
    node.pop(leaf, None)


def new_blueprint(sha256: str, duration_s: float | None, sample_rate: int | None, channels: int | None) -> dict:
    return {
        "format_version": FORMAT_VERSION,
        "duration_s": None if duration_s is None else round(duration_s, 3),
        "sample_rate_hz": sample_rate,
        "channels": channels,
        "provenance": {"audio_sha256": sha256, "extractors": {}},
    }


def section_errors(values: dict) -> list[str]:
    """Schema problems of one extractor's values, checked before they enter a blueprint."""
    skeleton = new_blueprint("0" * 64, 0.0, None, None)
    return validation_errors("blueprint", {**skeleton, **{k: v for k, v in values.items() if k not in skeleton}})


def apply_section(blueprint: dict, outputs: tuple[str, ...], entry: dict, values: dict | None) -> None:
    """Replace one extractor's keys and provenance entry in `blueprint` (in place).

    `values` is the nested fragment the extractor returned (None when it failed or
    was unavailable: its keys are then removed, never left stale).
    """
    for key in outputs:
        _remove_dotted(blueprint, key)
    if values:
        for key in outputs:
            sentinel = object()
            value = get_dotted(values, key, sentinel)
            if value is not sentinel:
                set_dotted(blueprint, key, copy.deepcopy(value))
    blueprint["provenance"]["extractors"][entry["name"]] = entry


# Readable order: what the file is, the TRACE keys, further cues, provenance last.
_KEY_ORDER = (
    "format_version",
    "duration_s",
    "sample_rate_hz",
    "channels",
    "agent_response",
    "agent_emotion",
    "agent_accent",
    "agent_audio_quality",
    "agent_audio_properties",
)


def _ordered(blueprint: dict) -> dict:
    rest = sorted(k for k in blueprint if k not in _KEY_ORDER and k != "provenance")
    keys = [k for k in _KEY_ORDER if k in blueprint] + rest + (["provenance"] if "provenance" in blueprint else [])
    return {k: blueprint[k] for k in keys}


class BlueprintStore:
    def __init__(self, bench_root: str | Path, directory: str | Path | None = None):
        self.root = Path(bench_root).resolve()
        self.dir = Path(directory) if directory else self.root / STORE_DIRNAME
        self._index: dict[str, dict] | None = None

    # -- blueprints -------------------------------------------------------------------
    def path_for(self, sha256: str) -> Path:
        return self.dir / f"{sha256}.json"

    def get(self, sha256: str) -> dict | None:
        path = self.path_for(sha256)
        if not path.is_file():
            return None
        try:
            return read_json(path)
        except (json.JSONDecodeError, OSError):
            return None  # a damaged file is recomputed, not trusted

    def put(self, sha256: str, blueprint: dict) -> None:
        problems = validation_errors("blueprint", blueprint)
        if problems:
            raise ValueError(f"blueprint {sha256} does not match schemas/blueprint.schema.json: {problems[:5]}")
        write_json(self.path_for(sha256), _ordered(blueprint))

    # -- clips that could not be processed --------------------------------------------
    @property
    def failures_path(self) -> Path:
        return self.dir / "failures.jsonl"

    def write_failures(self, failures: list[dict]) -> None:
        """The last Stage 1 run's per-clip failures, one JSON object a line (path, sha256, stage, status, reason;
        for a file that did not decode, `packages`: what it was decoded with, see stage1.plan.installed_packages)."""
        atomic_write_text(self.failures_path, "".join(json.dumps(f) + "\n" for f in failures))

    def recorded_decode_failures(self) -> dict[str, dict]:
        """Clip path -> the recorded failure (sha256, packages, reason) of each file that did not decode."""
        return {
            entry["path"]: entry
            for entry in self._failure_entries()
            if entry.get("stage") == "decode" and entry.get("sha256")
        }

    def recorded_failures(self) -> dict[str, str]:
        """Clip path -> why its blueprint could not be made (empty when none were recorded)."""
        found: dict[str, str] = {}
        for entry in self._failure_entries():
            found.setdefault(str(entry["path"]), f"{entry.get('stage')}: {entry.get('reason')}")
        return found

    def _failure_entries(self) -> list[dict]:
        """The readable `failed` lines of failures.jsonl (a damaged line is skipped)."""
        try:
            lines = self.failures_path.read_text(encoding="utf-8").splitlines()
        except OSError:
            return []
        entries = []
        for line in lines:
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(entry, dict) and entry.get("path") and entry.get("status") == "failed":
                entries.append(entry)
        return entries

    # -- path index -------------------------------------------------------------------
    @property
    def index_path(self) -> Path:
        return self.dir / "index.json"

    def index(self) -> dict[str, dict]:
        if self._index is None:
            try:
                self._index = read_json(self.index_path) if self.index_path.is_file() else {}
            except json.JSONDecodeError:
                self._index = {}
        return self._index

    def hash_of(self, relative: str) -> str:
        """sha256 of an audio file, reusing the index while its size and mtime are unchanged."""
        path = self.root / relative
        st = os.stat(path)
        known = self.index().get(relative)
        if known and known.get("size") == st.st_size and known.get("mtime_ns") == st.st_mtime_ns:
            return known["sha256"]
        sha = sha256_file(path)
        self.index()[relative] = {"sha256": sha, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
        return sha

    def save_index(self) -> None:
        if self._index is not None:
            write_json(self.index_path, dict(sorted(self._index.items())))

    def sha_for_path(self, relative: str) -> str | None:
        """sha256 recorded for `relative` when the file is unchanged since; None otherwise."""
        known = self.index().get(relative)
        if not known:
            return None
        try:
            st = os.stat(self.root / relative)
        except OSError:
            return None
        if known.get("size") != st.st_size or known.get("mtime_ns") != st.st_mtime_ns:
            return None
        return known["sha256"]

    def get_by_path(self, relative: str) -> dict | None:
        """Blueprint of an audio file: by the index, or by hashing it when the file moved or changed."""
        sha = self.sha_for_path(relative)
        if sha is None and (self.root / relative).is_file():
            sha = self.hash_of(relative)
        return self.get(sha) if sha else None
