"""`python -m trace_eval leaderboard`: rank the systems the items name, from judge runs and from human labels.

From run folders (`leaderboard RUNDIR ...`, with their benchmark's human labels when it has them), or from a
benchmark's human labels alone (`leaderboard --bench DIR`; its audio need not exist).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import fusion

HELP = (
    "rank the systems the items name: Bradley-Terry scores with intervals, wins and typed ties, acceptability, "
    "win matrices"
)

MIN_RESAMPLES = 1000  # 25 resamples beyond each end of a 95% interval
BY = ("overall", "content", "voice_quality", "paralinguistics", "all")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="*", metavar="RUNDIR", help="judge run folder(s) written by `judge`")
    parser.add_argument(
        "--bench",
        metavar="DIR",
        help="benchmark folder: its items name the systems and hold the human labels "
        "(default: the benchmark the runs judged); alone, the human leaderboard",
    )
    parser.add_argument(
        "--by",
        default="overall",
        metavar="DIMENSION",
        help=f"what to rank on: {', '.join(BY)} (a rubric file's typed-tie dimensions too; default: %(default)s)",
    )
    parser.add_argument(
        "--fusion",
        metavar="POLICY",
        choices=sorted(fusion.POLICIES),
        help="fuse every run's overall label with this policy (default: each run's own); one of: %(choices)s",
    )
    parser.add_argument("--baseline", metavar="SYSTEM", help="add each system's win rate against this one")
    parser.add_argument(
        "--out",
        metavar="DIR",
        help="write leaderboard.json, leaderboard.md, CSV files and pictures here "
        "(default: RUNDIR/leaderboard for one run; otherwise only printed)",
    )
    parser.add_argument(
        "--resamples",
        type=int,
        default=2000,
        help=f"bootstrap resamples (at least {MIN_RESAMPLES}; default: %(default)s)",
    )
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default: %(default)s)")
    parser.add_argument(
        "--trusted-only",
        action="store_true",
        help="count only trusted verdicts: a cascade run's decided ones, or those at or above the thresholds of "
        "--calibration (docs/trust.md)",
    )
    parser.add_argument("--calibration", metavar="FILE", help="calibration file for --trusted-only")


def run(args: argparse.Namespace) -> int:
    from trace_eval.bench import ManifestError
    from trace_eval.evaluation import BootstrapSettings, EvaluationError, RunFolderError
    from trace_eval.evaluation.leaderboard import leaderboard, leaderboard_lines, write_leaderboard
    from trace_eval.rubrics import RubricError

    if args.resamples < MIN_RESAMPLES:
        print(f"error: --resamples must be at least {MIN_RESAMPLES}, got {args.resamples}", file=sys.stderr)
        return 2
    if not args.runs and not args.bench:
        print("error: give judge run folder(s) RUNDIR, or --bench DIR for the human leaderboard", file=sys.stderr)
        return 2
    try:
        board = leaderboard(
            args.runs,
            args.bench,
            args.by,
            args.fusion,
            args.baseline,
            BootstrapSettings(resamples=args.resamples, seed=args.seed),
            trusted_only=args.trusted_only,
            calibration=args.calibration,
        )
    except (
        EvaluationError,
        RunFolderError,
        ManifestError,
        FileNotFoundError,
        fusion.UnknownPolicy,
        RubricError,
    ) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    from trace_eval.judge.runfolder import read_line

    print(read_line(args.runs, board["bench"]))
    for line in leaderboard_lines(board):
        print(line)
    # A trusted-only board never overwrites the board of every verdict: a folder of its own.
    folder = "leaderboard-trusted" if args.trusted_only else "leaderboard"
    out = Path(args.out) if args.out else Path(args.runs[0]) / folder if len(args.runs) == 1 else None
    if out is None:
        print("(pass --out DIR to write leaderboard.json, leaderboard.md, the CSV files and the pictures)")
        return 0
    files = write_leaderboard(board, out)
    print(
        f"wrote {files.json}, {files.markdown}, {files.tables_csv}, {files.matrix_csv}, "
        f"{', '.join(str(p) for p in files.pictures.values())}"
    )
    return 0
