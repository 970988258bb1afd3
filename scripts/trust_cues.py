"""How far the `cues` backbone's confidence can be trusted: its reliability diagram and its coverage at
guaranteed agreement, on benchmark folders with human (or recipe) labels and blueprints.

    python scripts/make_calibration.py cal            # and `blueprints` on cal/fit, cal/heldout, cal/recorded
    python -m trace_eval blueprints examples/mini
    python scripts/trust_cues.py examples/mini cal/fit cal/heldout cal/recorded --figure docs/trust_cues.png

Judges every folder with `cues` (into a temporary folder), pools the verdicts, and prints:
- the reliability diagram of the fused label: verdicts binned by confidence, each bin's mean confidence
  against its agreement with the labels (undetermined pairs left out, and counted);
- per dimension, the same agreement in two halves (confidence below and at or above the median);
- the threshold and coverage `calibrate` gives at 90% and 95% guaranteed agreement (delta 0.1), on all
  folders pooled and on each.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from trace_eval.evaluation.calibration import calibrate  # noqa: E402
from trace_eval.evaluation.records import load_human_labels  # noqa: E402
from trace_eval.judge import JudgeOptions, run_judge  # noqa: E402
from trace_eval.rubrics import load_rubric  # noqa: E402

BINS = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0001)
TARGETS = (0.9, 0.95)
DELTA = 0.1


def verdicts(bench: Path, out: Path) -> list[tuple[str, dict, dict]]:
    """(id, record, human labels) of every labelled pair of `bench`, judged with cues."""
    outcome = run_judge(JudgeOptions(bench=bench, model="cues", out=out, progress=False), notice=lambda m: None)
    human = load_human_labels(bench, load_rubric("trace")).labels
    return [(r["id"], r, human.get(r["id"], {})) for r in outcome.records if human.get(r["id"], {}).get("overall")]


def pooled(rows: list[tuple[str, dict, dict]], key: str) -> tuple[np.ndarray, np.ndarray, int]:
    """(confidences, agreements, undetermined) of `key` (overall or a dimension) over the rows."""
    conf, agree, undetermined = [], [], 0
    for _, record, human in rows:
        label = record["overall"] if key == "overall" else (record["verdicts"] or {}).get(key)
        if human.get(key) is None:
            continue
        confidence = (record.get("confidence") or {}).get(key)
        if label is None or confidence is None:
            undetermined += 1
            continue
        conf.append(confidence)
        agree.append(label == human[key])
    return np.array(conf), np.array(agree, dtype=bool), undetermined


def reliability(conf: np.ndarray, agree: np.ndarray) -> list[tuple[str, int, float, float]]:
    rows = []
    for low, high in zip(BINS[:-1], BINS[1:]):
        inside = (conf >= low) & (conf < high)
        if inside.any():
            rows.append(
                (f"{low:.2f}-{min(high, 1.0):.2f}", int(inside.sum()), conf[inside].mean(), agree[inside].mean())
            )
    return rows


def figure(rows: list[tuple[str, int, float, float]], path: Path) -> None:
    from matplotlib.figure import Figure

    fig = Figure(layout="constrained", figsize=(4.6, 4.0))
    axes = fig.add_subplot()
    axes.plot([0.5, 1.0], [0.5, 1.0], "--", color="grey", label="calibrated")
    axes.plot([r[2] for r in rows], [r[3] for r in rows], "o-", label="cues (fused label)")
    for _, n, mean, share in rows:
        axes.annotate(str(n), (mean, share), textcoords="offset points", xytext=(4, -10), fontsize=8)
    axes.set_xlabel("confidence (bin mean)")
    axes.set_ylabel("agreement with the labels")
    axes.set_xlim(0.45, 1.02)
    axes.set_ylim(0.0, 1.02)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8, loc="lower right")
    fig.savefig(path, dpi=110, bbox_inches="tight", facecolor="white")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("benches", nargs="+", type=Path)
    parser.add_argument("--figure", type=Path, default=None, help="write the reliability diagram here (PNG)")
    args = parser.parse_args()
    every: list[tuple[str, dict, dict]] = []
    per_bench = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n, bench in enumerate(args.benches):
            rows = verdicts(bench, Path(tmp) / f"run{n}")
            per_bench[str(bench)] = rows
            every += [(f"{bench}/{i}", r, h) for i, r, h in rows]
    conf, agree, undetermined = pooled(every, "overall")
    print(f"fused label (cap), {len(every)} labelled pairs; {undetermined} undetermined, {conf.size} with a verdict")
    print("| confidence | verdicts | mean confidence | agreement |\n|---|---|---|---|")
    table = reliability(conf, agree)
    for name, n, mean, share in table:
        print(f"| {name} | {n} | {mean:.2f} | {share:.0%} |")
    for dim in ("content", "voice_quality", "paralinguistics"):
        c, a, u = pooled(every, dim)
        median = float(np.median(c)) if c.size else 0.0
        low, high = a[c < median], a[c >= median]
        print(
            f"{dim}: {c.size} verdicts ({u} undetermined); below the median confidence {median:.2f}: "
            f"{low.mean() if low.size else float('nan'):.0%} agree ({low.size}), at or above: "
            f"{high.mean() if high.size else float('nan'):.0%} ({high.size})"
        )
    print("\n| pairs | guaranteed agreement (delta 0.1) | threshold | coverage of labelled pairs | agreement above |")
    print("|---|---|---|---|---|")
    for name, rows in [("all pooled", every), *per_bench.items()]:
        c, a, u = pooled(rows, "overall")
        for target in TARGETS:
            cal = calibrate(c, a, target, DELTA)
            if cal.threshold is None:
                first = cal.tests[0] if cal.tests else None
                why = f"none (first test: {first.agree}/{first.n} agree, p {first.p_value:.2f})" if first else "none"
                print(f"| {name} ({len(rows)}) | {target:.0%} | {why} | 0% | - |")
            else:
                cover = cal.trusted / len(rows)
                print(
                    f"| {name} ({len(rows)}) | {target:.0%} | {cal.threshold:.3f} | {cover:.0%} | {cal.agreement:.0%} |"
                )
    if args.figure:
        figure(table, args.figure)
        print(f"\nwrote {args.figure}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
