"""A team's server without a browser: bad input (an overlap larger than the team, a link open in two pages,
a gold answer that contradicts its pair) refused with the reason and nothing lost; the least-sure pairs
offered after the random sample and kept apart by `calibrate`; exports with each annotator's quality; an
annotator left out of `evaluate` and `calibrate` by name."""

from __future__ import annotations

import http.client
import json
import re

from label_benches import write_run
from team_pages import TeamServer

from trace_eval.cli import main

LABELS = {"content": "1", "voice_quality": "1", "paralinguistics": "1", "overall": "1"}


def call(server: TeamServer, name: str, method: str, path: str, body=None, page: str | None = "page-1"):
    link = server.lead if name == "lead" else server.links[name]
    host, port, token = re.match(r"http://([^:]+):(\d+)/[^?]*\?token=(.+)", link).groups()
    connection = http.client.HTTPConnection(host, int(port), timeout=20)
    headers = {"X-Trace-Token": token, **({"X-Trace-Page": page} if page else {})}
    connection.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
    response = connection.getresponse()
    data = json.loads(response.read() or b"{}")
    connection.close()
    return response.status, data


def label_through(server: TeamServer, name: str, labels=LABELS, limit: int = 100) -> list[str]:
    """Label every pair handed to `name`; the instruction text of each, in order."""
    texts = []
    for n in range(limit):
        status, pair = call(server, name, "GET", f"/api/pair/{n}")
        assert status == 200, pair
        if pair.get("done"):
            break
        texts.append(pair["instruction"]["text"])
        status, reply = call(server, name, "POST", f"/api/pair/{n}", {"labels": labels, "seconds": 2.5})
        assert status == 200, reply
    return texts


def test_an_overlap_larger_than_the_team_is_refused_before_anything_is_written(bench, capsys):
    assert main(["label", str(bench), "--team", "ana,ben", "--overlap", "3"]) == 2
    said = capsys.readouterr().err
    assert "--overlap 3 is larger than the team (2 annotator(s))" in said and "between 1 and 2" in said
    assert main(["label", str(bench), "--team", "ana,ANA"]) == 2
    assert "twice" in capsys.readouterr().err
    assert not (bench / "labels").exists()


def test_a_link_open_in_a_second_page_is_refused_and_the_first_loses_nothing(bench):
    server = TeamServer(bench, ("ana", "ben"), "--gold-rate", "0")
    try:
        assert call(server, "ana", "GET", "/api/pair/0", page="first")[0] == 200
        status, reply = call(server, "ana", "GET", "/api/state", page="second")
        assert status == 409 and "ana's link is open in another page" in reply["error"]
        status, reply = call(server, "ana", "POST", "/api/pair/0", {"labels": LABELS}, page="second")
        assert status == 409
        status, reply = call(server, "ana", "POST", "/api/pair/0", {"labels": LABELS}, page="first")
        assert status == 200 and reply["saved"]
        # The first page closes (it says so as it goes): the second page may label from now on.
        assert call(server, "ana", "POST", "/api/bye?page=first", page=None)[0] == 200
        assert call(server, "ana", "GET", "/api/pair/1", page="second")[0] == 200
        # Another annotator's link, and the lead's, are their own.
        assert call(server, "ben", "GET", "/api/state", page="third")[0] == 200
        assert call(server, "ana", "GET", "/api/team")[0] == 403
        assert call(server, "lead", "GET", "/api/state")[0] == 403
        status, report = call(server, "lead", "GET", "/api/team")
        assert status == 200 and [r["annotator"] for r in report["annotators"]] == ["ana", "ben"]
    finally:
        server.stop()
    assert len((bench / "labels" / "ana.jsonl").read_text().splitlines()) == 1


def test_a_gold_answer_that_contradicts_its_pair_is_refused_and_nothing_is_marked(bench, tmp_path, capsys):
    manifest = json.loads((bench / "manifest.json").read_text())
    manifest[0]["label"] = {"overall": "2"}
    manifest[1]["audio2_path"] = manifest[1]["audio1_path"]  # the same clip twice
    (bench / "manifest.json").write_text(json.dumps(manifest))
    given = tmp_path / "gold.json"
    given.write_text(
        json.dumps(
            [
                {"id": manifest[0]["id"], "overall": "1"},
                {"id": manifest[1]["id"], "overall": "2"},
                {"id": manifest[2]["id"], "overall": "3"},
            ]
        )
    )
    assert main(["label", "gold", str(bench), str(given)]) == 2
    said = capsys.readouterr().err
    assert f"overall = '1' contradicts pair {manifest[0]['id']}: the manifest labels it '2'" in said
    assert f"contradicts pair {manifest[1]['id']}: its two responses are the same audio" in said
    assert "overall = '3' is not" in said and "no pair marked as gold" in said
    assert not (bench / "labels" / "team" / "gold" / "gold.json").exists()

    given.write_text(json.dumps([{"id": manifest[2]["id"], "overall": "1", "note": "A names the wrong city"}]))
    assert main(["label", "gold", str(bench), str(given)]) == 0
    gold = json.loads((bench / "labels" / "team" / "gold" / "gold.json").read_text())["items"]
    assert [(g["id"], g["kind"], g["answer"]) for g in gold] == [
        (f"gold:{manifest[2]['id']}", "lead", {"overall": "1"})
    ]
    # The lead's gold pair is handed out as gold only (not as a pair of the benchmark's work).
    server = TeamServer(bench, ("ana",), "--overlap", "1", "--gold-rate", "0.5", "--gold-pairs", "0")
    try:
        label_through(server, "ana")
    finally:
        server.stop()
    claims = [json.loads(line) for line in (bench / "labels" / "team" / "claims.jsonl").read_text().splitlines()]
    assert [c["id"] for c in claims if c["gold"]] == [f"gold:{manifest[2]['id']}"]
    assert manifest[2]["id"] not in [c["id"] for c in claims if not c["gold"]]


def test_least_sure_pairs_come_after_the_sample_and_calibrate_keeps_them_apart(bench, tmp_path, capsys):
    run = write_run(bench, tmp_path / "run", agree=0.7)
    server = TeamServer(
        bench, ("ana",), "--overlap", "1", "--gold-rate", "0", "--sample", "6", "--seed", "3", "--least-sure", str(run)
    )
    try:
        label_through(server, "ana")
    finally:
        server.stop()
    sample = json.loads((bench / "labels" / "sample.json").read_text())["ids"]
    apart = json.loads((bench / "labels" / "least_sure.json").read_text())
    claims = [json.loads(line)["id"] for line in (bench / "labels" / "team" / "claims.jsonl").read_text().splitlines()]
    assert sorted(claims[:6]) == sorted(sample) and claims[6:] == apart["ids"]
    confidences = {r["id"]: r["confidence"]["overall"] for r in map(json.loads, (run / "results.jsonl").open())}
    shown = [confidences[i] for i in claims[6:]]
    assert shown == sorted(shown)  # one judge: its least confident first

    out = tmp_path / "calibration.json"
    assert main(["calibrate", str(run), "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert set(doc["pairs"]["fitted_on"]) <= set(sample)
    assert doc["pairs"]["kept_apart"] == 12
    assert "12 labelled least-sure pair(s)" in doc["pairs"]["drawn"] and "random pairs only" in doc["pairs"]["drawn"]
    assert "kept apart" in capsys.readouterr().out


def test_exports_carry_each_annotator_s_quality_and_one_can_be_left_out(bench, tmp_path, capsys):
    server = TeamServer(bench, ("ana", "ben"), "--overlap", "2", "--gold-rate", "0.4", "--gold-pairs", "6")
    try:
        label_through(server, "ana")
        label_through(server, "ben", {**LABELS, "overall": "2"})
    finally:
        server.stop()
    for name in ("labels.csv", "labels.jsonl", "table"):
        assert main(["label", "export", str(bench), "--out", str(tmp_path / name)]) == 0
    assert "with each annotator's quality" in capsys.readouterr().out
    header = (tmp_path / "labels.csv").read_text().splitlines()[0].split(",")
    assert {"annotator_gold_accuracy", "annotator_agreement", "annotator_flagged"} <= set(header)
    rows = [json.loads(line) for line in (tmp_path / "labels.jsonl").read_text().splitlines()]
    assert len(rows) == 36 and {r["annotator"] for r in rows} == {"ana", "ben"}
    import datasets

    table = datasets.load_from_disk(str(tmp_path / "table"))
    assert table.num_rows == 36 and "annotator_median_seconds" in table.column_names
    assert set(table["annotator_median_seconds"]) == {2.5}
    # The exported file reads back: the quality columns are left for what they are.
    copy = tmp_path / "again.csv"
    copy.write_text((tmp_path / "labels.csv").read_text().replace(",ana,", ",cleo,").replace(",ben,", ",dan,"))
    assert main(["label", "import", str(bench), str(copy)]) == 0

    assert main(["label", "quality", str(bench), "--out", str(tmp_path / "quality.json")]) == 0
    quality = json.loads((tmp_path / "quality.json").read_text())
    assert quality["ana"]["answered"] == 18 and quality["ana"]["gold"]["answered"] >= 1
    assert quality["ana"]["median_seconds"] == 2.5 and "flagged" in quality["ben"]

    assert main(["label", "agreement", str(bench), "--leave-out", "ben,cleo,dan", "--resamples", "50"]) == 0
    assert "1 annotator(s): ana" in capsys.readouterr().out
    run = write_run(bench, tmp_path / "run", agree=0.7)
    assert main(["calibrate", str(run), "--leave-out", "zed", "--out", str(tmp_path / "c.json")]) == 2
    assert "cannot leave out zed: no such annotator" in capsys.readouterr().err
    assert main(["calibrate", str(run), "--leave-out", "ben", "--out", str(tmp_path / "c.json")]) == 0
    assert json.loads((tmp_path / "c.json").read_text())["annotators_left_out"] == ["ben"]
    assert main(["evaluate", str(run), "--leave-out", "ben", "--out", str(tmp_path / "evaluation")]) == 0
    metrics = json.loads((tmp_path / "evaluation" / "metrics.json").read_text())
    assert metrics["annotators_left_out"] == ["ben"]
