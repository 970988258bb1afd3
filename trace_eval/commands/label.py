"""`python -m trace_eval label BENCH --annotator NAME`: the labelling page (trace_eval/labels/server.py), and
the label store's import, export and people's agreement (trace_eval/labels/; docs/labelling.md)."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

HELP = (
    "label pairs in the browser (HCoT: a verdict and reason per dimension, then overall), blind and keyboard first; "
    "also: label import BENCH FILE, label export BENCH, label agreement BENCH"
)
ACTIONS = ("import", "export", "agreement")


def configure(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = """\
forms:
  label BENCH --annotator NAME     serve the page; prints its URL (with the access token)
  label import BENCH FILE          labels from CSV or JSON (id or audio paths, annotator, a column per label)
  label export BENCH [--out FILE]  every annotator's newest labels in the manifest's ids (CSV or JSON)
  label agreement BENCH            people's agreement with each other (the ceiling of a judge's agreement)

Labels are kept in BENCH/labels/<annotator>.jsonl; evaluate, calibrate, leaderboard and view read them."""
    p.add_argument("words", nargs="+", metavar="BENCH", help="the benchmark folder (after import, export or agreement)")
    p.add_argument("--annotator", metavar="NAME", help="who labels (the file labels/NAME.jsonl); import: the default")
    p.add_argument("--rubric", metavar="NAME|PATH", default=None, help="the rubric whose dimensions are labelled")
    p.add_argument(
        "--port",
        type=int,
        default=None,
        help="the port to serve on (0: a free one; default: this annotator's port last time, else a free one)",
    )
    p.add_argument(
        "--token",
        metavar="TOKEN",
        default=None,
        help="the page's access token (default: this annotator's token last time, kept in "
        "BENCH/labels/NAME.page.json, else a new one), so pages left open keep working after a restart",
    )
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to listen on (default: %(default)s; another serves the page to the network)",
    )
    p.add_argument(
        "--sample",
        type=int,
        metavar="N",
        help="label a seeded random sample of N pairs, stratified by system pair, recorded in BENCH/labels/sample.json",
    )
    p.add_argument("--seed", type=int, default=0, help="the sample's seed (default: %(default)s)")
    p.add_argument(
        "--split",
        action="store_true",
        help="halve the sample: calibration pairs for `calibrate`, evaluation pairs for `evaluate --calibration`",
    )
    p.add_argument("--out", metavar="FILE", type=Path, help="export: the file (.csv or .json); agreement: a JSON file")
    p.add_argument("--resamples", type=int, default=1000, help="agreement: bootstrap resamples (default: %(default)s)")


def run(args: argparse.Namespace) -> int:
    from trace_eval.bench import ManifestError, load_benchmark
    from trace_eval.labels.store import LabelError
    from trace_eval.rubrics import DEFAULT_RUBRIC, RubricError, load_rubric

    action = args.words[0] if args.words[0] in ACTIONS else None
    rest = args.words[1:] if action else args.words
    expected = 2 if action == "import" else 1
    if len(rest) != expected:
        form = {"import": "label import BENCH FILE", None: "label BENCH --annotator NAME"}.get(
            action, f"label {action} BENCH"
        )
        print(f"error: expected `{form}`", file=sys.stderr)
        return 2
    try:
        rubric = load_rubric(args.rubric or DEFAULT_RUBRIC)
        bench = load_benchmark(_bench_of(rest[0]), check_audio=False)
        if action == "import":
            return _import(bench, rubric, Path(rest[1]), args.annotator)
        if action == "export":
            return _export(bench, rubric, args.out)
        if action == "agreement":
            return _agreement(bench, rubric, args)
        return _serve(bench, rubric, args)
    except (LabelError, ManifestError, RubricError, FileNotFoundError, json.JSONDecodeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def _bench_of(folder: str) -> str:
    """`folder`, unless it is a judge run folder: then an error that names the run's benchmark."""
    from trace_eval.judge.runfolder import RESULTS, RunFolderError, read_config

    path = Path(folder)
    if (path / "manifest.json").is_file() or (path / "manifest.jsonl").is_file() or not (path / RESULTS).is_file():
        return folder
    try:
        bench = read_config(path).get("bench")
    except RunFolderError:
        bench = None
    named = f": it judged {bench}; give that folder instead" if bench else " (its config.json names no benchmark)"
    raise FileNotFoundError(f"{folder} is a judge run folder, not a benchmark folder{named}")


def _started_as() -> str | None:
    """This command as it was typed (for the page to show when the server stops), when it was typed."""
    words = sys.argv[1:]
    return shlex.join(["python", "-m", "trace_eval", *words]) if words[:1] == ["label"] else None


def _import(bench, rubric, path: Path, annotator: str | None) -> int:
    from trace_eval.labels.store import import_labels

    stored, problems = import_labels(bench, rubric, path, annotator)
    if problems:
        print(f"error: {path}: {len(problems)} problem(s), nothing imported:", file=sys.stderr)
        for line in problems[:50]:
            print(f"  {line}", file=sys.stderr)
        return 2
    print(f"imported {stored} label record(s) into {bench.root / 'labels'}")
    return 0


def _export(bench, rubric, out: Path | None) -> int:
    from trace_eval.labels.store import export_labels

    out = out or Path("labels.csv")
    rows = export_labels(bench, rubric, out)
    print(f"exported {rows} row(s) to {out}")
    return 0


def _agreement(bench, rubric, args: argparse.Namespace) -> int:
    from trace_eval.evaluation.records import load_human_labels
    from trace_eval.io import write_json
    from trace_eval.labels.agreement import ceiling, position_bias
    from trace_eval.labels.store import label_spaces, read_people

    human = load_human_labels(bench.root, rubric)
    report = ceiling(human.annotators, label_spaces(rubric), resamples=args.resamples, seed=args.seed)
    report["position_bias"] = position_bias(read_people(bench, rubric).shown, human.annotators)
    report["disagreements"] = human.disagreements
    for line in ceiling_lines(report):
        print(line)
    for problem in human.problems:
        print(f"warning: {problem}", file=sys.stderr)
    if args.out:
        write_json(args.out, report)
        print(f"wrote {args.out}")
    return 0


def ceiling_lines(report: dict) -> list[str]:
    """People's agreement in a few lines."""
    from trace_eval.labels.agreement import describe

    lines = [f"people: {len(report['annotators'])} annotator(s): {', '.join(report['annotators']) or 'none'}"]
    for dimension, section in report["dimensions"].items():
        if section.get("reason"):
            lines.append(f"  {dimension}: {section['reason']}")
            continue
        kappas = "; ".join(f"{a}/{b} {describe(k)}" for k in section["cohen_kappa"] for a, b in [k["annotators"]])
        lines.append(
            f"  {dimension} ({section['items']} items): raw agreement {describe(section['raw_agreement'])}, "
            f"Krippendorff's alpha {describe(section['krippendorff_alpha'])}, each against the others' majority "
            f"{describe(section['leave_one_out'])}; Cohen's kappa {kappas or 'none'}"
        )
    bias = report.get("position_bias")
    if bias and bias.get("share_first") is not None:
        lines.append(
            f"  position: response shown first chosen in {bias['share_first']:.0%} of {bias['winners']} "
            "labels naming a winner (50%: no bias)"
        )
    if report.get("disagreements") is not None:
        lines.append(f"  disagreements: {len(report['disagreements'])} (item, dimension) with differing labels")
    return lines


def _serve(bench, rubric, args: argparse.Namespace) -> int:
    from trace_eval.labels.sample import draw
    from trace_eval.labels.server import LabelSession, serve

    if not args.annotator:
        print("error: --annotator NAME is needed: labels are kept per annotator", file=sys.stderr)
        return 2
    if args.split and args.sample is None:
        print("error: --split halves a sample: give --sample N too", file=sys.stderr)
        return 2
    ids = None
    if args.sample is not None:
        drawn = draw(bench, args.sample, args.seed, args.split)
        ids = drawn["ids"]
        print(
            f"sample: {len(ids)} pair(s), seed {drawn['seed']}, stratified by system pair "
            f"({len(drawn['strata'])} strata){'; split into calibration and evaluation halves' if args.split else ''}",
            file=sys.stderr,
        )
    session = LabelSession(bench.root, args.annotator, rubric, ids, restart=_started_as())
    print(session.who(), file=sys.stderr)
    try:
        serve(session, args.host, args.port, args.token)
    except KeyboardInterrupt:
        pass
    return 0
