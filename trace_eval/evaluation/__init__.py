"""Evaluation of judge runs against human labels: metrics.json, report.md,
report.html and pictures. `evaluate_folders` is what `python -m trace_eval evaluate` runs
for TRACE runs; `evaluate_rubric_folders` reports the metrics other rubrics list
(registered by name in `scores`)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from trace_eval.io import atomic_write_text, write_json

from .analysis import EvaluationError, evaluate_runs
from .bootstrap import DEFAULT_BOOTSTRAP, BootstrapSettings
from .oracle import oracle
from .records import JudgeRun, RunFolderError, load_human_labels, load_run, unique_names
from .report import EvaluationFiles
from .rubric_report import evaluate_rubric_folders, evaluate_rubric_runs
from .scores import METRICS, UnknownMetric

__all__ = [
    "BootstrapSettings",
    "EvaluationError",
    "EvaluationFiles",
    "JudgeRun",
    "METRICS",
    "RunFolderError",
    "UnknownMetric",
    "evaluate_folders",
    "evaluate_rubric_folders",
    "evaluate_rubric_runs",
    "evaluate_runs",
    "load_human_labels",
    "load_run",
    "oracle",
    "run_oracle",
]


def _bench_of(runs: list[JudgeRun], labels: str | Path | None) -> Path:
    if labels is not None:
        return Path(labels)
    benches = {run.bench for run in runs}
    if None in benches:
        missing = [run.name for run in runs if run.bench is None]
        raise EvaluationError(f"run(s) {', '.join(missing)}: config.json names no bench; pass --labels BENCH")
    if len(benches) > 1:
        raise EvaluationError(f"the runs judged different benchmarks ({', '.join(sorted(benches))}); pass --labels BENCH")
    return Path(benches.pop())


def evaluate_folders(
    run_dirs: list[str | Path],
    out: str | Path,
    labels: str | Path | None = None,
    policy: str | None = None,
    settings: BootstrapSettings = DEFAULT_BOOTSTRAP,
) -> EvaluationFiles:
    """Evaluate judge run folders against the benchmark's human labels and write the report into `out`."""
    from . import figures, report  # matplotlib only when a report is written

    paths = [Path(p) for p in run_dirs]
    runs = [load_run(path, name) for path, name in zip(paths, unique_names(paths))]
    bench = _bench_of(runs, labels)
    human, manifest = load_human_labels(bench)
    metrics = {
        "bench": str(Path(bench).resolve()),
        "labels_manifest": str(manifest),
        "fusion_override": policy,
        **evaluate_runs(runs, human, policy, settings),
    }
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    pictures = figures.write_figures(metrics, out)
    blocks = report.build_blocks(metrics, metrics["bench"], metrics["labels_manifest"])
    metrics_path, markdown_path, html_path = out / "metrics.json", out / "report.md", out / "report.html"
    write_json(metrics_path, metrics)
    atomic_write_text(markdown_path, report.render_markdown(blocks))
    atomic_write_text(html_path, report.render_html(blocks, pictures))
    return EvaluationFiles(metrics, metrics_path, markdown_path, html_path, pictures)


def run_oracle(bench: str | Path, settings: BootstrapSettings = DEFAULT_BOOTSTRAP) -> dict[str, Any]:
    """`oracle` on the human labels of a benchmark folder (only the manifest is read)."""
    human, manifest = load_human_labels(bench)
    return {"bench": str(Path(bench).resolve()), "labels_manifest": str(manifest), **oracle(human, settings)}
