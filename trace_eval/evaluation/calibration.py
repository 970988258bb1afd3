"""Confidence thresholds with a guarantee of agreement with people (after *Trust or Escalate*, Jung et al. 2025).

Given a judge's verdicts on human-labelled calibration pairs, each with its confidence, `calibrate` picks the
lowest confidence threshold `t` such that, on new pairs from the same distribution,

    P( agreement with people on the verdicts of confidence >= t  >=  target )  >=  1 - delta.

How (fixed-sequence testing). Candidate thresholds are the distinct confidences seen, tested from the
most confident down, starting at the first that has at least `first_count` verdicts at or above it (twice
the fewest that could pass at all: a handful of verdicts cannot show 85% agreement, and a first test that
cannot pass would end the sequence). The sequence depends on the confidences only, never on whether the
verdicts agree, so the tests stay exact given the confidences. At each candidate `t` the null hypothesis is
"agreement above t is below the target"; with n verdicts of confidence >= t of which k agree, its p-value
is the exact binomial tail P(Bin(n, target) >= k) (scipy.stats.binomtest, one-sided). Testing stops at
the first candidate whose null is not rejected at level delta; the threshold is the last one rejected.
Testing in a fixed order and stopping at the first non-rejection keeps the chance of any false rejection
at delta without a multiple-testing correction, so every threshold passed, the chosen one included,
carries the guarantee at once.

Assumptions: calibration pairs and the pairs judged later are exchangeable (drawn the same way from the same
benchmark); the judge and its settings are the ones calibrated (model, prompt, samples, swap). The guarantee
is about the agreement rate over many trusted verdicts, not about any single verdict, and nothing is
promised about the verdicts below the threshold.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from scipy.stats import binomtest

from trace_eval.evaluation.records import OVERALL, EvaluationError, HumanLabels, JudgeRun
from trace_eval.judge.confidence import CALIBRATION_KIND, CALIBRATION_VERSION, calibrated_settings, judge_key

__all__ = [
    "ASSUMPTIONS",
    "METHOD",
    "Calibration",
    "ThresholdTest",
    "calibrate",
    "calibrate_runs",
    "coverage_at",
    "first_count",
]

METHOD = (
    "fixed-sequence testing over the distinct calibration confidences, most confident first (from the first "
    "with at least first_count verdicts at or above it), each with a "
    "one-sided exact binomial test of H0: agreement < target (scipy.stats.binomtest); stop at the first "
    "non-rejection at level delta; the threshold is the last one rejected"
)
ASSUMPTIONS = (
    "calibration pairs and the pairs judged later are exchangeable: drawn the same way from the same "
    "benchmark (the same kind of instructions, systems and listeners)",
    "the judge is used with the settings it was calibrated with (model, prompt, samples, swap, dropped cues)",
    "the guarantee bounds the agreement rate over many trusted verdicts, not any single verdict, and "
    "promises nothing about verdicts below the threshold",
)


@dataclass(frozen=True)
class ThresholdTest:
    """One step of the fixed sequence: the verdicts at or above `threshold` and the test of their agreement."""

    threshold: float
    n: int  # calibration verdicts with confidence >= threshold
    agree: int  # of which agree with people
    p_value: float
    rejected: bool  # agreement shown to reach the target at level delta


@dataclass
class Calibration:
    """The threshold a judge's verdicts are trusted above, and what the calibration data say of it."""

    target: float
    delta: float
    n: int  # calibration verdicts (pairs with a human label and a verdict with a confidence)
    threshold: float | None  # None: no threshold meets the target at this delta (see `reason`)
    coverage: float | None  # share of the calibration verdicts at or above the threshold
    agreement: float | None  # agreement with people on those verdicts (the calibration estimate)
    trusted: int  # calibration verdicts at or above the threshold
    reason: str | None  # why there is no threshold
    tests: list[ThresholdTest] = field(default_factory=list)
    # Verdicts (labelled pairs with a verdict and a confidence) the first test at this target and delta is made
    # on: fewer can never pass it (first_count)
    pairs_needed: int | None = None

    def as_dict(self) -> dict:
        doc = asdict(self)
        doc["tests"] = [asdict(t) for t in self.tests]
        return doc


def first_count(target: float, delta: float) -> int:
    """Verdicts the first threshold tested needs: twice the fewest whose agreement could pass the test
    (n verdicts that all agree pass when target**n <= delta)."""
    return 2 * math.ceil(math.log(delta) / math.log(target))


def calibrate(confidences: Sequence[float], agree: Sequence[bool], target: float, delta: float) -> Calibration:
    """The lowest confidence threshold whose agreement reaches `target` with probability >= 1 - `delta`."""
    if not 0.0 < target < 1.0:
        raise ValueError(f"the target agreement must be between 0 and 1, got {target}")
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be between 0 and 1, got {delta}")
    conf = np.asarray(confidences, dtype=float)
    hits = np.asarray(agree, dtype=bool)
    if conf.shape != hits.shape:
        raise ValueError("one agreement per confidence expected")
    if np.isnan(conf).any():
        raise ValueError("a confidence is NaN; leave verdicts without a confidence out")
    n = int(conf.size)
    needed = first_count(target, delta)
    if n == 0:
        return Calibration(
            target, delta, 0, None, None, None, 0, "no calibration verdicts: " + _how_many(0, target, delta), [], needed
        )
    order = np.argsort(-conf, kind="stable")
    conf, hits = conf[order], hits[order]
    cumulative = np.cumsum(hits)
    tests: list[ThresholdTest] = []
    chosen: ThresholdTest | None = None
    first = min(first_count(target, delta), n)
    for t in np.unique(conf)[::-1]:
        above = int(np.searchsorted(-conf, -t, side="right"))  # verdicts with confidence >= t
        if above < first:
            continue
        k = int(cumulative[above - 1])
        p = float(binomtest(k, above, target, alternative="greater").pvalue)
        test = ThresholdTest(float(t), above, k, p, p <= delta)
        tests.append(test)
        if not test.rejected:
            break
        chosen = test
    if chosen is None:
        top = tests[0]
        reason = (
            f"no threshold meets {target:.0%} agreement at delta {delta:g}: even the {top.n} most confident "
            f"verdict(s) (confidence {top.threshold:.3g}) agree {top.agree} time(s) (p = {top.p_value:.3g} > "
            f"{delta:g}); "
        )
        if n < needed:  # too few to pass at all, however they agree: say how many would do
            reason += _how_many(n, target, delta) + "; or lower --agreement, raise --delta"
        else:
            reason += "label more pairs, lower --agreement, raise --delta, or use a stronger judge"
        return Calibration(target, delta, n, None, 0.0, None, 0, reason, tests, needed)
    return Calibration(
        target, delta, n, chosen.threshold, chosen.n / n, chosen.agree / chosen.n, chosen.n, None, tests, needed
    )


def _how_many(n: int, target: float, delta: float) -> str:
    """How many labelled pairs a threshold at `target` and `delta` needs, against the `n` there are."""
    fewest = math.ceil(math.log(delta) / math.log(target))
    needed = first_count(target, delta)
    return (
        f"{n} verdict(s) with a confidence; a threshold at {target:.0%} with delta {delta:g} needs at least "
        f"{fewest} verdicts at or above it, all agreeing with people, and the first test is made on {needed}: "
        f"label at least {needed - n} more pairs (more where the judge or the people leave some without a verdict)"
    )


def coverage_at(confidences: Sequence[float | None], threshold: float | None) -> float | None:
    """Share of verdicts trusted at `threshold` (a verdict without a confidence is not trusted)."""
    if not confidences:
        return None
    if threshold is None:
        return 0.0
    return sum(c is not None and c >= threshold for c in confidences) / len(confidences)


# -- judged runs with human labels into a calibration file ---------------------------------------


def calibrate_runs(
    runs: list[JudgeRun], labels: HumanLabels, target: float, delta: float, on: str = OVERALL
) -> dict[str, Any]:
    """The calibration file's document: per judge (runs of one --model and --judge pooled), the threshold
    its verdicts on `on` (the fused label, or a dimension) are trusted above.

    A pair counts when people labelled it and the judge gave it a label with a confidence; pairs the judge
    left without a label (failed, undetermined) or without a confidence are counted apart, never guessed.
    """
    groups: dict[str, list[JudgeRun]] = {}
    for run in runs:
        groups.setdefault(judge_key(str(run.config.get("model") or run.name), run.config.get("judge")), []).append(run)
    judges: dict[str, Any] = {}
    for key, group in groups.items():
        settings = [calibrated_settings(run.config) for run in group]
        differing = sorted({k for s in settings for k in s if s[k] != settings[0][k]})
        if differing:
            raise EvaluationError(
                f"runs of {key} were made with different {', '.join(differing)} "
                f"({', '.join(str(run.path) for run in group)}): calibrate each setting apart"
            )
        confidences: list[float] = []
        agree: list[bool] = []
        seen: set[str] = set()
        counts = {"labelled": 0, "without_verdict": 0, "without_confidence": 0, "repeated": 0}
        costs: list[float] = []
        for run in group:
            for item_id, raw in run.raws.items():
                human = labels.labels.get(item_id, {}).get(on)
                if human is None:
                    continue
                if item_id in seen:
                    counts["repeated"] += 1
                    continue
                seen.add(item_id)
                counts["labelled"] += 1
                if raw.get("cost_usd") is not None:
                    costs.append(float(raw["cost_usd"]))
                label = raw.get(OVERALL) if on == OVERALL else (raw.get("verdicts") or {}).get(on)
                if raw.get("status") != "ok" or label is None:
                    counts["without_verdict"] += 1
                    continue
                confidence = (raw.get("confidence") or {}).get(on)
                if confidence is None:
                    counts["without_confidence"] += 1
                    continue
                confidences.append(float(confidence))
                agree.append(label == human)
        result = calibrate(confidences, agree, target, delta)
        if not confidences and counts["without_confidence"]:
            result.reason = (
                f"none of the {counts['without_confidence']} verdicts has a confidence: "
                "judge with --samples N (N >= 3) or --swap"
            )
        judges[key] = {
            **result.as_dict(),
            "coverage_of_labelled": result.trusted / counts["labelled"] if counts["labelled"] else None,
            **counts,
            "cost_usd_per_pair": sum(costs) / len(costs) if costs else None,
            "settings": settings[0],
            "runs": [str(run.path) for run in group],
        }
    return {
        "kind": CALIBRATION_KIND,
        "format_version": CALIBRATION_VERSION,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "target_agreement": target,
        "delta": delta,
        "label": on,
        "labels": str(labels.manifest),
        "guarantee": (
            f"on new pairs drawn like the calibration pairs, agreement with people on the verdicts at or above "
            f"a judge's threshold is at least {target:.0%} with probability at least {1 - delta:.0%}"
        ),
        "method": METHOD,
        "assumptions": list(ASSUMPTIONS),
        "judges": judges,
    }
