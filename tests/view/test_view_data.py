"""The audit page's data (trace_eval.view): every item with its audio, cues, verdicts, reasons and human
labels, as `python -m trace_eval view` writes it. What the browser makes of it: test_view_browser.py."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from urllib.parse import unquote

import pytest
from llm_server import PairSpec, blueprint, write_benchmark
from view_pages import SYSTEMS, read_page_data, word_starts, write_large_bench, write_large_run

from trace_eval.cli import main
from trace_eval.evaluation.leaderboard import leaderboard
from trace_eval.judge.evidence import unmeasured_reason
from trace_eval.stage1.store import BlueprintStore, get_dotted
from trace_eval.view import write_view
from trace_eval.view.data import CONTOUR_POINTS, CUES, downsample

G, B = "both_good", "both_bad"
LABEL = {"content": G, "voice_quality": G, "paralinguistics": "1", "overall": "1"}


@pytest.fixture
def cues_run(example_with_blueprints, tmp_path, monkeypatch) -> Path:
    """The bundled example judged by the offline cues backbone."""
    monkeypatch.setenv("TRACE_CACHE_DIR", str(tmp_path / "cache"))
    run = tmp_path / "run"
    assert (
        main(["judge", "--bench", str(example_with_blueprints), "--model", "cues", "--out", str(run), "--quiet"]) == 0
    )
    return run


def played(page: Path, src: str) -> Path:
    """The file an audio element of the page plays."""
    return (page / unquote(src)).resolve()


def test_the_example_page_holds_every_pair_its_audio_cues_and_verdicts(cues_run, example_with_blueprints, capsys):
    assert main(["view", str(cues_run)]) == 0
    page = cues_run / "view"
    assert f"wrote {page / 'index.html'}: 8 items" in capsys.readouterr().out
    assert {p.name for p in page.iterdir()} == {"index.html", "view.css", "view.js", "data.js"}
    data = read_page_data(page)
    manifest = json.loads((example_with_blueprints / "manifest.json").read_text())
    results = {r["id"]: r for r in map(json.loads, (cues_run / "results.jsonl").read_text().splitlines())}
    store = BlueprintStore(example_with_blueprints)
    assert [p["id"] for p in data["pairs"]] == [item["index"] for item in manifest]
    for pair, item in zip(data["pairs"], manifest):
        assert pair["systems"] == [item["model_a"], item["model_b"]]
        assert pair["human"] == item["label"]
        assert pair["instruction"]["text"] == item["instruction_text"]
        for slot, field in zip(
            [pair["instruction"], *pair["responses"]], ("instruction_path", "audio1_path", "audio2_path")
        ):
            assert played(page, slot["audio"]["src"]) == (example_with_blueprints / item[field]).resolve()
            clip, stored = data["clips"][slot["clip"]], store.get_by_path(item[field])
            assert clip["words"] == [w["word"].strip() for w in stored["words"]]
            assert word_starts(clip) == pytest.approx([w["start"] for w in stored["words"]], abs=0.006)
            assert clip["transcript_quality"]["reliable"] == stored["transcript_quality"]["reliable"]
            if field == "instruction_path":
                assert clip["cues"] is None  # an instruction shows what was said, not its cues
                continue
            for cue in CUES:  # a value, or null with the reason its blueprint gives
                value, measured = clip["cues"][cue.key], get_dotted(stored, cue.path)
                if measured is None:
                    assert value is None and data["reasons"][clip["why"][cue.key]] == unmeasured_reason(
                        stored, cue.path, cue.extractor
                    )
                elif cue.kind == "number":
                    assert value == pytest.approx(measured * cue.scale, abs=0.5 * 10**-cue.digits + 1e-9)
                else:
                    assert value is not None and cue.key not in clip["why"]
        [result] = pair["results"]
        recorded = results[pair["id"]]
        assert result["status"] == "ok" and result["verdicts"] == recorded["verdicts"]
        assert result["fused"] == recorded["fused"] and result["overall"] == recorded["overall"]
        assert result["reasoning"] == recorded["reasoning"] and "raw" not in result
        assert result["disagree"] == []  # the cues backbone agrees with every label of the example
    assert data["runs"][0]["report"] is None and data["problems"] == []


def _run(folder: Path, bench: Path, records: list[dict], **config) -> Path:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(
        json.dumps({"bench": str(bench), "rubric": "trace", "fusion": "cap", "model": "scripted", **config})
    )
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder


def _record(item: str, content=G, voice_quality=G, paralinguistics="1", **extra) -> dict:
    verdicts = {"content": content, "voice_quality": voice_quality, "paralinguistics": paralinguistics}
    return {
        "id": item,
        "status": "ok",
        "reason": None,
        "verdicts": verdicts,
        "undetermined": {},
        "reasoning": "because",
        "raw": "{}",
        **extra,
    }


def test_disagreements_undetermined_and_failed_answers_are_marked_with_their_reasons(tmp_path):
    bench = write_benchmark(tmp_path / "bench", [PairSpec(id=f"p{n}", label=LABEL) for n in range(5)])
    run = _run(
        tmp_path / "run",
        bench,
        [
            _record("p0"),
            _record("p1", paralinguistics="2", reasoning={"content": "same words", "paralinguistics": "2 is slower"}),
            _record("p2", voice_quality=None, undetermined={"voice_quality": "response 1 P.808 unmeasured"}),
            {
                "id": "p3",
                "status": "invalid",
                "reason": "answer is not JSON after 1 repair",
                "raw": "I prefer the first",
                "verdicts": dict.fromkeys(LABEL),
            },
            _record("p4", voice_quality="wonderful"),  # not a label: the page says so, never shows it as one
            "cut short by an interruption",
        ],
        swap=True,
        samples=3,
    )
    text = (run / "results.jsonl").read_text().replace('"cut short by an interruption"', '{"id": "p5", "sta')
    (run / "results.jsonl").write_text(text)
    write_view([run], tmp_path / "page")
    data = read_page_data(tmp_path / "page")
    results = {p["id"]: p["results"][0] for p in data["pairs"]}
    assert results["p0"]["disagree"] == [] and results["p0"]["overall"] == "1"
    assert results["p1"]["disagree"] == ["paralinguistics", "overall"]
    assert results["p1"]["fused"]["cap"] == "2" and results["p1"]["reasoning"]["paralinguistics"] == "2 is slower"
    assert results["p2"]["verdicts"]["voice_quality"] is None and results["p2"]["disagree"] == []
    assert results["p2"]["undetermined"] == {"voice_quality": "response 1 P.808 unmeasured"}
    assert results["p2"]["overall"] is None and set(results["p2"]["fused"].values()) == {None}
    assert results["p3"]["status"] == "invalid" and results["p3"]["raw"] == "I prefer the first"
    assert results["p3"]["reason"] == "answer is not JSON after 1 repair" and results["p3"]["verdicts"] is None
    assert results["p4"]["status"] == "invalid" and "voice_quality='wonderful'" in results["p4"]["reason"]
    assert data["problems"] == ["run: results.jsonl line 6: not JSON (Unterminated string starting at); skipped"]
    assert data["runs"][0]["swap"] and data["runs"][0]["samples"] == 3


def test_swap_and_sample_agreement_are_counted_per_dimension(tmp_path):
    bench = write_benchmark(tmp_path / "bench", [PairSpec(id="p0", label=LABEL)])
    first = {"content": G, "voice_quality": "1", "paralinguistics": "1"}
    answers = [
        {"order": order, "sample": n, "status": "ok", "verdicts": {**first, "voice_quality": vq}}
        for order, n, vq in (("original", 0, "1"), ("original", 1, "1"), ("swapped", 0, G), ("swapped", 1, "1"))
    ]
    answers.append({"order": "swapped", "sample": 2, "status": "invalid", "verdicts": None})
    run = _run(
        tmp_path / "run",
        bench,
        [
            _record(
                "p0",
                **{
                    "voice_quality": G,
                    "samples": answers,
                    "orders": {"original": first, "swapped": {**first, "voice_quality": G}},
                },
            )
        ],
        swap=True,
        samples=2,
    )
    write_view([run], tmp_path / "page")
    [result] = read_page_data(tmp_path / "page")["pairs"][0]["results"]
    assert result["consistency"]["swap"] == {"content": True, "voice_quality": False, "paralinguistics": True}
    assert result["consistency"]["samples"] == {"content": [4, 4], "voice_quality": [1, 4], "paralinguistics": [4, 4]}


def test_a_missing_audio_file_or_blueprint_is_said_and_never_played(tmp_path):
    bench = write_benchmark(
        tmp_path / "bench", [PairSpec(id="p0", response_2=blueprint(emotion={})), PairSpec(id="p1"), PairSpec(id="p2")]
    )
    store = BlueprintStore(bench)
    (bench / "audio" / "p0_audio1.wav").unlink()
    store.path_for(store.hash_of("audio/p1_audio1.wav")).unlink()
    failed = {
        "path": "audio/p2_audio2.wav",
        "sha256": "0" * 64,
        "stage": "decode",
        "status": "failed",
        "reason": "not an audio file",
    }
    store.write_failures([failed])
    store.path_for(store.hash_of("audio/p2_audio2.wav")).unlink()
    run = _run(tmp_path / "run", bench, [_record(f"p{n}") for n in range(3)])
    page = tmp_path / "page"
    write_view([run], page)
    data = read_page_data(page)
    p0, p1, p2 = data["pairs"]
    assert p0["responses"][0]["audio"] == {"missing": f"audio/p0_audio1.wav: file not found in {bench.resolve()}"}
    assert data["reasons"][p0["responses"][0]["why"]] == "audio/p0_audio1.wav: file not found"
    assert data["reasons"][p1["responses"][0]["why"]].startswith(
        "no blueprint stored for it; run: python -m trace_eval blueprints"
    )
    assert data["reasons"][p2["responses"][1]["why"]] == "its blueprint failed: decode: not an audio file"
    assert played(page, p1["responses"][0]["audio"]["src"]).is_file()  # the audio plays even without cues
    no_emotion = data["clips"][p0["responses"][1]["clip"]]
    assert no_emotion["cues"]["emotion"] is None
    assert data["reasons"][no_emotion["why"]["emotion"]] == "emotion extractor not run"
    srcs = [
        slot["audio"]["src"]
        for pair in data["pairs"]
        for slot in [pair["instruction"], *pair["responses"]]
        if "src" in slot["audio"]
    ]
    assert len(srcs) == 8 and all(played(page, src).is_file() for src in srcs)


def test_copy_audio_makes_a_folder_that_plays_wherever_it_is_moved(tmp_path, capsys):
    bench = write_benchmark(tmp_path / "bench", [PairSpec(id="p0"), PairSpec(id="p #1")])
    shutil.move(bench / "audio" / "p #1_audio1.wav", bench / "audio" / "p #1 answer?.wav")
    items = json.loads((bench / "manifest.json").read_text())
    items[1]["audio1_path"] = "audio/p #1 answer?.wav"
    (bench / "manifest.json").write_text(json.dumps(items))
    run = _run(tmp_path / "run", bench, [_record("p0"), _record("p #1")])
    assert main(["view", str(run), "--out", str(tmp_path / "page"), "--copy-audio"]) == 0
    assert "6 audio files copied" in capsys.readouterr().out
    shutil.move(tmp_path / "page", tmp_path / "sent")
    shutil.rmtree(bench / "audio")
    data = read_page_data(tmp_path / "sent")
    srcs = [slot["audio"]["src"] for pair in data["pairs"] for slot in [pair["instruction"], *pair["responses"]]]
    assert "audio/audio/p%20%231%20answer%3F.wav" in srcs  # the benchmark's layout, under audio/
    assert all(src.startswith("audio/") and played(tmp_path / "sent", src).is_file() for src in srcs)


def test_contours_keep_their_shape_and_gaps_in_at_most_the_points_a_small_plot_needs():
    contour = [float(i) for i in range(100)]
    contour[40:60] = [None] * 20  # an unvoiced stretch
    drawn = downsample(contour)
    assert len(drawn) == CONTOUR_POINTS
    assert drawn[:2] == [0.5, 3.0] and drawn[-1] == 98.0  # means of runs of 2 or 3 values
    assert drawn[16:24] == [None] * 8 and None not in drawn[:16] + drawn[24:]
    assert downsample([100.0, None, 120.0]) == [100.0, None, 120.0]


def test_two_runs_say_where_they_differ(tmp_path):
    bench = write_benchmark(tmp_path / "bench", [PairSpec(id=f"p{n}", label=LABEL) for n in range(3)])
    one = _run(tmp_path / "a" / "run", bench, [_record("p0"), _record("p1"), _record("p2")])
    two = _run(
        tmp_path / "b" / "run",
        bench,
        [_record("p0"), _record("p1", content=B), {"id": "p2", "status": "error", "reason": "timeout"}],
    )
    assert main(["view", str(one), str(two)]) == 2  # several runs: where to put the page is asked for
    write_view([one, two], tmp_path / "page")
    data = read_page_data(tmp_path / "page")
    assert [r["name"] for r in data["runs"]] == ["a/run", "b/run"]
    assert [p["differ"] for p in data["pairs"]] == [[], ["content", "overall"], ["status"]]


def test_runs_of_another_rubric_or_without_a_benchmark_are_refused_with_what_to_do(tmp_path, capsys):
    bench = write_benchmark(tmp_path / "bench", [PairSpec(id="p0")])
    trace = _run(tmp_path / "trace", bench, [_record("p0")])
    other = _run(tmp_path / "other", bench, [], rubric="multi-aspect")
    lost = _run(tmp_path / "lost", bench, [_record("p0")])
    (lost / "config.json").write_text(json.dumps({"rubric": "trace", "fusion": "cap"}))
    assert main(["view", str(trace), str(other), "--out", str(tmp_path / "page")]) == 2
    assert "judged with different rubrics: trace (trace), other (multi-aspect)" in capsys.readouterr().err
    assert main(["view", str(lost)]) == 2
    assert "names no bench; pass --bench BENCH" in capsys.readouterr().err
    assert main(["view", str(lost), "--bench", str(bench)]) == 0
    assert main(["view", str(tmp_path / "nowhere")]) == 2
    assert "no results.jsonl" in capsys.readouterr().err


def within(shown, computed, path="board") -> None:
    """Everything the page shows is in what `leaderboard` computed, numbers to 5 significant digits."""
    if isinstance(shown, dict):
        assert isinstance(computed, dict) and set(shown) <= set(computed), f"{path}: {set(shown) - set(computed)}"
        for key, value in shown.items():
            within(value, computed[key], f"{path}.{key}")
    elif isinstance(shown, list):
        assert isinstance(computed, list) and len(shown) == len(computed), path
        for n, (a, b) in enumerate(zip(shown, computed)):
            within(a, b, f"{path}[{n}]")
    elif isinstance(shown, float):
        assert shown == pytest.approx(computed, rel=1e-4), path
    else:
        assert shown == computed, path


def test_the_leaderboard_panel_shows_what_the_leaderboard_command_computes(example_with_blueprints, tmp_path):
    bench = write_large_bench(example_with_blueprints, tmp_path, pairs=300)
    runs = [
        write_large_run(bench, tmp_path / "gemini"),
        write_large_run(bench, tmp_path / "gpt-4o", "openai/gpt-4o", seed=1),
    ]
    write_view(runs, tmp_path / "page")
    data = read_page_data(tmp_path / "page")
    panel, board = data["leaderboard"], leaderboard(runs)  # the command's defaults: overall, 2,000 resamples
    assert data["leaderboard_note"] is None
    within(panel, board)
    assert panel["by"] == ["overall"] and panel["bootstrap"] == {"resamples": 2000, "seed": 0, "confidence": 0.95}
    assert [(s["name"], s.get("fusion")) for s in panel["sources"]] == [
        ("human", None),
        ("gemini", "cap"),
        ("gpt-4o", "cap"),
    ]
    for source in panel["sources"]:
        rows = source["tables"]["overall"]["systems"]
        assert sorted(r["system"] for r in rows) == list(SYSTEMS)
        assert all(r["score"]["ci95"] and r["rank"]["ci95"] and r["win_rate"]["ci95"] for r in rows)
        assert (
            sum(r["wins"] + r["losses"] + r["ties"]["both_good"] + r["ties"]["both_bad"] for r in rows)
            == 2 * source["tables"]["overall"]["pairs"]
        )
        assert set(source["acceptability"]["alpha-s2s"]) == {"overall", "content", "voice_quality", "paralinguistics"}
    assert [a["run"] for a in panel["agreement"]] == ["gemini", "gpt-4o"]
    assert all(a["kendall_tau"]["value"] is not None for a in panel["agreement"])
    assert "matrix" not in panel["sources"][0]["tables"]["overall"] and "convention" not in panel
    assert len(json.dumps(panel, separators=(",", ":"))) < 16_000  # a few KB: 3 sources of 6 systems


def test_the_leaderboard_panel_says_why_there_is_none(tmp_path):
    bench = write_benchmark(tmp_path / "bench", [PairSpec(id="p0", label=LABEL), PairSpec(id="p1", label=LABEL)])
    run = _run(tmp_path / "run", bench, [_record("p0"), _record("p1")])
    write_view([run], tmp_path / "page")
    data = read_page_data(tmp_path / "page")
    assert data["leaderboard"] is None and data["leaderboard_note"] == "the items name no systems (model_a, model_b)"

    items = json.loads((bench / "manifest.json").read_text())
    items[0].update(model_a="alpha", model_b="alpha")
    (bench / "manifest.json").write_text(json.dumps(items))
    write_view([run], tmp_path / "page")
    assert (
        read_page_data(tmp_path / "page")["leaderboard_note"]
        == "no item names two different systems (model_a, model_b)"
    )

    items[1].update(model_a="alpha", model_b="bravo")
    (bench / "manifest.json").write_text(json.dumps(items))
    write_view([run], tmp_path / "page")
    data = read_page_data(tmp_path / "page")
    assert data["leaderboard_note"] is None and data["leaderboard"]["systems"] == ["alpha", "bravo"]
    assert data["leaderboard"]["items"] == {"in_benchmark": 2, "ranked": 1, "without_systems": 0, "same_system": 1}

    other = _run(tmp_path / "other", bench, [], rubric="multi-aspect")  # labels 1, 2, tie: nothing ranks them
    write_view([other], tmp_path / "page")
    assert (
        read_page_data(tmp_path / "page")["leaderboard_note"]
        == "the multi-aspect rubric has no dimension labelled 1, 2, both_good or both_bad to rank on"
    )


def test_evaluate_links_to_the_audit_page_and_the_page_to_the_report(cues_run, capsys):
    assert main(["evaluate", str(cues_run)]) == 0
    report = (cues_run / "evaluation" / "report.html").read_text()
    assert "<code>python -m trace_eval view ..</code> writes a page" in report  # relative to the report's folder
    assert str(cues_run) not in report
    assert main(["view", str(cues_run)]) == 0
    assert read_page_data(cues_run / "view")["runs"][0]["report"] == "../evaluation/report.html"
    assert main(["evaluate", str(cues_run)]) == 0
    report = (cues_run / "evaluation" / "report.html").read_text()
    assert '<a href="../view/index.html">the audit page</a>' in report
    assert "[the audit page](../view/index.html)" in (cues_run / "evaluation" / "report.md").read_text()


def test_a_run_of_1000_pairs_makes_a_page_of_a_few_megabytes(example_with_blueprints, tmp_path):
    """Every clip its own (3,000), answers of 60 words, reasoning per dimension: the page without the audio
    stays under 6 MB (scripts/bench_view.py measures it and its load time in a browser)."""
    bench = write_large_bench(example_with_blueprints, tmp_path, pairs=1000)
    run = write_large_run(bench, tmp_path / "run")
    files = write_view([run], tmp_path / "page")
    assert files.items == 1000 and files.page_bytes < 6e6
    assert files.page_bytes == sum(
        os.path.getsize(tmp_path / "page" / name) for name in ("index.html", "view.css", "view.js", "data.js")
    )
    data = read_page_data(tmp_path / "page")
    assert len(data["clips"]) == 3000 and len(data["pairs"]) == 1000
