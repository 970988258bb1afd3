"""A lab's own benchmark, end to end with the offline judge: three systems answering six spoken instructions.

"clear" says each answer; "quiet" says the same answers 20 dB lower; "wrong" says unrelated words of about the
same length. Four instructions quote the words to say, two are free-form questions. Made with espeak-ng and sox
(-R), prepared with `prepare pairs`, real Stage 1 on CPU, then `judge --model cues` and the leaderboard.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trace_eval.cli import main
from trace_eval.synth import Voice, have_tools, speak

pytestmark = pytest.mark.skipif(not have_tools(), reason="needs espeak-ng and sox")

# (instruction, the answer, unrelated words of about the same length)
LAB = [
    (
        'Say "The quick brown fox jumps over the lazy dog."',
        "The quick brown fox jumps over the lazy dog.",
        "Seven purple elephants danced quietly under the moon.",
    ),
    (
        'Please say "Open the window and let the fresh air in."',
        "Open the window and let the fresh air in.",
        "My cousin repaired an old bicycle last summer.",
    ),
    (
        'Repeat after me: "I would like a cup of hot tea."',
        "I would like a cup of hot tea.",
        "Green rivers carry pebbles toward distant hills.",
    ),
    (
        'Say "The train leaves the station at noon."',
        "The train leaves the station at noon.",
        "Bright yellow paint covered every wooden fence.",
    ),
    ("What is the capital of France?", "The capital of France is Paris.", "Bananas grow quickly in warm weather."),
    ("Tell me one fact about the moon.", "The moon goes around the earth once a month.", "Carpets are soft."),
]
SYSTEMS = ("clear", "quiet", "wrong")


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> Path:
    """The benchmark folder, prepared from the systems' folders, with blueprints; labels from the recipe."""
    root = tmp_path_factory.mktemp("lab")
    texts = []
    for n, (instruction, answer, unrelated) in enumerate(LAB):
        name = f"q{n}.wav"
        speak(instruction.replace('"', ""), root / "instructions" / name)
        speak(answer, root / "clear" / name)
        speak(answer, root / "quiet" / name, Voice(gain_db=-20.0))
        speak(unrelated, root / "wrong" / name)
        texts.append({"id": f"q{n}", "instruction_path": f"instructions/{name}", "instruction_text": instruction})
    (root / "instructions.json").write_text(json.dumps(texts))
    bench = root / "bench"
    systems = [a for name in SYSTEMS for a in ("--system", f"{name}={root / name}")]
    given = ["--instructions", str(root / "instructions.json"), "--schedule", "all", "--quiet"]
    assert main(["prepare", "pairs", str(bench), *given, *systems]) == 0
    assert main(["blueprints", str(bench), "--profile", "cpu", "--workers", "0", "--quiet"]) == 0
    return bench


@pytest.fixture(scope="module")
def lab_run(lab, tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("runs") / "cues"
    assert main(["judge", "--bench", str(lab), "--model", "cues", "--out", str(run), "--quiet"]) == 0
    return run


def _records(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines() if line.strip()]


def _seats(lab: Path) -> dict[str, tuple[str, str]]:
    items = json.loads((lab / "manifest.json").read_text())
    return {str(item.get("id", item.get("index"))): (item["model_a"], item["model_b"]) for item in items}


def test_cues_ranks_clear_over_quiet_over_wrong(lab, lab_run):
    assert main(["leaderboard", str(lab_run), "--resamples", "1000"]) == 0
    board = json.loads((lab_run / "leaderboard" / "leaderboard.json").read_text())
    rows = {r["system"]: r for r in board["sources"][0]["tables"]["overall"]["systems"]}
    scores = {s: rows[s]["score"]["value"] for s in SYSTEMS}
    assert scores["clear"] > scores["quiet"] > scores["wrong"], scores
    # The 20 dB quieter copy of the same answers loses Voice Quality to the clear one, every time.
    seats = _seats(lab)
    for record in _records(lab_run):
        a, b = seats[record["id"]]
        if {a, b} == {"clear", "quiet"}:
            vq = record["verdicts"]["voice_quality"]
            assert vq == ("1" if a == "clear" else "2"), record["raw"]


def _made(a: str, b: str, dimension: str) -> str:
    """The label each pair has by how it was made: wrong says other words, quiet is 20 dB lower."""
    bad = {"content": "wrong", "voice_quality": "quiet", "paralinguistics": None}[dimension]
    return "2" if a == bad else "1" if b == bad else "both_good"


def test_the_wrong_answers_are_confident_content_losses_and_no_wrong_verdict_is_surer(lab, lab_run):
    seats = _seats(lab)
    against_wrong, mistaken = [], []
    for record in _records(lab_run):
        a, b = seats[record["id"]]
        for dimension, label in record["verdicts"].items():
            confidence = record["confidence"][dimension]
            if label is None:
                continue
            if label != _made(a, b, dimension):
                mistaken.append((record["id"], dimension, label, confidence))
            elif dimension == "content" and "wrong" in (a, b):
                against_wrong.append(confidence)
    # Unrelated words of about the quote's length: a sure loss, not one near the floor (0.64 before).
    assert len(against_wrong) == 8 and min(against_wrong) >= 0.8, against_wrong
    assert all(confidence < min(against_wrong) for *_, confidence in mistaken), mistaken


def test_the_audit_probes_clips_cues_can_decide_and_hears_the_20_db_drop(lab, tmp_path, capsys):
    out = tmp_path / "audit"
    argv = ["audit", str(lab), "--model", "cues", "--probes", "loudness-20dB,loudness-6dB,silence-after-1s"]
    argv += ["--only", "asr,dnsmos,loudness,pitch,rate,voicing", "--workers", "1", "--out", str(out), "--quiet"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    audit = json.loads((out / "audit.json").read_text())
    # The default 4 clips answer instructions that quote the words to say (q0-q3): cues can decide them.
    assert all(clip["path"].split("/")[-1] in {f"q{n}.wav" for n in range(4)} for clip in audit["copies"]["clips"])
    probes = {p["probe"]: p for p in audit["judges"][0]["probes"]}
    quieter = probes["loudness-20dB"]["labels"]["voice_quality"]
    assert quieter["rate"] == 0.0 and (quieter["n"], quieter["clips"]) == (8, 4), quieter  # it loses every time
    assert quieter["ci95"][1] > 0.0  # an interval, never a point
    assert probes["loudness-6dB"]["labels"]["overall"]["verdict"] == "in line"
    assert "| loudness-20dB | VQ | 8 (4 clips) | 0% [0%, " in printed


def test_the_fused_table_shows_whole_pair_ids(lab_run, capsys):
    capsys.readouterr()
    assert main(["fuse", str(lab_run), "--table"]) == 0
    printed = capsys.readouterr().out
    assert "\nq0:clear-vs-quiet " in printed and "q0:clear-vs-quie " not in printed  # 17 characters, not 16
