"""TRACE's report, the metric `metrics: [trace]` names: everything `evaluate` measures on runs of a
rubric that fuses typed-tie verdicts into an overall label, as one JSON-ready dictionary (metrics.json),
and the report's sections.

Every statistic with a confidence interval is registered with the one metrics engine
(engine.Estimates) over the evaluated items, so every interval comes from the same resamples:
intervals of different runs and policies are paired.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fusion import LABELS, WINNERS, get_policy
from trace_eval.rubrics import Rubric

from . import languages, metrics, positions, probes, scores
from .bootstrap import DEFAULT_BOOTSTRAP, BootstrapSettings
from .engine import Estimates, compare
from .records import OVERALL, UNSCORED, EvaluationError, HumanLabels, JudgeRun
from .report import (
    FAILED_SHOWN,
    Block,
    EvaluationFiles,
    Heading,
    Image,
    Paragraph,
    Table,
    coverage,
    cue_blocks,
    excluded,
    no_verdict_blocks,
    number,
    percent,
)

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
    "probes.content_counterfactual": "Content set to both_good and fused again: accuracy against the human overall "
    "label, share of items whose label changes, and which dimension then decides (its share and accuracy)",
    "probes.flip_rates": "share of scored items whose fused label changes when one dimension is set to both_good",
    "probes.winner_on_bad": "of items humans rated both_bad overall, share where the run names a winner",
    "probes.winner_slice_accuracy": "of items where the run names a winner, share where humans chose the same response",
    "no_verdict": "items without a verdict, counted by why and listed, never scored: "
    + "; ".join(f"{kind}: {why}" for kind, why in UNSCORED.items() if kind != "undetermined"),
    "coverage": "decided items over items with the human label, per dimension and overall: an item is decided on a "
    "dimension when the run gave it a label, and overall when it gave all three (an undetermined dimension, left "
    "null for want of evidence, gives no overall label under any policy). Every accuracy, kappa and probe is "
    "computed on the decided items only; undetermined items and those without a verdict are counted here, never scored",
    "positions": "how the winners (labels 1 and 2) split between the response shown first and second, for the "
    "humans' overall labels and each run's; human labels with more than "
    f"{positions.LOPSIDED_ABOVE:.0%} of the winners in one position are lopsided, and the baseline is the accuracy "
    "of always answering that position",
    "undetermined": "items the judge answered but left one or more dimensions null because a deciding cue was "
    "missing (unmeasured, dropped, or from an unreliable transcript), with the reason per dimension",
    "by_language": "where the items are in more than one language (an item's language is its instruction's: "
    "declared in the manifest, else detected in its blueprint, else read from its text or transcript), each "
    "language's items, coverage, 4-way agreement "
    "and per-dimension agreement; null when the benchmark is in one language",
}


def _is(values: Iterable[str | None], wanted: Iterable[str]) -> np.ndarray:
    wanted = set(wanted)
    return np.array([v in wanted for v in values], dtype=bool)


def _equal(a: list[str | None], b: list[str | None]) -> np.ndarray:
    return np.array([x is not None and x == y for x, y in zip(a, b)], dtype=bool)


def _present(values: Sequence[object]) -> np.ndarray:
    return np.array([v is not None for v in values], dtype=bool)


def _distribution(values: Iterable[str | None]) -> dict[str, int]:
    values = list(values)
    return {label: sum(v == label for v in values) for label in LABELS}


def _coverage(said: list[str | None], truth: list[str | None], undetermined: np.ndarray) -> dict[str, Any]:
    """Decided items over the items with a human label; the rest split into undetermined and no verdict."""
    labelled = _present(truth)
    decided = int((_present(said) & labelled).sum())
    left = int((undetermined & labelled).sum())
    n = int(labelled.sum())
    return {
        "decided": decided,
        "of": n,
        "value": decided / n if n else None,
        "undetermined": left,
        "no_verdict": n - decided - left,
    }


def _agreement(
    pending: Estimates, key: tuple, predicted: list[str | None], human_overall: list[str | None], valid: np.ndarray
) -> dict[str, Any]:
    """4-, 3- and 2-way accuracy and kappa of `predicted` against the human overall labels."""
    scored = valid & _present(human_overall)
    collapsed_p = [metrics.collapse_ties(p) if p else None for p in predicted]
    collapsed_h = [metrics.collapse_ties(h) if h else None for h in human_overall]
    paired = [(h, p) if s else (None, None) for h, p, s in zip(human_overall, predicted, scored)]
    return {
        "4way": pending.proportion(
            (*key, "4way"), _equal(predicted, human_overall), scored, "no item has a verdict and a human overall label"
        ),
        "3way": pending.proportion(
            (*key, "3way"), _equal(collapsed_p, collapsed_h), scored, "no item has a verdict and a human overall label"
        ),
        "2way": pending.proportion(
            (*key, "2way"),
            _equal(predicted, human_overall),
            scored & _is(human_overall, WINNERS),
            "no item with a verdict has a human winner label",
        ),
        "kappa": pending.kappa((*key, "kappa"), [h for h, _ in paired], [p for _, p in paired], LABELS),
    }


def _run_metrics(
    pending: Estimates,
    index: int,
    run: JudgeRun,
    rubric: Rubric,
    policy: str,
    ids: list[str],
    human: dict[str, dict[str, str]],
    item_languages: dict[str, str | None] | None = None,
) -> tuple[dict[str, Any], tuple[np.ndarray, np.ndarray]]:
    """The run's block of metrics.json, and its item-wise (4-way correct, scored) masks for comparisons."""
    run_records = run.records(rubric)
    records = [run_records.get(i) for i in ids]
    answered = [r.verdicts if r is not None else None for r in records]
    # Probes and fusion need every label: an item with an undetermined dimension is not scored there.
    verdicts = [v if r is not None and r.decided else None for r, v in zip(records, answered)]
    valid = _present(verdicts)
    human_overall = [human[i].get("overall") for i in ids]
    labelled = _present(human_overall)
    predicted = [rubric.require_fusion().fuse(policy, v) if v else None for v in verdicts]
    key = ("run", index)

    agreement = _agreement(pending, (*key, "overall"), predicted, human_overall, valid)
    undetermined_any = np.array([r is not None and bool(r.undetermined) for r in records], dtype=bool)
    coverage = {"overall": _coverage(predicted, human_overall, undetermined_any)}
    per_dimension = {}
    dimension_kappa = {}
    for d in rubric.names:
        said = [v[d] if v else None for v in answered]
        truth = [human[i].get(d) for i in ids]
        both = _present(said) & _present(truth)  # decided on this dimension, whatever the others
        coverage[d] = _coverage(
            said, truth, np.array([r is not None and d in r.undetermined for r in records], dtype=bool)
        )
        per_dimension[d] = pending.proportion(
            (*key, "dim", d), _equal(said, truth), both, f"no item has a verdict and a human {d} label"
        )
        dimension_kappa[d] = pending.kappa(
            (*key, "dim-kappa", d),
            [t if b else None for t, b in zip(truth, both)],
            [s if b else None for s, b in zip(said, both)],
            rubric.dimension(d).labels.values,
        )

    fusion_table = {}
    for name in rubric.require_fusion().policies:
        fused_by = (
            [rubric.require_fusion().fuse(name, v) if v else None for v in verdicts] if name != policy else predicted
        )
        fusion_table[name] = _agreement(pending, (*key, "fusion", name), fused_by, human_overall, valid)

    scored = valid & labelled
    counterfactual = [probes.content_counterfactual(rubric, policy, v) if v else (None, None) for v in verdicts]
    cf_labels = [c[0] for c in counterfactual]
    cf_deciders = [c[1] for c in counterfactual]
    deciders = {}
    for decider in probes.deciders(rubric):
        decided = _is(cf_deciders, [decider])
        deciders[decider] = {
            "share": pending.proportion((*key, "cf-share", decider), decided, valid, "no scored item"),
            "accuracy": pending.proportion(
                (*key, "cf-acc", decider),
                _equal(cf_labels, human_overall),
                scored & decided,
                f"no labelled item decided by {decider}",
            ),
        }
    flipped = [probes.flips(rubric, policy, v) if v else None for v in verdicts]
    flip_rates = {}
    for d in rubric.names:
        after = [f[d] if f else None for f in flipped]
        flip_rates[d] = {
            "flipped": pending.proportion(
                (*key, "flip", d), ~_equal(after, predicted) & valid, valid, "no scored item"
            ),
            "accuracy_after": pending.proportion(
                (*key, "flip-acc", d), _equal(after, human_overall), scored, "no labelled scored item"
            ),
        }
    probe_block = {
        "content_counterfactual": {
            "accuracy": pending.proportion(
                (*key, "cf-acc"), _equal(cf_labels, human_overall), scored, "no labelled scored item"
            ),
            "changed": pending.proportion(
                (*key, "cf-changed"), ~_equal(cf_labels, predicted) & valid, valid, "no scored item"
            ),
            "deciders": deciders,
        },
        "flip_rates": flip_rates,
        "winner_on_bad": pending.proportion(
            (*key, "winner-on-bad"),
            _is(predicted, WINNERS),
            valid & _is(human_overall, ["both_bad"]),
            "no scored item that humans rated both_bad",
        ),
        "winner_slice_accuracy": pending.proportion(
            (*key, "winner-slice"),
            _equal(predicted, human_overall),
            scored & _is(predicted, WINNERS),
            "the run names a winner on no labelled item",
        ),
    }

    no_verdict = [
        {"id": run_id, "status": r.unscored, "reason": r.reason}
        for run_id, r in run_records.items()
        if r.verdicts is None
    ]
    by_status: dict[str, int] = {}
    for r in run_records.values():
        by_status[r.status] = by_status.get(r.status, 0) + 1
    unscored = Counter(r.unscored for r in records if r is not None)  # the manifest's items in this run
    in_bench = set(human)
    mismatched = [
        i
        for i, r, p in zip(ids, records, predicted)
        if policy == run.policy and p is not None and r is not None and r.overall is not None and r.overall != p
    ]
    block = {
        **run.describe(),
        "fusion": policy,
        "items": {
            "in_run": len(run_records),
            "scored": int(valid.sum()),
            **{kind: unscored[kind] for kind in UNSCORED},
            "scored_with_overall_label": int(scored.sum()),
            "by_status": dict(sorted(by_status.items())),
            "not_in_benchmark": sum(i not in in_bench for i in run_records),
            "not_judged": sum(i not in run_records for i in ids),
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
                [p for p, s in zip(predicted, scored) if s and p is not None],
                [h for h, s in zip(human_overall, scored) if s and h is not None],
            ).tolist(),
        },
        "positions": {OVERALL: positions.split(p for p in predicted if p is not None)},
        "distribution": {
            "overall": _distribution(predicted),
            **{d: _distribution(v[d] if v else None for v in answered) for d in rubric.names},
        },
        "fusion_table": fusion_table,
        "probes": probe_block,
        "no_verdict": no_verdict,
        "undetermined": [
            {"id": run_id, "dimensions": dict(r.undetermined)} for run_id, r in run_records.items() if r.undetermined
        ],
        "cues": run.summary.get("cues"),
        "by_language": languages.by_language(
            pending,
            (*key, "by-language"),
            ids,
            item_languages or {},
            predicted,
            human_overall,
            {d: [v[d] if v else None for v in answered] for d in rubric.names},
            {d: [human[i].get(d) for i in ids] for d in rubric.names},
        ),
        "problems": list(run.problems)
        + (
            [
                f"{len(mismatched)} item(s) whose recorded overall label differs from re-fusing the verdicts "
                f"with {policy}: {', '.join(mismatched[:10])}"
            ]
            if mismatched
            else []
        ),
    }
    correct = _equal(predicted, human_overall) & scored
    return block, (correct, scored)


def evaluate_runs(
    runs: list[JudgeRun],
    rubric: Rubric,
    human: dict[str, dict[str, str]],
    policy: str | None = None,
    settings: BootstrapSettings = DEFAULT_BOOTSTRAP,
    item_languages: dict[str, str | None] | None = None,
) -> dict[str, Any]:
    """Metrics of every run against the human labels, as a JSON-ready dictionary.

    `policy` fuses every run's verdicts with one policy; None uses each run's own. `item_languages` (item id ->
    its instruction's language) adds each run's agreement per language where there is more than one.
    Items are the benchmark ids judged by at least one run, in manifest order.
    """
    if not runs:
        raise EvaluationError("no judge run to evaluate")
    policies = [run.fusion_policy(policy, rubric) for run in runs]
    judged = set().union(*(run.raws for run in runs))
    ids = [i for i in human if i in judged]
    if not ids:
        raise EvaluationError(
            "no id of the judge run(s) is in the benchmark's manifest; "
            "check --labels points at the benchmark that was judged"
        )
    pending = Estimates(ids)
    blocks, correctness = [], []
    for index, (run, name) in enumerate(zip(runs, policies)):
        block, correct = _run_metrics(pending, index, run, rubric, name, ids, human, item_languages)
        blocks.append(block)
        correctness.append(correct)
    comparisons = [
        compare(pending, ("diff", a, b), (run_a.name, run_b.name), correctness[a], correctness[b])
        for (a, run_a), (b, run_b) in itertools.combinations(enumerate(runs), 2)
    ]
    pending.fill(settings)
    human_positions = positions.human_split([human[i][OVERALL] for i in ids if OVERALL in human[i]])
    lopsided = positions.warning(human_positions, "human overall winners", "4-way")
    return {
        "format_version": FORMAT_VERSION,
        "items": {
            "evaluated": len(ids),
            "in_benchmark": len(human),
            "with_human_overall": sum(OVERALL in human[i] for i in ids),
        },
        "bootstrap": settings.describe(),
        "human_distribution": {key: _distribution(human[i].get(key) for i in ids) for key in (OVERALL, *rubric.names)},
        "positions": {"human": {OVERALL: human_positions}, "warnings": [lopsided] if lopsided else []},
        "runs": blocks,
        "comparisons": comparisons,
        "definitions": DEFINITIONS,
    }


# -- the report -------------------------------------------------------------------------


class TraceReport:
    """TRACE's whole report, for the rubrics whose metrics are `[trace]`."""

    def evaluate(
        self, runs: list[JudgeRun], rubric: Rubric, human: HumanLabels, policy: str | None, settings: BootstrapSettings
    ) -> dict[str, Any]:
        return {
            "fusion_override": policy,
            **evaluate_runs(runs, rubric, human.labels, policy, settings, human.languages),
        }

    def figures(self, metrics: dict[str, Any], out: Path) -> dict[str, Path]:
        from . import figures  # matplotlib only when a report is written

        return figures.write_figures(metrics, out)

    def blocks(self, metrics: dict[str, Any]) -> list[Block]:
        return build_blocks(metrics)

    def lines(self, files: EvaluationFiles) -> list[str]:
        """What `evaluate` prints: each run's headline, what was left out, and the run comparisons."""
        lines = []
        for run in files.metrics["runs"]:
            lines.append(
                f"{run['name']}: 4-way {percent(run['accuracy']['4way'])} on the decided items, "
                f"coverage {coverage(run['coverage']['overall'])} ({run['fusion']})"
            )
            lines.append(
                "  "
                + excluded(
                    run["items"],
                    files.metrics["items"]["in_benchmark"],
                    "scored_with_overall_label",
                    "without a human overall label",
                )
            )
            judge, people = run["positions"][OVERALL], files.metrics["positions"]["human"][OVERALL]
            lines.append(
                f"  overall winners in position 1 / 2: this run {judge['1']} / {judge['2']}, "
                f"humans {people['1']} / {people['2']}"
            )
        lines += [
            f"{c['a']} vs {c['b']}: McNemar p = {c['p_value']:.3g} (n={c['n']})" for c in files.metrics["comparisons"]
        ]
        return lines + [f"warning: {w}" for w in files.metrics["positions"]["warnings"]]


scores.register_report(
    "trace",
    "TRACE's report: 4-, 3- and 2-way agreement of the fused label, per-dimension "
    "agreement, Cohen's kappa, the fusion policies compared, McNemar between runs and "
    "the TRACE probes",
    TraceReport(),
)


def build_blocks(metrics: dict[str, Any]) -> list[Block]:
    """The sections of TRACE's report."""
    runs = metrics["runs"]
    boot = metrics["bootstrap"]
    bench, manifest = metrics["bench"], metrics["labels_manifest"]
    dimensions = list(runs[0]["per_dimension"])
    deciders = list(runs[0]["probes"]["content_counterfactual"]["deciders"])
    blocks: list[Block] = [
        Heading(1, "trace-eval evaluation"),
        Paragraph(
            f"Benchmark `{bench}` (labels from `{manifest}`): {metrics['items']['evaluated']} items judged by at least "
            "one run, "
            f"{metrics['items']['with_human_overall']} with a human overall label. Intervals are 95% {boot['method']}, "
            f"{boot['resamples']} resamples, seed {boot['seed']}."
        ),
        Table(
            ["run", "model", "fusion", "in run", "scored", *UNSCORED, "not in benchmark"],
            [
                [
                    r["name"],
                    str(r.get("model") or "—"),
                    r["fusion"],
                    str(r["items"]["in_run"]),
                    str(r["items"]["scored"]),
                    *[str(r["items"][kind]) for kind in UNSCORED],
                    str(r["items"]["not_in_benchmark"]),
                ]
                for r in runs
            ],
        ),
        Heading(2, "Overall agreement with humans"),
        Table(
            ["run", "coverage", "4-way (primary)", "3-way", "2-way", "Cohen's κ"],
            [
                [
                    r["name"],
                    coverage(r["coverage"]["overall"]),
                    percent(r["accuracy"]["4way"]),
                    percent(r["accuracy"]["3way"]),
                    percent(r["accuracy"]["2way"]),
                    number(r["kappa"]["overall"]),
                ]
                for r in runs
            ],
        ),
        Paragraph(
            "Coverage: decided items over items with the human label. Accuracy, κ and the probes are computed "
            "on the decided items only; an item left undetermined (a deciding cue missing) or without a "
            "verdict (invalid, failed, skipped) is counted in coverage, never scored. 3-way collapses "
            "both_good and both_bad into one tie; 2-way is over items whose human label is a winner."
        ),
        Image("accuracy.png", "Accuracy with 95% intervals"),
        Heading(2, "Per-dimension agreement"),
        Table(
            [
                "run",
                *[f"{d} coverage" for d in dimensions],
                *[f"{d} acc." for d in dimensions],
                *[f"{d} κ" for d in dimensions],
            ],
            [
                [
                    r["name"],
                    *[coverage(r["coverage"][d]) for d in dimensions],
                    *[percent(r["per_dimension"][d]) for d in dimensions],
                    *[number(r["kappa"][d]) for d in dimensions],
                ]
                for r in runs
            ],
        ),
    ]
    blocks += languages.blocks(runs)
    blocks += positions.blocks(metrics["positions"]["human"], runs, metrics["positions"]["warnings"])
    blocks += cue_blocks(runs)
    if metrics["comparisons"]:
        blocks += [
            Heading(2, "Run comparisons (McNemar, two-sided)"),
            Table(
                ["A", "B", "n", "only A right", "only B right", "test", "statistic", "p", "accuracy A − B"],
                [
                    [
                        c["a"],
                        c["b"],
                        str(c["n"]),
                        str(c["only_a_correct"]),
                        str(c["only_b_correct"]),
                        c["method"],
                        f"{c['statistic']:.3f}",
                        _p_value(c["p_value"]),
                        _signed(c["accuracy_difference"]),
                    ]
                    for c in metrics["comparisons"]
                ],
            ),
        ]
    policies = list(runs[0]["fusion_table"])
    blocks += [Heading(2, "Fusion policies on the same verdicts")]
    blocks += [Paragraph("; ".join(f"`{name}`: {get_policy(name).description}" for name in policies))]
    for r in runs:
        blocks += [
            Heading(3, r["name"]),
            Table(
                ["policy", "4-way", "3-way", "2-way", "κ"],
                [
                    [
                        name + (" (used)" if name == r["fusion"] else ""),
                        percent(row["4way"]),
                        percent(row["3way"]),
                        percent(row["2way"]),
                        number(row["kappa"]),
                    ]
                    for name, row in r["fusion_table"].items()
                ],
            ),
        ]
    blocks += [Image("fusion.png", "4-way accuracy by fusion policy"), Heading(2, "TRACE probes")]
    blocks += [
        Paragraph(
            "Content counterfactual: Content set to both_good and fused again. Flip rate: share of items whose label "
            "changes when one dimension is set to both_good. Winner-on-bad: of items humans rated both_bad, share "
            "where the run names a winner. Winner-slice: of items where the run names a winner, share humans agree "
            "with."
        ),
        Table(
            [
                "run",
                "counterfactual acc.",
                "label changed",
                *[_decided_by(d) for d in deciders],
                "winner-on-bad",
                "winner-slice acc.",
            ],
            [
                [
                    r["name"],
                    percent(r["probes"]["content_counterfactual"]["accuracy"]),
                    percent(r["probes"]["content_counterfactual"]["changed"]),
                    *[_decider(r["probes"]["content_counterfactual"]["deciders"][d]) for d in deciders],
                    percent(r["probes"]["winner_on_bad"]),
                    percent(r["probes"]["winner_slice_accuracy"]),
                ]
                for r in runs
            ],
        ),
        Table(
            ["run", *[f"flip {d}" for d in dimensions], *[f"acc. with {d} neutral" for d in dimensions]],
            [
                [
                    r["name"],
                    *[percent(r["probes"]["flip_rates"][d]["flipped"]) for d in dimensions],
                    *[percent(r["probes"]["flip_rates"][d]["accuracy_after"]) for d in dimensions],
                ]
                for r in runs
            ],
        ),
        Heading(2, "Confusion matrices"),
        Image("confusion.png", "Confusion matrices, human rows against predicted columns"),
        Heading(2, "Label distributions"),
        Image("distribution.png", "Label counts"),
    ]
    blocks += no_verdict_blocks(runs)
    blocks += _undetermined_blocks(runs)
    return blocks


def _undetermined_blocks(runs: list[dict[str, Any]]) -> list[Block]:
    blocks: list[Block] = [Heading(2, "Undetermined verdicts")]
    for r in runs:
        items = r.get("undetermined") or []
        blocks.append(
            Paragraph(
                f"**{r['name']}**: {len(items)} item(s) with a dimension left undetermined."
                if items
                else f"**{r['name']}**: none undetermined."
            )
        )
        if items:
            rows = [[u["id"], dim, why] for u in items[:FAILED_SHOWN] for dim, why in u["dimensions"].items()]
            blocks.append(Table(["id", "dimension", "missing evidence"], rows))
            if len(items) > FAILED_SHOWN:
                blocks.append(Paragraph(f"… and {len(items) - FAILED_SHOWN} more, listed in metrics.json."))
    return blocks


def _signed(slot: dict[str, Any]) -> str:
    if slot.get("value") is None:
        return "n/a"
    text = f"{slot['value'] * 100:+.1f} pt"
    if slot.get("ci95"):
        low, high = slot["ci95"]
        text += f" [{low * 100:+.1f}, {high * 100:+.1f}]"
    return text


def _decider(entry: dict[str, Any]) -> str:
    share = entry["share"]
    if share.get("value") is None:
        return "n/a"
    return f"{share['value']:.0%} (acc. {percent(entry['accuracy'], with_n=False)})"


def _decided_by(decider: str) -> str:
    """ "decided by VQ" (the initials of a dimension), or "tie"."""
    return decider if decider == probes.TIE else "decided by " + "".join(w[0] for w in decider.split("_")).upper()


def _p_value(p: float) -> str:
    return f"{p:.2e}" if p < 1e-3 else f"{p:.3f}"
