"""What an evaluation reads: judge runs (through the one run-folder reader,
trace_eval.judge.runfolder) and the human labels of a benchmark, in a rubric's label spaces."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fusion import LABELS, get_policy
from trace_eval.judge.languages import benchmark_language, instruction_language
from trace_eval.judge.runfolder import RunFolder, read_run_folder
from trace_eval.rubrics import Rubric
from trace_eval.rubrics.labels import label_space

if TYPE_CHECKING:
    from trace_eval.bench import Benchmark

OVERALL = "overall"  # the fused label of rubrics with fusion
# Why an item a run holds is not scored, in the words `evaluate` uses (a call that failed is status "error").
UNSCORED = {
    "undetermined": "answered, but a dimension was left null for want of evidence (a deciding cue missing)",
    "invalid": "the answer could not be read as a verdict in the rubric's labels",
    "failed": "no answer: the call failed (status error)",
    "skipped": "not asked: a clip without a blueprint (judge --skip-failed), or --max-cost reached",
}


class EvaluationError(ValueError):
    """The runs and labels cannot be evaluated together (say what to pass instead)."""


@dataclass(frozen=True)
class RunRecord:
    """One item of a judge run, reduced to what evaluation needs."""

    id: str
    status: str  # ok | invalid | error | skipped
    reason: str | None
    # The rubric's dimensions the item was rated on, or None when the verdict failed; with status ok a
    # dimension's label is None when the judge left it undetermined (it lacked the evidence), and
    # `undetermined` says why.
    verdicts: dict[str, Any] | None
    overall: str | None  # the label the run itself recorded under its fusion policy
    undetermined: dict[str, str] = field(default_factory=dict)  # dimension -> why its label is None

    @property
    def decided(self) -> bool:
        """Every dimension has a label, so the item has an overall label under every policy."""
        return self.verdicts is not None and all(v is not None for v in self.verdicts.values())

    @property
    def unscored(self) -> str | None:
        """Why the item is not scored (a key of UNSCORED); None when it is."""
        if self.verdicts is not None:
            return "undetermined" if self.undetermined else None
        return self.status if self.status in ("invalid", "skipped") else "failed"


def read_record(raw: dict[str, Any], rubric: Rubric) -> RunRecord:
    """Validate one results.jsonl object against the rubric; anything unusable becomes an unscored record
    with its reason.

    A rubric that fuses needs every dimension (the fused label depends on all of them); the others score
    whichever of their dimensions the item was rated on. Run folders written before undetermined
    verdicts existed have no `undetermined` field and no null label in an ok record, so they read
    exactly as they always did.
    """
    item_id = str(raw["id"])
    status = str(raw.get("status") or "error")
    reason = raw.get("reason")
    verdicts = raw.get("verdicts")
    overall = raw.get(OVERALL) if rubric.fusion and raw.get(OVERALL) in LABELS else None
    if status != "ok":
        return RunRecord(item_id, status, str(reason) if reason else f"status {status}", None, overall)
    spaces = rubric.spaces()
    if rubric.fusion is None:
        if not isinstance(verdicts, dict) or not set(verdicts) & set(spaces):
            return RunRecord(item_id, "invalid", "status ok but no verdicts of this rubric's dimensions", None, None)
        bad = [f"{d}={v!r}" for d, v in verdicts.items() if d in spaces and v not in spaces[d].values]
        if bad:
            return RunRecord(item_id, "invalid", "verdict not a label: " + ", ".join(bad), None, None)
        return RunRecord(item_id, "ok", None, {d: v for d, v in verdicts.items() if d in spaces}, None)
    if not isinstance(verdicts, dict):
        return RunRecord(item_id, "invalid", "status ok but no verdicts object", None, overall)
    reasons: dict[str, Any] = raw["undetermined"] if isinstance(raw.get("undetermined"), dict) else {}
    # A null label is undetermined when the record says why; a missing key or any other value is invalid.
    bad = [
        f"{d}={verdicts.get(d)!r}"
        for d, space in spaces.items()
        if verdicts.get(d) not in space.values and not (verdicts.get(d) is None and reasons.get(d))
    ]
    if bad:
        return RunRecord(item_id, "invalid", "verdict not a label: " + ", ".join(bad), None, overall)
    undetermined = {d: str(reasons[d]) for d in spaces if verdicts.get(d) is None}
    return RunRecord(item_id, "ok", None, {d: verdicts.get(d) for d in spaces}, overall, undetermined)


@dataclass
class JudgeRun:
    """One run folder as evaluated: its name in the report and what the folder holds."""

    name: str
    folder: RunFolder

    @property
    def path(self) -> Path:
        return self.folder.path

    @property
    def config(self) -> dict[str, Any]:
        return self.folder.config

    @property
    def raws(self) -> dict[str, dict[str, Any]]:
        """results.jsonl objects by id, in file order."""
        return self.folder.records

    @property
    def problems(self) -> list[str]:
        return self.folder.problems

    @property
    def summary(self) -> dict[str, Any]:
        return self.folder.summary

    def records(self, rubric: Rubric) -> dict[str, RunRecord]:
        """Every item read against the rubric, by id."""
        return {item_id: read_record(raw, rubric) for item_id, raw in self.raws.items()}

    @property
    def policy(self) -> str | None:
        value = self.config.get("fusion")
        if isinstance(value, dict):  # tolerate {"policy": name}
            value = value.get("policy") or value.get("name")
        return value if isinstance(value, str) else None

    def fusion_policy(self, override: str | None, rubric: Rubric) -> str:
        """The policy this run's overall labels are fused under: `override` (--fusion), else the run's own."""
        if rubric.fusion is None:
            raise EvaluationError(f"the {rubric.name} rubric does not fuse: it has no overall label")
        name = override or self.policy
        if name is None:
            raise EvaluationError(
                f"run {self.name}: config.json names no fusion policy; pass --fusion, one of: "
                f"{', '.join(sorted(rubric.fusion.policies))}"
            )
        get_policy(name)  # UnknownPolicy lists the choices
        if name not in rubric.fusion.policies:
            raise EvaluationError(
                f"--fusion {name}: the {rubric.name} rubric fuses under {', '.join(rubric.fusion.policies)}"
            )
        return name

    @property
    def bench(self) -> str | None:
        value = self.config.get("bench")
        return value if isinstance(value, str) else None

    def describe(self) -> dict[str, Any]:
        judge = self.config.get("judge")
        return {
            "name": self.name,
            "path": str(self.path),
            "model": self.config.get("model"),
            "judge": judge
            if isinstance(judge, (str, int, float)) or judge is None
            else json.dumps(judge, sort_keys=True),
            "run_fusion": self.policy,
        }


def load_run(path: str | Path, name: str | None = None) -> JudgeRun:
    """A run folder read for evaluation (see trace_eval.judge.runfolder.read_run_folder)."""
    path = Path(path)
    return JudgeRun(name or path.resolve().name, read_run_folder(path))


def load_runs(paths: list[str | Path]) -> list[JudgeRun]:
    """Run folders, each named by the shortest path tail that tells it from the others."""
    folders = [Path(p) for p in paths]
    return [load_run(path, name) for path, name in zip(folders, unique_names(folders))]


def unique_names(paths: list[Path]) -> list[str]:
    """Short names for runs: the folder name, with parents added until they differ."""
    parts = [p.resolve().parts for p in paths]
    depth = 1
    while True:
        names = ["/".join(p[-depth:]) for p in parts]
        if len(set(names)) == len(names) or depth >= max(len(p) for p in parts):
            break
        depth += 1
    if len(set(names)) != len(names):  # the same folder given twice
        names = [f"{n}#{i + 1}" for i, n in enumerate(names)]
    return names


def bench_of(runs: list[JudgeRun], labels: str | Path | None) -> Path:
    """The benchmark whose labels the runs are scored against: `labels`, else the one every run names."""
    if labels is not None:
        return Path(labels)
    missing = [run.name for run in runs if run.bench is None]
    if missing:
        raise EvaluationError(f"run(s) {', '.join(missing)}: config.json names no bench; pass --labels BENCH")
    benches = {run.bench for run in runs if run.bench is not None}
    if len(benches) > 1:
        raise EvaluationError(
            f"the runs judged different benchmarks ({', '.join(sorted(benches))}); pass --labels BENCH"
        )
    return Path(benches.pop())


@dataclass(frozen=True)
class HumanLabels:
    """A benchmark's human labels in a rubric's label spaces."""

    labels: dict[str, dict[str, Any]]  # id -> dimension (and "overall" for rubrics that fuse) -> label
    systems: dict[str, str | None]  # id -> the system that made the (pointwise) answer
    problems: list[str]  # labels outside their space, left out
    manifest: Path
    # id -> the systems that made response 1 and response 2 (manifest model_a, model_b) of a pairwise item
    pair_systems: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    # With a label store (BENCH/labels/): every voter's labels (the manifest's as "manifest"), by annotator,
    # and the items and dimensions where people disagree; `labels` then holds the majority (labels/store.py).
    annotators: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    disagreements: list[dict[str, Any]] = field(default_factory=list)
    # id -> the language of its instruction (declared, else its blueprint's), None where not known
    languages: dict[str, str | None] = field(default_factory=dict)


def load_human_labels(
    bench: str | Path, rubric: Rubric, leave_out: frozenset[str] | set[str] = frozenset()
) -> HumanLabels:
    """Human labels of every item in the rubric's label spaces; unusable ones are listed in `problems`.

    The manifest is read, and the label store beside it (BENCH/labels/) where there is one: then each
    label is the majority of the manifest's and the annotators' (trace_eval/labels/store.py), and the store's
    labels find their items by the audio's content (which needs the audio). The annotators named in `leave_out`
    are not counted (their labels stay in the store; LabelError for a name the store does not have).
    """
    from trace_eval.bench import load_benchmark

    benchmark = load_benchmark(bench, check_audio=False)
    spaces = rubric.spaces()
    if rubric.fusion:
        spaces[OVERALL] = label_space("typed-tie")
    labels: dict[str, dict[str, Any]] = {}
    problems: list[str] = []
    for pair in benchmark.pairs:
        item: dict[str, Any] = {}
        for key, space in spaces.items():
            value = pair.label.get(key)
            if value is None:
                continue
            label = space.normalise_human(value)
            if label is None:
                problems.append(
                    f"item {pair.id}: label.{key} = {value!r} is not in the "
                    f"{space.kind} space ({space.describe()}); left out"
                )
            else:
                item[key] = label
        labels[pair.id] = item
    systems = {p.id: (p.extra.get("model") or p.model_a) for p in benchmark.pairs}
    pair_systems = {p.id: (p.model_a, p.model_b) for p in benchmark.pairs if not p.pointwise}
    from trace_eval.labels.store import combine

    people = combine(benchmark, rubric, labels, leave_out)
    languages = item_languages(benchmark)
    if people is None:
        return HumanLabels(labels, systems, problems, benchmark.manifest_path, pair_systems, languages=languages)
    return HumanLabels(
        people.labels,
        systems,
        problems + people.problems,
        benchmark.manifest_path,
        pair_systems,
        people.annotators,
        people.disagreements,
        languages,
    )


def item_languages(benchmark: Benchmark) -> dict[str, str | None]:
    """Item id -> its instruction's language code, as `trace_eval.judge.languages.instruction_language` tells it:
    declared by the manifest (`instruction_language`), else detected surely in its blueprint, else read from its
    text or transcript, else an unsure detection where there is no text to read (the grouping follows what was
    recorded; `reading_language` decides what a judge trusts); None where none says."""
    from trace_eval.stage1.store import BlueprintStore

    store = BlueprintStore(benchmark.root)

    def blueprint(pair) -> dict | None:
        declared = pair.languages.get("instruction_language")
        if not declared and pair.instruction_path and (benchmark.root / pair.instruction_path).is_file():
            return store.get_by_path(pair.instruction_path)
        return None

    read = [(pair, blueprint(pair)) for pair in benchmark.pairs]
    usual = benchmark_language((pair.languages, bp, pair.instruction_text) for pair, bp in read)
    found: dict[str, str | None] = {}
    for pair, bp in read:
        language = instruction_language(pair.languages, bp, pair.instruction_text, benchmark=usual)
        found[pair.id] = language.code if language else None
    return found
