"""The emphasis probes end to end on recorded speech (LibriVox): copies made from the answers' own word times,
their blueprints from Stage 1 (the recogniser and the prosody extractor), judged by `cues`. Making another word
prominent must move Paralinguistics only where the instruction asks to stress a word."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from trace_eval.audit import AuditOptions, run_audit
from trace_eval.audit.report import copy_score
from trace_eval.judge.runner import JudgeOptions
from trace_eval.stage1.pipeline import BlueprintOptions

LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
pytestmark = pytest.mark.skipif(not LIBRIVOX.is_dir(), reason="pocketsphinx-testdata is not installed")
STAGE1 = BlueprintOptions(only=["asr", "prosody"], store="bench", progress=False, workers=1)
READ = {  # clip: LibriVox utterance
    "himself": "0930",  # he might even have been made amiable himself
    "woman": "0920",  # had he married a more amiable woman he might have been made still more respectable ...
    "young": "0880",  # he was not an ill disposed young man
    "selfish": "0890",  # unless to be rather cold hearted and rather selfish is to be ill disposed
}


@pytest.fixture(scope="module")
def audit(tmp_path_factory) -> tuple[dict, Path]:
    from trace_eval.stage1.pipeline import run_blueprints

    root = tmp_path_factory.mktemp("emphasis")
    bench = root / "bench"
    (bench / "audio").mkdir(parents=True)
    for name, number in READ.items():
        shutil.copyfile(
            LIBRIVOX / f"sense_and_sensibility_01_austen_64kb-{number}.wav", bench / "audio" / f"{name}.wav"
        )
    items = [
        {
            "id": "asked",
            "instruction_text": "Say 'he might even have been made amiable himself', stressing 'amiable'.",
            "audio1_path": "audio/himself.wav",
            "audio2_path": "audio/woman.wav",
        },
        {
            "id": "unasked",
            "instruction_text": "Say 'he was not an ill disposed young man'.",
            "audio1_path": "audio/young.wav",
            "audio2_path": "audio/selfish.wav",
        },
    ]
    (bench / "manifest.json").write_text(json.dumps(items), encoding="utf-8")
    assert run_blueprints(bench, STAGE1).ok  # the answers' word times, which place the changed words
    options = AuditOptions(
        bench=bench,
        out=root / "audit",
        judges=[JudgeOptions(bench=bench, model="cues", progress=False)],
        clips=None,
        probes=["emphasis-asked", "emphasis-unasked"],
        blueprints=STAGE1,
    )
    return run_audit(options, notice=lambda message: None), root / "audit"


def _scores(out: Path, probe: str) -> dict[str, list[float | None]]:
    """Per clip, the copy's Paralinguistics score in each order."""
    found: dict[str, list[float | None]] = {}
    for line in (out / "runs" / "cues" / "results.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        clip, name, order = record["id"].split(".")
        if name == probe:
            found.setdefault(clip, []).append(copy_score(record["verdicts"]["paralinguistics"], int(order[-1])))
    return found


def test_another_word_made_prominent_moves_paralinguistics_only_where_emphasis_is_asked(audit):
    report, out = audit
    copies = {c["path"]: c["copies"] for c in report["copies"]["clips"]}
    assert set(copies["audio/himself.wav"]) == {"emphasis-asked"}  # the asked word in the reference
    assert copies["audio/himself.wav"]["emphasis-asked"]["reference_word"] == "amiable"
    assert set(copies["audio/young.wav"]) == {"emphasis-unasked"}
    asked, unasked = _scores(out, "emphasis-asked"), _scores(out, "emphasis-unasked")
    # Asked: the copy stresses the wrong word, so it never wins; where the reference's word stands out, it loses.
    assert all(score is not None and score <= 0.5 for scores in asked.values() for score in scores), asked
    assert any(scores == [0.0, 0.0] for scores in asked.values()), asked
    # Not asked: which word stands out is no request, and Paralinguistics does not move.
    assert len(unasked) == 2 and all(scores == [0.5, 0.5] for scores in unasked.values()), unasked


def test_clips_a_word_probe_cannot_change_are_named_with_the_reason(audit):
    report, out = audit
    skipped = {(s["clip"], s["probe"]): s["reason"] for s in report["copies"]["skipped"]}
    assert skipped[("audio/young.wav", "emphasis-asked")] == "the instruction asks to stress no word"
    assert skipped[("audio/himself.wav", "emphasis-unasked")] == (
        "the instruction asks for emphasis (the emphasis-asked probe's)"
    )
    text = (out / "audit.md").read_text(encoding="utf-8")
    assert "Not probed with emphasis-asked: audio/young.wav: the instruction asks to stress no word" in text
    headlines = {p["probe"]: p["headline"] for p in report["judges"][0]["probes"]}
    assert headlines == {"emphasis-asked": "paralinguistics", "emphasis-unasked": "paralinguistics"}
