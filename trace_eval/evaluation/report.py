"""report.md and report.html from metrics.json: one list of blocks, two renderers.

The HTML is self-contained (pictures embedded as base64) so it can be mailed or
attached as it is.
"""
from __future__ import annotations

import base64
import html
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fusion import POLICIES

from .records import DIMENSIONS

FAILED_SHOWN = 50  # failed and undetermined items listed in the report; metrics.json lists all


@dataclass(frozen=True)
class EvaluationFiles:
    """What `evaluate` wrote, and the metrics it wrote."""

    metrics: dict[str, Any]
    metrics_path: Path
    markdown_path: Path
    html_path: Path
    pictures: dict[str, Path] = field(default_factory=dict)


@dataclass(frozen=True)
class Heading:
    level: int
    text: str


@dataclass(frozen=True)
class Paragraph:
    text: str


@dataclass(frozen=True)
class Table:
    header: list[str]
    rows: list[list[str]]


@dataclass(frozen=True)
class Image:
    file: str
    alt: str


Block = Heading | Paragraph | Table | Image


def percent(slot: dict[str, Any] | None, with_n: bool = True) -> str:
    """"71.2% [65.0–77.1] (83/117)", or "n/a" with the reason."""
    if not slot or slot.get("value") is None:
        reason = (slot or {}).get("reason")
        return f"n/a ({reason})" if reason and with_n else "n/a"
    text = f"{slot['value']:.1%}"
    if slot.get("ci95"):
        low, high = slot["ci95"]
        text += f" [{low * 100:.1f}–{high * 100:.1f}]"
    if with_n and "n" in slot:
        text += f" ({slot['correct']}/{slot['n']})" if "correct" in slot else f" (n={slot['n']})"
    return text


def number(slot: dict[str, Any] | None) -> str:
    """A kappa-like value with its interval."""
    if not slot or slot.get("value") is None:
        return "n/a"
    text = f"{slot['value']:.3f}"
    if slot.get("ci95"):
        text += f" [{slot['ci95'][0]:.3f}, {slot['ci95'][1]:.3f}]"
    return text


def coverage(slot: dict[str, Any] | None) -> str:
    """"87.5% (7/8)": decided items over items with the human label."""
    if not slot or slot.get("value") is None:
        return "n/a"
    return f"{slot['value']:.1%} ({slot['decided']}/{slot['of']})"


def _p_value(p: float) -> str:
    return f"{p:.2e}" if p < 1e-3 else f"{p:.3f}"


def build_blocks(metrics: dict[str, Any], bench: str, manifest: str) -> list[Block]:
    runs = metrics["runs"]
    boot = metrics["bootstrap"]
    blocks: list[Block] = [
        Heading(1, "trace-eval evaluation"),
        Paragraph(
            f"Benchmark `{bench}` (labels from `{manifest}`): {metrics['items']['evaluated']} items judged by at least one run, "
            f"{metrics['items']['with_human_overall']} with a human overall label. Intervals are 95% {boot['method']}, "
            f"{boot['resamples']} resamples, seed {boot['seed']}."
        ),
        Table(
            ["run", "model", "fusion", "in run", "scored", "undetermined", "failed", "not in benchmark"],
            [[r["name"], str(r.get("model") or "—"), r["fusion"], str(r["items"]["in_run"]), str(r["items"]["scored"]),
              str(r["items"].get("undetermined", 0)), str(r["items"]["failed"]), str(r["items"]["not_in_benchmark"])]
             for r in runs],
        ),
        Heading(2, "Overall agreement with humans"),
        Table(
            ["run", "coverage", "4-way (primary)", "3-way", "2-way", "Cohen's κ"],
            [[r["name"], coverage(r["coverage"]["overall"]), percent(r["accuracy"]["4way"]),
              percent(r["accuracy"]["3way"]), percent(r["accuracy"]["2way"]), number(r["kappa"]["overall"])]
             for r in runs],
        ),
        Paragraph("Coverage: decided items over items with the human label. Accuracy, κ and the probes are computed "
                  "on the decided items only; an item left undetermined (a deciding cue missing) or failed is "
                  "counted in coverage, never scored. 3-way collapses both_good and both_bad into one tie; 2-way is "
                  "over items whose human label is a winner."),
        Image("accuracy.png", "Accuracy with 95% intervals"),
        Heading(2, "Per-dimension agreement"),
        Table(
            ["run", *[f"{d} coverage" for d in DIMENSIONS], *[f"{d} acc." for d in DIMENSIONS],
             *[f"{d} κ" for d in DIMENSIONS]],
            [[r["name"], *[coverage(r["coverage"][d]) for d in DIMENSIONS],
              *[percent(r["per_dimension"][d]) for d in DIMENSIONS], *[number(r["kappa"][d]) for d in DIMENSIONS]]
             for r in runs],
        ),
    ]
    blocks += cue_blocks(runs)
    if metrics["comparisons"]:
        blocks += [
            Heading(2, "Run comparisons (McNemar, two-sided)"),
            Table(
                ["A", "B", "n", "only A right", "only B right", "test", "statistic", "p", "accuracy A − B"],
                [[c["a"], c["b"], str(c["n"]), str(c["only_a_correct"]), str(c["only_b_correct"]), c["method"],
                  f"{c['statistic']:.3f}", _p_value(c["p_value"]), _signed(c["accuracy_difference"])]
                 for c in metrics["comparisons"]],
            ),
        ]
    policies = list(runs[0]["fusion_table"])
    blocks += [Heading(2, "Fusion policies on the same verdicts")]
    blocks += [Paragraph("; ".join(f"`{name}`: {POLICIES[name].description}" for name in policies if name in POLICIES))]
    for r in runs:
        blocks += [
            Heading(3, r["name"]),
            Table(
                ["policy", "4-way", "3-way", "2-way", "κ"],
                [[name + (" (used)" if name == r["fusion"] else ""), percent(row["4way"]), percent(row["3way"]),
                  percent(row["2way"]), number(row["kappa"])] for name, row in r["fusion_table"].items()],
            ),
        ]
    blocks += [Image("fusion.png", "4-way accuracy by fusion policy"), Heading(2, "TRACE probes")]
    blocks += [
        Paragraph(
            "Content counterfactual: Content set to both_good and fused again. Flip rate: share of items whose label "
            "changes when one dimension is set to both_good. Winner-on-bad: of items humans rated both_bad, share where "
            "the run names a winner. Winner-slice: of items where the run names a winner, share humans agree with."
        ),
        Table(
            ["run", "counterfactual acc.", "label changed", "decided by P", "decided by VQ", "tie", "winner-on-bad", "winner-slice acc."],
            [[r["name"], percent(r["probes"]["content_counterfactual"]["accuracy"]),
              percent(r["probes"]["content_counterfactual"]["changed"]),
              *[_decider(r["probes"]["content_counterfactual"]["deciders"][d]) for d in ("paralinguistics", "voice_quality", "tie")],
              percent(r["probes"]["winner_on_bad"]), percent(r["probes"]["winner_slice_accuracy"])] for r in runs],
        ),
        Table(
            ["run", *[f"flip {d}" for d in DIMENSIONS], *[f"acc. with {d} neutral" for d in DIMENSIONS]],
            [[r["name"], *[percent(r["probes"]["flip_rates"][d]["flipped"]) for d in DIMENSIONS],
              *[percent(r["probes"]["flip_rates"][d]["accuracy_after"]) for d in DIMENSIONS]] for r in runs],
        ),
        Heading(2, "Confusion matrices"),
        Image("confusion.png", "Confusion matrices, human rows against predicted columns"),
        Heading(2, "Label distributions"),
        Image("distribution.png", "Label counts"),
        Heading(2, "Failed verdicts"),
    ]
    for r in runs:
        failed = r["failed"]
        blocks.append(Paragraph(f"**{r['name']}**: {len(failed)} failed ({_statuses(r)})." if failed else f"**{r['name']}**: none failed."))
        if failed:
            shown = failed[:FAILED_SHOWN]
            blocks.append(Table(["id", "status", "reason"], [[f["id"], f["status"], str(f["reason"] or "")] for f in shown]))
            if len(failed) > FAILED_SHOWN:
                blocks.append(Paragraph(f"… and {len(failed) - FAILED_SHOWN} more, listed in metrics.json."))
        for problem in r["problems"]:
            blocks.append(Paragraph(f"Note: {problem}"))
    blocks += _undetermined_blocks(runs)
    return blocks


def cue_blocks(runs: list[dict[str, Any]]) -> list[Block]:
    """Per run, which cue groups its response clips had (from the judge's summary.json)."""
    from trace_eval.judge.evidence import rows

    shown = [r for r in runs if r.get("cues")]
    if not shown:
        return []
    blocks: list[Block] = [Heading(2, "Cues measured"), Paragraph(
        "Per cue group, how many of the judged response clips had it measured, and why not (from the blueprints' "
        "provenance). A judge cannot use a missing cue: the cues backbone leaves the dimensions it decides "
        "undetermined.")]
    for r in shown:
        cues = r["cues"]
        table = Table(["cue group", "measured"], [list(row) for row in rows(cues)])
        blocks += [Paragraph(f"**{r['name']}**: {cues['clips']} response clips."), table]
        blocks += [Paragraph(f"Warning: {w}") for w in cues.get("warnings", [])]
    return blocks


def _undetermined_blocks(runs: list[dict[str, Any]]) -> list[Block]:
    blocks: list[Block] = [Heading(2, "Undetermined verdicts")]
    for r in runs:
        items = r.get("undetermined") or []
        blocks.append(Paragraph(f"**{r['name']}**: {len(items)} item(s) with a dimension left undetermined."
                                if items else f"**{r['name']}**: none undetermined."))
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


def _statuses(run: dict[str, Any]) -> str:
    return ", ".join(f"{status} {count}" for status, count in run["items"]["by_status"].items() if status != "ok")


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(blocks: list[Block]) -> str:
    lines: list[str] = []
    for block in blocks:
        if isinstance(block, Heading):
            lines += ["#" * block.level + " " + block.text, ""]
        elif isinstance(block, Paragraph):
            lines += [block.text, ""]
        elif isinstance(block, Table):
            lines.append("| " + " | ".join(map(_md_cell, block.header)) + " |")
            lines.append("|" + "---|" * len(block.header))
            lines += ["| " + " | ".join(map(_md_cell, row)) + " |" for row in block.rows]
            lines.append("")
        elif isinstance(block, Image):
            lines += [f"![{block.alt}]({block.file})", ""]
    return "\n".join(lines)


def _inline_html(text: str) -> str:
    """Escape, then render the two inline marks the blocks use: `code` and **bold**."""
    parts = html.escape(text).split("`")
    text = "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))
    parts = text.split("**")
    return "".join(f"<strong>{p}</strong>" if i % 2 else p for i, p in enumerate(parts))


_STYLE = """
body { font-family: system-ui, sans-serif; max-width: 72rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
table { border-collapse: collapse; margin: 0.5rem 0 1.2rem; font-size: 0.9rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.6rem; text-align: left; }
th { background: #f2f2f2; }
img { max-width: 100%; margin: 0.5rem 0 1.2rem; }
code { background: #f5f5f5; padding: 0 0.2rem; }
"""


def render_html(blocks: list[Block], images: dict[str, Path]) -> str:
    body: list[str] = []
    title = next((b.text for b in blocks if isinstance(b, Heading)), "evaluation")
    for block in blocks:
        if isinstance(block, Heading):
            body.append(f"<h{block.level}>{_inline_html(block.text)}</h{block.level}>")
        elif isinstance(block, Paragraph):
            body.append(f"<p>{_inline_html(block.text)}</p>")
        elif isinstance(block, Table):
            head = "".join(f"<th>{_inline_html(h)}</th>" for h in block.header)
            rows = "".join("<tr>" + "".join(f"<td>{_inline_html(c)}</td>" for c in row) + "</tr>" for row in block.rows)
            body.append(f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
        elif isinstance(block, Image):
            data = base64.b64encode(images[block.file].read_bytes()).decode("ascii")
            body.append(f'<img alt="{html.escape(block.alt)}" src="data:image/png;base64,{data}">')
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{_STYLE}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )


def render_oracle_markdown(result: dict[str, Any], bench: str) -> str:
    """The oracle table, as printed by `evaluate --oracle`."""
    items = result["items"]
    rows = [
        [name, str(p["correct"]), str(p["n"]), percent({"value": p.get("accuracy"), "ci95": p.get("ci95")}, with_n=False)]
        for name, p in result["policies"].items()
    ]
    return render_markdown([
        Paragraph(f"Oracle fusion on `{bench}`: human (C, VQ, P) fused and compared with the human overall label; "
                  f"{items['complete']} items with all four labels, {items['skipped']} skipped."),
        Table(["policy", "correct", "N", "accuracy [95% CI]"], rows),
    ])
