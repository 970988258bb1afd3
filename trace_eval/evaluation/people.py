"""The human ceiling in `evaluate`: where two or more people labelled the same items, each judge's agreement with
people beside people's agreement with each other, both against the majority of all annotators but one
(trace_eval/labels/agreement.py), and people's own agreement and position bias."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trace_eval.labels.agreement import ceiling, describe, judge_beside_people, position_bias
from trace_eval.labels.store import label_spaces
from trace_eval.rubrics import Rubric

from .bootstrap import BootstrapSettings
from .records import OVERALL, HumanLabels, JudgeRun
from .report import Block, Heading, Paragraph, Table

__all__ = ["people_blocks", "people_lines", "people_section"]

RESAMPLES = 1000


def _judge_labels(run: JudgeRun, rubric: Rubric, policy: str | None) -> dict[str, dict[str, Any]]:
    """A run's labels per item: its dimensions and, for rubrics that fuse, the overall label under `policy`."""
    labels: dict[str, dict[str, Any]] = {}
    for item, record in run.records(rubric).items():
        if record.verdicts is None:
            continue
        got = {d: v for d, v in record.verdicts.items() if v is not None}
        if rubric.fusion is not None:
            if policy is None or policy == run.policy:
                overall = record.overall
            else:
                overall = rubric.fusion.fuse_all(record.verdicts).get(policy) if record.decided else None
            if overall is not None:
                got[OVERALL] = overall
        labels[item] = got
    return labels


def people_section(
    runs: list[JudgeRun],
    human: HumanLabels,
    rubric: Rubric,
    policy: str | None,
    settings: BootstrapSettings,
    bench: Path,
) -> dict[str, Any] | None:
    """None unless two or more annotators labelled the benchmark (the manifest's labels count as one)."""
    if len(human.annotators) < 2:
        return None
    from trace_eval.bench import load_benchmark
    from trace_eval.labels.store import read_people

    shown = read_people(load_benchmark(bench, check_audio=False), rubric).shown
    spaces = label_spaces(rubric)
    section = ceiling(human.annotators, spaces, resamples=RESAMPLES, seed=settings.seed)
    section["judges"] = {
        run.name: judge_beside_people(
            human.annotators, _judge_labels(run, rubric, policy), spaces, resamples=RESAMPLES, seed=settings.seed
        )
        for run in runs
    }
    if shown:
        section["position_bias"] = position_bias(shown, human.annotators)
    section["disagreements"] = len(human.disagreements)
    return section


def people_blocks(section: dict[str, Any]) -> list[Block]:
    blocks: list[Block] = [
        Heading(2, "People's agreement: the ceiling"),
        Paragraph(
            f"Annotators: {', '.join(section['annotators'])}. Each annotator's label against the majority of the "
            "others (leave one annotator out), beside each judge against the same majorities; raw agreement, "
            "Krippendorff's alpha and Cohen's kappa per two annotators, with 95% bootstrap intervals over items. "
            f"{section['disagreements']} (item, dimension) have differing labels; where people tie, the item has "
            "no majority label and is left out."
        ),
    ]
    rows = []
    for dimension, figures in section["dimensions"].items():
        if figures.get("reason"):
            rows.append([dimension, "0", figures["reason"], "-", "-", "-"])
            continue
        judges = "; ".join(
            f"{name} {describe(per[dimension]['judge'])}"
            for name, per in section["judges"].items()
            if "judge" in per.get(dimension, {})
        )
        rows.append(
            [
                dimension,
                str(figures["items"]),
                describe(figures["leave_one_out"]),
                judges or "-",
                describe(figures["raw_agreement"]),
                describe(figures["krippendorff_alpha"]),
            ]
        )
    blocks.append(
        Table(["label", "items", "people vs the others", "judge vs the same", "raw agreement", "alpha"], rows)
    )
    bias = section.get("position_bias")
    if bias and bias.get("share_first") is not None:
        blocks.append(
            Paragraph(
                f"People's position bias: the response shown first won {bias['share_first']:.0%} of "
                f"{bias['winners']} labels naming a winner (orders were randomised; 50% is none)."
            )
        )
    return blocks


def people_lines(section: dict[str, Any] | None) -> list[str]:
    """What `evaluate` prints: per label, people against each other beside each judge."""
    if not section:
        return []
    lines = []
    for dimension, figures in section["dimensions"].items():
        if figures.get("reason"):
            continue
        for name, per in section["judges"].items():
            got = per.get(dimension, {})
            if "judge" not in got:
                continue
            lines.append(
                f"people ({dimension}, {figures['items']} items, {len(section['annotators'])} annotators): "
                f"{name} agrees with the others' majority {describe(got['judge'])}; people with each other "
                f"{describe(got['people'])} (leave one annotator out); alpha {describe(figures['krippendorff_alpha'])}"
            )
    bias = section.get("position_bias")
    if bias and bias.get("share_first") is not None:
        lines.append(f"people's position bias: first shown chosen in {bias['share_first']:.0%} of {bias['winners']}")
    return lines
