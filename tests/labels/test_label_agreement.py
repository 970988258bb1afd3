"""People's agreement with each other, checked against independent computations: scikit-learn's
cohen_kappa_score and the krippendorff package."""

from __future__ import annotations

import random

import pytest

from trace_eval.labels.agreement import ceiling, cohen_kappa, judge_beside_people, krippendorff_alpha, position_bias
from trace_eval.rubrics import load_rubric
from trace_eval.rubrics.labels import label_space

LABELS = ("1", "2", "both_good", "both_bad")


def simulated(n: int = 80, seed: int = 3) -> dict[str, dict[str, dict[str, str]]]:
    """Three annotators who follow a hidden truth 70% of the time; the third skips every fifth item."""
    rng = random.Random(seed)
    truth = [rng.choice(LABELS) for _ in range(n)]
    people: dict[str, dict[str, dict[str, str]]] = {}
    for who in ("ann", "bob", "cat"):
        people[who] = {
            f"p{i:03d}": {"overall": t if rng.random() < 0.7 else rng.choice(LABELS)}
            for i, t in enumerate(truth)
            if not (who == "cat" and i % 5 == 0)
        }
    return people


def test_cohen_kappa_equals_scikit_learn():
    sklearn = pytest.importorskip("sklearn.metrics")
    people = simulated()
    for a, b in (("ann", "bob"), ("ann", "cat"), ("bob", "cat")):
        items = sorted(set(people[a]) & set(people[b]))
        x = [people[a][i]["overall"] for i in items]
        y = [people[b][i]["overall"] for i in items]
        assert cohen_kappa(x, y) == pytest.approx(sklearn.cohen_kappa_score(x, y), abs=1e-12)
    assert cohen_kappa(["1", "1"], ["1", "1"]) is None  # undefined, never 0 or NaN


def test_krippendorff_alpha_equals_the_krippendorff_package():
    krippendorff = pytest.importorskip("krippendorff")
    np = pytest.importorskip("numpy")
    people = simulated()
    items = sorted({i for got in people.values() for i in got})
    code = {label: k for k, label in enumerate(LABELS)}
    data = np.array(
        [[code[got[i]["overall"]] if i in got else np.nan for i in items] for got in people.values()], dtype=float
    )
    units = [[got[i]["overall"] for got in people.values() if i in got] for i in items]
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    assert krippendorff_alpha(units) == pytest.approx(expected, abs=1e-12)
    scores = [[1, 2, 2], [4, 5], [3, 3, 1], [5, 4, 4], [2, 2]]
    matrix = np.full((3, len(scores)), np.nan)
    for j, unit in enumerate(scores):
        matrix[: len(unit), j] = unit
    interval = krippendorff.alpha(reliability_data=matrix, level_of_measurement="interval")
    assert krippendorff_alpha(scores, numeric=True) == pytest.approx(interval, abs=1e-12)


def test_the_ceiling_report_has_intervals_and_leave_one_out():
    people = simulated()
    spaces = {"overall": label_space("typed-tie")}
    report = ceiling(people, spaces, resamples=200)
    section = report["dimensions"]["overall"]
    assert section["items"] == 80 and section["annotators"] == ["ann", "bob", "cat"]
    for key in ("raw_agreement", "krippendorff_alpha", "leave_one_out"):
        low, high = section[key]["interval"]
        assert low <= section[key]["value"] <= high, key
    assert len(section["cohen_kappa"]) == 3
    assert 0.3 < section["leave_one_out"]["value"] < 0.95
    # A judge that copies ann agrees with the others' majority as ann does, and better than chance.
    judge = {i: dict(v) for i, v in people["ann"].items()}
    beside = judge_beside_people(people, judge, spaces, resamples=200)["overall"]
    assert beside["judge"]["value"] > 0.4 and beside["people"]["value"] > 0.4


def test_position_bias_reads_labels_in_the_order_shown():
    annotators = {"ann": {"a": {"overall": "1"}, "b": {"overall": "1"}, "c": {"overall": "both_bad"}}}
    shown = {"ann": {"a": ["1", "2"], "b": ["2", "1"], "c": ["1", "2"]}}
    bias = position_bias(shown, annotators)
    # a: response 1 shown first and chosen (first); b: response 1 shown second and chosen (second)
    assert bias["annotators"]["ann"] == {"first": 1, "winners": 2, "share_first": 0.5}


def test_every_bundled_rubric_has_a_label_space_per_dimension():
    for name in ("trace", "multi-aspect", "roleplay"):
        assert load_rubric(name).spaces()
