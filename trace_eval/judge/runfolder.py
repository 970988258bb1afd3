"""The run folder a judge run writes, and reading it back.

    config.json     resolved settings (no API keys)
    results.jsonl   one JSON line per pair, appended and flushed as each pair finishes
    summary.json    counts by status, tokens, cost, label distribution, undetermined counts, which cue
                    groups the clips had (`cues`, see trace_eval.judge.evidence), settings

results.jsonl fields (one line per item):
    id            item id (str)
    status        "ok" | "invalid" (answer unusable after repair) | "error" (call failed) | "skipped"
    reason        why the status is not ok, else null
    verdicts      {dimension: label} for the dimensions of the run's rubric that apply to the item
                  (trace: "content", "voice_quality", "paralinguistics"), all null unless ok; with status
                  ok a label is null only when the judge left that dimension undetermined
    undetermined  {dimension: why} for each dimension left null for want of evidence (the cues backbone:
                  the deciding cue was unmeasured, dropped, or from an unreliable transcript); {} otherwise.
                  Absent in run folders written before it existed, which read as {}.
    reasoning     the judge's reasoning (first answer), raw: its raw answer text
    fused         {policy: overall label} for every registered fusion policy (null unless ok, and null
                  under every policy when a dimension is undetermined: fusion over a null is null);
                  {} for rubrics without fusion
    overall       fused label under the run's policy (config "fusion"); null for rubrics without fusion
    tokens        {"prompt", "completion"} over every answer used (cached ones included)
    cost_usd      price of those answers (null when the price is unknown)
    latency_s     seconds spent waiting for the backbone in this run (0 for cached answers)
    cache_hit     true when no call was made for this pair
    repairs       repair requests made
    samples       with --samples/--swap: every answer: order, sample, status, reason, verdicts
                  (in the manifest's numbering), reasoning, raw, cache_hit
    orders        with --swap: {"original", "swapped"} verdicts per order (swapped mapped back)
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Iterable

import fusion
from trace_eval.io import atomic_write_text, read_json, write_json
from trace_eval.rubrics import Rubric, RubricError, load_rubric, rubric_of_run

__all__ = [
    "RESULTS",
    "CONFIG",
    "SUMMARY",
    "RunFolderError",
    "ResultsWriter",
    "read_results",
    "refuse",
    "summarize",
    "position_consistency",
]

FORMAT_VERSION = 1
RESULTS, CONFIG, SUMMARY = "results.jsonl", "config.json", "summary.json"
STATUSES = ("ok", "invalid", "error", "skipped")


class RunFolderError(ValueError):
    """A run folder that is missing, damaged or was made with other settings."""


def read_results(path: Path) -> list[dict]:
    """Records of results.jsonl; a line cut short by an interrupted run is ignored (it will be redone)."""
    records = []
    if not path.is_file():
        return records
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict) and "id" in record:
            records.append(record)
    return records


def write_results(path: Path, records: Iterable[dict]) -> None:
    atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False, allow_nan=False) + "\n" for r in records))


class ResultsWriter:
    """Appends one line per finished pair and flushes it, so an interrupted run keeps every finished pair."""

    def __init__(self, path: Path):
        self.path = path
        self._file = open(path, "a", encoding="utf-8")

    def append(self, record: dict) -> None:
        self._file.write(json.dumps(record, ensure_ascii=False, allow_nan=False) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def _trace() -> Rubric:
    return load_rubric("trace")


def undetermined_reasons(verdicts: dict[str, Any], answers: Iterable[Any]) -> dict[str, str]:
    """{dimension: why} for the null labels of `verdicts`, from the first answer that explains each."""
    reasons: dict[str, str] = {}
    for dim, label in verdicts.items():
        if label is None:
            why = next((a.undetermined[dim] for a in answers if dim in (a.undetermined or {})), None)
            reasons[dim] = why or "left undetermined by the judge"
    return reasons


def set_overall(record: dict, policy: str, rubric: Rubric) -> dict:
    """Recompute `fused` (every policy of the rubric) and `overall` (under `policy`) from the verdicts.

    Rubrics without fusion have no overall label: `fused` is {} and `overall` null.
    """
    if rubric.fusion is None:
        record["fused"], record["overall"] = {}, None
        return record
    verdicts = record.get("verdicts") if record.get("status") == "ok" else None
    record["fused"] = rubric.fusion.fuse_all(verdicts)
    record["overall"] = record["fused"].get(policy)
    return record


_ORDER_RULES = {
    "typed-tie": "disagreement -> both_bad if either order said both_bad, else both_good",
    "win-lose-tie": "disagreement -> tie",
}


def position_consistency(records: list[dict], rubric: Rubric | None = None) -> dict | None:
    """Share of (pair, dimension) on which both presentation orders gave the same label."""
    rubric = rubric or _trace()
    dimensions = rubric.names
    agree: Counter[str] = Counter()
    asked: Counter[str] = Counter()
    total = 0
    fully = 0
    for record in records:
        orders = record.get("orders") or {}
        original, swapped = orders.get("original"), orders.get("swapped")
        if not original or not swapped:
            continue
        total += 1
        same = {dim: original.get(dim) == swapped.get(dim) for dim in dimensions if dim in original}
        asked.update(same.keys())
        agree.update(dim for dim, ok in same.items() if ok)
        fully += all(same.values())
    if total == 0:
        return None
    rules = sorted({_ORDER_RULES[d.labels.kind] for d in rubric.dimensions if d.labels.kind in _ORDER_RULES})
    return {
        "rate": sum(agree.values()) / sum(asked.values()),
        "per_dimension": {dim: agree[dim] / asked[dim] if asked[dim] else None for dim in dimensions},
        "pairs_fully_consistent": fully / total,
        "pairs": total,
        "rule": "; ".join(rules),
    }


def _label_key(label: object) -> str:
    return label if isinstance(label, str) else json.dumps(label)


def summarize(records: list[dict], config: dict, run: dict | None = None, rubric: Rubric | None = None,
              cues: dict | None = None) -> dict:
    """summary.json: what the records hold, the settings, `run` (calls, spend, wall time, stop reason)
    and `cues` (which cue groups the clips had, from trace_eval.judge.evidence; null when not known).

    `labels` counts every label of every dimension (and of `overall` when the rubric fuses);
    `undetermined` counts the items of status ok left null on each (overall: on any dimension).
    """
    rubric = rubric or _trace()
    status = Counter(r.get("status") for r in records)
    keys = (*rubric.names, "overall") if rubric.fusion else rubric.names
    labels: dict[str, Counter] = {dim: Counter() for dim in keys}
    undetermined: Counter[str] = Counter()
    tokens = {"prompt": 0, "completion": 0}
    cost = 0.0
    cost_known = False
    for r in records:
        for key in tokens:
            tokens[key] += int((r.get("tokens") or {}).get(key) or 0)
        if r.get("cost_usd") is not None:
            cost += float(r["cost_usd"])
            cost_known = True
        if r.get("status") == "ok":
            for dim, label in (r.get("verdicts") or {}).items():
                if dim in labels:
                    labels[dim][_label_key(label)] += 1
                    undetermined[dim] += label is None
            if rubric.fusion:
                labels["overall"][r.get("overall")] += 1
                undetermined["overall"] += r.get("overall") is None
    values = {dim: [_label_key(v) for v in space.values] for dim, space in rubric.spaces().items()}
    values["overall"] = list(fusion.LABELS)
    summary: dict[str, Any] = {
        "format_version": FORMAT_VERSION,
        "pairs": len(records),
        "status": {s: status.get(s, 0) for s in STATUSES},
        "fusion": config.get("fusion"),
        "labels": {k: {label: c[label] for label in values[k]} for k, c in labels.items()},
        "undetermined": {k: undetermined[k] for k in keys},
        "tokens": tokens,
        "cost_usd": cost if cost_known else None,
        "cache_hits": sum(1 for r in records if r.get("cache_hit")),
        "run": run or {},
        "cues": cues,
        "settings": config,
    }
    if config.get("swap"):
        summary["position_consistency"] = position_consistency(records, rubric)
    return summary


def load_config(folder: Path) -> dict:
    path = folder / CONFIG
    if not path.is_file():
        raise RunFolderError(f"{folder}: no {CONFIG}; is this a judge run folder?")
    return read_json(path)


def refuse(folder: str | Path, policy: str) -> dict:
    """Re-fuse a finished run under `policy` without any call: rewrite overall, config and summary."""
    folder = Path(folder)
    fusion.get_policy(policy)
    config = load_config(folder)
    try:
        rubric = rubric_of_run(config)
    except RubricError as e:
        raise RunFolderError(f"{folder}: {e}") from None
    if rubric.fusion is None:
        raise RunFolderError(f"{folder} was judged with the {rubric.name} rubric, which has no overall label to "
                             "fuse; its dimensions are evaluated one by one")
    if policy not in rubric.fusion.policies:
        raise RunFolderError(f"the {rubric.name} rubric fuses under {', '.join(rubric.fusion.policies)}, not {policy}")
    records = [set_overall(r, policy, rubric) for r in read_results(folder / RESULTS)]
    write_results(folder / RESULTS, records)
    config["fusion"] = policy
    write_json(folder / CONFIG, config)
    previous = read_json(folder / SUMMARY) if (folder / SUMMARY).is_file() else {}
    summary = summarize(records, config, previous.get("run"), rubric, previous.get("cues"))
    write_json(folder / SUMMARY, summary)
    return summary
