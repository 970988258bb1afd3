"""Trusted verdicts in `evaluate`'s report: agreement with people on the verdicts that are trusted, with its
95% interval, coverage, cost per 1,000 pairs beside the strongest judge alone, and a risk-coverage picture.

A verdict is trusted when a cascade run decided it (`cascade.decided_by`, trace_eval/judge/cascade.py), or,
for a single-judge run, when its confidence reaches the judge's threshold in the calibration file given
to `evaluate --calibration`. Any run whose verdicts carry a confidence gets the risk-coverage curve:
agreement on the most confident verdicts as more of them are kept (best first).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import PercentFormatter

from trace_eval.judge.confidence import CalibrationFileError, judge_key, read_calibration

from .bootstrap import BootstrapSettings
from .engine import Estimates
from .records import OVERALL, EvaluationError, HumanLabels, JudgeRun
from .report import Block, Heading, Image, Paragraph, Table, percent

__all__ = ["keep_trusted", "risk_coverage_figure", "trust_blocks", "trust_lines", "trust_section", "trusted_ids"]

CURVE_POINTS = 101


def _confidence(raw: dict[str, Any]) -> float | None:
    value = (raw.get("confidence") or {}).get(OVERALL)
    return None if value is None else float(value)


def _label(raw: dict[str, Any], key: str) -> Any:
    return raw.get(OVERALL) if key == OVERALL else (raw.get("verdicts") or {}).get(key)


def trusted_ids(run: JudgeRun, calibration: dict[str, Any] | None) -> tuple[set[str] | None, str | None]:
    """(the ids of the run's trusted verdicts, how they were chosen); (None, why) when nothing says which."""
    cascade = run.config.get("cascade")
    if isinstance(cascade, dict):
        ids = {i for i, raw in run.raws.items() if (raw.get("cascade") or {}).get("decided_by")}
        return ids, f"decided by a judge of the cascade above its threshold ({cascade.get('calibration')})"
    if calibration is None:
        return None, "no calibration: pass --calibration FILE to count trusted verdicts"
    key = judge_key(str(run.config.get("model")), run.config.get("judge"))
    entry = calibration["judges"].get(key)
    if entry is None:
        return None, f"{key} is not in the calibration file"
    threshold = entry.get("threshold")
    if threshold is None:
        return set(), f"{key} has no threshold ({entry.get('reason')})"
    on = str(calibration.get("label") or OVERALL)  # the label calibrated, and so the confidence it is read on
    ids = {
        i
        for i, raw in run.raws.items()
        if raw.get("status") == "ok"
        and _label(raw, on) is not None
        and float((raw.get("confidence") or {}).get(on) or -1.0) >= threshold
    }
    return ids, f"confidence >= {threshold:.4g} ({key}, calibration{'' if on == OVERALL else f' of {on}'})"


def _strongest_alone(run: JudgeRun) -> dict[str, Any] | None:
    """Cost per 1,000 pairs of the cascade's last judge on its own: from the calibration file (its mean on the
    calibration pairs), else measured on the pairs it judged in this run."""
    cascade = run.config.get("cascade")
    if not isinstance(cascade, dict) or not cascade.get("judges"):
        return None
    last = cascade["judges"][-1]
    try:
        entry = read_calibration(cascade.get("calibration"))["judges"].get(last["judge"]) or {}
    except (CalibrationFileError, TypeError):
        entry = {}
    if entry.get("cost_usd_per_pair") is not None:
        return {"judge": last["judge"], "usd_per_1000": 1000 * entry["cost_usd_per_pair"], "from": "calibration"}
    costs = [
        step["cost_usd"]
        for raw in run.raws.values()
        for step in (raw.get("cascade") or {}).get("steps", [])
        if step.get("judge") == last["judge"] and step.get("cost_usd") is not None
    ]
    if not costs:
        return {"judge": last["judge"], "usd_per_1000": None, "from": "unknown: no price of its answers"}
    return {
        "judge": last["judge"],
        "usd_per_1000": 1000 * sum(costs) / len(costs),
        "from": f"measured on the {len(costs)} pairs it judged here",
    }


def risk_coverage(run: JudgeRun, human: HumanLabels) -> list[list[float]]:
    """[coverage, agreement] of the k most confident verdicts, k = 1..n, over the pairs people labelled
    (coverage counts every labelled pair, with a verdict or not); thinned to CURVE_POINTS."""
    labelled = [i for i in run.raws if human.labels.get(i, {}).get(OVERALL) is not None]
    scored = [
        (c, run.raws[i][OVERALL] == human.labels[i][OVERALL])
        for i in labelled
        if (c := _confidence(run.raws[i])) is not None and run.raws[i].get(OVERALL) is not None
    ]
    if not scored:
        return []
    scored.sort(key=lambda pair: -pair[0])
    hits = np.cumsum([agree for _, agree in scored])
    k = np.arange(1, len(scored) + 1)
    keep = np.unique(np.linspace(0, len(scored) - 1, min(CURVE_POINTS, len(scored))).astype(int))
    return [[round(float(k[j] / len(labelled)), 4), round(float(hits[j] / k[j]), 4)] for j in keep]


def trust_section(
    runs: list[JudgeRun], human: HumanLabels, settings: BootstrapSettings, calibration: Path | None = None
) -> dict[str, Any] | None:
    """Per run: trusted agreement and coverage with intervals, cost, the curve; None when no run has a
    confidence."""
    calibrated = read_calibration(calibration) if calibration else None
    with_confidence = [
        run for run in runs if isinstance(run.config.get("cascade"), dict) or any(map(_confidence, run.raws.values()))
    ]
    if not with_confidence:
        return None
    ids = sorted({i for run in with_confidence for i in run.raws if human.labels.get(i, {}).get(OVERALL) is not None})
    scored_on = None
    if calibrated:
        # Agreement on the pairs the thresholds were fitted on flatters them: score the others where there are any.
        fitted = set((calibrated.get("pairs") or {}).get("fitted_on") or [])
        held = [i for i in ids if i not in fitted]
        if fitted and held:
            ids = held
            scored_on = f"held out: {len(held)} labelled pair(s) the thresholds were not fitted on"
        elif fitted:
            scored_on = (
                "in-sample: every labelled pair was used to fit the thresholds, so this agreement flatters them; "
                "label --sample N --split keeps evaluation pairs apart"
            )
    estimates = Estimates(ids)
    result: dict[str, Any] = {"runs": [], "bootstrap": settings.describe()}
    if calibrated:
        result["calibration"] = {"file": str(calibration), "guarantee": calibrated.get("guarantee")}
        if scored_on:
            result["calibration"]["scored_on"] = scored_on
    for run in with_confidence:
        trusted, how = trusted_ids(run, calibrated)
        labelled = estimates.column({i: 1.0 for i in ids if i in run.raws}).astype(bool)
        costs = [float(raw["cost_usd"]) for raw in run.raws.values() if raw.get("cost_usd") is not None]
        entry: dict[str, Any] = {
            "name": run.name,
            "trusted_by": how,
            "cost_usd_per_1000": 1000 * sum(costs) / len(run.raws) if costs and run.raws else None,
            "strongest_alone": _strongest_alone(run),
            "risk_coverage": risk_coverage(run, human),
        }
        if isinstance(run.config.get("cascade"), dict):
            decided: dict[str, int] = {}
            for raw in run.raws.values():
                who = (raw.get("cascade") or {}).get("decided_by") or "undetermined"
                decided[who] = decided.get(who, 0) + 1
            entry["decided_by"] = decided
        if trusted is not None:
            trust = estimates.column({i: 1.0 for i in trusted if i in set(ids)}).astype(bool)
            agree = estimates.column(
                {i: 1.0 for i in trusted if i in set(ids) and run.raws[i].get(OVERALL) == human.labels[i][OVERALL]}
            ).astype(bool)
            entry["agreement"] = estimates.proportion((run.name, "agreement"), agree, trust, "no trusted verdict")
            entry["coverage"] = estimates.proportion((run.name, "coverage"), trust, labelled, "no labelled pair")
        result["runs"].append(entry)
    estimates.fill(settings)
    return result


def _usd(value: float | None) -> str:
    return "unknown" if value is None else f"${value:.4f}"


def trust_blocks(section: dict[str, Any]) -> list[Block]:
    blocks: list[Block] = [
        Heading(2, "Trusted verdicts"),
        Paragraph(
            "Agreement with people on the verdicts that are trusted (a cascade's decided verdicts, or those at or "
            "above the calibrated threshold), its 95% interval, and the share of labelled pairs trusted. "
            + (f"Calibration: {section['calibration']['guarantee']}." if section.get("calibration") else "")
            + (
                f" Scored on: {section['calibration']['scored_on']}."
                if (section.get("calibration") or {}).get("scored_on")
                else ""
            )
        ),
    ]
    rows = []
    for run in section["runs"]:
        strongest = run.get("strongest_alone")
        rows.append(
            [
                run["name"],
                percent(run.get("agreement")) if "agreement" in run else "-",
                percent(run.get("coverage")) if "coverage" in run else "-",
                _usd(run["cost_usd_per_1000"]),
                f"{strongest['judge']}: {_usd(strongest['usd_per_1000'])} ({strongest['from']})" if strongest else "-",
                ", ".join(f"{k} {v}" for k, v in run.get("decided_by", {}).items()) or run["trusted_by"],
            ]
        )
    blocks.append(
        Table(
            [
                "run",
                "agreement on trusted",
                "coverage",
                "cost / 1,000 pairs",
                "strongest judge alone / 1,000 pairs",
                "decided by",
            ],
            rows,
        )
    )
    if any(run["risk_coverage"] for run in section["runs"]):
        blocks.append(Image("risk_coverage.png", "Agreement against coverage, most confident verdicts first"))
    return blocks


def risk_coverage_figure(section: dict[str, Any], path: Path) -> Path:
    """Agreement with people against coverage, one line per run; a dot where its trusted verdicts sit."""
    figure = Figure(layout="constrained", figsize=(6.0, 4.2))
    axes = figure.add_subplot()
    for run in section["runs"]:
        curve = np.array(run["risk_coverage"])
        if not curve.size:
            continue
        (line,) = axes.plot(curve[:, 0], curve[:, 1], label=run["name"])
        agreement, coverage = run.get("agreement") or {}, run.get("coverage") or {}
        if agreement.get("value") is not None and coverage.get("value") is not None:
            axes.plot([coverage["value"]], [agreement["value"]], "o", color=line.get_color())
    axes.set_xlabel("coverage (share of labelled pairs, most confident first)")
    axes.set_ylabel("agreement with people")
    axes.xaxis.set_major_formatter(PercentFormatter(1.0))
    axes.yaxis.set_major_formatter(PercentFormatter(1.0))
    axes.set_xlim(0, 1)
    lowest = min((point[1] for run in section["runs"] for point in run["risk_coverage"]), default=0.0)
    axes.set_ylim(max(0.0, lowest - 0.05), 1.005)  # agreement never passes 100%
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    figure.savefig(path, dpi=110, bbox_inches="tight", facecolor="white")
    return path


def trust_lines(section: dict[str, Any] | None) -> list[str]:
    """What `evaluate` prints about the trusted verdicts."""
    lines = []
    scored_on = ((section or {}).get("calibration") or {}).get("scored_on")
    if scored_on:
        lines.append(f"trusted verdicts scored on: {scored_on}")
    for run in (section or {}).get("runs", []):
        if "agreement" not in run:
            continue
        agreement, coverage = run["agreement"], run["coverage"]
        line = f"trusted ({run['name']}): agreement {percent(agreement)}, coverage {percent(coverage)}"
        strongest = run.get("strongest_alone")
        line += f"; cost per 1,000 pairs {_usd(run['cost_usd_per_1000'])}"
        if strongest:
            line += f" ({strongest['judge']} alone: {_usd(strongest['usd_per_1000'])})"
        lines.append(line)
    return lines


def keep_trusted(runs: list[JudgeRun], calibration: Path | None = None) -> list[JudgeRun]:
    """The runs with every verdict that is not trusted made undetermined ("not trusted: ..."), for the
    leaderboard and the audit page (--trusted-only). A cascade run says which it trusted; a single-judge
    run needs the calibration file."""
    from dataclasses import replace

    calibrated = read_calibration(calibration) if calibration else None
    kept = []
    for run in runs:
        trusted, how = trusted_ids(run, calibrated)
        if trusted is None:
            raise EvaluationError(f"run {run.name}: nothing says which verdicts are trusted ({how})")
        records = {}
        for item_id, raw in run.raws.items():
            if item_id in trusted or raw.get("status") != "ok" or raw.get("verdicts") is None:
                records[item_id] = raw
                continue
            confidence = _confidence(raw)
            why = f"not trusted: {how}" + ("" if confidence is None else f", confidence {confidence:.2f}")
            # Labels the judge gave are made undetermined for want of trust; those it left undetermined keep
            # their own reason, and are counted as the judge's, not as distrust.
            given = [key for key in (*raw["verdicts"], OVERALL) if _label(raw, key) is not None]
            withheld = raw.get("not_trusted")  # a cascade's own, for verdicts below every threshold
            given += [key for key in withheld if key not in given] if isinstance(withheld, list) else []
            records[item_id] = {
                **raw,
                "verdicts": {dim: None for dim in raw["verdicts"]},
                "fused": {policy: None for policy in raw.get("fused") or {}},
                OVERALL: None,
                "undetermined": {**(raw.get("undetermined") or {}), **{dim: why for dim in given if dim != OVERALL}},
                "not_trusted": given,  # the keys counted apart from verdicts left undetermined by the judge
            }
        kept.append(JudgeRun(run.name, replace(run.folder, records=records)))
    return kept
