"""The pairs the judges are least sure of, offered to a team after the random sample that calibration needs.

Judges disagree on a pair (their overall labels differ), or are unsure of it (their lowest confidence on the
overall label is low): those pairs are where a person's label teaches the most. They are not a random draw,
so they are recorded in `BENCH/labels/least_sure.json` and kept apart: `calibrate` fits on random pairs
only and says so (sample.fitting_pairs).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trace_eval.io import read_json, write_json
from trace_eval.labels.store import FOLDER, content_keys

if TYPE_CHECKING:
    from trace_eval.bench import Benchmark

__all__ = ["kept_apart", "least_sure_path", "order_least_sure", "record_least_sure"]

KIND = "trace-eval least-sure pairs"


def least_sure_path(root: str | Path) -> Path:
    return Path(root) / FOLDER / "least_sure.json"


def order_least_sure(bench: Benchmark, run_dirs: list[str | Path], leave: set[str]) -> list[dict[str, Any]]:
    """The benchmark's pairs outside `leave`, those the judges disagree on first, then by their lowest confidence
    (pairs no judge gave a confidence come last, in manifest order)."""
    from trace_eval.evaluation.records import load_runs

    runs = load_runs(run_dirs)
    rows: list[dict[str, Any]] = []
    order: dict[str, tuple[bool, float, int]] = {}
    for n, pair in enumerate(bench.pairs):
        if pair.id in leave:
            continue
        labels = {run.name: run.raws.get(pair.id, {}).get("overall") for run in runs}
        confidences = [
            float(c)
            for run in runs
            if isinstance(c := (run.raws.get(pair.id, {}).get("confidence") or {}).get("overall"), int | float)
        ]
        given = {v for v in labels.values() if v is not None}
        lowest = min(confidences) if confidences else None
        why = []
        if len(given) > 1:
            why.append("the judges disagree: " + ", ".join(f"{k} {v}" for k, v in labels.items()))
        if lowest is not None:
            why.append(f"lowest confidence {lowest:.2f}")
        rows.append(
            {
                "id": pair.id,
                "disagree": len(given) > 1,
                "confidence": lowest,
                "why": "; ".join(why) or "no verdict",
            }
        )
        order[pair.id] = (len(given) <= 1, lowest if lowest is not None else 2.0, n)
    rows.sort(key=lambda r: order[r["id"]])
    return rows


def record_least_sure(bench: Benchmark, run_dirs: list[str | Path], leave: set[str], n: int | None = None) -> list[str]:
    """Order the pairs outside `leave` by how unsure the judges are and record them (ids and content keys),
    keeping every pair an earlier start recorded (labels made on them stay apart). Returns the ids in order."""
    rows = order_least_sure(bench, run_dirs, leave)
    if n is not None:
        rows = rows[:n]
    path = least_sure_path(bench.root)
    keys = content_keys(bench)
    earlier = read_json(path) if path.is_file() else {}
    ids = [r["id"] for r in rows]
    before = [i for i in earlier.get("ids", []) if i not in set(ids) and i in {p.id for p in bench.pairs}]
    write_json(
        path,
        {
            "kind": KIND,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "runs": [str(Path(r)) for r in run_dirs],
            "method": "judges' overall labels differ first, then the lowest confidence on the overall label",
            "ids": before + ids,
            "why": {**earlier.get("why", {}), **{r["id"]: r["why"] for r in rows}},
            "content_keys": {**earlier.get("content_keys", {}), **{i: keys[i].key for i in ids if i in keys}},
        },
    )
    return ids


def kept_apart(bench: Benchmark) -> set[str]:
    """The pairs (current ids, found by content where they moved) offered for the judges' doubt: not random."""
    path = least_sure_path(bench.root)
    if not path.is_file():
        return set()
    record = read_json(path)
    recorded = record.get("content_keys") or {}
    keys = content_keys(bench)
    by_key = {c.key: pid for pid, c in keys.items()}
    found = set()
    for pid in record.get("ids", []):
        key = recorded.get(pid)
        if key is not None and key in by_key:
            found.add(by_key[key])
        elif key is None and pid in keys:
            found.add(pid)
    return found
