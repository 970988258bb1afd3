"""`python -m trace_eval export preferences RUNDIR --out DIR`: a judge run's verdicts as training data."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HELP = "write a judge run's verdicts that name a winner as chosen/rejected pairs (a Hugging Face dataset)"


def configure(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Chosen/rejected pairs from the verdicts that name a winner: a dataset that datasets.load_from_disk(DIR) "
        "and load_dataset('parquet', ...) read with Audio columns, a JSONL with the audio as paths, and a "
        "dataset card (README.md). Ties and undetermined pairs are left out and counted."
    )
    p.add_argument(
        "kind",
        choices=("preferences",),
        metavar="preferences",
        help="what to export: preferences, chosen/rejected pairs for preference training (DPO and the like)",
    )
    p.add_argument("run_dir", metavar="RUNDIR", type=Path, help="run folder written by `judge`")
    p.add_argument("--out", metavar="DIR", type=Path, required=True, help="folder of the dataset")
    p.add_argument(
        "--trusted-only",
        action="store_true",
        help="only the verdicts the calibration trusts (a cascade run's decided ones need no --calibration)",
    )
    p.add_argument(
        "--calibration",
        metavar="FILE",
        type=Path,
        default=None,
        help="the thresholds written by `python -m trace_eval calibrate`, for --trusted-only",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the files of an export already in --out (without it, a folder that holds anything is refused)",
    )
    p.add_argument(
        "--on",
        metavar="overall|DIM",
        default="overall",
        help="the label that names the winner: the fused overall label, or one dimension (e.g. content) "
        "(default: %(default)s)",
    )


def run(args: argparse.Namespace) -> int:
    from trace_eval.bench import ManifestError
    from trace_eval.evaluation import EvaluationError, RunFolderError
    from trace_eval.export import ExportError, export_preferences
    from trace_eval.judge.confidence import CalibrationFileError
    from trace_eval.rubrics import RubricError

    if args.calibration and not args.trusted_only:
        print("error: --calibration goes with --trusted-only", file=sys.stderr)
        return 2
    try:
        written = export_preferences(
            args.run_dir,
            args.out,
            trusted_only=args.trusted_only,
            calibration=args.calibration,
            on=args.on,
            overwrite=args.overwrite,
        )
    except (
        ExportError,
        EvaluationError,
        RunFolderError,
        ManifestError,
        CalibrationFileError,
        RubricError,
        FileNotFoundError,
    ) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    coverage = "" if written.coverage is None else f" ({written.coverage:.0%})"
    print(f"{written.rows} preference pairs of {written.pairs}{coverage} on the {written.on} label")
    for why, n in written.left_out.items():
        print(f"  left out ({why}): {n}")
    print(f"  dataset: {written.out} (datasets.load_from_disk), card: {written.out / 'README.md'}")
    return 0 if written.rows else 1
