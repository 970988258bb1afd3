"""Everything `evaluate` measures, as one JSON-ready dictionary (metrics.json).

All statistics that get a confidence interval are registered with one
PairedBootstrap over the evaluated items, so every interval comes from the same
resamples: intervals of different runs and policies are paired.
"""
from __future__ import annotations

import itertools
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import fusion
from fusion import LABELS, WINNERS

from . import metrics, probes
from .bootstrap import DEFAULT_BOOTSTRAP, BootstrapSettings, PairedBootstrap
from .records import DIMENSIONS, JudgeRun

FORMAT_VERSION = 1

DEFINITIONS = {
    "accuracy.4way": "predicted overall label equals the human overall label, over items with both (primary metric)",
    "accuracy.3way": "as 4way with both_good and both_bad collapsed into one tie",
    "accuracy.2way": "over items whose human overall label is a winner (1 or 2); a predicted tie counts as wrong",
    "per_dimension": "dimension verdict equals the human label of that dimension",
    "kappa": "Cohen's kappa between predicted and human labels over the same items as the accuracy",
    "comparisons": "two-sided McNemar test on item-wise 4way correctness over items scored in both runs; "
    "exact binomial when fewer than 25 discordant pairs, else chi-square with continuity correction",
    "fusion_table": "the run's dimension verdicts fused by every policy",
    "probes.content_counterfactual": "Content set to both_good and fused again: accuracy against the human overall label, "
    "share of items whose label changes, and which dimension then decides (its share and accuracy)",
    "probes.flip_rates": "share of scored items whose fused label changes when one dimension is set to both_good",
    "probes.winner_on_bad": "of items humans rated both_bad overall, share where the run names a winner",
    "probes.winner_slice_accuracy": "of items where the run names a winner, share where humans chose the same response",
    "failed": "items whose verdict failed (status other than ok, or a verdict that is not a label): counted and listed, never scored",
    "coverage": "decided items over items with the human label, per dimension and overall: an item is decided on a "
    "dimension when the run gave it a label, and overall when it gave all three (an undetermined dimension, left "
    "null for want of evidence, gives no overall label under any policy). Every accuracy, kappa and probe is "
    "computed on the decided items only; undetermined and failed items are counted here, never scored",
    "undetermined": "items the judge answered but left one or more dimensions null because a deciding cue was "
    "missing (unmeasured, dropped, or from an unreliable transcript), with the reason per dimension",
}


class EvaluationError(ValueError):
    """The runs and labels cannot be evaluated together (say what to pass instead)."""


@dataclass
class _Pending:
    """Builds the output while statistics are registered; intervals are filled in at the end."""

    boot: PairedBootstrap
    slots: dict[Hashable, dict[str, Any]] = field(default_factory=dict)

    def proportion(self, key: Hashable, correct: np.ndarray, eligible: np.ndarray, empty: str) -> dict[str, Any]:
        correct = correct & eligible
        slot = {"correct": int(correct.sum()), "n": int(eligible.sum())}
        if slot["n"] == 0:
            slot.update(value=None, ci95=None, reason=empty)
            return slot
        self.boot.add_ratio(key, correct, eligible)
        self.slots[key] = slot
        return slot

    def kappa(self, key: Hashable, human: list[str | None], predicted: list[str | None], labels=LABELS) -> dict[str, Any]:
        n = sum(h is not None and p is not None for h, p in zip(human, predicted))
        slot: dict[str, Any] = {"n": n}
        if n == 0:
            slot.update(value=None, ci95=None, reason="no item has both labels")
            return slot
        self.boot.add_kappa(key, human, predicted, labels)
        self.slots[key] = slot
        return slot

    def difference(self, key: Hashable, correct_a: np.ndarray, correct_b: np.ndarray, eligible: np.ndarray) -> dict[str, Any]:
        slot: dict[str, Any] = {}
        if not eligible.any():
            slot.update(value=None, ci95=None, reason="no item scored in both runs")
            return slot
        self.boot.add_difference(key, correct_a & eligible, correct_b & eligible, eligible)
        self.slots[key] = slot
        return slot

    def fill(self, settings: BootstrapSettings) -> None:
        for key, estimate in self.boot.estimate(settings).items():
            slot = self.slots[key]
            slot["value"] = estimate.value
            slot["ci95"] = list(estimate.interval) if estimate.interval else None
            if estimate.value is None:
                slot["reason"] = "undefined: chance agreement is total (both raters use one label)"


def _is(values: Iterable[str | None], wanted: Iterable[str]) -> np.ndarray:
    wanted = set(wanted)
    return np.array([v in wanted for v in values], dtype=bool)


def _equal(a: list[str | None], b: list[str | None]) -> np.ndarray:
    return np.array([x is not None and x == y for x, y in zip(a, b)], dtype=bool)


def _present(values: list[str | None]) -> np.ndarray:
    return np.array([v is not None for v in values], dtype=bool)


def _distribution(values: Iterable[str | None]) -> dict[str, int]:
    values = list(values)
    return {label: sum(v == label for v in values) for label in LABELS}


def resolve_policy(run: JudgeRun, override: str | None) -> str:
    name = override or run.policy
    if name is None:
        raise EvaluationError(
            f"run {run.name}: config.json names no fusion policy; pass --fusion, one of: {', '.join(sorted(fusion.POLICIES))}"
        )
    fusion.get_policy(name)  # UnknownPolicy lists the choices
    return name


def _coverage(said: list[str | None], truth: list[str | None], undetermined: np.ndarray) -> dict[str, Any]:
    """Decided items over the items with a human label; the rest split into undetermined and no verdict."""
    labelled = _present(truth)
    decided = int((_present(said) & labelled).sum())
    left = int((undetermined & labelled).sum())
    n = int(labelled.sum())
    return {"decided": decided, "of": n, "value": decided / n if n else None,
            "undetermined": left, "no_verdict": n - decided - left}


def _agreement(pending: _Pending, key: tuple, predicted: list[str | None], human_overall: list[str | None], valid: np.ndarray) -> dict[str, Any]:
    """4-, 3- and 2-way accuracy and kappa of `predicted` against the human overall labels."""
    scored = valid & _present(human_overall)
    collapsed_p = [metrics.collapse_ties(p) if p else None for p in predicted]
    collapsed_h = [metrics.collapse_ties(h) if h else None for h in human_overall]
    paired = [(h, p) if s else (None, None) for h, p, s in zip(human_overall, predicted, scored)]
    return {
        "4way": pending.proportion((*key, "4way"), _equal(predicted, human_overall), scored, "no item has a verdict and a human overall label"),
        "3way": pending.proportion((*key, "3way"), _equal(collapsed_p, collapsed_h), scored, "no item has a verdict and a human overall label"),
        "2way": pending.proportion((*key, "2way"), _equal(predicted, human_overall), scored & _is(human_overall, WINNERS), "no item with a verdict has a human winner label"),
        "kappa": pending.kappa((*key, "kappa"), [h for h, _ in paired], [p for _, p in paired]),
    }


def _run_metrics(
    pending: _Pending, index: int, run: JudgeRun, policy: str, ids: list[str], human: dict[str, dict[str, str]]
) -> tuple[dict[str, Any], tuple[np.ndarray, np.ndarray]]:
    """The run's block of metrics.json, and its item-wise (4-way correct, scored) masks for comparisons."""
    records = [run.records.get(i) for i in ids]
    answered = [r.verdicts if r is not None else None for r in records]
    # Probes and fusion need all three labels: an item with an undetermined dimension is not scored there.
    verdicts = [v if r is not None and r.decided else None for r, v in zip(records, answered)]
    valid = _present(verdicts)
    human_overall = [human[i].get("overall") for i in ids]
    labelled = _present(human_overall)
    predicted = [probes.fused(policy, v) if v else None for v in verdicts]
    key = ("run", index)

    agreement = _agreement(pending, (*key, "overall"), predicted, human_overall, valid)
    undetermined_any = np.array([r is not None and bool(r.undetermined) for r in records], dtype=bool)
    coverage = {"overall": _coverage(predicted, human_overall, undetermined_any)}
    per_dimension = {}
    dimension_kappa = {}
    for d in DIMENSIONS:
        said = [v[d] if v else None for v in answered]
        truth = [human[i].get(d) for i in ids]
        both = _present(said) & _present(truth)  # decided on this dimension, whatever the others
        coverage[d] = _coverage(said, truth, np.array([r is not None and d in r.undetermined for r in records], dtype=bool))
        per_dimension[d] = pending.proportion((*key, "dim", d), _equal(said, truth), both, f"no item has a verdict and a human {d} label")
        dimension_kappa[d] = pending.kappa((*key, "dim-kappa", d), [t if b else None for t, b in zip(truth, both)], [s if b else None for s, b in zip(said, both)])

    fusion_table = {}
    for name in fusion.POLICIES:
        fused_by = [probes.fused(name, v) if v else None for v in verdicts] if name != policy else predicted
        fusion_table[name] = _agreement(pending, (*key, "fusion", name), fused_by, human_overall, valid)

    scored = valid & labelled
    counterfactual = [probes.content_counterfactual(policy, v) if v else (None, None) for v in verdicts]
    cf_labels = [c[0] for c in counterfactual]
    cf_deciders = [c[1] for c in counterfactual]
    deciders = {}
    for decider in probes.DECIDERS:
        decided = _is(cf_deciders, [decider])
        deciders[decider] = {
            "share": pending.proportion((*key, "cf-share", decider), decided, valid, "no scored item"),
            "accuracy": pending.proportion((*key, "cf-acc", decider), _equal(cf_labels, human_overall), scored & decided, f"no labelled item decided by {decider}"),
        }
    flipped = [probes.flips(policy, v) if v else None for v in verdicts]
    flip_rates = {}
    for d in DIMENSIONS:
        after = [f[d] if f else None for f in flipped]
        flip_rates[d] = {
            "flipped": pending.proportion((*key, "flip", d), ~_equal(after, predicted) & valid, valid, "no scored item"),
            "accuracy_after": pending.proportion((*key, "flip-acc", d), _equal(after, human_overall), scored, "no labelled scored item"),
        }
    probe_block = {
        "content_counterfactual": {
            "accuracy": pending.proportion((*key, "cf-acc"), _equal(cf_labels, human_overall), scored, "no labelled scored item"),
            "changed": pending.proportion((*key, "cf-changed"), ~_equal(cf_labels, predicted) & valid, valid, "no scored item"),
            "deciders": deciders,
        },
        "flip_rates": flip_rates,
        "winner_on_bad": pending.proportion((*key, "winner-on-bad"), _is(predicted, WINNERS), valid & _is(human_overall, ["both_bad"]), "no scored item that humans rated both_bad"),
        "winner_slice_accuracy": pending.proportion((*key, "winner-slice"), _equal(predicted, human_overall), scored & _is(predicted, WINNERS), "the run names a winner on no labelled item"),
    }

    failed = [
        {"id": run_id, "status": r.status, "reason": r.reason}
        for run_id, r in run.records.items()
        if r.verdicts is None
    ]
    by_status: dict[str, int] = {}
    for r in run.records.values():
        by_status[r.status] = by_status.get(r.status, 0) + 1
    in_bench = set(human)
    mismatched = [
        i for i, r, p in zip(ids, records, predicted)
        if policy == run.policy and p is not None and r is not None and r.overall is not None and r.overall != p
    ]
    block = {
        **run.describe(),
        "fusion": policy,
        "items": {
            "in_run": len(run.records),
            "scored": int(valid.sum()),
            "undetermined": int(undetermined_any.sum()),
            "scored_with_overall_label": int(scored.sum()),
            "failed": len(failed),
            "by_status": dict(sorted(by_status.items())),
            "not_in_benchmark": sum(i not in in_bench for i in run.records),
            "not_judged": sum(i not in run.records for i in ids),
        },
        "coverage": coverage,
        "accuracy": {k: agreement[k] for k in ("4way", "3way", "2way")},
        "kappa": {"overall": agreement["kappa"], **dimension_kappa},
        "per_dimension": per_dimension,
        "confusion": {
            "rows": "human overall",
            "columns": "predicted overall",
            "labels": list(LABELS),
            "matrix": metrics.confusion_matrix(
                [p for p, s in zip(predicted, scored) if s], [h for h, s in zip(human_overall, scored) if s]
            ).tolist(),
        },
        "distribution": {
            "overall": _distribution(predicted),
            **{d: _distribution(v[d] if v else None for v in answered) for d in DIMENSIONS},
        },
        "fusion_table": fusion_table,
        "probes": probe_block,
        "failed": failed,
        "undetermined": [{"id": run_id, "dimensions": dict(r.undetermined)}
                         for run_id, r in run.records.items() if r.undetermined],
        "cues": run.summary.get("cues"),
        "problems": list(run.problems)
        + ([f"{len(mismatched)} item(s) whose recorded overall label differs from re-fusing the verdicts with {policy}: {', '.join(mismatched[:10])}"] if mismatched else []),
    }
    correct = _equal(predicted, human_overall) & scored
    return block, (correct, scored)


def evaluate_runs(
    runs: list[JudgeRun],
    human: dict[str, dict[str, str]],
    policy: str | None = None,
    settings: BootstrapSettings = DEFAULT_BOOTSTRAP,
) -> dict[str, Any]:
    """Metrics of every run against the human labels, as a JSON-ready dictionary.

    `policy` fuses every run's verdicts with one policy; None uses each run's own.
    Items are the benchmark ids judged by at least one run, in manifest order.
    """
    if not runs:
        raise EvaluationError("no judge run to evaluate")
    policies = [resolve_policy(run, policy) for run in runs]
    judged = set().union(*(run.records for run in runs))
    ids = [i for i in human if i in judged]
    if not ids:
        raise EvaluationError(
            "no id of the judge run(s) is in the benchmark's manifest; check --labels points at the benchmark that was judged"
        )
    pending = _Pending(PairedBootstrap(len(ids)))
    blocks, correctness = [], []
    for index, (run, name) in enumerate(zip(runs, policies)):
        block, correct = _run_metrics(pending, index, run, name, ids, human)
        blocks.append(block)
        correctness.append(correct)

    comparisons = []
    for (a, run_a), (b, run_b) in itertools.combinations(enumerate(runs), 2):
        (correct_a, scored_a), (correct_b, scored_b) = correctness[a], correctness[b]
        common = scored_a & scored_b
        only_a = int((correct_a & ~correct_b & common).sum())
        only_b = int((correct_b & ~correct_a & common).sum())
        test = metrics.mcnemar(only_a, only_b)
        comparisons.append({
            "a": run_a.name,
            "b": run_b.name,
            "n": int(common.sum()),
            "both_correct": int((correct_a & correct_b & common).sum()),
            "only_a_correct": only_a,
            "only_b_correct": only_b,
            "neither_correct": int((~correct_a & ~correct_b & common).sum()),
            "method": test.method,
            "statistic": test.statistic,
            "p_value": test.p_value,
            "accuracy_difference": pending.difference(("diff", a, b), correct_a, correct_b, common),
        })

    pending.fill(settings)
    return {
        "format_version": FORMAT_VERSION,
        "items": {
            "evaluated": len(ids),
            "in_benchmark": len(human),
            "with_human_overall": sum("overall" in human[i] for i in ids),
        },
        "bootstrap": settings.describe(),
        "human_distribution": {
            key: _distribution(human[i].get(key) for i in ids) for key in ("overall", *DIMENSIONS)
        },
        "runs": blocks,
        "comparisons": comparisons,
        "definitions": DEFINITIONS,
    }
