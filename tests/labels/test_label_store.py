"""The label store: labels kept across a re-prepared benchmark, import and export, several annotators'
majority, and `calibrate` and `evaluate` from the store alone."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys

from label_benches import SYSTEMS, TRACE, label_every_pair, prepare_pairs, winner, write_run

from trace_eval.bench import load_benchmark
from trace_eval.cli import main
from trace_eval.evaluation.records import load_human_labels
from trace_eval.labels.server import LabelSession
from trace_eval.labels.store import LabelStore, import_labels


def test_a_re_prepared_benchmark_with_a_fourth_system_keeps_every_label(bench, outputs):
    from trace_eval.labels.sample import draw
    from trace_eval.labels.store import content_keys

    before = {i["id"]: i for i in json.loads((bench / "manifest.json").read_text())}
    label_every_pair(bench, "ana")
    assert len(LabelStore(bench).records("ana")[0]) == 18
    drawn = draw(load_benchmark(bench), 9, seed=1, split=True)
    drawn_keys = {content_keys(load_benchmark(bench))[i].key for i in drawn["calibration"]}

    prepare_pairs(bench, outputs, SYSTEMS)  # the same folder, a fourth system: 36 pairs
    after = {i["id"]: i for i in json.loads((bench / "manifest.json").read_text())}
    assert len(after) == 36
    # The recorded draw follows its pairs to their new ids.
    again = draw(load_benchmark(bench), 9, seed=1, split=True)
    assert {content_keys(load_benchmark(bench))[i].key for i in again["calibration"]} == drawn_keys
    # The schedule moved pairs: the same two answers under another id, or with their seats swapped.
    moved = {
        (b["instruction_path"], frozenset((b["audio1_path"], b["audio2_path"])))
        for b in before.values()
        if not any(
            a["instruction_path"] == b["instruction_path"]
            and (a["audio1_path"], a["audio2_path"], a["id"]) == (b["audio1_path"], b["audio2_path"], b["id"])
            for a in after.values()
        )
    }
    assert moved, "the re-prepared benchmark should move some pairs for this test to mean anything"

    human = load_human_labels(bench, TRACE)
    labelled = {i: got for i, got in human.labels.items() if got}
    old_systems = set(SYSTEMS[:3])
    assert set(labelled) == {i for i, a in after.items() if {a["model_a"], a["model_b"]} <= old_systems}
    assert len(labelled) == 18
    for item_id, got in labelled.items():
        assert got["overall"] == winner(after[item_id]) == got["content"], item_id  # mapped to the new seats
        assert got["voice_quality"] == "both_good" and got["paralinguistics"] == "both_bad"
    assert human.annotators["ana"] == labelled


def test_import_export_round_trip_and_the_majority_of_three(bench, tmp_path, capsys):
    items = json.loads((bench / "manifest.json").read_text())
    rng = random.Random(0)
    rows = []
    for who in ("ben", "cy"):
        for item in items:
            label = winner(item) if who == "ben" or rng.random() < 0.5 else "both_bad"
            rows.append({"id": item["id"], "annotator": who, "overall": label, "content": label})
    # dee names pairs by their audio paths, seated the other way round: labels are in that numbering
    for item in items[:5]:
        flipped = {"1": "2", "2": "1"}[winner(item)]
        rows.append(
            {
                "instruction_path": item["instruction_path"],
                "audio1_path": item["audio2_path"],
                "audio2_path": item["audio1_path"],
                "annotator": "dee",
                "overall": flipped,
            }
        )
    given = tmp_path / "labels.json"
    given.write_text(json.dumps(rows))
    assert main(["label", "import", str(bench), str(given)]) == 0
    human = load_human_labels(bench, TRACE)
    assert sorted(human.annotators) == ["ben", "cy", "dee"]
    for item in items[:5]:
        assert human.annotators["dee"][item["id"]]["overall"] == winner(item)
    for item in items:
        votes = [
            human.annotators[w][item["id"]]["overall"] for w in human.annotators if item["id"] in human.annotators[w]
        ]
        top = max(set(votes), key=votes.count)
        if votes.count(top) > len(votes) / 2:
            assert human.labels[item["id"]]["overall"] == top
        else:  # a tie between people: no label, and listed
            assert "overall" not in human.labels[item["id"]]
            assert any(d["id"] == item["id"] and d["majority"] is None for d in human.disagreements)

    # A refused row refuses the file: nothing written.
    before = (bench / "labels" / "ben.jsonl").read_text()
    bad = tmp_path / "bad.csv"
    bad.write_text("id,annotator,overall\n" + f"{items[0]['id']},ben,3\n")
    assert main(["label", "import", str(bench), str(bad)]) == 2
    assert "is not" in capsys.readouterr().err
    assert (bench / "labels" / "ben.jsonl").read_text() == before

    out = tmp_path / "export.csv"
    assert main(["label", "export", str(bench), "--out", str(out)]) == 0
    copy = tmp_path / "copy"
    shutil.copytree(bench, copy, ignore=shutil.ignore_patterns("labels"))
    stored, problems = import_labels(load_benchmark(copy), TRACE, out)
    assert not problems and stored == 2 * len(items) + 5
    assert load_human_labels(copy, TRACE).annotators == human.annotators


def test_calibrate_and_evaluate_from_the_label_store_alone(bench, tmp_path, capsys):
    items = json.loads((bench / "manifest.json").read_text())
    assert not any(i.get("label") for i in items)  # the manifest has no labels at all
    label_every_pair(bench, "ana")
    label_every_pair(bench, "ben")
    run = write_run(bench, tmp_path / "run", agree=0.9)

    calibration = tmp_path / "calibration.json"
    assert main(["calibrate", str(run), "--agreement", "0.5", "--delta", "0.2", "--out", str(calibration)]) == 0
    printed = capsys.readouterr().out
    assert "not drawn by `label --sample`" in printed
    doc = json.loads(calibration.read_text())
    (judge,) = doc["judges"].values()
    assert judge["labelled"] == 18 and judge["threshold"] is not None and len(doc["pairs"]["fitted_on"]) == 18

    assert main(["evaluate", str(run), "--calibration", str(calibration)]) == 0
    printed = capsys.readouterr().out
    assert "in-sample" in printed
    assert "people (overall, 18 items, 2 annotators)" in printed
    metrics = json.loads((run / "evaluation" / "metrics.json").read_text())
    assert metrics["people"]["dimensions"]["overall"]["raw_agreement"]["value"] == 1.0


def test_a_split_sample_keeps_calibration_pairs_apart(bench, tmp_path, capsys):
    from trace_eval.labels.sample import draw

    drawn = draw(load_benchmark(bench), 12, seed=4, split=True)
    assert drawn == draw(load_benchmark(bench), 12, seed=4, split=True)  # recorded, and the same again
    assert len(drawn["ids"]) == 12 and set(drawn["strata"].values()) == {4}  # 3 system pairs, 4 each
    assert set(drawn["calibration"]).isdisjoint(drawn["evaluation"]) and len(drawn["calibration"]) == 6
    session = LabelSession(bench, "ana", TRACE, drawn["ids"])
    items = {i["id"]: i for i in json.loads((bench / "manifest.json").read_text())}
    for n, pair in enumerate(session.pairs):
        label = winner(items[pair.id])
        shown = {"1": "2", "2": "1"}[label] if session.swapped_for(n) else label
        session.answer(n, {"labels": dict.fromkeys(("content", "voice_quality", "paralinguistics", "overall"), shown)})
    run = write_run(bench, tmp_path / "run", agree=1.0)
    calibration = tmp_path / "calibration.json"
    assert main(["calibrate", str(run), "--agreement", "0.5", "--delta", "0.3", "--out", str(calibration)]) == 0
    assert "seeded random sample of 12 (seed 4)" in capsys.readouterr().out
    doc = json.loads(calibration.read_text())
    assert doc["pairs"]["fitted_on"] == sorted(drawn["calibration"]) and doc["pairs"]["random"]
    assert main(["evaluate", str(run), "--calibration", str(calibration)]) == 0
    assert "held out: 6 labelled pair(s)" in capsys.readouterr().out


def test_view_leaderboard_and_agreement_read_the_label_store(bench, tmp_path, capsys):
    from view_pages import read_page_data

    from trace_eval.evaluation.leaderboard import leaderboard
    from trace_eval.view import write_view

    given = label_every_pair(bench, "ana")
    label_every_pair(bench, "ben")
    run = write_run(bench, tmp_path / "run", agree=0.8)
    write_view([run], tmp_path / "page")
    pairs = {p["id"]: p for p in read_page_data(tmp_path / "page")["pairs"]}
    assert all(pairs[i]["human"]["overall"] == label for i, label in given.items())
    assert all(pairs[i]["people"]["ben"]["overall"] == label for i, label in given.items())
    board = leaderboard([run])
    human = next(source for source in board["sources"] if source["kind"] == "human")
    # ana and ben prefer the earlier name: alpha wins every pair it is in
    assert human["acceptability"]["alpha"]["overall"]["acceptable"] == 12
    assert board["agreement"][0]["top"] == {"judge": "alpha", "human": "alpha"}

    assert main(["label", "agreement", str(bench), "--resamples", "200", "--out", str(tmp_path / "a.json")]) == 0
    printed = capsys.readouterr().out
    assert "people: 2 annotator(s): ana, ben" in printed
    assert "overall (18 items): raw agreement 1.00" in printed
    assert "position: response shown first chosen in" in printed
    report = json.loads((tmp_path / "a.json").read_text())
    assert report["disagreements"] == [] and report["position_bias"]["winners"] == 36


def test_a_torn_or_foreign_line_is_left_out_with_its_reason(bench):
    label_every_pair(bench, "ana")
    path = bench / "labels" / "ana.jsonl"
    good = path.read_text()
    path.write_text(
        good + '{"pair_id": "x", "labels": {}, "annotator": "ana", "time": "t", "content_key": "no"}\n{"pair_'
    )
    records, problems = LabelStore(bench).records("ana")
    assert len(records) == 18 and len(problems) == 2
    assert "line 19" in problems[0] and "line 20" in problems[1]
    assert len(load_human_labels(bench, TRACE).annotators["ana"]) == 18


def test_an_annotator_named_like_another_but_for_case_is_refused_and_the_others_are_named(bench, tmp_path):
    label_every_pair(bench, "alice")
    label_every_pair(bench, "bob")
    # Refused before any server starts (a subprocess, so that a server that did start cannot hang the test).
    command = [sys.executable, "-m", "trace_eval", "label", str(bench), "--annotator", "ALICE"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and not done.stdout, done
    said = done.stderr
    assert "'alice'" in said and "differs only in case" in said and "--annotator alice" in said
    assert "Annotators here: alice, bob" in said
    assert sorted(p.name for p in (bench / "labels").glob("*.jsonl")) == ["alice.jsonl", "bob.jsonl"]
    rows = tmp_path / "more.csv"
    first = load_benchmark(bench).pairs[0].id
    rows.write_text(f"id,annotator,overall\n{first},Bob,1\n{first},carol,2\n{first},CAROL,1\n")
    stored, problems = import_labels(load_benchmark(bench), TRACE, rows)
    assert stored == 0 and len(problems) == 2, problems
    assert "row 1" in problems[0] and "'bob'" in problems[0] and "row 3" in problems[1] and "'carol'" in problems[1]
    assert LabelSession(bench, "carol", TRACE).who() == "annotator carol (new on this benchmark); others: alice, bob"
    assert LabelSession(bench, "bob", TRACE).who() == "annotator bob (18 pair(s) answered before); others: alice"


def test_label_on_a_run_folder_names_the_run_s_benchmark(bench, tmp_path, capsys):
    run = write_run(bench, tmp_path / "runs" / "cues", agree=0.8)
    assert main(["label", str(run), "--annotator", "ana"]) == 2
    said = capsys.readouterr().err
    assert f"{run} is a judge run folder, not a benchmark folder: it judged {bench}; give that folder instead" in said
    assert "manifest.json" not in said
