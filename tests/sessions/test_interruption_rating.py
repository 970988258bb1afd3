"""The rating of an answer after an interruption asked of any model (`sessions --model --checkout`), on the
user-interruption samples built from recorded English speech, through a local OpenAI-compatible server. The
checkout is one written here in the benchmark's shape (a script holding a `system_msg` and a `user_msg`
f-string): the benchmark's own prompt is read from a user's checkout, never copied."""

from __future__ import annotations

import json
import re

import pytest
from llm_server import LLMServer, Reply
from planted_sessions import full_duplex_bench_samples

from trace_eval.cli import main
from trace_eval.sessions import SessionError
from trace_eval.sessions.interruption_rating import parse_rating, read_prompt

SCRIPT = '''
def eval_user_interruption(root_dir, client):
    system_msg = """Rate the answer given after the interruption, 0 to 5.
    Answer as:
    Analysis: [Your analysis].
    I would rate the AI's response as [Rating].
    """
    for sample in []:
        user_msg = f"""
        - Before: {in_before_interrupt_text}
        - Interruption: {in_interrupt_text}
        - Answer: {out_after_interrupt_text}
        """
'''


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("rating")
    full_duplex_bench_samples(root / "samples", "en")
    checkout = root / "checkout"
    (checkout / "v1_v1.5" / "evaluation").mkdir(parents=True)
    (checkout / "v1_v1.5" / "evaluation" / "eval_user_interruption.py").write_text(SCRIPT)
    return root / "samples" / "user_interruption", checkout


def rating_by_answer(body: dict) -> Reply:
    """5 for an answer with words, 0 for none, in the script's format."""
    user = body["messages"][1]["content"]
    answer = re.search(r"- Answer: (.*)", user).group(1).strip()
    return Reply(f"Analysis: the answer is {len(answer.split())} words.\nI would rate the AI's response as "
                 f"{5 if answer else 0}")  # fmt: skip


def test_the_prompt_is_read_from_the_checkout(built):
    _, checkout = built
    prompt = read_prompt(checkout)
    system, user = prompt.messages("the context", "the interruption", "the answer")
    assert system["content"].startswith("Rate the answer given after the interruption")
    assert "- Before: the context" in user["content"] and "- Answer: the answer" in user["content"]
    with pytest.raises(SessionError, match="not a Full-Duplex-Bench checkout"):
        read_prompt(checkout / "v1_v1.5")
    assert parse_rating("Analysis: good.\nI would rate the AI's response as 4.") == {"analysis": "good.", "rating": 4}
    assert parse_rating("It is a 4.") is None


def test_any_model_rates_what_compat_would_read_from_rating_json(built, tmp_path, monkeypatch, capsys):
    root, checkout = built
    monkeypatch.setenv("TRACE_JUDGE_API_KEY", "local")
    out = tmp_path / "rated.json"
    with LLMServer(responder=rating_by_answer) as server:
        server.push(Reply("A fine answer, I would say."))  # no rating: asked again
        model = ["--model", "openai/test", "--api-base", server.api_base, "--checkout", str(checkout)]
        assert main(["sessions", str(root), "--compat", "full-duplex-bench", *model, "--out", str(out)]) == 0
        asked = server.request_count
    samples = json.loads(out.read_text())["tasks"]["user_interruption"]["samples"]
    assert asked == 1 + len(samples)  # each sample that took the turn once, the unparsed answer again
    assert all(s["rated"]["rating"] == 5 and s["rated"]["model"] == "openai/test" for s in samples)
    assert "average_rating           5" in capsys.readouterr().out
    # The default rates the answer's own words: without --words there are none, and it says so.
    with LLMServer(responder=rating_by_answer) as server:
        model = ["--model", "openai/test", "--api-base", server.api_base, "--checkout", str(checkout)]
        assert main(["sessions", str(root), *model, "--out", str(out)]) == 0
        assert server.request_count == 0
    written = json.loads(out.read_text())["tasks"]["user_interruption"]["samples"]
    samples = {s["sample"].rsplit("/", 1)[-1]: s for s in written}
    assert samples["stops-and-answers"]["rated"]["why"] == "the answer has no words: rate with --words"
    assert samples["talks-through"]["rating"] is None and "rated" not in samples["talks-through"]


def test_an_answer_that_never_parses_is_recorded_and_setup_errors_stop(built, tmp_path, monkeypatch, capsys):
    root, checkout = built
    monkeypatch.setenv("TRACE_JUDGE_API_KEY", "local")
    out = tmp_path / "rated.json"
    with LLMServer(responder=lambda body: Reply("No idea.")) as server:
        model = ["--model", "openai/test", "--api-base", server.api_base, "--checkout", str(checkout)]
        assert main(["sessions", str(root), "--compat", "full-duplex-bench", *model, "--out", str(out)]) == 0
    task = json.loads(out.read_text())["tasks"]["user_interruption"]
    (first, *_) = task["samples"]
    assert first["rating"] is None and first["rated"]["raw"] == "No idea." and "in 3 answers" in first["rated"]["why"]
    assert task["summary"]["rating_note"].startswith("samples the model gave no rating for")
    capsys.readouterr()
    assert main(["sessions", str(root), "--model", "openai/test"]) == 1
    assert "add --checkout PATH" in capsys.readouterr().err
    unreachable = ["--model", "openai/test", "--api-base", "http://127.0.0.1:9/v1", "--checkout", str(checkout)]
    assert main(["sessions", str(root), "--compat", "full-duplex-bench", *unreachable]) == 1
    assert "cannot reach http://127.0.0.1:9/v1" in capsys.readouterr().err
