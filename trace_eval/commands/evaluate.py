"""`python -m trace_eval evaluate`: agreement of judge runs with human labels.

The rubric the runs were judged with says what is reported: the report of the
metrics it lists (`trace` for TRACE's whole report; see trace_eval/evaluation/scores.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import fusion

if TYPE_CHECKING:
    from trace_eval.evaluation import BootstrapSettings
    from trace_eval.rubrics import Rubric

HELP = "Score judge runs against human labels: metrics.json, report.md, report.html and pictures"

MIN_RESAMPLES = 2000


def configure(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = "fusion policies:\n" + "\n".join(
        f"  {name:22} {policy.description}" for name, policy in sorted(fusion.POLICIES.items())
    )
    parser.add_argument("runs", nargs="*", metavar="RUNDIR", help="judge run folder(s) written by `judge`")
    parser.add_argument(
        "--labels", metavar="BENCH", help="benchmark folder with the human labels (default: the runs' bench)"
    )
    parser.add_argument(
        "--rubric",
        metavar="NAME|PATH",
        help="the rubric the runs were judged with, for its metrics (default: the one each run records; "
        "trace for runs made before rubrics); a rubric file of the same name may list other metrics",
    )
    parser.add_argument(
        "--fusion",
        metavar="POLICY",
        choices=sorted(fusion.POLICIES),
        help="fuse every run's verdicts with this policy (default: each run's own); one of: %(choices)s",
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        help="where to write the report (default: RUNDIR/evaluation for one run; required for several)",
    )
    parser.add_argument(
        "--oracle",
        metavar="BENCH",
        help="instead of runs: fuse the human dimension labels of BENCH with every policy "
        "and compare with the human overall label",
    )
    parser.add_argument(
        "--resamples", type=int, default=MIN_RESAMPLES, help="bootstrap resamples (at least %(default)s)"
    )
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default: %(default)s)")
    parser.add_argument(
        "--leave-out",
        metavar="NAME",
        action="append",
        default=[],
        help="leave this annotator's labels out of the human labels (repeat, or comma-separate; `label quality` "
        "flags whom); their labels stay in BENCH/labels/",
    )
    parser.add_argument(
        "--calibration",
        metavar="FILE",
        type=Path,
        default=None,
        help="a calibration file (`calibrate`): also report agreement and coverage of the verdicts at or above "
        "each judge's threshold (cascade runs report theirs without it)",
    )


def run(args: argparse.Namespace) -> int:
    from trace_eval.bench import ManifestError
    from trace_eval.evaluation import BootstrapSettings, EvaluationError, RunFolderError, UnknownMetric
    from trace_eval.rubrics import RubricError

    if args.resamples < MIN_RESAMPLES:
        print(f"error: --resamples must be at least {MIN_RESAMPLES}, got {args.resamples}", file=sys.stderr)
        return 2
    settings = BootstrapSettings(resamples=args.resamples, seed=args.seed)
    try:
        if args.oracle:
            if args.runs:
                print("error: give either --oracle BENCH or RUNDIR(s), not both", file=sys.stderr)
                return 2
            if args.rubric and _load_rubric(args.rubric).fusion is None:
                print(
                    f"error: --oracle fuses the human dimension labels; the {args.rubric} rubric has no overall label",
                    file=sys.stderr,
                )
                return 2
            return _oracle(args, settings)
        if not args.runs:
            print("error: give at least one RUNDIR, or --oracle BENCH", file=sys.stderr)
            return 2
        return _evaluate(args, settings)
    except (
        EvaluationError,
        RunFolderError,
        ManifestError,
        FileNotFoundError,
        fusion.UnknownPolicy,
        RubricError,
        UnknownMetric,
    ) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def _load_rubric(name: str) -> Rubric:
    from trace_eval.rubrics import load_rubric

    return load_rubric(name)


def _rubric_of_runs(runs: list[str], given: str | None) -> Rubric:
    from trace_eval.evaluation import rubric_of_runs

    return rubric_of_runs(runs, given)


def _evaluate(args: argparse.Namespace, settings: BootstrapSettings) -> int:
    from trace_eval.commands.label import names_of
    from trace_eval.evaluation import evaluate_folders, report_of
    from trace_eval.judge.confidence import CalibrationFileError
    from trace_eval.labels.store import LabelError

    if args.out:
        out = Path(args.out)
    elif len(args.runs) == 1:
        out = Path(args.runs[0]) / "evaluation"
    else:
        print("error: several runs need --out DIR for the shared report", file=sys.stderr)
        return 2
    rubric = _rubric_of_runs(args.runs, args.rubric)
    if args.fusion and rubric.fusion is None:
        print(f"error: --fusion re-fuses the overall label; the {rubric.name} rubric has none", file=sys.stderr)
        return 2
    from trace_eval.judge.runfolder import read_line

    print(read_line(args.runs, args.labels))
    try:
        files = evaluate_folders(
            args.runs,
            out,
            rubric,
            labels=args.labels,
            policy=args.fusion,
            settings=settings,
            calibration=args.calibration,
            leave_out=names_of(args.leave_out),
        )
    except (CalibrationFileError, LabelError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for line in report_of(rubric).lines(files):
        print(line, file=sys.stderr if line.startswith("warning:") else sys.stdout)
    from trace_eval.evaluation.trust import trust_lines

    for line in trust_lines(files.metrics.get("trust")):
        print(line)
    from trace_eval.evaluation.people import people_lines

    for line in people_lines(files.metrics.get("people")):
        print(line)
    if "leaderboard" in files.metrics:  # the items name their systems
        from trace_eval.evaluation.leaderboard import leaderboard_lines

        for line in leaderboard_lines(files.metrics["leaderboard"], tables=False):
            print(f"leaderboard: {line}")
    print(f"wrote {files.metrics_path}, {files.markdown_path}, {files.html_path}")
    return 0


def _oracle(args: argparse.Namespace, settings: BootstrapSettings) -> int:
    from trace_eval.evaluation import run_oracle
    from trace_eval.evaluation.report import render_oracle_markdown
    from trace_eval.io import write_json
    from trace_eval.rubrics import DEFAULT_RUBRIC

    result = run_oracle(args.oracle, _load_rubric(args.rubric or DEFAULT_RUBRIC), settings)
    print(render_oracle_markdown(result, result["bench"]))
    if args.out:
        path = Path(args.out) / "metrics.json"
        write_json(path, result)
        print(f"wrote {path}")
    return 0
