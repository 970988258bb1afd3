"""Pictures of an evaluation (PNG, matplotlib's Agg renderer; pyplot is not used,
so nothing depends on a display or on global figure state)."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache, wraps
from pathlib import Path
from typing import Any, TypeVar

import matplotlib
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import PercentFormatter

from fusion import LABELS

DPI = 110

# Names in any script (a system called 通义 or Ῥόδος): matplotlib takes each glyph from the first family on the
# list that has it. DejaVu Sans (matplotlib's own) covers Latin, Greek, Cyrillic and Arabic letters; the others
# are what systems have for Chinese, Japanese, Korean and Indic scripts. Only installed families are named, so a
# missing one costs no warning. Matplotlib lays text out left to right without shaping: Arabic and Hebrew names
# are drawn unjoined and reversed (the tables of the reports show them right).
_FALLBACK_FONTS = (
    "Noto Sans CJK SC",
    "Noto Sans CJK JP",
    "Source Han Sans SC",
    "WenQuanYi Micro Hei",
    "WenQuanYi Zen Hei",
    "Droid Sans Fallback",
    "Microsoft YaHei",
    "PingFang SC",
    "Hiragino Sans GB",
    "Malgun Gothic",
    "Noto Sans Devanagari",
    "Noto Sans Thai",
)
_Maker = TypeVar("_Maker", bound=Callable[..., Any])


@cache
def font_families(weight: str = "normal") -> list[str]:
    """DejaVu Sans, then the fallback families installed here with a face of `weight` ("normal", "bold").

    A family on the list without that face (WenQuanYi Micro Hei has no bold) makes matplotlib print "findfont:
    Failed to find font weight bold" and draw another weight; so text of another weight names its own list."""
    from matplotlib import font_manager

    def number(value: int | str) -> int:
        return value if isinstance(value, int) else font_manager.weight_dict.get(value, 400)

    wanted = number(weight)
    installed = {font.name for font in font_manager.fontManager.ttflist if number(font.weight) == wanted}
    return ["DejaVu Sans", *[family for family in _FALLBACK_FONTS if family in installed]]


def _any_script(make: _Maker) -> _Maker:
    """Draw with the fonts of every script installed."""

    @wraps(make)
    def drawn(*args: Any, **kwargs: Any) -> Any:
        with matplotlib.rc_context({"font.family": font_families()}):
            return make(*args, **kwargs)

    return drawn  # type: ignore[return-value]


def _dimensions(metrics: dict[str, Any]) -> list[str]:
    """The rubric's dimensions, in its order."""
    return list(metrics["runs"][0]["per_dimension"])


def _title(key: str) -> str:
    """ "voice_quality" -> "Voice quality"."""
    return key.replace("_", " ").capitalize()


def _short(name: str, width: int = 28) -> str:
    return name if len(name) <= width else "…" + name[-(width - 1) :]


def _save(figure: Figure, path: Path) -> Path:
    figure.savefig(path, dpi=DPI, bbox_inches="tight", facecolor="white")
    return path


def confusion_figure(metrics: dict[str, Any], path: Path) -> Path:
    """One heat map per run: human overall label (rows) against the predicted one (columns)."""
    runs = metrics["runs"]
    columns = min(len(runs), 3)
    rows = -(-len(runs) // columns)
    figure = Figure(layout="constrained", figsize=(4.4 * columns, 4.0 * rows))
    for index, run in enumerate(runs):
        axes = figure.add_subplot(rows, columns, index + 1)
        counts = np.array(run["confusion"]["matrix"], dtype=float)
        totals = counts.sum(axis=1, keepdims=True)
        shares = np.divide(counts, totals, out=np.zeros_like(counts), where=totals > 0)
        axes.imshow(shares, cmap="Blues", vmin=0.0, vmax=1.0)
        for (r, c), count in np.ndenumerate(counts):
            axes.text(
                c,
                r,
                f"{int(count)}",
                ha="center",
                va="center",
                fontsize=10,
                color="white" if shares[r, c] > 0.55 else "black",
            )
        ticks = range(len(LABELS))
        axes.set_xticks(ticks, LABELS, rotation=30, ha="right")
        axes.set_yticks(ticks, LABELS)
        axes.set_xlabel("predicted overall")
        if index % columns == 0:
            axes.set_ylabel("human overall")
        accuracy = run["accuracy"]["4way"]["value"]
        subtitle = f"4-way {accuracy:.1%}" if accuracy is not None else "no scored item"
        axes.set_title(f"{_short(run['name'])}\n{run['fusion']} · {subtitle}", fontsize=10)
    figure.suptitle("Confusion matrices (colour: share of the human row)", fontsize=11)
    return _save(figure, path)


def distribution_figure(metrics: dict[str, Any], path: Path) -> Path:
    """Label counts, humans beside every run, for the overall label and each dimension."""
    runs = metrics["runs"]
    sources = [("human", metrics["human_distribution"])] + [(_short(r["name"], 20), r["distribution"]) for r in runs]
    figure = Figure(layout="constrained", figsize=(11, 7.5))
    width = 0.8 / len(sources)
    positions = np.arange(len(LABELS))
    for index, key in enumerate(("overall", *_dimensions(metrics))):
        axes = figure.add_subplot(2, 2, index + 1)
        for s, (name, distribution) in enumerate(sources):
            counts = [distribution[key][label] for label in LABELS]
            axes.bar(
                positions + (s - (len(sources) - 1) / 2) * width,
                counts,
                width,
                label=name,
                color="0.35" if s == 0 else f"C{s - 1}",
            )
        axes.set_xticks(positions, LABELS)
        axes.set_title(_title(key), fontsize=10)
        axes.set_ylabel("items")
        if index == 0:
            axes.legend(fontsize=8)
    figure.suptitle("Label counts: humans (evaluated items) and each run (scored items)", fontsize=11)
    return _save(figure, path)


def _interval_bars(axes, groups: list[str], series: list[tuple[str, list[dict]]]) -> None:
    """Horizontal bars with 95% interval whiskers; `series` holds one slot per group."""
    height = 0.8 / max(len(series), 1)
    positions = np.arange(len(groups))
    for s, (name, slots) in enumerate(series):
        values = [slot["value"] if slot.get("value") is not None else np.nan for slot in slots]
        low = [v - slot["ci95"][0] if slot.get("ci95") else 0.0 for v, slot in zip(values, slots)]
        high = [slot["ci95"][1] - v if slot.get("ci95") else 0.0 for v, slot in zip(values, slots)]
        y = positions + (s - (len(series) - 1) / 2) * height
        axes.barh(y, values, height, xerr=[low, high], capsize=3, label=_short(name, 24), color=f"C{s}")
        for yy, v, up in zip(y, values, high):
            if np.isnan(v):
                continue
            if v >= 0.15:  # inside the bar, clear of the interval whisker at its end
                axes.text(
                    0.01,
                    yy,
                    f"{v:.1%}",
                    va="center",
                    fontsize=8,
                    color="white",
                    fontweight="bold",
                    fontfamily=font_families("bold"),
                )
            else:  # too short to hold the text: put it past the whisker
                axes.text(v + up + 0.01, yy, f"{v:.1%}", va="center", fontsize=8)
    axes.set_yticks(positions, groups)
    axes.invert_yaxis()
    axes.set_xlim(0.0, 1.0)
    axes.xaxis.set_major_formatter(PercentFormatter(1.0))
    axes.grid(axis="x", alpha=0.3)


def accuracy_figure(metrics: dict[str, Any], path: Path) -> Path:
    """Overall (4-, 3-, 2-way) and per-dimension accuracy of every run with 95% intervals."""
    runs = metrics["runs"]
    dimensions = _dimensions(metrics)
    # No per-dimension human label (only overall ones): no empty panel, one that says so in the report.
    labelled = any(r["per_dimension"][d].get("value") is not None for r in runs for d in dimensions)
    width, panels = (11, 2) if labelled else (5.5, 1)
    figure = Figure(layout="constrained", figsize=(width, 1.2 + 1.1 * max(3, len(runs) * 1.2)))
    left = figure.add_subplot(1, panels, 1)
    _interval_bars(
        left,
        ["4-way", "3-way", "2-way"],
        [(r["name"], [r["accuracy"][k] for k in ("4way", "3way", "2way")]) for r in runs],
    )
    left.set_title("Overall accuracy (95% CI)", fontsize=10)
    left.legend(fontsize=8, loc="lower right")
    if not labelled:
        return _save(figure, path)
    right = figure.add_subplot(1, 2, 2)
    _interval_bars(
        right, [_title(d) for d in dimensions], [(r["name"], [r["per_dimension"][d] for d in dimensions]) for r in runs]
    )
    right.set_title("Per-dimension accuracy (95% CI)", fontsize=10)
    return _save(figure, path)


def fusion_figure(metrics: dict[str, Any], path: Path) -> Path:
    """4-way accuracy of the same verdicts under every fusion policy."""
    runs = metrics["runs"]
    policies = list(runs[0]["fusion_table"])
    figure = Figure(layout="constrained", figsize=(8, 1.2 + 0.55 * len(policies) * max(1, len(runs))))
    axes = figure.add_subplot(1, 1, 1)
    _interval_bars(axes, policies, [(r["name"], [r["fusion_table"][p]["4way"] for p in policies]) for r in runs])
    axes.set_title("4-way accuracy by fusion policy (same verdicts, 95% CI)", fontsize=10)
    axes.legend(fontsize=8, loc="lower right")
    return _save(figure, path)


@_any_script
def write_figures(metrics: dict[str, Any], out: Path) -> dict[str, Path]:
    """Every picture of the report, by file name."""
    makers = {
        "accuracy.png": accuracy_figure,
        "fusion.png": fusion_figure,
        "confusion.png": confusion_figure,
        "distribution.png": distribution_figure,
    }
    return {name: make(metrics, out / name) for name, make in makers.items()}


# -- leaderboards (trace_eval/evaluation/leaderboard.py) -------------------------------------


def _source_name(source: dict[str, Any]) -> str:
    return "human" if source["kind"] == "human" else _short(source["name"], 24)


def system_scores_figure(board: dict[str, Any], path: Path) -> Path:
    """Per dimension ranked on: every system's score with its 95% interval, each source side by side.

    At most two panels a row, each wide enough to read at the report's width; an interval's open end
    (the data bound the score on one side only) is an arrow to the panel's edge.
    """
    keys, sources, systems = board["by"], board["sources"], board["systems"]
    columns = min(2, len(keys))
    grid_rows = -(-len(keys) // columns)
    panel_height = 1.4 + 0.45 * len(systems) * max(1.0, len(sources) / 2)
    figure = Figure(layout="constrained", figsize=(6.0 * columns, 0.6 + panel_height * grid_rows))
    offset = 0.7 / len(sources)
    for index, key in enumerate(keys):
        axes = figure.add_subplot(grid_rows, columns, index + 1)
        # The first source's ranking orders the rows (the human labels when present).
        order = [r["system"] for r in sources[0]["tables"][key]["systems"]][::-1]
        finite = [
            v
            for source in sources
            for r in source["tables"][key]["systems"]
            for v in [r["score"]["value"], *(r["score"].get("ci95") or [])]
            if v is not None
        ] or [1000.0]
        span = max(max(finite) - min(finite), 100.0)
        left_edge, right_edge = min(finite) - 0.15 * span, max(finite) + 0.15 * span
        for s, source in enumerate(sources):
            rows = {r["system"]: r["score"] for r in source["tables"][key]["systems"]}
            colour = "0.25" if source["kind"] == "human" else f"C{s}"
            y = np.arange(len(order)) + (s - (len(sources) - 1) / 2) * offset
            values = np.array([rows[name]["value"] if rows[name]["value"] is not None else np.nan for name in order])
            ends = [rows[name].get("ci95") or [v, v] for v, name in zip(values, order)]
            low = [v - (e[0] if e[0] is not None else v) for v, e in zip(values, ends)]
            high = [(e[1] if e[1] is not None else v) - v for v, e in zip(values, ends)]
            axes.errorbar(
                values,
                y,
                xerr=[low, high],
                fmt="o",
                markersize=5,
                capsize=3,
                color=colour,
                label=_source_name(source),
            )
            for v, yy, e in zip(values, y, ends):
                for end, edge in ((e[0], left_edge), (e[1], right_edge)):
                    if end is None and not np.isnan(v):
                        axes.annotate(
                            "", (edge, yy), (v, yy), arrowprops={"arrowstyle": "->", "color": colour, "lw": 1.0}
                        )
        axes.set_xlim(left_edge, right_edge)
        axes.axvline(1000.0, color="0.7", linewidth=0.8, zorder=0)
        axes.set_yticks(range(len(order)), [_short(name, 26) for name in order], fontsize=10)
        axes.tick_params(axis="x", labelsize=9)
        axes.set_xlabel("Bradley-Terry score (95% CI; arrow: open end)", fontsize=10)
        axes.set_title(_title(key), fontsize=12)
        axes.grid(axis="x", alpha=0.3)
        if index == 0:
            axes.legend(fontsize=9, loc="lower right")
    figure.suptitle("System scores: 400·log10(strength) + 1000", fontsize=13)
    return _save(figure, path)


def win_matrix_figure(board: dict[str, Any], path: Path) -> Path:
    """One heat map per source, on the first dimension ranked: the row system's win rate against the column
    one (the other dimensions' matrices are in leaderboard.md, leaderboard.json and win_matrix.csv)."""
    key, sources = board["by"][0], board["sources"]
    size = len(board["systems"])
    side = max(2.6, 0.3 * size + 1.5)
    figure = Figure(layout="constrained", figsize=(side * len(sources) + 1.0, side))
    colours = None
    for s, source in enumerate(sources):
        axes = figure.add_subplot(1, len(sources), s + 1)
        m = source["tables"][key]["matrix"]
        order = [m["systems"].index(r["system"]) for r in source["tables"][key]["systems"]]
        rates = np.array(
            [[np.nan if m["win_rate"][i][j] is None else m["win_rate"][i][j] for j in order] for i in order],
            dtype=float,
        )
        colours = axes.imshow(np.ma.masked_invalid(rates), cmap="RdBu", vmin=0.0, vmax=1.0)
        axes.set_facecolor("0.92")
        if size <= 15:  # the numbers stay legible
            for (r, c), value in np.ndenumerate(rates):
                if not np.isnan(value):
                    axes.text(
                        c,
                        r,
                        f"{value:.0%}",
                        ha="center",
                        va="center",
                        fontsize=6.5,
                        color="white" if abs(value - 0.5) > 0.3 else "black",
                    )
        names = [_short(m["systems"][i], 18) for i in order]
        axes.set_xticks(range(size), names, rotation=60, ha="right", fontsize=7)
        axes.set_yticks(range(size), names, fontsize=7)
        axes.set_title(_source_name(source), fontsize=9)
    if colours is not None:
        figure.colorbar(colours, ax=figure.axes, shrink=0.8, label="win rate of the row system (ties half)")
    figure.suptitle(f"Win matrix, {_title(key).lower()} (grey: the systems never met)", fontsize=11)
    return _save(figure, path)


@_any_script
def write_leaderboard_figures(board: dict[str, Any], out: Path) -> dict[str, Path]:
    """The pictures of a leaderboard, by file name."""
    return {
        "system_scores.png": system_scores_figure(board, out / "system_scores.png"),
        "win_matrix.png": win_matrix_figure(board, out / "win_matrix.png"),
    }
