"""The one report writer: metrics.json, and report.md and report.html from one list of blocks (the
sections a rubric's metrics give), with the pictures they show.

The HTML is self-contained (pictures embedded as base64) so it can be mailed or
attached as it is.
"""

from __future__ import annotations

import base64
import html
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trace_eval.io import atomic_write_text, write_json

from .records import UNSCORED

FAILED_SHOWN = 50  # items without a verdict, and undetermined ones, listed in the report; metrics.json lists all


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
    """ "71.2% [65.0–77.1] (83/117)", or "n/a" with the reason."""
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
    """ "87.5% (7/8)": decided items over items with the human label."""
    if not slot or slot.get("value") is None:
        return "n/a"
    return f"{slot['value']:.1%} ({slot['decided']}/{slot['of']})"


def excluded(items: dict, in_benchmark: int, scored_key: str = "scored", unlabelled: str | None = None) -> str:
    """How many of a run's items were scored, why the others were not (undetermined, invalid, failed,
    skipped: see UNSCORED), and how many of the manifest's items the run has no result for."""
    in_run, scored = items["in_run"], items[scored_key]
    in_manifest = in_run - items["not_in_benchmark"]
    reasons: dict[str | None, int] = {
        unlabelled: items["scored"] - scored if unlabelled else 0,
        **{kind: items.get(kind, 0) for kind in UNSCORED},
        "not in the manifest": items["not_in_benchmark"],
    }
    why = ", ".join(f"{n} {reason}" for reason, n in reasons.items() if n)
    line = f"scored {scored} of {in_run} judged item(s)" + (f"; excluded {in_run - scored}: {why}" if why else "")
    if in_benchmark > in_manifest:
        line += f"; {in_benchmark - in_manifest} manifest item(s) have no result in this run"
    return line


def no_verdict_blocks(runs: list[dict[str, Any]]) -> list[Block]:
    """Per run, the items without a verdict: why (invalid, failed, skipped) and the reason recorded; then the
    lines of results.jsonl that could not be read."""
    blocks: list[Block] = [Heading(2, "Items without a verdict")]
    for r in runs:
        items = r["no_verdict"]
        kinds = ", ".join(f"{n} {kind}" for kind, n in Counter(f["status"] for f in items).items())
        blocks.append(
            Paragraph(
                f"**{r['name']}**: {len(items)} without a verdict ({kinds})."
                if items
                else f"**{r['name']}**: every item has a verdict."
            )
        )
        if items:
            blocks.append(
                Table(
                    ["id", "why", "reason"],
                    [[f["id"], str(f["status"]), str(f["reason"] or "")] for f in items[:FAILED_SHOWN]],
                )
            )
            if len(items) > FAILED_SHOWN:
                blocks.append(Paragraph(f"… and {len(items) - FAILED_SHOWN} more, listed in metrics.json."))
        blocks += [Paragraph(f"Note: {problem}") for problem in r["problems"]]
    return blocks


def cue_blocks(runs: list[dict[str, Any]]) -> list[Block]:
    """Per run, which cue groups its response clips had (from the judge's summary.json)."""
    from trace_eval.judge.evidence import rows

    shown = [r for r in runs if r.get("cues")]
    if not shown:
        return []
    blocks: list[Block] = [
        Heading(2, "Cues measured"),
        Paragraph(
            "Per cue group, how many of the judged response clips had it measured, and why not (from the blueprints' "
            "provenance). A judge cannot use a missing cue: the cues backbone leaves the dimensions it decides "
            "undetermined."
        ),
    ]
    for r in shown:
        cues = r["cues"]
        table = Table(["cue group", "measured"], [list(row) for row in rows(cues)])
        blocks += [Paragraph(f"**{r['name']}**: {cues['clips']} response clips."), table]
        blocks += [Paragraph(f"Warning: {w}") for w in cues.get("warnings", [])]
    return blocks


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


_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")


def _inline_html(text: str) -> str:
    """Escape, then render the inline marks the blocks use: `code`, [links](href) and **bold**."""
    parts = html.escape(text).split("`")
    text = "".join(f"<code>{p}</code>" if i % 2 else _LINK.sub(r'<a href="\2">\1</a>', p) for i, p in enumerate(parts))
    parts = text.split("**")
    return "".join(f"<strong>{p}</strong>" if i % 2 else p for i, p in enumerate(parts))


_STYLE = """
body { font-family: system-ui, "Noto Sans", "Noto Sans CJK SC", "Source Han Sans SC", "PingFang SC", "Microsoft YaHei",
  "WenQuanYi Micro Hei", "Noto Sans Arabic", sans-serif;
  max-width: 72rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
td, th { unicode-bidi: plaintext; }
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


def write_report(
    out: Path, metrics: dict[str, Any], blocks: list[Block], pictures: dict[str, Path] | None = None
) -> EvaluationFiles:
    """Write metrics.json, report.md and report.html (with `pictures`, already written into `out`)."""
    files = EvaluationFiles(metrics, out / "metrics.json", out / "report.md", out / "report.html", pictures or {})
    write_json(files.metrics_path, metrics)
    atomic_write_text(files.markdown_path, render_markdown(blocks))
    atomic_write_text(files.html_path, render_html(blocks, files.pictures))
    return files


def render_oracle_markdown(result: dict[str, Any], bench: str) -> str:
    """The oracle table, as printed by `evaluate --oracle`."""
    items = result["items"]
    rows = [
        [
            name,
            str(p["correct"]),
            str(p["n"]),
            percent({"value": p.get("accuracy"), "ci95": p.get("ci95")}, with_n=False),
        ]
        for name, p in result["policies"].items()
    ]
    return render_markdown(
        [
            Paragraph(
                f"Oracle fusion on `{bench}`: human (C, VQ, P) fused and compared with the human overall label; "
                f"{items['complete']} items with all four labels, {items['skipped']} skipped."
            ),
            Table(["policy", "correct", "N", "accuracy [95% CI]"], rows),
        ]
    )
