"""For the label store's and the labelling page's tests (tests/labels): systems' answers made with sox, every clip
its own sound (a content key names the audio, so no two pairs may share theirs), prepared into pairs by
`prepare pairs`, and `python -m trace_eval label` started in its own process."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from pathlib import Path

from trace_eval.cli import main
from trace_eval.labels.server import LabelSession
from trace_eval.rubrics import load_rubric

TRACE = load_rubric("trace")
INSTRUCTIONS = 6
SYSTEMS = ("alpha", "bravo", "charlie", "delta")


def tone(path: Path, frequency: int, seconds: float = 0.6) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            "sox",
            "-R",  # repeatable dither: the same clips, so the same content keys and orders shown, on every run
            "-n",
            "-r",
            "16000",
            "-b",
            "16",
            str(path),
            "synth",
            str(seconds),
            "sine",
            str(frequency),
            "vol",
            "0.3",
        ],
        check=True,
    )


def make_outputs(root: Path, instructions: int = INSTRUCTIONS) -> Path:
    """Instructions q00, q01, ... (six by default, with text) and four systems' answers to each, under `root`."""
    for n in range(instructions):
        tone(root / "instructions" / f"q{n:02d}.wav", 200 + 7 * n)
        (root / "instructions" / f"q{n:02d}.txt").write_text(f"Say the number {n} slowly.\n")
        for s, system in enumerate(SYSTEMS):
            tone(root / system / f"q{n:02d}.wav", 400 + 50 * s + 3 * n)
    return root


def prepare_pairs(out: Path, outputs: Path, systems: tuple[str, ...]) -> None:
    given = [a for name in systems for a in ("--system", f"{name}={outputs / name}")]
    assert (
        main(
            [
                "prepare",
                "pairs",
                str(out),
                "--instructions",
                str(outputs / "instructions"),
                *given,
                "--schedule",
                "all",
                "--quiet",
            ]
        )
        == 0
    )


class Server:
    """`python -m trace_eval label` in its own process, as a user starts it."""

    def __init__(self, bench: Path, annotator: str, *extra: str):
        self.bench = bench
        self.process = subprocess.Popen(
            [sys.executable, "-m", "trace_eval", "label", str(bench), "--annotator", annotator, *extra],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        line = self.process.stdout.readline() if self.process.stdout else ""
        if not line.startswith("http://"):
            self.process.kill()
            raise AssertionError(
                f"no URL printed: {line!r} {self.process.stderr.read() if self.process.stderr else ''}"
            )
        self.url = line.strip()
        self.base, _, self.token = self.url.partition("/?token=")
        self.host, _, port = self.base.removeprefix("http://").partition(":")
        self.port = int(port)

    def kill(self) -> None:
        self.process.kill()  # SIGKILL: no chance to flush anything
        self.process.wait(10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()


def wait_for(condition, timeout: float = 20.0, step: float = 0.05):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = condition()
        if value:
            return value
        time.sleep(step)
    raise AssertionError("timed out")


def winner(item: dict) -> str:
    """The label a listener who prefers the earlier system in the alphabet gives, in the manifest's numbering."""
    return "1" if item["model_a"] < item["model_b"] else "2"


def label_every_pair(bench: Path, annotator: str) -> dict[str, str]:
    """Label every pair through the page's own path (labels in the order shown); the overall label per id."""
    session = LabelSession(bench, annotator, TRACE)
    items = {i["id"]: i for i in json.loads((bench / "manifest.json").read_text())}
    given = {}
    for n, pair in enumerate(session.pairs):
        label = winner(items[pair.id])
        shown = {"1": "2", "2": "1"}[label] if session.swapped_for(n) else label
        labels = {"content": shown, "voice_quality": "both_good", "paralinguistics": "both_bad", "overall": shown}
        session.answer(n, {"labels": labels, "reasons": {"content": f"{annotator} on {pair.id}"}})
        given[pair.id] = label
    return given


def write_run(bench: Path, out: Path, agree: float, seed: int = 0) -> Path:
    """A judge run with a confidence per verdict: right on `agree` of the pairs, and more confident when right."""
    rng = random.Random(seed)
    records = []
    for item in json.loads((bench / "manifest.json").read_text()):
        right = rng.random() < agree
        label = winner(item) if right else "both_bad"
        verdicts = {"content": label, "voice_quality": "both_good", "paralinguistics": label}
        fused = TRACE.fusion.fuse_all(verdicts)
        confidence = round(rng.uniform(0.8, 1.0) if right else rng.uniform(0.4, 0.9), 3)
        records.append(
            {
                "id": item["id"],
                "status": "ok",
                "reason": None,
                "verdicts": verdicts,
                "undetermined": {},
                "fused": fused,
                "overall": fused["cap"],
                "confidence": {"overall": confidence, **dict.fromkeys(verdicts, confidence)},
            }
        )
    out.mkdir(parents=True)
    config = {"bench": str(bench), "model": "cues", "rubric": "trace", "judge": "trace", "fusion": "cap"}
    (out / "config.json").write_text(json.dumps({**config, "samples": 1, "swap": False}))
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return out
