"""The guarantee of calibrate(), checked by simulation against judges of known confidence-dependent accuracy."""

from __future__ import annotations

import math

import numpy as np
import pytest

from trace_eval.evaluation.calibration import calibrate, coverage_at, first_count

LEVELS = np.round(np.arange(0.5, 1.0001, 0.05), 2)  # the confidences a simulated judge gives, equally often


def accuracy(confidence: np.ndarray) -> np.ndarray:
    """P(the verdict agrees with people | confidence): rises with confidence, 0.65 to 0.95."""
    return 0.35 + 0.6 * confidence


def population_agreement(threshold: float) -> float:
    """Agreement on all verdicts of confidence >= threshold, exactly (every level equally likely)."""
    above = LEVELS[LEVELS >= threshold - 1e-9]
    return float(accuracy(above).mean())


def draw(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    conf = rng.choice(LEVELS, size=n)
    return conf, rng.random(n) < accuracy(conf)


TARGET, DELTA = 0.85, 0.1


def test_the_model_has_a_boundary_near_the_target():
    # Thresholds 0.7 and above reach 85%, 0.65 does not: a careless threshold fails often.
    assert population_agreement(0.7) >= TARGET > population_agreement(0.65)


@pytest.mark.parametrize("n_calibration", [150, 500])
def test_agreement_on_new_pairs_falls_below_the_target_at_most_delta_of_the_time(n_calibration):
    rng = np.random.default_rng(n_calibration)
    splits, failures, test_failures, found = 1000, 0, 0, 0
    for _ in range(splits):
        conf, hits = draw(rng, n_calibration + 20000)
        cal = calibrate(conf[:n_calibration], hits[:n_calibration], TARGET, DELTA)
        if cal.threshold is None:
            continue  # abstaining everywhere never breaks the guarantee
        found += 1
        failures += population_agreement(cal.threshold) < TARGET
        test_conf, test_hits = conf[n_calibration:], hits[n_calibration:]
        test_failures += test_hits[test_conf >= cal.threshold].mean() < TARGET
    noise = 3 * math.sqrt(DELTA * (1 - DELTA) / splits)
    assert found > splits / 3  # the test has something to say
    assert failures / splits <= DELTA + noise
    assert test_failures / splits <= DELTA + noise


def test_picking_the_threshold_by_the_calibration_agreement_alone_fails_more_often():
    # The same splits without the test: the lowest threshold whose calibration agreement reaches the
    # target. Shows the simulation can tell a guarantee from none.
    rng = np.random.default_rng(7)
    failures = 0
    for _ in range(500):
        conf, hits = draw(rng, 150)
        passing = [t for t in LEVELS if hits[conf >= t].size and hits[conf >= t].mean() >= TARGET]
        failures += bool(passing) and population_agreement(min(passing)) < TARGET
    assert failures / 500 > 2 * DELTA


def test_coverage_grows_with_the_calibration_size():
    rng = np.random.default_rng(3)
    mean_coverage = []
    for n in (100, 300, 1000, 3000):
        coverages = []
        for _ in range(200):
            conf, hits = draw(rng, n)
            cal = calibrate(conf, hits, TARGET, DELTA)
            coverages.append(float(np.mean(LEVELS >= cal.threshold)) if cal.threshold is not None else 0.0)
        mean_coverage.append(float(np.mean(coverages)))
    assert mean_coverage == sorted(mean_coverage)
    assert mean_coverage[-1] > mean_coverage[0] + 0.1
    assert mean_coverage[-1] <= float(np.mean(LEVELS >= 0.7)) + 1e-9  # never beyond the best valid threshold


def test_no_threshold_is_said_plainly():
    rng = np.random.default_rng(0)
    conf = rng.random(300)
    hits = rng.random(300) < 0.6  # a judge right 60% of the time whatever it says
    cal = calibrate(conf, hits, TARGET, DELTA)
    assert cal.threshold is None and cal.trusted == 0 and cal.coverage == 0.0
    assert "no threshold meets 85% agreement" in cal.reason
    assert len(cal.tests) == 1 and not cal.tests[0].rejected


def test_too_few_labelled_pairs_say_how_many_the_target_needs():
    # Three labelled pairs, all agreeing: no threshold at 85% and delta 0.1, and the reason says what would do.
    cal = calibrate([0.9, 0.8, 0.7], [True] * 3, TARGET, DELTA)
    assert cal.threshold is None and cal.pairs_needed == first_count(TARGET, DELTA) == 30
    assert "3 verdict(s) with a confidence; a threshold at 85% with delta 0.1 needs at least 15 verdicts" in cal.reason
    assert "label at least 27 more pairs" in cal.reason
    # Enough verdicts but too many disagreements: more pairs are no sure cure, and the reason does not say they are.
    rng = np.random.default_rng(0)
    weak = calibrate(rng.random(300), rng.random(300) < 0.6, TARGET, DELTA)
    assert weak.pairs_needed == 30 and "more pairs" not in weak.reason.split(";")[0]


def test_fixed_sequence_stops_at_the_first_non_rejection():
    # Top 30 all agree (rejected), then a block of disagreements: the sequence stops there even though a
    # lower threshold would pass again.
    conf = [0.99] * 30 + [0.9] * 20 + [0.5] * 300
    agree = [True] * 30 + [False] * 20 + [True] * 300
    cal = calibrate(conf, agree, 0.8, 0.1)
    assert cal.threshold == 0.99 and cal.trusted == 30 and cal.agreement == 1.0
    assert [t.rejected for t in cal.tests] == [True, False]
    assert cal.tests[0].p_value == pytest.approx(0.8**30)


def test_the_first_threshold_tested_has_enough_verdicts_to_pass():
    # 0.8**10 > 0.1: ten verdicts that all agree cannot show 80%; the sequence starts lower.
    assert first_count(0.8, 0.1) == 22
    conf = [0.99] * 10 + [0.9] * 40
    cal = calibrate(conf, [True] * 50, 0.8, 0.1)
    assert cal.tests[0].threshold == 0.9 and cal.tests[0].n == 50 and cal.threshold == 0.9


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="target"):
        calibrate([0.9], [True], 1.5, 0.1)
    with pytest.raises(ValueError, match="one agreement per confidence"):
        calibrate([0.9, 0.8], [True], 0.8, 0.1)
    assert calibrate([], [], 0.8, 0.1).reason.startswith("no calibration verdicts")
    assert coverage_at([0.9, None, 0.5], 0.8) == pytest.approx(1 / 3)
