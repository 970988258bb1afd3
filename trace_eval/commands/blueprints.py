"""`python -m trace_eval blueprints DIR`: Stage 1 over a benchmark folder."""

from __future__ import annotations

import argparse
import sys

HELP = "extract the audio cues of every clip of a benchmark folder into cached blueprints"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("bench", metavar="DIR", nargs="?", help="benchmark folder holding manifest.json or manifest.jsonl")
    p.add_argument("--only", metavar="NAMES", help="comma-separated extractors (their dependencies are added)")
    p.add_argument("--device", default="auto", help="auto | cpu | cuda | cuda:N (default: auto)")
    p.add_argument(
        "--workers",
        type=int,
        default=None,
        help="local engine: decode/signal worker processes (default: all cores; 0: inline)",
    )
    p.add_argument(
        "--profile",
        choices=("paper", "cpu"),
        default=None,
        help="model set: paper (Whisper large-v3, default with CUDA) or cpu (Whisper tiny.en, default without)",
    )
    p.add_argument(
        "--set",
        dest="settings",
        action="append",
        default=[],
        metavar="NAME.FIELD=VALUE",
        help="override an extractor setting, e.g. --set asr.model_path=/models/whisper, or its actor "
        "pool on the ray engine, e.g. --set asr.actors=4 --set asr.num_gpus=0.5 (repeatable)",
    )
    p.add_argument(
        "--one-model-at-a-time",
        action="store_true",
        help="run each GPU model over all clips before loading the next (small GPUs)",
    )
    p.add_argument("--force", action="store_true", help="recompute sections even when they are current")
    p.add_argument(
        "--retry-unavailable",
        action="store_true",
        help="probe models recorded as unavailable again, even when nothing they resolve from changed",
    )
    p.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="local (worker processes here, default) or ray (Ray Data, on this machine or a cluster)",
    )
    p.add_argument(
        "--ray-address",
        metavar="ADDRESS",
        default=None,
        help="ray engine: the cluster to join (default: $RAY_ADDRESS, else start Ray on this machine)",
    )
    p.add_argument(
        "--store",
        metavar="DIR|URL|bench",
        default=None,
        help="where blueprints are kept: a folder or an fsspec URL (s3://bucket/store) shared by every benchmark, "
        "or 'bench' for BENCH/blueprints (a benchmark shipped with its blueprints); default: the one this "
        "benchmark used last, else $TRACE_STORE, else ~/.cache/trace-eval/blueprints",
    )
    p.add_argument("--list", action="store_true", help="list the extractors and exit")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def parse_settings(items: list[str]) -> dict[str, dict[str, str]]:
    settings: dict[str, dict[str, str]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        name, dot, fld = key.partition(".")
        if not sep or not dot or not name or not fld:
            raise SystemExit(f"--set {item!r}: expected NAME.FIELD=VALUE, e.g. asr.model_path=/models/whisper")
        settings.setdefault(name, {})[fld] = value
    return settings


def list_extractors() -> None:
    from extractors import REGISTRY

    for name, cls in sorted(REGISTRY.items()):
        deps = f" (after {', '.join(cls.depends_on)})" if cls.depends_on else ""
        where = "gpu" if cls.uses_gpu else "cpu"
        print(f"{name:10s} v{cls.version:6s} {where}  {cls.description}{deps}")


def run(args: argparse.Namespace) -> int:
    from trace_eval.bench import ManifestError
    from trace_eval.stage1.pipeline import BlueprintOptions, run_blueprints, run_one_model_at_a_time
    from trace_eval.stage1.ray_engine import EngineUnavailable

    if args.list:
        list_extractors()
        return 0
    if not args.bench:
        print("error: which benchmark folder? python -m trace_eval blueprints DIR (or --list)", file=sys.stderr)
        return 2
    options = BlueprintOptions(
        only=[n.strip() for n in args.only.split(",") if n.strip()] if args.only else None,
        device=args.device,
        workers=args.workers,
        force=args.force,
        settings=parse_settings(args.settings),
        profile=args.profile,
        progress=not args.quiet,
        engine=args.engine,
        ray_address=args.ray_address,
        retry_unavailable=args.retry_unavailable,
        store=args.store,
    )
    try:
        if args.one_model_at_a_time:
            summary = run_one_model_at_a_time(args.bench, options)
        else:
            summary = run_blueprints(args.bench, options)
    except (ManifestError, FileNotFoundError, ValueError, EngineUnavailable, ImportError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print_summary(summary)
    return 0 if summary.ok else 1


def print_summary(summary) -> None:
    """Human summary; the same figures are in BENCH/blueprints/summary.json."""
    print(
        f"\nblueprints for {summary.bench}  (engine {summary.engine}, device {summary.device}, "
        f"profile {summary.profile}, {summary.wall_seconds:.1f} s)"
    )
    print(
        f"  clips {summary.clips}  unique audio {summary.unique_audio}  cached {summary.cached}  "
        f"computed {summary.computed}  failed {summary.failed}"
    )
    if summary.computed == 0 and summary.cached and not summary.failed:
        print(f"  nothing computed: all {summary.cached} blueprint(s) were already in the store {summary.store}")
    else:
        print(f"  store {summary.store}")
    print(f"  {'extractor':10s} {'ok':>6s} {'cached':>7s} {'failed':>7s} {'unavail':>8s} {'seconds':>9s}")
    for name, counts in summary.sections.items():
        print(
            f"  {name:10s} {counts.get('ok', 0):6d} {counts.get('cached', 0):7d} {counts.get('failed', 0):7d} "
            f"{counts.get('unavailable', 0):8d} {summary.seconds_per_extractor.get(name, 0.0):9.2f}"
        )
    for name, reason in summary.unavailable.items():
        print(f"  unavailable: {name}: {reason}")
    if summary.standin:
        print(
            f"  stand-in weights: {', '.join(summary.standin)} ran on random weights "
            "(scripts/make_standin_models.py): their values are not cues",
            file=sys.stderr,
        )
    if summary.kept_unavailable:
        print(
            f"  unavailable as recorded: {', '.join(summary.kept_unavailable)} (probed again when their model "
            "path, $TRACE_MODELS_DIR, the hub cache or the installed packages change, or with --retry-unavailable)"
        )
    if summary.failures:
        print(f"  {len(summary.failures)} failure(s) (also in blueprints/failures.jsonl):")
        for f in summary.failures[:20]:
            print(f"    {f.path} [{f.stage}{', as recorded' if f.recorded else ''}] {f.reason}")
        if len(summary.failures) > 20:
            print(f"    ... and {len(summary.failures) - 20} more")
        if any(f.recorded for f in summary.failures):
            print(
                "  failures as recorded are tried again when the file, the extractor or the installed packages "
                "change, or with --force"
            )
    if not summary.ok:
        print(f"  {summary.failed} clip(s) have no blueprint")
