"""Fit the Voice Quality thresholds of the `cues` backbone on a calibration set, and check them on held-out pairs.

    python scripts/make_calibration.py cal
    python -m trace_eval blueprints cal/fit --only dnsmos,asr,pitch,loudness,rate,voicing    # and cal/heldout
    python scripts/calibrate_cues.py cal

Prints the DNSMOS scores per degradation, then searches a grid of
(minimum P.808, minimum BAK, win margin) for the highest Voice Quality accuracy
on cal/fit. Every grid point that reaches it is a fitted rule: for each
threshold, the range over those points with the other two held at their
current values is printed, so a threshold is set inside it, away from the ends. Last, the accuracy of the thresholds in
`trace_eval/judge/cues.py` on each part.
"""
from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from trace_eval.judge.cues import DEFAULT_THRESHOLDS, Thresholds, judge_voice_quality  # noqa: E402
from trace_eval.store import BlueprintStore  # noqa: E402

SPLITS = ("fit", "heldout")
SCORES = (("P808_Overall_Quality", "P.808"), ("DNSMOS_Personalized_Background_Quality", "BAK"),
          ("DNSMOS_Personalized_Overall_Quality", "OVRL"), ("DNSMOS_Personalized_Signal_Quality", "SIG"))
GRID = {
    "quality_min_p808": np.round(np.arange(2.0, 3.21, 0.05), 2),
    "quality_min_background": np.round(np.arange(1.0, 2.41, 0.05), 2),  # 1.0: BAK not used
    "quality_clear_margin": (*np.round(np.arange(0.4, 1.61, 0.05), 2), 5.0),  # 5.0: no winner among acceptable
}


@dataclass(frozen=True)
class Item:
    index: str
    label: str  # the recipe's voice_quality label
    blueprints: tuple[dict | None, dict | None]
    made: tuple[str, str]  # how each response was degraded


def load(folder: Path) -> list[Item]:
    """The pairs of one benchmark folder with their stored blueprints (run `blueprints` on it first)."""
    store = BlueprintStore(folder)
    recipes = {r["index"]: r for r in json.loads((folder / "recipes.json").read_text(encoding="utf-8"))}
    items = []
    for entry in json.loads((folder / "manifest.json").read_text(encoding="utf-8")):
        bps = (store.get_by_path(entry["audio1_path"]), store.get_by_path(entry["audio2_path"]))
        if None in bps:
            raise SystemExit(f"{folder}: no blueprint for {entry['index']}; run `python -m trace_eval blueprints "
                             f"{folder} --only dnsmos,asr,pitch,loudness,rate,voicing`")
        recipe = recipes[entry["index"]]
        items.append(Item(entry["index"], entry["label"]["voice_quality"], bps,
                          (recipe["a"]["degradation"], recipe["b"]["degradation"])))
    return items


def accuracy(items: list[Item], t: Thresholds) -> float:
    return sum(judge_voice_quality(*item.blueprints, t)[0] == item.label for item in items) / len(items)


def score_table(items: list[Item]) -> list[str]:
    """Mean (min-max) of each DNSMOS score per degradation, over unique clips."""
    by_kind: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    seen = set()
    for item in items:
        for bp, made in zip(item.blueprints, item.made, strict=True):
            if bp["provenance"]["audio_sha256"] in seen:
                continue
            seen.add(bp["provenance"]["audio_sha256"])
            for key, name in SCORES:
                by_kind[made][name].append(bp["agent_audio_quality"][key])
    names = " | ".join(name for _, name in SCORES)
    lines = [f"| degradation | clips | {names} |", "|---|---|" + "---|" * len(SCORES)]
    for made in sorted(by_kind):
        cells = [f"{np.mean(v):.2f} ({min(v):.2f}-{max(v):.2f})" for v in (by_kind[made][n] for _, n in SCORES)]
        lines.append(f"| {made} | {len(by_kind[made]['P.808'])} | {' | '.join(cells)} |")
    return lines


def fit(items: list[Item]) -> tuple[float, list[dict]]:
    """The best accuracy on `items` over GRID and every grid point that reaches it."""
    best, winners = -1.0, []
    for values in itertools.product(*GRID.values()):
        setting = dict(zip(GRID, (float(v) for v in values), strict=True))
        acc = accuracy(items, replace(DEFAULT_THRESHOLDS, **setting))
        if acc > best + 1e-9:
            best, winners = acc, [setting]
        elif abs(acc - best) <= 1e-9:
            winners.append(setting)
    return best, winners


def mistakes(items: list[Item], t: Thresholds) -> list[str]:
    out = []
    for item in items:
        label, reading, _ = judge_voice_quality(*item.blueprints, t)
        if label != item.label:
            out.append(f"  {item.index}: {item.made[0]} vs {item.made[1]}: judged {label}, made {item.label}"
                       f" ({reading.split('; ', 1)[-1]})")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("calibration", type=Path, help="the folder make_calibration.py wrote (fit/ and heldout/)")
    args = parser.parse_args(argv)
    parts = {split: load(args.calibration / split) for split in SPLITS}
    for split, items in parts.items():
        print(f"\nDNSMOS per degradation, {split} ({len(items)} pairs):")
        print("\n".join(score_table(items)))
    best, winners = fit(parts["fit"])
    print(f"\nbest Voice Quality accuracy on fit: {best:.1%}, reached by {len(winners)} grid points;")
    print("each threshold's range among them, the other two as in trace_eval/judge/cues.py:")
    current = {name: getattr(DEFAULT_THRESHOLDS, name) for name in GRID}
    for name in GRID:
        values = sorted(w[name] for w in winners if all(w[o] == current[o] for o in GRID if o != name))
        span = f"{values[0]:g} .. {values[-1]:g}" if values else "none: the current setting is not a best fit"
        print(f"  {name} = {current[name]:g}: {span}")
    print("\nthe thresholds in trace_eval/judge/cues.py:")
    for split, items in parts.items():
        print(f"  {split}: Voice Quality accuracy {accuracy(items, DEFAULT_THRESHOLDS):.1%} ({len(items)} pairs)")
        print("\n".join(mistakes(items, DEFAULT_THRESHOLDS)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
