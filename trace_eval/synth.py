"""Real speech with known properties, made with espeak-ng and sox.

Used by the example benchmark and by tests whose answers follow from how a clip
was made: words per minute, pitch, gain and added noise are chosen, not guessed.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Voice", "SynthesisUnavailable", "speak", "have_tools"]


class SynthesisUnavailable(RuntimeError):
    """espeak-ng or sox is not installed (apt-get install espeak-ng sox)."""


@dataclass(frozen=True)
class Voice:
    """How espeak-ng and sox should render a sentence."""

    wpm: int = 160  # espeak-ng -s, words per minute
    pitch: int = 50  # espeak-ng -p, 0..99 (50 is the voice's default)
    voice: str = "en-us"  # espeak-ng -v, e.g. en-us, en-gb, en-us+f3 (female variant)
    amplitude: int = 100  # espeak-ng -a, 0..200
    gain_db: float = 0.0  # sox gain applied after synthesis
    noise_db: float | None = None  # white noise level in dBFS mixed in; None for clean
    sample_rate: int = 16000
    pad_s: float = 0.0  # silence added before and after
    ssml: bool = False  # the text is SSML (espeak-ng -m): <emphasis>, <prosody pitch= rate= volume=>, <break>


def have_tools() -> bool:
    return shutil.which("espeak-ng") is not None and shutil.which("sox") is not None


# No dither and fixed noise seeds: the same inputs give the same bytes.
SOX = ("sox", "-D", "-R")


def _run(cmd: list[str]) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {proc.stderr.strip()}")


def speak(text: str, out: str | Path, voice: Voice = Voice()) -> Path:
    """Synthesise `text` to `out` (format from its suffix: .wav, .flac, .ogg, .mp3)."""
    if not have_tools():
        raise SynthesisUnavailable("speech synthesis needs espeak-ng and sox: apt-get install espeak-ng sox")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "raw.wav"
        _run(
            [
                "espeak-ng",
                "-v",
                voice.voice,
                "-s",
                str(voice.wpm),
                "-p",
                str(voice.pitch),
                "-a",
                str(voice.amplitude),
                "-w",
                str(raw),
                *(["-m"] if voice.ssml else []),
                text,
            ]
        )
        shaped = Path(tmp) / "shaped.wav"
        effects = ["rate", str(voice.sample_rate), "gain", str(voice.gain_db)]
        if voice.pad_s:
            effects += ["pad", str(voice.pad_s), str(voice.pad_s)]
        _run([*SOX, str(raw), "-b", "16", "-c", "1", str(shaped), *effects])
        if voice.noise_db is not None:
            noisy = Path(tmp) / "noisy.wav"
            noise = Path(tmp) / "noise.wav"
            dur = float(subprocess.run(["soxi", "-D", str(shaped)], capture_output=True, text=True).stdout)
            _run(
                [
                    *SOX,
                    "-n",
                    "-r",
                    str(voice.sample_rate),
                    "-b",
                    "16",
                    "-c",
                    "1",
                    str(noise),
                    "synth",
                    f"{dur:.3f}",
                    "whitenoise",
                    "gain",
                    str(voice.noise_db),
                ]
            )
            _run([*SOX, "-m", str(shaped), str(noise), str(noisy)])
            shaped = noisy
        _run([*SOX, str(shaped), str(out)])
    return out
