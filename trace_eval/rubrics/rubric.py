"""Rubrics: what a judge is asked, in which label space, and how its answers are scored.

A rubric is one YAML file (schema: schemas/rubric.schema.json). The bundled ones
live beside this module and are named by their file name; `--rubric` also takes
the path of a user's own file.

    from trace_eval.rubrics import load_rubric
    rubric = load_rubric("multi-aspect")
    rubric.dimensions_for(pair)          # the dimensions asked about this item
    rubric.verdict_schema(dimensions)    # what a valid answer looks like

Dimensions may apply only to some items (`when: {has: FIELD}` or `{lacks: FIELD}`),
may be rated without the instruction (`needs_instruction: false`, asked even where a spoken
instruction has no recognised words),
items may have to carry manifest fields (`requires`), and every field an item
carries is a template variable of its prompts (`defaults` give the text shown
when an item lacks an optional one).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from fusion import POLICIES, Fusion, FusionError
from trace_eval.rubrics.labels import LabelSpace, label_space
from trace_eval.schemas import validator

if TYPE_CHECKING:
    from trace_eval.items import Pair
    from trace_eval.judge.prompts import Prompt

__all__ = [
    "DEFAULT_RUBRIC",
    "RUBRICS_DIR",
    "Dimension",
    "Rubric",
    "RubricError",
    "available_rubrics",
    "load_rubric",
    "render_field",
    "rubric_of_run",
]

RUBRICS_DIR = Path(__file__).resolve().parent
DEFAULT_RUBRIC = "trace"
TRACE_REPORT = "trace"  # the metric that is TRACE's whole report (evaluation/analysis.py): it scores the fused label


class RubricError(ValueError):
    """A rubric that cannot be found or is malformed; the message lists every problem."""


@dataclass(frozen=True)
class Dimension:
    """One thing the judge rates."""

    name: str  # the key in answers, verdicts and human labels
    title: str
    asks: str  # the question, as shown to the judge
    labels: LabelSpace
    anchors: tuple[tuple[Any, str], ...] = ()  # what some labels mean, shown to the judge
    aliases: tuple[str, ...] = ()  # other answer keys read as this dimension
    when: tuple[str, str] | None = None  # ("has" | "lacks", manifest field): the items it applies to
    # Whether it is rated against the instruction: a spoken instruction heard as no words leaves it undetermined.
    needs_instruction: bool = True

    def applies_to(self, pair: Pair) -> bool:
        if self.when is None:
            return True
        test, name = self.when
        present = _has_field(pair, name)
        return present if test == "has" else not present

    def describe(self, number: int) -> str:
        """The dimension as listed in a prompt ($dimensions)."""
        lines = [f'{number}. {self.title} ("{self.name}"): {self.asks.strip()}', f"   Answer {self.labels.describe()}."]
        lines += [f"   {value}: {meaning.strip()}" for value, meaning in self.anchors]
        return "\n".join(lines)


def _has_field(pair: Pair, name: str) -> bool:
    value = pair.extra.get(name)
    return value is not None and value != "" and value != [] and value != {}


def render_field(value: Any) -> str:
    """An item field as prompt text: strings as they are, turns as "speaker: text" lines, mappings as
    "key: value" lines, lists of words joined with commas, anything else as JSON."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, dict):
        return "\n".join(f"{key}: {render_field(item)}" for key, item in value.items())
    if isinstance(value, list):
        if all(isinstance(item, str) for item in value) and not any("\n" in item for item in value):
            long_lines = any(len(item) > 60 for item in value)
            return "\n".join(value) if long_lines else ", ".join(value)
        return "\n".join(_turn(item) for item in value)
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def _turn(item: Any) -> str:
    """One dialogue turn: {"speaker"|"role"|"name": ..., "text"|"content"|"utterance": ...} -> "speaker: text"."""
    if isinstance(item, dict):
        speaker = next((item[k] for k in ("speaker", "role", "name") if k in item), None)
        text = next((item[k] for k in ("text", "content", "utterance") if k in item), None)
        if isinstance(speaker, str) and isinstance(text, str):
            return f"{speaker}: {text.strip()}"
    return render_field(item)


@dataclass(frozen=True)
class Rubric:
    """A loaded rubric (see the module docstring and schemas/rubric.schema.json)."""

    name: str
    version: int
    description: str
    reference: str
    format: str  # pairwise | pointwise
    dimensions: tuple[Dimension, ...]
    prompts: dict[str, Prompt] = field(hash=False, compare=False)  # the first is the default
    fusion: Fusion | None = None  # how the dimensions fuse into an overall label; None: no overall label
    metrics: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    defaults: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    path: Path | None = field(default=None, compare=False)

    @property
    def id(self) -> str:
        return f"{self.name}-v{self.version}"

    @property
    def pairwise(self) -> bool:
        return self.format == "pairwise"

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.dimensions)

    @property
    def default_prompt(self) -> str:
        return next(iter(self.prompts))

    def require_fusion(self) -> Fusion:
        """`fusion`, for what exists only where the dimensions fuse (the overall label, the fusion table, TRACE's
        probes); a RubricError naming the rubric where they do not."""
        if self.fusion is None:
            raise RubricError(f"rubric {self.name} does not fuse its dimensions: it has no overall label")
        return self.fusion

    def dimension(self, name: str) -> Dimension:
        for dimension in self.dimensions:
            if dimension.name == name:
                return dimension
        raise KeyError(f"rubric {self.name} has no dimension {name!r}; expected one of: {', '.join(self.names)}")

    def spaces(self, names: tuple[str, ...] | None = None) -> dict[str, LabelSpace]:
        return {d.name: d.labels for d in self.dimensions if names is None or d.name in names}

    def prompt(self, name: str | None = None) -> Prompt:
        name = name or self.default_prompt
        if name not in self.prompts:
            raise RubricError(f"rubric {self.name} has no prompt {name!r}; expected one of: {', '.join(self.prompts)}")
        return self.prompts[name]

    def dimensions_for(self, pair: Pair) -> tuple[str, ...]:
        """Names of the dimensions that apply to `pair`, in rubric order."""
        return tuple(d.name for d in self.dimensions if d.applies_to(pair))

    def unusable_reason(self, pair: Pair) -> str | None:
        """Why this rubric cannot judge `pair`, or None."""
        if self.pairwise and not (pair.audio1_path and pair.audio2_path):
            return "not a pairwise item: the judge needs audio1_path and audio2_path"
        if not self.pairwise and not pair.audio_path:
            return f"not a pointwise item: the {self.name} rubric judges one answer per item (audio_path)"
        missing = [name for name in self.requires if not _has_field(pair, name)]
        if missing:
            return f"the {self.name} rubric needs the manifest field(s) {', '.join(missing)} on every item"
        if not self.dimensions_for(pair):
            return f"no dimension of the {self.name} rubric applies to this item"
        return None

    def variables(self, pair: Pair, names: tuple[str, ...]) -> dict[str, str]:
        """Template variables for one item: its own fields (or the rubric's defaults), $dimensions, $answer_format."""
        variables = dict(self.defaults)
        variables.update(
            {
                key: render_field(value)
                for key, value in pair.extra.items()
                if isinstance(key, str) and _has_field(pair, key)
            }
        )
        dimensions = [self.dimension(n) for n in names]
        variables["dimensions"] = "\n".join(d.describe(i) for i, d in enumerate(dimensions, start=1))
        variables["answer_format"] = self.answer_format(names)
        return variables

    def answer_format(self, names: tuple[str, ...]) -> str:
        """The JSON object the judge answers with, as shown in prompts."""
        fields = ['"reasoning": "<one or two sentences per dimension>"']
        for name in names:
            fields.append(f'"{name}": ' + ("<score>" if self.dimension(name).labels.numeric else '"<label>"'))
        return "{" + ", ".join(fields) + "}"

    def verdict_schema(self, names: tuple[str, ...] | None = None) -> dict:
        """JSON Schema of a valid answer about `names` (default: every dimension); other keys are allowed.

        An answer with an `undetermined` object may leave the dimensions it names null (the judge lacked
        the evidence); whether a backbone may answer so is the parser's to decide. For TRACE this is
        schemas/verdict.schema.json.
        """
        names = names or self.names
        labels = {n: list(self.dimension(n).labels.values) for n in names}
        return {
            "type": "object",
            "required": ["reasoning", *names],
            # Reasoning is kept as given (text, one text per dimension, a list): only the labels are checked.
            "properties": {
                "reasoning": {},
                "undetermined": {
                    "type": "object",
                    "propertyNames": {"enum": list(names)},
                    "additionalProperties": {"type": "string", "minLength": 1},
                },
                # A judge that says how sure it is (the cues backbone: its margins) gives it per dimension; read
                # only from backbones that declare it (Backbone.states_confidence), so it is not checked here.
                "confidence": {},
            },
            "if": {"required": ["undetermined"]},
            "then": {
                "properties": {n: {"enum": [*values, None]} for n, values in labels.items()},
                "allOf": [
                    {
                        "if": {"properties": {n: {"const": None}}},
                        "then": {"properties": {"undetermined": {"required": [n]}}},
                    }
                    for n in names
                ],
            },
            "else": {"properties": {n: {"enum": values} for n, values in labels.items()}},
            "additionalProperties": True,
        }

    def response_schema(self, names: tuple[str, ...] | None = None) -> dict:
        """The verdict schema in the strict form structured-output APIs accept (all keys required, no others)."""
        names = names or self.names
        return {
            "type": "object",
            "properties": {
                "reasoning": {"type": "string"},
                **{n: self.dimension(n).labels.json_schema() for n in names},
            },
            "required": ["reasoning", *names],
            "additionalProperties": False,
        }


# -- loading ------------------------------------------------------------------------------


def _problems(doc: Any) -> list[str]:
    if isinstance(doc, dict) and doc.get("fusion") == "policies":
        return [
            "fusion: `policies` is the former spelling of the TRACE arrangement; write it out as in "
            "trace_eval/rubrics/trace.yaml: {order: [content, paralinguistics, voice_quality], "
            "acceptability: [content, paralinguistics]}"
        ]
    check = validator("rubric")
    found = [
        f"{'/'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}"
        for e in sorted(check.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))
    ]
    if found:
        return found
    names = [d["name"] for d in doc["dimensions"]]
    found += [f"dimensions: {name} appears more than once" for name in sorted({n for n in names if names.count(n) > 1})]
    pairwise = [d["name"] for d in doc["dimensions"] if d["labels"] in ("typed-tie", "win-lose-tie")]
    if doc["format"] == "pairwise" and len(pairwise) != len(names):
        found.append(
            f"a pairwise rubric needs pairwise label spaces (typed-tie, win-lose-tie) on every dimension; "
            f"{', '.join(n for n in names if n not in pairwise)} has another"
        )
    if doc["format"] == "pointwise" and pairwise:
        found.append(f"a pointwise rubric needs likert or binary dimensions; {', '.join(pairwise)} is pairwise")
    for d in doc["dimensions"]:
        if "range" in d and d["labels"] != "likert":
            found.append(f"dimensions/{d['name']}: range applies to likert only")
    if isinstance(doc.get("fusion"), dict):
        found += _fusion_problems(doc)
    if TRACE_REPORT in doc["metrics"]:
        if not isinstance(doc.get("fusion"), dict):
            found.append(f"metrics: {TRACE_REPORT} is the TRACE report, which needs an overall label (fusion)")
        if len(doc["metrics"]) > 1:
            found.append(f"metrics: {TRACE_REPORT} is a whole report; list it alone")
    return found


def _fusion_problems(doc: dict) -> list[str]:
    """What keeps `fusion:` from fusing this rubric's dimensions."""
    spec, names = doc["fusion"], [d["name"] for d in doc["dimensions"]]
    found = [
        f"fusion: {key} names {name}, which is not a dimension of this rubric"
        for key in ("order", "acceptability")
        for name in spec[key]
        if name not in names
    ]
    if sorted(spec["order"]) != sorted(names):
        found.append(f"fusion: order must name every dimension once ({', '.join(names)})")
    other = [d["name"] for d in doc["dimensions"] if d["labels"] != "typed-tie"]
    if other:
        found.append(f"fusion: the policies fuse typed-tie labels; {', '.join(other)} has another label space")
    try:
        _fusion(spec)
    except FusionError as e:
        found.append(f"fusion: {e}")
    return found


def _fusion(spec: dict | str | None) -> Fusion | None:
    if not isinstance(spec, dict):
        return None  # "none": no overall label
    return Fusion(
        order=tuple(spec["order"]),
        acceptability=tuple(spec["acceptability"]),
        policies=tuple(spec.get("policies") or POLICIES),
    )


def _dimension(doc: dict) -> Dimension:
    space = label_space(doc["labels"], tuple(doc["range"]) if "range" in doc else None)
    anchors = tuple((space.normalise(key), text) for key, text in (doc.get("anchors") or {}).items())
    when = doc.get("when")
    return Dimension(
        name=doc["name"],
        title=doc.get("title") or doc["name"].replace("_", " ").capitalize(),
        asks=doc["asks"],
        labels=space,
        anchors=anchors,
        aliases=tuple(doc.get("aliases") or ()),
        when=next(iter(when.items())) if when else None,
        needs_instruction=doc.get("needs_instruction", True),
    )


def _prompts(entries: list, path: Path) -> dict[str, Prompt]:
    from trace_eval.judge.prompts import PROMPTS_DIR, PromptError, load_prompt, load_prompt_file, prompt_from_doc

    prompts: dict[str, Prompt] = {}
    for n, entry in enumerate(entries):
        try:
            if isinstance(entry, dict):
                prompt = prompt_from_doc(entry, f"{path}: prompts/{n}", path)
            elif entry.endswith((".yaml", ".yml")):
                prompt = load_prompt_file(path.parent / entry)
            else:
                prompt = load_prompt(entry, PROMPTS_DIR)
        except (PromptError, OSError) as e:
            raise RubricError(f"{path}: prompts/{n}: {e}") from None
        if prompt.name in prompts:
            raise RubricError(f"{path}: two prompts are named {prompt.name!r}")
        prompts[prompt.name] = prompt
    return prompts


def _check_anchors(rubric: Rubric) -> list[str]:
    return [
        f"dimensions/{d.name}: anchor {value!r} is not one of {list(d.labels.values)}"
        for d in rubric.dimensions
        for value, _ in d.anchors
        if value not in d.labels.values
    ]


def _load_file(path: Path) -> Rubric:
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise RubricError(f"{path}: not valid YAML: {e}") from e
    except OSError as e:
        raise RubricError(f"{path}: cannot read the rubric ({e.strerror})") from e
    problems = _problems(doc)
    if problems:
        raise RubricError(f"{path}: {len(problems)} problem(s):\n  " + "\n  ".join(problems))
    rubric = Rubric(
        name=doc["name"],
        version=int(doc["version"]),
        description=doc["description"],
        reference=doc.get("reference", ""),
        format=doc["format"],
        dimensions=tuple(_dimension(d) for d in doc["dimensions"]),
        prompts=_prompts(doc["prompts"], path),
        fusion=_fusion(doc.get("fusion")),
        metrics=tuple(doc["metrics"]),
        requires=tuple(doc.get("requires") or ()),
        defaults={key: str(value) for key, value in (doc.get("defaults") or {}).items()},
        path=path,
    )
    problems = _check_anchors(rubric)
    if problems:
        raise RubricError(f"{path}: {len(problems)} problem(s):\n  " + "\n  ".join(problems))
    return rubric


def available_rubrics(directory: Path = RUBRICS_DIR) -> dict[str, Path]:
    """The bundled rubrics: name -> file."""
    return {path.stem: path for path in sorted(directory.glob("*.yaml"))}


@cache
def _load_cached(path: Path, mtime_ns: int) -> Rubric:
    return _load_file(path)


def load_rubric(name_or_path: str | Path = DEFAULT_RUBRIC) -> Rubric:
    """A bundled rubric by name (trace, multi-aspect, roleplay, style, interaction) or a rubric file by path."""
    text = str(name_or_path)
    bundled = available_rubrics()
    if text in bundled:
        path = bundled[text]
    elif text.endswith((".yaml", ".yml")) or "/" in text or Path(text).is_file():
        path = Path(text).expanduser().resolve()
        if not path.is_file():
            raise RubricError(f"{text}: no such rubric file")
    else:
        raise RubricError(
            f"unknown rubric {text!r}; expected one of: {', '.join(bundled)}, or the path of a rubric file (.yaml)"
        )
    return _load_cached(path, path.stat().st_mtime_ns)


def rubric_of_run(config: Mapping[str, Any]) -> Rubric:
    """The rubric a judge run was made with (runs made before rubrics existed used trace)."""
    recorded = config.get("rubric_file")
    if isinstance(recorded, str) and Path(recorded).is_file():
        return load_rubric(recorded)
    return load_rubric(config.get("rubric") or DEFAULT_RUBRIC)
