"""`python -m trace_eval judge`: Stage 2 over a benchmark whose blueprints exist."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import fusion
from trace_eval.judge.prompts import BLUEPRINT_GROUPS
from trace_eval.rubrics import DEFAULT_RUBRIC, RubricError, available_rubrics, load_rubric

HELP = "ask a judge backbone for per-dimension verdicts on every item (and fuse them); writes a run folder"

EXAMPLE_BENCH = Path(__file__).resolve().parents[2] / "examples" / "mini"
DROP_GROUPS = tuple(BLUEPRINT_GROUPS)
CUES_CONTENT = (
    "judges Content only where the instruction quotes the words to say; on free-form instructions (about "
    "half of SpeakBench, three quarters of S2S-Arena) Content and the overall label stay undetermined. "
    "An LLM judge without an API key: a local server (vLLM, Ollama, llama.cpp) with --model openai/NAME "
    "--api-base URL (docs/local-judge.md)"
)
SWAP_MEASURES_NOTHING = (
    "with the cues backbone measures nothing: its rules read the two blueprints alike in either order, so "
    "position consistency is 100% by construction; it tests LLM judges"
)


def _drop_list(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in DROP_GROUPS]
    if unknown:
        raise argparse.ArgumentTypeError(f"{','.join(unknown)}: expected names among {','.join(DROP_GROUPS)}")
    return names


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text}")
    return value


def _rubrics_help() -> str:
    lines = []
    for name in available_rubrics():
        try:
            rubric = load_rubric(name)
        except RubricError as e:  # a broken bundled file should not hide --help
            lines.append(f"  {name:22} (cannot be loaded: {e})")
            continue
        lines.append(f"  {name:22} {rubric.description}")
        lines.append(f"  {'':22}   prompts (--judge): {', '.join(rubric.prompts)}")
    return "\n".join(lines)


def configure(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = (
        "rubrics (--rubric; a rubric file's path works too):\n"
        + _rubrics_help()
        + "\n\nfusion policies (rubrics that fuse, such as trace):\n"
        + "\n".join(f"  {name:22} {policy.description}" for name, policy in sorted(fusion.POLICIES.items()))
        + "\n\nenvironment: TRACE_JUDGE_MODEL (default --model), TRACE_JUDGE_API_KEY (API key sent to the backbone;"
        "\nproviders' own variables such as OPENAI_API_KEY work too), TRACE_CACHE_DIR (answer cache),"
        "\nTRACE_JUDGE_VIA_LITELLM=1 (a local server of --api-base called through litellm, not directly over HTTP)."
    )
    p.add_argument(
        "--bench",
        metavar="DIR",
        type=Path,
        default=None,
        help="benchmark folder with blueprints (default: the current folder, when it holds manifest.json or "
        f"manifest.jsonl; the bundled example is --bench {EXAMPLE_BENCH.relative_to(EXAMPLE_BENCH.parents[1])})",
    )
    p.add_argument(
        "--model",
        metavar="ID",
        default=None,
        help="litellm model id (openai/gpt-4o, gemini/gemini-2.5-flash, anthropic/..., openai/NAME with "
        "--api-base for vLLM or Ollama) or `cues` for the offline rules "
        "(default: $TRACE_JUDGE_MODEL, else cues)",
    )
    p.add_argument("--api-base", metavar="URL", default=None, help="base URL of an OpenAI-compatible server")
    p.add_argument(
        "--rubric",
        metavar="NAME|PATH",
        default=DEFAULT_RUBRIC,
        help="what the judge is asked: a bundled rubric (listed below) or a rubric file (default: %(default)s)",
    )
    p.add_argument(
        "--judge",
        metavar="PROMPT",
        default=None,
        help="prompt of the rubric; for trace: trace (blueprints), transcript (transcripts only), "
        "audio (raw audio) (default: the rubric's first prompt)",
    )
    p.add_argument(
        "--fusion",
        choices=sorted(fusion.POLICIES),
        default="cap",
        help="policy giving the overall label (every policy is stored too) (default: %(default)s)",
    )
    p.add_argument(
        "--drop",
        metavar="GROUPS",
        type=_drop_list,
        default=(),
        help=f"hide blueprint groups from the judge, comma-separated: {','.join(DROP_GROUPS)}",
    )
    p.add_argument(
        "--samples",
        metavar="N",
        type=_positive_int,
        default=1,
        help="answers per item; majority per dimension, ties to the earliest sample (default: 1)",
    )
    p.add_argument(
        "--swap",
        action="store_true",
        help="pairwise rubrics: judge each pair in both orders; disagreements become ties (typed ties: "
        "both_bad if either order said both_bad, else both_good); reports position consistency (which "
        "measures nothing with the order-blind cues backbone)",
    )
    p.add_argument("--concurrency", metavar="N", type=_positive_int, default=8, help="calls in flight (default: 8)")
    p.add_argument("--rpm", metavar="N", type=float, default=None, help="at most N calls started per minute")
    p.add_argument("--temperature", metavar="T", type=float, default=0.0, help="sampling temperature (default: 0)")
    p.add_argument("--max-tokens", metavar="N", type=_positive_int, default=None, help="answer length limit")
    p.add_argument("--timeout", metavar="S", type=float, default=120.0, help="seconds per call (default: 120)")
    p.add_argument(
        "--retries",
        metavar="N",
        type=int,
        default=4,
        help="retries of a call after a server error or timeout (default: 4)",
    )
    p.add_argument(
        "--repairs",
        metavar="N",
        type=int,
        default=1,
        help="times an unusable answer is sent back with a request to fix it (default: 1)",
    )
    p.add_argument(
        "--structured",
        choices=("auto", "on", "off"),
        default="auto",
        help="JSON-schema structured output: auto uses it where litellm says the model supports it "
        "and on the server of --api-base, and judges without it if that server refuses it",
    )
    p.add_argument(
        "--max-cost",
        metavar="USD",
        type=float,
        default=None,
        help="make no new calls once this much is spent; the pairs left are recorded as skipped",
    )
    p.add_argument(
        "--price-in",
        metavar="USD",
        type=float,
        default=None,
        help="price per million prompt tokens, for models litellm has no price for",
    )
    p.add_argument("--price-out", metavar="USD", type=float, default=None, help="price per million answer tokens")
    p.add_argument("--limit", metavar="N", type=_positive_int, default=None, help="judge only the first N pairs")
    p.add_argument(
        "--skip-failed",
        action="store_true",
        help="judge the pairs whose clips have blueprints; record the others as skipped, with the reason",
    )
    p.add_argument(
        "--out",
        metavar="RUNDIR",
        type=Path,
        default=None,
        help="run folder (default: runs/<time>_<model>); an existing one is resumed",
    )
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="ask the backbone even when an answer is cached (fresh answers replace cached ones)",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the calls the run would make (after the cache), their prompt tokens and estimated "
        "cost; ask nothing and write nothing",
    )
    p.add_argument(
        "--logprobs",
        action="store_true",
        help="ask for the answer tokens' log-probabilities: each label's probability is its confidence (where "
        "the provider returns them; no extra call)",
    )
    p.add_argument(
        "--cascade",
        metavar="JUDGE",
        nargs="+",
        default=None,
        help="judges from cheap to strong, each MODEL[@PROMPT] as the calibration file names it (e.g. cues "
        "openai/gpt-4o-mini openai/gpt-4o-audio-preview@audio): a verdict below its judge's threshold goes to "
        "the next; what the last does not trust is undetermined; each judge runs with its calibrated settings "
        "(docs/trust.md)",
    )
    p.add_argument(
        "--calibration",
        metavar="FILE",
        type=Path,
        default=None,
        help="the thresholds of the --cascade judges, written by `python -m trace_eval calibrate`",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from trace_eval.bench import benchmark_folder

    bench = args.bench or _bench_here()
    if bench is None:
        print(
            f"error: no --bench, and the current folder ({Path.cwd()}) holds no manifest.json or manifest.jsonl: "
            "give the benchmark folder with --bench DIR, or run from inside it"
            + (f" (the bundled example: --bench {EXAMPLE_BENCH})" if EXAMPLE_BENCH.is_dir() else ""),
            file=sys.stderr,
        )
        return 2
    print(f"benchmark: {bench}" + (" (the current folder)" if args.bench is None else ""), file=sys.stderr)
    try:
        benchmark_folder(bench)  # before the judge's modules load: a wrong path is said at once
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    model = args.model or os.environ.get("TRACE_JUDGE_MODEL")
    if not model:
        model = "cues"
        if not args.cascade:  # a cascade names its judges
            print(
                "notice: no --model and TRACE_JUDGE_MODEL is unset: judging with the offline `cues` backbone "
                "(deterministic rules over the blueprints)",
                file=sys.stderr,
            )
    if model == "cues" and not args.cascade and args.rubric != "interaction":  # sessions: decided from timelines
        print(
            f"notice: the `cues` backbone {CUES_CONTENT}",
            file=sys.stderr,
        )
    if args.swap and model == "cues":
        print(f"notice: --swap {SWAP_MEASURES_NOTHING}", file=sys.stderr)
    _import_ahead([spec.partition("@")[0] for spec in args.cascade or [model]], args)

    from trace_eval.bench import ManifestError
    from trace_eval.judge import JudgeError, JudgeOptions, RetryPolicy, run_judge
    from trace_eval.judge.runfolder import RunFolderInUse
    from trace_eval.judge.runner import dry_run

    options = JudgeOptions(
        bench=bench,
        model=model,
        api_base=args.api_base,
        api_key=os.environ.get("TRACE_JUDGE_API_KEY") or None,
        rubric=args.rubric,
        judge=args.judge,
        fusion=args.fusion,
        drop=args.drop,
        samples=args.samples,
        swap=args.swap,
        temperature=args.temperature,
        max_tokens=args.max_tokens,
        structured=args.structured,
        repair_attempts=args.repairs,
        logprobs=args.logprobs,
        concurrency=args.concurrency,
        rpm=args.rpm,
        timeout_s=args.timeout,
        max_cost=args.max_cost,
        price_in_per_mtok=args.price_in,
        price_out_per_mtok=args.price_out,
        retry=RetryPolicy(max_retries=args.retries),
        use_cache=not args.no_cache,
        out=args.out,
        limit=args.limit,
        skip_failed=args.skip_failed,
        progress=not args.quiet,
    )
    if args.cascade or args.calibration:
        return _run_cascade(args, options)
    if args.dry_run:
        try:
            print_dry_run(dry_run(options))
        except (JudgeError, ManifestError, FileNotFoundError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        return 0
    try:
        outcome = run_judge(options)
    except (JudgeError, ManifestError, FileNotFoundError, RunFolderInUse) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        where = f" --out {args.out}" if args.out else " --out RUNDIR (the folder named above)"
        print(f"\ninterrupted: finished pairs are saved; run the same command with{where} to resume", file=sys.stderr)
        return 130
    print_summary(outcome)
    return 1 if outcome.stopped or _empty(outcome.summary) else 0


def _import_ahead(models: list[str], args: argparse.Namespace) -> None:
    """Start importing litellm when a judge will call through it, while the benchmark is read (`cues` never
    imports it, nor a judge that speaks to the server of --api-base directly)."""
    from trace_eval.judge.backbones import backbone_for

    called = [m for m in models if backbone_for(m) == "litellm"]
    if not called:
        return
    # httpx imports its command-line tool's click and rich, and httpcore imports trio, wherever they are
    # installed: a fifth of a second of this command's start, for a tool and an event loop it never uses.
    with _kept_out("httpx._main", "trio"):
        from trace_eval.judge.openai_http import speaks_directly

    through_litellm = [m for m in called if not speaks_directly(m, args.api_base)]
    if through_litellm:
        from trace_eval.judge.litellm_backbone import start_importing_litellm

        start_importing_litellm(through_litellm[0], args.api_base)


@contextmanager
def _kept_out(*modules: str) -> Iterator[None]:
    """Imports made meanwhile find `modules` not installed; a later import finds them."""
    kept_out = [name for name in modules if name not in sys.modules]
    for name in kept_out:
        sys.modules[name] = None  # type: ignore[assignment]  # the import system's "cannot be imported"
    try:
        yield
    finally:
        for name in kept_out:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]


def _bench_here() -> Path | None:
    """The current folder when it is a benchmark folder (it holds a manifest); a missing --bench is never guessed
    further."""
    here = Path.cwd()
    return here if any((here / name).is_file() for name in ("manifest.json", "manifest.jsonl")) else None


def _run_cascade(args: argparse.Namespace, options) -> int:
    from trace_eval.bench import ManifestError
    from trace_eval.judge import JudgeError
    from trace_eval.judge.cascade import run_cascade
    from trace_eval.judge.runfolder import RunFolderInUse

    if not (args.cascade and args.calibration):
        print(
            "error: --cascade JUDGE... and --calibration FILE go together"
            + (
                "; make the calibration file with `python -m trace_eval calibrate RUNDIR... --out calibration.json` "
                "on runs of each judge over human-labelled pairs (docs/trust.md)"
                if args.cascade
                else ""
            ),
            file=sys.stderr,
        )
        return 2
    if args.dry_run:
        print(
            "error: --dry-run does not foresee a cascade (which pairs escalate depends on the answers)", file=sys.stderr
        )
        return 2
    try:
        outcome = run_cascade(options, args.cascade, args.calibration)
    except (JudgeError, ManifestError, FileNotFoundError, RunFolderInUse) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            "\ninterrupted: finished pairs are saved; run the same command with the same --out to resume",
            file=sys.stderr,
        )
        return 130
    s = outcome.summary
    cascade, run = s["cascade"], s["run"]
    print(f"judged {s['pairs']} pairs with the {s['settings']['model']}")
    for judge, n in cascade["decided_by"].items():
        print(f"  decided by {judge}: {n}")
    print(f"  undetermined (no judge trusted): {cascade['undetermined']}; coverage {cascade['coverage']:.0%}")
    cost = "unknown" if s.get("cost_usd") is None else f"${s['cost_usd']:.4f}"
    print(f"  calls {run['calls']}, cached {run['cache_hits']}, answers cost {cost}, {run['wall_s']:.1f} s")
    if outcome.stopped:
        print(f"  stopped: {outcome.stopped}; fix the cause and re-run with --out {outcome.out}", file=sys.stderr)
    print(f"  run folder: {outcome.out}")
    return 1 if outcome.stopped else 0


def _empty(summary: dict) -> bool:
    """True when no pair got a verdict (every one skipped, invalid or failed)."""
    return not summary.get("status", {}).get("ok")


def why_empty(outcome) -> list[str]:
    """Why no pair got a verdict: the most common reason recorded, and what to do about it."""
    from collections import Counter

    failing = [r for r in outcome.records if r.get("status") != "ok"]
    if not failing:
        return ["no pair to judge"]
    (status, reason), n = Counter((r.get("status"), r.get("reason")) for r in failing).most_common(1)[0]
    lines = [f"most common reason ({n} of {len(failing)}, {status}): {reason}"]
    if status == "invalid":
        refused = outcome.summary["run"].get("structured_refused")
        if refused:
            lines.append(
                "the backbone refused structured output and its answers were not verdicts without it: "
                "try a stronger --model, or a server that accepts a JSON-schema response_format"
            )
        elif outcome.summary["settings"].get("structured"):
            lines.append(
                "the answers were not verdicts even with structured output: try a stronger --model, or more --repairs"
            )
        else:
            lines.append(
                "the answers were not verdicts in the JSON asked for: --structured on asks the backbone "
                "for JSON-schema output (vLLM, Ollama and llama.cpp's server accept it), or try a stronger "
                "--model"
            )
    lines.append(f"every pair's reason is in {outcome.out}/results.jsonl")
    return lines


def print_dry_run(plan: dict) -> None:
    """The `--dry-run` report: one block for the backbone named by --model."""
    print(f"dry run of {plan['model']}: nothing asked, nothing written")
    extra = ", ".join(f"{n} {what}" for what, n in (("skipped", plan["skipped"]), ("unusable", plan["unusable"])) if n)
    print(
        f"  pairs {plan['pairs']}"
        + (f" ({extra})" if extra else "")
        + f"; calls {plan['calls']} (cached answers not counted: {plan['cached']}; repairs not foreseen)"
    )
    if not plan["calls"] and isinstance(plan["price"], str) and plan["price"].startswith("no calls"):
        print(f"  {plan['price']}")
        return
    how = (
        "exact"
        if plan["tokens_exact"]
        else "estimate: counted with cl100k, litellm has no tokenizer of this model; audio parts not counted"
    )
    print(f"  prompt tokens {plan['prompt_tokens']:,} ({how})")
    print(f"  answer tokens at most {plan['answer_tokens_max']:,} (every answer at the token budget)")
    price = plan["price"]
    if isinstance(price, dict):
        print(
            f"  cost at most ${plan['cost_usd_max']:.4f}: prompts ${plan['cost_usd_prompts']:.4f} at "
            f"${price['input_per_mtok']:g}/M tokens, answers at ${price['output_per_mtok']:g}/M"
        )
    else:
        print(f"  cost: {price} (litellm's price map has none for {plan['model']}; --price-in/--price-out give one)")


def print_summary(outcome) -> None:
    s = outcome.summary
    run = s.get("run", {})
    counts = ", ".join(f"{n} {status}" for status, n in s["status"].items() if n)
    cost = "unknown" if s.get("cost_usd") is None else f"${s['cost_usd']:.4f}"
    settings = s["settings"]
    print(f"judged {s['pairs']} pairs with {settings['model']} ({settings['prompt_version']}): {counts or 'none'}")
    if settings.get("bench"):
        print(f"  benchmark: {settings['bench']}")
    print(
        f"  calls {run.get('calls', 0)}, cached {run.get('cache_hits', 0)}, retries {run.get('retries', 0)}, "
        f"spent ${run.get('spent_usd', 0.0):.4f} (answers cost {cost}), {run.get('wall_s', 0.0):.1f} s"
    )
    if "overall" in s["labels"]:
        overall = s["labels"]["overall"]
        print(f"  overall ({s['fusion']}): " + ", ".join(f"{label} {n}" for label, n in overall.items()))
    else:  # rubrics without fusion: every dimension on its own
        for dimension, counts_of in s["labels"].items():
            print(f"  {dimension}: " + ", ".join(f"{label} {n}" for label, n in counts_of.items()))
    from trace_eval.judge.evidence import summary_lines

    lines, warnings = summary_lines(s)
    for line in lines:
        print(line)
    for warning in warnings:
        print(warning, file=sys.stderr)
    if run.get("structured_refused"):
        print(f"  structured output: refused by the backbone ({run['structured_refused']}); judged without it")
    if s.get("position_consistency"):
        pc = s["position_consistency"]
        print(f"  position consistency {pc['rate']:.1%} over {pc['pairs']} pairs")
        if settings.get("model") == "cues":
            print(f"  (--swap {SWAP_MEASURES_NOTHING})")
    if _empty(s) and not outcome.stopped:
        print(f"  empty run: no pair got a verdict ({counts or 'no pairs'})", file=sys.stderr)
        for line in why_empty(outcome):
            print(f"  {line}", file=sys.stderr)
    if outcome.stopped:
        print(f"  stopped: {outcome.stopped}", file=sys.stderr)
        print(
            f"  {len(run.get('not_run', []))} pair(s) not judged; fix the cause and re-run with --out {outcome.out}",
            file=sys.stderr,
        )
    print(f"  run folder: {outcome.out}")
