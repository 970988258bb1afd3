"""Leaderboards: which system is better, by how much, and how sure one can be.

The systems are those the items name: `model_a` made response 1, `model_b` response 2.
Per label source (the benchmark's human labels, each judge run) and per dimension
(the fused overall label and each typed-tie dimension): wins, both_good and both_bad
ties and losses, the win rate, the Bradley-Terry score (bradley_terry.py) with its
rank, a pairwise win matrix, each system's acceptability on every dimension, and the
rank agreement of every run with the human labels (Kendall's tau, Spearman's rho).

Every interval comes from one bootstrap over the pairs (metrics.bootstrap_totals):
the same pairs are drawn for every source and dimension, so the judge's and the
human scores of one resample are computed on the same pairs. The fits of all
resamples are solved together, with no Python loop over resamples.

`leaderboard(...)` returns exactly what leaderboard.json holds; `write_leaderboard`
writes it with leaderboard.md, the CSV files and the pictures.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse

import fusion
from trace_eval.io import atomic_write_text, write_json
from trace_eval.rubrics import DEFAULT_RUBRIC, Rubric, load_rubric, rubric_of_run

from . import bradley_terry, metrics
from .bootstrap import DEFAULT_BOOTSTRAP, BootstrapSettings
from .records import OVERALL, EvaluationError, HumanLabels, JudgeRun, bench_of, load_human_labels, load_runs
from .report import Block, Heading, Image, Paragraph, Table, render_markdown

__all__ = [
    "VERSION",
    "LeaderboardFiles",
    "build_leaderboard",
    "dimensions_of",
    "leaderboard",
    "leaderboard_blocks",
    "leaderboard_lines",
    "systems_section",
    "tied_at_top",
    "trusted_sentence",
    "top_text",
    "write_leaderboard",
]

VERSION = 1
HUMAN = "human"
# Why a pair is not scored for a source and dimension: counted per system, never scored as a tie.
LEFT_OUT = ("undetermined", "not_trusted", "failed", "skipped", "not_judged", "no_label")
_CODES = {label: code for code, label in enumerate(fusion.LABELS)}  # "1" 0, "2" 1, both_good 2, both_bad 3
_NONE = -1
# (response 1 acceptable, response 2 acceptable) by label code; the last row, for code -1, accepts nothing.
_ACCEPTED = np.array([fusion.acceptable(label) for label in fusion.LABELS] + [(0, 0)], dtype=float)
LISTED = 50  # item ids listed in leaderboard.json for items left out of every table

CONVENTION = {
    "outcome": "model_a made response 1 and model_b response 2: label 1 is a win of model_a, 2 a win of model_b, "
    "both_good and both_bad ties (counted apart)",
    "bradley_terry": "P(i beats j) = s_i / (s_i + s_j); a tie counts half a win to each side; the strengths maximise "
    "the likelihood of the scored pairs, with their geometric mean 1 over the systems of the table",
    "score": "400 * log10(s) + 1000; the mean score of a table is 1000, and a lead of 400 points means 10-to-1 odds",
    "prior": "where the systems split into two groups one of which scored nothing (no win, no tie) against "
    "the other (a system won or lost every pair), the maximum-likelihood scores are infinite; there, and in "
    "every bootstrap resample where this happens, the scores are fitted with a weak prior: one tie of every "
    "system against a virtual system of score 1000. The prior alone decides how far such a system sits "
    "from the others; the interval's end on that side is open (null) when the data bound it in fewer "
    "than (1 + confidence) / 2 of the resamples",
    "win_rate": "(wins + ties / 2) / pairs",
    "acceptability": "share of a system's scored answers the label accepts (its own number or both_good; the "
    "RatingMin reading of the labels, so the losing answer of a named winner counts as not "
    "acceptable)",
    "rank": "1 + the number of systems with a higher score; its interval is the percentile interval of the ranks "
    "over the resamples, rounded outwards to whole ranks",
    "interval": "95% percentile interval of a bootstrap over the pairs (pairs resampled jointly for every "
    "source and dimension)",
    "rank_agreement": "Kendall's tau-b and Spearman's rho between a run's scores and the human scores, over the "
    "systems scored by both, with intervals from the same resamples",
}


# -- what is ranked -----------------------------------------------------------------------


@dataclass(frozen=True)
class Matchups:
    """The items whose two answers come from two named systems, and those left out."""

    ids: list[str]  # in manifest order
    systems: list[str]  # sorted by name
    a: np.ndarray  # index into `systems` of each item's response-1 system
    b: np.ndarray  # ... and of its response-2 system
    unnamed: list[str]  # items that do not name both systems
    same_system: list[str]  # items whose two answers come from one system


def matchups(pair_systems: dict[str, tuple[Any, Any]]) -> Matchups:
    """Systems from each item's (model_a, model_b); an item without both names is counted, never guessed."""
    named = {i: (a, b) for i, (a, b) in pair_systems.items() if _name(a) and _name(b)}
    unnamed = [i for i in pair_systems if i not in named]
    same = [i for i, (a, b) in named.items() if str(a) == str(b)]
    ids = [i for i, (a, b) in named.items() if str(a) != str(b)]
    systems = sorted({str(s) for i in ids for s in named[i]})
    index = {s: n for n, s in enumerate(systems)}
    a = np.array([index[str(named[i][0])] for i in ids], dtype=int)
    b = np.array([index[str(named[i][1])] for i in ids], dtype=int)
    return Matchups(ids, systems, a, b, unnamed, same)


def _name(value: Any) -> bool:
    return isinstance(value, (str, int)) and not isinstance(value, bool) and str(value).strip() != ""


@dataclass
class Source:
    """One label source read over the matchups: per key (dimension or overall), each item's label or, where
    it has none, why."""

    name: str
    kind: str  # "human" | "run"
    labels: dict[str, list[str | None]]
    why: dict[str, list[str | None]]
    about: dict[str, Any]


def human_source(human: HumanLabels, games: Matchups, keys: list[str]) -> Source:
    labels = {k: [human.labels.get(i, {}).get(k) for i in games.ids] for k in keys}
    why = {k: [None if label else "no_label" for label in labels[k]] for k in keys}
    return Source(
        HUMAN,
        HUMAN,
        labels,
        why,
        {"name": HUMAN, "kind": HUMAN, "manifest": str(human.manifest), "problems": list(human.problems)},
    )


def run_source(
    run: JudgeRun, rubric: Rubric, policy: str | None, games: Matchups, keys: list[str], bench_ids: set[str]
) -> Source:
    """A run's verdicts (after swap-back, as the judge records them) and its overall label fused under `policy`."""
    records = run.records(rubric)
    labels: dict[str, list[str | None]] = {k: [] for k in keys}
    why: dict[str, list[str | None]] = {k: [] for k in keys}
    for item in games.ids:
        record = records.get(item)
        # --trusted-only: the labels below their judge's threshold, made undetermined by trust.keep_trusted
        # (a list of keys; True in pages written before it named them)
        marked = (run.raws.get(item) or {}).get("not_trusted")
        for key in keys:
            untrusted = marked is True or key in (marked or ())
            label, reason = None, None
            if record is None:
                reason = "not_judged"
            elif record.verdicts is None:
                reason = "skipped" if record.status == "skipped" else "failed"
            elif key == OVERALL:
                # a key only of rubrics that fuse, and then every run has its policy (fusion_policy)
                assert rubric.fusion is not None and policy is not None
                label = rubric.fusion.fuse(policy, record.verdicts) if record.decided else None
                reason = None if label else "not_trusted" if untrusted else "undetermined"
            else:
                label = record.verdicts.get(key)
                reason = None if label else "not_trusted" if untrusted else "undetermined"
            labels[key].append(label)
            why[key].append(reason)
    statuses: dict[str, int] = {}
    for record in records.values():
        statuses[record.status] = statuses.get(record.status, 0) + 1
    about = {
        **run.describe(),
        "kind": "run",
        "fusion": policy,
        "items": {
            "in_run": len(records),
            "by_status": dict(sorted(statuses.items())),
            "not_in_benchmark": sum(i not in bench_ids for i in records),
        },
        "problems": list(run.problems),
    }
    return Source(run.name, "run", labels, why, about)


def dimensions_of(rubric: Rubric) -> list[str]:
    """What can be ranked on: the fused overall label (when the rubric fuses) and every typed-tie dimension."""
    typed = [d.name for d in rubric.dimensions if d.labels.kind == "typed-tie"]
    return ([OVERALL] if rubric.fusion and typed else []) + typed


def _keys(by: str | Sequence[str], rubric: Rubric) -> list[str]:
    available = dimensions_of(rubric)
    if not available:
        raise EvaluationError(
            f"the {rubric.name} rubric has no typed-tie dimension: leaderboards rank pairs labelled "
            f"1, 2, both_good or both_bad"
        )
    wanted = [by] if isinstance(by, str) else list(by)
    if wanted == [OVERALL] and OVERALL not in available and len(available) == 1:
        return available  # the default, for a rubric of one dimension that does not fuse (interaction)
    if "all" in wanted:
        return available
    unknown = [k for k in wanted if k not in available]
    if unknown or not wanted:
        raise EvaluationError(f"--by {', '.join(unknown) or '(none)'}: expected all or one of: {', '.join(available)}")
    return [k for k in available if k in wanted]


# -- the resampled counts -----------------------------------------------------------------


class _Columns:
    """Per-item values placed in named columns of one sparse (items x columns) matrix."""

    def __init__(self, n_items: int):
        self.n_items = n_items
        self.rows: list[np.ndarray] = []
        self.cols: list[np.ndarray] = []
        self.data: list[np.ndarray] = []
        self.width = 0

    def add(self, width: int, *entries: tuple[np.ndarray, np.ndarray]) -> slice:
        """`width` new columns; each entry (column_of_item, value_of_item) has item n add value_of_item[n] to
        column column_of_item[n] of them (nothing where that is -1)."""
        for column_of_item, value_of_item in entries:
            kept = column_of_item >= 0
            self.rows.append(np.flatnonzero(kept))
            self.cols.append(column_of_item[kept] + self.width)
            self.data.append(np.asarray(value_of_item, dtype=float)[kept])
        start, self.width = self.width, self.width + width
        return slice(start, self.width)

    def matrix(self) -> sparse.csr_array:
        return sparse.csr_array(
            (np.concatenate(self.data), (np.concatenate(self.rows), np.concatenate(self.cols))),
            shape=(self.n_items, self.width),
        )


@dataclass
class _Slots:
    """Where one source's counts on one key sit among the columns."""

    codes: np.ndarray  # label code per item, -1 where left out
    acceptable: slice  # per system: scored answers the label accepts
    scored: slice  # per system: scored answers
    games: slice | None = None  # per cell (pair of systems): scored pairs; tables only
    points: slice | None = None  # per cell: what the lower-numbered system scored


def _register(
    columns: _Columns, games: Matchups, cells: np.ndarray, n_cells: int, source: Source, key: str, table: bool
) -> _Slots:
    """The columns of one source on one key: per system its scored and accepted answers, and for a table,
    per pair of systems the scored pairs and the points of the lower-numbered system."""
    codes = np.array(
        [_NONE if label is None else _CODES.get(label, _NONE) for label in source.labels[key]], dtype=np.int64
    )
    scored = codes >= 0
    accept = _ACCEPTED[codes]
    ones = np.ones(len(codes))
    a, b = np.where(scored, games.a, -1), np.where(scored, games.b, -1)
    n = len(games.systems)
    slots = _Slots(
        codes,
        acceptable=columns.add(n, (a, accept[:, 0]), (b, accept[:, 1])),
        scored=columns.add(n, (a, ones), (b, ones)),
    )
    if table:
        won = np.select([codes == 0, codes == 1], [1.0, 0.0], 0.5)  # what response 1 scored
        cell = np.where(scored, cells, -1)
        slots.games = columns.add(n_cells, (cell, ones))
        slots.points = columns.add(n_cells, (cell, np.where(games.a < games.b, won, 1.0 - won)))
    return slots


# -- statistics over the resamples ----------------------------------------------------------

NO_SCORES_DRAWN = "where a system won or lost every pair drawn, the scores are infinite: too few pairs"
NEITHER_END = (
    "too few pairs: the data leave this score unbounded above in over {share} of the resamples and unbounded "
    "below in over {share} (systems won or lost every pair drawn)"
)
OPEN_END = (
    "the data bound the score on one side only (it won or lost every pair, in the data or in over {share} "
    "of the resamples): that end of the interval is open"
)


def _interval(samples: np.ndarray, settings: BootstrapSettings, why: str = "") -> tuple[list[float] | None, str | None]:
    """Percentile interval of one statistic's resamples (NaN: undefined in that resample); None, with the
    reason, when more than (1 - confidence) of them are undefined."""
    samples = np.asarray(samples, dtype=float)
    undefined = int(np.isnan(samples).sum())
    if undefined > (1.0 - settings.confidence) * samples.size:
        return None, f"undefined in {undefined} of {samples.size} resamples" + (f" ({why})" if why else "")
    interval = metrics.percentile_interval(samples, settings.confidence)
    return (list(interval) if interval else None), None


def _slot(
    point: float, samples: np.ndarray, settings: BootstrapSettings, empty: str, why: str = "", **counts: Any
) -> dict[str, Any]:
    """{"value", "ci95"} of a statistic from its value on the data and its resamples; a null with the reason."""
    if np.isnan(point):
        return {"value": None, "ci95": None, "reason": empty, **counts}
    interval, reason = _interval(samples, settings, why)
    slot = {"value": float(point), "ci95": interval, **counts}
    if reason:
        slot["reason"] = reason
    return slot


def _count(points: float, n: float, settings: BootstrapSettings, empty: str, **counts: Any) -> dict[str, Any]:
    """{"value", "ci95"} of points out of n (a tie half a point) with its Wilson interval; a null with the reason."""
    if not n:
        return {"value": None, "ci95": None, "reason": empty, **counts}
    interval = metrics.wilson_interval(float(points), float(n), settings.confidence)
    return {"value": float(points / n), "ci95": list(interval) if interval else None, **counts}


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return numerator / denominator


def _no_fit_reason(points: np.ndarray, names: list[str]) -> str:
    """Why the maximum-likelihood scores do not exist, in words."""
    lost_all = [n for n, row in zip(names, points) if row.sum() == 0]
    won_all = [n for n, column in zip(names, points.T) if column.sum() == 0]
    if won_all:
        return f"{', '.join(won_all)} won every scored pair: the maximum-likelihood scores would be infinite"
    if lost_all:
        return f"{', '.join(lost_all)} lost every scored pair: the maximum-likelihood scores would be infinite"
    return (
        "the systems split into groups that never scored against each other: "
        "the maximum-likelihood scores would be infinite"
    )


PRIOR_NOTE = (
    "scores fitted with a weak prior (one tie of every system against a virtual system of score 1000), "
    "which alone decides how far apart those systems sit"
)


def _open_ends(interval: list[float] | None, open_above: bool, open_below: bool) -> list[float | None] | None:
    """The interval with an end the data do not bound made open (None)."""
    if interval is None:
        return None
    return [None if open_below else interval[0], None if open_above else interval[1]]


def _table(
    games: Matchups,
    cells: tuple[np.ndarray, np.ndarray],
    totals: np.ndarray,
    slots: _Slots,
    source: Source,
    key: str,
    baseline: int | None,
    settings: BootstrapSettings,
) -> tuple[dict, np.ndarray]:
    """One source's leaderboard on one key, and the score of every system per row of `totals` (row 0: the data)."""
    n = len(games.systems)
    low, high = cells
    rows = totals.shape[0]
    played = np.zeros((rows, n, n))
    scored = np.zeros((rows, n, n))
    played[:, low, high] = played[:, high, low] = totals[:, slots.games]
    scored[:, low, high] = totals[:, slots.points]
    scored[:, high, low] = totals[:, slots.games] - totals[:, slots.points]

    present = np.flatnonzero(played[0].sum(axis=1) > 0)
    score = np.full((rows, n), np.nan)
    above = np.zeros((rows, n), dtype=bool)  # the data do not bound the score from above (below) in that row
    below = np.zeros((rows, n), dtype=bool)
    maximum_likelihood, prior = False, None
    if len(present) >= 2:
        sub = np.ix_(np.arange(rows), present, present)
        theta, defined = bradley_terry.fit_or_prior(scored[sub], played[sub])
        score[:, present] = bradley_terry.scores(theta)
        above[:, present], below[:, present] = bradley_terry.unbounded(scored[sub], played[sub])
        maximum_likelihood = bool(defined[0])
        if not maximum_likelihood:
            prior = (
                _no_fit_reason(scored[0][np.ix_(present, present)], [games.systems[i] for i in present])
                + f"; {PRIOR_NOTE}"
            )
    fitted = len(present) >= 2 and not np.isnan(score[0, present]).any()
    fit_reason = None
    if len(present) < 2:
        fit_reason = "fewer than two systems have a scored pair"
    elif not fitted:
        fit_reason = "the Bradley-Terry fit did not converge"
    rank = bradley_terry.ranks(score)
    undefined = int(np.isnan(score[1:, present]).any(axis=1).sum()) if fitted else None
    with_prior = int((above[1:, present] | below[1:, present]).any(axis=1).sum()) if fitted else None
    # An end is open where the data do not bound it, or more than half of (1 - confidence) of the resamples
    # do not: the percentile there would be the prior's number.
    tail = (1.0 - settings.confidence) / 2 * (rows - 1)
    open_above = above[0] | (above[1:].sum(axis=0) > tail)
    open_below = below[0] | (below[1:].sum(axis=0) > tail)

    counts = _outcome_counts(games, slots.codes)
    left_out = _left_out(games, source.why[key])
    rows_out = []
    for i, system in enumerate(games.systems):
        pairs = int(played[0, i].sum())
        row: dict[str, Any] = {"system": system, "pairs": pairs, **counts[i]}
        if fitted and i in present:
            row["score"] = _slot(score[0, i], score[1:, i], settings, "", NO_SCORES_DRAWN)
            share = f"{(1.0 - settings.confidence) / 2:.1%}"
            if open_above[i] and open_below[i]:
                row["score"].update(ci95=None, reason=NEITHER_END.format(share=share))
            elif open_above[i] or open_below[i]:
                row["score"]["ci95"] = _open_ends(row["score"]["ci95"], bool(open_above[i]), bool(open_below[i]))
                row["score"]["open"] = OPEN_END.format(share=share)
            low_rank, high_rank = (None, None)
            interval, reason = _interval(rank[1:, i], settings, NO_SCORES_DRAWN)
            if interval:
                low_rank, high_rank = int(np.floor(interval[0])), int(np.ceil(interval[1]))
            row["rank"] = {"value": int(rank[0, i]), "ci95": [low_rank, high_rank] if interval else None}
            if reason:
                row["rank"]["reason"] = reason
        else:
            why = "no scored pair" if i not in present else fit_reason
            row["score"] = {"value": None, "ci95": None, "reason": why}
            row["rank"] = {"value": None, "ci95": None, "reason": why}
        # A win rate is a count (ties half): its interval is the Wilson interval every count gets.
        row["win_rate"] = _count(scored[0, i].sum(), played[0, i].sum(), settings, "no scored pair")
        if baseline is not None and baseline != i:
            row["vs_baseline"] = _count(
                scored[0, i, baseline],
                played[0, i, baseline],
                settings,
                "never met the baseline",
                pairs=int(played[0, i, baseline]),
            )
        row["left_out"] = left_out[i]
        rows_out.append(row)
    rows_out.sort(
        key=lambda r: (
            r["score"]["value"] is None,
            -(r["score"]["value"] or 0.0),
            -(r["win_rate"]["value"] or 0.0),
            r["system"],
        )
    )
    table = {
        "pairs": int(played[0].sum() / 2),
        "left_out": {reason: sum(why == reason for why in source.why[key]) for reason in LEFT_OUT},
        "fit": {
            "defined": fitted,
            "reason": fit_reason,
            "maximum_likelihood": maximum_likelihood,
            "prior": prior,
            "systems": len(present),
            "prior_resamples": with_prior,
            "undefined_resamples": undefined,
        },
        "systems": rows_out,
        "matrix": _matrix(games, slots.codes, played[0], scored[0]),
    }
    return table, score


def _outcome_counts(games: Matchups, codes: np.ndarray) -> list[dict[str, Any]]:
    """Per system: wins, typed ties and losses over the scored pairs."""
    n = len(games.systems)
    tally = np.zeros((n, 4), dtype=int)  # wins, both_good, both_bad, losses
    for side, other_wins in ((games.a, 1), (games.b, 0)):
        own_wins = 1 - other_wins
        for column, code in ((0, own_wins), (1, 2), (2, 3), (3, other_wins)):
            np.add.at(tally[:, column], side[codes == code], 1)
    return [
        {"wins": int(w), "ties": {"both_good": int(g), "both_bad": int(b)}, "losses": int(lost)}
        for w, g, b, lost in tally
    ]


def _left_out(games: Matchups, why: list[str | None]) -> list[dict[str, int]]:
    """Per system: how many of its pairs were left out, by reason."""
    counts = [dict.fromkeys(LEFT_OUT, 0) for _ in games.systems]
    for a, b, reason in zip(games.a, games.b, why):
        if reason:
            counts[a][reason] += 1
            counts[b][reason] += 1
    return counts


def _matrix(games: Matchups, codes: np.ndarray, played: np.ndarray, scored: np.ndarray) -> dict[str, Any]:
    """Row system against column system: pairs, strict wins, typed ties, and the win rate (ties half)."""
    n = len(games.systems)
    wins = np.zeros((n, n), dtype=int)
    good = np.zeros((n, n), dtype=int)
    bad = np.zeros((n, n), dtype=int)
    np.add.at(wins, (games.a[codes == 0], games.b[codes == 0]), 1)
    np.add.at(wins, (games.b[codes == 1], games.a[codes == 1]), 1)
    for table, code in ((good, 2), (bad, 3)):
        np.add.at(table, (games.a[codes == code], games.b[codes == code]), 1)
    good, bad = good + good.T, bad + bad.T
    rate = _ratio(scored, played)
    return {
        "systems": list(games.systems),
        "pairs": played.astype(int).tolist(),
        "wins": wins.tolist(),
        "both_good": good.tolist(),
        "both_bad": bad.tolist(),
        "win_rate": [[None if np.isnan(v) else float(v) for v in row] for row in rate],
    }


def _acceptability(games: Matchups, totals: np.ndarray, slots: _Slots, settings: BootstrapSettings) -> list[dict]:
    """Each system's share of acceptable answers: a count, so its interval is the Wilson interval that every
    count gets (evaluation.engine), never a point on a few answers."""
    out: list[dict[str, Any]] = []
    for i in range(len(games.systems)):
        acceptable, n = int(totals[0, slots.acceptable][i]), int(totals[0, slots.scored][i])
        if not n:
            out.append({"value": None, "ci95": None, "reason": "no scored answer", "acceptable": 0, "n": 0})
            continue
        interval = metrics.wilson_interval(acceptable, n)
        out.append(
            {"value": acceptable / n, "ci95": list(interval) if interval else None, "acceptable": acceptable, "n": n}
        )
    return out


def _agreement(
    run: str, key: str, names: list[str], judge: np.ndarray, human: np.ndarray, settings: BootstrapSettings
) -> dict[str, Any]:
    """Kendall's tau-b and Spearman's rho between a run's scores and the human scores on `key`."""
    common = [i for i in range(len(names)) if not np.isnan(judge[0, i]) and not np.isnan(human[0, i])]
    entry: dict[str, Any] = {"run": run, "dimension": key, "systems": [names[i] for i in common]}
    if len(common) < 3:
        reason = f"{len(common)} system(s) scored by both: a rank correlation needs at least 3"
        entry.update(
            kendall_tau={"value": None, "ci95": None, "reason": reason},
            spearman_rho={"value": None, "ci95": None, "reason": reason},
        )
    else:
        j, h = judge[:, common], human[:, common]
        for name, statistic in (("kendall_tau", metrics.kendall_tau_b), ("spearman_rho", metrics.spearman_rho)):
            values = statistic(j, h)
            entry[name] = _slot(
                values[0], values[1:], settings, "undefined: one side gives every system one score", NO_SCORES_DRAWN
            )
    if common:
        tied = {side: _tied_top(scores[0], common, names) for side, scores in (("judge", judge), ("human", human))}
        entry["top"] = {side: systems[0] for side, systems in tied.items()}
        # Every system sharing the top score: a tie at the top is no agreement on one system.
        entry["tied_top"] = tied
        entry["same_top"] = tied["judge"] == tied["human"]
    else:
        entry["top"], entry["tied_top"], entry["same_top"] = None, None, None
    return entry


def _tied_top(scores: np.ndarray, common: list[int], names: list[str]) -> list[str]:
    """The systems with the highest score (to 1e-6 points: equal fits of equal records), best-named first."""
    best = max(float(scores[i]) for i in common)
    return sorted(names[i] for i in common if float(scores[i]) >= best - 1e-6)


def top_text(agreement: dict[str, Any], side: str) -> str:
    """The top system of one side of a rank agreement, "clear", or a tie, "clear and quiet (tied)"."""
    tied = (agreement.get("tied_top") or {}).get(side) or [agreement["top"][side]]
    return tied[0] if len(tied) == 1 else f"{', '.join(tied[:-1])} and {tied[-1]} (tied)"


def _tie_sentence(tied: list[str]) -> str:
    return f"No single top system: {', '.join(tied[:-1])} and {tied[-1]} tie at rank 1 with equal scores."


def tied_at_top(table: dict[str, Any]) -> list[str]:
    """The systems that share rank 1 of a ranking table, when more than one does."""
    first = [r["system"] for r in table["systems"] if r["rank"]["value"] == 1]
    return first if len(first) > 1 else []


# -- the leaderboard ------------------------------------------------------------------------


def build_leaderboard(
    runs: Sequence[JudgeRun],
    human: HumanLabels,
    rubric: Rubric,
    by: str | Sequence[str] = OVERALL,
    policy: str | None = None,
    baseline: str | None = None,
    settings: BootstrapSettings = DEFAULT_BOOTSTRAP,
    bench: str | Path | None = None,
) -> dict[str, Any]:
    """The leaderboard of runs already read and of a benchmark's human labels (what `leaderboard` returns)."""
    keys = _keys(by, rubric)
    all_keys = dimensions_of(rubric)
    games = matchups(human.pair_systems)
    if not games.ids:
        raise EvaluationError(
            f"{human.manifest}: no item names two different systems (model_a, model_b): there is nothing to rank"
        )
    if baseline is not None and baseline not in games.systems:
        raise EvaluationError(f"--baseline {baseline}: no such system; the items name: {', '.join(games.systems)}")
    base = games.systems.index(baseline) if baseline is not None else None
    policies = [run.fusion_policy(policy, rubric) if rubric.fusion else None for run in runs]

    sources: list[Source] = []
    if any(human.labels.get(i) for i in games.ids):
        sources.append(human_source(human, games, all_keys))
    bench_ids = set(human.labels)
    sources += [run_source(run, rubric, p, games, all_keys, bench_ids) for run, p in zip(runs, policies)]
    if not sources:
        raise EvaluationError(
            f"{human.manifest}: no human label on the items that name their systems, and no run: "
            "there is nothing to rank"
        )

    n = len(games.systems)
    low, high = np.triu_indices(n, 1)
    cell_index = np.full((n, n), -1, dtype=int)
    cell_index[low, high] = np.arange(len(low))
    cells = cell_index[np.minimum(games.a, games.b), np.maximum(games.a, games.b)]
    columns = _Columns(len(games.ids))
    slots = {
        (index, k): _register(columns, games, cells, len(low), source, k, k in keys)
        for index, source in enumerate(sources)
        for k in all_keys
    }
    matrix = columns.matrix()
    # Row 0: the pairs as they are; rows 1..: the resamples (the same draws for every column).
    totals = np.vstack(
        [matrix.sum(axis=0)[None, :], metrics.bootstrap_totals(matrix, settings.resamples, settings.seed)]
    )

    described, scores = [], {}
    for index, source in enumerate(sources):
        tables = {}
        for key in keys:
            tables[key], scores[(index, key)] = _table(
                games, (low, high), totals, slots[(index, key)], source, key, base, settings
            )
        acceptability = {key: _acceptability(games, totals, slots[(index, key)], settings) for key in all_keys}
        described.append(
            {
                **source.about,
                "acceptability": {
                    system: {key: acceptability[key][i] for key in all_keys} for i, system in enumerate(games.systems)
                },
                "tables": tables,
            }
        )
    agreement = []
    if sources[0].kind == HUMAN:  # every run against the human labels, on the same resampled pairs
        agreement = [
            _agreement(source.name, key, games.systems, scores[(index, key)], scores[(0, key)], settings)
            for index, source in enumerate(sources)
            if index
            for key in keys
        ]
    return {
        "version": VERSION,
        "bench": str(Path(bench).resolve()) if bench is not None else None,
        "labels_manifest": str(human.manifest),
        "rubric": rubric.name,
        "by": keys,
        "dimensions": all_keys,
        "baseline": baseline,
        "systems": games.systems,
        "items": {
            "in_benchmark": len(human.labels),
            "ranked": len(games.ids),
            "without_systems": len(games.unnamed),
            "without_systems_ids": games.unnamed[:LISTED],
            "same_system": len(games.same_system),
            "same_system_ids": games.same_system[:LISTED],
        },
        "human_labels": sources[0].kind == HUMAN,
        "bootstrap": {
            **settings.describe(),
            "method": "non-parametric bootstrap over the pairs (resampled jointly "
            "for every source and dimension), percentile interval",
        },
        "convention": CONVENTION,
        "sources": described,
        "agreement": agreement,
    }


def leaderboard(
    runs: Sequence[str | Path] = (),
    bench: str | Path | None = None,
    by: str | Sequence[str] = OVERALL,
    policy: str | None = None,
    baseline: str | None = None,
    settings: BootstrapSettings = DEFAULT_BOOTSTRAP,
    trusted_only: bool = False,
    calibration: str | Path | None = None,
) -> dict[str, Any]:
    """The leaderboard of judge run folders and of their benchmark's human labels, or of a benchmark's human
    labels alone (`bench` without runs; its audio need not exist): exactly what leaderboard.json holds.
    `trusted_only` counts only trusted verdicts (a cascade's decided ones, or those at or above the
    thresholds of `calibration`; trace_eval/evaluation/trust.py).

    `bench` names the benchmark (default: the one the runs judged); `by` is "overall", a typed-tie dimension,
    a list of them or "all"; `policy` re-fuses every run's overall label (`--fusion`; default: each run's own);
    `baseline` adds each system's win rate against that one.
    """
    if not runs and bench is None:
        raise EvaluationError("give judge run folder(s), or a benchmark folder for its human labels")
    loaded = load_runs(list(runs))
    trusted: dict[str, Any] | None = None
    if trusted_only:
        from trace_eval.judge.confidence import read_calibration

        from .trust import keep_trusted, trusted_ids

        calibrated = read_calibration(Path(calibration)) if calibration else None
        trusted = {
            "calibration": str(calibration) if calibration else None,
            "runs": {run.name: trusted_ids(run, calibrated)[1] for run in loaded},
        }
        loaded = keep_trusted(loaded, Path(calibration) if calibration else None)
    rubric = _rubric(loaded)
    bench_path = bench_of(loaded, bench) if loaded or bench is None else Path(bench)
    human = load_human_labels(bench_path, rubric)
    board = build_leaderboard(loaded, human, rubric, by, policy, baseline, settings, bench_path)
    if trusted is not None:
        board["trusted_only"] = trusted
    return board


def trusted_sentence(board: dict[str, Any]) -> str | None:
    """What a --trusted-only leaderboard counted, or None for one of every verdict."""
    trusted = board.get("trusted_only")
    if not trusted:
        return None
    how = "; ".join(f"{name}: {rule}" for name, rule in trusted["runs"].items())
    return (
        f"Trusted verdicts only ({how}); the others are counted under not_trusted, apart from those the judge "
        "left undetermined."
    )


def systems_section(
    runs: Sequence[JudgeRun],
    human: HumanLabels,
    rubric: Rubric,
    policy: str | None,
    settings: BootstrapSettings,
    bench: str | Path | None = None,
    by: str | Sequence[str] = "all",
) -> dict[str, Any] | None:
    """The leaderboard of runs already read, on `by` (`evaluate`'s report: every dimension; the audit page:
    the first), or None where there is none to make: no item names two systems, or the rubric has no
    typed-tie dimension."""
    if not dimensions_of(rubric) or not matchups(human.pair_systems).ids:
        return None
    return build_leaderboard(runs, human, rubric, by, policy, None, settings, bench)


def _rubric(runs: list[JudgeRun]) -> Rubric:
    """The rubric every run was judged with (TRACE's without runs)."""
    if not runs:
        return load_rubric(DEFAULT_RUBRIC)
    rubrics = [rubric_of_run(run.config) for run in runs]
    names = {r.name for r in rubrics}
    if len(names) > 1:
        raise EvaluationError(
            f"the runs were judged with different rubrics ({', '.join(sorted(names))}); "
            "rank runs of one rubric together"
        )
    return rubrics[0]


# -- files ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class LeaderboardFiles:
    """What `write_leaderboard` wrote."""

    json: Path
    markdown: Path
    tables_csv: Path
    matrix_csv: Path
    pictures: dict[str, Path]


def write_leaderboard(board: dict[str, Any], out: str | Path) -> LeaderboardFiles:
    """leaderboard.json, leaderboard.md, leaderboard.csv (one row per source, dimension and system),
    win_matrix.csv (one row per source, dimension and ordered pair of systems) and the pictures."""
    from . import figures  # matplotlib only when files are written

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    files = LeaderboardFiles(
        out / "leaderboard.json",
        out / "leaderboard.md",
        out / "leaderboard.csv",
        out / "win_matrix.csv",
        figures.write_leaderboard_figures(board, out),
    )
    write_json(files.json, board)
    atomic_write_text(files.markdown, render_markdown(leaderboard_blocks(board)))
    atomic_write_text(files.tables_csv, _csv(_table_rows(board)))
    atomic_write_text(files.matrix_csv, _csv(_matrix_rows(board)))
    return files


def _csv(rows: list[dict[str, Any]]) -> str:
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=list(rows[0]) if rows else ["source"], lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: "" if v is None else v for k, v in row.items()} for row in rows)
    return text.getvalue()


def _low(slot: dict[str, Any] | None) -> Any:
    return (slot or {}).get("ci95", [None, None])[0] if (slot or {}).get("ci95") else None


def _high(slot: dict[str, Any] | None) -> Any:
    return (slot or {}).get("ci95", [None, None])[1] if (slot or {}).get("ci95") else None


def _table_rows(board: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for source in board["sources"]:
        for key, table in source["tables"].items():
            for r in table["systems"]:
                accept = source["acceptability"][r["system"]][key]
                rows.append(
                    {
                        "source": source["name"],
                        "kind": source["kind"],
                        "dimension": key,
                        "system": r["system"],
                        "rank": r["rank"]["value"],
                        "rank_low": _low(r["rank"]),
                        "rank_high": _high(r["rank"]),
                        "score": r["score"]["value"],
                        "score_low": _low(r["score"]),
                        "score_high": _high(r["score"]),
                        "pairs": r["pairs"],
                        "wins": r["wins"],
                        "both_good": r["ties"]["both_good"],
                        "both_bad": r["ties"]["both_bad"],
                        "losses": r["losses"],
                        "win_rate": r["win_rate"]["value"],
                        "win_rate_low": _low(r["win_rate"]),
                        "win_rate_high": _high(r["win_rate"]),
                        "acceptability": accept["value"],
                        "acceptable": accept["acceptable"],
                        "answers": accept["n"],
                        **(
                            {
                                "vs_baseline": (r.get("vs_baseline") or {}).get("value"),
                                "vs_baseline_pairs": (r.get("vs_baseline") or {}).get("pairs"),
                            }
                            if board["baseline"]
                            else {}
                        ),
                        **{f"left_out_{reason}": n for reason, n in r["left_out"].items()},
                    }
                )
    return rows


def _matrix_rows(board: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for source in board["sources"]:
        for key, table in source["tables"].items():
            m = table["matrix"]
            for i, system in enumerate(m["systems"]):
                for j, opponent in enumerate(m["systems"]):
                    if i != j and m["pairs"][i][j]:
                        rows.append(
                            {
                                "source": source["name"],
                                "kind": source["kind"],
                                "dimension": key,
                                "system": system,
                                "opponent": opponent,
                                "pairs": m["pairs"][i][j],
                                "wins": m["wins"][i][j],
                                "both_good": m["both_good"][i][j],
                                "both_bad": m["both_bad"][i][j],
                                "losses": m["wins"][j][i],
                                "win_rate": m["win_rate"][i][j],
                            }
                        )
    return rows


# -- the report and what the commands print ----------------------------------------------------------------------------


def _title(key: str) -> str:
    return key.replace("_", " ").capitalize()


def _source_title(source: dict[str, Any]) -> str:
    if source["kind"] == HUMAN:
        return "Human labels"
    details = ", ".join(
        str(v) for v in (source.get("model"), source.get("fusion") and f"fusion {source['fusion']}") if v
    )
    return f"Run {source['name']}" + (f" ({details})" if details else "")


def _end(value: float | None, open_as: str) -> str:
    return open_as if value is None else f"{value:.1f}"


def _score(slot: dict[str, Any]) -> str:
    if slot["value"] is None:
        return "n/a"
    interval = f" [{_end(slot['ci95'][0], '−∞')}, {_end(slot['ci95'][1], '∞')}]" if slot.get("ci95") else ""
    return f"{slot['value']:.1f}{interval}"


def _rank(slot: dict[str, Any]) -> str:
    if slot["value"] is None:
        return "—"
    return f"{slot['value']}" + (f" [{slot['ci95'][0]}–{slot['ci95'][1]}]" if slot.get("ci95") else "")


def _rate(slot: dict[str, Any] | None, counts: str = "") -> str:
    if not slot or slot["value"] is None:
        return "n/a"
    interval = f" [{slot['ci95'][0] * 100:.1f}–{slot['ci95'][1] * 100:.1f}]" if slot.get("ci95") else ""
    return f"{slot['value']:.1%}{interval}{counts}"


def _correlation(slot: dict[str, Any]) -> str:
    if slot["value"] is None:
        return f"n/a ({slot.get('reason')})"
    interval = f" [{slot['ci95'][0]:.2f}, {slot['ci95'][1]:.2f}]" if slot.get("ci95") else " (no interval)"
    return f"{slot['value']:.2f}{interval}"


def _reasons(table: dict[str, Any]) -> str:
    return next((r["score"]["reason"] for r in table["systems"] if r["score"].get("reason")), "")


def _without_interval(table: dict[str, Any]) -> list[tuple[str, str]]:
    """(system, why) for each scored system whose score has no interval."""
    return [
        (r["system"], r["score"].get("reason") or "no reason recorded")
        for r in table["systems"]
        if r["score"]["value"] is not None and not r["score"].get("ci95")
    ]


def _left(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {reason.replace('_', ' ')}" for reason, n in counts.items() if n) or "—"


def leaderboard_blocks(board: dict[str, Any], level: int = 1) -> list[Block]:
    """The leaderboard as report blocks (leaderboard.md, and the Systems section of `evaluate`'s report)."""
    items, boot = board["items"], board["bootstrap"]
    unnamed = (
        (
            f" {items['without_systems']} item(s) do not name both systems and are left out"
            + (
                f" ({', '.join(items['without_systems_ids'][:10])}{', …' if items['without_systems'] > 10 else ''})"
                if items["without_systems"]
                else ""
            )
            + "."
        )
        if items["without_systems"]
        else ""
    )
    same = (
        f" {items['same_system']} item(s) pit a system against itself and are left out." if items["same_system"] else ""
    )
    blocks: list[Block] = [
        Heading(level, "Leaderboard"),
        Paragraph(
            f"{items['ranked']} of {items['in_benchmark']} items of `{board['labels_manifest']}` name two "
            f"systems; {len(board['systems'])} systems.{unnamed}{same} Intervals of scores and ranks: 95% "
            f"percentile, {boot['resamples']} bootstrap resamples of the pairs (seed {boot['seed']}), the same pairs "
            "drawn for every source and dimension; of win rates: 95% Wilson."
        ),
        Paragraph(
            "Score: Bradley-Terry, 400·log10(strength) + 1000 with the geometric mean of the strengths 1 "
            "(mean score 1000); a tie counts half a win to each side. Win rate: (wins + ties/2) / pairs. "
            'Undetermined, failed and skipped verdicts are left out (counted under "left out"), never '
            "scored as ties."
        ),
    ]
    if trusted := trusted_sentence(board):
        blocks.append(Paragraph(f"**{trusted}**"))
    baseline = board["baseline"]
    without_intervals: list[tuple[str, str]] = []
    for key in board["by"]:
        blocks.append(Heading(level + 1, _title(key)))
        for source in board["sources"]:
            table = source["tables"][key]
            header = [
                "rank",
                "system",
                "score [95% CI]",
                "pairs",
                "wins",
                "both_good",
                "both_bad",
                "losses",
                "win rate",
                *([f"vs {baseline}"] if baseline else []),
                "left out",
            ]
            rows = [
                [
                    _rank(r["rank"]),
                    r["system"],
                    _score(r["score"]),
                    str(r["pairs"]),
                    str(r["wins"]),
                    str(r["ties"]["both_good"]),
                    str(r["ties"]["both_bad"]),
                    str(r["losses"]),
                    _rate(r["win_rate"]),
                    *(
                        [
                            _rate(r.get("vs_baseline"), f" ({r['vs_baseline']['pairs']})")
                            if r.get("vs_baseline")
                            else "—"
                        ]
                        if baseline
                        else []
                    ),
                    _left(r["left_out"]),
                ]
                for r in table["systems"]
            ]
            blocks += [Heading(level + 2, _source_title(source)), Table(header, rows)]
            if tied := tied_at_top(table):
                blocks.append(Paragraph(_tie_sentence(tied)))
            if table["fit"]["reason"]:
                blocks.append(Paragraph(f"No scores: {table['fit']['reason']}."))
            elif not any(r["score"]["ci95"] for r in table["systems"]):
                without_intervals.append((f"{_title(key).lower()}, {_source_title(source)}", _reasons(table)))
            elif lacking := _without_interval(table):  # some have one: say why these do not, under their table
                blocks.append(Paragraph(" ".join(f"No interval for {name}: {why}." for name, why in lacking)))
            if table["fit"].get("prior"):
                blocks.append(Paragraph(f"Prior: {table['fit']['prior']}; ∞ marks an interval's open end."))
    if without_intervals:  # said once, not under every table
        blocks.append(
            Paragraph(
                "No intervals (the scores are undefined in more than 5% of the resamples: too few pairs) for "
                + "; ".join(f"{where} ({why})" for where, why in without_intervals)
                + "."
            )
        )
    blocks.append(Image("system_scores.png", "Scores with 95% intervals"))
    blocks += [
        Heading(level + 1, "Acceptability"),
        Paragraph(
            "Share of each system's scored answers that the label accepts (its own number or "
            "both_good), per dimension, with 95% intervals and (acceptable/scored)."
        ),
    ]
    for source in board["sources"]:
        order = [r["system"] for r in source["tables"][board["by"][0]]["systems"]]
        rows = [
            [
                system,
                *[
                    _rate(
                        source["acceptability"][system][key],
                        f" ({source['acceptability'][system][key]['acceptable']}/"
                        f"{source['acceptability'][system][key]['n']})",
                    )
                    for key in board["dimensions"]
                ],
            ]
            for system in order
        ]
        blocks += [
            Heading(level + 2, _source_title(source)),
            Table(["system", *[_title(k) for k in board["dimensions"]]], rows),
        ]
    if board["agreement"]:
        blocks += [
            Heading(level + 1, "Rank agreement with the human labels"),
            Paragraph(
                "Kendall's tau-b and Spearman's rho between each run's scores and the human scores, "
                "over the systems both score, with 95% intervals (pairs resampled jointly)."
            ),
            Table(
                ["run", "dimension", "systems", "Kendall τ", "Spearman ρ", "top system (run / human)"],
                [
                    [
                        a["run"],
                        a["dimension"],
                        str(len(a["systems"])),
                        _correlation(a["kendall_tau"]),
                        _correlation(a["spearman_rho"]),
                        (f"{top_text(a, 'judge')} / {top_text(a, 'human')}" + (" (same)" if a["same_top"] else ""))
                        if a["top"]
                        else "—",
                    ]
                    for a in board["agreement"]
                ],
            ),
        ]
        missing = next(
            (
                a["kendall_tau"]["reason"]
                for a in board["agreement"]
                if a["kendall_tau"]["value"] is not None and not a["kendall_tau"]["ci95"]
            ),
            None,
        )
        if missing:
            blocks.append(Paragraph(f"No interval: {missing}."))
    blocks += [
        Heading(level + 1, "Win matrices"),
        Paragraph("Row system against column system: win rate (ties half) and pairs."),
    ]
    for key in board["by"]:
        for source in board["sources"]:
            m = source["tables"][key]["matrix"]
            order = [m["systems"].index(r["system"]) for r in source["tables"][key]["systems"]]
            rows = [
                [
                    m["systems"][i],
                    *[
                        (
                            "—"
                            if i == j
                            else f"{m['win_rate'][i][j]:.0%} ({m['pairs'][i][j]})"
                            if m["win_rate"][i][j] is not None
                            else ""
                        )
                        for j in order
                    ],
                ]
                for i in order
            ]
            blocks += [
                Heading(level + 2, f"{_title(key)}: {_source_title(source)}"),
                Table(["", *[m["systems"][j] for j in order]], rows),
            ]
    blocks.append(Image("win_matrix.png", f"Win matrix, {_title(board['by'][0]).lower()}"))
    return blocks


def leaderboard_lines(board: dict[str, Any], tables: bool = True) -> list[str]:
    """What the commands print: what was ranked, each ranking as a short table (with `tables`), and the rank
    agreement of every run with the human labels."""
    lines = []
    items = board["items"]
    lines.append(
        f"{items['ranked']} of {items['in_benchmark']} items name two systems; {len(board['systems'])} systems"
    )
    if trusted := trusted_sentence(board):
        lines.append(trusted)
    if items["without_systems"]:
        lines.append(f"  {items['without_systems']} item(s) without both system names, left out")
    if items["same_system"]:
        lines.append(f"  {items['same_system']} item(s) with one system on both sides, left out")
    for key in board["by"] if tables else ():
        for source in board["sources"]:
            table = source["tables"][key]
            title = "human labels" if source["kind"] == "human" else f"run {source['name']}"
            left = {reason: n for reason, n in table["left_out"].items() if n}
            lines.append("")
            lines.append(
                f"{key}, {title}: {table['pairs']} pairs"
                + (f"; left out: {', '.join(f'{n} {r}' for r, n in left.items())}" if left else "")
            )
            if table["fit"]["reason"]:
                lines.append(f"  no scores: {table['fit']['reason']}")
            elif not any(r["score"]["ci95"] for r in table["systems"]):
                lines.append(f"  no intervals: {_reasons(table)}")
            if table["fit"].get("prior"):
                lines.append(f"  prior: {table['fit']['prior']}; inf: an interval's open end")
            if tied := tied_at_top(table):
                lines.append(f"  {_tie_sentence(tied)}")
            width = max(len(r["system"]) for r in table["systems"])
            # Where every score lacks an interval the reason is said once above; else beside each that lacks one.
            lacking = any(r["score"]["ci95"] for r in table["systems"])
            for r in table["systems"]:
                score = r["score"]
                interval = (
                    "[{:>7}, {:>7}]".format(*(_end(v, e) for v, e in zip(score["ci95"], ("-inf", "inf"))))
                    if score.get("ci95")
                    else " " * 18
                )
                value = f"{score['value']:7.1f}" if score["value"] is not None else "    n/a"
                lines.append(
                    f"  {r['rank']['value'] or '-':>3}  {r['system']:{width}}  {value} {interval}  "
                    f"{r['wins']:>4}W {r['ties']['both_good']:>3}G {r['ties']['both_bad']:>3}B "
                    f"{r['losses']:>4}L  win rate {_rate(r['win_rate'])}"
                    + (f"  (no interval: {score['reason']})" if lacking and score.get("reason") else "")
                )
    for a in board["agreement"]:
        tau, rho = a["kendall_tau"], a["spearman_rho"]
        if tau["value"] is None:
            lines.append(f"{a['run']} vs human, {a['dimension']}: {tau['reason']}")
            continue

        def ci(s: dict[str, Any]) -> str:
            return f" [{s['ci95'][0]:.2f}, {s['ci95'][1]:.2f}]" if s.get("ci95") else ""

        lines.append(
            f"{a['run']} vs human, {a['dimension']}: Kendall tau {tau['value']:.2f}{ci(tau)}, "
            f"Spearman rho {rho['value']:.2f}{ci(rho)}, top system "
            + (
                f"the same: {top_text(a, 'judge')}"
                if a["same_top"]
                else f"{top_text(a, 'judge')} (run) vs {top_text(a, 'human')} (human)"
            )
        )
    return lines
