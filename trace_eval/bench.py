"""Benchmark folders: manifest.json (a list) or manifest.jsonl, audio relative to the folder.

The item layout is that of the released SpeakBench / S2S-Arena HCoT annotation
files, which load unchanged. Problems are collected over the whole manifest and
reported together with the item ids, never one at a time. What would silently
shrink the scored set is a problem: an empty manifest, a near miss of a manifest
field ("lable"), a label key that is no dimension of a rubric ("overal").
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trace_eval.items import LANGUAGE_FIELDS, Pair
from trace_eval.languages import code_problem
from trace_eval.schemas import load_schema, validator

if TYPE_CHECKING:
    from trace_eval.rubrics import Rubric
    from trace_eval.rubrics.labels import LabelSpace

__all__ = [
    "Benchmark",
    "Pair",
    "ManifestError",
    "load_benchmark",
    "label_keys",
    "CONTEXT_FIELDS",
    "LANGUAGE_FIELDS",
    "RELEASE_FIELDS",
]

AUDIO_FIELDS = ("instruction_path", "audio1_path", "audio2_path", "audio_path")
_KNOWN_FIELDS = {
    "index",
    "id",
    "instruction_text",
    "model_a",
    "model_b",
    "label",
    *AUDIO_FIELDS,
    *LANGUAGE_FIELDS.values(),
}
# Free-form context the bundled rubrics' prompts show ($context, $dialogue_history, ...).
CONTEXT_FIELDS = ("context", "dialogue_history", "character", "style_elements")
# Fields the released SpeakBench / S2S-Arena annotation files carry beside the layout, kept as context.
RELEASE_FIELDS = ("hcot", "instruction_id", "assistant_message", "instruction_transcript", "transcript1", "transcript2")
# A field this close to a manifest field the item lacks is taken for a misspelling of it ("lable": 0.8).
_NEAR_MISS = 0.8


class ManifestError(ValueError):
    """The manifest has problems; `problems` lists every one as "item id: what is wrong"."""

    def __init__(self, path: Path, problems: list[str], hint: str | None = None):
        self.path = path
        self.problems = problems
        shown = "\n  ".join(problems[:50])
        more = f"\n  ... and {len(problems) - 50} more" if len(problems) > 50 else ""
        note = f"\n{hint}" if hint else ""
        super().__init__(f"{path}: {len(problems)} problem(s):\n  {shown}{more}{note}")


@dataclass
class Benchmark:
    root: Path
    manifest_path: Path
    pairs: list[Pair]
    origin: str | None = None  # the URL a mirrored folder came from (trace_eval.stage1.remote); None for a local folder

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

    def declared_languages(self) -> dict[str, str]:
        """Relative audio path -> the language the manifest declares for it (load_benchmark has refused a path
        declared in two languages); clips not listed have their language detected."""
        return {path: code for pair in self.pairs for path, code in pair.declared_languages().items()}

    def resolve(self, relative: str) -> Path:
        return self.root / relative

    def source(self, relative: str) -> str:
        """Where a worker reads an audio file: the URL of a mirrored folder's file (nodes that share no disk
        read it from there), else the local path."""
        return f"{self.origin.rstrip('/')}/{relative}" if self.origin else str(self.resolve(relative))


def benchmark_folder(root: str | Path) -> tuple[Path, Path]:
    """(the folder, its manifest), resolved; FileNotFoundError saying which is missing. Cheap: the commands
    check it before they load what the work needs."""
    root = Path(root).resolve()
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: benchmark folder not found")
    return root, find_manifest(root)


def find_manifest(root: Path) -> Path:
    for name in ("manifest.json", "manifest.jsonl"):
        if (root / name).is_file():
            return root / name
    raise FileNotFoundError(f"{root}: no manifest.json or manifest.jsonl (see docs/benchmark.md)")


def _read_items(path: Path) -> tuple[list[Any], dict[str, Any]]:
    """The items, and the benchmark's defaults (the language fields of a manifest.json written as an object)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        items = []
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    items.append(json.loads(line))
                except json.JSONDecodeError as e:
                    raise ManifestError(path, [f"line {n}: not JSON ({e.msg})"]) from e
        return items, {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ManifestError(path, [f"not JSON: {e.msg} at line {e.lineno}"]) from e
    defaults: dict[str, Any] = {}
    if isinstance(data, dict):  # {"items": [...]} (or "data", "pairs"), with the benchmark's defaults beside them
        defaults = {k: v for k, v in data.items() if k in LANGUAGE_FIELDS.values()}
        data = next((v for k, v in data.items() if k in ("items", "data", "pairs") and isinstance(v, list)), data)
    if not isinstance(data, list):
        raise ManifestError(path, ["expected a JSON list of items"])
    return data, defaults


def label_keys(rubric: Rubric | None = None) -> dict[str, tuple[str, LabelSpace]]:
    """The keys a manifest `label` may hold -> (the dimension each is read as, its label space): every
    dimension of the bundled rubrics (and of `rubric`, which wins a clash), `overall` for rubrics that
    fuse, and the dimensions' aliases (the TRACE release's `instruction_following_audio` is
    paralinguistics)."""
    from trace_eval.rubrics import DEFAULT_RUBRIC, available_rubrics, load_rubric
    from trace_eval.rubrics.labels import label_space

    names = sorted(available_rubrics(), key=lambda name: name != DEFAULT_RUBRIC)  # the default first
    rubrics = [load_rubric(name) for name in names] + ([rubric] if rubric is not None else [])
    keys: dict[str, tuple[str, LabelSpace]] = {}
    for r in rubrics:
        for dimension in r.dimensions:
            keys[dimension.name] = (dimension.name, dimension.labels)
            keys.update((alias, (dimension.name, dimension.labels)) for alias in dimension.aliases)
        if r.fusion:
            keys["overall"] = ("overall", label_space("typed-tie"))  # the fused label
    return keys


def load_benchmark(root: str | Path, check_audio: bool = True, rubric: Rubric | None = None) -> Benchmark:
    """Load and validate a benchmark folder; raise ManifestError listing every problem.

    A field that looks like a misspelled manifest field is refused rather than kept as context. Label
    keys are dimensions of the bundled rubrics or of `rubric`: given the rubric the items are judged
    with, any other key is refused; without one (Stage 1 has none), only near misses of those are.
    """
    root, path = benchmark_folder(root)
    items, defaults = _read_items(path)
    if not items:
        raise ManifestError(path, ["no items: a benchmark needs at least one"])
    allowed_labels = label_keys(rubric)
    problems: list[str] = [
        f"manifest {key}: {code_problem(code)}" for key, code in defaults.items() if code_problem(code)
    ]
    declared: dict[str, tuple[str, str]] = {}  # audio path -> (language, the item that declared it first)
    misspelled = unknown_labels = missing_audio = False
    pairs: list[Pair] = []
    seen: set[str] = set()
    check = validator("manifest")
    for n, item in enumerate(items):
        where = f"item {n}"
        if isinstance(item, dict) and (item.get("index") is not None or item.get("id") is not None):
            where = f"item {item.get('id', item.get('index'))}"
        problems += [f"{where}: {_schema_message(err)}" for err in check.iter_errors(item)]
        if not isinstance(item, dict):
            continue
        near_misses = _misspelled_fields(item)
        problems += [f"{where}: {problem}" for problem in near_misses]
        misspelled = misspelled or bool(near_misses)
        pid = item.get("id", item.get("index"))
        if pid is None:
            continue
        pid = str(pid)
        if pid in seen:
            problems.append(f"{where}: duplicate id")
        seen.add(pid)
        labels, label_problems, unknown = _read_labels(item, allowed_labels, strict=rubric is not None)
        problems += [f"{where}: {problem}" for problem in label_problems]
        unknown_labels = unknown_labels or unknown
        if check_audio:
            for fld in AUDIO_FIELDS:
                rel = item.get(fld)
                if isinstance(rel, str) and not (root / rel).is_file():
                    problems.append(f"{where}: {fld} {rel} does not exist")
                    missing_audio = True
        languages = _declared(item, defaults)
        problems += [f"{where}: {key} {code_problem(code)}" for key, code in languages.items() if code_problem(code)]
        for path_field, key in LANGUAGE_FIELDS.items():
            rel = item.get(path_field)
            if isinstance(rel, str) and key in languages:
                first = declared.setdefault(rel, (languages[key], where))
                if first[0] != languages[key]:
                    problems.append(
                        f"{where}: {key} {languages[key]!r} for {rel}, which {first[1]} declares {first[0]!r}"
                    )
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
                languages=languages,
            )
        )
    if problems:
        raise ManifestError(path, problems, _hint(misspelled, unknown_labels, missing_audio, allowed_labels))
    return Benchmark(root=root, manifest_path=path, pairs=pairs)


def _declared(item: dict, defaults: dict[str, Any]) -> dict[str, Any]:
    """The item's declared languages: its own fields, else the manifest's defaults for the clips it has (the
    instruction's language also for a written instruction)."""
    languages = {}
    for path_field, key in LANGUAGE_FIELDS.items():
        has_clip = item.get(path_field) is not None or (key == "instruction_language" and "instruction_text" in item)
        value = item.get(key, defaults.get(key) if has_clip else None)
        if value is not None:
            languages[key] = value
    return languages


def _schema_message(err: Any) -> str:
    """A schema error in words; "needs A and B, or C" for a missing alternative rather than the whole item."""
    loc = "/".join(str(p) for p in err.absolute_path)
    alternatives = err.validator_value if err.validator == "anyOf" else None
    if alternatives and all(set(alt) == {"required"} for alt in alternatives):
        message = "needs " + ", or ".join(" and ".join(alt["required"]) for alt in alternatives)
    else:
        message = err.message
    return f"{loc}: {message}" if loc else message


def _hint(misspelled: bool, unknown_labels: bool, missing_audio: bool, allowed_labels: dict[str, Any]) -> str | None:
    """What is allowed, or what to do, said once below the problems it explains."""
    lines = []
    if missing_audio:
        lines.append(
            "Restore a file that does not exist, or remove its item from the manifest; "
            "judge --skip-failed judges the other items and records these as skipped."
        )
    if misspelled:
        lines.append(
            f"Manifest fields: {', '.join(_manifest_fields())}. Kept as context: "
            f"{', '.join(CONTEXT_FIELDS + RELEASE_FIELDS)}, and any other field that is not a near miss of these."
        )
    if unknown_labels:
        lines.append(
            f"Label keys: {', '.join(allowed_labels)}; a rubric file of one's own adds its dimensions (--rubric FILE)."
        )
    return "\n".join(lines) or None


def _manifest_fields() -> list[str]:
    """The fields the manifest schema names, less the free-form context."""
    context = set(CONTEXT_FIELDS + RELEASE_FIELDS)
    return [name for name in load_schema("manifest")["properties"] if name not in context]


def _misspelled_fields(item: dict) -> list[str]:
    """Fields that are near misses of a manifest or context field the item lacks ("lable", "audio_1_path"):
    kept as context they would silently drop a label, an answer or a prompt variable."""
    named = set(_manifest_fields() + list(CONTEXT_FIELDS))
    carried = set(item)
    if carried & {"index", "id"}:
        carried |= {"index", "id"}  # either names the item
    lacking = sorted(named - carried)
    problems = []
    for key in item:
        if not isinstance(key, str) or key in named or key in RELEASE_FIELDS:
            continue
        close = difflib.get_close_matches(key.lower(), lacking, n=1, cutoff=_NEAR_MISS)
        if close:
            problems.append(f"field {key!r} is not a manifest field; did you mean {close[0]!r}?")
    return problems


def _read_labels(
    item: dict, allowed: dict[str, tuple[str, LabelSpace]], strict: bool
) -> tuple[dict[str, Any], list[str], bool]:
    """The item's human labels under their dimension names (typed-tie labels normalised), what is wrong
    with them, and whether a key was refused. Not `strict`, a key that is no near miss of an allowed
    one is kept as it is (the dimension of a rubric file not known here)."""
    labels: dict[str, Any] = {}
    problems: list[str] = []
    given = item.get("label")
    if not isinstance(given, dict):
        return labels, problems, False  # the schema check has said what is wrong
    unknown = False
    for key, value in given.items():
        if key not in allowed:
            close = difflib.get_close_matches(
                str(key).lower(), list(allowed), n=1, cutoff=0.6 if strict else _NEAR_MISS
            )
            if close or strict:
                guess = f"; did you mean {close[0]!r}?" if close else ""
                problems.append(f"label.{key} is not a label of any rubric{guess}")
                unknown = True
            else:
                labels[key] = value
            continue
        name, space = allowed[key]
        if name != key and name in given:
            problems.append(f"label gives both {name} and {key}, which is read as {name}")
            continue
        # Typed-tie labels (the released annotation files) are refused here when they are none; scores
        # and other labels are checked where they are scored, which leaves a bad one out with the reason.
        if value is not None and space.kind == "typed-tie":
            norm = space.normalise_human(value)
            if norm is None:
                problems.append(f"label.{key} = {value!r} is not {space.describe()}")
            value = norm
        labels[name] = value
    return labels, problems, unknown
