"""`export preferences` (trace_eval/export.py): a judge run's winners as a Hugging Face dataset, read back with
`datasets` itself."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from markdown_text import DOCS, section

from trace_eval.cli import main as cli

datasets = pytest.importorskip("datasets")

AUDIO = ("instruction_audio", "chosen_audio", "rejected_audio")


@pytest.fixture(scope="module")
def cues_run(example_with_blueprints, tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("export") / "run"
    assert cli(["judge", "--bench", str(example_with_blueprints), "--model", "cues", "--out", str(run), "--quiet"]) == 0
    return run


def records_of(run: Path) -> dict[str, dict]:
    return {r["id"]: r for r in map(json.loads, (run / "results.jsonl").read_text().splitlines())}


def docs_python(title: str) -> list[str]:
    """The ```python blocks of a section of docs/export.md, as a reader pastes them."""
    return re.findall(r"```python\n(.*?)```", section(title, DOCS / "export.md"), flags=re.S)


def test_a_row_reads_back_as_the_docs_show_without_torchcodec(cues_run, tmp_path, monkeypatch):
    # The documented install (`pip install -e .[dev]`) holds datasets but not torchcodec, which datasets 4 and
    # later decode audio with: the rows must read as the files' bytes without it.
    monkeypatch.chdir(tmp_path)
    assert cli(["export", "preferences", str(cues_run), "--out", "prefs/demo"]) == 0
    reading, decoding = docs_python("Reading it back")
    seen: dict = {}
    exec(reading, seen)
    assert seen["chosen"].size and seen["rejected"].size and seen["rate"] > 0
    assert seen["row"]["chosen_audio"]["path"].endswith(".wav")
    parquet = datasets.load_dataset("parquet", data_files="prefs/demo/data/train-00000-of-00001.parquet")
    assert parquet["train"][0]["chosen_audio"]["bytes"] == seen["row"]["chosen_audio"]["bytes"]
    assert all(not seen["prefs"].features[c].decode for c in AUDIO)
    assert "prefs.cast_column(column, datasets.Audio(" in decoding
    # Decoding on access is documented as needing torchcodec, which the install does not hold.
    assert "pip install torchcodec" in section("Reading it back", DOCS / "export.md")


def test_preferences_read_back_with_datasets_hold_the_benchmark_s_audio_and_the_verdicts(
    cues_run, example_with_blueprints, tmp_path, capsys
):
    from trace_eval.bench import load_benchmark

    out = tmp_path / "prefs"
    assert cli(["export", "preferences", str(cues_run), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    records = records_of(cues_run)
    winners = {i: r for i, r in records.items() if r["overall"] in ("1", "2")}
    ties = len(records) - len(winners)
    assert winners and ties  # the example has both
    assert f"{len(winners)} preference pairs of {len(records)}" in printed and f"left out (tie): {ties}" in printed

    bench = load_benchmark(example_with_blueprints)
    pairs = {p.id: p for p in bench.pairs}
    from_disk = datasets.load_from_disk(str(out))
    from_parquet = datasets.load_dataset(
        "parquet", data_files=str(out / "data" / "train-00000-of-00001.parquet"), split="train"
    )

    for dataset in (from_disk, from_parquet):
        assert all(isinstance(dataset.features[c], datasets.Audio) for c in AUDIO)
        rows = {row["id"]: row for row in dataset}
        assert set(rows) == set(winners)
        for item_id, row in rows.items():
            record, pair = winners[item_id], pairs[item_id]
            winner, loser = (pair.audio1_path, pair.audio2_path)[:: 1 if record["overall"] == "1" else -1]
            assert row["chosen_audio"]["bytes"] == bench.resolve(winner).read_bytes()
            assert row["rejected_audio"]["bytes"] == bench.resolve(loser).read_bytes()
            assert row["instruction_audio"]["bytes"] == bench.resolve(pair.instruction_path).read_bytes()
            assert row["instruction_text"] == pair.instruction_text
            systems = (pair.model_a, pair.model_b)[:: 1 if record["overall"] == "1" else -1]
            assert (row["chosen_system"], row["rejected_system"]) == systems
            assert row["label"] == row["chosen_position"] == record["overall"]
            assert row["confidence"] == record["confidence"]["overall"]
            assert json.loads(row["verdicts"]) == record["verdicts"]
            assert row["judge"] == "cues" and row["fusion"] == "cap" and row["rubric"] == "trace-v1"

    lines = [json.loads(line) for line in (out / "preferences.jsonl").read_text().splitlines()]
    assert {line["id"] for line in lines} == set(winners)
    assert all(Path(line["chosen_audio"]).is_file() for line in lines)
    card = (out / "README.md").read_text()
    for fact in ("`cues`", "`trace-v1`", "`cap`", f"| pairs written | {len(winners)} |", f"| left out: tie | {ties} |"):
        assert fact in card


def test_trusted_only_keeps_the_verdicts_at_or_above_the_calibrated_threshold(
    cues_run, example_with_blueprints, tmp_path, capsys
):
    """The calibration is made by `calibrate` on labels where people disagree with the two least confident
    verdicts, so its threshold leaves the least confident verdict out."""
    records = records_of(cues_run)
    by_confidence = sorted(records.values(), key=lambda r: r["confidence"]["overall"])
    doubted = {r["id"] for r in by_confidence[:2]}
    labels = tmp_path / "labels"
    shutil.copytree(example_with_blueprints, labels, ignore=shutil.ignore_patterns("blueprints"))
    manifest = json.loads((labels / "manifest.json").read_text())
    for item in manifest:
        if item["index"] in doubted:
            item["label"]["overall"] = {"1": "2", "2": "1"}.get(item["label"]["overall"], "1")
    (labels / "manifest.json").write_text(json.dumps(manifest))
    calibration = tmp_path / "calibration.json"
    argv = ["calibrate", str(cues_run), "--labels", str(labels), "--agreement", "0.75", "--delta", "0.5"]
    assert cli([*argv, "--out", str(calibration)]) == 0
    threshold = json.loads(calibration.read_text())["judges"]["cues@trace"]["threshold"]
    assert threshold is not None and threshold > by_confidence[0]["confidence"]["overall"]

    out = tmp_path / "trusted"
    argv = ["export", "preferences", str(cues_run), "--out", str(out), "--trusted-only"]
    assert cli([*argv, "--calibration", str(calibration)]) == 0
    capsys.readouterr()
    rows = {row["id"]: row for row in datasets.load_from_disk(str(out))}
    trusted_winners = {
        i for i, r in records.items() if r["overall"] in ("1", "2") and r["confidence"]["overall"] >= threshold
    }
    winners = {i for i, r in records.items() if r["overall"] in ("1", "2")}
    assert set(rows) == trusted_winners and by_confidence[0]["id"] in winners - set(rows)
    assert all(row["trusted"] and row["confidence"] >= threshold for row in rows.values())
    card = (out / "README.md").read_text()
    assert "agreement with people at least 75%" in card and "| left out: not trusted | 1 |" in card

    # Without the calibration file nothing says which verdicts are trusted.
    assert cli(["export", "preferences", str(cues_run), "--out", str(tmp_path / "x"), "--trusted-only"]) == 2
    assert "--calibration FILE" in capsys.readouterr().err


def test_preferences_on_one_dimension_and_from_the_api(cues_run, tmp_path):
    import trace_eval

    run = trace_eval.Run(cues_run)
    written = run.preferences(tmp_path / "content", on="content")
    records = records_of(cues_run)
    winners = {i for i, r in records.items() if r["verdicts"]["content"] in ("1", "2")}
    assert written.rows == len(winners) and written.pairs == len(records)
    rows = datasets.load_from_disk(str(tmp_path / "content"))
    assert {row["id"] for row in rows} == winners and {row["on"] for row in rows} <= {"content"}
    with pytest.raises(trace_eval.export.ExportError, match="expected overall or a dimension"):
        run.preferences(tmp_path / "x", on="loudness")


@pytest.fixture(scope="module")
def systems_run(tmp_path_factory) -> Path:
    """A run over 18 pairs of three systems whose answers are all named q00.wav .. q05.wav in their folders, as
    a lab's outputs are (tests/label_benches.py), at runs/cues."""
    if shutil.which("sox") is None:
        pytest.skip("sox makes the systems' answers")
    from label_benches import SYSTEMS, make_outputs, prepare_pairs, write_run

    root = tmp_path_factory.mktemp("lab")
    prepare_pairs(root / "bench", make_outputs(root / "outputs"), SYSTEMS[:3])
    return write_run(root / "bench", root / "runs" / "cues", agree=1.0)


def test_audio_paths_are_unique_and_nothing_names_a_path_of_this_machine(systems_run, tmp_path):
    out = tmp_path / "prefs"
    assert cli(["export", "preferences", str(systems_run), "--out", str(out)]) == 0
    table = datasets.load_from_disk(str(out))
    assert len(table) == 18
    by_path: dict[str, bytes] = {}
    for row in table:
        paths = [row[column]["path"] for column in AUDIO]
        assert len(set(paths)) == 3, paths  # instruction, chosen and rejected never share a name
        for column in AUDIO:
            audio = row[column]
            assert by_path.setdefault(audio["path"], audio["bytes"]) == audio["bytes"]  # one name, one content
        assert row["run"] == "cues"
    assert len(by_path) == 6 + 18  # six instructions, each system's six answers
    machine = str(tmp_path.parent)
    for name in ("README.md", "dataset_info.json"):
        assert machine not in (out / name).read_text(), name
    card = (out / "README.md").read_text()
    counts = json.loads(card.split("Counts as JSON: `")[1].split("`")[0])
    assert counts["out"] == "prefs"
    assert sorted(counts["files"]) == sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()), (
        counts["files"]
    )


def test_an_existing_folder_is_refused_unless_overwrite(systems_run, tmp_path, capsys):
    out = tmp_path / "prefs"
    assert cli(["export", "preferences", str(systems_run), "--out", str(out)]) == 0
    first = (out / "preferences.jsonl").read_bytes()
    assert cli(["export", "preferences", str(systems_run), "--out", str(out), "--on", "content"]) == 2
    refused = capsys.readouterr().err
    assert "already holds an earlier export" in refused and "--overwrite" in refused
    assert (out / "preferences.jsonl").read_bytes() == first  # untouched
    assert cli(["export", "preferences", str(systems_run), "--out", str(out), "--on", "content", "--overwrite"]) == 0
    assert '"on": "content"' in (out / "preferences.jsonl").read_text()
    other = tmp_path / "notes"
    other.mkdir()
    (other / "mine.txt").write_text("keep me")
    assert cli(["export", "preferences", str(systems_run), "--out", str(other)]) == 2
    assert "already holds files" in capsys.readouterr().err
    assert [p.name for p in other.iterdir()] == ["mine.txt"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli(["export", "preferences", str(systems_run), "--out", str(empty)]) == 0


def test_a_mistyped_run_folder_says_which_it_meant(systems_run, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(systems_run.parent.parent)
    assert cli(["export", "preferences", "runs/cuess", "--out", str(tmp_path / "p")]) == 2
    assert "runs/cuess: no such folder; did you mean runs/cues?" in capsys.readouterr().err
