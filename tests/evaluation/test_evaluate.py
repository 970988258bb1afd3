"""Evaluation: metrics against hand-computed values, bootstrap behaviour, probes,
and the report files written from judge run folders."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

from trace_eval.cli import main
from trace_eval.evaluation import BootstrapSettings, evaluate_runs, load_run, metrics, oracle, probes
from trace_eval.evaluation.bootstrap import PairedBootstrap
from trace_eval.rubrics import load_rubric

TRACE = load_rubric("trace")

G, B = "both_good", "both_bad"

# ---------------------------------------------------------------- metrics


def test_accuracy_and_tie_collapse_on_a_hand_set() -> None:
    human = ["1", "2", G, B, "1"]
    predicted = ["1", "1", B, B, "1"]
    assert metrics.accuracy(predicted, human) == metrics.Proportion(3, 5)
    collapsed = metrics.accuracy(
        [metrics.collapse_ties(p) for p in predicted], [metrics.collapse_ties(h) for h in human]
    )
    assert collapsed == metrics.Proportion(4, 5)  # both_good vs both_bad is one tie
    assert metrics.Proportion(0, 0).value is None


def test_confusion_matrix_rows_are_human_columns_predicted() -> None:
    matrix = metrics.confusion_matrix(["2", "2", G], ["1", "2", G])
    assert matrix[0, 1] == 1 and matrix[1, 1] == 1 and matrix[2, 2] == 1 and matrix.sum() == 3


def _raters(table: dict[tuple[str, str], int]) -> tuple[list[str], list[str]]:
    a, b = [], []
    for (x, y), count in table.items():
        a += [x] * count
        b += [y] * count
    return a, b


@pytest.mark.parametrize(
    "table, expected",
    [
        # 50 items, yes/yes 20, yes/no 5, no/yes 10, no/no 15: kappa = 0.4 (the standard worked example).
        ({("1", "1"): 20, ("1", "2"): 5, ("2", "1"): 10, ("2", "2"): 15}, 0.4),
        # Same observed agreement 0.6 with skewed marginals: kappa = 0.1304.
        ({("1", "1"): 45, ("1", "2"): 15, ("2", "1"): 25, ("2", "2"): 15}, 0.130435),
        # Agreement exactly at chance level.
        ({("1", "1"): 25, ("1", "2"): 25, ("2", "1"): 25, ("2", "2"): 25}, 0.0),
    ],
)
def test_cohen_kappa_textbook_cases(table, expected) -> None:
    a, b = _raters(table)
    assert metrics.cohen_kappa(a, b) == pytest.approx(expected, abs=1e-5)


def test_cohen_kappa_perfect_and_undefined() -> None:
    assert metrics.cohen_kappa(["1", "2", G, B], ["1", "2", G, B]) == pytest.approx(1.0)
    assert metrics.cohen_kappa(["1", "1"], ["1", "1"]) is None  # chance agreement is total
    assert metrics.cohen_kappa([], []) is None


def test_mcnemar_chi_square_textbook_case() -> None:
    # Agresti's presidential-approval table: discordant 150 and 86, statistic 17.36 without correction.
    plain = metrics.mcnemar(150, 86, continuity=False)
    assert plain.method == "chi2"
    assert plain.statistic == pytest.approx(17.356, abs=1e-3)
    assert plain.p_value == pytest.approx(3.1e-5, rel=0.01)
    corrected = metrics.mcnemar(150, 86)
    assert corrected.statistic == pytest.approx(63**2 / 236)
    assert corrected.p_value > plain.p_value


@pytest.mark.parametrize(
    "only_a, only_b, p",
    [(1, 9, 22 / 1024), (0, 5, 2 / 32), (3, 3, 1.0), (0, 0, 1.0), (2, 10, 2 * (1 + 12 + 66) / 4096)],
)
def test_mcnemar_exact_binomial_when_few_discordant(only_a, only_b, p) -> None:
    result = metrics.mcnemar(only_a, only_b)
    assert result.method == "exact"
    assert result.p_value == pytest.approx(p)
    assert metrics.mcnemar(only_b, only_a).p_value == pytest.approx(p)


def test_bootstrap_interval_contains_the_estimate_and_shrinks_with_n() -> None:
    settings = BootstrapSettings(resamples=2000, seed=3)
    widths = []
    for n in (40, 400, 4000):
        correct = np.arange(n) % 10 < 7  # exactly 70% correct
        boot = PairedBootstrap(n)
        boot.add_ratio("acc", correct, np.ones(n, dtype=bool))
        estimate = boot.estimate(settings)["acc"]
        assert estimate.value == pytest.approx(0.7)
        low, high = estimate.interval
        assert low < 0.7 < high
        widths.append(high - low)
    assert widths[0] > widths[1] > widths[2]
    assert widths[2] < 0.04  # about 2 * 1.96 * sqrt(.21 / 4000) = 0.028


def test_bootstrap_is_seeded_and_paired() -> None:
    rng = np.random.default_rng(0)
    a = rng.random(300) < 0.6
    b = a.copy()
    b[:30] = ~b[:30]
    eligible = np.ones(300, dtype=bool)

    def run(seed: int):
        boot = PairedBootstrap(300)
        boot.add_ratio("a", a, eligible)
        boot.add_ratio("a again", a, eligible)
        boot.add_difference("a-b", a, b, eligible)
        return boot.estimate(BootstrapSettings(resamples=2000, seed=seed))

    first, again, other = run(1), run(1), run(2)
    assert first == again
    assert first["a"].interval != other["a"].interval
    assert first["a"].interval == first["a again"].interval  # the same draws for every column
    # Paired: the difference's interval is far narrower than either accuracy's.
    low, high = first["a-b"].interval
    assert low <= first["a-b"].value <= high
    assert high - low < (first["a"].interval[1] - first["a"].interval[0]) * 0.75


def test_bootstrap_totals_resample_every_item_count() -> None:
    totals = metrics.bootstrap_totals(np.ones((17, 1)), resamples=300, seed=0, chunk=64)
    assert totals.shape == (300, 1) and np.all(totals == 17)


# ---------------------------------------------------------------- probes


def _v(c: str, vq: str, p: str) -> dict[str, str]:
    return {"content": c, "voice_quality": vq, "paralinguistics": p}


def test_content_counterfactual_reports_the_deciding_dimension() -> None:
    assert probes.content_counterfactual(TRACE, "content-first", _v("1", "2", G)) == ("2", "voice_quality")
    assert probes.content_counterfactual(TRACE, "content-first", _v("1", "2", "1")) == ("1", "paralinguistics")
    assert probes.content_counterfactual(TRACE, "content-first", _v(B, G, B)) == (G, "tie")
    assert probes.content_counterfactual(TRACE, "cap", _v("2", "1", B)) == (B, "tie")


def test_flips_set_one_dimension_to_both_good() -> None:
    assert probes.flips(TRACE, "content-first-strict", _v(B, "1", B)) == {
        "content": "1",
        "voice_quality": B,
        "paralinguistics": "1",
    }


# ---------------------------------------------------------------- runs and reports

HUMAN = {  # id: (C, VQ, P, overall)
    "0": ("1", "1", "1", "1"),
    "1": ("2", "1", G, "2"),
    "2": (G, "2", "1", "1"),
    "3": (B, B, B, B),
    "4": (G, G, G, G),
    "5": ("1", "2", "2", "2"),
    "6": (B, "1", B, B),
    "7": ("2", "2", "2", "2"),
    "8": ("1", "1", "1", "1"),  # judged by no run
}
RUN_A = {  # fused with content-first-strict: 1, 2, 2, B, B, 1, 2
    "0": ("1", "1", "1"),
    "1": (G, "1", "2"),
    "2": (G, "2", G),
    "3": (B, "1", B),
    "4": (B, G, G),
    "5": ("1", "2", "2"),
    "6": (B, "1", "2"),
}


def write_bench(root: Path, labels: dict[str, tuple[str, ...]] = HUMAN) -> Path:
    items = [
        {
            "index": int(item_id),
            "instruction_path": f"audio/{item_id}/instruction.wav",
            "audio1_path": f"audio/{item_id}/a.wav",
            "audio2_path": f"audio/{item_id}/b.wav",
            "label": dict(zip(("content", "voice_quality", "paralinguistics", "overall"), label)),
        }
        for item_id, label in labels.items()
    ]
    root.mkdir(parents=True, exist_ok=True)
    (root / "manifest.json").write_text(json.dumps(items))
    return root


def write_run(
    folder: Path,
    bench: Path,
    verdicts: dict[str, tuple[str, str, str]],
    failed: dict[str, str] | None = None,
    policy: str = "content-first-strict",
    extra_lines: tuple[str, ...] = (),
) -> Path:
    """A run folder as the judge writes it (config.json, results.jsonl, summary.json)."""
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(
        json.dumps({"bench": str(bench), "model": "offline", "fusion": policy, "judge": "cues"})
    )
    lines = []
    for item_id, (c, vq, p) in verdicts.items():
        fused = TRACE.fusion.fuse_all(_v(c, vq, p))
        lines.append(
            {
                "id": item_id,
                "status": "ok",
                "reason": None,
                "verdicts": _v(c, vq, p),
                "fused": fused,
                "overall": fused.get(policy),
                "reasoning": {},
                "raw": "{}",
                "tokens": 0,
                "cost": 0.0,
                "latency": 0.01,
                "cache_hit": False,
            }
        )
    for item_id, reason in (failed or {}).items():
        lines.append(
            {"id": item_id, "status": "error", "reason": reason, "verdicts": None, "fused": {}, "overall": None}
        )
    text = "\n".join(json.dumps(line) for line in lines) + "\n" + "".join(line + "\n" for line in extra_lines)
    (folder / "results.jsonl").write_text(text)
    (folder / "summary.json").write_text("{}")
    return folder


def human_labels() -> dict[str, dict[str, str]]:
    keys = ("content", "voice_quality", "paralinguistics", "overall")
    return {i: dict(zip(keys, labels)) for i, labels in HUMAN.items()}


@pytest.fixture
def two_runs(tmp_path: Path) -> tuple[Path, Path, Path]:
    bench = write_bench(tmp_path / "bench")
    run_a = write_run(
        tmp_path / "run-a",
        bench,
        RUN_A,
        failed={"7": "backbone timed out"},
        extra_lines=(
            '{"id": "99", "status": "ok", "verdicts": {"content": "1", "voice_quality": "1", "paralinguistics": "1"}}',
            "not json",
        ),
    )
    run_b = write_run(tmp_path / "run-b", bench, {i: HUMAN[i][:3] for i in map(str, range(8))})
    return bench, run_a, run_b


def test_metrics_match_hand_computed_values(two_runs) -> None:
    _, run_a, run_b = two_runs
    result = evaluate_runs(
        [load_run(run_a), load_run(run_b)], TRACE, human_labels(), settings=BootstrapSettings(resamples=2000)
    )
    assert result["items"]["evaluated"] == 8  # item 8 was judged by no run
    a = result["runs"][0]

    def counts(slot):
        return slot["correct"], slot["n"]

    assert counts(a["accuracy"]["4way"]) == (3, 7)
    assert counts(a["accuracy"]["3way"]) == (4, 7)
    assert counts(a["accuracy"]["2way"]) == (2, 4)
    assert {d: counts(s) for d, s in a["per_dimension"].items()} == {
        "content": (5, 7),
        "voice_quality": (6, 7),
        "paralinguistics": (4, 7),
    }
    assert a["kappa"]["overall"]["value"] == pytest.approx(0.2)
    assert a["items"]["failed"] == 1 and a["items"]["not_in_benchmark"] == 1
    assert a["no_verdict"] == [{"id": "7", "status": "failed", "reason": "backbone timed out"}]
    assert any("not JSON" in p for p in a["problems"])

    table = {name: counts(row["4way"]) for name, row in a["fusion_table"].items()}
    assert table == {"content-first": (2, 7), "content-first-strict": (3, 7), "cap": (4, 7), "vote": (5, 7)}

    probe = a["probes"]
    assert counts(probe["winner_on_bad"]) == (1, 2)
    assert counts(probe["winner_slice_accuracy"]) == (2, 5)
    cf = probe["content_counterfactual"]
    assert counts(cf["accuracy"]) == (4, 7)
    assert counts(cf["changed"]) == (3, 7)
    assert {d: (counts(e["share"]), counts(e["accuracy"])) for d, e in cf["deciders"].items()} == {
        "paralinguistics": ((4, 7), (3, 4)),
        "voice_quality": ((2, 7), (0, 2)),
        "tie": ((1, 7), (1, 1)),
    }
    assert {d: counts(f["flipped"]) for d, f in probe["flip_rates"].items()} == {
        "content": (3, 7),
        "voice_quality": (1, 7),
        "paralinguistics": (3, 7),
    }

    b = result["runs"][1]
    assert counts(b["accuracy"]["4way"]) == (7, 8)
    [comparison] = result["comparisons"]
    assert (comparison["n"], comparison["only_a_correct"], comparison["only_b_correct"]) == (7, 0, 3)
    assert comparison["method"] == "exact" and comparison["p_value"] == pytest.approx(0.25)
    assert comparison["accuracy_difference"]["value"] == pytest.approx(-3 / 7)

    for slot in (a["accuracy"]["4way"], a["per_dimension"]["content"], probe["winner_slice_accuracy"]):
        low, high = slot["ci95"]
        assert low <= slot["value"] <= high


def test_fusion_override_refuses_everything_with_one_policy(two_runs) -> None:
    _, run_a, _ = two_runs
    result = evaluate_runs([load_run(run_a)], TRACE, human_labels(), policy="vote")
    assert result["runs"][0]["fusion"] == "vote"
    assert (result["runs"][0]["accuracy"]["4way"]["correct"], result["runs"][0]["accuracy"]["4way"]["n"]) == (5, 7)


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def _strict_json(path: Path):
    def refuse(constant):
        raise AssertionError(f"{path} holds {constant}")

    return json.loads(path.read_text(), parse_constant=refuse)


def test_cli_writes_report_files_and_pictures(two_runs, tmp_path: Path, capsys) -> None:
    _, run_a, run_b = two_runs
    out = tmp_path / "report"
    assert main(["evaluate", str(run_a), str(run_b), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "run-a: 4-way 42.9%" in printed and "McNemar" in printed

    metrics_json = _strict_json(out / "metrics.json")
    assert metrics_json["bootstrap"]["resamples"] >= 2000
    assert [r["name"] for r in metrics_json["runs"]] == ["run-a", "run-b"]

    markdown = (out / "report.md").read_text()
    assert "| run-a |" in markdown and "backbone timed out" in markdown and "(3/7)" in markdown
    # An unreadable line of results.jsonl is never dropped silently: metrics.json and the report say where.
    assert metrics_json["runs"][0]["problems"] == ["results.jsonl line 10: not JSON (Expecting value); skipped"]
    assert "Note: results.jsonl line 10: not JSON (Expecting value); skipped" in markdown
    html = (out / "report.html").read_text()
    assert html.count('src="data:image/png;base64,') == 4
    assert 'src="http' not in html and '.png"' not in html  # self-contained
    for picture in ("accuracy.png", "fusion.png", "confusion.png", "distribution.png"):
        width, height = _png_size(out / picture)
        assert 400 <= width <= 3000 and 250 <= height <= 3000, (picture, width, height)
        assert (out / picture).stat().st_size > 10_000
        assert f"]({picture})" in markdown


def test_cli_single_run_defaults_to_an_evaluation_folder_in_the_run(two_runs) -> None:
    _, run_a, _ = two_runs
    assert main(["evaluate", str(run_a), "--fusion", "cap"]) == 0
    metrics_json = _strict_json(run_a / "evaluation" / "metrics.json")
    assert metrics_json["fusion_override"] == "cap"
    assert metrics_json["runs"][0]["accuracy"]["4way"]["correct"] == 4


def test_cli_errors_say_what_to_do(two_runs, tmp_path: Path, capsys) -> None:
    bench, run_a, run_b = two_runs
    assert main(["evaluate", str(run_a), str(run_b)]) == 2
    assert "--out" in capsys.readouterr().err
    assert main(["evaluate", str(tmp_path / "missing")]) == 2
    assert "results.jsonl" in capsys.readouterr().err
    other = write_run(tmp_path / "run-c", bench, RUN_A, policy="no-such-policy")
    assert main(["evaluate", str(other), "--out", str(tmp_path / "c")]) == 2
    assert "content-first-strict" in capsys.readouterr().err
    assert main(["evaluate", str(run_a), "--resamples", "100"]) == 2
    assert main(["evaluate"]) == 2


def test_failed_verdicts_are_never_scored(tmp_path: Path) -> None:
    bench = write_bench(tmp_path / "bench")
    run = write_run(
        tmp_path / "run", bench, {"0": ("1", "1", "1")}, failed={str(i): "parse error" for i in range(1, 8)}
    )
    lines = (
        (run / "results.jsonl").read_text()
        + json.dumps({"id": "8", "status": "ok", "verdicts": _v("1", "tie", "1"), "fused": {}, "overall": None})
        + "\n"
    )
    (run / "results.jsonl").write_text(lines)
    result = evaluate_runs([load_run(run)], TRACE, human_labels())
    block = result["runs"][0]
    assert block["accuracy"]["4way"]["n"] == 1
    assert (block["items"]["failed"], block["items"]["invalid"]) == (7, 1)
    invalid = next(f for f in block["no_verdict"] if f["id"] == "8")
    assert invalid["status"] == "invalid" and "voice_quality='tie'" in invalid["reason"]
    assert block["accuracy"]["2way"]["n"] == 1
    assert block["probes"]["winner_on_bad"]["value"] is None and block["probes"]["winner_on_bad"]["reason"]


def test_oracle_counts_by_policy(tmp_path: Path, capsys) -> None:
    labels = dict(HUMAN)
    labels["9"] = ("1", "1", "1", None)  # incomplete: skipped
    labels["10"] = (G, "1", B, "1")
    bench = write_bench(tmp_path / "bench", labels)
    # Hand-counted agreements of fused human (C, VQ, P) with the human overall label over items 0-8 and 10:
    # content-first misses 5, 6; strict misses 5; cap misses 5, 10 (both give both_bad); vote misses 2, 10.
    expected = {"content-first": 8, "content-first-strict": 9, "cap": 8, "vote": 8}
    result = oracle(
        {
            i: {k: v for k, v in zip(("content", "voice_quality", "paralinguistics", "overall"), row) if v}
            for i, row in labels.items()
        },
        TRACE,
    )
    assert {name: p["correct"] for name, p in result["policies"].items()} == expected
    assert result["items"] == {"in_benchmark": 11, "complete": 10, "skipped": 1}

    out = tmp_path / "oracle"
    assert main(["evaluate", "--oracle", str(bench), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "| content-first-strict | 9 | 10 | 90.0%" in printed
    written = _strict_json(out / "metrics.json")
    for name, count in expected.items():
        policy = written["policies"][name]
        assert (policy["correct"], policy["n"]) == (count, 10)
        assert policy["accuracy"] == pytest.approx(count / 10)


# ---------------------------------------------------------------- undetermined verdicts and coverage


def test_coverage_and_accuracy_on_the_decided_items(tmp_path: Path) -> None:
    bench = write_bench(tmp_path / "bench")
    run = write_run(tmp_path / "run", bench, {i: RUN_A[i] for i in map(str, range(6))})
    undetermined = [  # answered, but a deciding cue was missing
        {
            "id": "6",
            "status": "ok",
            "verdicts": _v(None, "1", B),
            "undetermined": {"content": "no quoted words"},
            "fused": {},
            "overall": None,
        },
        {
            "id": "7",
            "status": "ok",
            "verdicts": _v("2", "2", None),
            "undetermined": {"paralinguistics": "sad: emotion unmeasured for response 1"},
            "fused": {},
            "overall": None,
        },
    ]
    with open(run / "results.jsonl", "a") as f:
        f.writelines(json.dumps(line) + "\n" for line in undetermined)
    block = evaluate_runs([load_run(run)], TRACE, human_labels())["runs"][0]

    assert block["coverage"]["overall"] == {"decided": 6, "of": 8, "value": 0.75, "undetermined": 2, "no_verdict": 0}
    assert block["coverage"]["content"] == {"decided": 7, "of": 8, "value": 7 / 8, "undetermined": 1, "no_verdict": 0}
    assert block["coverage"]["paralinguistics"]["decided"] == 7
    assert block["coverage"]["voice_quality"]["value"] == 1.0
    # Accuracy over the decided items only: 4-way 3 of the 6 fused; content 5 of 7 (item 7 says "2", as humans).
    assert (block["accuracy"]["4way"]["correct"], block["accuracy"]["4way"]["n"]) == (3, 6)
    assert (block["per_dimension"]["content"]["correct"], block["per_dimension"]["content"]["n"]) == (5, 7)
    assert block["items"]["undetermined"] == 2 and block["items"]["failed"] == 0 and block["no_verdict"] == []
    assert block["undetermined"][0] == {"id": "6", "dimensions": {"content": "no quoted words"}}
    assert block["probes"]["flip_rates"]["content"]["flipped"]["n"] == 6  # probes need all three labels

    assert main(["evaluate", str(run), "--out", str(tmp_path / "report")]) == 0
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "| coverage |" in markdown and "75.0% (6/8)" in markdown and "87.5% (7/8)" in markdown
    assert "computed on the decided items only" in markdown
    assert "| 7 | paralinguistics | sad: emotion unmeasured for response 1 |" in markdown
    assert "75.0% (6/8)" in (tmp_path / "report" / "report.html").read_text()


def test_a_null_label_without_its_reason_is_invalid_not_undetermined(tmp_path: Path) -> None:
    bench = write_bench(tmp_path / "bench")
    run = write_run(tmp_path / "run", bench, {"0": ("1", "1", "1")})
    with open(run / "results.jsonl", "a") as f:
        f.write(json.dumps({"id": "1", "status": "ok", "verdicts": _v(None, "1", "1"), "overall": None}) + "\n")
    block = evaluate_runs([load_run(run)], TRACE, human_labels())["runs"][0]
    assert block["items"]["undetermined"] == 0 and block["no_verdict"][0]["status"] == "invalid"


def test_run_folders_without_undetermined_fields_give_the_same_numbers(two_runs) -> None:
    _, run_a, run_b = two_runs
    settings = BootstrapSettings(resamples=500)
    before = evaluate_runs([load_run(run_a), load_run(run_b)], TRACE, human_labels(), settings=settings)
    for run in (run_a, run_b):  # as the judge writes them now: every line says what was undetermined
        lines = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines() if line.startswith("{")]
        (run / "results.jsonl").write_text("".join(json.dumps({**line, "undetermined": {}}) + "\n" for line in lines))
        (run / "summary.json").write_text(
            json.dumps({"undetermined": {}, "cues": {"clips": 0, "groups": {}, "warnings": []}})
        )
    after = evaluate_runs([load_run(run_a), load_run(run_b)], TRACE, human_labels(), settings=settings)
    for block in (*before["runs"], *after["runs"]):
        block.pop("cues")
        block["problems"] = [p for p in block["problems"] if "not JSON" not in p]
    assert after == before
    a = after["runs"][0]
    assert (a["accuracy"]["4way"]["correct"], a["accuracy"]["4way"]["n"]) == (3, 7)  # the hand-computed value
    assert a["coverage"]["overall"] == {"decided": 7, "of": 8, "value": 7 / 8, "undetermined": 0, "no_verdict": 1}


def test_no_empty_per_dimension_chart_when_only_overall_labels_exist(two_runs, tmp_path: Path) -> None:
    from PIL import Image

    bench, _, run_b = two_runs
    assert main(["evaluate", str(run_b), "--out", str(tmp_path / "full")]) == 0
    overall_only = tmp_path / "overall-only"
    write_bench(overall_only, {i: (None, None, None, labels[3]) for i, labels in HUMAN.items()})
    run = write_run(tmp_path / "run-overall", overall_only, {i: HUMAN[i][:3] for i in map(str, range(8))})
    assert main(["evaluate", str(run), "--out", str(tmp_path / "only")]) == 0
    full, only = (Image.open(tmp_path / name / "accuracy.png").size[0] for name in ("full", "only"))
    assert only < 0.7 * full  # one panel (overall), not an empty per-dimension one beside it


def test_evaluate_prints_no_font_warning(two_runs, tmp_path: Path) -> None:
    # Bold percentages inside the accuracy bars: a fallback family without a bold face (WenQuanYi Micro Hei,
    # which .ci/run installs for Chinese system names) made matplotlib print "findfont: Failed to find font
    # weight bold". A fresh process, as a user runs it: matplotlib warns once per process and font.
    import subprocess
    import sys

    _, run_a, run_b = two_runs
    done = subprocess.run(
        [sys.executable, "-m", "trace_eval", "evaluate", str(run_a), str(run_b), "--out", str(tmp_path / "report")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "report" / "accuracy.png").is_file()
    assert "findfont" not in done.stderr + done.stdout, done.stderr
