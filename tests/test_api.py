"""The Python API (trace_eval/api.py): the same verdicts as the command line, the same caches, calls in
flight at once, and a light `import trace_eval`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from llm_server import Fail, LLMServer, Reply, verdict_json

import trace_eval
from trace_eval.bench import load_benchmark
from trace_eval.cli import main as cli
from trace_eval.judge.caller import RetryPolicy
from trace_eval.stage1.store import BlueprintStore

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("torch", "funasr", "litellm", "ray", "transformers", "speechbrain", "numpy")


def share_store(bench: Path, monkeypatch) -> None:
    """Point $TRACE_STORE at the store the benchmark's blueprints were made into: the clips handed over from code
    find them current there, as every folder on one machine shares one store (a blueprint is keyed by its audio's
    content alone)."""
    monkeypatch.setenv("TRACE_STORE", BlueprintStore(bench).recorded_store())


def pairs_of(bench: Path) -> list[dict]:
    loaded = load_benchmark(bench)
    return [
        {
            "id": p.id,
            "instruction": loaded.resolve(p.instruction_path),
            "a": loaded.resolve(p.audio1_path),
            "b": loaded.resolve(p.audio2_path),
            "instruction_text": p.instruction_text,
        }
        for p in loaded.pairs
        if p.instruction_path and p.audio1_path and p.audio2_path
    ]


def test_import_trace_eval_is_light_and_lists_its_api(tmp_path):
    code = (
        "import sys, trace_eval\n"
        f"heavy = {HEAVY!r}\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
        "judge = trace_eval.Judge\n"  # the class, not yet a judge: still no model library
        "print(sorted(m for m in heavy if m in sys.modules and m != 'numpy'))\n"
        "print(trace_eval.__all__)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    before, after, names = done.stdout.splitlines()
    assert before == "[]" and after == "[]"
    for name in ("Judge", "Verdict", "blueprint", "blueprints", "judge_bench", "evaluate", "leaderboard"):
        assert name in names and hasattr(trace_eval, name)
    with pytest.raises(AttributeError):
        trace_eval.no_such_name  # noqa: B018


def test_compare_gives_the_verdicts_fused_labels_and_confidences_of_judge_and_fuse(
    example_with_blueprints, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("TRACE_CACHE_DIR", str(tmp_path / "cache"))
    run = tmp_path / "run"
    assert cli(["judge", "--bench", str(example_with_blueprints), "--model", "cues", "--out", str(run), "--quiet"]) == 0
    assert cli(["fuse", str(run), "--fusion", "content-first"]) == 0
    capsys.readouterr()
    records = {r["id"]: r for r in map(json.loads, (run / "results.jsonl").read_text().splitlines())}

    workdir = tmp_path / "work"
    share_store(example_with_blueprints, monkeypatch)
    judge = trace_eval.Judge(model="cues", fusion="content-first", workdir=workdir)
    pairs = pairs_of(example_with_blueprints)
    assert len(pairs) == len(records) == 8
    for pair in pairs:
        verdict = judge.compare(pair["instruction"], pair["a"], pair["b"], pair["instruction_text"], id=pair["id"])
        record = records[pair["id"]]
        assert verdict.status == record["status"] == "ok"
        assert verdict.labels == record["verdicts"]
        assert verdict.fused == record["fused"] and verdict.overall == record["overall"]
        assert verdict.fusion == "content-first"
        assert verdict.confidence == record["confidence"]
        assert verdict.undetermined == record["undetermined"]
        assert verdict.cost_usd == record["cost_usd"] and not verdict.cache_hit
    assert judge.blueprints_made == 0  # the store already held every clip's blueprint

    # A new judge (a new process, say) on the same clips: Stage 1 finds everything current.
    again = trace_eval.Judge(model="cues", fusion="content-first", workdir=workdir)
    streamed = {v.id: v for v in again.compare_many(pairs, concurrency=4)}
    assert {i: v.overall for i, v in streamed.items()} == {i: r["overall"] for i, r in records.items()}
    assert again.blueprints_made == 0  # (the cues rules run again: they are cheaper than a cache look-up)

    # The same audio as bytes is the same clip; the judge asks Stage 1 nothing new for it.
    first = pairs[0]
    as_bytes = again.compare(
        Path(first["instruction"]).read_bytes(),
        Path(first["a"]).read_bytes(),
        Path(first["b"]).read_bytes(),
        first["instruction_text"],
    )
    assert as_bytes.labels == records[first["id"]]["verdicts"]
    assert again.blueprints_made == 0


def test_blueprint_of_samples_equals_that_of_their_file(example_with_blueprints, tmp_path):
    import soundfile as sf

    clip = "audio/mini-01_a.wav"
    samples, rate = sf.read(str(example_with_blueprints / clip), dtype="float32")
    made = trace_eval.blueprint((samples, rate), workdir=tmp_path / "work")
    stored = BlueprintStore(example_with_blueprints).get_by_path(clip)
    assert stored is not None
    assert made["agent_response"] == stored["agent_response"]
    assert made["duration_s"] == stored["duration_s"]
    # The clip is kept under its content's hash, where Stage 1's store and path index find it again.
    assert (tmp_path / "work" / "clips" / f"{made['provenance']['audio_sha256']}.wav").is_file()


def test_a_script_that_imports_numpy_first_gets_the_blueprint_the_command_line_made(example_with_blueprints, tmp_path):
    """numpy picks its kernels when it is imported: a script that imports it before trace_eval runs, on an
    AVX-512 CPU, other kernels than the numeric class's, and heard mini-07_b as Vietnamese where the command
    line heard English. Stage 1 then runs in a new process that has the class, and gives the same blueprint."""
    from extractors import numerics

    clip = "audio/mini-07_b.wav"
    script = (
        "import numpy, json, sys\n"  # first, as a user's script does
        "import trace_eval\n"
        "from extractors.numerics import check\n"
        "made = trace_eval.blueprint(sys.argv[1], workdir=sys.argv[2], device='cpu')\n"
        "print(json.dumps({'here': check().record(), 'made': made}))\n"
    )
    unpinned = {k: v for k, v in os.environ.items() if k not in numerics.environment("avx2") and k != numerics.CHOOSE}
    env = {**unpinned, "PYTHONPATH": str(ROOT), "TRACE_STORE": str(tmp_path / "store")}
    args = [str(example_with_blueprints / clip), str(tmp_path / "work")]
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.splitlines()[-1])
    stored = BlueprintStore(example_with_blueprints).get_by_path(clip)
    assert stored is not None
    if "avx512f" in numerics._cpu_flags():  # elsewhere numpy has no kernels above the class's to pick
        assert out["here"]["class"] == "unpinned"
    for key in ("agent_response", "words", "transcript_quality", "agent_audio_quality"):
        assert out["made"][key] == stored[key], key
    # The command line's is the variant that also tests the answer in English, its instruction's language: the
    # same language token, the same language heard.
    made, told = out["made"]["language"], stored["language"]
    assert made["evidence"]["token"] == told["evidence"]["token"] and made["code"] == told["code"], (made, told)
    assert out["made"]["provenance"]["extractors"]["asr"]["numerics"]["class"] == numerics.numeric_class()


def test_compare_many_keeps_16_calls_in_flight_and_a_second_pass_asks_nothing(
    example_with_blueprints, tmp_path, monkeypatch
):
    base = pairs_of(example_with_blueprints)
    # 32 pairs, each with its own instruction text, so no two render the same prompt.
    pairs = [dict(base[n % len(base)], id=f"q{n:02d}", instruction_text=f"Say 'number {n}'.") for n in range(32)]
    workdir = tmp_path / "work"
    share_store(example_with_blueprints, monkeypatch)
    with LLMServer(responder=lambda body: Reply(verdict_json("1", "both_good", "2"), delay_s=0.25)) as server:

        def make(cache: str) -> trace_eval.Judge:
            return trace_eval.Judge(
                model="openai/scripted",
                api_base=server.api_base,
                api_key="dummy",
                workdir=workdir,
                cache_dir=tmp_path / cache,
                retry=RetryPolicy(max_retries=0),
            )

        one_judge = make("cache-one")
        one = [one_judge.compare(p["instruction"], p["a"], p["b"], p["instruction_text"], id=p["id"]) for p in pairs]
        assert server.most_in_flight == 1

        many_judge = make("cache-many")
        many = list(many_judge.compare_many(pairs, concurrency=16))
        assert server.request_count == 64
        # Counted by the server, not timed (a loaded machine stretches any timing): 16 requests waited out their
        # delay at once, and never more.
        assert server.most_in_flight == 16
        assert {v.id for v in many} == {p["id"] for p in pairs}
        scripted = {"content": "1", "voice_quality": "both_good", "paralinguistics": "2"}
        assert all(v.ok and v.labels == scripted and not v.cache_hit for v in one + many)

        # Again, with a new judge on the same cache: every answer is read from it.
        again = make("cache-many")
        repeated = list(again.compare_many(pairs, concurrency=16))
        assert server.request_count == 64 and again.calls == 0 and again.cache_hits == 32
        assert all(v.cache_hit for v in repeated)
        assert again.blueprints_made == 0


def test_acompare_in_a_running_loop(example_with_blueprints, tmp_path, monkeypatch):
    import asyncio

    workdir = tmp_path / "work"
    share_store(example_with_blueprints, monkeypatch)
    judge = trace_eval.Judge(model="cues", workdir=workdir)
    pairs = pairs_of(example_with_blueprints)[:3]

    async def main() -> tuple[list, list]:
        single = [await judge.acompare(p["instruction"], p["a"], p["b"], p["instruction_text"]) for p in pairs]
        streamed = [v async for v in judge.acompare_many(pairs)]
        with pytest.raises(RuntimeError, match="acompare"):
            judge.compare(pairs[0]["instruction"], pairs[0]["a"], pairs[0]["b"])
        return single, streamed

    single, streamed = asyncio.run(main())
    assert sorted(v.overall or "" for v in single) == sorted(v.overall or "" for v in streamed)


def test_errors_are_the_command_line_s(example_with_blueprints, tmp_path, monkeypatch):
    with pytest.raises(trace_eval.JudgeError, match="unknown fusion policy 'nope'"):
        trace_eval.Judge(fusion="nope", workdir=tmp_path)
    judge = trace_eval.Judge(workdir=tmp_path)
    with pytest.raises(FileNotFoundError, match="missing.wav: audio file not found"):  # the first clip given
        judge.compare(tmp_path / "missing.wav", tmp_path / "a.wav", tmp_path / "b.wav")
    with pytest.raises(TypeError, match="path, the bytes"):
        judge.compare(None, 3, 4, "Say hi")  # type: ignore[arg-type]
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "TRACE_JUDGE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(trace_eval.JudgeError, match="GEMINI_API_KEY"):
        trace_eval.Judge(model="gemini/gemini-2.5-flash", workdir=tmp_path)

    # A rejected key stops at once, as it stops a run, with the run's words.
    share_store(example_with_blueprints, monkeypatch)
    with LLMServer(default=Fail(401, "invalid api key")) as server:
        judge = trace_eval.Judge(
            model="openai/scripted", api_base=server.api_base, api_key="wrong", workdir=tmp_path / "work"
        )
        with pytest.raises(trace_eval.JudgeError, match="HTTP 401.*TRACE_JUDGE_API_KEY"):
            list(judge.compare_many(pairs_of(example_with_blueprints), concurrency=2))
        assert server.request_count <= 3


def test_folder_functions_run_the_commands_steps(example_with_blueprints, tmp_path, monkeypatch):
    monkeypatch.setenv("TRACE_CACHE_DIR", str(tmp_path / "cache"))
    summary = trace_eval.blueprints(example_with_blueprints, device="cpu", progress=False)
    assert summary.computed == 0  # made by the fixture: nothing stale
    run = trace_eval.judge_bench(example_with_blueprints, "cues", out=tmp_path / "run", progress=False)
    verdicts = run.verdicts()
    assert len(verdicts) == 8 and all(v.ok for v in verdicts)
    files = trace_eval.evaluate(run.path, resamples=2000)
    assert files.metrics_path.is_file()
    board = trace_eval.leaderboard(run.path, resamples=2000)
    assert board["bench"]


def test_a_pair_judged_from_python_is_not_asked_again_by_the_command_line(
    example_with_blueprints, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("TRACE_CACHE_DIR", str(tmp_path / "cache"))
    workdir = tmp_path / "work"
    share_store(example_with_blueprints, monkeypatch)
    with LLMServer(default=Reply(verdict_json("1", "1", "both_good"))) as server:
        judge = trace_eval.Judge(
            model="openai/scripted", api_base=server.api_base, api_key="dummy", workdir=workdir, structured="off"
        )
        from_python = {v.id: v for v in judge.compare_many(pairs_of(example_with_blueprints))}
        assert server.request_count == 8 and judge.calls == 8
        argv = ["judge", "--bench", str(example_with_blueprints), "--model", "openai/scripted", "--quiet"]
        argv += ["--api-base", server.api_base, "--structured", "off", "--out", str(tmp_path / "run")]
        monkeypatch.setenv("TRACE_JUDGE_API_KEY", "dummy")
        assert cli(argv) == 0
        assert server.request_count == 8  # every answer came from the cache the Judge wrote
    capsys.readouterr()
    records = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert all(r["cache_hit"] for r in records)
    assert {r["id"]: r["verdicts"] for r in records} == {i: v.labels for i, v in from_python.items()}


def test_an_answer_stage_1_cannot_read_loses_and_an_instruction_it_cannot_read_is_skipped_or_an_error(
    example_with_blueprints, tmp_path, monkeypatch
):
    workdir = tmp_path / "work"
    share_store(example_with_blueprints, monkeypatch)
    judge = trace_eval.Judge(model="cues", workdir=workdir)
    good = pairs_of(example_with_blueprints)[0]
    # An answer that is not audio is an answer that says nothing: it loses, as on the command line.
    broken = dict(good, id="broken", b=b"this is not audio")
    unheard = dict(good, id="unheard", instruction=b"nor is this audio")
    verdicts = {v.id: v for v in judge.compare_many([good, broken, unheard])}
    assert verdicts[good["id"]].ok
    lost = verdicts["broken"]
    assert lost.ok and lost.labels["content"] in ("1", "both_bad") and lost.labels["voice_quality"] in ("1", "both_bad")
    assert "response 2 could not be heard (answer b (the 17 bytes given): " in lost.reasoning
    assert "clips/" not in lost.reasoning, lost.reasoning
    assert judge.compare(good["instruction"], good["a"], b"this is not audio", good["instruction_text"]).ok
    # An instruction that is not audio is no answer of a system's: skipped in a stream, an error alone.
    assert verdicts["unheard"].status == "skipped" and verdicts["unheard"].overall is None
    reason = verdicts["unheard"].reason or ""
    assert reason.startswith("instruction (the 17 bytes given): ") and "clips/" not in reason, reason
    with pytest.raises(trace_eval.MissingBlueprintsError, match="failed when their blueprints were made") as raised:
        judge.compare(b"this is not audio", good["a"], good["b"], good["instruction_text"])
    assert "instruction (the 17 bytes given)" in str(raised.value) and "clips/" not in str(raised.value)


def test_one_missing_file_skips_its_pair_the_others_are_judged_and_each_reason_names_the_user_s_file(
    example_with_blueprints, tmp_path, monkeypatch
):
    share_store(example_with_blueprints, monkeypatch)
    judge = trace_eval.Judge(model="cues", workdir=tmp_path / "work")
    pairs = pairs_of(example_with_blueprints)[:5]
    missing = tmp_path / "answers" / "q3.wav"  # never written
    not_audio = tmp_path / "answers" / "q4.wav"
    not_audio.parent.mkdir()
    not_audio.write_bytes(b"RIFF but no audio in it")
    pairs[2] = dict(pairs[2], a=str(missing))
    pairs[3] = dict(pairs[3], b=not_audio)
    seen: list[tuple[int, int]] = []
    verdicts = {v.id: v for v in judge.compare_many(pairs, progress=lambda done, total: seen.append((done, total)))}
    assert len(verdicts) == 5
    # The missing file is skipped; the file that is not audio is an answer that says nothing, and loses.
    assert [verdicts[p["id"]].ok for p in pairs] == [True, True, False, True, True]
    gone, broken = verdicts[pairs[2]["id"]], verdicts[pairs[3]["id"]]
    assert gone.status == "skipped" and gone.reason == f"{missing}: audio file not found"
    assert f"response 2 could not be heard ({not_audio}: " in broken.reasoning, broken.reasoning
    assert "clips/" not in broken.reasoning and str(judge.clips.root) not in broken.reasoning
    # The progress callback hears of every verdict, skipped ones included.
    assert seen == [(n, 5) for n in range(1, 6)]
    with pytest.raises(TypeError, match="progress"):
        list(judge.compare_many(pairs, progress="yes"))  # type: ignore[arg-type]
    # Alone, the missing file is an error at once, as before.
    with pytest.raises(FileNotFoundError, match="q3.wav: audio file not found"):
        judge.compare(pairs[2]["instruction"], missing, pairs[2]["b"], pairs[2]["instruction_text"])


def test_run_reads_a_folder_named_by_a_string_and_a_mistyped_one_says_what_it_meant(
    example_with_blueprints, tmp_path, monkeypatch
):
    monkeypatch.setenv("TRACE_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "runs").mkdir()
    made = trace_eval.judge_bench(example_with_blueprints, "cues", out=tmp_path / "runs" / "cues", progress=False)
    monkeypatch.chdir(tmp_path)
    verdicts = trace_eval.Run("runs/cues").verdicts()
    assert {v.id for v in verdicts} == {v.id for v in made.verdicts()} and len(verdicts) == 8
    with pytest.raises(trace_eval.RunFolderError, match="runs/cuess: no such folder; did you mean runs/cues?"):
        trace_eval.Run("runs/cuess").verdicts()
