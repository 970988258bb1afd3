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
    decided_by    the dimensions the overall label turns on under that policy (fusion.Fusion.decided_by: those
                  whose label, changed, would change it), whose confidences the overall confidence follows;
                  null where the overall label is null
    tokens        {"prompt", "completion"} over every answer used (cached ones included)
    cost_usd      price of those answers (null when the price is unknown)
    latency_s     seconds spent waiting for the backbone in this run (0 for cached answers)
    cache_hit     true when no call was made for this pair
    repairs       repair requests made
    samples       with --samples/--swap: every answer: order, sample, status, reason, verdicts
                  (in the manifest's numbering), reasoning, raw, cache_hit
    orders        with --swap: {"original", "swapped"} verdicts per order (swapped mapped back)
    confidence    (format 2) {dimension: 0..1, "overall": 0..1} how sure the verdict is (trace_eval.judge.confidence);
                  a value is null where the label is null or nothing measures it
    confidence_source  "stated" (the judge's own, e.g. the cues backbone's margins) | "agreement" (share of
                  the answers, --samples/--swap, that gave the label) | null
    confidence_reason  why the confidence is null (e.g. one answer that states none), else null
    cascade       (cascade runs) which judge decided, its confidence, threshold and cost, every judge asked, and
                  why none did (trace_eval.judge.cascade)
    instruction_language  the language the answers are held to and which evidence told it: {code, probability,
                  source: declared | detected | text | transcript, evidence: what else was read, reason: why code
                  is null}; null where nothing records one (absent in run folders written before it existed)
    not_trusted   (cascade runs) the labels withheld because no judge trusted them (dimensions and "overall"),
                  counted apart from those a judge left undetermined for want of evidence
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fusion
from trace_eval.io import atomic_write_text, close_match, read_json, write_json
from trace_eval.judge.confidence import OVERALL, overall_confidence
from trace_eval.rubrics import Rubric, RubricError, rubric_of_run

__all__ = [
    "RESULTS",
    "CONFIG",
    "SUMMARY",
    "Results",
    "RunFolder",
    "RunFolderError",
    "RunFolderInUse",
    "ResultsWriter",
    "locked",
    "view_page",
    "read_results",
    "read_run_folder",
    "refuse",
    "summarize",
    "position_consistency",
]

FORMAT_VERSION = 2  # 2: confidence, confidence_source, confidence_reason, cascade
RESULTS, CONFIG, SUMMARY = "results.jsonl", "config.json", "summary.json"
VIEW = "view"  # RUNDIR/view: the audit page of one run (python -m trace_eval view RUNDIR)
STATUSES = ("ok", "invalid", "error", "skipped")


class RunFolderError(ValueError):
    """A run folder that is missing, damaged or was made with other settings."""


class RunFolderInUse(RunFolderError):
    """Another process holds the run folder's lock: two writers would lose each other's verdicts."""


LOCK = ".lock"  # held (flock) by the process writing the folder; the OS releases it when that process ends


def view_page(run_dir: str | Path) -> Path:
    """Where `view RUNDIR` writes the page of one run."""
    return Path(run_dir) / VIEW / "index.html"


@contextlib.contextmanager
def locked(folder: str | Path, what: str) -> Iterator[Path]:
    """Hold `folder`'s lock while writing it (creating the folder); another holder makes this stop at once.

    The lock is an OS lock (flock) on FOLDER/.lock, so it is released when its holder ends, even when
    killed; the file says which process holds it. A folder this call created and left holding nothing
    else is removed again.
    """
    folder = Path(folder)
    created = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    handle = open(folder / LOCK, "a+", encoding="utf-8")  # noqa: SIM115 - held open while the lock is held
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise RunFolderInUse(
            f"{folder} is in use by {holder}: two runs writing one folder would lose verdicts. "
            "Wait for it to end (then run again to resume), or give another --out"
        ) from None
    try:
        handle.seek(0)
        handle.truncate()
        handle.write(f"process {os.getpid()} ({what}, since {time.strftime('%Y-%m-%d %H:%M:%S')})\n")
        handle.flush()
        yield folder
    finally:
        handle.truncate(0)
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()
        if created and [p.name for p in folder.iterdir()] == [LOCK]:
            (folder / LOCK).unlink()
            folder.rmdir()


@dataclass
class Results:
    """results.jsonl as read: every object with an id, in file order, and every line that could not be used."""

    records: list[dict] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # "results.jsonl line 7: not JSON (...); skipped", ...

    def latest(self) -> dict[str, dict]:
        """The records by id; when an id appears more than once the last line wins (a resumed run
        appends its newer answer)."""
        by_id: dict[str, dict] = {}
        for record in self.records:
            by_id.pop(str(record["id"]), None)
            by_id[str(record["id"])] = record
        return by_id


def read_results(path: Path) -> Results:
    """Read results.jsonl (no file: no records). A line that is not JSON or has no id cannot be matched
    to an item: it is reported with its line number (a line cut short by an interrupted run is one), as
    is an id given more than once."""
    results = Results()
    if not path.is_file():
        return results
    seen: set[str] = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            results.problems.append(f"{path.name} line {number}: not JSON ({e.msg}); skipped")
            continue
        if not isinstance(record, dict) or record.get("id") is None:
            results.problems.append(f"{path.name} line {number}: no id; skipped")
            continue
        item_id = str(record["id"])
        if item_id in seen:
            results.problems.append(f"id {item_id}: appears more than once; the last line is used")
        seen.add(item_id)
        results.records.append(record)
    return results


@dataclass
class RunFolder:
    """A judge run folder as read back: its settings, its records by id, and what could not be used."""

    path: Path
    config: dict[str, Any]  # config.json; {} when absent (folders of hand-made runs)
    records: dict[str, dict]  # results.jsonl objects by id, the last line of an id winning
    problems: list[str]  # unusable lines and repeated ids (see `read_results`)
    summary: dict[str, Any]  # summary.json as the judge wrote it; {} when absent or unreadable


def read_run_folder(folder: str | Path) -> RunFolder:
    """RUNDIR/config.json, results.jsonl and summary.json; raises RunFolderError as `read_config` does."""
    folder = Path(folder)
    config = read_config(folder)
    read = read_results(folder / RESULTS)
    return RunFolder(folder, config, read.latest(), read.problems, _read_summary(folder))


def read_config(folder: str | Path) -> dict[str, Any]:
    """RUNDIR/config.json ({} for a folder without one); raises RunFolderError when the folder has no
    results.jsonl or its config.json is not JSON."""
    folder = Path(folder)
    if not folder.exists():
        raise RunFolderError(
            f"{folder}: no such folder{close_match(folder)}; a run folder is one written by"
            f" `python -m trace_eval judge` (with {RESULTS} and {CONFIG})"
        )
    if not (folder / RESULTS).is_file():
        raise RunFolderError(f"{folder}: no {RESULTS}; expected a folder written by `python -m trace_eval judge`")
    config_path = folder / CONFIG
    if not config_path.is_file():
        return {}
    try:
        loaded = json.loads(config_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise RunFolderError(f"{config_path}: not JSON ({e.msg} at line {e.lineno})") from e
    return loaded if isinstance(loaded, dict) else {}


def read_line(runs: Iterable[str | Path], bench: str | Path | None = None) -> str:
    """What a command read, in one line: the benchmark (given, else the one the runs judged) and the runs."""
    runs = [Path(r) for r in runs]
    benches = {str(bench)} if bench is not None else set()
    if bench is None:
        for run in runs:
            try:
                recorded = read_config(run).get("bench")
            except RunFolderError:
                recorded = None
            if recorded:
                benches.add(str(recorded))
    where = ", ".join(sorted(benches)) or "unknown (not in the runs' config.json)"
    read = f"benchmark {where}"
    if runs:
        read += f"; run{'s' if len(runs) > 1 else ''} {', '.join(str(r) for r in runs)}"
    return f"read: {read}"


def _read_summary(folder: Path) -> dict[str, Any]:
    """summary.json, or {} when it is absent or unreadable (it only adds to a report)."""
    try:
        summary = json.loads((folder / SUMMARY).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    return summary if isinstance(summary, dict) else {}


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
        record["fused"], record["overall"], record["decided_by"] = {}, None, None
        return record
    verdicts = record.get("verdicts") if record.get("status") == "ok" else None
    record["fused"] = rubric.fusion.fuse_all(verdicts)
    record["overall"] = record["fused"].get(policy)
    decided = rubric.fusion.decided_by(policy, verdicts) if verdicts and record["overall"] is not None else None
    record["decided_by"] = None if decided is None else list(decided)
    if isinstance(record.get("confidence"), dict):
        record["confidence"][OVERALL] = overall_confidence(record, policy, rubric)
    return record


_ORDER_RULES = {
    "typed-tie": "disagreement -> both_bad if either order said both_bad, else both_good",
    "win-lose-tie": "disagreement -> tie",
}


def _both_orders(records: Iterable[dict]) -> list[dict]:
    """The records judged in both presentation orders (judge --swap)."""
    return [r for r in records if (r.get("orders") or {}).get("original") and r["orders"].get("swapped")]


def same_in_both_orders(records: Iterable[dict], dimensions: Iterable[str]) -> dict[str, dict[str, bool]]:
    """{dimension: {item id: whether both presentation orders gave the same label}} over the records
    judged in both orders that rated the dimension."""
    swapped = _both_orders(records)
    return {
        dim: {
            str(r["id"]): r["orders"]["original"][dim] == r["orders"]["swapped"].get(dim)
            for r in swapped
            if dim in r["orders"]["original"]
        }
        for dim in dimensions
    }


def position_consistency(records: list[dict], rubric: Rubric) -> dict | None:
    """Share of (pair, dimension) on which both presentation orders gave the same label."""
    pairs = [str(r["id"]) for r in _both_orders(records)]
    if not pairs:
        return None
    same = same_in_both_orders(records, rubric.names)
    rules = sorted({_ORDER_RULES[d.labels.kind] for d in rubric.dimensions if d.labels.kind in _ORDER_RULES})
    return {
        "rate": sum(sum(by_item.values()) for by_item in same.values()) / sum(map(len, same.values())),
        "per_dimension": {
            dim: sum(by_item.values()) / len(by_item) if by_item else None for dim, by_item in same.items()
        },
        "pairs_fully_consistent": sum(all(by_item.get(item, True) for by_item in same.values()) for item in pairs)
        / len(pairs),
        "pairs": len(pairs),
        "rule": "; ".join(rules),
    }


def _label_key(label: object) -> str:
    return label if isinstance(label, str) else json.dumps(label)


def summarize(records: list[dict], config: dict, run: dict | None, rubric: Rubric, cues: dict | None = None) -> dict:
    """summary.json: what the records hold, the settings, `run` (calls, spend, wall time, stop reason)
    and `cues` (which cue groups the clips had, from trace_eval.judge.evidence; null when not known).

    `labels` counts every label of every dimension (and of `overall` when the rubric fuses);
    `undetermined` counts the items of status ok left null on each (overall: on any dimension).
    """
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


def refuse(folder: str | Path, policy: str | None = None, notice: Callable[[str], None] | None = None) -> dict:
    """Re-fuse a finished run under `policy` (None: the run's own) without any call: rewrite overall,
    config and summary.

    Lines of results.jsonl that cannot be read are left out of the rewritten file, each told to `notice`
    (default: printed to stderr).
    """
    notice = notice or (lambda message: print(message, file=sys.stderr))
    folder = Path(folder)
    config = load_config(folder)
    with locked(folder, "fuse"):
        return _refuse(folder, config, policy, notice)


def _refuse(folder: Path, config: dict, policy: str | None, notice: Callable[[str], None]) -> dict:
    try:
        rubric = rubric_of_run(config)
    except RubricError as e:
        raise RunFolderError(f"{folder}: {e}") from None
    if rubric.fusion is None:
        raise RunFolderError(
            f"{folder} was judged with the {rubric.name} rubric, which has no overall label to "
            "fuse; its dimensions are evaluated one by one"
        )
    policy = policy or config.get("fusion")
    if not isinstance(policy, str):
        raise RunFolderError(
            f"{folder}: config.json names no fusion policy; pass --fusion, one of: {', '.join(rubric.fusion.policies)}"
        )
    fusion.get_policy(policy)
    if policy not in rubric.fusion.policies:
        raise RunFolderError(f"the {rubric.name} rubric fuses under {', '.join(rubric.fusion.policies)}, not {policy}")
    results = read_results(folder / RESULTS)
    for problem in results.problems:
        notice(f"warning: {folder}: {problem}")
    records = [set_overall(r, policy, rubric) for r in results.records]
    write_results(folder / RESULTS, records)
    config["fusion"] = policy
    write_json(folder / CONFIG, config)
    previous = read_json(folder / SUMMARY) if (folder / SUMMARY).is_file() else {}
    summary = summarize(records, config, previous.get("run"), rubric, previous.get("cues"))
    write_json(folder / SUMMARY, summary)
    return summary
