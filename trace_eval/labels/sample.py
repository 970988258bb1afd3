"""A seeded random sample of pairs to label, stratified by system pair, and recorded in `BENCH/labels/sample.json`
so that `calibrate` can say its pairs were drawn at random (the exchangeability its guarantee assumes).

Each system pair (the two systems of an item, in either seat; "unnamed" where the manifest names none) gets
its share of the sample, rounded by largest remainder, and its items are drawn with the seed. `split`
halves every stratum's draw: the first half for calibration, the rest for evaluation, so a threshold is
never scored on the pairs it was fitted on.
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trace_eval.io import read_json, write_json
from trace_eval.labels.store import FOLDER, LabelError, content_keys

if TYPE_CHECKING:
    from trace_eval.bench import Benchmark

__all__ = ["KIND", "draw", "fitting_pairs", "read_sample", "sample_path"]

KIND = "trace-eval label sample"
FILE = "sample.json"


def sample_path(root: str | Path) -> Path:
    return Path(root) / FOLDER / FILE


def _stratum(model_a: Any, model_b: Any) -> str:
    names = sorted(str(m) for m in (model_a, model_b) if m)
    return " vs ".join(names) if names else "unnamed"


def draw(bench: Benchmark, n: int, seed: int, split: bool = False) -> dict[str, Any]:
    """The sample's record (ids in manifest order); written to labels/sample.json, or the one recorded
    there when it was drawn with the same settings. Another recorded draw is refused, not replaced."""
    if n < 1:
        raise LabelError(f"--sample {n}: draw at least one pair")
    path = sample_path(bench.root)
    if path.is_file():
        recorded = read_json(path)
        if (recorded.get("n"), recorded.get("seed"), bool(recorded.get("split"))) == (n, seed, split):
            return current(bench, recorded)
        raise LabelError(
            f"{path} records another draw (--sample {recorded.get('n')} --seed {recorded.get('seed')}"
            f"{' --split' if recorded.get('split') else ''}); label with those settings, or move the file away to "
            "draw another (every annotator should label the same draw)"
        )
    strata: dict[str, list[str]] = {}
    for pair in bench.pairs:
        strata.setdefault(_stratum(pair.model_a, pair.model_b), []).append(pair.id)
    total = len(bench.pairs)
    n = min(n, total)
    quotas = {name: n * len(ids) / total for name, ids in strata.items()}
    counts = {name: int(q) for name, q in quotas.items()}
    for name in sorted(quotas, key=lambda k: (counts[k] - quotas[k], k))[: n - sum(counts.values())]:
        counts[name] += 1
    rng = random.Random(seed)
    chosen: dict[str, list[str]] = {}
    calibration: set[str] = set()
    for name in sorted(strata):
        ids = rng.sample(strata[name], counts[name])
        chosen[name] = ids
        calibration.update(ids[: (len(ids) + 1) // 2])
    picked = {i for ids in chosen.values() for i in ids}
    order = [p.id for p in bench.pairs if p.id in picked]
    record: dict[str, Any] = {
        "kind": KIND,
        "n": n,
        "seed": seed,
        "split": split,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "method": "seeded simple random sample within each system pair, sized in proportion (largest remainder)",
        "strata": {name: len(ids) for name, ids in sorted(chosen.items())},
        "ids": order,
    }
    if split:
        record["calibration"] = [i for i in order if i in calibration]
        record["evaluation"] = [i for i in order if i not in calibration]
    # The same pairs by content, so that a re-prepared benchmark (new ids) keeps its draw.
    keys = content_keys(bench)
    record["content_keys"] = {i: keys[i].key for i in order if i in keys}
    write_json(path, record)
    return current(bench, record)


def current(bench: Benchmark, record: dict[str, Any]) -> dict[str, Any]:
    """The draw in `bench`'s ids: a pair whose id now holds other clips, or that moved, is found by its content."""
    recorded = record.get("content_keys") or {}
    if not recorded:
        return record
    keys = content_keys(bench)
    by_key: dict[str, str] = {}
    for pid, content in keys.items():
        by_key.setdefault(content.key, pid)

    def now(ids: list[str]) -> list[str]:
        found = []
        for i in ids:
            key = recorded.get(i)
            if key is None or (i in keys and keys[i].key == key):
                found.append(i)
            elif key in by_key:
                found.append(by_key[key])
        return found

    mapped = dict(record)
    for field in ("ids", "calibration", "evaluation"):
        if field in record:
            mapped[field] = now(record[field])
    return mapped


def read_sample(root: str | Path) -> dict[str, Any] | None:
    """The recorded draw of a benchmark folder, or None."""
    path = sample_path(root)
    if not path.is_file():
        return None
    record = read_json(path)
    return record if isinstance(record, dict) and record.get("kind") == KIND else None


def fitting_pairs(bench: str | Path, labels: Any) -> tuple[Any, dict[str, Any]]:
    """The human labels `calibrate` fits on (`labels`, a HumanLabels), and how its pairs were drawn.

    With a recorded split, only the calibration half is kept, so `evaluate --calibration` can score the
    thresholds on the evaluation half.
    """
    from dataclasses import replace

    record = read_sample(bench)
    if record is not None:
        from trace_eval.bench import load_benchmark

        record = current(load_benchmark(bench, check_audio=False), record)
    if record is None:
        return labels, {
            "drawn": "not drawn by `label --sample`: that these pairs are exchangeable with later ones is assumed, "
            "not shown",
            "random": False,
        }
    labelled = {i for i, got in labels.labels.items() if got}
    described = (
        f"a seeded random sample of {record['n']} (seed {record['seed']}), stratified by system pair "
        f"({sample_path(bench)})"
    )
    if record.get("split"):
        keep = set(record["calibration"])
        labels = replace(labels, labels={i: got for i, got in labels.labels.items() if i in keep})
        labelled &= keep
        described += f"; its calibration half ({len(keep)} pairs), the evaluation half held out"
    outside = sorted(labelled - set(record["ids"]))
    if outside:
        described += f"; but {len(outside)} labelled pair(s) lie outside the draw, so not all were drawn at random"
    return labels, {"drawn": described, "random": not outside, "sample": {k: record[k] for k in ("n", "seed", "split")}}
