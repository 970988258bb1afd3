"""Interaction judged pairwise on sessions built from recorded speech (English and Spanish): three systems on the
same user channels (tests/planted_sessions.py INTERACTION_SYSTEMS). The offline judge ranks the well-timed one
first with the reasons event by event; an LLM reading the timelines as text is asked through litellm (a local
server of the tests' own answers); people's labels give the judge's agreement."""

from __future__ import annotations

import json
import re

import pytest
from llm_server import LLMServer, Reply, prompt_text
from planted_sessions import interaction_benchmark

from trace_eval.cli import main
from trace_eval.sessions import make_timeline, read_session
from trace_eval.sessions.interaction import cues_verdict, describe, rank


@pytest.fixture(scope="module", params=["en", "es"])
def bench(request, tmp_path_factory):
    root = tmp_path_factory.mktemp(f"interaction-{request.param}")
    interaction_benchmark(root, request.param)
    return root


def _timeline(bench, system: str, sample: str = "session-0"):
    return make_timeline(read_session(bench / system / sample))


def test_the_offline_judge_ranks_the_well_timed_system_first_with_its_reasons(bench, tmp_path, capsys):
    out = tmp_path / "judged.json"
    assert main(["sessions", str(bench), "--judge", "cues", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert [row["system"] for row in result["ranking"]][0] == "prompt"
    assert result["ranking"][0]["wins"] == 4 and result["ranking"][0]["losses"] == 0
    verdicts = {(v["sample"], *v["systems"]): v for v in result["verdicts"]}
    assert verdicts[("session-0", "prompt", "slow")]["label"] == "1"
    assert verdicts[("session-0", "deaf", "prompt")]["label"] == "2"
    assert verdicts[("session-0", "deaf", "slow")]["label"] == "both_bad"  # two unacceptable events each
    barge_in = next(e for e in verdicts[("session-0", "deaf", "prompt")]["events"] if e["kind"] == "barge-in")
    assert barge_in["label"] == "2" and barge_in["why_1"].startswith("went on")
    # planted: cut 0.3 s after the user began (the last word before the cut may end sooner)
    assert re.search(r"stopped after 0\.[0-4]\d s", barge_in["why_2"])
    late = next(e for e in verdicts[("session-0", "prompt", "slow")]["events"] if e["kind"] == "answer")
    assert "(over 1.5 s)" in late["why_2"]
    assert "1 prompt" in re.sub(r"\s+", " ", capsys.readouterr().out)


def test_every_threshold_is_an_option_and_recorded(bench, tmp_path, capsys):
    """Stricter on stopping (0.1 s), looser on answering (3 s): the prompt system's barge-in, stopped 0.3 s after
    the user began, now went on; the slow system's answers, 2.5 s after the user's end, are acceptable."""
    out = tmp_path / "judged.json"
    options = ["--stop-within", "0.1", "--answer-within", "3", "--max-pause", "2.5", "--onset-db", "none"]
    assert main(["sessions", str(bench), "--judge", "cues", *options, "--out", str(out), "--quiet"]) == 0
    result = json.loads(out.read_text())
    assert result["settings"]["judge"] == {"answer_within_s": 3.0, "jump_in_tolerance_s": 0.2}
    assert result["settings"]["timeline"]["stop_within_s"] == 0.1 and result["settings"]["timeline"]["onset_db"] is None
    assert all(s["timeline"]["settings"] == result["settings"]["timeline"] for s in result["sessions"])
    verdict = next(v for v in result["verdicts"] if v["sample"] == "session-0" and v["systems"] == ["prompt", "slow"])
    reasons = {e["kind"]: (e["why_1"], e["why_2"]) for e in verdict["events"]}
    assert reasons["barge-in"][0].startswith("went on") and reasons["answer"][1].startswith("answered 2.")


def test_the_ranking_is_the_leaderboards_maximum_likelihood_where_it_exists():
    """Nobody won or lost every pair: the scores are the maximum-likelihood ones, as `leaderboard` gives them (the
    weak prior only where a system won or lost every pair)."""
    import numpy as np

    from trace_eval.evaluation import bradley_terry
    from trace_eval.sessions.interaction import PairVerdict

    outcomes = [("a", "b", "1"), ("a", "b", "1"), ("b", "c", "1"), ("c", "a", "1"), ("a", "c", "both_good")]
    table = rank([PairVerdict(f"s{k}", (x, y), label, "", [], "cues") for k, (x, y, label) in enumerate(outcomes)])
    points = np.array([[0, 2, 0.5], [0, 0, 1], [1.5, 0, 0]])
    games = np.array([[0, 2, 2], [2, 0, 1], [2, 1, 0]])
    expected = bradley_terry.scores(bradley_terry.fit(points, games))
    assert {row["system"]: row["score"] for row in table} == dict(zip("abc", np.round(expected, 1)))
    assert {row["fit"] for row in table} == {"maximum likelihood"}


def test_timing_per_system_side_by_side(bench, tmp_path, capsys):
    """DIR/<system>/<session>/ names the systems: every metric per system, printed side by side and written, and
    a picture of each one's latencies."""
    out, plot = tmp_path / "timing.json", tmp_path / "latency.png"
    assert main(["sessions", str(bench), "--out", str(out), "--plot", str(plot), "--quiet"]) == 0
    systems = json.loads(out.read_text())["systems"]
    assert list(systems) == ["deaf", "prompt", "slow"] and all(m["sessions"] == 2 for m in systems.values())
    latency = {name: m["response_latency_s"]["median"] for name, m in systems.items()}
    assert latency == {"deaf": pytest.approx(0.5, abs=0.08), "prompt": pytest.approx(0.5, abs=0.08),
                       "slow": pytest.approx(2.5, abs=0.08)}  # fmt: skip
    assert systems["deaf"]["no_answer_rate"]["k"] == 2 and systems["prompt"]["stopped_rate"]["k"] == 2
    printed = capsys.readouterr().out
    assert "per system (3):" in printed and re.search(r"response_latency_s\s+0\.\d+ \(2\)", printed)
    assert plot.read_bytes()[:4] == b"\x89PNG"


def test_sessions_on_different_user_channels_are_not_compared(bench):
    other = _timeline(bench, "prompt", "session-1")
    verdict = cues_verdict("mixed", ("prompt", "slow"), _timeline(bench, "prompt"), other)
    assert verdict.label is None and "not the same user channel" in verdict.why
    assert rank([verdict]) == []


def test_an_llm_reads_the_timelines_as_text_and_a_bad_answer_is_recorded(bench, tmp_path, monkeypatch):
    def reader(body: dict) -> Reply:
        """Prefers the session with fewer unanswered, late or talked-over turns, as its text shows."""
        first, second = prompt_text(body).split("Session 2:")
        faults = [
            len(re.findall(r"no answer follows|goes on [1-9]", part))
            + sum(float(x) > 1.5 for x in re.findall(r"answer starts \+(\d+\.\d+)", part))
            for part in (first, second)
        ]
        if faults[0] == faults[1]:
            label = "both_good" if faults == [0, 0] else "both_bad"
        else:
            label = "1" if faults[0] < faults[1] else "2"
        return Reply(json.dumps({"reasoning": f"faults {faults}", "interaction": label}))

    monkeypatch.setenv("TRACE_JUDGE_API_KEY", "local")
    text = describe(_timeline(bench, "deaf"))
    assert "no answer follows" in text and "the user starts speaking over the system, which goes on" in text
    out = tmp_path / "llm.json"
    with LLMServer(responder=reader) as server:
        server.push(Reply("I think the first one is nicer."))  # no JSON: undetermined, with the raw answer
        judge = ["--judge", "openai/test", "--api-base", server.api_base]
        code = main(["sessions", str(bench), *judge, "--out", str(out)])
    assert code == 0
    result = json.loads(out.read_text())
    undetermined = [v for v in result["verdicts"] if v["label"] is None]
    assert len(undetermined) == 1 and undetermined[0]["raw"] == "I think the first one is nicer."
    assert undetermined[0]["why"] == "the answer holds no JSON object"
    assert result["ranking"][0]["system"] == "prompt"


def test_an_unreachable_llm_or_a_missing_key_stops_at_once(bench, capsys, monkeypatch):
    monkeypatch.delenv("TRACE_JUDGE_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert main(["sessions", str(bench), "--judge", "openai/gpt-4o"]) == 1
    assert "no API key: set OPENAI_API_KEY" in capsys.readouterr().err
    monkeypatch.setenv("TRACE_JUDGE_API_KEY", "local")
    assert main(["sessions", str(bench), "--judge", "openai/test", "--api-base", "http://127.0.0.1:9/v1"]) == 1
    assert "cannot reach http://127.0.0.1:9/v1" in capsys.readouterr().err


def test_agreement_with_peoples_labels(bench, tmp_path, capsys):
    labels = tmp_path / "labels.jsonl"
    rows = [
        {"sample": "session-0", "system_1": "slow", "system_2": "prompt", "interaction": "2"},  # agrees (swapped)
        {"sample": "session-1", "system_1": "prompt", "system_2": "deaf", "interaction": "1"},  # agrees
        {"sample": "session-1", "system_1": "deaf", "system_2": "slow", "interaction": "2"},  # the judge: both_bad
    ]
    labels.write_text("\n".join(json.dumps(r) for r in rows))
    out = tmp_path / "judged.json"
    assert main(["sessions", str(bench), "--judge", "cues", "--labels", str(labels), "--out", str(out)]) == 0
    agreement = json.loads(out.read_text())["agreement"]
    assert (agreement["k"], agreement["n"]) == (2, 3)
    assert "agreement with" in capsys.readouterr().out
    labels.write_text(json.dumps(rows[0]) + "\n" + json.dumps({"sample": "session-0", "interaction": "2"}))
    assert main(["sessions", str(bench), "--judge", "cues", "--labels", str(labels)]) == 2
    assert "labels.jsonl line 2: expected {sample, system_1, system_2" in capsys.readouterr().err


def test_pairs_as_a_benchmark_judged_ranked_and_evaluated_like_any_other(bench, tmp_path, monkeypatch, capsys):
    """`sessions --pairs` writes the pairs for the interaction rubric: the judge runner (offline and through
    an LLM, in both orders), the leaderboard and evaluate take them; people's labels become the items' labels."""
    labels = tmp_path / "labels.jsonl"
    rows = [
        {"sample": "session-0", "system_1": "slow", "system_2": "prompt", "interaction": "2"},
        {"sample": "session-1", "system_1": "deaf", "system_2": "slow", "interaction": "2"},
    ]
    labels.write_text("\n".join(json.dumps(r) for r in rows))
    pairs = tmp_path / "pairs"
    assert main(["sessions", str(bench), "--pairs", str(pairs), "--labels", str(labels), "--quiet"]) == 0
    items = {i["id"]: i for i in map(json.loads, (pairs / "manifest.jsonl").read_text().splitlines())}
    seated = {(i["session"], i["model_a"], i["model_b"]): i for i in items.values()}

    def pair(sample: str, first: str, second: str) -> tuple[dict, bool]:
        """The item of two systems on a sample, and whether `first` sits as response 1."""
        return (seated[(sample, first, second)], True) if (sample, first, second) in seated else (
            seated[(sample, second, first)], False)  # fmt: skip

    # Seated by a seeded draw, not by name, and recorded.
    assert json.loads((pairs / "seating.json").read_text())["seed"] == 0
    assert {i["model_a"] < i["model_b"] for i in items.values()} == {True, False}
    item, first = pair("session-0", "prompt", "slow")
    assert len(items) == 6 and item["label"] == {"interaction": "1" if first else "2"}  # the label follows
    assert (pairs / pair("session-0", "deaf", "prompt")[0]["audio1_path"]).is_file()

    run = tmp_path / "run"
    assert main(["judge", "--bench", str(pairs), "--rubric", "interaction", "--model", "cues", "--out", str(run)]) == 0
    assert main(["leaderboard", str(run)]) == 0
    board = json.loads((run / "leaderboard" / "leaderboard.json").read_text())
    assert "prompt" in capsys.readouterr().out and board
    # One Bradley-Terry computation: the leaderboard of the judged pairs scores the systems as `sessions --judge`.
    judged = tmp_path / "judged.json"
    assert main(["sessions", str(bench), "--judge", "cues", "--out", str(judged), "--quiet"]) == 0
    ranked = {row["system"]: row["score"] for row in json.loads(judged.read_text())["ranking"]}
    table = next(s for s in board["sources"] if s["kind"] == "run")["tables"]["interaction"]
    assert {row["system"]: round(row["score"]["value"], 1) for row in table["systems"]} == ranked
    assert main(["evaluate", str(run)]) == 0
    (scored,) = json.loads((run / "evaluation" / "metrics.json").read_text())["runs"]
    # One of the two labels is the judge's; on the other it says both_bad where people said 2.
    assert (
        scored["metrics"]["accuracy"]["interaction"]["value"] == 0.5
        and scored["metrics"]["accuracy"]["interaction"]["n"] == 2
    )

    monkeypatch.setenv("TRACE_JUDGE_API_KEY", "local")
    shown = []

    def reader(body: dict) -> Reply:
        text = prompt_text(body)
        shown.append(text)
        first = text.split("Session 1:")[1].split("Session 2:")[0]
        return Reply(json.dumps({"reasoning": "r", "interaction": "2" if "no answer follows" in first else "1"}))

    with LLMServer(responder=reader) as server:
        llm = ["--model", "openai/test", "--api-base", server.api_base, "--swap", "--out", str(tmp_path / "llm")]
        assert main(["judge", "--bench", str(pairs), "--rubric", "interaction", *llm]) == 0
    # Swapped, each session's timeline moves with its audio: deaf's unanswered turn is shown second.
    item, deaf_first = pair("session-0", "deaf", "prompt")
    deaf_prompt = [t for t in shown if item["timeline_1"].strip() in t and item["timeline_2"].strip() in t]
    assert len(deaf_prompt) == 2 and {t.index("no answer follows") > t.index("Session 2:") for t in deaf_prompt} == {
        True,
        False,
    }
    records = [json.loads(line) for line in (tmp_path / "llm" / "results.jsonl").read_text().splitlines()]
    deaf = next(r for r in records if r["id"] == item["id"])
    prompt_wins = "2" if deaf_first else "1"
    assert deaf["verdicts"]["interaction"] == prompt_wins and deaf["orders"]["swapped"]["interaction"] == prompt_wins


def test_the_llm_reads_what_was_said_where_the_channels_were_transcribed(bench):
    timeline = _timeline(bench, "prompt")
    first = timeline.turns["user"][0]
    timeline.words = {"user": [{"word": "Hello", "start": first.start, "end": first.start + 0.3}], "system": None}
    lines = describe(timeline).splitlines()
    assert lines[0].endswith('user speaks: "Hello"') and not any('system speaks: "' in line for line in lines)
