"""The audit end to end on real speech: Stage 1 (loudness only, to stay quick), an LLM backbone through
litellm against the local test server, and reports whose answers are known from how the server answers."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
from llm_server import LLMServer, Reply, prompt_text, verdict_json

from trace_eval.audit import AuditOptions, run_audit
from trace_eval.audit.report import copy_score
from trace_eval.judge.runner import JudgeOptions
from trace_eval.stage1.pipeline import BlueprintOptions

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
pytestmark = pytest.mark.skipif(not LIBRIVOX.is_dir(), reason="pocketsphinx-testdata is not installed")
PROBES = ["loudness+6dB", "loudness-6dB", "silence-after-1s"]
LOUDNESS = re.compile(r'"Integrated_Loudness_LUFS":\s*(-?[0-9.]+)')


@pytest.fixture(scope="module")
def bench(tmp_path_factory) -> Path:
    """Five pairs of two-second stretches of read speech at different levels, instructions as text: ten clips, enough
    for a Wilson interval to tell a judge swayed from one in line."""
    import soundfile as sf

    root = tmp_path_factory.mktemp("speech") / "bench"
    (root / "audio").mkdir(parents=True)
    files = sorted(LIBRIVOX.glob("*.wav"))
    items = []
    for n in range(5):
        paths = []
        for side in (0, 1):
            samples, rate = sf.read(str(files[(2 * n + side) % len(files)]), dtype="float32")
            start = side * rate  # the same file twice gives different stretches
            clip = samples[start : start + 2 * rate] * (0.3 + 0.1 * n)
            path = f"audio/p{n}_{side}.wav"
            sf.write(str(root / path), clip, rate, subtype="PCM_16")
            paths.append(path)
        items.append(
            {"id": f"p{n}", "instruction_text": "Read the passage.", "audio1_path": paths[0], "audio2_path": paths[1]}
        )
    (root / "manifest.json").write_text(json.dumps(items), encoding="utf-8")
    return root


def _louder(body: dict) -> Reply:
    """Prefers the louder response on every dimension; a tie within 1 dB (padding lowers the measured loudness
    a few tenths of a dB: the gating blocks that straddle the silence count)."""
    first, second = (float(x) for x in LOUDNESS.findall(prompt_text(body))[:2])
    label = "both_good" if abs(first - second) < 1.0 else "1" if first > second else "2"
    return Reply(verdict_json(label, label, label))


def _random(body: dict) -> Reply:
    """A label drawn from the prompt's hash: random across pairs, the same for the same prompt."""
    digest = hashlib.sha256(prompt_text(body).encode()).digest()
    labels = ["1", "2", "both_good", "both_bad"]
    return Reply(verdict_json(*(labels[b % 4] for b in digest[:3])))


def _first(body: dict) -> Reply:
    return Reply(verdict_json("1", "1", "1"))


def _audit(bench: Path, out: Path, server: LLMServer, cache: Path, model: str = "openai/audit-judge") -> dict:
    judge = JudgeOptions(
        bench=bench, model=model, api_base=server.api_base, api_key="dummy", cache_dir=cache, progress=False
    )
    options = AuditOptions(
        bench=bench,
        out=out,
        judges=[judge],
        clips=None,
        probes=PROBES,
        blueprints=BlueprintOptions(only=["loudness"], device="cpu", workers=1, progress=False),
    )
    return run_audit(options, notice=lambda message: None)


def _probe(report: dict, name: str) -> dict:
    return next(p for p in report["probes"] if p["probe"] == name)


def test_copy_score_counts_ties_half_and_follows_the_copy():
    assert copy_score("1", 1) == 1.0 and copy_score("2", 1) == 0.0
    assert copy_score("2", 2) == 1.0 and copy_score("1", 2) == 0.0
    assert copy_score("both_good", 2) == copy_score("both_bad", 1) == 0.5
    assert copy_score(None, 1) is None


def test_a_judge_that_prefers_the_louder_clip_is_reported_swayed_by_loudness(bench, tmp_path):
    with LLMServer(responder=_louder) as server:
        audit = _audit(bench, tmp_path / "audit", server, tmp_path / "cache")
        report = audit["judges"][0]
        pairs = audit["pairs"]
        assert pairs == 10 * len(PROBES) * 2  # every clip, every probe, both orders
        assert server.request_count == pairs  # one call per pair, counted ...
        assert report["run"]["calls"] == pairs and report["run"]["cache_hits"] == 0
        second = _audit(bench, tmp_path / "again", server, tmp_path / "cache")  # ... and cached: asked nothing
        assert server.request_count == pairs
    # the copies' blueprints come from the shared store: the second audit makes none
    assert audit["blueprints"]["computed"] == 10 * (1 + len(PROBES)) and audit["blueprints"]["failed"] == 0
    assert second["blueprints"]["computed"] == 0 and second["blueprints"]["cached"] == 10 * (1 + len(PROBES))
    assert second["judges"][0]["run"]["cache_hits"] == pairs and second["judges"][0]["run"]["calls"] == 0
    assert second["judges"][0]["probes"] == report["probes"]
    louder, quieter, padded = (_probe(report, p)["labels"]["overall"] for p in PROBES)
    # Wilson over 10 clips: never a zero-width interval, whatever the rate.
    assert louder["rate"] == 1.0 and louder["ci95"] == [0.7225, 1.0] and louder["verdict"] == "swayed towards"
    assert (louder["n"], louder["clips"]) == (20, 10)
    assert quieter["rate"] == 0.0 and quieter["verdict"] == "swayed against"
    assert padded["rate"] == 0.5 and padded["verdict"] == "in line"  # silence does not change loudness
    assert louder["listeners"] == 0.61
    assert report["position_bias"]["verdict"] == "no position bias"
    md = (tmp_path / "audit" / "audit.md").read_text()
    assert "| loudness+6dB | overall | 20 (10 clips) | 100% [72%, 100%] | 61%; 40%–71% | **towards** |" in md
    assert (tmp_path / "audit" / "audit.png").stat().st_size > 0
    page = Path(audit["page"]["path"])  # the audit page: every probe pair playable beside its reference
    assert page == tmp_path / "audit" / "view" / "index.html" and page.is_file()
    assert "loudness+6dB" in (page.parent / "data.js").read_text() and str(page) in md


def test_a_judge_answering_at_random_is_not_reported_swayed(bench, tmp_path):
    with LLMServer(responder=_random) as server:
        report = _audit(bench, tmp_path / "audit", server, tmp_path / "cache")["judges"][0]
    for probe in report["probes"]:
        for label, slot in probe["labels"].items():
            assert slot["verdict"] == "in line", (probe["probe"], label, slot)
            low, high = slot["ci95"]
            assert low < slot["rate"] < high  # random answers leave a real interval
    assert report["position_bias"]["verdict"] == "no position bias"


def test_a_judge_that_always_picks_the_first_clip_shows_position_bias_not_a_cue(bench, tmp_path):
    with LLMServer(responder=_first) as server:
        report = _audit(bench, tmp_path / "audit", server, tmp_path / "cache")["judges"][0]
    assert report["position_bias"]["rate"] == 1.0
    assert report["position_bias"]["verdict"] == "favours position 1"
    for probe in report["probes"]:
        assert probe["labels"]["overall"]["rate"] == 0.5  # the copy is first as often as second
        assert probe["order_consistency"]["rate"] == 0.0  # the two orders never agree


def test_copies_are_written_once_and_the_same_on_a_rerun(bench, tmp_path):
    from trace_eval.audit.derive import choose_clips, write_audit_bench
    from trace_eval.bench import load_benchmark

    loaded = load_benchmark(bench)
    clips = choose_clips(loaded, 2)
    assert [c.path for c in choose_clips(loaded, 3)][:2] == [c.path for c in clips]  # more clips add, keep the rest
    write_audit_bench(loaded, clips, PROBES, tmp_path / "a")
    write_audit_bench(loaded, clips, PROBES, tmp_path / "b")
    written = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a" / "bench" / "audio").rglob("*.wav"))
    assert len(written) == 2 * (1 + len(PROBES))
    for relative in written:
        assert (tmp_path / "a" / relative).read_bytes() == (tmp_path / "b" / relative).read_bytes()
    manifest = json.loads((tmp_path / "a" / "bench" / "manifest.json").read_text())
    assert len(manifest) == 2 * len(PROBES) * 2
    first = next(m for m in manifest if m["id"].endswith(".copy1"))
    second = next(m for m in manifest if m["id"] == first["id"].replace("copy1", "copy2"))
    assert (first["audio1_path"], first["audio2_path"]) == (second["audio2_path"], second["audio1_path"])
    assert np.all([m["instruction_text"] == "Read the passage." for m in manifest])


def test_the_command_audits_and_prints_the_report(bench, tmp_path, monkeypatch, capsys):
    from trace_eval.cli import main

    monkeypatch.setenv("TRACE_JUDGE_API_KEY", "dummy")
    monkeypatch.setenv("TRACE_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "audit"
    with LLMServer(responder=_louder) as server:
        argv = ["audit", str(bench), "--model", "openai/audit-judge", "--api-base", server.api_base, "--clips", "10"]
        argv += ["--probes", "loudness+6dB", "--only", "loudness", "--workers", "1", "--out", str(out), "--quiet"]
        assert main(argv) == 0
        assert server.request_count == 10 * 2  # ten clips, one probe, both orders
    printed = capsys.readouterr().out
    assert "| loudness+6dB | overall | 20 (10 clips) | 100% [72%, 100%] | 61%; 40%–71% | **towards** |" in printed
    assert json.loads((out / "audit.json").read_text())["clips"] == 10
    assert main(["audit", str(bench), "--probes", "louder", "--out", str(out)]) == 2
    assert "unknown probe(s) louder" in capsys.readouterr().err


def test_two_backbones_are_audited_on_the_same_copies_side_by_side(bench, tmp_path):
    with LLMServer(responder=_louder) as server:
        judges = [
            JudgeOptions(bench=bench, model="cues", progress=False),
            JudgeOptions(
                bench=bench,
                model="openai/audit-judge",
                api_base=server.api_base,
                api_key="dummy",
                cache_dir=tmp_path / "cache",
                progress=False,
            ),
        ]
        options = AuditOptions(
            bench=bench,
            out=tmp_path / "audit",
            judges=judges,
            clips=2,
            probes=PROBES,
            blueprints=BlueprintOptions(only=["loudness"], device="cpu", workers=1, progress=False),
        )
        audit = run_audit(options, notice=lambda message: None)
    assert [j["judge"] for j in audit["judges"]] == ["cues", "openai/audit-judge"]
    assert (tmp_path / "audit" / "runs" / "cues" / "results.jsonl").is_file()
    md = (tmp_path / "audit" / "audit.md").read_text()
    assert "## Side by side" in md and "| probe | label | cues | openai/audit-judge |" in md
    # With loudness alone, cues lacks the cues it needs (no transcript, no DNSMOS): undetermined, never guessed.
    cues_louder = _probe(audit["judges"][0], "loudness+6dB")["labels"]["overall"]
    assert cues_louder["rate"] is None and cues_louder["undetermined"] == 4 and cues_louder["verdict"] is None
    # Two clips cannot set a judge apart from listeners: uninformative, not in line (nor swayed).
    louder = _probe(audit["judges"][1], "loudness+6dB")["labels"]["overall"]
    assert louder["verdict"] == "uninformative" and louder["clips"] == 2
    assert "Uninformative probes: 2 clip(s) decided; at least 4 are needed." in md


def _both_bad(body: dict) -> Reply:
    return Reply(verdict_json("both_bad", "both_bad", "both_bad"))


def test_a_judge_that_answers_both_bad_everywhere_is_flagged_and_its_probes_uninformative(bench, tmp_path):
    with LLMServer(responder=_both_bad) as server:
        audit = _audit(bench, tmp_path / "audit", server, tmp_path / "cache")
    report = audit["judges"][0]
    assert report["flags"] and "answers both_bad on every one of its 60 decided pairs" in report["flags"][0]
    for probe in report["probes"]:
        slot = probe["labels"]["overall"]
        # Every pair a tie: 50%, with an interval that is no point, and no claim to be in line.
        assert slot["rate"] == 0.5 and slot["ci95"][0] < 0.5 < slot["ci95"][1]
        assert slot["verdict"] == "uninformative" and "every decided pair both_bad" in slot["why"]
    md = (tmp_path / "audit" / "audit.md").read_text()
    assert "**Flagged:** openai/audit-judge answers both_bad on every one" in md and "| in line |" not in md


def test_an_unknown_model_is_refused_before_any_clip_is_made(bench, tmp_path, capsys):
    from trace_eval.cli import main

    out = tmp_path / "audit"
    assert main(["audit", str(bench), "--model", "cue", "--out", str(out), "--quiet"]) == 2
    assert "--model cue: did you mean cues?" in capsys.readouterr().err
    assert not out.exists()  # refused before Stage 1


def test_ids_choose_the_clips_and_a_wrong_id_names_a_close_one(bench, tmp_path):
    from trace_eval.audit.derive import choose_clips
    from trace_eval.bench import load_benchmark

    loaded = load_benchmark(bench)
    assert {c.pair.id for c in choose_clips(loaded, None, ids=["p1"])} == {"p1"}
    assert len(choose_clips(loaded, None, ids=["p1", "p3"])) == 4
    with pytest.raises(ValueError, match=r"--ids: no item p11 .*\(did you mean p1\?\)"):
        choose_clips(loaded, None, ids=["p11"])
    # Items the judge can decide come first, in the seeded order among them.
    chosen = choose_clips(loaded, 2, decidable=lambda pair: pair.id == "p4")
    assert {c.pair.id for c in chosen} == {"p4"}
