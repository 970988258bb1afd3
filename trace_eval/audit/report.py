"""The audit's numbers: how often the changed copy wins, per probe and label, beside what listeners do.

A label is scored from the copy's side: the copy's number is a win (1), the reference's a loss (0), a typed
tie (both_good, both_bad) half; an undetermined label (null) is left out and counted. Intervals are Wilson
score intervals with the clips as the sample size (a clip's two orders are not two independent draws), so
a handful of clips never gives a zero-width interval. A probe is *in line* with listeners when its whole
interval lies inside their band, *swayed* when it lies wholly outside, and *cannot tell yet* when it reaches
both: then `clips_needed` says how many clips would decide it, were the rate to stay as observed. Each label
shows its tie share (the typed ties among the decided pairs: a 50% of ties alone is no coin flip). A probe is
*uninformative* when fewer than MIN_DECIDED_CLIPS clips have its label decided, when every decided pair is
both_bad (no cue could move the label), or when the judge tied every pair of every probe (indifference by
default, not by judgement). Position bias: how often position 1 wins over both orders of every pair (ties
half; 0.5 is none, since the copy sits first exactly as often as second), read as the probes are, and how
often the two orders agree once the swap is undone.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from trace_eval.evaluation.bootstrap import BootstrapSettings
from trace_eval.evaluation.metrics import wilson_interval

from .derive import ProbePair
from .probes import PROBES, TOLERANCE

__all__ = [
    "CANNOT_TELL",
    "MIN_DECIDED_CLIPS",
    "OVERALL",
    "clips_to_decide",
    "copy_score",
    "judge_report",
    "markdown",
    "write_figure",
]

OVERALL = "overall"
TIES = ("both_good", "both_bad")
# Fewer clips with a decided label than this leave a probe uninformative: 4 clips all one way give a Wilson
# interval of [51%, 100%], the least that can set a judge apart from indifference.
MIN_DECIDED_CLIPS = 4
UNINFORMATIVE = "uninformative"
CANNOT_TELL = "cannot tell yet"
MOST_CLIPS = 100_000  # beyond this, "no number of clips" (a rate on the band's very edge)
NO_POSITION_BIAS = (0.5 - TOLERANCE, 0.5 + TOLERANCE)


def _reading(interval: tuple[float, float] | list[float], band: tuple[float, float]) -> str:
    """inside (the whole interval in the band), outside (none of it), or across (both)."""
    low, high = interval
    if band[0] <= low and high <= band[1]:
        return "inside"
    if high < band[0] or low > band[1]:
        return "outside"
    return "across"


def clips_to_decide(rate: float, band: tuple[float, float]) -> int | None:
    """The fewest clips whose Wilson interval around `rate` lies wholly inside `band` or wholly outside it; None
    when no number would (a rate on the band's edge). The interval narrows as clips are added, so the first
    such count is found by bisection."""

    def decided(clips: int) -> bool:
        interval = wilson_interval(rate * clips, clips)
        return interval is not None and _reading(interval, band) != "across"

    if not decided(MOST_CLIPS):
        return None
    low, high = 1, MOST_CLIPS
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if decided(middle) else (middle + 1, high)
    return low


def _cannot_tell(slot: dict, band: tuple[float, float]) -> None:
    """Turn an interval that reaches both the band and beyond it into "cannot tell yet", with the clips needed."""
    if slot.get("ci95") is None or _reading(slot["ci95"], band) != "across":
        return
    needed = clips_to_decide(slot["rate"], band)
    slot["verdict"] = CANNOT_TELL
    slot["clips_needed"] = needed
    reach = f"its interval {_pct(slot)} reaches both {band[0]:.0%}–{band[1]:.0%} and beyond"
    slot["why"] = reach + (
        f": about {needed} clips at this rate would decide it"
        if needed
        else ": at this rate, on the edge, no count of clips would decide it"
    )


def copy_score(label: Any, copy_position: int) -> float | None:
    """1 when the copy wins, 0 when the reference does, 0.5 for a tie; None when undetermined or unknown."""
    if label in TIES:
        return 0.5
    if label in ("1", "2"):
        return 1.0 if int(label) == copy_position else 0.0
    return None


def _first_score(label: Any) -> float | None:
    return copy_score(label, 1)


def _slot(sums: np.ndarray, counts: np.ndarray) -> dict:
    """The copy's rate over the decided pairs, its Wilson interval over the clips with a decided pair, and n."""
    decided = counts > 0
    clips = int(decided.sum())
    if not clips:
        return {"rate": None, "ci95": None, "n": 0, "clips": 0}
    rate = float(sums.sum() / counts.sum())
    interval = wilson_interval(rate * clips, clips)
    assert interval is not None
    return {
        "rate": round(rate, 4),
        "ci95": [round(x, 4) for x in interval],
        "n": int(counts.sum()),
        "clips": clips,
    }


def judge_report(
    name: str,
    records: Iterable[dict],
    pairs: list[ProbePair],
    labels: list[str],
    bootstrap: BootstrapSettings,
    run: dict | None = None,
) -> dict:
    """One judge's audit: per probe and label the copy's win rate with its interval and verdict, and position bias.

    `records` are the run folder's results (one per audit item), `labels` the rubric's dimensions then
    "overall" when it fuses.
    """
    by_id = {r["id"]: r for r in records}
    per_probe: dict[str, list[ProbePair]] = defaultdict(list)
    for pair in pairs:
        per_probe[pair.probe].append(pair)
    probes: list[dict] = []
    statuses: dict[str, int] = defaultdict(int)
    for probe_name, items in per_probe.items():
        probe = PROBES[probe_name]
        clips = sorted({p.clip for p in items})
        index = {clip: i for i, clip in enumerate(clips)}
        sums = {label: np.zeros(len(clips)) for label in labels}
        counts = {label: np.zeros(len(clips)) for label in labels}
        undetermined = dict.fromkeys(labels, 0)
        ties = dict.fromkeys(labels, 0)
        ties_only = dict.fromkeys(labels, True)
        both_bad_only = dict.fromkeys(labels, True)
        first_sums, first_counts = np.zeros(len(clips)), np.zeros(len(clips))
        orders: dict[str, dict[int, dict]] = defaultdict(dict)
        not_ok = 0
        for item in items:
            record = by_id.get(item.id)
            status = str(record.get("status")) if record else "missing"
            statuses[status] += 1
            if record is None or status != "ok":
                not_ok += 1
                continue
            orders[item.clip][item.copy_position] = record
            i = index[item.clip]
            for label in labels:
                score = copy_score(_label(record, label), item.copy_position)
                if score is None:
                    undetermined[label] += 1
                    continue
                sums[label][i] += score
                counts[label][i] += 1
                ties[label] += score == 0.5
                ties_only[label] = ties_only[label] and score == 0.5
                both_bad_only[label] = both_bad_only[label] and _label(record, label) == "both_bad"
            first = _first_score(_label(record, labels[-1]))
            if first is not None:
                first_sums[i] += first
                first_counts[i] += 1
        consistent = np.zeros(len(clips))
        both = np.zeros(len(clips))
        for clip, by_position in orders.items():
            if len(by_position) == 2:
                a, b = (copy_score(_label(by_position[p], labels[-1]), p) for p in (1, 2))
                if a is not None and b is not None:
                    both[index[clip]] = 1
                    consistent[index[clip]] = float(a == b)
        per_label = {}
        for label in labels:
            slot = _slot(sums[label], counts[label])
            expectation = probe.expect(label)
            judged = int(counts[label].sum())
            slot.update(
                judged=judged,
                ties=round(ties[label] / judged, 4) if judged else None,
                undetermined=undetermined[label],
                listeners=expectation.baseline,
                band=list(expectation.band),
                listeners_source=expectation.source,
                verdict=expectation.verdict(slot["ci95"]) if slot["rate"] is not None else None,
            )
            slot["ties_only"] = ties_only[label] and slot["judged"] > 0
            if slot["rate"] is None:
                slot["why"] = "no label determined" if not_ok < len(items) else "no pair judged"
            elif slot["clips"] < MIN_DECIDED_CLIPS:
                slot["verdict"] = UNINFORMATIVE
                slot["why"] = f"{slot['clips']} clip(s) decided; at least {MIN_DECIDED_CLIPS} are needed"
            elif both_bad_only[label] and slot["verdict"] == "in line":
                # Neither side acceptable on every pair: no change of the cue could move the label.
                slot["verdict"] = UNINFORMATIVE
                slot["why"] = "every decided pair both_bad: neither the copy nor its reference is acceptable"
            elif slot["verdict"] == "in line":  # reaching the band is not lying in it
                _cannot_tell(slot, expectation.band)
            per_label[label] = slot
        probes.append(
            {
                "probe": probe_name,
                "cue": probe.cue,
                "description": probe.description,
                "headline": probe.headline if probe.headline in labels else labels[-1],
                "clips": len(clips),
                "pairs": len(items),
                "not_judged": not_ok,
                "labels": per_label,
                "position_1_rate": _slot(first_sums, first_counts),
                "order_consistency": _slot(consistent, both),
            }
        )
    # A judge that named no winner on any probe hears no difference at all: its ties are no judgement.
    if all(p["labels"][p["headline"]].pop("ties_only") or p["labels"][p["headline"]]["judged"] == 0 for p in probes):
        for entry in probes:
            for slot in entry["labels"].values():
                if slot.get("verdict") in ("in line", CANNOT_TELL):
                    slot.pop("clips_needed", None)
                    slot["verdict"] = UNINFORMATIVE
                    slot["why"] = "the judge tied every pair of every probe: it heard no difference either way"
    for entry in probes:
        for slot in entry["labels"].values():
            slot.pop("ties_only", None)
    flags = []
    decided = [
        _label(r, labels[-1]) for r in by_id.values() if r.get("status") == "ok" and _label(r, labels[-1]) is not None
    ]
    if decided and all(label == "both_bad" for label in decided):
        flags.append(
            f"answers both_bad on every one of its {len(decided)} decided pairs ({_title(labels[-1])}): it "
            "accepts no answer, so no probe can move it and no probe can show it in line with listeners"
        )
    return {
        "judge": name,
        "labels": labels,
        "pairs": len(pairs),
        "flags": flags,
        "status": dict(statuses),
        "position_bias": _pooled_position(by_id, pairs, labels[-1], bootstrap),
        "probes": probes,
        "run": run or {},
    }


def _pooled_position(by_id: dict, pairs: list[ProbePair], label: str, bootstrap: BootstrapSettings) -> dict:
    """Position 1's win rate over every judged pair of every probe, resampled by clip."""
    clips = sorted({p.clip for p in pairs})
    index = {clip: i for i, clip in enumerate(clips)}
    sums, counts = np.zeros(len(clips)), np.zeros(len(clips))
    for pair in pairs:
        record = by_id.get(pair.id)
        if record and record.get("status") == "ok":
            score = _first_score(_label(record, label))
            if score is not None:
                sums[index[pair.clip]] += score
                counts[index[pair.clip]] += 1
    slot = _slot(sums, counts)
    verdict = None
    if slot["ci95"] is not None and slot["clips"] >= MIN_DECIDED_CLIPS:
        low, high = slot["ci95"]
        verdict = (
            "favours position 1"
            if low > NO_POSITION_BIAS[1]
            else "favours position 2"
            if high < NO_POSITION_BIAS[0]
            else "no position bias"
        )
    position = {**slot, "label": label, "judged": int(counts.sum()), "verdict": verdict}
    if verdict == "no position bias":
        _cannot_tell(position, NO_POSITION_BIAS)
    return position


def _label(record: dict, label: str) -> Any:
    if label == OVERALL:
        return record.get(OVERALL)
    return (record.get("verdicts") or {}).get(label)


# -- Markdown -----------------------------------------------------------------------------------


def _pct(slot: dict) -> str:
    if slot.get("rate") is None:
        return "—"
    low, high = slot["ci95"]
    return f"{slot['rate']:.0%} [{low:.0%}, {high:.0%}]"


def _rate_only(slot: dict) -> str:
    return "—" if slot.get("rate") is None else f"{slot['rate']:.0%}"


def _expected(slot: dict) -> str:
    low, high = slot["band"]
    base = "" if slot["listeners"] is None else f"{slot['listeners']:.0%}; "
    return f"{base}{low:.0%}–{high:.0%}"


def _short_verdict(slot: dict) -> str:
    if slot.get("verdict") == CANNOT_TELL:
        needed = slot.get("clips_needed")
        return f"cannot tell yet (~{needed} clips)" if needed else "cannot tell yet"
    return {
        "in line": "in line",
        "swayed towards": "**towards**",
        "swayed against": "**against**",
        UNINFORMATIVE: "uninformative",
    }.get(slot.get("verdict") or "", "—")


def _ties(slot: dict) -> str:
    return "—" if slot.get("ties") is None else f"{slot['ties']:.0%}"


def _n(slot: dict) -> str:
    """How many pairs decided the label, and on how many clips (the interval's sample size)."""
    return f"{slot.get('n', slot.get('judged', 0))} ({slot.get('clips', 0)} clips)"


def _title(label: str) -> str:
    return {"content": "C", "voice_quality": "VQ", "paralinguistics": "P", OVERALL: "overall"}.get(label, label)


def markdown(audit: dict) -> str:
    """The report: settings, then per judge a table of every probe (overall label first), position bias,
    and a side-by-side table when there are several judges."""
    lines = [
        "# Bias audit",
        "",
        f"Benchmark `{audit['bench']}`: {audit['clips']} response clips, {len(audit['probes'])} probes, "
        f"each copy judged against its reference in both orders ({audit['pairs']} pairs per judge).",
        "Rate: how often the changed copy wins (ties half), with a 95% Wilson interval over the clips; n: the "
        "pairs that decided the label (and their clips); ties: the share of those pairs that were typed ties. "
        "Listeners: the published rate where there is one, then the band counted as in line with them. The "
        "verdict compares the interval with that band: in line when it lies inside, swayed when it lies outside, "
        "cannot tell yet when it reaches both (with about how many clips, at the rate seen, would decide it). "
        f"Uninformative: fewer than {MIN_DECIDED_CLIPS} clips decided, or a judge that tied every pair of every probe.",
        "",
    ]
    for judge in audit["judges"]:
        labels = judge["labels"]
        lines += [f"## {judge['judge']}", ""]
        for flag in judge.get("flags") or []:
            lines += [f"**Flagged:** {judge['judge']} {flag}.", ""]
        header = ["probe", "label", "n", "copy wins", "ties", "listeners", "verdict"] + [_title(x) for x in labels]
        lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for probe in judge["probes"]:
            slot = probe["labels"][probe["headline"]]
            cells = [
                probe["probe"],
                _title(probe["headline"]),
                _n(slot),
                _pct(slot),
                _ties(slot),
                _expected(slot),
                _short_verdict(slot),
            ]
            for label in labels:
                other = probe["labels"][label]
                mark = "" if other.get("verdict") in ("in line", CANNOT_TELL, None) else f" {_short_verdict(other)}"
                cells.append(_rate_only(other) + mark)
            lines.append("| " + " | ".join(cells) + " |")
        pb = judge["position_bias"]
        lines += [
            "",
            f"Position 1 wins {_pct(pb)} of {pb['judged']} pairs on the {_title(pb['label'])} label: "
            f"{_short_verdict(pb) if pb['verdict'] == CANNOT_TELL else pb['verdict'] or 'undetermined'}.",
        ]
        undetermined = sum(p["labels"][p["headline"]]["undetermined"] for p in judge["probes"])
        if undetermined:
            total = sum(p["pairs"] for p in judge["probes"])
            lines.append(
                f"{undetermined} of {total} pair(s) left their probe's label undetermined (left out of its rate): "
                "the judge cannot decide those clips (the `cues` judge: answers to free-form instructions, whose "
                "Content it cannot check). Choose clips it can decide with `--ids ITEM,...` (items whose "
                "instruction quotes the words to say, for `cues`)."
            )
        why = sorted(
            {
                p["labels"][p["headline"]]["why"]
                for p in judge["probes"]
                if p["labels"][p["headline"]].get("verdict") == UNINFORMATIVE
            }
        )
        if why:
            lines.append(f"Uninformative probes: {'; '.join(why)}.")
        lines += _undecided_lines(judge, audit["clips"])
        run = judge.get("run") or {}
        if run:
            lines.append(
                f"Calls {run.get('calls', 0)}, cached {run.get('cache_hits', 0)}; run folder `{run.get('folder')}`."
            )
        lines.append("")
    if len(audit["judges"]) > 1:
        names = [j["judge"] for j in audit["judges"]]
        lines += ["## Side by side", "", "How often the copy wins on each probe's label, and the verdict.", ""]
        lines += ["| probe | label | " + " | ".join(names) + " |", "|---|---|" + "---|" * len(names)]
        for i, probe in enumerate(audit["judges"][0]["probes"]):
            cells = [probe["probe"], _title(probe["headline"])]
            for judge in audit["judges"]:
                slot = judge["probes"][i]["labels"][probe["headline"]]
                cells.append(f"{_pct(slot)} {_short_verdict(slot)}")
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    page = audit.get("page") or {}
    if page.get("path"):
        lines += [
            f"Every pair, playable beside its reference, with the verdicts: `{page['path']}` "
            "(search the ids by probe name, e.g. `noise-20dB`).",
            "",
        ]
    elif page.get("error"):
        lines += [f"The audit page could not be written: {page['error']}", ""]
    clipped = [
        f"{c['path']} {name} ({copy['reference_gain_db']:+.1f} dB)"
        for c in audit["copies"]["clips"]
        for name, copy in c["copies"].items()
        if copy.get("reference_gain_db") is not None
    ]
    if clipped:
        lines += [
            "Clipping avoided: where a louder copy would clip, its reference is the original lowered by the "
            "missing headroom (the pair keeps the stated difference): " + "; ".join(clipped) + ".",
            "",
        ]
    for failed in audit["copies"].get("failed", []):
        lines.append(f"Not probed: {failed['clip']}: {failed['reason']}")
    for skipped in audit["copies"].get("skipped", []):  # a word probe with no words to change in the clip
        lines.append(f"Not probed with {skipped['probe']}: {skipped['clip']}: {skipped['reason']}")
    return "\n".join(lines).rstrip() + "\n"


def _undecided_lines(judge: dict, clips: int) -> list[str]:
    """What the clips could not decide: the probes that cannot tell yet, and the clips that would decide them."""
    headlines = [p["labels"][p["headline"]] for p in judge["probes"]]
    open_ = [(p["probe"], s) for p, s in zip(judge["probes"], headlines) if s.get("verdict") == CANNOT_TELL]
    if not open_:
        return []
    decided = sum(s.get("verdict") in ("in line", "swayed towards", "swayed against") for s in headlines)
    needed = [s["clips_needed"] for _, s in open_ if s.get("clips_needed")]
    line = (
        f"Cannot tell yet: {len(open_)} of {len(headlines)} probes ({', '.join(name for name, _ in open_)}): "
        "their intervals reach both the listeners' band and beyond it"
    )
    if needed:
        line += f"; at the rates seen, {min(needed)} to {max(needed)} clips would decide them (`--clips N`)"
    if not decided:
        line += f". With {clips} clips this audit decided no probe"
    return [line + "."]


# -- the plot ----------------------------------------------------------------------------------------


def write_figure(audit: dict, path: Path) -> Path:
    """The copy's win rate per probe (on its label) with intervals, one colour per judge, listeners' bands shaded."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import PercentFormatter

    judges = audit["judges"]
    names = [f"{p['probe']} ({_title(p['headline'])})" for p in judges[0]["probes"]]
    figure = Figure(layout="constrained", figsize=(8, 1.2 + 0.45 * len(names) * max(1, len(judges) * 0.8)))
    axes = figure.add_subplot(1, 1, 1)
    positions = np.arange(len(names))
    for row, probe in enumerate(judges[0]["probes"]):
        low, high = probe["labels"][probe["headline"]]["band"]
        axes.fill_betweenx([row - 0.45, row + 0.45], low, high, color="0.88", zorder=0)
        base = probe["labels"][probe["headline"]]["listeners"]
        if base is not None:
            axes.plot([base, base], [row - 0.45, row + 0.45], color="0.4", lw=1, zorder=1)
    height = 0.8 / len(judges)
    for j, judge in enumerate(judges):
        y = positions + (j - (len(judges) - 1) / 2) * height
        slots = [p["labels"][p["headline"]] for p in judge["probes"]]
        values = np.array([s["rate"] if s["rate"] is not None else np.nan for s in slots])
        low = [v - s["ci95"][0] if s["ci95"] else 0.0 for v, s in zip(values, slots)]
        high = [s["ci95"][1] - v if s["ci95"] else 0.0 for v, s in zip(values, slots)]
        axes.errorbar(values, y, xerr=[low, high], fmt="o", capsize=3, color=f"C{j}", label=judge["judge"], zorder=2)
    axes.axvline(0.5, color="0.5", lw=0.8, ls="--")
    axes.set_yticks(positions, names)
    axes.invert_yaxis()
    axes.set_xlim(0.0, 1.0)
    axes.xaxis.set_major_formatter(PercentFormatter(1.0))
    axes.set_xlabel("changed copy wins (ties half; 95% CI) on each probe's label; grey: listeners' band")
    axes.grid(axis="x", alpha=0.3)
    axes.legend(fontsize=8, loc="lower right")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp.png")
    figure.savefig(tmp, dpi=110)
    tmp.replace(path)
    return path
