"""Leaderboards: counts by hand, scores against an independent fit on benchmarks with known strengths
(and on the released SpeakBench and S2S-Arena label files when they are at hand), judge runs made
through the real judge path whose systems differ in known ways, and the command line."""

from __future__ import annotations

import csv
import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
from independent_fit import bradley_terry_scores
from llm_server import LLMServer, PairSpec, Reply, blueprint, prompt_text, verdict_json, write_benchmark

from trace_eval.cli import main
from trace_eval.evaluation import BootstrapSettings
from trace_eval.evaluation.leaderboard import leaderboard, leaderboard_blocks
from trace_eval.evaluation.records import EvaluationError
from trace_eval.evaluation.report import render_markdown
from trace_eval.judge import JudgeOptions, RetryPolicy, run_judge
from trace_eval.rubrics import load_rubric

TRACE = load_rubric("trace")
G, B = "both_good", "both_bad"
DIMENSIONS = ("content", "voice_quality", "paralinguistics")
QUICK = BootstrapSettings(resamples=2000, seed=0)


def write_manifest(root: Path, items: list[dict]) -> Path:
    """A benchmark folder holding only its manifest: a leaderboard reads no audio."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "manifest.json").write_text(json.dumps(items))
    return root


def item(item_id: str, model_a: str | None, model_b: str | None, labels: tuple[str, ...] | None) -> dict:
    entry = {
        "index": item_id,
        "instruction_path": f"audio/{item_id}/q.wav",
        "audio1_path": f"audio/{item_id}/a.wav",
        "audio2_path": f"audio/{item_id}/b.wav",
    }
    if model_a is not None:
        entry["model_a"] = model_a
    if model_b is not None:
        entry["model_b"] = model_b
    if labels is not None:
        entry["label"] = dict(zip((*DIMENSIONS, "overall"), labels))
    return entry


def rows_by_system(table: dict) -> dict[str, dict]:
    return {row["system"]: row for row in table["systems"]}


# ---------------------------------------------------------------- counted by hand

HAND = [  # C, VQ, P, overall
    item("0", "amy", "bob", ("1", G, "1", "1")),
    item("1", "bob", "amy", (G, G, G, G)),
    item("2", "amy", "cat", (B, "2", B, B)),
    item("3", "cat", "bob", ("2", "1", "2", "2")),
    item("4", "bob", "cat", (G, "2", "1", "1")),
    item("5", "cat", "amy", ("1", G, "1", "1")),
    item("6", "amy", "cat", None),  # no human label
    item("7", "amy", None, ("1", "1", "1", "1")),  # one system named: never guessed
    item("8", "bob", "bob", ("1", "1", "1", "1")),  # a system against itself
]


def test_wins_typed_ties_losses_acceptability_and_the_matrix_by_hand(tmp_path: Path) -> None:
    bench = write_manifest(tmp_path / "bench", HAND)
    board = leaderboard(bench=bench, by="all", baseline="amy", settings=QUICK)
    assert board["version"] == 1 and board["systems"] == ["amy", "bob", "cat"]
    assert board["items"] == {
        "in_benchmark": 9,
        "ranked": 7,
        "without_systems": 1,
        "without_systems_ids": ["7"],
        "same_system": 1,
        "same_system_ids": ["8"],
    }
    [human] = board["sources"]
    overall = rows_by_system(human["tables"]["overall"])
    # amy: beat bob (0), tied good with bob (1), tied bad with cat (2), lost to cat (5); item 6 unlabelled.
    assert {k: overall["amy"][k] for k in ("pairs", "wins", "ties", "losses")} == {
        "pairs": 4,
        "wins": 1,
        "ties": {"both_good": 1, "both_bad": 1},
        "losses": 1,
    }
    assert overall["amy"]["win_rate"]["value"] == pytest.approx((1 + 1) / 4)
    assert overall["amy"]["left_out"]["no_label"] == 1 and overall["cat"]["left_out"]["no_label"] == 1
    assert overall["bob"]["left_out"]["no_label"] == 0
    assert human["tables"]["overall"]["left_out"]["no_label"] == 1 and human["tables"]["overall"]["pairs"] == 6
    # Acceptable: its own number or both_good. amy overall: 0 yes, 1 yes, 2 no, 5 no.
    amy_overall = human["acceptability"]["amy"]["overall"]
    assert (amy_overall["value"], amy_overall["acceptable"], amy_overall["n"]) == (0.5, 2, 4)
    # bob on voice quality: 0 both_good, 1 both_good, 3 ("1": cat's), 4 ("2": cat's) -> 2 of 4.
    assert human["acceptability"]["bob"]["voice_quality"]["value"] == pytest.approx(0.5)
    matrix = human["tables"]["overall"]["matrix"]
    amy, bob, cat = (matrix["systems"].index(s) for s in ("amy", "bob", "cat"))
    assert matrix["pairs"][amy][bob] == 2 and matrix["wins"][amy][bob] == 1 and matrix["both_good"][bob][amy] == 1
    assert matrix["win_rate"][amy][bob] == pytest.approx(0.75) and matrix["win_rate"][bob][amy] == pytest.approx(0.25)
    assert matrix["pairs"][amy][amy] == 0 and matrix["win_rate"][amy][amy] is None
    # Baseline: each system's win rate against amy.
    assert overall["cat"]["vs_baseline"]["value"] == pytest.approx((1 + 0.5) / 2)
    assert overall["cat"]["vs_baseline"]["pairs"] == 2 and "vs_baseline" not in overall["amy"]
    # A system may win on one dimension and lose on another: cat on content (tied bad 2, lost 3, tied good 4,
    # won 5) against voice quality (won 2, 3 and 4, tied good 5).
    content, quality = (rows_by_system(human["tables"][k]) for k in ("content", "voice_quality"))
    assert (content["cat"]["wins"], content["cat"]["ties"], content["cat"]["losses"]) == (
        1,
        {"both_good": 1, "both_bad": 1},
        1,
    )
    assert (quality["cat"]["wins"], quality["cat"]["losses"]) == (3, 0)


def test_a_system_that_won_every_pair_is_ranked_with_the_prior_and_an_open_end(tmp_path: Path) -> None:
    bench = write_manifest(
        tmp_path / "bench",
        [
            item("0", "amy", "bob", ("1", G, G, "1")),
            item("1", "bob", "amy", ("2", G, G, "2")),
            item("2", "bob", "cat", (G, G, G, G)),
            item("3", "cat", "amy", ("2", G, G, "2")),
        ],
    )
    table = leaderboard(bench=bench, settings=QUICK)["sources"][0]["tables"]["overall"]
    assert table["fit"]["defined"] is True and table["fit"]["reason"] is None
    assert table["fit"]["maximum_likelihood"] is False and "amy won every scored pair" in table["fit"]["prior"]
    assert "weak prior" in table["fit"]["prior"]
    rows = rows_by_system(table)
    assert [row["system"] for row in table["systems"]][0] == "amy" and rows["amy"]["rank"]["value"] == 1
    assert (rows["cat"]["rank"]["value"], rows["bob"]["rank"]["value"]) == (2, 3)  # bob lost to amy twice, cat once
    # The scores are those of an independent fit with the same prior.
    expected = bradley_terry_scores([0, 1, 1, 2], [1, 0, 2, 0], [1.0, 0.0, 0.5, 0.0], 3, prior_games=1.0)
    for name, value in zip(("amy", "bob", "cat"), expected):
        assert rows[name]["score"]["value"] == pytest.approx(value, abs=0.01)
    # The data bound amy's score from below only, and the others' from above only.
    low, high = rows["amy"]["score"]["ci95"]
    assert high is None and low is not None and low <= rows["amy"]["score"]["value"]
    assert "open" in rows["amy"]["score"]
    # Four pairs: bob lost every pair drawn in some resamples and tied cat in others; nothing bounds him.
    assert rows["bob"]["score"]["ci95"] is None and rows["bob"]["score"]["reason"].startswith("too few pairs")
    assert rows["amy"]["wins"] == 3  # the counts stand


def test_win_rates_have_wilson_intervals_and_a_score_without_an_interval_says_why_where_it_is_read(
    tmp_path: Path,
) -> None:
    from trace_eval.evaluation.leaderboard import leaderboard_lines
    from trace_eval.evaluation.metrics import wilson_interval

    bench = write_manifest(
        tmp_path / "bench",
        [
            item("0", "amy", "bob", ("1", G, G, "1")),
            item("1", "bob", "amy", ("2", G, G, "2")),
            item("2", "bob", "cat", (G, G, G, G)),
            item("3", "cat", "amy", ("2", G, G, "2")),
        ],
    )
    board = leaderboard(bench=bench, settings=QUICK, baseline="cat")
    rows = rows_by_system(board["sources"][0]["tables"]["overall"])
    # amy won 3 of 3: a count's interval, never the point [100%, 100%] a bootstrap of three pairs gives.
    assert rows["amy"]["win_rate"]["value"] == 1.0
    assert rows["amy"]["win_rate"]["ci95"] == pytest.approx(list(wilson_interval(3, 3)))
    assert rows["amy"]["win_rate"]["ci95"][0] < 0.5
    assert rows["cat"]["win_rate"]["ci95"] == pytest.approx(list(wilson_interval(0.5, 2)))  # a tie counts half
    assert rows["amy"]["vs_baseline"]["ci95"] == pytest.approx(list(wilson_interval(1, 1)))
    # bob, between them, has no score interval: the reason is printed beside him, not only in leaderboard.json.
    assert rows["bob"]["score"]["ci95"] is None and rows["amy"]["score"]["ci95"] is not None
    printed = "\n".join(leaderboard_lines(board))
    assert re.search(r"bob .*\(no interval: too few pairs", printed), printed
    assert "win rate 100.0% [43.9–100.0]" in printed
    markdown = render_markdown(leaderboard_blocks(board))
    assert "No interval for bob: too few pairs" in markdown and "100.0% [43.9–100.0]" in markdown


def test_a_benchmark_one_system_sweeps_ranks_every_system_and_agrees_with_people(tmp_path: Path, capsys) -> None:
    """Three systems: alpha says the words cleanly, bravo says them under noise or says other words, charlie
    says other words cleanly. alpha wins every pair (for the people and for the judge alike)."""
    rng = np.random.default_rng(3)
    made = {"alpha": (True, True), "charlie": (False, True)}
    specs, systems = [], {}
    for n in range(24):
        a, b = [("alpha", "bravo"), ("alpha", "charlie"), ("bravo", "charlie")][n % 3]
        answers = []
        for name in (a, b):
            answers.append(made.get(name) or (bool(rng.random() < 0.6), False))
        dims = {
            "content": _typed_tie(answers[0][0], answers[1][0]),
            "voice_quality": _typed_tie(answers[0][1], answers[1][1]),
            "paralinguistics": G,
        }
        specs.append(
            PairSpec(
                id=f"s{n:02d}",
                instruction_text=f'Say "{QUOTE}" please (item {n}).',
                response_1=blueprint(*_said(answers[0])),
                response_2=blueprint(*_said(answers[1])),
                label={**dims, "overall": TRACE.fusion.fuse("cap", dims)},
            )
        )
        systems[f"s{n:02d}"] = (a, b)
    bench = write_benchmark(tmp_path / "bench", specs)
    manifest = json.loads((bench / "manifest.json").read_text())
    for entry in manifest:
        entry["model_a"], entry["model_b"] = systems[entry["id"]]
    (bench / "manifest.json").write_text(json.dumps(manifest))
    run_judge(
        JudgeOptions(bench=bench, cache_dir=tmp_path / "cache", out=tmp_path / "cues", progress=False),
        notice=lambda message: None,
    )
    board = leaderboard([tmp_path / "cues"], settings=QUICK)
    for source in board["sources"]:
        table = source["tables"]["overall"]
        assert "alpha won every scored pair" in table["fit"]["prior"]
        assert _ranking(table) == ["alpha", "bravo", "charlie"]
        assert [row["rank"]["value"] for row in table["systems"]] == [1, 2, 3]
        assert all(np.isfinite(row["score"]["value"]) for row in table["systems"])
        assert table["systems"][0]["score"]["ci95"][1] is None  # the data put no bound above alpha
    [agreement] = board["agreement"]
    assert agreement["systems"] == ["alpha", "bravo", "charlie"] and agreement["kendall_tau"]["value"] == 1.0
    assert agreement["same_top"] is True
    assert main(["leaderboard", str(tmp_path / "cues"), "--out", str(tmp_path / "board")]) == 0
    printed = capsys.readouterr().out
    assert "prior: alpha won every scored pair" in printed and "Kendall tau 1.00" in printed
    assert "n/a" not in printed.split("cues vs human")[0]
    markdown = (tmp_path / "board" / "leaderboard.md").read_text()
    assert "Prior: alpha won every scored pair" in markdown and ", ∞]" in markdown

    # The report and the audit page: every path relative to their folder, notes said once, a legible picture.
    assert main(["evaluate", str(tmp_path / "cues")]) == 0
    assert main(["view", str(tmp_path / "cues")]) == 0
    assert f"read: benchmark {bench}; run {tmp_path / 'cues'}" in capsys.readouterr().out
    report = tmp_path / "cues" / "evaluation"
    for written in [report / "report.md", report / "report.html", *(tmp_path / "cues").glob("view/*.js")]:
        assert str(tmp_path) not in written.read_text(), written
    text = (report / "report.md").read_text()
    assert "Benchmark `../../bench` (labels from `../../bench/manifest.json`)" in text
    assert (
        text.count("No intervals") <= 1 and text.count("Prior: alpha won every scored pair") == 2
    )  # overall: 2 sources
    # Where tables have no intervals, the report says so once, naming them, not under every table.
    board = leaderboard([tmp_path / "cues"], by="all", settings=QUICK)
    for source in board["sources"]:
        for table in source["tables"].values():
            for row in table["systems"]:
                row["score"].update(ci95=None, reason="undefined in 300 of 2000 resamples")
    rendered = render_markdown(leaderboard_blocks(board))
    assert rendered.count("No intervals") == 1 and rendered.count("undefined in 300 of 2000 resamples") == 8
    from matplotlib.image import imread

    height, width = imread(report / "system_scores.png").shape[:2]
    assert width / height < 2.5, (width, height)  # two panels a row, not four in a strip


def _said(answer: tuple[bool, bool]) -> tuple[str, float]:
    says, clean = answer
    return (QUOTE if says else UNRELATED), (CLEAN if clean else NOISY)


def test_errors_say_what_to_do(tmp_path: Path) -> None:
    bench = write_manifest(tmp_path / "bench", HAND)
    with pytest.raises(EvaluationError, match="--baseline dan: no such system; the items name: amy, bob, cat"):
        leaderboard(bench=bench, baseline="dan")
    with pytest.raises(EvaluationError, match="expected all or one of: overall, content, voice_quality"):
        leaderboard(bench=bench, by="loudness")
    unnamed = write_manifest(tmp_path / "unnamed", [item("0", None, None, ("1", "1", "1", "1"))])
    with pytest.raises(EvaluationError, match="no item names two different systems"):
        leaderboard(bench=unnamed)


# ---------------------------------------------------------------- known strengths


def simulated_bench(root: Path, strengths: dict[str, float], pairs: int, seed: int) -> tuple[Path, list[dict]]:
    """Pairs drawn at random, outcomes from the Bradley-Terry model with ties: a tie (both_good or both_bad
    alike) with probability 0.4 min(p, 1 - p), so close pairs tie more often, and a win with p minus half
    that, which keeps each side's expected points at p. Every dimension copies the overall label."""
    rng = np.random.default_rng(seed)
    names = list(strengths)
    items = []
    for n in range(pairs):
        a, b = rng.choice(len(names), 2, replace=False)
        p_a = strengths[names[a]] / (strengths[names[a]] + strengths[names[b]])
        tie = 0.4 * min(p_a, 1 - p_a)
        draw = rng.random()
        label = "1" if draw < p_a - tie / 2 else rng.choice([G, B]) if draw < p_a + tie / 2 else "2"
        items.append(item(f"s{n}", names[a], names[b], (label, label, label, label)))
    return write_manifest(root, items), items


def independent(items: list[dict], systems: list[str], key: str = "overall") -> dict[str, float]:
    index = {s: i for i, s in enumerate(systems)}
    scored = [it for it in items if it.get("label", {}).get(key)]
    first = [index[it["model_a"]] for it in scored]
    second = [index[it["model_b"]] for it in scored]
    outcome = [{"1": 1.0, "2": 0.0}.get(it["label"][key], 0.5) for it in scored]
    return dict(zip(systems, bradley_terry_scores(first, second, outcome, len(systems))))


def test_scores_on_a_benchmark_with_known_strengths(tmp_path: Path, capsys) -> None:
    strengths = {"s2s-a": 6.0, "s2s-b": 3.0, "s2s-c": 2.0, "s2s-d": 1.0, "s2s-e": 0.7, "s2s-f": 0.4, "s2s-g": 0.15}
    bench, items = simulated_bench(tmp_path / "bench", strengths, 1500, seed=7)
    assert main(["leaderboard", "--bench", str(bench), "--out", str(tmp_path / "out")]) == 0
    board = json.loads((tmp_path / "out" / "leaderboard.json").read_text())
    rows = rows_by_system(board["sources"][0]["tables"]["overall"])
    reference = independent(items, board["systems"])
    for system, row in rows.items():
        assert row["score"]["value"] == pytest.approx(reference[system], abs=0.1)
    mean_log = np.mean(np.log(list(strengths.values())))
    truth = {s: 1000 + 400 * (np.log(v) - mean_log) / np.log(10) for s, v in strengths.items()}
    inside = [row["score"]["ci95"][0] <= truth[s] <= row["score"]["ci95"][1] for s, row in rows.items()]
    assert sum(inside) >= 6  # 95% intervals: all but perhaps one of seven hold the truth
    assert [r["system"] for r in board["sources"][0]["tables"]["overall"]["systems"]] == list(strengths)
    assert rows["s2s-a"]["rank"] == {"value": 1, "ci95": [1, 1]}
    printed = capsys.readouterr().out
    assert "overall, human labels: 1500 pairs" in printed and "s2s-a" in printed


def test_intervals_narrow_with_more_pairs(tmp_path: Path) -> None:
    strengths = {"a": 2.0, "b": 1.0, "c": 0.5}
    widths = []
    for pairs in (150, 1500):
        bench, _ = simulated_bench(tmp_path / f"b{pairs}", strengths, pairs, seed=1)
        row = rows_by_system(leaderboard(bench=bench, settings=QUICK)["sources"][0]["tables"]["overall"])["a"]
        widths.append(row["score"]["ci95"][1] - row["score"]["ci95"][0])
    assert widths[1] < widths[0] / 2.5  # about sqrt(10) narrower


RELEASED = os.environ.get("TRACE_RELEASE_DATA")


@pytest.mark.skipif(
    not RELEASED,
    reason="set TRACE_RELEASE_DATA to the data/ folder of the TRACE release "
    "(github.com/arjunchandra2/TRACE), which carries no licence to copy it here",
)
@pytest.mark.parametrize("name, systems, pairs", [("speakbench", 13, 497), ("s2sarena", 6, 314)])
def test_the_released_label_files(tmp_path: Path, name: str, systems: int, pairs: int) -> None:
    items = json.loads((Path(RELEASED) / f"{name}.json").read_text())
    bench = write_manifest(tmp_path / name, items)  # the file as it is, as a benchmark's manifest
    assert main(["leaderboard", "--bench", str(bench), "--by", "all", "--out", str(tmp_path / "out")]) == 0
    board = json.loads((tmp_path / "out" / "leaderboard.json").read_text())
    assert len(board["systems"]) == systems and board["items"]["ranked"] == pairs
    for key in ("overall", *DIMENSIONS):
        table = board["sources"][0]["tables"][key]
        assert table["pairs"] == pairs
        reference = independent(items, board["systems"], key)
        for row in table["systems"]:
            assert row["score"]["value"] == pytest.approx(reference[row["system"]], abs=0.1)


# ---------------------------------------------------------------- judge runs

QUOTE = "the quick brown fox jumps over the lazy dog"
UNRELATED = "sorry i did not catch that can you repeat"
# Per system: how often its answer says the quoted sentence, and how often its audio is clean. bravo says the
# right thing and sounds poor; charlie sounds clean and often says something else.
SYSTEMS = {"alpha": (0.9, 0.75), "bravo": (0.9, 0.3), "charlie": (0.45, 0.95), "delta": (0.35, 0.35)}
CLEAN, NOISY = 3.8, 2.0  # DNSMOS P.808: clean speech, and speech under heavy noise


def _answer(rng: np.random.Generator, system: str) -> tuple[bool, bool]:
    says, clean = SYSTEMS[system]
    return bool(rng.random() < says), bool(rng.random() < clean)


def _typed_tie(ok1: bool, ok2: bool) -> str:
    return G if ok1 and ok2 else B if not (ok1 or ok2) else "1" if ok1 else "2"


@pytest.fixture(scope="module")
def known_systems(tmp_path_factory) -> dict[str, Path]:
    """A benchmark of 240 pairs among four systems whose answers differ in known ways (blueprints written in
    the store), human labels following from how each answer was made, and three judge runs: the offline cues
    backbone, and through litellm against tests/llm_server.py a judge blind to content, once with --swap."""
    root = tmp_path_factory.mktemp("leaderboard")
    rng = np.random.default_rng(11)
    names = list(SYSTEMS)
    specs, systems = [], {}
    for n in range(240):
        a, b = rng.choice(len(names), 2, replace=False)
        (says_1, clean_1), (says_2, clean_2) = _answer(rng, names[a]), _answer(rng, names[b])
        dims = {
            "content": _typed_tie(says_1, says_2),
            "voice_quality": _typed_tie(clean_1, clean_2),
            "paralinguistics": G,
        }
        specs.append(
            PairSpec(
                id=f"p{n:03d}",
                instruction_text=f'Say "{QUOTE}" please (item {n}).',
                response_1=blueprint(QUOTE if says_1 else UNRELATED, p808=CLEAN if clean_1 else NOISY),
                response_2=blueprint(QUOTE if says_2 else UNRELATED, p808=CLEAN if clean_2 else NOISY),
                label={**dims, "overall": TRACE.fusion.fuse("cap", dims)},
            )
        )
        systems[f"p{n:03d}"] = (names[a], names[b])
    bench = write_benchmark(root / "bench", specs)
    manifest = json.loads((bench / "manifest.json").read_text())
    for entry in manifest:
        entry["model_a"], entry["model_b"] = systems[entry["id"]]
    manifest[-1].pop("model_b")  # one item that does not name both systems
    (bench / "manifest.json").write_text(json.dumps(manifest))

    def options(out: str, **extra) -> JudgeOptions:
        return JudgeOptions(
            bench=bench,
            cache_dir=root / "cache",
            out=root / out,
            progress=False,
            retry=RetryPolicy(max_retries=1, base_delay_s=0.01, max_delay_s=0.02),
            **extra,
        )

    run_judge(options("cues"), notice=lambda message: None)

    def blind(body: dict):
        """Voice quality from the P.808 scores in the order the prompt shows them; content and
        paralinguistics always both_good; item 7 never answers in JSON."""
        text = prompt_text(body)
        if "(item 7)" in text:
            return Reply("I cannot decide.")
        first, second = (float(v) for v in re.findall(r'"P808_Overall_Quality": ([0-9.]+)', text)[-2:])
        return Reply(verdict_json(G, _typed_tie(first > 2.7, second > 2.7), G))

    with LLMServer(responder=blind) as server:
        for out, swap in (("blind", False), ("blind-swap", True)):
            run_judge(
                options(out, model="openai/blind", api_base=server.api_base, api_key="dummy", swap=swap),
                notice=lambda message: None,
            )
    return {"bench": bench, "cues": root / "cues", "blind": root / "blind", "swap": root / "blind-swap"}


def _ranking(table: dict) -> list[str]:
    return [row["system"] for row in table["systems"]]


def test_a_judge_run_ranks_the_systems_as_they_were_made(known_systems) -> None:
    board = leaderboard([known_systems["cues"]], by="all", settings=QUICK)
    human, cues = board["sources"]
    assert (human["kind"], cues["kind"], cues["name"]) == ("human", "run", "cues")
    assert board["items"]["without_systems"] == 1 and board["items"]["without_systems_ids"] == ["p239"]
    # The cues rules recover every label of these blueprints, so the judge's tables are the human ones.
    for key in board["by"]:
        assert cues["tables"][key]["systems"] == human["tables"][key]["systems"]
    assert _ranking(cues["tables"]["overall"])[0] == "alpha" and _ranking(cues["tables"]["overall"])[-1] == "delta"
    # bravo wins on content and loses on voice quality against charlie; charlie the other way round.
    content, quality = (_ranking(cues["tables"][k]) for k in ("content", "voice_quality"))
    assert content.index("bravo") < content.index("charlie") and quality.index("charlie") < quality.index("bravo")
    accept = cues["acceptability"]
    assert accept["bravo"]["content"]["value"] > 0.75 and accept["bravo"]["voice_quality"]["value"] < 0.45
    assert accept["charlie"]["voice_quality"]["value"] > 0.85
    # The same labels on the same resampled pairs: the rank agreement is 1 in every resample.
    agreement = {entry["dimension"]: entry for entry in board["agreement"]}
    for key in ("overall", "content", "voice_quality"):
        assert agreement[key]["kendall_tau"]["value"] == 1.0 and agreement[key]["kendall_tau"]["ci95"] == [1.0, 1.0]
        assert agreement[key]["spearman_rho"]["ci95"] == [1.0, 1.0] and agreement[key]["same_top"] is True
    # Every answer is both_good on paralinguistics: every score is 1000, and no rank correlation exists.
    assert [row["score"]["value"] for row in human["tables"]["paralinguistics"]["systems"]] == [
        pytest.approx(1000.0)
    ] * 4
    assert agreement["paralinguistics"]["kendall_tau"] == {
        "value": None,
        "ci95": None,
        "reason": "undefined: one side gives every system one score",
    }


def test_a_judge_blind_to_content_ranks_by_voice_quality(known_systems) -> None:
    board = leaderboard(
        [known_systems["blind"], known_systems["swap"]], by=["overall", "voice_quality"], settings=QUICK
    )
    human, blind, swap = board["sources"]
    # Its overall label names the winner its voice quality label names (cap: content and paralinguistics are
    # both_good), so it ranks the systems by voice quality, where humans put charlie first, not alpha.
    overall = blind["tables"]["overall"]
    quality = rows_by_system(blind["tables"]["voice_quality"])
    for row in overall["systems"]:
        assert row["score"]["value"] == pytest.approx(quality[row["system"]]["score"]["value"])
        assert (row["wins"], row["losses"]) == (quality[row["system"]]["wins"], quality[row["system"]]["losses"])
    assert _ranking(overall)[0] == _ranking(human["tables"]["voice_quality"])[0] == "charlie"
    [agreement] = [a for a in board["agreement"] if a["run"] == "blind" and a["dimension"] == "overall"]
    assert agreement["same_top"] is False and agreement["top"] == {"judge": "charlie", "human": "alpha"}
    assert agreement["kendall_tau"]["value"] < 1.0
    # Item 7 failed: left out for its two systems and counted, never scored as a tie.
    a, b = _systems_of(known_systems["bench"], "p007")
    rows = rows_by_system(overall)
    assert rows[a]["left_out"]["failed"] == 1 and rows[b]["left_out"]["failed"] == 1
    assert overall["left_out"]["failed"] == 1 and overall["pairs"] == human["tables"]["overall"]["pairs"] - 1
    assert sum(r["pairs"] for r in overall["systems"]) == 2 * overall["pairs"]
    # Judged in both orders and swapped back: the same leaderboard.
    assert swap["tables"] == blind["tables"] and swap["acceptability"] == blind["acceptability"]


def _systems_of(bench: Path, item_id: str) -> tuple[str, str]:
    entry = next(e for e in json.loads((bench / "manifest.json").read_text()) if e["id"] == item_id)
    return entry["model_a"], entry["model_b"]


def test_undetermined_and_skipped_verdicts_are_counted_never_scored(known_systems, tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(
        json.dumps({"bench": str(known_systems["bench"]), "fusion": "cap", "rubric": "trace"})
    )
    lines = [
        {
            "id": "p000",
            "status": "ok",
            "verdicts": {"content": None, "voice_quality": "1", "paralinguistics": G},
            "undetermined": {"content": "transcript marked unreliable"},
        },
        {"id": "p001", "status": "skipped", "reason": "a clip has no blueprint", "verdicts": None},
        {"id": "p002", "status": "ok", "verdicts": {"content": "1", "voice_quality": "1", "paralinguistics": G}},
    ]
    (run / "results.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    board = leaderboard([run], by="all", settings=QUICK)
    source = board["sources"][1]
    overall, content, quality = (source["tables"][k] for k in ("overall", "content", "voice_quality"))
    assert overall["left_out"] == {
        "undetermined": 1,
        "not_trusted": 0,
        "failed": 0,
        "skipped": 1,
        "not_judged": 236,
        "no_label": 0,
    }
    assert overall["pairs"] == 1 and content["pairs"] == 1 and quality["pairs"] == 2
    first, second = _systems_of(known_systems["bench"], "p000")
    assert rows_by_system(content)[first]["left_out"]["undetermined"] == 1
    assert rows_by_system(quality)[first]["left_out"]["undetermined"] == 0
    assert rows_by_system(quality)[first]["wins"] >= 1


def test_the_command_writes_the_files_and_evaluate_adds_the_leaderboard(known_systems, tmp_path: Path, capsys) -> None:
    out = tmp_path / "board"
    assert (
        main(["leaderboard", str(known_systems["cues"]), "--by", "all", "--baseline", "delta", "--out", str(out)]) == 0
    )
    printed = capsys.readouterr().out
    assert "cues vs human, overall: Kendall tau 1.00" in printed and "top system the same" in printed
    board = json.loads((out / "leaderboard.json").read_text())
    assert board["version"] == 1 and board["by"] == ["overall", *DIMENSIONS] and board["baseline"] == "delta"
    with open(out / "leaderboard.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2 * 4 * 4  # sources x dimensions x systems
    assert {r["vs_baseline"] for r in rows if r["system"] == "delta"} == {""}
    with open(out / "win_matrix.csv", newline="") as f:
        matrix = list(csv.DictReader(f))
    assert {(r["system"], r["opponent"]) for r in matrix} >= {("alpha", "delta"), ("delta", "alpha")}
    markdown = (out / "leaderboard.md").read_text()
    for heading in (
        "## Overall",
        "### Human labels",
        "### Run cues",
        "## Acceptability",
        "## Rank agreement with the human labels",
        "## Win matrices",
    ):
        assert heading in markdown
    for picture in ("system_scores.png", "win_matrix.png"):
        assert (out / picture).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    assert main(["evaluate", str(known_systems["cues"]), "--out", str(tmp_path / "eval")]) == 0
    assert "leaderboard: cues vs human, overall: Kendall tau 1.00" in capsys.readouterr().out
    metrics = json.loads((tmp_path / "eval" / "metrics.json").read_text())
    assert metrics["leaderboard"]["version"] == 1 and metrics["leaderboard"]["by"] == ["overall", *DIMENSIONS]
    report = (tmp_path / "eval" / "report.html").read_text()
    # accuracy, fusion, confusion, distribution, the two leaderboard pictures, risk-coverage (cues confidences)
    assert "<h2>Leaderboard</h2>" in report and report.count('src="data:image/png;base64,') == 7


def test_command_errors(known_systems, tmp_path: Path, capsys) -> None:
    assert main(["leaderboard"]) == 2
    assert "give judge run folder(s) RUNDIR, or --bench DIR" in capsys.readouterr().err
    assert main(["leaderboard", "--bench", str(known_systems["bench"]), "--baseline", "zulu"]) == 2
    assert "no such system; the items name: alpha, bravo, charlie, delta" in capsys.readouterr().err
    assert main(["leaderboard", "--bench", str(known_systems["bench"]), "--resamples", "100"]) == 2
    assert "--resamples must be at least 1000" in capsys.readouterr().err
    # --fusion re-fuses every run's overall label; the run's own policy is kept beside it.
    refused = leaderboard([known_systems["cues"]], policy="vote", settings=QUICK)["sources"][1]
    assert (refused["fusion"], refused["run_fusion"]) == ("vote", "cap")
    # Several runs print, and write only where told.
    assert main(["leaderboard", str(known_systems["cues"]), str(known_systems["blind"])]) == 0
    assert "pass --out DIR" in capsys.readouterr().out


def test_a_tie_at_the_top_is_said_as_a_tie_never_as_agreement(tmp_path: Path, capsys) -> None:
    """People rank clear > quiet > wrong; the run ties clear and quiet (both_good between them)."""
    pairs = [("clear", "quiet", "1", G)] * 2 + [("clear", "wrong", "1", "1"), ("quiet", "wrong", "1", "1")] * 3
    items = [item(f"p{n}", a, b, (human,) * 4) for n, (a, b, human, _) in enumerate(pairs)]
    bench = write_manifest(tmp_path / "bench", items)
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"bench": str(bench), "fusion": "cap", "rubric": "trace"}))
    lines = [
        {"id": f"p{n}", "status": "ok", "verdicts": dict.fromkeys(DIMENSIONS, judged)}
        for n, (*_, judged) in enumerate(pairs)
    ]
    (run / "results.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert main(["leaderboard", str(run), "--resamples", "1000"]) == 0
    printed = capsys.readouterr().out
    board = json.loads((run / "leaderboard" / "leaderboard.json").read_text())
    [agreement] = [a for a in board["agreement"] if a["dimension"] == "overall"]
    assert agreement["tied_top"] == {"judge": ["clear", "quiet"], "human": ["clear"]}
    assert agreement["same_top"] is False
    # clear's answers: acceptable in all 5 of its judged pairs; a count's interval, never [100%, 100%].
    accepted = board["sources"][1]["acceptability"]["clear"]["overall"]
    assert (accepted["acceptable"], accepted["n"]) == (5, 5) and accepted["ci95"][0] == pytest.approx(0.5655, abs=1e-3)
    assert "top system clear and quiet (tied) (run) vs clear (human)" in printed
    assert "top system the same" not in printed
    assert "No single top system: clear and quiet tie at rank 1" in printed
    markdown = (run / "leaderboard" / "leaderboard.md").read_text()
    assert "clear and quiet (tied) / clear" in markdown and "No single top system" in markdown
