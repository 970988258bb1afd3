"""Fit the thresholds of the `cues` backbone on a calibration set, and check them on the other parts.

    python scripts/make_calibration.py cal
    python -m trace_eval blueprints cal/fit --only dnsmos,asr,pitch,loudness,rate,voicing   # cal/heldout, cal/recorded
    python scripts/calibrate_cues.py cal

Prints the DNSMOS scores and the loudness per degradation, then fits on cal/fit:
the acceptability floors (minimum P.808, minimum BAK) with the winner margins as
in trace_eval/judge/cues.py, then the winner margins (P.808 and BAK leads for
noise, the P.808 lead alone) with the floors as they are, and the word-recall
floor of Content. Every grid point that reaches the best accuracy is a fitted
rule: for each threshold, the range over those points with the others held at
their current values is printed, so a threshold is set inside it, away from the
ends. Last, the accuracy of the thresholds in trace_eval/judge/cues.py on each
part, with the pairs they get wrong.
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

from trace_eval.judge.cues import (
    DEFAULT_THRESHOLDS,
    Thresholds,
    judge_content,
    judge_voice_quality,  # noqa: E402
    transcript_doubt,
)
from trace_eval.judge.prompts import blueprint_view, load_prompt  # noqa: E402
from trace_eval.stage1.store import BlueprintStore  # noqa: E402

SPLITS = ("fit", "heldout", "recorded")
KEYS = load_prompt("trace").blueprint_keys
SCORES = (
    ("P808_Overall_Quality", "P.808"),
    ("DNSMOS_Personalized_Background_Quality", "BAK"),
    ("DNSMOS_Personalized_Overall_Quality", "OVRL"),
)
FLOORS = {
    "quality_min_p808": np.round(np.arange(2.3, 3.21, 0.05), 2),
    "quality_min_background": np.round(np.arange(1.0, 2.21, 0.05), 2),  # 1.0: BAK not used
}
MARGINS = {
    "quality_noise_margin_p808": (*np.round(np.arange(0.1, 0.81, 0.05), 2), 5.0),  # 5.0: no noise rule
    "quality_noise_margin_background": np.round(np.arange(0.0, 0.61, 0.05), 2),
    "quality_clear_margin": (*np.round(np.arange(0.5, 1.61, 0.05), 2), 5.0),  # 5.0: no winner by P.808 alone
}
RECALL = {"content_min_recall": np.round(np.arange(0.05, 0.96, 0.05), 2)}


@dataclass(frozen=True)
class Item:
    index: str
    instruction: str
    labels: dict  # the recipe's labels
    blueprints: tuple[dict | None, dict | None]  # as the judge sees them (the trace prompt's keys, rounded)
    made: tuple[str, str]  # how each response was degraded
    audio: tuple[str, str]  # sha256 of each response's audio
    said: tuple[str, str]  # what each response says


def load(folder: Path) -> list[Item]:
    """The pairs of one benchmark folder with their stored blueprints (run `blueprints` on it first)."""
    store = BlueprintStore(folder)
    recipes = {r["index"]: r for r in json.loads((folder / "recipes.json").read_text(encoding="utf-8"))}
    items = []
    for entry in json.loads((folder / "manifest.json").read_text(encoding="utf-8")):
        stored = (store.get_by_path(entry["audio1_path"]), store.get_by_path(entry["audio2_path"]))
        if None in stored:
            raise SystemExit(
                f"{folder}: no blueprint for {entry['index']}; run `python -m trace_eval blueprints "
                f"{folder} --only dnsmos,asr,pitch,loudness,rate,voicing`"
            )
        recipe = recipes[entry["index"]]
        made = (recipe["a"]["degradation"], recipe["b"]["degradation"])
        if recipe["a"]["wpm"] != recipe["b"]["wpm"]:
            made = tuple(f"{m}, {recipe[s]['wpm']} wpm" for m, s in zip(made, "ab", strict=True))
        views = tuple(
            {**blueprint_view(bp, KEYS, ()), "transcript_quality": bp.get("transcript_quality")} for bp in stored
        )
        items.append(
            Item(
                entry["index"],
                entry["instruction_text"],
                entry["label"],
                views,
                made,
                tuple(bp["provenance"]["audio_sha256"] for bp in stored),
                (recipe["a"]["text"], recipe["b"]["text"]),
            )
        )
    return items


def judged(item: Item, dimension: str, t: Thresholds) -> tuple[str | None, str]:
    bp1, bp2 = item.blueprints
    doubts = (transcript_doubt(bp1), transcript_doubt(bp2))
    if dimension == "voice_quality":
        label, reading, _ = judge_voice_quality(bp1, bp2, t, doubts, item.instruction)
    else:
        label, reading, _ = judge_content(item.instruction, bp1, bp2, t, doubts)
    return label, reading


def accuracy(items: list[Item], t: Thresholds, dimension: str = "voice_quality") -> float:
    return sum(judged(item, dimension, t)[0] == item.labels[dimension] for item in items) / len(items)


def score_table(items: list[Item]) -> list[str]:
    """Mean (min-max) of each DNSMOS score and the loudness per degradation, over unique clips."""
    by_kind: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    seen = set()
    for item in items:
        for bp, made, audio in zip(item.blueprints, item.made, item.audio, strict=True):
            if audio in seen:
                continue
            seen.add(audio)
            for key, name in SCORES:
                if bp["agent_audio_quality"].get(key) is not None:  # null on silence
                    by_kind[made][name].append(bp["agent_audio_quality"][key])
            lufs = (bp.get("agent_audio_properties") or {}).get("Integrated_Loudness_LUFS")
            if lufs is not None:
                by_kind[made]["LUFS"].append(lufs)
    names = [name for _, name in SCORES] + ["LUFS"]
    lines = [f"| degradation | clips | {' | '.join(names)} |", "|---|---|" + "---|" * len(names)]
    for made in sorted(by_kind):
        cells = [
            f"{np.mean(v):.2f} ({min(v):.2f}-{max(v):.2f})" if v else "-" for v in (by_kind[made][n] for n in names)
        ]
        clips = max(len(v) for v in by_kind[made].values()) if by_kind[made] else 0
        lines.append(f"| {made} | {clips} | {' | '.join(cells)} |")
    return lines


def fit(items: list[Item], grid: dict, dimension: str = "voice_quality") -> tuple[float, list[dict]]:
    """The best accuracy on `items` over `grid` (the other thresholds as they are) and every point reaching it."""
    best, winners = -1.0, []
    for values in itertools.product(*grid.values()):
        setting = dict(zip(grid, (float(v) for v in values), strict=True))
        acc = accuracy(items, replace(DEFAULT_THRESHOLDS, **setting), dimension)
        if acc > best + 1e-9:
            best, winners = acc, [setting]
        elif abs(acc - best) <= 1e-9:
            winners.append(setting)
    return best, winners


def ranges(grid: dict, winners: list[dict]) -> list[str]:
    current = {name: getattr(DEFAULT_THRESHOLDS, name) for name in grid}
    out = []
    for name in grid:
        values = sorted(w[name] for w in winners if all(w[o] == current[o] for o in grid if o != name))
        span = f"{values[0]:g} .. {values[-1]:g}" if values else "none: the current setting is not a best fit"
        out.append(f"  {name} = {current[name]:g}: {span}")
    return out


def mistakes(items: list[Item], t: Thresholds, dimension: str) -> list[str]:
    out = []
    for item in items:
        label, reading = judged(item, dimension, t)
        if label != item.labels[dimension]:
            what = item.made if dimension == "voice_quality" else item.said
            out.append(
                f"  {item.index}: {what[0]} vs {what[1]}: judged {label}, made {item.labels[dimension]}"
                f" ({reading.split('; ', 1)[-1]})"
            )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("calibration", type=Path, help="the folder make_calibration.py wrote")
    args = parser.parse_args(argv)
    parts = {split: load(args.calibration / split) for split in SPLITS if (args.calibration / split).exists()}
    for split, items in parts.items():
        print(f"\nDNSMOS and loudness per degradation, {split} ({len(items)} pairs):")
        print("\n".join(score_table(items)))
    for title, grid, dimension in (
        ("acceptability floors", FLOORS, "voice_quality"),
        ("winner margins", MARGINS, "voice_quality"),
        ("word recall", RECALL, "content"),
    ):
        best, winners = fit(parts["fit"], grid, dimension)
        print(f"\n{title}: best {dimension} accuracy on fit {best:.1%}, reached by {len(winners)} grid points;")
        print("each threshold's range among them, the others as in trace_eval/judge/cues.py:")
        print("\n".join(ranges(grid, winners)))
    print("\nthe thresholds in trace_eval/judge/cues.py:")
    for split, items in parts.items():
        for dimension in ("voice_quality", "content"):
            print(
                f"  {split}: {dimension} accuracy {accuracy(items, DEFAULT_THRESHOLDS, dimension):.1%} "
                f"({len(items)} pairs)"
            )
            print("\n".join(mistakes(items, DEFAULT_THRESHOLDS, dimension)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
