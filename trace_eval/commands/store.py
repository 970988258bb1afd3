"""`python -m trace_eval store [info|stale|verify|prune|migrate]`: look after the shared blueprint store."""

from __future__ import annotations

import argparse
import re
import sys
import time

HELP = (
    "the shared blueprint store: its size, what a benchmark's next run computes, a check of every file, pruning, "
    "moving a benchmark's blueprints in"
)

_AGE = re.compile(r"^(\d+(?:\.\d+)?)([smhdw]?)$")
_UNITS = {"": 86400, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "action",
        nargs="?",
        choices=("info", "stale", "verify", "prune", "migrate"),
        default="info",
        help="info (default): where the store is, its size and counts; stale BENCH: what the next blueprints run "
        "on BENCH (with the same --profile, --set and --only) computes, per extractor, computing and writing "
        "nothing; verify: check every blueprint against "
        "its schema and the audio hash it is named by; prune: remove blueprints no benchmark refers to; "
        "migrate BENCH: move a benchmark folder's own blueprints into the store",
    )
    p.add_argument("bench", metavar="BENCH", nargs="?", help="stale, migrate: the benchmark folder")
    p.add_argument(
        "--store",
        metavar="DIR|URL",
        default=None,
        help="the store (default: $TRACE_STORE, else ~/.cache/trace-eval/blueprints, following $XDG_CACHE_HOME)",
    )
    p.add_argument(
        "--older-than",
        metavar="AGE",
        default="30d",
        help="prune: only files older than this (e.g. 30d, 12h, 90m; a bare number is days; default 30d)",
    )
    p.add_argument("--dry-run", action="store_true", help="prune: list what would be removed, remove nothing")
    p.add_argument("--profile", choices=("paper", "cpu"), default=None, help="stale: as blueprints --profile")
    p.add_argument(
        "--set",
        dest="settings",
        action="append",
        default=[],
        metavar="NAME.FIELD=VALUE",
        help="stale: an extractor setting, as blueprints --set (e.g. dnsmos.layout=reference)",
    )
    p.add_argument("--only", metavar="NAMES", help="stale: as blueprints --only")
    p.add_argument("--device", default="auto", help="stale: as blueprints --device (it chooses the profile)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def parse_age(text: str) -> float:
    match = _AGE.match(text.strip())
    if not match:
        raise ValueError(f"--older-than {text!r}: expected a number and a unit s, m, h, d or w, e.g. 30d")
    return float(match.group(1)) * _UNITS[match.group(2)]


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def _when(t: float | None) -> str:
    return "-" if t is None else time.strftime("%Y-%m-%d %H:%M", time.localtime(t))


def print_stale(args: argparse.Namespace) -> None:
    """What the next blueprints run on a benchmark computes, from its store and the extractors' fingerprints."""
    from trace_eval.bench import load_benchmark
    from trace_eval.commands.blueprints import parse_settings
    from trace_eval.stage1.pipeline import BlueprintOptions, build_extractors, resolve_device
    from trace_eval.stage1.plan import fingerprints, make_plan
    from trace_eval.stage1.store import BlueprintStore

    options = BlueprintOptions(
        only=[n.strip() for n in args.only.split(",") if n.strip()] if args.only else None,
        settings=parse_settings(args.settings),
        profile=args.profile,
    )
    bench = load_benchmark(args.bench, check_audio=False)
    store = BlueprintStore(bench.root, args.store)
    extractors, profile = build_extractors(options, resolve_device(args.device))
    plan = make_plan(bench, store, extractors, fingerprints(extractors), profile=profile, record=False)
    stale = plan.stale()
    todo = plan.todo()
    print(f"{bench.root}: the next blueprints run (profile {profile}, store {store.location}) computes")
    print(f"  for {len(todo)} of {len(plan.jobs)} unique audio ({sum(plan.duration(j) for j in todo):.1f} s)")
    for name, found in stale.items():
        if found.clips:
            line = f"  {name:10s} {found.clips:6d} clip(s), {found.audio_s:8.1f} s of audio"
            if found.made_again:
                line += f", {found.made_again} made again (stored with another version or settings)"
            print(line)
    current = [name for name, found in stale.items() if not found.clips]
    if current:
        print(f"  current: {', '.join(current)}")


def run(args: argparse.Namespace) -> int:
    from trace_eval.stage1.store import default_store, migrate_bench, prune_store, store_info, verify_store

    try:
        location = args.store or default_store()
        if args.action == "info":
            info = store_info(location)
            print(f"store {info.location}")
            print(f"  blueprints {info.blueprints}  ({_size(info.bytes)})")
            print(f"  benchmarks recorded {info.benchmarks}")
            print(f"  oldest {_when(info.oldest)}  newest {_when(info.newest)}")
            if info.temporary:
                print(f"  {info.temporary} temporary file(s) of interrupted writes (store prune removes them)")
            return 0
        if args.action == "stale":
            if not args.bench:
                print("error: which benchmark folder? python -m trace_eval store stale BENCH", file=sys.stderr)
                return 2
            print_stale(args)
            return 0
        if args.action == "verify":
            bad = verify_store(location, progress=not args.quiet)
            info = store_info(location)
            if not bad:
                print(f"store {info.location}: all {info.blueprints} blueprint(s) valid")
                return 0
            print(f"store {info.location}: {len(bad)} of {info.blueprints} file(s) are not valid blueprints:")
            for name, problems in sorted(bad.items()):
                print(f"  {name}: {'; '.join(problems)}")
            print(
                "  they are made again by the next blueprints run that needs them; "
                "store prune removes those no benchmark refers to"
            )
            return 1
        if args.action == "prune":
            result = prune_store(location, parse_age(args.older_than), dry_run=args.dry_run)
            verb = "would remove" if args.dry_run else "removed"
            print(
                f"store {result.location}: {verb} {len(result.removed)} file(s) ({_size(result.bytes)}); kept "
                f"{result.kept_in_use} in use by {len(result.benchmarks)} benchmark(s) and {result.kept_recent} "
                f"newer than {args.older_than}"
            )
            for name in result.removed[:20] if args.dry_run else []:
                print(f"  {name}")
            return 0
        if not args.bench:
            print("error: which benchmark folder? python -m trace_eval store migrate BENCH", file=sys.stderr)
            return 2
        moved = migrate_bench(args.bench, args.store)
        print(
            f"{moved.bench}: {moved.moved} blueprint(s) moved into {moved.store}, "
            f"{moved.already} already there (the benchmark's copy removed)"
        )
        for name, problems in moved.invalid.items():
            print(f"  left in place, not a valid blueprint: {name}: {'; '.join(problems)}")
        return 0
    except (ValueError, ImportError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
