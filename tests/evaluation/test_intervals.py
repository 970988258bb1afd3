"""Bootstrap intervals of the rubric metrics: they hold the estimate, narrow as items are added,
repeat for a seed, come out by hand in degenerate cases, and are null with a reason where
they cannot be computed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from trace_eval.cli import main
from trace_eval.evaluation.bootstrap import BootstrapSettings, PairedBootstrap, pearson_statistic
from trace_eval.evaluation.records import HumanLabels, JudgeRun
from trace_eval.evaluation.rubric_report import evaluate_rubric_runs
from trace_eval.judge.runfolder import RunFolder
from trace_eval.rubrics import load_rubric

MULTI, ROLEPLAY, STYLE = (load_rubric(name) for name in ("multi-aspect", "roleplay", "style"))
SETTINGS = BootstrapSettings(resamples=2000, seed=0)


def _run(verdicts: dict[str, dict], name: str = "run", orders: dict[str, dict] | None = None) -> JudgeRun:
    raws = {
        item: {
            "id": item,
            "status": "ok",
            "verdicts": labels,
            **({"orders": orders[item]} if orders and item in orders else {}),
        }
        for item, labels in verdicts.items()
    }
    return JudgeRun(name, RunFolder(Path(name), {}, raws, [], {}))


def _human(labels: dict[str, dict], systems: dict[str, str] | None = None) -> HumanLabels:
    return HumanLabels(labels, systems or dict.fromkeys(labels), [], Path("manifest.json"))


def _evaluate(rubric, runs: list[JudgeRun], human: HumanLabels, settings: BootstrapSettings = SETTINGS) -> dict:
    metrics = evaluate_rubric_runs(runs, rubric, human, settings)
    json.dumps(metrics, allow_nan=False)  # never a NaN in metrics.json
    return metrics


def _noisy_scores(n: int, seed: int = 3) -> tuple[list[int], list[int]]:
    """Human scores 1..5 and judge scores that are off by one about half the time."""
    rng = np.random.default_rng(seed)
    human = rng.integers(1, 6, size=n)
    judge = np.clip(human + rng.choice([-1, 0, 0, 1], size=n), 1, 5)
    return [int(j) for j in judge], [int(h) for h in human]


def _scored_case(n: int, dims: tuple[str, ...]) -> tuple[list[JudgeRun], HumanLabels]:
    """n items scored on `dims` by a judge and by humans, made by two systems in turn."""
    judge, human = _noisy_scores(n)
    return (
        [_run({f"i{k}": dict.fromkeys(dims, judge[k]) for k in range(n)})],
        _human(
            {f"i{k}": dict.fromkeys(dims, human[k]) for k in range(n)},
            {f"i{k}": "alpha" if k % 2 else "bravo" for k in range(n)},
        ),
    )


def _roleplay_case(n: int) -> tuple[list[JudgeRun], HumanLabels]:
    return _scored_case(n, ("logical_coherence", "style_alignment"))


def _style_case(n: int) -> tuple[list[JudgeRun], HumanLabels]:
    return _scored_case(n, ("style_following",))


def _width(interval: dict) -> float:
    low, high = interval["ci95"]
    return high - low


def test_all_correct_gives_one_to_one_and_no_error_zero_to_zero():
    labels = {f"i{k}": {"logical_coherence": 1 + k % 5, "content_relevance": 5 - k % 5} for k in range(12)}
    run = _evaluate(ROLEPLAY, [_run(labels)], _human(labels))["runs"][0]
    for slot in ("logical_coherence", "content_relevance", "all"):
        assert run["intervals"]["accuracy"][slot] == {"ci95": [1.0, 1.0]}
        assert run["intervals"]["mae"][slot] == {"ci95": [0.0, 0.0]}


def test_every_interval_holds_its_estimate_and_narrows_with_more_items():
    def intervals(n: int) -> list[tuple[float, dict]]:
        """(estimate, interval) of each metric with an interval, on n items."""
        roleplay = _evaluate(ROLEPLAY, *_roleplay_case(n))["runs"][0]
        found = [
            (roleplay["metrics"][m][s]["value"], roleplay["intervals"][m][s])
            for m in ("accuracy", "mae")
            for s in ("logical_coherence", "all")
        ]
        style = _evaluate(STYLE, *_style_case(n))["runs"][0]
        found.append(
            (style["metrics"]["pearson"]["style_following"]["value"], style["intervals"]["pearson"]["style_following"])
        )
        systems = style["metrics"]["system_means"]["style_following"]["systems"]
        system_intervals = style["intervals"]["system_means"]["style_following"]["systems"]
        found += [
            (systems[system][side], system_intervals[system][side])
            for system in ("alpha", "bravo")
            for side in ("judge", "human")
        ]
        return found

    small, large = intervals(30), intervals(480)
    for (value, interval), (big_value, big_interval) in zip(small, large):
        for v, i in ((value, interval), (big_value, big_interval)):
            assert i["ci95"][0] <= v <= i["ci95"][1]
        assert _width(big_interval) < _width(interval) / 2  # 16 times the items: about a quarter of the width


def test_pairwise_agreement_and_position_consistency_get_intervals():
    rng = np.random.default_rng(5)
    dims = ("truthfulness", "honesty")
    judged, human, orders = {}, {}, {}
    for k in range(60):
        said = {d: str(rng.choice(["1", "2", "tie"])) for d in dims}
        judged[f"p{k}"] = said
        human[f"p{k}"] = {d: said[d] if rng.random() < 0.7 else "1" for d in dims}
        orders[f"p{k}"] = {"original": said, "swapped": {d: said[d] if rng.random() < 0.8 else "tie" for d in dims}}
    run = _evaluate(MULTI, [_run(judged, orders=orders)], _human(human))["runs"][0]
    for metric in ("accuracy", "agreement", "position_consistency"):
        for slot in (*dims, "all"):
            low, high = run["intervals"][metric][slot]["ci95"]
            assert 0 <= low < run["metrics"][metric][slot]["value"] < high <= 1, (metric, slot)
    assert run["intervals"]["accuracy"]["helpfulness"] == {
        "ci95": None,
        "reason": "no item has both a judge label and a human label on this dimension",
    }


def test_intervals_repeat_for_a_seed_and_change_with_another():
    runs, human = _style_case(40)
    first, again = (_evaluate(STYLE, runs, human, BootstrapSettings(seed=7)) for _ in range(2))
    other = _evaluate(STYLE, runs, human, BootstrapSettings(seed=8))
    assert first["runs"][0]["intervals"] == again["runs"][0]["intervals"]
    # Pearson's r takes many values, so another seed moves its percentiles
    assert first["runs"][0]["intervals"]["pearson"] != other["runs"][0]["intervals"]["pearson"]
    assert first["bootstrap"]["seed"] == 7 and first["bootstrap"]["resamples"] == 2000


def test_runs_are_resampled_together():
    runs, human = _roleplay_case(40)
    twin = JudgeRun("twin", RunFolder(Path("twin"), {}, runs[0].raws, [], {}))
    both = _evaluate(ROLEPLAY, [runs[0], twin], human)["runs"]
    alone = _evaluate(ROLEPLAY, runs, human)["runs"][0]
    assert both[0]["intervals"] == both[1]["intervals"] == alone["intervals"]  # the same draws of the same items


def test_uncomputable_intervals_are_null_with_their_reason():
    labels = {f"p{k}": {"truthfulness": "1"} for k in range(5)}
    run = _evaluate(MULTI, [_run(labels)], _human(labels))["runs"][0]
    unswapped = run["intervals"]["position_consistency"]["truthfulness"]
    assert unswapped["ci95"] is None and "--swap" in unswapped["reason"]

    constant = {f"s{k}": {"style_following": 3} for k in range(5)}
    varied = {f"s{k}": {"style_following": 1 + k} for k in range(5)}
    run = _evaluate(STYLE, [_run(constant)], _human(varied, dict.fromkeys(varied, "alpha")))["runs"][0]
    assert run["intervals"]["pearson"]["style_following"] == {
        "ci95": None,
        "reason": "undefined: the judge gave every item the same score",
    }

    one = {"s0": {"style_following": 4}}
    run = _evaluate(STYLE, [_run(one)], _human(one, {"s0": "alpha"}))["runs"][0]
    assert run["intervals"]["system_means"]["style_following"]["systems"]["alpha"]["judge"] == {
        "ci95": None,
        "reason": "one item: nothing to resample",
    }


def test_pearson_from_totals_is_scipys_and_undefined_where_it_should_be():
    judge, human = _noisy_scores(25)
    boot = PairedBootstrap(25)
    boot.add_pearson("r", np.array(judge), np.array(human), np.ones(25))
    estimate = boot.estimate(SETTINGS)["r"]
    assert estimate.value == pytest.approx(stats.pearsonr(judge, human).statistic)

    def r(x, y):
        x, y = np.array(x, dtype=float), np.array(y, dtype=float)
        return pearson_statistic(np.array([len(x), x.sum(), y.sum(), (x * x).sum(), (y * y).sum(), (x * y).sum()]))

    assert r([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert np.isnan(r([1, 2], [1, 2]))  # fewer than three items
    assert np.isnan(r([4, 4, 4], [1, 2, 3]))  # the judge is constant


def _write_roleplay_run(root: Path) -> Path:
    judge, human = _noisy_scores(30)
    bench = root / "bench"
    bench.mkdir()
    manifest = [
        {
            "id": f"i{k}",
            "instruction_text": "hi",
            "audio_path": f"i{k}.wav",
            "model": "alpha",
            "label": {"logical_coherence": human[k]},
        }
        for k in range(30)
    ]
    (bench / "manifest.json").write_text(json.dumps(manifest))
    run = root / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"rubric": "roleplay", "bench": str(bench)}))
    (run / "results.jsonl").write_text(
        "".join(
            json.dumps({"id": f"i{k}", "status": "ok", "verdicts": {"logical_coherence": judge[k]}}) + "\n"
            for k in range(30)
        )
    )
    return run


def test_evaluate_passes_resamples_and_seed_to_rubric_runs(tmp_path, capsys):
    run = _write_roleplay_run(tmp_path)
    assert main(["evaluate", str(run), "--resamples", "2500", "--seed", "11"]) == 0, capsys.readouterr().err
    metrics = json.loads((run / "evaluation" / "metrics.json").read_text(), parse_constant=pytest.fail)
    assert metrics["bootstrap"]["resamples"] == 2500 and metrics["bootstrap"]["seed"] == 11
    interval = metrics["runs"][0]["intervals"]["accuracy"]["logical_coherence"]["ci95"]
    shown = f"[{interval[0] * 100:.1f}–{interval[1] * 100:.1f}]"
    for report in ("report.md", "report.html"):
        text = (run / "evaluation" / report).read_text()
        assert "2500 resamples, seed 11" in text and shown in text, report


def test_a_rubric_listing_kappa_gets_it_with_intervals_from_the_same_engine():
    from dataclasses import replace

    from trace_eval.evaluation import metrics

    rubric = replace(MULTI, metrics=("accuracy", "kappa"))  # what a rubric file listing them gives
    rng = np.random.default_rng(11)
    judged, human = {}, {}
    for k in range(80):
        said = str(rng.choice(["1", "2", "tie"]))
        judged[f"p{k}"] = {"truthfulness": said, "honesty": "tie"}
        human[f"p{k}"] = {
            "truthfulness": said if rng.random() < 0.6 else str(rng.choice(["1", "2", "tie"])),
            "honesty": "tie",
        }
    run = _evaluate(rubric, [_run(judged)], _human(human))["runs"][0]
    pairs = [(judged[i]["truthfulness"], human[i]["truthfulness"]) for i in judged]
    expected = metrics.cohen_kappa([j for j, _ in pairs], [h for _, h in pairs], ("1", "2", "tie"))
    slot = run["metrics"]["kappa"]["truthfulness"]
    assert slot == {"value": pytest.approx(expected), "n": 80} and 0.2 < expected < 0.9
    low, high = run["intervals"]["kappa"]["truthfulness"]["ci95"]
    assert low < expected < high
    # Accuracy and kappa of one run come from the same draws: a second evaluation repeats both.
    assert _evaluate(rubric, [_run(judged)], _human(human))["runs"][0]["intervals"] == run["intervals"]
    # Both raters always saying tie: kappa is undefined, with the reason, never NaN.
    assert run["metrics"]["kappa"]["honesty"]["value"] is None
    assert "chance agreement is total" in run["metrics"]["kappa"]["honesty"]["reason"]
    assert run["intervals"]["kappa"]["honesty"]["ci95"] is None
    assert run["metrics"]["kappa"]["helpfulness"]["reason"].startswith("no item has both")


def test_a_proportion_gets_a_wilson_interval_never_a_point_on_a_small_sample():
    from trace_eval.evaluation.engine import Estimates
    from trace_eval.evaluation.metrics import wilson_interval

    ids = [f"i{k}" for k in range(6)]
    estimates = Estimates(ids)
    every = np.ones(6, dtype=bool)
    all_right = estimates.proportion("six", every, every, "none")
    three_of_four = estimates.proportion("four", np.array([1, 1, 1, 0, 0, 0], bool), every & (np.arange(6) < 4), "")
    estimates.fill(SETTINGS)
    # 6 of 6 was shown as 100.0% [100.0-100.0]: the interval now says how little six pairs show.
    assert all_right["value"] == 1.0 and all_right["ci95"][0] == pytest.approx(0.6097, abs=1e-4)
    assert all_right["ci95"][1] == 1.0
    # One count, one interval: 3 of 4 is the same interval wherever it is computed.
    assert three_of_four["ci95"] == list(wilson_interval(3, 4))
    assert three_of_four["ci95"][0] == pytest.approx(0.3006, abs=1e-4)
