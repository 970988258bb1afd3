"""`python -m trace_eval audit`: how much surface cues sway a judge, measured on a benchmark's own clips."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import fusion
from trace_eval.commands.judge import EXAMPLE_BENCH, _positive_int

HELP = (
    "bias audit: judge each response against copies that change one surface cue (loudness, silence, "
    "repetition, truncation, tempo, noise), in both orders; report how often the copy wins beside listeners"
)


def configure(p: argparse.ArgumentParser) -> None:
    from trace_eval.audit import DEFAULT_CLIPS, PROBES
    from trace_eval.rubrics import DEFAULT_RUBRIC

    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = "probes (--probes):\n" + "\n".join(f"  {n:20} {probe.description}" for n, probe in PROBES.items())
    p.add_argument(
        "bench",
        metavar="BENCH",
        type=Path,
        nargs="?",
        default=None,
        help=f"benchmark folder whose response clips are probed (default: the bundled example, {EXAMPLE_BENCH.name})",
    )
    p.add_argument(
        "--model",
        metavar="ID",
        action="append",
        default=None,
        help="backbone to audit: `cues`, or a litellm model id; repeat to audit several side by side "
        "(default: $TRACE_JUDGE_MODEL, else cues)",
    )
    p.add_argument("--api-base", metavar="URL", default=None, help="base URL of an OpenAI-compatible server")
    p.add_argument("--rubric", metavar="NAME|PATH", default=DEFAULT_RUBRIC, help="rubric (default: %(default)s)")
    p.add_argument(
        "--judge",
        metavar="PROMPT",
        default=None,
        help="prompt of the rubric: trace, transcript, audio (default: first)",
    )
    p.add_argument(
        "--fusion",
        choices=sorted(fusion.POLICIES),
        default="cap",
        help="policy of the overall label (default: %(default)s)",
    )
    p.add_argument(
        "--clips",
        metavar="N",
        type=_positive_int,
        default=DEFAULT_CLIPS,
        help="response clips probed, chosen by a seeded order (default: %(default)s; 14 copies each)",
    )
    p.add_argument("--all-clips", action="store_true", help="probe every response clip of the benchmark")
    p.add_argument(
        "--ids",
        metavar="ITEM,...",
        default=None,
        help="probe the response clips of these items only (comma-separated ids): clips the judge can decide; "
        "with `cues`, items whose instruction quotes the words to say (they come first by default)",
    )
    p.add_argument("--seed", type=int, default=0, help="which clips are chosen (default: %(default)s)")
    p.add_argument(
        "--probes",
        metavar="NAMES",
        default=None,
        help="comma-separated probes (default: all, listed below)",
    )
    p.add_argument(
        "--only", metavar="EXTRACTORS", default=None, help="Stage 1: only these extractors (comma-separated)"
    )
    p.add_argument("--workers", metavar="N", type=_positive_int, default=None, help="Stage 1 worker processes")
    p.add_argument("--device", default="auto", help="Stage 1 device: auto, cpu, cuda (default: %(default)s)")
    p.add_argument(
        "--resamples",
        metavar="N",
        type=_positive_int,
        default=2000,
        help="not used: the rates get Wilson intervals over clips (kept so that scripts passing it still run)",
    )
    p.add_argument("--concurrency", metavar="N", type=_positive_int, default=8, help="judge calls in flight")
    p.add_argument("--temperature", metavar="T", type=float, default=0.0, help="sampling temperature (default: 0)")
    p.add_argument("--no-cache", action="store_true", help="ask the backbone even when an answer is cached")
    p.add_argument(
        "--out", metavar="DIR", type=Path, default=Path("runs/audit"), help="audit folder (default: %(default)s)"
    )
    p.add_argument("--quiet", action="store_true", help="no progress bars")


def run(args: argparse.Namespace) -> int:
    from trace_eval.audit import AuditOptions, run_audit
    from trace_eval.bench import ManifestError
    from trace_eval.evaluation.bootstrap import BootstrapSettings
    from trace_eval.judge import JudgeError, JudgeOptions
    from trace_eval.stage1.pipeline import BlueprintOptions

    bench = args.bench or EXAMPLE_BENCH
    models = args.model or [os.environ.get("TRACE_JUDGE_MODEL") or "cues"]
    judges = [
        JudgeOptions(
            bench=bench,
            model=model,
            api_base=args.api_base,
            api_key=os.environ.get("TRACE_JUDGE_API_KEY") or None,
            rubric=args.rubric,
            judge=args.judge,
            fusion=args.fusion,
            temperature=args.temperature,
            concurrency=args.concurrency,
            use_cache=not args.no_cache,
            progress=not args.quiet,
        )
        for model in models
    ]
    probes = [p.strip() for p in args.probes.split(",") if p.strip()] if args.probes else None
    options = AuditOptions(
        bench=bench,
        out=args.out,
        judges=judges,
        clips=None if args.all_clips else args.clips,
        seed=args.seed,
        ids=[i.strip() for i in args.ids.split(",") if i.strip()] if args.ids else None,
        blueprints=BlueprintOptions(
            only=[n.strip() for n in args.only.split(",")] if args.only else None,
            device=args.device,
            workers=args.workers,
            progress=not args.quiet,
        ),
        bootstrap=BootstrapSettings(resamples=args.resamples),
    )
    if probes is not None:
        options.probes = probes
    try:
        audit = run_audit(options)
    except (JudgeError, ManifestError, FileNotFoundError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    from trace_eval.audit.report import markdown

    print(markdown(audit))
    print(f"audit folder: {args.out} (audit.json, audit.md, audit.png); {audit['wall_s']} s")
    return 0
