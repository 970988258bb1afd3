"""Benchmark folders: manifest.json (a list) or manifest.jsonl, audio relative to the folder.

The item layout is that of the released SpeakBench / S2S-Arena HCoT annotation
files, which load unchanged. Problems are collected over the whole manifest and
reported together with the item ids, never one at a time.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from trace_eval.schemas import validator

__all__ = ["Benchmark", "Pair", "ManifestError", "load_benchmark", "normalise_label", "LABELS", "LABEL_KEYS"]

LABELS = ("1", "2", "both_good", "both_bad")
LABEL_KEYS = ("content", "voice_quality", "paralinguistics", "overall")
AUDIO_FIELDS = ("instruction_path", "audio1_path", "audio2_path", "audio_path")
_KNOWN_FIELDS = {"index", "id", "instruction_text", "model_a", "model_b", "label", *AUDIO_FIELDS}


class ManifestError(ValueError):
    """The manifest has problems; `problems` lists every one as "item id: what is wrong"."""

    def __init__(self, path: Path, problems: list[str]):
        self.path = path
        self.problems = problems
        shown = "\n  ".join(problems[:50])
        more = f"\n  ... and {len(problems) - 50} more" if len(problems) > 50 else ""
        super().__init__(f"{path}: {len(problems)} problem(s):\n  {shown}{more}")


def normalise_label(value: Any) -> str | None:
    """Map the spellings found in released files ("1", 1, "Both Good", "both-bad") to the typed-tie set."""
    if value is None:
        return None
    text = str(value).strip().lower().replace("-", "_").replace(" ", "_")
    if text in ("1.0", "2.0"):
        text = text[0]
    return text if text in LABELS else None


@dataclass
class Pair:
    """One manifest item: an instruction and two spoken responses (or one, for pointwise items)."""

    id: str
    instruction_path: str | None
    instruction_text: str | None
    audio1_path: str | None
    audio2_path: str | None
    model_a: str | None = None
    model_b: str | None = None
    label: dict[str, Any] = field(default_factory=dict)  # human labels, typed-tie normalised where possible
    extra: dict[str, Any] = field(default_factory=dict)  # free-form context: context, dialogue_history, character, ...
    audio_path: str | None = None  # the one answer of a pointwise item

    @property
    def pointwise(self) -> bool:
        return self.audio_path is not None and self.audio1_path is None

    def audio_paths(self) -> list[str]:
        """Relative paths of every audio file this item refers to (instruction first)."""
        paths = [self.instruction_path, self.audio1_path, self.audio2_path, self.audio_path]
        return [p for p in paths if p]


@dataclass
class Benchmark:
    root: Path
    manifest_path: Path
    pairs: list[Pair]

    def __iter__(self) -> Iterator[Pair]:
        return iter(self.pairs)

    def __len__(self) -> int:
        return len(self.pairs)

    def audio_files(self) -> list[str]:
        """Every distinct relative audio path, in manifest order."""
        seen: dict[str, None] = {}
        for pair in self.pairs:
            for p in pair.audio_paths():
                seen.setdefault(p, None)
        return list(seen)

    def resolve(self, relative: str) -> Path:
        return self.root / relative

    def blueprints_for(self, pair: Pair) -> tuple[dict | None, dict | None, dict | None]:
        """(instruction, response 1, response 2) blueprints from the store; None where missing.
        A pointwise item's answer is response 1.

        Uses the store's path index, so no audio is read.
        """
        from trace_eval.store import BlueprintStore

        store = BlueprintStore(self.root)
        first = pair.audio_path if pair.pointwise else pair.audio1_path
        return tuple(store.get_by_path(p) if p else None for p in (pair.instruction_path, first, pair.audio2_path))


def find_manifest(root: Path) -> Path:
    for name in ("manifest.json", "manifest.jsonl"):
        if (root / name).is_file():
            return root / name
    raise FileNotFoundError(f"{root}: no manifest.json or manifest.jsonl (see README: Benchmark folder)")


def _read_items(path: Path) -> list[Any]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        items = []
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    items.append(json.loads(line))
                except json.JSONDecodeError as e:
                    raise ManifestError(path, [f"line {n}: not JSON ({e.msg})"]) from e
        return items
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ManifestError(path, [f"not JSON: {e.msg} at line {e.lineno}"]) from e
    if isinstance(data, dict):  # tolerate {"items": [...]} / {"data": [...]}
        data = next((v for k, v in data.items() if k in ("items", "data", "pairs") and isinstance(v, list)), data)
    if not isinstance(data, list):
        raise ManifestError(path, ["expected a JSON list of items"])
    return data


def load_benchmark(root: str | Path, check_audio: bool = True) -> Benchmark:
    """Load and validate a benchmark folder; raise ManifestError listing every problem."""
    root = Path(root).resolve()
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: benchmark folder not found")
    path = find_manifest(root)
    items = _read_items(path)
    problems: list[str] = []
    pairs: list[Pair] = []
    seen: set[str] = set()
    check = validator("manifest")
    for n, item in enumerate(items):
        where = f"item {n}"
        if isinstance(item, dict) and (item.get("index") is not None or item.get("id") is not None):
            where = f"item {item.get('id', item.get('index'))}"
        for err in check.iter_errors(item):
            loc = "/".join(str(p) for p in err.absolute_path)
            problems.append(f"{where}: {loc + ': ' if loc else ''}{err.message}")
        if not isinstance(item, dict):
            continue
        pid = item.get("id", item.get("index"))
        if pid is None:
            continue
        pid = str(pid)
        if pid in seen:
            problems.append(f"{where}: duplicate id")
        seen.add(pid)
        labels: dict[str, Any] = {}
        for key, value in (item.get("label") or {}).items():
            if key in LABEL_KEYS and value is not None and not _is_score(item, value):
                norm = normalise_label(value)
                if norm is None:
                    problems.append(f"{where}: label.{key} = {value!r} is not one of {', '.join(LABELS)}")
                labels[key] = norm
            else:
                labels[key] = value
        if check_audio:
            for fld in AUDIO_FIELDS:
                rel = item.get(fld)
                if isinstance(rel, str) and not (root / rel).is_file():
                    problems.append(f"{where}: {fld} {rel} does not exist")
        pairs.append(
            Pair(
                id=pid,
                instruction_path=item.get("instruction_path"),
                instruction_text=item.get("instruction_text"),
                audio1_path=item.get("audio1_path"),
                audio2_path=item.get("audio2_path"),
                model_a=item.get("model_a"),
                model_b=item.get("model_b"),
                label=labels,
                extra={k: v for k, v in item.items() if k not in _KNOWN_FIELDS},
                audio_path=item.get("audio_path"),
            )
        )
    if problems:
        raise ManifestError(path, problems)
    return Benchmark(root=root, manifest_path=path, pairs=pairs)


def _is_score(item: dict, value: Any) -> bool:
    """Pointwise items carry numeric scores (Likert, binary) rather than typed-tie labels."""
    return "audio_path" in item and "audio1_path" not in item and isinstance(value, (int, float))
