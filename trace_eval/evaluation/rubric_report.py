"""The report of a rubric's metrics (scores.py), per run and dimension: what every rubric whose
metrics are not a whole report of their own gets (all but TRACE's).

Every slot a metric gives columns for gets a bootstrap interval from the metrics engine, beside
the metrics in the run's "intervals" (same keys): one set of resamples over the evaluated items
serves every run, so the intervals of different runs are paired, as in TRACE's report.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from trace_eval.rubrics import Rubric

from . import positions, report, scores
from .bootstrap import DEFAULT_BOOTSTRAP, BootstrapSettings
from .engine import Estimates
from .records import OVERALL, UNSCORED, EvaluationError, HumanLabels, JudgeRun, RunRecord, read_record

FORMAT_VERSION = 1
FAILED_SHOWN = report.FAILED_SHOWN
# Metrics shown as percentages; the others as plain numbers.
_SHARES = {"accuracy", "agreement", "position_consistency", "self_consistency"}


def _samples(raw: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        s["verdicts"]
        for s in raw.get("samples") or []
        if isinstance(s, dict)
        and s.get("status") == "ok"
        and s.get("order", "original") == "original"
        and isinstance(s.get("verdicts"), dict)
    ]


def _labelled(rubric: Rubric) -> tuple[str, ...]:
    """What human labels are compared with: the dimensions, and the overall label of a rubric that fuses."""
    return (*rubric.names, OVERALL) if rubric.fusion else rubric.names


def _pairwise(rubric: Rubric) -> tuple[str, ...]:
    """The labels that name a winner by its position: pairwise dimensions, and a fusing rubric's overall."""
    return (*(d.name for d in rubric.dimensions if d.labels.pairwise), *((OVERALL,) if rubric.fusion else ()))


def _with_overall(record: RunRecord, rubric: Rubric, policy: str | None) -> dict[str, Any] | None:
    """The record's labels, with its overall label under `policy` for a rubric that fuses."""
    if record.verdicts is None or policy is None:
        return record.verdicts
    return {**record.verdicts, OVERALL: rubric.require_fusion().fuse(policy, record.verdicts)}


def _run_block(
    run: JudgeRun,
    rubric: Rubric,
    human: HumanLabels,
    ids: list[str],
    index: int,
    estimates: Estimates,
    override: str | None,
) -> dict[str, Any]:
    policy = run.fusion_policy(override, rubric) if rubric.fusion else None
    items, no_verdict = [], []
    by_status: dict[str, int] = {}
    for result in run.raws.values():
        status = str(result.get("status") or "error")
        by_status[status] = by_status.get(status, 0) + 1
    unscored: Counter[str] = Counter()
    for item_id in ids:
        raw = run.raws.get(item_id)
        if raw is None:
            continue
        record = read_record(raw, rubric)
        judged = _with_overall(record, rubric, policy)
        if judged is None:  # a dimension left undetermined still scores the others: only these are excluded
            no_verdict.append({"id": item_id, "status": record.unscored, "reason": record.reason})
            unscored[record.unscored or "failed"] += 1  # never None without verdicts
        orders = raw.get("orders") if isinstance(raw.get("orders"), dict) else None
        items.append(
            scores.ItemScores(
                item_id, human.systems.get(item_id), judged, human.labels.get(item_id, {}), _samples(raw), orders
            )
        )
    metrics = scores.compute(rubric, items)
    columns = scores.compute_columns(rubric, items)
    judged_by_id = {item.id: item.judged or {} for item in items}
    coverage = {}
    for d in _labelled(rubric):
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
            **{kind: unscored[kind] for kind in UNSCORED},
            "by_status": dict(sorted(by_status.items())),
            "not_in_benchmark": sum(i not in human.labels for i in run.raws),
            "not_judged": sum(i not in run.raws for i in ids),
        },
        "coverage": coverage,
        "positions": {
            key: positions.split((item.judged or {}).get(key) for item in items) for key in _pairwise(rubric)
        },
        "metrics": metrics,
        "intervals": {name: estimates.intervals((index, name), metrics[name], columns[name]) for name in columns},
        "no_verdict": no_verdict,
        "cues": run.summary.get("cues"),
        "problems": list(run.problems),
    }


def evaluate_rubric_runs(
    runs: list[JudgeRun],
    rubric: Rubric,
    human: HumanLabels,
    settings: BootstrapSettings = DEFAULT_BOOTSTRAP,
    policy: str | None = None,
) -> dict[str, Any]:
    """metrics.json of runs judged with `rubric` against the human labels; `policy` re-fuses the overall
    label of a rubric that fuses (default: the label each run recorded)."""
    if not runs:
        raise EvaluationError("no judge run to evaluate")
    judged = set().union(*(run.raws for run in runs))
    ids = [i for i in human.labels if i in judged]
    if not ids:
        raise EvaluationError(
            "no id of the judge run(s) is in the benchmark's manifest; "
            "check --labels points at the benchmark that was judged"
        )
    estimates = Estimates(ids)
    blocks = [_run_block(run, rubric, human, ids, index, estimates, policy) for index, run in enumerate(runs)]
    estimates.fill(settings)
    human_positions = {
        key: positions.human_split([human.labels[i][key] for i in ids if key in human.labels[i]])
        for key in _pairwise(rubric)
    }
    lopsided = [positions.warning(found, f"human {key} winners") for key, found in human_positions.items()]
    return {
        "format_version": FORMAT_VERSION,
        "rubric": {
            "name": rubric.name,
            "version": rubric.id,
            "file": str(rubric.path) if rubric.path else None,
            "reference": rubric.reference,
            "dimensions": {d.name: d.labels.kind for d in rubric.dimensions},
        },
        "items": {
            "evaluated": len(ids),
            "in_benchmark": len(human.labels),
            "with_human_label": {d: sum(d in human.labels[i] for i in ids) for d in _labelled(rubric)},
        },
        "bootstrap": settings.describe(),
        "positions": {"human": human_positions, "warnings": [w for w in lopsided if w]},
        "runs": blocks,
        "label_problems": human.problems,
        "definitions": {name: scores.METRICS[name].description for name in rubric.metrics},
    }


# -- report -----------------------------------------------------------------------------


def _bounds(interval: dict[str, Any] | None, share: bool = False, digits: int = 3) -> str:
    """ " [65.0–77.1]" for a share, " [0.412, 0.730]" otherwise; "" without an interval."""
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
        report.Paragraph(
            f"Benchmark `{metrics['bench']}` (labels from `{metrics['labels_manifest']}`): "
            f"{metrics['items']['evaluated']} items judged by at least one run. Rubric "
            f"`{rubric['version']}`: {rubric['reference'] or 'no reference given'}. Intervals are "
            f"{boot['confidence']:.0%} {boot['method']}, {boot['resamples']} resamples, "
            f"seed {boot['seed']}."
        ),
        report.Table(
            ["run", "model", "prompt", "in run", "scored", *UNSCORED, "not in benchmark"],
            [
                [
                    r["name"],
                    str(r.get("model") or "—"),
                    str(r.get("prompt_version") or "—"),
                    str(r["items"]["in_run"]),
                    str(r["items"]["scored"]),
                    *[str(r["items"][kind]) for kind in UNSCORED],
                    str(r["items"]["not_in_benchmark"]),
                ]
                for r in runs
            ],
        ),
        report.Heading(2, "Coverage"),
        report.Paragraph(
            "Decided items over items with the human label, per dimension. Every metric below is "
            "computed on the decided items only; items without a verdict lower coverage and are never "
            "scored."
        ),
        report.Table(
            ["run", *metrics["rubric"]["dimensions"]],
            [
                [r["name"], *[report.coverage(r["coverage"].get(d)) for d in metrics["rubric"]["dimensions"]]]
                for r in runs
            ],
        ),
    ]
    if metrics["positions"]["human"]:
        blocks += positions.blocks(metrics["positions"]["human"], runs, metrics["positions"]["warnings"])
    blocks += report.cue_blocks(runs)
    for name, description in metrics["definitions"].items():
        blocks += [report.Heading(2, name.replace("_", " ").capitalize()), report.Paragraph(description)]
        if name == "system_means":
            blocks += _system_blocks(runs)
            continue
        columns = list(dict.fromkeys(key for r in runs for key in r["metrics"][name]))
        blocks.append(
            report.Table(
                ["run", *columns],
                [
                    [
                        r["name"],
                        *[_cell(name, r["metrics"][name].get(c), r["intervals"].get(name, {}).get(c)) for c in columns],
                    ]
                    for r in runs
                ],
            )
        )
    if metrics["label_problems"]:
        blocks += [report.Heading(2, "Human labels left out")]
        blocks += [report.Paragraph(problem) for problem in metrics["label_problems"][:FAILED_SHOWN]]
    return blocks + report.no_verdict_blocks(runs)


def _system_blocks(runs: list[dict[str, Any]]) -> list[report.Block]:
    blocks: list[report.Block] = []
    for r in runs:
        for dimension, slot in r["metrics"]["system_means"].items():
            intervals = r["intervals"].get("system_means", {}).get(dimension, {}).get("systems", {})
            rows = [
                [
                    system,
                    _mean(v["judge"]),
                    str(v["judge_n"]),
                    _mean(v["human"]),
                    str(v["human_n"]),
                    _mean_interval(intervals.get(system, {}).get("judge")),
                    _mean_interval(intervals.get(system, {}).get("human")),
                ]
                for system, v in slot["systems"].items()
            ]
            blocks += [
                report.Paragraph(f"**{r['name']}**, {dimension}:"),
                report.Table(["system", "judge mean", "n", "human mean", "n", "judge 95% CI", "human 95% CI"], rows),
            ]
    return blocks


class MetricsReport:
    """The report of the metrics a rubric lists."""

    def evaluate(
        self, runs: list[JudgeRun], rubric: Rubric, human: HumanLabels, policy: str | None, settings: BootstrapSettings
    ) -> dict[str, Any]:
        return evaluate_rubric_runs(runs, rubric, human, settings, policy)

    def figures(self, metrics: dict[str, Any], out: Path) -> dict[str, Path]:
        return {}

    def blocks(self, metrics: dict[str, Any]) -> list[report.Block]:
        return build_blocks(metrics)

    def lines(self, files: report.EvaluationFiles) -> list[str]:
        """What `evaluate` prints: each run's metrics in a line, what was left out, and the label problems."""
        metrics = files.metrics
        items, name = metrics["items"], metrics["rubric"]["name"]
        lines = []
        for run in metrics["runs"]:
            shown = [line for metric, slots in run["metrics"].items() if (line := _headline(metric, slots))]
            lines.append(f"{run['name']} ({name}): {'; '.join(shown) or 'no metric computable'}")
            lines.append(f"  {report.excluded(run['items'], items['in_benchmark'])}")
        labelled = items.get("with_human_label", {})
        if any(n < items["evaluated"] for n in labelled.values()):  # a dimension's metrics use its labelled items
            lines.append(
                f"  human labels among the {items['evaluated']} judged manifest item(s): "
                + ", ".join(f"{dim} {n}" for dim, n in labelled.items())
            )
        if metrics.get("label_problems"):
            lines.append(
                f"  {len(metrics['label_problems'])} human label(s) outside their label space, left out "
                f"(listed in {files.markdown_path})"
            )
        return lines + [f"warning: {w}" for w in metrics["positions"]["warnings"]]


METRICS_REPORT = MetricsReport()


def report_of(rubric: Rubric) -> scores.Report:
    """The report of the rubric's metrics: the whole report one of them is, else the report of them all."""
    return scores.own_report(rubric) or METRICS_REPORT


def _headline(metric: str, slots: dict) -> str | None:
    """One metric in a line: its value over every dimension, else each dimension's (tables are in the report)."""
    if (slots.get("all") or {}).get("value") is not None:
        return f"{metric} {slots['all']['value']:.3f}"
    values = [f"{dim} {slot['value']:.3f}" for dim, slot in slots.items() if slot.get("value") is not None]
    return f"{metric} {', '.join(values)}" if values else None
