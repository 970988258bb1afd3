"""Content-addressed blueprint store, shared by every benchmark folder.

A blueprint depends on its audio bytes and the extractors' fingerprints alone, so
one store serves every benchmark, audit and run on a machine (or a cluster):

    STORE/<sha256>.json        one blueprint per unique audio content ...
    STORE/<sha256>.<variant>.json  ... and one per variant of the settings it was made with, side by side
                                   (a declared language, a profile other than cpu: stage1.plan.variant_of)
    BENCH/blueprints/index.json    relative audio path -> sha256 (with size, mtime and the variant its last
                                   run used), so a pair maps to its blueprints without reading audio
    BENCH/blueprints/store.json    where the last Stage 1 run kept this benchmark's blueprints
    BENCH/blueprints/summary.json, failures.jsonl   that run's summary and failures

STORE is `--store DIR` (a folder or an fsspec URL such as s3://bucket/store), else the
one the benchmark recorded, else $TRACE_STORE, else $TRACE_CACHE_DIR/blueprints, else
$XDG_CACHE_HOME/trace-eval/blueprints (~/.cache/...). `--store bench`
keeps the blueprints in BENCH/blueprints itself, as a benchmark shipped with them;
a folder made before the shared store (blueprints beside its index) is read as it is.

Writes are atomic (a whole file appears under its final name or nothing does), so a
reader never sees half a blueprint; a file that is not a blueprint of its own name's
audio is treated as missing and made again.

A blueprint holds the values of every extractor plus `provenance.extractors`,
where each extractor's entry records its fingerprint. A section is current when
its fingerprint matches the extractor's present one (and, for dependants, their
dependencies' fingerprints); only stale or missing sections are recomputed.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trace_eval.audio import sha256_file
from trace_eval.io import atomic_write_text, read_json, write_json
from trace_eval.items import Pair
from trace_eval.resources import user_cache_dir
from trace_eval.schemas import validation_errors
from trace_eval.stage1.shelf import Shelf, check_folder, display_location, is_url, open_shelf

__all__ = [
    "BlueprintStore",
    "FORMAT_VERSION",
    "audio_sha",
    "blueprint_key",
    "BENCH_STORE",
    "default_store",
    "blueprint_problems",
    "new_blueprint",
    "apply_section",
    "section_errors",
    "get_dotted",
    "set_dotted",
    "store_info",
    "verify_store",
    "prune_store",
    "migrate_bench",
]

FORMAT_VERSION = 1
STORE_DIRNAME = "blueprints"
BENCH_STORE = "bench"  # --store bench: the blueprints live in BENCH/blueprints, beside the index


def default_store() -> str:
    """The user-level store: $TRACE_STORE, else $TRACE_CACHE_DIR/blueprints, else
    $XDG_CACHE_HOME/trace-eval/blueprints (~/.cache when unset), as the judge's answer cache is found."""
    named = os.environ.get("TRACE_STORE")
    if named and not is_url(named):
        check_folder(Path(named).expanduser().resolve(), "$TRACE_STORE=")
    return named or str(user_cache_dir("blueprints"))


def blueprint_key(sha256: str, variant: str = "") -> str:
    """The name a blueprint is kept under: its audio's sha256, and after a dot the variant of settings it was
    made with ("" for the default: stage1.plan.variant_of)."""
    return f"{sha256}.{variant}" if variant else sha256


def audio_sha(key: str) -> str:
    """The audio's sha256 in a blueprint's key."""
    return key.split(".", 1)[0]


def ref_name(bench_root: Path) -> str:
    """The store's record of one benchmark's blueprints (refs/<hash of its folder>.json)."""
    return f"refs/{hashlib.sha256(str(bench_root).encode()).hexdigest()[:32]}.json"


def blueprint_problems(sha256: str, text: str, schema: bool = False) -> list[str]:
    """Why `text` is not a usable blueprint of the audio `sha256` (empty when it is).

    The cheap checks (whole JSON, format version, its own audio's hash) run on every read;
    the schema (`schema=True`) is checked by `store verify`.
    """
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        return [f"not whole JSON ({e.msg} at line {e.lineno}): a write that did not finish"]
    if not isinstance(doc, dict):
        return ["not a JSON object"]
    if doc.get("format_version") != FORMAT_VERSION:
        return [f"format_version {doc.get('format_version')!r}, expected {FORMAT_VERSION}"]
    recorded = get_dotted(doc, "provenance.audio_sha256")
    if recorded != sha256:
        return [f"made for audio {recorded!r}, not the audio its name says"]
    return validation_errors("blueprint", doc)[:5] if schema else []


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
    """One benchmark's view of the blueprints: its own index, summary and failures in BENCH/blueprints, and
    the blueprints themselves in a shelf (a folder or URL) that other benchmarks share.

    `store` names where this process writes: a folder or URL, `"bench"` (BENCH/blueprints), or None for the
    one the benchmark recorded (else the user-level default). Reads look there first, then in the
    benchmark's own folder (the layout before the shared store, or `--store bench`), then the default.
    """

    def __init__(self, bench_root: str | Path, store: str | Path | None = None):
        self.root = Path(bench_root).resolve()
        self.dir = self.root / STORE_DIRNAME  # the benchmark's own: index, summary, failures
        self._index: dict[str, dict] | None = None
        recorded = self.recorded_store()
        # A store named with --store stays the benchmark's; one taken by default follows $TRACE_STORE (what is
        # found in the recorded one is copied over by the next run: BlueprintStore.adopt).
        named = self.recorded_store(named_only=True)
        self.explicit = store is not None or named is not None  # recorded in store.json as "named"
        written = str(store) if store is not None else (named or default_store())
        self.shelf: Shelf = self._open(written)
        readers = [self.shelf]
        if recorded:
            readers.append(self._open(recorded))
        readers += [Shelf(self.dir), self._open(default_store())]
        unique: dict[str, Shelf] = {}
        for shelf in readers:
            unique.setdefault(shelf.location, shelf)
        self.readers = list(unique.values())
        self.found_in: dict[str, Shelf] = {}  # sha256 -> the shelf its blueprint was read from

    def _open(self, location: str) -> Shelf:
        if location == BENCH_STORE:
            return Shelf(self.dir)
        if not is_url(location) and not Path(location).expanduser().is_absolute():
            location = str(Path(location).expanduser().resolve())
        return open_shelf(location)

    @property
    def location(self) -> str:
        """Where this benchmark's blueprints are written: `bench`, a folder or a URL (without credentials)."""
        return BENCH_STORE if self.shelf.location == str(self.dir) else display_location(self.shelf.location)

    # -- where the benchmark keeps its blueprints ---------------------------------------
    @property
    def record_path(self) -> Path:
        return self.dir / "store.json"

    def recorded_store(self, named_only: bool = False) -> str | None:
        """The store the last Stage 1 run on this benchmark wrote to (None for a folder made before the shared
        store, or never blueprinted; with `named_only`, None unless it was named with --store); a local folder
        that no longer exists is not used."""
        try:
            record = read_json(self.record_path)
            location = record.get("store")
        except (OSError, json.JSONDecodeError, AttributeError):
            return None
        if not isinstance(location, str) or not location or (named_only and not record.get("named")):
            return None
        if location != BENCH_STORE and not is_url(location) and not Path(location).is_dir():
            return None
        return location

    def record_store(self) -> None:
        """Say where this benchmark's blueprints are (BENCH/blueprints/store.json) and, in a shared store, which
        blueprints the benchmark uses (STORE/refs/), so `store prune` keeps them."""
        write_json(self.record_path, {"store": self.location, "named": self.explicit})
        if self.location != BENCH_STORE:
            ref = {
                "bench": str(self.root),
                "blueprints": sorted(_keys_of(self.index())),
                "written": time.time(),
            }
            self.shelf.write_name(ref_name(self.root), json.dumps(ref, indent=1) + "\n")

    # -- blueprints -------------------------------------------------------------------
    def path_for(self, key: str) -> Path:
        """The local file holding the blueprint `key` (blueprint_key: an audio's sha256, and its variant) where it
        was read from, else where it is written."""
        shelf = self.found_in.get(key)
        if shelf is None:
            local = [s for s in self.readers if type(s) is Shelf and s.path(key).is_file()]
            shelf = local[0] if local else self.shelf
        return shelf.path(key)

    def get(self, key: str) -> dict | None:
        """The blueprint `key` (an audio's sha256: its default variant; `blueprint_key` for another), or None; a
        damaged file, or one made for other audio, is treated as missing (made again), never trusted."""
        for shelf in self.readers:
            text = shelf.read(key)
            if text is None or blueprint_problems(audio_sha(key), text):
                continue
            self.found_in[key] = shelf
            return json.loads(text)
        return None

    def latest(self, key: str) -> dict | None:
        """The blueprint as this store's shelf holds it now (another process may have written it since)."""
        text = self.shelf.read(key)
        return None if text is None or blueprint_problems(audio_sha(key), text) else json.loads(text)

    def put(self, key: str, blueprint: dict) -> None:
        problems = validation_errors("blueprint", blueprint)
        if problems:
            raise ValueError(f"blueprint {key} does not match schemas/blueprint.schema.json: {problems[:5]}")
        self.shelf.write(key, json.dumps(_ordered(blueprint), indent=2, ensure_ascii=False, allow_nan=False) + "\n")
        self.found_in[key] = self.shelf

    def adopt(self, key: str, blueprint: dict) -> bool:
        """Copy a blueprint read from another shelf (the benchmark's old layout, an earlier store) into this
        one, so the store the benchmark records holds every blueprint of its index. True when copied."""
        found = self.found_in.get(key)
        if found is None or found is self.shelf:  # not read under this key (a variant started from another)
            return False
        try:
            self.put(key, blueprint)
        except ValueError:  # made by an older version the schema no longer allows: read where it is, not copied
            return False
        return True

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

    def set_variant(self, relative: str, variant: str) -> None:
        """Record the variant of settings the audio at `relative` is blueprinted with (its entry must exist)."""
        entry = self.index()[relative]
        if variant:
            entry["variant"] = variant
        else:
            entry.pop("variant", None)

    def key_for_path(self, relative: str) -> str | None:
        """The key of the blueprint `relative` maps to (its audio's sha256 and variant), when the file is unchanged
        since it was indexed; None otherwise."""
        sha = self.sha_for_path(relative)
        return None if sha is None else blueprint_key(sha, self.index()[relative].get("variant", ""))

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
        """Blueprint of an audio file, in the variant its benchmark's last run made: by the index, or by hashing
        the file when it moved or changed (then its default variant)."""
        key = self.key_for_path(relative)
        if key is None and (self.root / relative).is_file():
            key = self.hash_of(relative)
        return self.get(key) if key else None

    def for_pair(self, pair: Pair) -> tuple[dict | None, dict | None, dict | None]:
        """(instruction, response 1, response 2) blueprints of an item; None where missing.
        A pointwise item's answer is response 1. Uses the path index, so no audio is read."""

        def stored(path: str | None) -> dict | None:
            return self.get_by_path(path) if path else None

        first = pair.audio_path if pair.pointwise else pair.audio1_path
        return stored(pair.instruction_path), stored(first), stored(pair.audio2_path)


# -- looking after a store (python -m trace_eval store) ----------------------------------


@dataclass
class StoreInfo:
    location: str
    blueprints: int
    bytes: int
    benchmarks: int  # benchmarks recorded in refs/
    temporary: int  # files interrupted writes left (prune removes them)
    oldest: float | None  # modification time of the oldest blueprint, seconds since the epoch
    newest: float | None


def store_info(location: str) -> StoreInfo:
    shelf = open_shelf(location)
    files = list(shelf.files())
    blueprints = [f for f in files if not _temporary(f)]
    times = [f.mtime for f in blueprints if f.mtime is not None]
    return StoreInfo(
        shelf.location,
        len(blueprints),
        sum(f.size for f in blueprints),
        len(shelf.names("refs")),
        len(files) - len(blueprints),
        min(times) if times else None,
        max(times) if times else None,
    )


def verify_store(location: str, progress: bool = True) -> dict[str, list[str]]:
    """File name -> why it is not a valid blueprint (schema, format version, the audio hash it names); empty
    when every blueprint is valid. Temporary files of interrupted writes are no blueprints and not checked."""
    from tqdm import tqdm

    shelf = open_shelf(location)
    bad: dict[str, list[str]] = {}
    names = [f.name for f in shelf.files() if not _temporary(f)]
    for name in tqdm(names, unit="blueprint", desc="verify", disable=not progress):
        text = shelf.read_name(name)
        problems = (
            ["unreadable"] if text is None else blueprint_problems(audio_sha(name[: -len(".json")]), text, schema=True)
        )
        if problems:
            bad[name] = problems
    return bad


@dataclass
class PruneResult:
    location: str
    removed: list[str]  # file names removed (or that would be, with a dry run)
    bytes: int
    kept_in_use: int  # blueprints some benchmark's index refers to
    kept_recent: int  # unreferenced but newer than the age limit
    benchmarks: list[str]  # the benchmarks whose indexes were read


def prune_store(location: str, older_than_s: float, dry_run: bool = False) -> PruneResult:
    """Remove blueprints no benchmark's index refers to and older than `older_than_s`, and temporary files
    of interrupted writes older than that. A benchmark is known by its record in refs/ (written by each
    Stage 1 run); its index is read again where its folder still exists, and a record whose folder is gone
    is removed with the blueprints only it used."""
    shelf = open_shelf(location)
    in_use: set[str] = set()
    benches: list[str] = []
    now = time.time()
    for name in shelf.names("refs"):
        try:
            ref = json.loads(shelf.read_name(name) or "")
        except json.JSONDecodeError:
            continue
        bench = Path(str(ref.get("bench", "")))
        index = bench / STORE_DIRNAME / "index.json"
        if index.is_file():
            benches.append(str(bench))
            try:
                in_use |= _keys_of(read_json(index))
            except (OSError, json.JSONDecodeError):
                in_use |= set(ref.get("blueprints") or [])
        elif now - float(ref.get("written") or 0) < older_than_s:
            in_use |= set(ref.get("blueprints") or [])  # on another machine, or a disk not mounted: kept a while
            benches.append(str(bench))
        elif not dry_run:
            shelf.remove(name)
    removed: list[str] = []
    size = kept_recent = kept = 0
    for f in shelf.files():
        if not _temporary(f) and f.name[: -len(".json")] in in_use:
            kept += 1
            continue
        if f.mtime is not None and now - f.mtime < older_than_s:
            kept_recent += 1
            continue
        removed.append(f.name)
        size += f.size
        if not dry_run:
            shelf.remove(f.name)
    return PruneResult(shelf.location, removed, size, kept, kept_recent, benches)


@dataclass
class MigrateResult:
    bench: str
    store: str
    moved: int  # blueprints now in the store and removed from the benchmark folder
    already: int  # the store held them already: the benchmark's copy removed
    invalid: dict[str, list[str]]  # left where they are, with why


def migrate_bench(bench_root: str | Path, store: str | None = None) -> MigrateResult:
    """Move the blueprints a benchmark folder holds (the layout before the shared store, or `--store bench`)
    into a shared store, and record that store as the benchmark's."""
    target = BlueprintStore(bench_root, store or default_store())
    target.explicit = store is not None
    if target.location == BENCH_STORE:
        raise ValueError("migrate moves blueprints out of the benchmark folder: name a store other than 'bench'")
    local = Shelf(target.dir)
    moved = already = 0
    invalid: dict[str, list[str]] = {}
    for f in local.files():
        if _temporary(f):
            local.remove(f.name)  # an interrupted write's leftover
            continue
        key = f.name[: -len(".json")]
        text = local.read_name(f.name) or ""
        problems = blueprint_problems(audio_sha(key), text, schema=True)
        if problems:
            invalid[f.name] = problems
            continue
        if target.latest(key) is None:
            target.shelf.write(key, text)
            moved += 1
        else:
            already += 1
        local.remove(f.name)
    target.record_store()
    return MigrateResult(str(target.root), target.location, moved, already, invalid)


def _keys_of(index: dict) -> set[str]:
    """The blueprint keys a benchmark's path index maps its audio to."""
    entries = [e for e in index.values() if isinstance(e, dict) and "sha256" in e]
    return {blueprint_key(e["sha256"], e.get("variant", "")) for e in entries}


def _temporary(f: Any) -> bool:
    return not f.name.endswith(".json")
