"""Full-Duplex-Bench v1.5's behaviour task (`sessions --task behaviour --model --checkout`) on v1.5 folders built
from the recorded English user-interruption samples (planted_sessions.py; the clean recordings are copies), the
tags asked of a local OpenAI-compatible server. The checkout is one written here in the benchmark's shape (an
instruction file, a script holding the `final_input` f-string): the benchmark's own are read from a user's
checkout, never copied."""

from __future__ import annotations

import itertools
import json
import shutil

import pytest
from llm_server import LLMServer, Reply
from planted_sessions import full_duplex_bench_samples

from trace_eval.cli import main
from trace_eval.sessions.behaviour import parse_behaviour

SCRIPT = '''
def eval_behavior_all(data_dir, client, task, aggregate=False):
    for dir_path in []:
        final_input = f"""
        {{
            "input_clean": {input_clean_text},
            "input_noisy": {input_noisy_text},
            "output_clean": {output_clean_text},
            "output_noisy": {output_noisy_text}
        }}
        """
'''


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("behaviour")
    full_duplex_bench_samples(root / "v1", "en")
    for sample in sorted((root / "v1" / "user_interruption").iterdir()):
        folder = root / "v1.5" / sample.name
        shutil.copytree(sample, folder)
        for name in ("input", "output"):
            shutil.copy(folder / f"{name}.wav", folder / f"clean_{name}.wav")
            shutil.copy(folder / f"{name}.json", folder / f"clean_{name}.json")
    checkout = root / "checkout" / "v1_v1.5" / "evaluation"
    (checkout / "instruction").mkdir(parents=True)
    (checkout / "instruction" / "behavior.txt").write_text('Tag the behaviour: {"behaviour": ["C_*"]}\n')
    (checkout / "eval_behavior.py").write_text(SCRIPT)
    return root / "v1.5", root / "checkout"


def test_the_script_reads_the_first_json_object_with_a_behaviour():
    assert parse_behaviour('I think {"x": 1} then {"behaviour": ["C_RESPOND"]}') == {"behaviour": ["C_RESPOND"]}
    assert parse_behaviour("C_RESPOND, clearly") is None


def test_tags_from_any_model_summarised_as_the_script_does(built, tmp_path, monkeypatch, capsys):
    root, checkout = built
    monkeypatch.setenv("TRACE_JUDGE_API_KEY", "local")
    tags = itertools.cycle(["C_RESPOND", "C_RESUME"])
    messages = []

    def tagger(body: dict) -> Reply:
        messages.append(body["messages"])
        return Reply(json.dumps({"behaviour": [next(tags)]}))

    out = tmp_path / "tags.json"
    with LLMServer(responder=tagger) as server:
        server.push(Reply("It resumes."))  # no JSON: asked again
        model = ["--model", "openai/test", "--api-base", server.api_base, "--checkout", str(checkout)]
        code = main(["sessions", str(root), "--task", "behaviour", "--compat", "full-duplex-bench", *model,
                     "--out", str(out)])  # fmt: skip
    assert code == 0
    system, user = messages[0]
    assert system["content"].startswith("Tag the behaviour")
    written = json.loads((root / "stops-and-answers" / "input.json").read_text())
    assert json.dumps(written, separators=(",", ":"), ensure_ascii=False) in user["content"]
    task = json.loads(out.read_text())["tasks"]["behaviour"]
    assert task["summary"] == {"C": {"C_RESPOND": 0.5, "C_RESUME": 0.5}}
    assert "C_RESPOND" in capsys.readouterr().out
    # The default without --words has no words to give: untagged, saying so, and nothing asked.
    with LLMServer(responder=tagger) as server:
        model = ["--model", "openai/test", "--api-base", server.api_base, "--checkout", str(checkout)]
        assert main(["sessions", str(root), "--task", "behaviour", *model, "--out", str(out)]) == 0
        assert server.request_count == 0
    (first, _) = json.loads(out.read_text())["tasks"]["behaviour"]["samples"]
    assert first["tagged"] == {"behaviour": None, "why": "no words to tag: transcribe with --words"}


def test_the_default_tags_trace_evals_own_words(built, tmp_path, monkeypatch):
    root, checkout = built
    one = tmp_path / "one"
    shutil.copytree(root / "stops-and-answers", one / "stops-and-answers")
    monkeypatch.setenv("TRACE_JUDGE_API_KEY", "local")
    seen = []

    def tagger(body: dict) -> Reply:
        seen.append(body["messages"][1]["content"])
        return Reply('{"behaviour": ["C_RESPOND"]}')

    out = tmp_path / "tags.json"
    with LLMServer(responder=tagger) as server:
        model = ["--model", "openai/test", "--api-base", server.api_base, "--checkout", str(checkout)]
        assert main(["sessions", str(one), "--task", "behaviour", "--words", *model, "--out", str(out)]) == 0
    (sample,) = json.loads(out.read_text())["tasks"]["behaviour"]["samples"]
    assert sample["tagged"]["behaviour"] == ["C_RESPOND"] and sample["words_from"]
    # What the recogniser heard of the system's answer ("... the conference ..." prompts) is in the message.
    assert '"output_noisy": {"text":' in seen[0] and '"chunks":[{"text":' in seen[0]


def test_what_cannot_be_asked_is_named(built, tmp_path, capsys, monkeypatch):
    root, checkout = built
    assert main(["sessions", str(root), "--task", "behaviour", "--model", "openai/test"]) == 1
    assert "add --model MODEL and --checkout PATH" in capsys.readouterr().err
    partial = tmp_path / "partial"
    shutil.copytree(root / "talks-through", partial / "talks-through")
    (partial / "talks-through" / "clean_output.json").unlink()
    monkeypatch.setenv("TRACE_JUDGE_API_KEY", "local")
    with LLMServer(responder=lambda body: Reply('{"behaviour": ["C_RESUME"]}')) as server:
        model = ["--model", "openai/test", "--api-base", server.api_base, "--checkout", str(checkout)]
        main(["sessions", str(partial), "--task", "behaviour", "--compat", "full-duplex-bench", *model])
    assert "no clean_output.json: the benchmark's script skips this folder" in capsys.readouterr().err
