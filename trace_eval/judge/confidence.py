"""How sure a verdict is, per dimension and for the fused label, from what the run already holds.

Sources (the record's `confidence_source`):

- "stated": the judge says how sure it is in its answer (`confidence` in the verdict JSON). The offline
  `cues` backbone does, from how far the deciding cues sit from their thresholds (trace_eval/judge/cues.py).
  With several answers, a dimension's confidence is the mean stated confidence of the answers that gave
  the final label, times their share. No extra call.
- "logprobs": the probability the model gave each label's tokens (judge --logprobs, where the provider
  returns log-probabilities): the product over the tokens that spell the label in the answer. No extra
  call; with several answers, combined as stated confidences are.
- "agreement": several answers of an LLM (--samples N, both orders with --swap): a dimension's confidence
  is the share of the answers (swapped ones put back in the manifest's numbering) that gave the final
  label. Costs N calls per pair (2N with --swap) instead of one.
- none: one answer that states nothing. The confidence is null, and `confidence_reason` says how to get
  one.

The fused label's confidence: with "agreement", the share of answers whose own fused label (each answer
fused alone, under the run's policy) is the record's overall label; with "stated" or "logprobs", the lowest
confidence among the dimensions that decided the overall label under the run's policy (`decided_by`,
fusion.Fusion.decided_by: those whose label, changed, would change it), so a dimension the policy did not
turn on (Voice Quality under `cap` when Content names a winner) neither lowers nor raises it. It is
recomputed whenever the overall label is (`fuse` under another policy).

A confidence is a score to rank verdicts by, not a probability: how far it can be trusted is what
`python -m trace_eval calibrate` measures on human-labelled pairs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trace_eval.rubrics import Rubric

__all__ = [
    "CALIBRATED_SETTINGS",
    "CALIBRATION_KIND",
    "CALIBRATION_VERSION",
    "CalibrationFileError",
    "NO_CONFIDENCE",
    "OVERALL",
    "answer_confidence",
    "calibrated_settings",
    "judge_key",
    "label_probabilities",
    "overall_confidence",
    "read_calibration",
]

OVERALL = "overall"
NO_CONFIDENCE = (
    "one answer that states no confidence: judge with --samples N (N >= 3) or --swap for a confidence from "
    "the agreement among answers"
)


def answer_confidence(
    verdicts: Mapping[str, Any],
    answers: Sequence[tuple[Mapping[str, Any], Mapping[str, float]]],
) -> tuple[dict[str, float | None], str | None, str | None]:
    """({dimension: confidence}, source, why there is none) of the final `verdicts` from the usable
    `answers`: (verdicts in the manifest's numbering, the confidence each states per dimension)."""
    if not answers:
        return {dim: None for dim in verdicts}, None, "no usable answer"
    stated = all(dim in said for labels, said in answers for dim, label in labels.items() if label is not None)
    stated = stated and any(said for _, said in answers)
    if not stated and len(answers) < 2:
        return {dim: None for dim in verdicts}, None, NO_CONFIDENCE
    result: dict[str, float | None] = {}
    for dim, label in verdicts.items():
        if label is None:
            result[dim] = None
            continue
        agreeing = [said for labels, said in answers if labels.get(dim) == label]
        if stated:
            # Mean stated confidence of the answers that gave the label, times their share.
            values = [float(said[dim]) for said in agreeing]
            result[dim] = round(sum(values) / len(answers), 4) if values else 0.0
        else:
            result[dim] = round(len(agreeing) / len(answers), 4)
    return result, "stated" if stated else "agreement", None


def label_probabilities(
    text: str, logprobs: Sequence[tuple[str, float]], verdicts: Mapping[str, Any]
) -> dict[str, float]:
    """{dimension: probability the model gave its label}: the product of the probabilities of the tokens
    that spell the label's value in the answer's JSON (`"content": "both_good"`). {} when the tokens do not
    spell the text (nothing can be placed), and a dimension is left out when its label cannot be found."""
    import math
    import re

    if "".join(token for token, _ in logprobs) != text:
        return {}
    starts, at = [], 0
    for token, _ in logprobs:
        starts.append(at)
        at += len(token)
    found: dict[str, float] = {}
    for dim, label in verdicts.items():
        if label is None:
            continue
        match = re.search(rf'"{re.escape(dim)}"\s*:\s*"?({re.escape(str(label))})', text, re.IGNORECASE)
        if match is None:
            continue
        begin, end = match.span(1)
        spelled = [p for (token, p), s in zip(logprobs, starts) if s < end and s + len(token) > begin]
        if spelled:
            found[dim] = round(math.exp(sum(spelled)), 4)
    return found


def overall_confidence(record: Mapping[str, Any], policy: str, rubric: Rubric) -> float | None:
    """The confidence of the record's overall label under `policy` (see the module docstring)."""
    confidence = record.get("confidence") or {}
    source = record.get("confidence_source")
    overall = record.get(OVERALL)
    if rubric.fusion is None or overall is None or source is None:
        return None
    if source in ("stated", "logprobs"):
        verdicts = record.get("verdicts") or {}
        deciding = rubric.fusion.decided_by(policy, verdicts) or tuple(verdicts)
        values = [confidence.get(dim) for dim in deciding]
        if not values or any(v is None for v in values):
            return None
        return min(float(v) for v in values if v is not None)
    answers = [s.get("verdicts") for s in record.get("samples") or [] if s.get("status") == "ok" and s.get("verdicts")]
    if not answers:
        return None
    same = sum(rubric.fusion.fuse_all(labels).get(policy) == overall for labels in answers)
    return round(same / len(answers), 4)


# -- who a verdict comes from, and the thresholds a calibration file gives ------------------------

CALIBRATION_KIND = "trace-eval calibration"
CALIBRATION_VERSION = 1
# Settings that change a judge's confidences: a threshold holds only for verdicts made with the same.
CALIBRATED_SETTINGS = ("model", "judge", "rubric", "fusion", "samples", "swap", "drop", "temperature", "logprobs")


def judge_key(model: str, judge: str | None) -> str:
    """How a calibration file and a cascade name a judge: its --model and, after @, its --judge prompt."""
    return f"{model}@{judge}" if judge else model


def calibrated_settings(config: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of a run (config.json) its confidences depend on."""
    return {key: config.get(key) for key in CALIBRATED_SETTINGS}


class CalibrationFileError(ValueError):
    """A calibration file that cannot be used: missing, damaged, or without the judge asked for."""


def read_calibration(path: Any) -> dict[str, Any]:
    """A calibration file written by `python -m trace_eval calibrate`."""
    import json
    from pathlib import Path

    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CalibrationFileError(
            f"{path}: no such calibration file; make one with `python -m trace_eval calibrate`"
        ) from None
    except json.JSONDecodeError as e:
        raise CalibrationFileError(f"{path}: not JSON ({e.msg} at line {e.lineno})") from None
    if not isinstance(doc, dict) or doc.get("kind") != CALIBRATION_KIND or not isinstance(doc.get("judges"), dict):
        raise CalibrationFileError(f"{path}: not a calibration file written by `python -m trace_eval calibrate`")
    if doc.get("format_version") != CALIBRATION_VERSION:
        raise CalibrationFileError(
            f"{path}: calibration format {doc.get('format_version')!r}; this version reads {CALIBRATION_VERSION}"
        )
    return doc
