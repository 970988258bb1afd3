"""Evaluation of runs judged with a rubric other than TRACE: the metrics the rubric lists
(trace_eval/evaluation/scores.py), per run and dimension, written as metrics.json,
report.md and report.html.

Every slot a metric gives columns for gets a bootstrap interval, beside the metrics
in the run's "intervals" (same keys): one PairedBootstrap over the evaluated items
serves every run, so the intervals of different runs are paired, as in the TRACE report.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from trace_eval.io import atomic_write_text, write_json
from trace_eval.rubrics import Rubric

from . import report, scores
from .analysis import EvaluationError
from .bootstrap import DEFAULT_BOOTSTRAP, BootstrapSettings, PairedBootstrap
from .records import read_run_folder, read_summary, unique_names

FORMAT_VERSION = 1
FAILED_SHOWN = report.FAILED_SHOWN
# Metrics shown as percentages; the others as plain numbers.
_SHARES = {"accuracy", "agreement", "position_consistency", "self_consistency"}


@dataclass
class RubricRun:
    """One run folder read for a rubric evaluation."""

    name: str
    path: Path
    config: dict[str, Any]
    raws: dict[str, dict[str, Any]]  # results.jsonl objects by id
    problems: list[str]


@dataclass(frozen=True)
class HumanLabels:
    labels: dict[str, dict[str, Any]]  # id -> dimension -> label in the rubric's space
    systems: dict[str, str | None]  # id -> system that made the answer
    problems: list[str]
    manifest: Path


def load_human_labels(bench: str | Path, rubric: Rubric) -> HumanLabels:
    """Human labels of every item in the rubric's label spaces; unusable ones are listed in `problems`."""
    from trace_eval.bench import load_benchmark

    benchmark = load_benchmark(bench, check_audio=False)
    labels: dict[str, dict[str, Any]] = {}
    problems: list[str] = []
    for pair in benchmark.pairs:
        item: dict[str, Any] = {}
        for dimension in rubric.dimensions:
            value = pair.label.get(dimension.name)
            if value is None:
                continue
            label = dimension.labels.normalise_human(value)
            if label is None:
                problems.append(f"item {pair.id}: label.{dimension.name} = {value!r} is not in the "
                                f"{dimension.labels.kind} space ({dimension.labels.describe()}); left out")
            else:
                item[dimension.name] = label
        labels[pair.id] = item
    systems = {p.id: (p.extra.get("model") or p.model_a) for p in benchmark.pairs}
    return HumanLabels(labels, systems, problems, benchmark.manifest_path)


def _verdicts(raw: dict[str, Any], rubric: Rubric) -> tuple[dict[str, Any] | None, str | None]:
    """The run's labels of one item, or why they cannot be scored."""
    status = str(raw.get("status") or "error")
    if status != "ok":
        return None, str(raw.get("reason") or f"status {status}")
    verdicts = raw.get("verdicts")
    if not isinstance(verdicts, dict) or not set(verdicts) & set(rubric.names):
        return None, "status ok but no verdicts of this rubric's dimensions"
    spaces = rubric.spaces()
    bad = [f"{d}={v!r}" for d, v in verdicts.items() if d in spaces and v not in spaces[d].values]
    if bad:
        return None, "verdict not a label: " + ", ".join(bad)
    return {d: v for d, v in verdicts.items() if d in spaces}, None


def _samples(raw: dict[str, Any]) -> list[dict[str, Any]]:
    return [s["verdicts"] for s in raw.get("samples") or []
            if isinstance(s, dict) and s.get("status") == "ok" and s.get("order", "original") == "original"
            and isinstance(s.get("verdicts"), dict)]


_MISSING = object()


def _at(slots: dict[str, Any], path: scores.SlotPath) -> Any:
    """What `path` leads to in a metric's result, or _MISSING where the metric reports no such slot."""
    node: Any = slots
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return _MISSING
        node = node[key]
    return node


def _put(tree: dict[str, Any], path: scores.SlotPath, leaf: dict[str, Any]) -> None:
    for key in path[:-1]:
        tree = tree.setdefault(key, {})
    tree[path[-1]] = leaf


@dataclass
class _Intervals:
    """Registers the columns of every run's slots with one bootstrap; `fill` then writes the intervals."""

    ids: list[str]  # every evaluated item, in the order of the bootstrap's rows
    boot: PairedBootstrap = field(init=False)
    _row: dict[str, int] = field(init=False)
    _leaves: dict[tuple, dict[str, Any]] = field(default_factory=dict)  # filled in by `fill`

    def __post_init__(self) -> None:
        self.boot = PairedBootstrap(len(self.ids))
        self._row = {item: row for row, item in enumerate(self.ids)}

    def of_metric(self, key: tuple, slots: dict[str, Any],
                  columns: dict[scores.SlotPath, scores.Columns]) -> dict[str, Any]:
        """One metric's intervals, keyed like its slots: {"ci95": [low, high]} or {"ci95": None, "reason": ...}.

        `key` (run, metric) keeps the statistics of different runs and metrics apart.
        """
        intervals: dict[str, Any] = {}
        for path, spec in columns.items():
            node = _at(slots, path)
            if node is _MISSING:
                continue
            value, reason = (node.get("value"), node.get("reason")) if isinstance(node, dict) else (node, None)
            if value is None:
                _put(intervals, path, {"ci95": None, "reason": reason or "no value on these items"})
                continue
            if len(spec.pairs if isinstance(spec, scores.PairColumns) else spec.counts) < 2:
                # Resampling one item always gives its own value back: a zero-width interval would mislead.
                _put(intervals, path, {"ci95": None, "reason": "one item: nothing to resample"})
                continue
            leaf: dict[str, Any] = {}
            _put(intervals, path, leaf)
            self._leaves[(*key, *path)] = leaf
            self._register((*key, *path), spec)
        return intervals

    def _register(self, key: tuple, spec: scores.Columns) -> None:
        if isinstance(spec, scores.MeanColumns):
            self.boot.add_mean(key, self._column(spec.sums), self._column(spec.counts))
        else:
            judge = self._column({item: j for item, (j, _) in spec.pairs.items()})
            human = self._column({item: h for item, (_, h) in spec.pairs.items()})
            present = self._column(dict.fromkeys(spec.pairs, 1.0))
            self.boot.add_pearson(key, judge, human, present, min_items=scores.PEARSON_MIN_ITEMS)

    def _column(self, by_item: dict[str, float]) -> np.ndarray:
        column = np.zeros(len(self.ids))
        for item, value in by_item.items():
            column[self._row[item]] = value
        return column

    def fill(self, settings: BootstrapSettings) -> None:
        for key, estimate in self.boot.estimate(settings).items():
            leaf = self._leaves[key]
            leaf["ci95"] = list(estimate.interval) if estimate.interval else None
            if estimate.interval is None:
                leaf["reason"] = "undefined in every bootstrap resample"


def _run_block(run: RubricRun, rubric: Rubric, human: HumanLabels, ids: list[str], index: int,
               intervals: _Intervals) -> dict[str, Any]:
    items, failed = [], []
    by_status: dict[str, int] = {}
    for item_id, raw in run.raws.items():
        status = str(raw.get("status") or "error")
        by_status[status] = by_status.get(status, 0) + 1
    for item_id in ids:
        raw = run.raws.get(item_id)
        if raw is None:
            continue
        judged, reason = _verdicts(raw, rubric)
        if judged is None:
            failed.append({"id": item_id, "status": "invalid" if raw.get("status") == "ok" else raw.get("status"),
                           "reason": reason})
        orders = raw.get("orders") if isinstance(raw.get("orders"), dict) else None
        items.append(scores.ItemScores(item_id, human.systems.get(item_id), judged, human.labels.get(item_id, {}),
                                       _samples(raw), orders))
    metrics = scores.compute(rubric, items)
    columns = scores.compute_columns(rubric, items)
    judged_by_id = {item.id: item.judged or {} for item in items}
    coverage = {}
    for d in rubric.names:
        labelled = [i for i in ids if d in human.labels.get(i, {})]
        decided = sum(judged_by_id.get(i, {}).get(d) is not None for i in labelled)
        coverage[d] = {"decided": decided, "of": len(labelled), "value": decided / len(labelled) if labelled else None}
    return {
        "name": run.name,
        "path": str(run.path),
        "model": run.config.get("model"),
        "judge": run.config.get("judge"),
        "prompt_version": run.config.get("prompt_version"),
        "samples": run.config.get("samples"),
        "swap": run.config.get("swap"),
        "items": {
            "in_run": len(run.raws),
            "scored": sum(i.judged is not None for i in items),
            "failed": len(failed),
            "by_status": dict(sorted(by_status.items())),
            "not_in_benchmark": sum(i not in human.labels for i in run.raws),
            "not_judged": sum(i not in run.raws for i in ids),
        },
        "coverage": coverage,
        "metrics": metrics,
        "intervals": {name: intervals.of_metric((index, name), metrics[name], columns[name]) for name in columns},
        "failed": failed,
        "cues": read_summary(run.path).get("cues"),
        "problems": list(run.problems),
    }


def evaluate_rubric_runs(runs: list[RubricRun], rubric: Rubric, human: HumanLabels,
                         settings: BootstrapSettings = DEFAULT_BOOTSTRAP) -> dict[str, Any]:
    """metrics.json of runs judged with `rubric` (any but TRACE) against the human labels."""
    if not runs:
        raise EvaluationError("no judge run to evaluate")
    judged = set().union(*(run.raws for run in runs))
    ids = [i for i in human.labels if i in judged]
    if not ids:
        raise EvaluationError("no id of the judge run(s) is in the benchmark's manifest; "
                              "check --labels points at the benchmark that was judged")
    intervals = _Intervals(ids)
    blocks = [_run_block(run, rubric, human, ids, index, intervals) for index, run in enumerate(runs)]
    intervals.fill(settings)
    return {
        "format_version": FORMAT_VERSION,
        "rubric": {"name": rubric.name, "version": rubric.id, "file": str(rubric.path) if rubric.path else None,
                   "reference": rubric.reference,
                   "dimensions": {d.name: d.labels.kind for d in rubric.dimensions}},
        "items": {
            "evaluated": len(ids),
            "in_benchmark": len(human.labels),
            "with_human_label": {d: sum(d in human.labels[i] for i in ids) for d in rubric.names},
        },
        "bootstrap": settings.describe(),
        "runs": blocks,
        "label_problems": human.problems,
        "definitions": {name: scores.METRICS[name].description for name in rubric.metrics},
    }


def evaluate_rubric_folders(run_dirs: list[str | Path], out: str | Path, rubric: Rubric,
                            labels: str | Path | None = None,
                            settings: BootstrapSettings = DEFAULT_BOOTSTRAP) -> report.EvaluationFiles:
    """Evaluate run folders judged with `rubric` and write metrics.json, report.md and report.html into `out`."""
    paths = [Path(p) for p in run_dirs]
    runs = [RubricRun(name, path, *read_run_folder(path)) for path, name in zip(paths, unique_names(paths))]
    bench = labels or _bench_of(runs)
    human = load_human_labels(bench, rubric)
    metrics = {"bench": str(Path(bench).resolve()), "labels_manifest": str(human.manifest),
               **evaluate_rubric_runs(runs, rubric, human, settings)}
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    blocks = build_blocks(metrics)
    files = report.EvaluationFiles(metrics, out / "metrics.json", out / "report.md", out / "report.html")
    write_json(files.metrics_path, metrics)
    atomic_write_text(files.markdown_path, report.render_markdown(blocks))
    atomic_write_text(files.html_path, report.render_html(blocks, {}))
    return files


def _bench_of(runs: list[RubricRun]) -> str:
    benches = {run.config.get("bench") for run in runs}
    if None in benches or len(benches) != 1:
        raise EvaluationError("the runs do not name one benchmark in config.json; pass --labels BENCH")
    return str(benches.pop())


# -- report -----------------------------------------------------------------------------

def _bounds(interval: dict[str, Any] | None, share: bool = False, digits: int = 3) -> str:
    """" [65.0–77.1]" for a share, " [0.412, 0.730]" otherwise; "" without an interval."""
    ci95 = (interval or {}).get("ci95")
    if not ci95:
        return ""
    low, high = ci95
    return f" [{low * 100:.1f}–{high * 100:.1f}]" if share else f" [{low:.{digits}f}, {high:.{digits}f}]"


def _cell(metric: str, slot: dict[str, Any] | None, interval: dict[str, Any] | None = None) -> str:
    if not slot:
        return "—"
    if slot.get("value") is None:
        return f"n/a ({slot['reason']})" if slot.get("reason") else "n/a"
    value = slot["value"]
    share = metric in _SHARES
    text = (f"{value:.1%}" if share else f"{value:.3f}") + _bounds(interval, share)
    if "mean_std" in slot:
        text += f", std {slot['mean_std']:.2f}"
    return f"{text} (n={slot['n']})"


def _mean(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _mean_interval(interval: dict[str, Any] | None) -> str:
    return _bounds(interval, digits=2).strip() or "—"


def build_blocks(metrics: dict[str, Any]) -> list[report.Block]:
    rubric = metrics["rubric"]
    runs = metrics["runs"]
    boot = metrics["bootstrap"]
    blocks: list[report.Block] = [
        report.Heading(1, f"trace-eval evaluation: {rubric['name']} rubric"),
        report.Paragraph(f"Benchmark `{metrics['bench']}` (labels from `{metrics['labels_manifest']}`): "
                         f"{metrics['items']['evaluated']} items judged by at least one run. Rubric "
                         f"`{rubric['version']}`: {rubric['reference'] or 'no reference given'}. Intervals are "
                         f"{boot['confidence']:.0%} {boot['method']}, {boot['resamples']} resamples, "
                         f"seed {boot['seed']}."),
        report.Table(["run", "model", "prompt", "in run", "scored", "failed", "not in benchmark"],
                     [[r["name"], str(r.get("model") or "—"), str(r.get("prompt_version") or "—"),
                       str(r["items"]["in_run"]), str(r["items"]["scored"]), str(r["items"]["failed"]),
                       str(r["items"]["not_in_benchmark"])] for r in runs]),
        report.Heading(2, "Coverage"),
        report.Paragraph("Decided items over items with the human label, per dimension. Every metric below is "
                         "computed on the decided items only; failed items lower coverage and are never scored."),
        report.Table(["run", *metrics["rubric"]["dimensions"]],
                     [[r["name"], *[report.coverage(r["coverage"].get(d)) for d in metrics["rubric"]["dimensions"]]]
                      for r in runs]),
    ]
    blocks += report.cue_blocks(runs)
    for name, description in metrics["definitions"].items():
        blocks += [report.Heading(2, name.replace("_", " ").capitalize()), report.Paragraph(description)]
        if name == "system_means":
            blocks += _system_blocks(runs)
            continue
        columns = list(dict.fromkeys(key for r in runs for key in r["metrics"][name]))
        blocks.append(report.Table(["run", *columns],
                                   [[r["name"], *[_cell(name, r["metrics"][name].get(c),
                                                        r["intervals"].get(name, {}).get(c)) for c in columns]]
                                    for r in runs]))
    if metrics["label_problems"]:
        blocks += [report.Heading(2, "Human labels left out")]
        blocks += [report.Paragraph(problem) for problem in metrics["label_problems"][:FAILED_SHOWN]]
    blocks.append(report.Heading(2, "Failed verdicts"))
    for r in runs:
        failed = r["failed"]
        blocks.append(report.Paragraph(f"**{r['name']}**: {len(failed)} failed." if failed
                                       else f"**{r['name']}**: none failed."))
        if failed:
            blocks.append(report.Table(["id", "status", "reason"],
                                       [[f["id"], str(f["status"]), str(f["reason"] or "")]
                                        for f in failed[:FAILED_SHOWN]]))
        blocks += [report.Paragraph(f"Note: {problem}") for problem in r["problems"]]
    return blocks


def _system_blocks(runs: list[dict[str, Any]]) -> list[report.Block]:
    blocks: list[report.Block] = []
    for r in runs:
        for dimension, slot in r["metrics"]["system_means"].items():
            intervals = r["intervals"].get("system_means", {}).get(dimension, {}).get("systems", {})
            rows = [[system, _mean(v["judge"]), str(v["judge_n"]), _mean(v["human"]), str(v["human_n"]),
                     _mean_interval(intervals.get(system, {}).get("judge")),
                     _mean_interval(intervals.get(system, {}).get("human"))]
                    for system, v in slot["systems"].items()]
            blocks += [report.Paragraph(f"**{r['name']}**, {dimension}:"),
                       report.Table(["system", "judge mean", "n", "human mean", "n", "judge 95% CI", "human 95% CI"],
                                    rows)]
    return blocks
