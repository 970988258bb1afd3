"""Full-Duplex-Bench's v1 tasks on sample folders in its layout, built from recorded speech (English and Spanish)
with planted timing: compat mode gives what the benchmark's scripts compute (checked against its own scripts by
scripts/full_duplex_bench_compat.py --built, figures in docs/realtime.md); the default gives back what was planted,
within TOLERANCE_S (as in test_sessions.py)."""

from __future__ import annotations

import json
import shutil

import pytest
from planted_sessions import full_duplex_bench_samples

from trace_eval.sessions import SessionError
from trace_eval.sessions.full_duplex_bench import read_words, score_sample, score_task

TOLERANCE_S = 0.08


@pytest.fixture(scope="module", params=["en", "es"])
def built(request, tmp_path_factory):
    root = tmp_path_factory.mktemp(f"fdb-{request.param}")
    return root, full_duplex_bench_samples(root, request.param)


def _samples(result: dict) -> dict[str, dict]:
    return {s["sample"].rsplit("/", 1)[-1]: s for s in result["samples"]}


def test_compat_mode_computes_what_the_benchmarks_scripts_print(built):
    root, _ = built
    pause = score_task(root / "pause_handling", compat="full-duplex-bench")
    assert pause["summary"] == {"average_take_turn": pytest.approx(2 / 3)}  # an answer after the end counts
    turn = score_task(root / "smooth_turn_taking", compat="full-duplex-bench")
    latencies = {name: s["latency_s"] for name, s in _samples(turn).items()}
    # From the annotation (0.1 s after the user's end), the first word's start, a negative latency counted as 0.
    assert latencies == pytest.approx(
        {"answers-after-0.8-s": 0.7, "jumps-in": 0.0, "mm-hm-then-answers": 0.1}, abs=0.002
    )
    assert turn["summary"]["average_latency"] == pytest.approx(0.8 / 3, abs=0.002)
    interruption = score_task(root / "user_interruption", compat="full-duplex-bench")
    # Words are transcribed from the interruption's end on: one that talks through it answers "at once".
    answers = {name: s["latency_s"] for name, s in _samples(interruption).items()}
    assert answers == pytest.approx({"stops-and-answers": 0.8, "talks-through": 0.0}, abs=0.002)
    assert interruption["summary"]["average_rating"] is None and "rating.json" in interruption["summary"]["rating_note"]


def test_the_default_gives_back_what_was_planted(built):
    root, planted = built
    pause = _samples(score_task(root / "pause_handling"))
    assert pause["answers-after-the-end"]["took_turn"] is False  # no takeover: it waited for the end
    assert pause["takes-over-in-the-pause"]["where"] == "in the pause"
    assert pause["takes-over-in-the-pause"]["system_start_s"] == pytest.approx(
        planted["pause_handling/takes-over-in-the-pause"]["pause"][0] + 0.3, abs=TOLERANCE_S
    )
    assert pause["waits"]["took_turn"] is False
    result = score_task(root / "pause_handling")["summary"]
    assert result["takeover_rate"]["k"] == 1 and result["takeover_in_pause_rate"]["k"] == 1

    turn = _samples(score_task(root / "smooth_turn_taking"))
    for name, latency in (("answers-after-0.8-s", 0.8), ("jumps-in", -0.6), ("mm-hm-then-answers", 2.5)):
        assert turn[name]["latency_s"] == pytest.approx(latency, abs=TOLERANCE_S), name
    summary = score_task(root / "smooth_turn_taking")["summary"]
    assert summary["jump_in_rate"]["k"] == 1 and summary["latency_s"]["n"] == 3

    interruption = _samples(score_task(root / "user_interruption"))
    stops = interruption["stops-and-answers"]
    assert stops["stopped"] and stops["answered"] and stops["success"]
    assert stops["stop_latency_s"] == pytest.approx(0.3, abs=TOLERANCE_S)
    assert stops["latency_s"] == pytest.approx(0.8, abs=TOLERANCE_S)
    through = interruption["talks-through"]
    assert not through["stopped"] and not through["answered"] and not through["success"]
    gone_on = planted["user_interruption/talks-through"]
    assert through["stop_latency_s"] == pytest.approx(gone_on["system_end"] - gone_on["barge_in"], abs=TOLERANCE_S)


def test_bad_sample_folders_are_named_with_the_reason(built, tmp_path):
    root, _ = built
    with pytest.raises(SessionError, match="samples of several tasks"):
        score_task(root)
    with pytest.raises(SessionError, match="no sample folder"):
        score_task(tmp_path)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "output.json").write_text(json.dumps({"text": "hi", "chunks": [{"text": "hi"}]}))
    with pytest.raises(SessionError, match="chunk 0 has no \\[start, end\\] timestamp"):
        read_words(bad / "output.json")
    with pytest.raises(SessionError, match="no task annotation"):
        score_sample(bad)
    (bad / "output.json").write_text(json.dumps({"text": "hi", "chunks": [{"text": "hi", "timestamp": [0.5, None]}]}))
    assert read_words(bad / "output.json")[0].end is None  # the benchmark's recogniser leaves some ends null
    (bad / "pause.json").write_text(json.dumps([{"text": "[PAUSE]"}]))
    assert score_sample(bad, compat="full-duplex-bench")["took_turn"] == 0  # one word: no turn, pause.json unread
    with pytest.raises(SessionError, match="expected a list of"):
        score_sample(bad)


def test_the_sessions_command_scores_each_task_and_writes_everything(built, tmp_path, capsys):
    from trace_eval.cli import main

    root, _ = built
    out = tmp_path / "scores.json"
    assert main(["sessions", str(root), "--compat", "full-duplex-bench", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "smooth_turn_taking (3 samples, full-duplex-bench)" in printed and "average_latency" in printed
    written = json.loads(out.read_text())
    assert written["mode"] == "full-duplex-bench" and set(written["tasks"]) == {
        "pause_handling",
        "smooth_turn_taking",
        "user_interruption",
    }
    assert main(["sessions", str(root / "user_interruption")]) == 0
    assert "stopped_rate             1 of 2" in capsys.readouterr().out
    # Plain sessions (no benchmark annotation): the timing over all of them; a folder that is no session is named.
    plain = tmp_path / "plain"
    for sample in (root / "smooth_turn_taking").iterdir():
        (plain / sample.name).mkdir(parents=True)
        for name in ("input.wav", "output.wav"):
            (plain / sample.name / name).write_bytes((sample / name).read_bytes())
    (plain / "lone").mkdir()
    (plain / "lone" / "x.wav").write_bytes((root / "smooth_turn_taking" / "jumps-in" / "input.wav").read_bytes())
    assert main(["sessions", str(plain), "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "3 sessions (0 timelines from the store" in captured.out and "response_latency_s" in captured.out
    assert "lone: no session here" in captured.err
    assert len(json.loads(out.read_text())["sessions"]) == 3


def test_a_labs_own_outputs_without_the_benchmarks_transcript_are_its_samples(built, tmp_path, capsys):
    """Folders with input.wav, output.wav and the task's annotation, as the benchmark's inference leaves them
    before its transcription: the default scores them (its pause annotation read); compat needs output.json and
    says so; a folder of the layout without its annotation is named, not dropped."""
    from trace_eval.cli import main

    root, planted = built
    lab = tmp_path / "pause_handling"
    shutil.copytree(root / "pause_handling", lab)
    for sample in lab.iterdir():
        (sample / "output.json").unlink()
    (lab / "no-annotation").mkdir()
    for name in ("input.wav", "output.wav"):
        shutil.copy(lab / "waits" / name, lab / "no-annotation" / name)
    out = tmp_path / "scores.json"
    assert main(["sessions", str(lab), "--out", str(out), "--quiet"]) == 0
    written = json.loads(out.read_text())
    samples = {s["sample"].rsplit("/", 1)[-1]: s for s in written["tasks"]["pause_handling"]["samples"]}
    takes_over = samples["takes-over-in-the-pause"]
    assert takes_over["took_turn"] and takes_over["where"] == "in the pause"
    assert not samples["waits"]["took_turn"] and not samples["answers-after-the-end"]["took_turn"]
    (refused,) = written["failed"]
    assert refused["sample"].endswith("no-annotation") and "no task annotation" in refused["reason"]
    assert "no-annotation: no task annotation" in capsys.readouterr().err
    assert main(["sessions", str(lab), "--compat", "full-duplex-bench", "--out", str(out), "--quiet"]) == 0
    reasons = [f["reason"] for f in json.loads(out.read_text())["failed"]]
    assert sum("no output.json: compat mode reads the benchmark's transcript" in r for r in reasons) == 3


def test_a_folder_without_its_annotation_compat_pairs_as_the_script_the_default_names_it(built, tmp_path, capsys):
    """The smooth turn-taking script pairs its i-th output with its i-th annotation: compat does the same, each
    record saying so, and leaves the last output out as the script's zip does (checked against the script on
    every choice of the folder: scripts/full_duplex_bench_compat.py's functions give the same averages); the
    default names the folder and scores the others."""
    from trace_eval.cli import main
    from trace_eval.sessions.full_duplex_bench import script_pairing

    root, _ = built
    task = tmp_path / "smooth_turn_taking"
    shutil.copytree(root / "smooth_turn_taking", task)
    (task / "jumps-in" / "turn_taking.json").unlink()
    pairs = script_pairing(task)
    assert len(pairs) == 2 and task / "jumps-in" not in pairs.values()  # three outputs, two annotations
    out = tmp_path / "scores.json"
    assert main(["sessions", str(task), "--compat", "full-duplex-bench", "--out", str(out), "--quiet"]) == 0
    written = json.loads(out.read_text())
    samples = written["tasks"]["smooth_turn_taking"]["samples"]
    assert [s["sample"] for s in samples] == sorted(str(f) for f in pairs)
    shifted = [s for s in samples if "as the benchmark's script pairs the i-th output" in " ".join(s["notes"])]
    assert len(shifted) == sum(output != annotation for output, annotation in pairs.items())
    (left_out,) = written["failed"]
    assert "leaves it out: more outputs than annotations" in left_out["reason"]
    assert main(["sessions", str(task), "--out", str(out), "--quiet"]) == 0
    written = json.loads(out.read_text())
    assert len(written["tasks"]["smooth_turn_taking"]["samples"]) == 2
    (refused,) = written["failed"]
    assert refused["sample"] == str(task / "jumps-in") and "no task annotation" in refused["reason"]


def test_words_from_the_multilingual_recogniser_replace_the_benchmarks_english_only_ones(built, tmp_path, capsys):
    """With --words the timeline holds both channels' words (stored: a second run transcribes nothing), and the
    default scores read them instead of output.json."""
    from trace_eval.cli import main

    root, _ = built
    one = tmp_path / "smooth_turn_taking" / "jumps-in"
    one.parent.mkdir()
    shutil.copytree(root / "smooth_turn_taking" / "jumps-in", one)
    out = tmp_path / "scores.json"
    assert main(["sessions", str(one.parent), "--words", "--out", str(out)]) == 0
    written = json.loads(out.read_text())
    (sample,) = written["tasks"]["smooth_turn_taking"]["samples"]
    assert sample["words_from"].startswith("trace-eval's recogniser (") and sample["latency_s"] < 0
    (session,) = written["sessions"]
    timeline = session["timeline"]
    heard = " ".join(w["word"] for w in timeline["words"]["system"]).lower()
    planted = json.loads((one / "output.json").read_text())["text"].lower()
    assert len(set(heard.split()) & set(planted.split())) >= len(planted.split()) // 2, (heard, planted)
    assert timeline["languages"]["system"]["code"] == built[0].name.split("-")[1][:2]
    capsys.readouterr()
    assert main(["sessions", str(one.parent), "--words", "--out", str(out)]) == 0
    (again,) = json.loads(out.read_text())["sessions"]
    assert again["from_store"] and again["timeline"] == timeline  # from the store: no recogniser ran
    assert main(["sessions", str(one.parent), "--words", "--language", "spa"]) == 2
    assert "--language spa" in capsys.readouterr().err


def test_flexi_compat_mode_computes_what_its_scripts_print(tmp_path):
    """FLEXI's layout (the whole output transcribed, pause.json one object) and its scoring, quirks included."""
    full_duplex_bench_samples(tmp_path, "en", layout="flexi")
    pause = score_task(tmp_path / "pause_handling", compat="flexi")
    # An answer after the user's end is no takeover here; a silent system is left out, not counted as waiting.
    assert pause["summary"] == {"TOR": 0.5, "skipped": 1}
    turn = score_task(tmp_path / "smooth_turn_taking", compat="flexi")["summary"]
    # The jump-in is left out of the mean latency and counted in JIR; the mm-hm's 0.1 s is the latency still.
    assert turn["latency"] == pytest.approx((0.7 + 0.1) / 2, abs=0.002) and turn["JIR"] == pytest.approx(1 / 3)
    interruption = score_task(tmp_path / "user_interruption", compat="flexi")
    samples = _samples(interruption)
    # A system that talked on 4.7 s past the interruption "yielded": its overlap with it was under 3 s.
    assert samples["talks-through"]["took_turn"] == 0 and samples["talks-through"]["overlap_s"] < 3
    assert interruption["summary"]["TTR"] == 1.0 and "scored 0" in interruption["summary"]["rating_note"]
    default = _samples(score_task(tmp_path / "user_interruption"))
    assert not default["talks-through"]["stopped"]
