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
    "also: label BENCH --team NAMES (one server for a team, gold pairs, a lead's page), label import BENCH FILE, "
    "label export BENCH, label agreement BENCH, label gold BENCH FILE, label quality BENCH"
)
ACTIONS = ("import", "export", "agreement", "gold", "quality")


def configure(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = """\
forms:
  label BENCH --annotator NAME     serve the page; prints its URL (with the access token)
  label BENCH --team ana,ben,cleo  one server for a team: prints the lead's URL, then each annotator's
  label gold BENCH FILE            mark pairs of your own as gold, with their answer (id, a column per label)
  label quality BENCH              each annotator's quality: gold accuracy, agreement, position bias, time
  label import BENCH FILE          labels from CSV or JSON (id or audio paths, annotator, a column per label)
  label export BENCH [--out FILE]  every annotator's newest labels in the manifest's ids, with their quality
                                   (CSV, JSON, JSON lines, or a datasets table: a folder)
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
    p.add_argument(
        "--extend",
        action="store_true",
        help="with --sample: draw over the pairs the recorded sample could not have drawn (added since), at its "
        "rate, keeping every pair and label already drawn",
    )
    team = p.add_argument_group("a team on one server (label BENCH --team NAMES)")
    team.add_argument(
        "--team",
        metavar="NAMES",
        help="the annotators, comma-separated: one server, a link each, and a page for the lead",
    )
    team.add_argument(
        "--overlap", type=int, default=2, help="how many annotators label each pair (default: %(default)s)"
    )
    team.add_argument(
        "--gold-rate",
        type=float,
        default=0.1,
        help="the share of pairs handed out that are gold pairs, answer known (default: %(default)s; 0: none)",
    )
    team.add_argument(
        "--gold-pairs", type=int, default=30, help="gold pairs made from the benchmark's audio (default: %(default)s)"
    )
    team.add_argument(
        "--bar",
        type=float,
        default=0.7,
        help="gold accuracy below which an annotator is flagged (default: %(default)s)",
    )
    team.add_argument(
        "--least-sure",
        nargs="+",
        metavar="RUNDIR",
        help="after the random --sample, offer the pairs these judge runs are least sure of (kept apart from "
        "calibration)",
    )
    p.add_argument(
        "--out",
        metavar="FILE",
        type=Path,
        help="export: the file (.csv, .json, .jsonl) or a folder (a datasets table); agreement, quality: a JSON file",
    )
    p.add_argument(
        "--format", choices=("csv", "json", "jsonl", "datasets"), help="export: the format (default: by --out)"
    )
    p.add_argument(
        "--leave-out",
        metavar="NAME",
        action="append",
        default=[],
        help="agreement: leave this annotator's labels out (repeat, or comma-separate)",
    )
    p.add_argument("--resamples", type=int, default=1000, help="agreement: bootstrap resamples (default: %(default)s)")


def run(args: argparse.Namespace) -> int:
    from trace_eval.bench import ManifestError, load_benchmark
    from trace_eval.labels.store import LabelError
    from trace_eval.rubrics import DEFAULT_RUBRIC, RubricError, load_rubric

    action = args.words[0] if args.words[0] in ACTIONS else None
    rest = args.words[1:] if action else args.words
    expected = 2 if action in ("import", "gold") else 1
    if len(rest) != expected:
        form = {
            "import": "label import BENCH FILE",
            "gold": "label gold BENCH FILE",
            None: "label BENCH --annotator NAME (or --team NAMES)",
        }.get(action, f"label {action} BENCH")
        print(f"error: expected `{form}`", file=sys.stderr)
        return 2
    try:
        rubric = load_rubric(args.rubric or DEFAULT_RUBRIC)
        bench = load_benchmark(_bench_of(rest[0]), check_audio=False)
        if action == "import":
            return _import(bench, rubric, Path(rest[1]), args.annotator)
        if action == "export":
            return _export(bench, rubric, args.out, args.format, args.bar)
        if action == "agreement":
            return _agreement(bench, rubric, args)
        if action == "gold":
            return _gold(bench, rubric, Path(rest[1]))
        if action == "quality":
            return _quality(bench, rubric, args)
        if args.team is not None:
            return _serve_team(bench, rubric, args)
        return _serve(bench, rubric, args)
    except (LabelError, ManifestError, RubricError, FileNotFoundError, json.JSONDecodeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def names_of(given: list[str]) -> frozenset[str]:
    """--leave-out NAME, repeated or comma-separated."""
    return frozenset(n.strip() for g in given for n in g.split(",") if n.strip())


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


def _export(bench, rubric, out: Path | None, fmt: str | None, bar: float) -> int:
    from trace_eval.labels.quality import quality_columns
    from trace_eval.labels.store import export_labels

    out = out or Path("labels.csv")
    figures = annotator_quality(bench, rubric, bar)
    rows = export_labels(bench, rubric, out, quality_columns(figures) if figures else None, fmt)
    print(f"exported {rows} row(s) to {out}" + (" with each annotator's quality" if figures else ""))
    return 0


def annotator_quality(bench, rubric, bar: float) -> dict:
    """Each annotator's quality from the files (labels/, labels/team/gold/); {} when no one labelled gold or
    more than one annotator labelled."""
    from trace_eval.labels.gold import read_gold
    from trace_eval.labels.quality import quality
    from trace_eval.labels.store import FOLDER, LabelStore, label_spaces
    from trace_eval.labels.team import team_dir

    store = LabelStore(bench.root)
    gold_store = LabelStore(bench.root, Path(FOLDER) / "team" / "gold" / "labels")
    if not team_dir(bench.root).is_dir():
        return {}
    records = {a: list(store.latest(a).values()) for a in store.annotators()}
    golds = {a: list(gold_store.latest(a).values()) for a in gold_store.annotators()}
    items = {g.content(bench.root).key: g for g in read_gold(bench.root)}
    responses = {key: g.content(bench.root).responses for key, g in items.items()}
    return quality(records, golds, items, responses, label_spaces(rubric).get("overall"), bar)


def _gold(bench, rubric, path: Path) -> int:
    from trace_eval.labels.gold import gold_dir, mark_gold

    marked, problems = mark_gold(bench, rubric, path)
    if problems:
        print(f"error: {path}: {len(problems)} problem(s), no pair marked as gold:", file=sys.stderr)
        for line in problems[:50]:
            print(f"  {line}", file=sys.stderr)
        return 2
    print(f"marked {marked} pair(s) as gold in {gold_dir(bench.root) / 'gold.json'}; a team server mixes them in")
    return 0


def _quality(bench, rubric, args: argparse.Namespace) -> int:
    from trace_eval.io import write_json

    figures = annotator_quality(bench, rubric, args.bar)
    if not figures:
        print(f"no team labels in {bench.root / 'labels' / 'team'}: start `label BENCH --team NAMES` first")
        return 0
    for who, f in figures.items():
        print(f"{who}: {'FLAGGED' if f['flagged'] else 'ok'}: {f['answered']} answered; {f['evidence']}")
    if args.out:
        write_json(args.out, figures)
        print(f"wrote {args.out}")
    return 0


def _serve_team(bench, rubric, args: argparse.Namespace) -> int:
    from trace_eval.bench import load_benchmark
    from trace_eval.labels.least_sure import record_least_sure
    from trace_eval.labels.sample import draw
    from trace_eval.labels.team import Settings, Team, serve_team

    if args.annotator or args.token:
        print(
            "error: --team names the annotators and gives each a link of their own (kept in "
            f"{bench.root / 'labels' / 'team' / 'team.json'}); leave --annotator and --token out",
            file=sys.stderr,
        )
        return 2
    if args.least_sure and args.sample is None:
        print(
            "error: --least-sure needs --sample N: the least-sure pairs come after the random sample calibration needs",
            file=sys.stderr,
        )
        return 2
    names = [n.strip() for n in args.team.split(",") if n.strip()]
    settings = Settings(args.overlap, args.gold_rate, args.gold_pairs, args.bar, args.seed)
    from trace_eval.labels.team import _check

    _check(bench, names, settings)  # before anything is drawn or written
    loaded = load_benchmark(bench.root, rubric=None)
    ids = None
    if args.sample is not None:
        ids = draw(loaded, args.sample, args.seed, args.split, extend=args.extend)["ids"]
    least = record_least_sure(loaded, args.least_sure, set(ids or [])) if args.least_sure else None
    team = Team(loaded, rubric, names, settings, ids, least, restart=_started_as())
    print(
        f"team of {len(names)}: {len(team.queue)} pair(s) to label ({team.random_part} random"
        f"{f', then {len(team.queue) - team.random_part} least sure' if least else ''}), each by {args.overlap}; "
        f"gold pairs {args.gold_rate:.0%} of those handed out ({len(team.gold)} gold pairs)",
        file=sys.stderr,
    )
    try:
        serve_team(team, args.host, args.port)
    except KeyboardInterrupt:
        pass
    return 0


def _agreement(bench, rubric, args: argparse.Namespace) -> int:
    from trace_eval.evaluation.records import load_human_labels
    from trace_eval.io import write_json
    from trace_eval.labels.agreement import ceiling, position_bias
    from trace_eval.labels.store import label_spaces, read_people

    human = load_human_labels(bench.root, rubric, leave_out=names_of(args.leave_out))
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
    from trace_eval.labels.sample import coverage_lines, draw
    from trace_eval.labels.server import LabelSession, serve

    if not args.annotator:
        print("error: --annotator NAME is needed: labels are kept per annotator", file=sys.stderr)
        return 2
    if (args.split or args.extend) and args.sample is None:
        print(f"error: {'--split' if args.split else '--extend'} needs --sample N too", file=sys.stderr)
        return 2
    ids = None
    if args.sample is not None:
        drawn = draw(bench, args.sample, args.seed, args.split, extend=args.extend)
        ids = drawn["ids"]
        if drawn["extended"]:
            added = ", ".join(f"{name} {n}" for name, n in drawn["extended"]["drawn"].items())
            print(f"sample extended over {drawn['extended']['pairs']} new pair(s): {added}", file=sys.stderr)
        hint = "add --extend to draw over them at the sample's rate, keeping every label made"
        for line in coverage_lines(drawn, hint):
            print(f"warning: {line}", file=sys.stderr)
        cover = drawn["coverage"]
        print(
            f"sample: {len(ids)} pair(s), seed {drawn['seed']}, stratified by system pair "
            f"({len(cover['drawn_over'])} of {len(cover['strata'])} strata)"
            f"{'; split into calibration and evaluation halves' if args.split else ''}",
            file=sys.stderr,
        )
    session = LabelSession(bench.root, args.annotator, rubric, ids, restart=_started_as())
    print(session.who(), file=sys.stderr)
    try:
        serve(session, args.host, args.port, args.token)
    except KeyboardInterrupt:
        pass
    return 0
