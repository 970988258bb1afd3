"""`python -m trace_eval calibrate`: per judge, the confidence above which its verdicts are trusted, with a
guarantee of agreement with people (trace_eval/evaluation/calibration.py; docs/trust.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HELP = (
    "pick each judge's confidence threshold on human-labelled pairs so that agreement on the trusted verdicts "
    "reaches --agreement with probability 1 - --delta; writes a calibration file"
)


def _share(text: str) -> float:
    value = float(text)
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {text}")
    return value


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("runs", nargs="+", metavar="RUNDIR", help="judge runs over the labelled calibration pairs")
    p.add_argument("--labels", metavar="BENCH", help="benchmark folder with the human labels (default: the runs')")
    p.add_argument(
        "--agreement", metavar="A", type=_share, default=0.85, help="agreement to guarantee (default: %(default)s)"
    )
    p.add_argument(
        "--delta", metavar="D", type=_share, default=0.1, help="chance the guarantee may fail (default: %(default)s)"
    )
    p.add_argument(
        "--on",
        metavar="LABEL",
        default="overall",
        help="the label calibrated: overall (the fused label) or a dimension (default: %(default)s)",
    )
    p.add_argument(
        "--leave-out",
        metavar="NAME",
        action="append",
        default=[],
        help="leave this annotator's labels out (repeat, or comma-separate); their labels stay in BENCH/labels/",
    )
    p.add_argument(
        "--out",
        metavar="FILE",
        type=Path,
        default=Path("calibration.json"),
        help="the calibration file to write (default: %(default)s)",
    )


def run(args: argparse.Namespace) -> int:
    from trace_eval.commands.label import names_of
    from trace_eval.evaluation import EvaluationError, RunFolderError
    from trace_eval.evaluation.calibration import calibrate_runs
    from trace_eval.evaluation.records import bench_of, load_human_labels, load_runs
    from trace_eval.io import write_json
    from trace_eval.labels.store import LabelError
    from trace_eval.rubrics import RubricError, rubric_of_run

    try:
        runs = load_runs(args.runs)
        rubric = rubric_of_run(runs[0].config)
        if args.on != "overall" and args.on not in rubric.names:
            print(f"error: --on {args.on}: expected overall or one of {', '.join(rubric.names)}", file=sys.stderr)
            return 2
        bench = bench_of(runs, args.labels)
        left_out = names_of(args.leave_out)
        labels = load_human_labels(bench, rubric, left_out)
        from trace_eval.labels.sample import fitting_pairs

        labels, drawn = fitting_pairs(bench, labels)
        if not any(label.get(args.on) is not None for label in labels.labels.values()):
            print(
                f"error: no pair of {bench} has a human {args.on} label, and calibrate needs pairs people "
                f"labelled: label them with `python -m trace_eval label {bench} --annotator NAME`, or give each "
                f'item of the manifest its labels ("label": {{"{args.on}": "1" | "2" | "both_good" | "both_bad"}})',
                file=sys.stderr,
            )
            return 2
        doc = calibrate_runs(runs, labels, args.agreement, args.delta, args.on)
    except (EvaluationError, RunFolderError, RubricError, LabelError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    fitted = sorted({i for run in runs for i in run.raws if labels.labels.get(i, {}).get(args.on) is not None})
    doc["pairs"] = {"fitted_on": fitted, **drawn}
    if left_out:
        doc["annotators_left_out"] = sorted(left_out)
    if drawn.get("limited"):  # a sample the benchmark outgrew, or not labelled through: the guarantee stops short
        doc["guarantee"] += (
            f", and only for pairs of {', '.join(drawn['strata']) or 'no system pair'} (the system pairs sampled "
            "and labelled)"
        )
    write_json(args.out, doc)
    print(f"{doc['guarantee']} (label: {args.on})")
    print(f"  pairs: {drawn['drawn']}")
    for key, judge in doc["judges"].items():
        if judge["threshold"] is None:
            print(f"  {key}: NO THRESHOLD. {judge['reason']}")
            continue
        print(
            f"  {key}: trust confidence >= {judge['threshold']:.4g}; expected coverage {judge['coverage']:.0%} "
            f"of its verdicts ({judge['trusted']} of {judge['n']} calibration verdicts, "
            f"{judge['agreement']:.0%} agreeing; {judge['labelled']} labelled pairs)"
        )
    print(f"  written to {args.out}")
    return 0
