"""A cascade of judges, from cheap to strong: each pair goes to the first judge; a verdict whose confidence is
below that judge's calibrated threshold goes on to the next; what the last judge does not trust is recorded
undetermined, with the reason ("confidence 0.61 below 0.78 for openai/gpt-4o-mini"), keeping what it decided
where it lacked the evidence for the rest.

    python -m trace_eval judge --cascade cues openai/gpt-4o-mini openai/gpt-4o-audio-preview@audio \\
        --calibration calibration.json --out runs/cascade

Judges are named as in the calibration file (`MODEL[@PROMPT]`, trace_eval.judge.confidence.judge_key) and
run with the settings they were calibrated with (samples, swap, dropped cues, temperature: a threshold
holds only for those). Each judge's answers go to a run folder of its own, RUNDIR/judges/<n>-<judge>/, a
normal run over the pairs that reached it: its answers are cached as any run's are, so a cascade and a
single-judge run share them, and re-running the same command resumes every judge where it stopped.

RUNDIR/results.jsonl holds one line per pair: the deciding judge's record (verdicts, fused labels,
confidence) with `cascade` = {decided_by, confidence, reason, threshold, cost_usd (every judge asked),
steps: one per judge asked (judge, status, label, confidence, threshold, trusted, cost_usd)}. A pair no
judge trusts has `cascade.decided_by` null and `cascade.reason` saying why, so `evaluate` counts it against
coverage and scores agreement on the trusted verdicts only. Where the last judge gave the label calibrated
with too low a confidence, every dimension is null, `undetermined` with that reason and named in
`not_trusted`; where it left that label undetermined for want of evidence, its record is kept as it is: the
dimensions it decided keep their labels and confidences, and only those it could not decide are
undetermined, with its own reasons.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from trace_eval.bench import load_benchmark
from trace_eval.io import write_json
from trace_eval.judge import runfolder
from trace_eval.judge.backbones import available_backbones, backbone_for
from trace_eval.judge.confidence import CalibrationFileError, judge_key, read_calibration
from trace_eval.judge.runner import JudgeError, JudgeOptions, RunOutcome, _slug, default_out_dir, run_judge
from trace_eval.rubrics import Rubric, RubricError, load_rubric

__all__ = ["CascadeJudge", "cascade_judges", "run_cascade"]

FORMAT_VERSION = 1
JUDGES_DIR = "judges"


@dataclass(frozen=True)
class CascadeJudge:
    """One judge of a cascade, as its calibration gives it."""

    key: str  # MODEL@PROMPT, as the calibration file names it
    model: str
    judge: str
    threshold: float | None  # None: the calibration found none; its verdicts are never trusted
    why_no_threshold: str | None
    settings: dict[str, Any]  # what it was calibrated with


def _split(spec: str, rubric: Rubric) -> tuple[str, str]:
    model, _, prompt = spec.partition("@")
    try:
        return model, rubric.prompt(prompt or None).name
    except Exception as e:
        raise JudgeError(f"judge {spec!r}: {e}") from None


def cascade_judges(specs: list[str], calibration: dict[str, Any], rubric: Rubric, where: Path) -> list[CascadeJudge]:
    """The judges `specs` names (MODEL[@PROMPT], in order) with their thresholds from `calibration`."""
    if not specs:
        raise JudgeError("--cascade needs at least one judge")
    known = calibration["judges"]
    judges = []
    for spec in specs:
        model, prompt = _split(spec, rubric)
        key = judge_key(model, prompt)
        entry = known.get(key)
        if entry is None:
            raise JudgeError(
                f"{key} is not calibrated in {where} (it holds {', '.join(sorted(known)) or 'no judge'}): judge the "
                "labelled calibration pairs with it and run `python -m trace_eval calibrate` on all the runs"
            )
        settings = entry.get("settings") or {}
        if settings.get("rubric") not in (None, rubric.name):
            raise JudgeError(f"{key} was calibrated on the {settings.get('rubric')} rubric, not {rubric.name}")
        judges.append(CascadeJudge(key, model, prompt, entry.get("threshold"), entry.get("reason"), settings))
    if len({j.key for j in judges}) != len(judges):
        raise JudgeError("a judge is named twice in --cascade")
    policies = {str(j.settings["fusion"]) for j in judges if j.settings.get("fusion")}
    if len(policies) > 1:
        raise JudgeError(f"the judges were calibrated under different fusion policies ({', '.join(sorted(policies))})")
    return judges


def _options_for(options: JudgeOptions, judge: CascadeJudge, out: Path, only: frozenset[str]) -> JudgeOptions:
    s = judge.settings
    local = getattr(available_backbones()[backbone_for(judge.model)].load(), "no_calls", None)
    return replace(
        options,
        model=judge.model,
        api_base=None if local else options.api_base,  # a judge that calls nothing has no server
        judge=judge.judge,
        fusion=s.get("fusion") or options.fusion,
        samples=int(s.get("samples") or 1),
        swap=bool(s.get("swap")),
        drop=tuple(s.get("drop") or ()),
        temperature=float(s.get("temperature") or 0.0),
        logprobs=bool(s.get("logprobs")),
        out=out,
        only=only,
    )


def _label_and_confidence(record: dict, on: str) -> tuple[Any, float | None]:
    label = record.get("overall") if on == "overall" else (record.get("verdicts") or {}).get(on)
    confidence = (record.get("confidence") or {}).get(on)
    return label, None if confidence is None else float(confidence)


def _why_not_trusted(judge: CascadeJudge, record: dict | None, label: Any, confidence: float | None) -> str:
    if record is None:
        return f"not judged by {judge.key} (the run stopped)"
    if record.get("status") != "ok":
        return f"{judge.key} gave no verdict ({record.get('status')}: {record.get('reason')})"
    if label is None:
        return f"{judge.key} left it undetermined ({'; '.join((record.get('undetermined') or {}).values())})"
    if confidence is None:
        return f"{judge.key} gave no confidence ({record.get('confidence_reason')})"
    if judge.threshold is None:
        return f"{judge.key} has no calibrated threshold ({judge.why_no_threshold})"
    return f"confidence {confidence:.2f} below {judge.threshold:.2f} for {judge.key}"


def _left_undetermined(record: dict | None, on: str) -> bool:
    """Whether a judge's verdict lacks the label calibrated because the judge left a dimension undetermined."""
    return bool(
        record is not None
        and record.get("status") == "ok"
        and record.get("undetermined")
        and _label_and_confidence(record, on)[0] is None
    )


def _undetermined(last: dict | None, pair_id: str, reason: str, rubric: Rubric, policy: str) -> dict:
    """The record of a pair no judge trusted: null labels, each dimension undetermined with the reason."""
    dims = list((last or {}).get("verdicts") or rubric.names)
    status = "ok" if last is None or last.get("status") == "ok" else str(last.get("status"))
    record: dict[str, Any] = {
        "id": pair_id,
        "status": status,
        "reason": reason if status != "ok" else None,
        "verdicts": {dim: None for dim in dims},
        "undetermined": {dim: reason for dim in dims} if status == "ok" else {},
        "reasoning": (last or {}).get("reasoning"),
        "raw": (last or {}).get("raw"),
        "fused": {},
        "overall": None,
        "confidence": {**{dim: None for dim in dims}, "overall": None},
        "confidence_source": None,
        "confidence_reason": reason,
    }
    if status == "ok":  # labels withheld for want of trust, counted apart from those a judge could not decide
        record["not_trusted"] = [*dims, "overall"]
    return runfolder.set_overall(record, policy, rubric)


def run_cascade(
    options: JudgeOptions, specs: list[str], calibration: Path, notice: Callable[[str], None] | None = None
) -> RunOutcome:
    """Judge every pair of `options.bench` with the cascade `specs` (MODEL[@PROMPT], cheap first).

    The cascade's folder is held locked from start to end, as a single judge's is (runfolder.locked): a second
    run into it stops at once (RunFolderInUse)."""
    out = Path(options.out) if options.out else default_out_dir("cascade")
    with runfolder.locked(out, "judge --cascade"):
        return _run_cascade(replace(options, out=out), specs, calibration, notice)


def _run_cascade(
    options: JudgeOptions, specs: list[str], calibration: Path, notice: Callable[[str], None] | None = None
) -> RunOutcome:
    notice = notice or (lambda message: print(message, file=sys.stderr))
    started = time.perf_counter()
    try:
        doc = read_calibration(calibration)
        rubric = load_rubric(options.rubric)
    except (CalibrationFileError, RubricError) as e:
        raise JudgeError(str(e)) from None
    judges = cascade_judges(specs, doc, rubric, calibration)
    if all(j.threshold is None for j in judges):
        notice(
            f"warning: {calibration} trusts no judge of this cascade (none has a calibrated threshold: "
            f"{'; '.join(f'{j.key}: {j.why_no_threshold}' for j in judges)}), so every pair will be left "
            "undetermined (coverage 0%); calibrate on more human-labelled pairs, or with a lower --agreement"
        )
    on = str(doc.get("label") or "overall")
    policy = next((j.settings["fusion"] for j in judges if j.settings.get("fusion")), options.fusion)
    if on != "overall" and on not in rubric.names:
        raise JudgeError(f"{calibration} calibrates {on!r}, which the {rubric.name} rubric does not rate")
    bench = load_benchmark(options.bench, check_audio=False, rubric=rubric)
    pairs = bench.pairs[: options.limit] if options.limit else list(bench.pairs)
    out = Path(options.out) if options.out else default_out_dir("cascade")
    out.mkdir(parents=True, exist_ok=True)
    stages: list[dict[str, Any]] = [
        {"judge": j.key, "threshold": j.threshold, "settings": j.settings, "folder": None} for j in judges
    ]
    config: dict[str, Any] = {
        "format_version": runfolder.FORMAT_VERSION,
        "cascade_format_version": FORMAT_VERSION,
        "bench": str(bench.root),
        "manifest": str(bench.manifest_path),
        "model": "cascade: " + " > ".join(j.key for j in judges),
        "judge": None,
        "rubric": rubric.name,
        "rubric_version": rubric.id,
        "rubric_file": str(rubric.path) if rubric.path else None,
        "dimensions": list(rubric.names),
        "fusion": policy,
        "cascade": {
            "judges": stages,
            "calibration": str(calibration),
            "label": on,
            "target_agreement": doc.get("target_agreement"),
            "delta": doc.get("delta"),
            "guarantee": doc.get("guarantee"),
        },
        "limit": options.limit,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    previous = runfolder.read_config(out) if (out / runfolder.RESULTS).is_file() else {}
    if previous and [(j["judge"], j["threshold"]) for j in (previous.get("cascade") or {}).get("judges", [])] != [
        (j.key, j.threshold) for j in judges
    ]:
        raise JudgeError(f"{out} holds a run made with other judges or thresholds; give another --out")

    pending = [p.id for p in pairs]
    steps: dict[str, list[dict]] = {pair_id: [] for pair_id in pending}
    decided: dict[str, dict] = {}
    last: dict[str, dict | None] = {}
    reasons: dict[str, str] = {}
    stopped: str | None = None
    calls = cache_hits = 0
    spent = 0.0
    for n, judge in enumerate(judges, 1):
        if not pending:
            break
        folder = out / JUDGES_DIR / f"{n}-{_slug(judge.key)}"
        stages[n - 1]["folder"] = str(folder)
        outcome = run_judge(_options_for(options, judge, folder, frozenset(pending)), notice)
        run = outcome.summary.get("run", {})
        calls, cache_hits = calls + int(run.get("calls", 0)), cache_hits + int(run.get("cache_hits", 0))
        spent += float(run.get("spent_usd") or 0.0)
        by_id = {r["id"]: r for r in outcome.records}
        escalated = []
        for pair_id in pending:
            record = by_id.get(pair_id)
            label, confidence = _label_and_confidence(record, on) if record else (None, None)
            trusted = (
                record is not None
                and record.get("status") == "ok"
                and label is not None
                and confidence is not None
                and judge.threshold is not None
                and confidence >= judge.threshold
            )
            steps[pair_id].append(
                {
                    "judge": judge.key,
                    "status": record.get("status") if record else "not run",
                    "label": label,
                    "confidence": confidence,
                    "threshold": judge.threshold,
                    "trusted": trusted,
                    "cost_usd": record.get("cost_usd") if record else None,
                }
            )
            if trusted:
                decided[pair_id] = record  # type: ignore[assignment]
            else:
                last[pair_id] = record
                reasons[pair_id] = _why_not_trusted(judge, record, label, confidence)
                escalated.append(pair_id)
        pending = escalated
        if outcome.stopped:
            stopped = f"{judge.key}: {outcome.stopped}"
            break

    records = []
    for pair in pairs:
        history = steps[pair.id]
        costs = [s["cost_usd"] for s in history if s["cost_usd"] is not None]
        if pair.id in decided:
            record = dict(decided[pair.id])
            step = history[-1]
            record["cascade"] = {"decided_by": step["judge"], "confidence": step["confidence"], "reason": None}
        elif stopped and pair.id in pending and (len(history) < len(judges) or history[-1]["status"] == "not run"):
            record = _undetermined(None, pair.id, f"not finished: the cascade stopped ({stopped})", rubric, policy)
            record.update(status="skipped", reason=record["confidence_reason"], undetermined={})
            record.pop("not_trusted", None)  # never judged: nothing was withheld
            record["cascade"] = {"decided_by": None, "confidence": None, "reason": record["reason"]}
        elif _left_undetermined(last.get(pair.id), on):
            # The judge lacked the evidence, which no threshold changes: what it did decide stays.
            record = dict(last[pair.id])  # type: ignore[arg-type]
            record["cascade"] = {"decided_by": None, "confidence": None, "reason": reasons[pair.id]}
        else:
            record = _undetermined(last.get(pair.id), pair.id, reasons[pair.id], rubric, policy)
            record["cascade"] = {"decided_by": None, "confidence": None, "reason": reasons[pair.id]}
        record["cascade"].update(
            threshold=history[-1]["threshold"] if pair.id in decided else None,
            cost_usd=sum(costs) if costs else None,
            steps=history,
        )
        record["cost_usd"] = sum(costs) if costs else record.get("cost_usd")
        records.append(runfolder.set_overall(record, policy, rubric))
    runfolder.write_results(out / runfolder.RESULTS, records)
    write_json(out / runfolder.CONFIG, config)
    deciding = Counter(r["cascade"]["decided_by"] for r in records)
    run_info = {
        "calls": calls,
        "cache_hits": cache_hits,
        "spent_usd": spent,
        "wall_s": round(time.perf_counter() - started, 3),
        "stopped": stopped,
        "not_run": [r["id"] for r in records if r["status"] == "skipped" and r["cascade"]["decided_by"] is None],
    }
    summary = runfolder.summarize(records, config, run_info, rubric)
    summary["cascade"] = {
        "decided_by": {j.key: deciding.get(j.key, 0) for j in judges},
        "undetermined": deciding.get(None, 0),
        "coverage": (len(records) - deciding.get(None, 0)) / len(records) if records else None,
    }
    write_json(out / runfolder.SUMMARY, summary)
    return RunOutcome(out=out, summary=summary, stopped=stopped, records=records)
