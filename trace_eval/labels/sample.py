"""A seeded random sample of pairs to label, stratified by system pair, and recorded in `BENCH/labels/sample.json`
so that `calibrate` can say its pairs were drawn at random (the exchangeability its guarantee assumes).

Each system pair (the two systems of an item, in either seat; "unnamed" where the manifest names none) gets
its share of the sample, rounded by largest remainder, and its items are drawn with the seed. `split`
halves every stratum's draw: the first half for calibration, the rest for evaluation, so a threshold is
never scored on the pairs it was fitted on.

The record keeps the population it was drawn from (each stratum's pairs, by content). A benchmark that
grew since (a system added by `prepare pairs`) has pairs the draw could never have picked: `coverage` names
the strata the draw lacks and those pairs, `label --sample` says so, `calibrate` limits its guarantee to the
strata drawn, and `extend` draws over the new pairs at the first draw's rate, each new stratum halved as
before, keeping every pair (and so every label) already drawn.
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

__all__ = ["KIND", "coverage", "coverage_lines", "draw", "fitting_pairs", "read_sample", "sample_path"]

KIND = "trace-eval label sample"
FILE = "sample.json"


def sample_path(root: str | Path) -> Path:
    return Path(root) / FOLDER / FILE


def _stratum(model_a: Any, model_b: Any) -> str:
    names = sorted(str(m) for m in (model_a, model_b) if m)
    return " vs ".join(names) if names else "unnamed"


def _strata(bench: Benchmark, ids: set[str] | None = None) -> dict[str, list[str]]:
    """{stratum: ids in manifest order} of the benchmark's pairs (those in `ids` only, when given)."""
    strata: dict[str, list[str]] = {}
    for pair in bench.pairs:
        if ids is None or pair.id in ids:
            strata.setdefault(_stratum(pair.model_a, pair.model_b), []).append(pair.id)
    return strata


def _allot(n: int, strata: dict[str, list[str]]) -> dict[str, int]:
    """n draws shared among the strata in proportion to their sizes, rounded by largest remainder."""
    total = sum(map(len, strata.values()))
    quotas = {name: n * len(ids) / total for name, ids in strata.items()}
    counts = {name: int(q) for name, q in quotas.items()}
    for name in sorted(quotas, key=lambda k: (counts[k] - quotas[k], k))[: n - sum(counts.values())]:
        counts[name] += 1
    return counts


def _pick(strata: dict[str, list[str]], counts: dict[str, int], rng: random.Random) -> tuple[list[str], set[str]]:
    """(the ids drawn, those of them in each stratum's calibration half, the first half of its draw)."""
    picked: list[str] = []
    calibration: set[str] = set()
    for name in sorted(strata):
        ids = rng.sample(strata[name], counts[name])
        picked += ids
        calibration.update(ids[: (len(ids) + 1) // 2])
    return picked, calibration


def _key(keys: dict[str, Any], pair_id: str) -> str:
    return keys[pair_id].key if pair_id in keys else f"id:{pair_id}"


def draw(bench: Benchmark, n: int, seed: int, split: bool = False, extend: bool = False) -> dict[str, Any]:
    """The sample's record (ids in manifest order) with its `coverage` of the benchmark now; written to
    labels/sample.json, or the one recorded there when it was drawn with the same settings (extended over
    the pairs it could not have drawn, with `extend`). Another recorded draw is refused, not replaced."""
    if n < 1:
        raise LabelError(f"--sample {n}: draw at least one pair")
    path = sample_path(bench.root)
    if path.is_file():
        recorded = read_json(path)
        if (recorded.get("n"), recorded.get("seed"), bool(recorded.get("split"))) == (n, seed, split):
            grown = _extended(bench, recorded) if extend else recorded
            result = current(bench, grown)
            result["extended"] = grown["extensions"][-1] if grown is not recorded else None  # drawn just now
            return result
        raise LabelError(
            f"{path} records another draw (--sample {recorded.get('n')} --seed {recorded.get('seed')}"
            f"{' --split' if recorded.get('split') else ''}); label with those settings, or move the file away to "
            "draw another (every annotator should label the same draw)"
        )
    strata = _strata(bench)
    n = min(n, len(bench.pairs))
    counts = _allot(n, strata)
    picked, calibration = _pick(strata, counts, random.Random(seed))
    order = [p.id for p in bench.pairs if p.id in set(picked)]
    keys = content_keys(bench)
    record: dict[str, Any] = {
        "kind": KIND,
        "n": n,
        "seed": seed,
        "split": split,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "method": "seeded simple random sample within each system pair, sized in proportion (largest remainder)",
        "strata": {name: counts[name] for name in sorted(strata)},
        "ids": order,
        # What it was drawn from, by content: pairs added later are told apart, whatever their ids.
        "population": {name: [_key(keys, i) for i in ids] for name, ids in sorted(strata.items())},
    }
    if split:
        record["calibration"] = [i for i in order if i in calibration]
        record["evaluation"] = [i for i in order if i not in calibration]
    # The same pairs by content, so that a re-prepared benchmark (new ids) keeps its draw.
    record["content_keys"] = {i: keys[i].key for i in order if i in keys}
    write_json(path, record)
    return {**current(bench, record), "extended": None}


def _extended(bench: Benchmark, record: dict[str, Any]) -> dict[str, Any]:
    """`record` drawn over the pairs it could not have drawn as well, at its own rate (the pairs it drew over
    the population it drew them from), stratum by stratum; written back. Every pair drawn before stays drawn."""
    outside = set(coverage(bench, record)["outside"])
    if not outside:
        return record
    drawn_from = sum(map(len, (record.get("population") or {}).values())) or sum(
        map(len, _strata(bench, _ids_of_strata(bench, record)).values())
    )
    new = _strata(bench, outside)
    counts = _allot(round(len(outside) * len(record["ids"]) / max(1, drawn_from)), new)
    extensions = list(record.get("extensions") or [])
    # A seed of its own per extension: the first draw's pairs, and each earlier extension's, are never redrawn.
    picked, calibration = _pick(new, counts, random.Random(f"{record['seed']}:extension:{len(extensions) + 1}"))
    keys = content_keys(bench)
    record = dict(record)
    record["ids"] = list(record["ids"]) + [i for i in (p.id for p in bench.pairs) if i in set(picked)]
    if record.get("split"):
        record["calibration"] = list(record["calibration"]) + [i for i in picked if i in calibration]
        record["evaluation"] = list(record["evaluation"]) + [i for i in picked if i not in calibration]
    record["strata"] = {
        name: int((record.get("strata") or {}).get(name, 0)) + counts.get(name, 0)
        for name in sorted({*(record.get("strata") or {}), *counts})
    }
    population = {name: list(ids) for name, ids in (record.get("population") or {}).items()}
    for name, ids in new.items():
        population.setdefault(name, []).extend(_key(keys, i) for i in ids)
    record["population"] = dict(sorted(population.items()))
    record["content_keys"] = {**(record.get("content_keys") or {}), **{i: keys[i].key for i in picked if i in keys}}
    extensions.append(
        {
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "pairs": len(outside),
            "drawn": {name: counts[name] for name in sorted(counts)},
        }
    )
    record["extensions"] = extensions
    write_json(sample_path(bench.root), record)
    return record


def _ids_of_strata(bench: Benchmark, record: dict[str, Any]) -> set[str]:
    """The benchmark's pairs in the strata `record` names (a draw recorded before its population was)."""
    named = set(record.get("strata") or {})
    return {p.id for p in bench.pairs if _stratum(p.model_a, p.model_b) in named}


def coverage(bench: Benchmark, record: dict[str, Any]) -> dict[str, Any]:
    """How the draw covers the benchmark now: `outside`, the pairs it could not have drawn (added since, by
    content); `lacks`, {stratum: pairs} of the strata it has none of; `drawn_over`, its strata; `strata`, the
    benchmark's now; `covers`, whether every pair could have been drawn."""
    population = record.get("population")
    now = _strata(bench)
    if population is None:  # recorded before its population was: its strata are all it tells
        inside = _ids_of_strata(bench, record)
        drawn_over = sorted(record.get("strata") or {})
    else:
        keys = content_keys(bench)
        known = {key for ids in population.values() for key in ids}
        inside = {p.id for p in bench.pairs if _key(keys, p.id) in known}
        drawn_over = sorted(population)
    outside = [p.id for p in bench.pairs if p.id not in inside]
    lacks = {name: len(ids) for name, ids in sorted(now.items()) if name not in drawn_over}
    return {
        "covers": not outside,
        "outside": outside,
        "lacks": lacks,
        "drawn_over": drawn_over,
        "strata": sorted(now),
        "pairs": len(bench.pairs),
    }


def coverage_lines(drawn: dict[str, Any], extend_hint: str | None = None) -> list[str]:
    """What a draw that no longer covers the benchmark lacks, in words; [] when it covers it."""
    cover = drawn["coverage"]
    if cover["covers"]:
        return []
    lacking = ", ".join(f"{name} ({n} pairs)" for name, n in cover["lacks"].items())
    shown = ", ".join(cover["outside"][:8]) + (
        f" and {len(cover['outside']) - 8} more" if len(cover["outside"]) > 8 else ""
    )
    lines = [
        f"the sample was drawn over {len(cover['drawn_over'])} of the {len(cover['strata'])} system pairs the "
        f"benchmark now has ({cover['pairs']} pairs)" + (f"; it lacks {lacking}" if lacking else ""),
        f"{len(cover['outside'])} pair(s) could not have been drawn: {shown}",
    ]
    if extend_hint:
        lines.append(extend_hint)
    return lines


def current(bench: Benchmark, record: dict[str, Any]) -> dict[str, Any]:
    """The draw in `bench`'s ids (a pair whose id now holds other clips, or that moved, is found by its content),
    with its `coverage` of the benchmark."""
    recorded = record.get("content_keys") or {}
    keys = content_keys(bench) if recorded else {}
    by_key: dict[str, str] = {}
    for pid, content in keys.items():
        by_key.setdefault(content.key, pid)

    def now(ids: list[str]) -> list[str]:
        found = []
        for i in ids:
            key = recorded.get(i)
            if key is None or not keys or (i in keys and keys[i].key == key):
                found.append(i)
            elif key in by_key:
                found.append(by_key[key])
        return found

    mapped = dict(record)
    for field in ("ids", "calibration", "evaluation"):
        if field in record:
            mapped[field] = now(record[field])
    mapped.pop("population", None)  # what it was drawn from is read through `coverage`
    mapped["coverage"] = coverage(bench, record)
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
    thresholds on the evaluation half. The guarantee reaches only the strata whose pairs could be drawn and
    were labelled: `strata` names them, and `limited` says the benchmark has others.
    """
    from dataclasses import replace

    from trace_eval.bench import load_benchmark
    from trace_eval.labels.least_sure import kept_apart, least_sure_path

    record = read_sample(bench)
    apart_note, apart_n = "", 0
    if least_sure_path(bench).is_file():
        # Pairs offered because the judges doubted them are not exchangeable with later pairs: never fitted on.
        loaded = load_benchmark(bench, check_audio=False)
        apart = kept_apart(loaded) - set(current(loaded, record)["ids"] if record is not None else [])
        apart_n = sum(1 for i in apart if labels.labels.get(i))
        labels = replace(labels, labels={i: got for i, got in labels.labels.items() if i not in apart})
        apart_note = (
            f"; {apart_n} labelled least-sure pair(s) (offered after the random sample for the judges' low "
            "confidence or disagreement, labels/least_sure.json) kept apart: the guarantee uses random pairs only"
        )
    if record is None:
        return labels, {
            "drawn": "not drawn by `label --sample`: that these pairs are exchangeable with later ones is assumed, "
            "not shown" + apart_note,
            "random": False,
            "kept_apart": apart_n,
        }
    loaded = load_benchmark(bench, check_audio=False)
    record = current(loaded, record)
    labelled = {i for i, got in labels.labels.items() if got}
    described = (
        f"a seeded random sample of {record['n']} (seed {record['seed']}), stratified by system pair "
        f"({sample_path(bench)})"
    )
    cover = record["coverage"]
    fitting = set(record["calibration"] if record.get("split") else record["ids"])
    if record.get("split"):
        labels = replace(labels, labels={i: got for i, got in labels.labels.items() if i in fitting})
        labelled &= fitting
        described += f"; its calibration half ({len(fitting)} pairs), the evaluation half held out"
    # A stratum drawn but not labelled yet (an extended draw) is as absent from the fit as one never drawn.
    stratum_of = {p.id: _stratum(p.model_a, p.model_b) for p in loaded.pairs}
    with_labels = {stratum_of[i] for i in labelled & fitting if i in stratum_of}
    unlabelled = [name for name in cover["drawn_over"] if name not in with_labels]
    strata = [name for name in cover["drawn_over"] if name in with_labels]
    if not cover["covers"]:
        described += "; " + "; ".join(coverage_lines(record))
    if unlabelled:
        described += f"; the draw's pairs of {', '.join(unlabelled)} have no label yet"
    limited = not cover["covers"] or bool(unlabelled)
    if limited:
        # Pairs that could not be drawn, or were not labelled, are not exchangeable with those fitted on.
        described += f": the guarantee holds for pairs of {', '.join(strata) or 'no system pair'} only" + (
            " (`label --sample ... --extend` draws over the rest)" if not cover["covers"] else " (label them)"
        )
    outside = sorted(labelled - set(record["ids"]))
    if outside:
        described += f"; but {len(outside)} labelled pair(s) lie outside the draw, so not all were drawn at random"
    return labels, {
        "drawn": described + apart_note,
        "random": not outside and not limited,
        "kept_apart": apart_n,
        "sample": {k: record[k] for k in ("n", "seed", "split")},
        "strata": strata,
        "limited": limited,
        "lacks": cover["lacks"],
        "not_drawable": len(cover["outside"]),
        "unlabelled_strata": unlabelled,
    }
