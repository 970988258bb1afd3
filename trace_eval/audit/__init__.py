"""Bias audit: how much surface cues (loudness, silence, repetition, truncation, tempo, noise) sway a judge.

From a benchmark's own response clips, `run_audit` makes changed copies (trace_eval.audit.probes), writes them
with their references as a benchmark of their own (trace_eval.audit.derive), makes their blueprints through
the normal Stage 1 path (trace_eval.stage1.pipeline), judges every pair in both orders through the normal judge path
and answer cache (trace_eval.judge), and reports how often the copy wins beside what listeners do
(trace_eval.audit.report).

    AUDIT/bench/                 the audit's benchmark (manifest, audio, blueprints)
    AUDIT/copies.json            what each copy is
    AUDIT/runs/<judge>/          one judge run folder per backbone
    AUDIT/audit.json, audit.md, audit.png   the report
    AUDIT/view/index.html        the audit page of the judge runs: every pair playable beside its reference
"""

from __future__ import annotations

import difflib
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from trace_eval.bench import load_benchmark
from trace_eval.evaluation.bootstrap import BootstrapSettings
from trace_eval.io import atomic_write_text, write_json
from trace_eval.judge.backbones import FatalBackboneError, available_backbones, backbone_for
from trace_eval.judge.runner import JudgeOptions, run_judge
from trace_eval.rubrics import load_rubric
from trace_eval.stage1.pipeline import BlueprintOptions, run_blueprints
from trace_eval.stage1.store import BENCH_STORE, BlueprintStore

from .derive import choose_clips, write_audit_bench
from .probes import PROBES
from .report import OVERALL, judge_report, markdown, write_figure

__all__ = ["AuditOptions", "DEFAULT_CLIPS", "PROBES", "run_audit"]

# Clips probed by default: the fewest at which a probe that moves the label one way every time is decided (9:
# 0 of 9 is [0%, 30%], a clear loss in line with listeners, or a sway against indifference), and one more for a
# clip left undecided. Fewer can show only a judge swayed at every pair; the report then says "cannot tell
# yet" and how many clips would decide. 10 clips x 14 probes make 140 copies: their blueprints take minutes.
DEFAULT_CLIPS = 10
FORMAT_VERSION = 1


@dataclass
class AuditOptions:
    bench: Path
    out: Path
    judges: list[JudgeOptions] = field(default_factory=list)  # bench and out are set per judge
    clips: int | None = DEFAULT_CLIPS  # None: every response clip
    seed: int = 0  # which clips are chosen
    ids: list[str] | None = None  # only the response clips of these items
    probes: list[str] = field(default_factory=lambda: list(PROBES))
    blueprints: BlueprintOptions = field(default_factory=BlueprintOptions)
    bootstrap: BootstrapSettings = field(default_factory=BootstrapSettings)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-")[:60] or "judge"


def _write_page(runs: list[str | Path], folder: Path) -> dict:
    """The audit page of the judge runs (every probe pair playable beside its reference, the verdicts side by
    side; search the ids by probe name). A page that cannot be written is reported, the audit kept."""
    from trace_eval.view import ViewError, write_view

    try:
        files = write_view(runs, folder)
    except (ViewError, OSError, ValueError) as e:
        return {"path": None, "error": str(e)}
    return {"path": str(files.index), "error": None}


def quotes_words(pair) -> bool:
    """The item's instruction quotes the words to say: the `cues` judge can decide its Content."""
    from trace_eval.judge.instructions import read_instruction

    return bool(read_instruction(pair.instruction_text or "").quoted.strip())


def check_model(model: str, api_base: str | None = None) -> None:
    """Refuse a model no backbone and no litellm provider serves before any clip is made: "cue" would
    otherwise fail only at the first call, after minutes of Stage 1."""
    if backbone_for(model) != "litellm":
        return
    from trace_eval.judge.openai_http import speaks_directly

    if speaks_directly(model, api_base):  # a local server spoken to over HTTP: no provider to find in litellm
        return
    from trace_eval.judge.litellm_backbone import import_litellm

    try:
        import_litellm().get_llm_provider(model, api_base=api_base)
    except FatalBackboneError:
        return  # litellm missing: the judge says what to install, as it would without the audit
    except Exception:
        names = sorted(available_backbones())
        close = difflib.get_close_matches(model, names, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]}? " if close else ""
        raise ValueError(
            f"--model {model}: {hint}it is no backbone ({', '.join(names)}) and litellm knows no provider for "
            "it; give `cues` for the offline judge, or a litellm id with its provider (openai/gpt-4o, "
            "or openai/NAME with --api-base for a local server)"
        ) from None


def _store_of(bench_root: Path, options: BlueprintOptions) -> BlueprintOptions:
    """The copies' blueprints go to the store the audited benchmark was given with --store, else to the default
    one, so an audit into another folder finds them (a benchmark that keeps its blueprints itself lends the
    default store instead)."""
    if options.store is not None:
        return options
    named = BlueprintStore(bench_root).recorded_store(named_only=True)
    return replace(options, store=None if named == BENCH_STORE else named)


def run_audit(options: AuditOptions, notice: Callable[[str], None] | None = None) -> dict:
    """Write the audit bench, its blueprints, one judge run per backbone and the report; returns audit.json."""
    notice = notice or (lambda message: print(message, file=sys.stderr))
    unknown = [p for p in options.probes if p not in PROBES]
    if unknown:
        raise ValueError(f"unknown probe(s) {', '.join(unknown)}; expected among: {', '.join(PROBES)}")
    if not options.judges:
        raise ValueError("no judge to audit: give at least one backbone")
    for judge in options.judges:
        rubric = load_rubric(judge.rubric)
        if not rubric.pairwise:
            raise ValueError(
                f"rubric {rubric.name} judges single answers; the audit compares each copy with its reference, "
                "so it needs a pairwise rubric (such as trace)"
            )
    for judge in options.judges:
        check_model(judge.model, judge.api_base)
    started = time.perf_counter()
    bench = load_benchmark(options.bench)
    cues = any(backbone_for(j.model) == "cues" for j in options.judges)
    clips = choose_clips(bench, options.clips, options.seed, options.ids, quotes_words if cues else None)
    out = Path(options.out)
    pairs, copies = write_audit_bench(bench, clips, options.probes, out)
    audit_bench = out / "bench"
    notice(f"audit bench {audit_bench}: {len(copies['clips'])} clips, {len(options.probes)} probes, {len(pairs)} pairs")

    judge_runs = [replace(j, bench=audit_bench) for j in options.judges]
    blueprint_summary = None
    if any(load_rubric(j.rubric).prompt(j.judge).needs_blueprints for j in judge_runs):
        blueprint_summary = run_blueprints(audit_bench, _store_of(bench.root, options.blueprints))
    reports = []
    used: set[str] = set()
    for judge in judge_runs:
        name = judge.model if judge.judge is None else f"{judge.model} ({judge.judge})"
        slug = _slug(name)
        while slug in used:
            slug += "-2"
        used.add(slug)
        folder = out / "runs" / slug
        outcome = run_judge(replace(judge, out=folder), notice)
        rubric = load_rubric(judge.rubric)
        labels = list(rubric.names) + ([OVERALL] if rubric.fusion is not None else [])
        run = outcome.summary.get("run", {})
        counted = {k: run.get(k) for k in ("calls", "cache_hits", "retries", "spent_usd", "wall_s")}
        reports.append(
            judge_report(name, outcome.records, pairs, labels, options.bootstrap, {**counted, "folder": str(folder)})
        )
    page = _write_page([Path(r["run"]["folder"]) for r in reports], out / "view")
    audit = {
        "format_version": FORMAT_VERSION,
        "bench": str(options.bench),
        "audit_bench": str(audit_bench),
        "clips": len(copies["clips"]),
        "pairs": len(pairs),
        "probes": [{"probe": p, "cue": PROBES[p].cue, "description": PROBES[p].description} for p in options.probes],
        "bootstrap": options.bootstrap.describe(),
        "blueprints": None
        if blueprint_summary is None
        else {
            "computed": blueprint_summary.computed,
            "cached": blueprint_summary.cached,
            "failed": blueprint_summary.failed,
            "store": blueprint_summary.store,
        },
        "judges": reports,
        "page": page,
        "copies": copies,
        "wall_s": round(time.perf_counter() - started, 1),
    }
    write_json(out / "audit.json", audit)
    atomic_write_text(out / "audit.md", markdown(audit))
    write_figure(audit, out / "audit.png")
    return audit
