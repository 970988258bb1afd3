"""Evaluation of judge runs against human labels: metrics.json, report.md, report.html and
pictures. `evaluate_folders` is what `python -m trace_eval evaluate` runs: the rubric's
`metrics` (registered by name in `scores`) say what is computed and which sections the
report has; TRACE's report is the metric `trace` (analysis). Where the items name their
systems, the report adds their leaderboards (leaderboard.py, whose `leaderboard` function
is what `python -m trace_eval leaderboard` writes)."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any

from trace_eval.judge.runfolder import RunFolderError, view_page
from trace_eval.rubrics import Rubric

from .analysis import evaluate_runs
from .bootstrap import DEFAULT_BOOTSTRAP, BootstrapSettings
from .leaderboard import leaderboard_blocks, systems_section
from .oracle import oracle
from .records import EvaluationError, HumanLabels, JudgeRun, bench_of, load_human_labels, load_run, load_runs
from .report import EvaluationFiles, Paragraph, write_report
from .rubric_report import evaluate_rubric_runs, report_of
from .scores import METRICS, UnknownMetric
from .trust import risk_coverage_figure, trust_blocks, trust_section

__all__ = [
    "BootstrapSettings",
    "EvaluationError",
    "EvaluationFiles",
    "HumanLabels",
    "JudgeRun",
    "METRICS",
    "RunFolderError",
    "UnknownMetric",
    "evaluate_folders",
    "evaluate_rubric_runs",
    "evaluate_runs",
    "load_human_labels",
    "load_run",
    "oracle",
    "report_of",
    "rubric_of_runs",
    "run_oracle",
]


def evaluate_folders(
    run_dirs: list[str | Path],
    out: str | Path,
    rubric: Rubric,
    labels: str | Path | None = None,
    policy: str | None = None,
    settings: BootstrapSettings = DEFAULT_BOOTSTRAP,
    calibration: Path | None = None,
    leave_out: frozenset[str] | set[str] = frozenset(),
) -> EvaluationFiles:
    """Evaluate run folders judged with `rubric` against the benchmark's human labels and write the report
    of the rubric's metrics into `out`. `policy` re-fuses every run's verdicts (rubrics that fuse).
    Runs whose verdicts carry confidences add the trusted verdicts (trust.py; `calibration` gives the
    thresholds of single-judge runs). `leave_out`: annotators whose labels are not counted."""
    report = report_of(rubric)
    runs = load_runs(run_dirs)
    bench = bench_of(runs, labels)
    human = load_human_labels(bench, rubric, leave_out)
    metrics = {
        "bench": str(bench.resolve()),
        "labels_manifest": str(human.manifest),
        **({"annotators_left_out": sorted(leave_out)} if leave_out else {}),
        **report.evaluate(runs, rubric, human, policy, settings),
    }
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    # The report names files relative to its own folder (metrics.json keeps them whole).
    shown = {"bench": _relative(bench, out), "labels_manifest": _relative(human.manifest, out)}
    blocks, pictures = report.blocks({**metrics, **shown}), report.figures(metrics, out)
    blocks.insert(1, audit_paragraph(run_dirs, out))  # under the title: where to see every pair
    # Items that name their systems: the leaderboards of every run and of the human labels, on every dimension.
    board = systems_section(runs, human, rubric, policy, settings, bench)
    if board is not None:
        from .figures import write_leaderboard_figures

        metrics["leaderboard"] = board
        blocks += leaderboard_blocks({**board, "labels_manifest": shown["labels_manifest"]}, level=2)
        pictures = {**pictures, **write_leaderboard_figures(board, out)}
    trusted = trust_section(runs, human, settings, calibration) if rubric.fusion else None
    if trusted is not None:
        metrics["trust"] = trusted
        blocks += trust_blocks(trusted)
        if any(run["risk_coverage"] for run in trusted["runs"]):
            pictures = {**pictures, "risk_coverage.png": risk_coverage_figure(trusted, out / "risk_coverage.png")}
    # Several people labelled the items (labels/ beside the manifest): the ceiling beside each judge.
    from .people import people_blocks, people_section

    people = people_section(runs, human, rubric, policy, settings, bench)
    if people is not None:
        metrics["people"] = people
        blocks += people_blocks(people)
    return write_report(out, metrics, blocks, pictures)


def audit_paragraph(run_dirs: list[str | Path], out: Path) -> Paragraph:
    """Where the audit page of the runs is (`python -m trace_eval view`), or how to write it."""
    pages = [view_page(run) for run in run_dirs if view_page(run).is_file()]
    if len(run_dirs) == 1 and pages:
        link = Path(os.path.relpath(pages[0].resolve(), out.resolve())).as_posix()
        return Paragraph(
            f"Every pair, with its audio, cues, verdicts, reasons and human labels: [the audit page]({link})."
        )
    runs = " ".join(shlex.quote(_relative(run, out)) for run in run_dirs)
    more = " --out DIR" if len(run_dirs) > 1 else ""
    return Paragraph(
        f"Every pair, with its audio, cues, verdicts, reasons and human labels: "
        f"`python -m trace_eval view {runs}{more}` writes a page that opens from disk "
        "(paths in this report are relative to its folder)."
    )


def _relative(path: str | Path, out: Path) -> str:
    """`path` relative to the report's folder: no path of this machine in the report."""
    return Path(os.path.relpath(Path(path).resolve(), out.resolve())).as_posix()


def run_oracle(bench: str | Path, rubric: Rubric, settings: BootstrapSettings = DEFAULT_BOOTSTRAP) -> dict[str, Any]:
    """`oracle` on the human labels of a benchmark folder (only the manifest is read)."""
    human = load_human_labels(bench, rubric)
    return {
        "bench": str(Path(bench).resolve()),
        "labels_manifest": str(human.manifest),
        **oracle(human.labels, rubric, settings),
    }


def rubric_of_runs(runs: list[str], given: str | None = None) -> Rubric:
    """The rubric to evaluate `runs` with: `given` (a name or a rubric file), else the one every run records;
    runs of another rubric are refused."""
    from trace_eval.judge.runfolder import read_config
    from trace_eval.rubrics import DEFAULT_RUBRIC, load_rubric, rubric_of_run

    configs = {run: read_config(run) for run in runs}  # the results are read once, when evaluated
    recorded = {run: config.get("rubric") or DEFAULT_RUBRIC for run, config in configs.items()}
    rubric = load_rubric(given) if given else rubric_of_run(configs[runs[0]])
    others = [f"{run} ({name})" for run, name in recorded.items() if name != rubric.name]
    if others:
        raise EvaluationError(
            f"the runs were judged with other rubrics than {rubric.name}: {', '.join(others)}; "
            "evaluate runs of one rubric together"
        )
    return rubric
