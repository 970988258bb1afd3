"""`python -m trace_eval judge` and `fuse` from the command line, and the cues backbone on the bundled example."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from llm_server import Fail, LLMServer, PairSpec, Reply, blueprint, verdict_json, write_benchmark

from trace_eval.bench import load_benchmark
from trace_eval.cli import main
from trace_eval.judge.runfolder import read_results
from trace_eval.rubrics import load_rubric

TRACE = load_rubric("trace")
ROOT = Path(__file__).resolve().parents[2]


def _labelled_bench(root: Path) -> Path:
    specs = [
        PairSpec(
            id="slow",
            instruction_text='Say "good morning everyone" slowly.',
            response_1=blueprint("Good morning everyone.", wpm=100),
            response_2=blueprint("Good morning everyone.", wpm=240, p808=2.0),
        ),
        PairSpec(
            id="quiet",
            instruction_text='Whisper "see you tomorrow".',
            response_1=blueprint("See you tomorrow.", lufs=-20),
            response_2=blueprint("I like trains.", lufs=-40),
        ),
    ]
    return write_benchmark(root, specs)


def test_judge_with_cues_then_refuse(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("TRACE_JUDGE_MODEL", raising=False)
    bench = _labelled_bench(tmp_path / "bench")
    out = tmp_path / "run"
    assert main(["judge", "--bench", str(bench), "--out", str(out), "--quiet"]) == 0
    captured = capsys.readouterr()
    assert "offline `cues` backbone" in captured.err
    assert "judged 2 pairs" in captured.out
    records = {r["id"]: r for r in read_results(out / "results.jsonl").records}
    assert records["slow"]["verdicts"] == {"content": "both_good", "voice_quality": "1", "paralinguistics": "1"}
    assert records["quiet"]["verdicts"] == {"content": "1", "voice_quality": "both_good", "paralinguistics": "2"}
    quiet = dict(content="1", voice_quality="both_good", paralinguistics="2")
    assert records["quiet"]["overall"] == TRACE.fusion.fuse("cap", quiet) == "both_bad"
    assert set(records["slow"]["fused"]) == set(TRACE.fusion.policies)

    assert main(["fuse", str(out), "--fusion", "vote"]) == 0
    refused = {r["id"]: r for r in read_results(out / "results.jsonl").records}
    assert refused["quiet"]["overall"] == TRACE.fusion.fuse("vote", quiet) == "1"
    assert {k: r["verdicts"] for k, r in refused.items()} == {k: r["verdicts"] for k, r in records.items()}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["fusion"] == "vote" and summary["labels"]["overall"]["1"] == 2
    assert summary["run"]["calls"] == 2  # kept from the judge run
    assert json.loads((out / "config.json").read_text())["fusion"] == "vote"


def test_missing_blueprints_name_the_clips_and_the_command(tmp_path, capsys):
    bench = write_benchmark(tmp_path / "bench", 2, with_blueprints=False)
    assert main(["judge", "--bench", str(bench), "--out", str(tmp_path / "run"), "--quiet", "--model", "cues"]) == 2
    err = capsys.readouterr().err
    assert "6 clip(s)" in err and "audio/p0000_audio1.wav" in err
    assert f"make blueprints BENCH={bench.resolve()}" in err
    assert not (tmp_path / "run").exists()


def test_cli_stops_on_authentication_error(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TRACE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TRACE_JUDGE_MODEL", "openai/env-judge")  # the default --model
    bench = write_benchmark(tmp_path / "bench", 5)
    with LLMServer(default=Fail(401, "bad key")) as server:
        code = main(
            [
                "judge",
                "--bench",
                str(bench),
                "--api-base",
                server.api_base,
                "--out",
                str(tmp_path / "run"),
                "--quiet",
                "--concurrency",
                "1",
            ]
        )
        assert server.request_count == 1
        api_base = server.api_base
    assert code == 1
    err = capsys.readouterr().err
    assert "API key was rejected" in err and "HTTP 401" in err and "5 pair(s) not judged" in err
    assert api_base in err and "TRACE_JUDGE_API_KEY" in err and "Traceback" not in err
    assert json.loads((tmp_path / "run" / "config.json").read_text())["model"] == "openai/env-judge"


def _bench_with_a_failed_clip(root: Path, pairs: int = 3) -> tuple[Path, str]:
    """A benchmark whose p0001 answer 2 is a text file named .wav, recorded as the blueprints command records it."""
    from trace_eval.stage1.store import BlueprintStore

    bench = write_benchmark(root, pairs)
    relative = "audio/p0001_audio2.wav"
    store = BlueprintStore(bench)
    store.path_for(store.hash_of(relative)).unlink()
    (bench / relative).write_text("this is not audio")
    reason = f"{bench / relative}: Format not recognised"
    store.write_failures([{"path": relative, "sha256": None, "stage": "decode", "status": "failed", "reason": reason}])
    return bench, reason


def test_a_failed_answer_is_judged_as_saying_nothing_and_named(tmp_path, capsys, monkeypatch):
    """An answer whose audio does not decode counts against its system: its pair is judged, the broken answer
    saying nothing, with the cause in the reasoning; `show` names the cause too."""
    monkeypatch.delenv("TRACE_JUDGE_MODEL", raising=False)
    bench, reason = _bench_with_a_failed_clip(tmp_path / "bench")

    from trace_eval.stage1.store import BlueprintStore

    reads: list[str] = []
    real_read = BlueprintStore.get_by_path
    monkeypatch.setattr(BlueprintStore, "get_by_path", lambda store, path: reads.append(path) or real_read(store, path))
    assert main(["judge", "--bench", str(bench), "--out", str(tmp_path / "run"), "--quiet"]) == 0
    assert len(reads) == len(set(reads))  # every clip read once at most
    records = {r["id"]: r for r in read_results(tmp_path / "run" / "results.jsonl").records}
    assert [records[i]["status"] for i in ("p0000", "p0001", "p0002")] == ["ok", "ok", "ok"]
    failed = records["p0001"]
    assert "could not be heard" in failed["reasoning"] and "Format not recognised" in failed["reasoning"]
    assert failed["verdicts"]["content"] in ("1", "both_bad")  # the broken answer 2 never wins
    capsys.readouterr()

    assert main(["show", str(bench / "audio/p0001_audio2.wav")]) == 1
    err = capsys.readouterr().err
    assert "Format not recognised" in err and "remove" in err and "make blueprints" not in err


def test_a_run_with_nothing_judged_is_called_empty(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("TRACE_JUDGE_MODEL", raising=False)
    bench = write_benchmark(tmp_path / "none", 2, with_blueprints=False)
    code = main(["judge", "--bench", str(bench), "--out", str(tmp_path / "empty"), "--quiet", "--skip-failed"])
    assert code == 1
    err = capsys.readouterr().err
    assert "empty run" in err and "2 skipped" in err


def test_bad_options_are_reported(tmp_path, capsys):
    bench = write_benchmark(tmp_path / "bench", 1)
    assert main(["judge", "--bench", str(bench), "--judge", "audio", "--model", "cues", "--quiet"]) == 2
    assert "cannot judge raw audio" in capsys.readouterr().err
    assert main(["judge", "--bench", str(bench), "--model", "no-provider-model", "--quiet"]) == 2
    assert "provider" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["judge", "--bench", str(bench), "--drop", "emotion,colour"])
    assert main(["fuse", str(tmp_path / "nowhere"), "--fusion", "cap"]) == 2


def test_cues_backbone_gets_every_label_of_the_example_right(tmp_path, example_with_blueprints):
    bench = load_benchmark(example_with_blueprints)
    assert (
        main(["judge", "--bench", str(bench.root), "--model", "cues", "--out", str(tmp_path / "run"), "--quiet"]) == 0
    )
    records = {r["id"]: r for r in read_results(tmp_path / "run" / "results.jsonl").records}
    wrong = [
        f"{pair.id} {key}: {records[pair.id]['verdicts'].get(key, records[pair.id]['overall'])} != {label}"
        for pair in bench.pairs
        for key, label in pair.label.items()
        if (records[pair.id]["overall"] if key == "overall" else records[pair.id]["verdicts"][key]) != label
    ]
    assert wrong == []
    assert len(records) == len(bench.pairs) == 8


def test_dry_run_prints_calls_tokens_and_price_and_asks_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TRACE_CACHE_DIR", str(tmp_path / "cache"))
    bench = write_benchmark(tmp_path / "bench", 2)
    with LLMServer() as server:
        code = main(
            [
                "judge",
                "--bench",
                str(bench),
                "--model",
                "openai/local",
                "--api-base",
                server.api_base,
                "--out",
                str(tmp_path / "run"),
                "--dry-run",
            ]
        )
        assert server.request_count == 0
    assert code == 0 and not (tmp_path / "run").exists()
    out = capsys.readouterr().out
    assert "calls 2 (cached answers not counted: 0" in out and "(estimate" in out and "unknown price" in out


def test_skip_failed_skips_a_clip_that_does_not_exist(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("TRACE_JUDGE_MODEL", raising=False)
    bench = write_benchmark(tmp_path / "bench", 3)
    manifest = json.loads((bench / "manifest.json").read_text())
    manifest[1]["audio2_path"] = "audio/does_not_exist.wav"
    (bench / "manifest.json").write_text(json.dumps(manifest))
    assert main(["blueprints", str(bench), "--only", "pitch", "--quiet"]) == 1  # recorded as failed
    assert "does_not_exist.wav" in (bench / "blueprints" / "failures.jsonl").read_text()
    capsys.readouterr()

    assert main(["judge", "--bench", str(bench), "--out", str(tmp_path / "run"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "audio/does_not_exist.wav does not exist" in err and "--skip-failed" in err

    assert main(["judge", "--bench", str(bench), "--out", str(tmp_path / "run"), "--quiet", "--skip-failed"]) == 0
    out = capsys.readouterr().out
    records = {r["id"]: r for r in read_results(tmp_path / "run" / "results.jsonl").records}
    assert [records[i]["status"] for i in ("p0000", "p0001", "p0002")] == ["ok", "skipped", "ok"]
    assert records["p0001"]["reason"] == "audio/does_not_exist.wav does not exist"
    # The cues are counted over the clips judged: two pairs of two answers, none of the skipped pair's.
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["cues"]["clips"] == 4
    assert "cues measured over 4 response clips" in out


def test_a_run_whose_every_answer_is_invalid_fails_and_says_why(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TRACE_CACHE_DIR", str(tmp_path / "cache"))
    bench = write_benchmark(tmp_path / "bench", 2)
    with LLMServer(default=Reply("Response one says answer one.")) as server:
        code = main(
            [
                "judge",
                "--bench",
                str(bench),
                "--model",
                "openai/small",
                "--api-base",
                server.api_base,
                "--structured",
                "off",
                "--out",
                str(tmp_path / "run"),
                "--quiet",
            ]
        )
    assert code == 1
    err = capsys.readouterr().err
    assert "no pair got a verdict (2 invalid)" in err
    assert "most common reason (2 of 2, invalid)" in err and "--structured on" in err


@pytest.mark.parametrize(
    "where, words",
    [
        (
            "http://judge.invalid:8000/v1",
            ["cannot resolve the host name of --api-base http://judge.invalid:8000/v1", "check its spelling"],
        ),
        ("http://127.0.0.1:{closed}/v1", ["connection refused at http://127.0.0.1:", "start the server"]),
        (
            "https://127.0.0.1:{plain}/v1",
            ["TLS handshake with https://127.0.0.1:", "WRONG_VERSION_NUMBER", "write http:// in --api-base"],
        ),
    ],
)
def test_an_unreachable_server_is_told_apart_by_its_cause(where, words, tmp_path, capsys, monkeypatch):
    import socket

    monkeypatch.setenv("TRACE_CACHE_DIR", str(tmp_path / "cache"))
    bench = write_benchmark(tmp_path / "bench", 3)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]  # nobody listens there once the socket is closed
    with LLMServer() as plain:  # speaks plain HTTP
        code = main(
            [
                "judge",
                "--bench",
                str(bench),
                "--model",
                "openai/local",
                "--api-base",
                where.format(closed=closed, plain=plain.port),
                "--retries",
                "0",
                "--out",
                str(tmp_path / "run"),
                "--quiet",
            ]
        )
    assert code == 1
    err = capsys.readouterr().err
    assert all(word in err for word in words), err
    assert "3 pair(s) not judged" in err and "Traceback" not in err


def test_an_unresolvable_provider_is_not_called_a_refused_connection(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TRACE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("GEMINI_API_KEY", "dummy")
    monkeypatch.setenv("GEMINI_API_BASE", "https://generativelanguage.invalid")  # no network, wherever the test runs
    bench = write_benchmark(tmp_path / "bench", 2)
    code = main(
        [
            "judge",
            "--bench",
            str(bench),
            "--model",
            "gemini/gemini-2.5-flash",
            "--retries",
            "0",
            "--out",
            str(tmp_path / "run"),
            "--quiet",
        ]
    )
    assert code == 1
    err = capsys.readouterr().err
    assert "cannot resolve generativelanguage.invalid (the gemini API)" in err and "--model cues" in err
    assert "refused" not in err and "--api-base" not in err


def _answers_only_when_structured(body: dict) -> Reply:
    """A small model: a verdict when the server constrains it with a JSON schema, else the transcript."""
    if "response_format" in body:
        return Reply(verdict_json("1", "both_good", "1"))
    return Reply("Response 1: answer one. Response 2: answer two.")


def test_a_local_server_is_asked_for_structured_output(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TRACE_CACHE_DIR", str(tmp_path / "cache"))
    bench = write_benchmark(tmp_path / "bench", 3)
    with LLMServer(responder=_answers_only_when_structured) as server:
        code = main(
            [
                "judge",
                "--bench",
                str(bench),
                "--model",
                "openai/small",
                "--api-base",
                server.api_base,
                "--out",
                str(tmp_path / "run"),
                "--quiet",
            ]
        )
        assert server.request_count == 3 and all("response_format" in body for body in server.requests)
    assert code == 0
    assert [r["status"] for r in read_results(tmp_path / "run" / "results.jsonl").records] == ["ok"] * 3


def test_a_server_that_refuses_structured_output_is_judged_without_it(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TRACE_CACHE_DIR", str(tmp_path / "cache"))
    bench = write_benchmark(tmp_path / "bench", 3)
    with LLMServer(refuse_response_format=True) as server:
        code = main(
            [
                "judge",
                "--bench",
                str(bench),
                "--model",
                "openai/old-server",
                "--api-base",
                server.api_base,
                "--concurrency",
                "1",
                "--out",
                str(tmp_path / "run"),
                "--quiet",
            ]
        )
        sent = ["response_format" in body for body in server.requests]
        # Insisted on (--structured on), the refusal is each pair's error, and the run's.
        insisted = main(
            [
                "judge",
                "--bench",
                str(bench),
                "--model",
                "openai/old-server",
                "--api-base",
                server.api_base,
                "--structured",
                "on",
                "--out",
                str(tmp_path / "on"),
                "--quiet",
            ]
        )
    assert code == 0 and insisted == 1
    # Tried first (and by each pair already in flight), then every pair is asked without it once.
    assert sent[0] and sent.count(False) == 3 and sent[-1] is False
    captured = capsys.readouterr()
    assert "refused the JSON-schema response format" in captured.err and "HTTP 400" not in captured.out
    assert "structured output: refused by the backbone" in captured.out
    assert [r["status"] for r in read_results(tmp_path / "run" / "results.jsonl").records] == ["ok"] * 3
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert "response_format is not supported" in summary["run"]["structured_refused"]
    assert "no pair got a verdict (3 error)" in captured.err and "response_format is not supported" in captured.err


def test_fuse_without_fusion_uses_the_runs_own_policy(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("TRACE_JUDGE_MODEL", raising=False)
    bench = _labelled_bench(tmp_path / "bench")
    out = tmp_path / "run"
    assert main(["judge", "--bench", str(bench), "--fusion", "vote", "--out", str(out), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["fuse", str(out), "--table"]) == 0
    printed = capsys.readouterr().out
    assert "overall under vote (the run's own)" in printed and "quiet" in printed
    assert json.loads((out / "config.json").read_text())["fusion"] == "vote"


def test_judge_without_bench_judges_the_current_benchmark_folder_or_stops(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("TRACE_JUDGE_MODEL", raising=False)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["judge", "--model", "cues", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"no --bench, and the current folder ({elsewhere}) holds no manifest.json" in err
    assert "give the benchmark folder with --bench DIR" in err
    assert not list(elsewhere.iterdir()) and not (elsewhere / "runs").exists()  # nothing judged, nothing written

    bench = _labelled_bench(tmp_path / "bench")
    monkeypatch.chdir(bench)
    assert main(["judge", "--model", "cues", "--out", str(tmp_path / "run"), "--quiet"]) == 0
    captured = capsys.readouterr()
    assert f"benchmark: {bench} (the current folder)" in captured.err
    assert f"  benchmark: {bench}" in captured.out and "judged 2 pairs" in captured.out
    assert main(["fuse", str(tmp_path / "run")]) == 0
    assert f"  benchmark: {bench}" in capsys.readouterr().out


def test_swap_with_the_cues_backbone_says_it_measures_nothing(tmp_path, capsys):
    bench = _labelled_bench(tmp_path / "bench")
    assert (
        main(["judge", "--bench", str(bench), "--model", "cues", "--swap", "--out", str(tmp_path / "r"), "--quiet"])
        == 0
    )
    captured = capsys.readouterr()
    assert "notice: --swap with the cues backbone measures nothing" in captured.err
    # Where the offline backbone is offered, what it cannot judge and where a real judge comes from.
    assert "judges Content only where the instruction quotes the words to say" in captured.err
    assert "vLLM, Ollama, llama.cpp" in captured.err and "docs/local-judge.md" in captured.err
    assert (Path(__file__).resolve().parents[2] / "docs" / "local-judge.md").is_file()
    assert "position consistency 100.0% over 2 pairs" in captured.out
    assert "(--swap with the cues backbone measures nothing" in captured.out


def _judge_process(code: str, tmp_path: Path, *args: str, **env_vars: str) -> subprocess.CompletedProcess:
    """`code` then the judge command in a process of its own, as a user runs it (a fresh interpreter: what it
    imports is its own)."""
    script = f"import sys\n{code}\nfrom trace_eval.cli import entry\nsys.exit(entry())\n"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRACE_JUDGE_API_KEY": "dummy", "TRACE_CACHE_DIR": str(tmp_path)}
    env.pop("TRACE_JUDGE_VIA_LITELLM", None)
    env.update(env_vars)
    return subprocess.run(
        [sys.executable, "-c", script, "judge", *args], capture_output=True, text=True, env=env, cwd=tmp_path
    )


def test_a_missing_benchmark_is_said_before_the_judge_s_modules_load(tmp_path):
    heavy = ("numpy", "trace_eval.judge.runner", "litellm")
    report = f"import atexit; atexit.register(lambda: print(sorted(m for m in {heavy!r} if m in sys.modules)))"
    done = _judge_process(report, tmp_path, "--bench", str(tmp_path / "nowhere"), "--model", "openai/x")
    assert done.returncode == 2 and "nowhere: benchmark folder not found" in done.stderr
    assert done.stdout.strip() == "[]", done.stdout  # the run's modules (numpy, the runner, litellm) never loaded


def test_litellm_is_imported_while_the_benchmark_is_read_and_never_for_cues(tmp_path):
    """An LLM judge through litellm: litellm's import (seconds) is under way before the benchmark is read, in a
    thread of its own; `cues` imports no litellm at all."""
    bench = write_benchmark(tmp_path / "bench", 2)
    watch = (
        "import trace_eval.judge.runner as runner, trace_eval.judge.litellm_backbone as lb\n"
        "read = runner.load_benchmark\n"
        "def load_benchmark(*a, **k):\n"
        "    print('importing litellm while the benchmark is read:', lb._importing is not None and "
        "(lb._importing.is_alive() or 'litellm' in sys.modules))\n"
        "    return read(*a, **k)\n"
        "runner.load_benchmark = load_benchmark\n"
        "import atexit; atexit.register(lambda: print('litellm imported:', 'litellm' in sys.modules))"
    )
    with LLMServer(default=Reply(verdict_json())) as server:
        common = ["--bench", str(bench), "--quiet", "--no-cache"]
        llm = _judge_process(
            watch, tmp_path, *common, "--model", "openai/x", "--api-base", server.api_base, TRACE_JUDGE_VIA_LITELLM="1"
        )
        assert server.request_count == 2
    assert llm.returncode == 0, llm.stderr[-2000:]
    assert "importing litellm while the benchmark is read: True" in llm.stdout
    cues = _judge_process(watch, tmp_path, *common, "--model", "cues", "--out", str(tmp_path / "cues"))
    assert cues.returncode == 0, cues.stderr[-2000:]
    assert "importing litellm while the benchmark is read: False" in cues.stdout
    assert "litellm imported: False" in cues.stdout


def test_a_local_server_is_judged_without_importing_litellm(tmp_path):
    """--model openai/NAME --api-base URL: the calls go straight over HTTP; neither litellm nor the OpenAI client,
    nor a model library, nor what httpx imports for its command-line tool (rich) or for trio, is imported."""
    bench = write_benchmark(tmp_path / "bench", 2)
    heavy = ("litellm", "openai", "torch", "tiktoken", "aiohttp", "trio", "rich")
    report = f"import atexit; atexit.register(lambda: print(sorted(m for m in {heavy!r} if m in sys.modules)))"
    with LLMServer(default=Reply(verdict_json())) as server:
        args = ["--bench", str(bench), "--quiet", "--no-cache", "--model", "openai/x", "--api-base", server.api_base]
        done = _judge_process(report, tmp_path, *args)
        assert server.request_count == 2
    assert done.returncode == 0, done.stderr[-2000:]
    assert "judged 2 pairs with openai/x" in done.stdout
    assert done.stdout.splitlines()[-1] == "[]", done.stdout
