"""Benchmarks for the label store's tests: systems' answers made with sox, every clip its own sound (a content
key names the audio, so no two pairs may share theirs), prepared into pairs by `prepare pairs`."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from trace_eval.cli import main

INSTRUCTIONS = 6
SYSTEMS = ("alpha", "bravo", "charlie", "delta")


def tone(path: Path, frequency: int, seconds: float = 0.6) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            "sox",
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


@pytest.fixture(scope="session")
def outputs(tmp_path_factory) -> Path:
    """Six instructions q00..q05 (with text) and four systems' answers to each."""
    if shutil.which("sox") is None:
        pytest.skip("sox is needed to make the audio")
    root = tmp_path_factory.mktemp("outputs")
    for n in range(INSTRUCTIONS):
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


@pytest.fixture
def bench(tmp_path, outputs) -> Path:
    """18 pairs: three systems, every two of them on six instructions."""
    out = tmp_path / "bench"
    prepare_pairs(out, outputs, SYSTEMS[:3])
    return out


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
