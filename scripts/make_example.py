"""Generate the bundled example benchmark (examples/mini) with espeak-ng and sox.

Every answer is synthesised with chosen settings (words per minute, pitch, gain,
added noise, what is said), so every human-style label follows from how the clip
was made rather than from anyone's opinion. The differences are large on
purpose: an offline judge that reads speaking rate, mean pitch, loudness, DNSMOS
and the transcript should recover every label.

    python scripts/make_example.py               # (re)write examples/mini
    python scripts/make_example.py --out DIR     # write elsewhere
    python scripts/make_example.py --check       # regenerate in a temp dir, compare with the committed files

Output is byte-identical from run to run on the same espeak-ng and sox versions.
scripts/make_example_style.py makes examples/mini-style with the same tools.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

from trace_eval.synth import SynthesisUnavailable, Voice, have_tools, speak

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "examples" / "mini"
SAMPLE_RATE = 16000
AUDIO_DIR = "audio"

# The instruction is read out by a plain voice so the instruction's own cues never hint at a label.
INSTRUCTION_VOICE = Voice(wpm=180, pitch=50, voice="en-us")
CLEAN = None  # Voice.noise_db for no added noise
NOISY = -15.0  # white noise level (dBFS before the 1:1 mix): DNSMOS P.808 falls from 3.0-3.9 to 2.2-2.4
SLOW, NORMAL, FAST = 90, 160, 240  # espeak-ng -s; measured over the speech span: about 105, 200, 270 wpm
LOW, HIGH = 15, 85  # espeak-ng pitch (0..99): about 75 Hz on a male voice, 285-295 Hz on en-us+f3
QUIET = -20.0  # dB gain: about 20 LU below the other answers (DNSMOS P.808 stays above 3.3)

# Voices: en-us, en-gb, en-gb-x-rp, en-gb-scotland, with +f2/+f3 female variants for a higher voice.
# espeak-ng 1.51 ignores a +fN variant on plain en-gb, so British female voices use en-gb-x-rp or en-gb-scotland.
FOX = "The quick brown fox jumps over the lazy dog"


@dataclass(frozen=True)
class Segment:
    """One stretch of speech: what is said and how."""

    text: str
    voice: Voice


@dataclass(frozen=True)
class PairRecipe:
    """How one pair is made and the labels that follow from it."""

    index: str
    instruction: str
    answer_a: tuple[Segment, ...]  # spoken one after another
    answer_b: tuple[Segment, ...]
    model_a: str
    model_b: str
    content: str
    voice_quality: str
    paralinguistics: str
    overall: str  # the `cap` fusion policy applied to the three labels above
    shares_instruction_of: str | None = None  # reuse that pair's instruction audio (same text)


def said(
    text: str,
    wpm: int = NORMAL,
    pitch: int = 50,
    voice: str = "en-us",
    gain_db: float = 0.0,
    noise_db: float | None = CLEAN,
    pad_s: float = 0.0,
) -> tuple[Segment, ...]:
    """An answer of one segment; answers of several segments are sums of these tuples."""
    return (
        Segment(
            text,
            Voice(
                wpm=wpm,
                pitch=pitch,
                voice=voice,
                gain_db=gain_db,
                noise_db=noise_db,
                sample_rate=SAMPLE_RATE,
                pad_s=pad_s,
            ),
        ),
    )


RECIPES: tuple[PairRecipe, ...] = (
    # Pace: A is slow as asked, B is fast.
    PairRecipe(
        index="mini-01",
        instruction=f'Say "{FOX}" slowly.',
        answer_a=said(FOX, wpm=SLOW, voice="en-us"),
        answer_b=said(FOX, wpm=FAST, voice="en-gb"),
        model_a="alpha-s2s",
        model_b="bravo-s2s",
        content="both_good",
        voice_quality="both_good",
        paralinguistics="1",
        overall="1",
    ),
    # Pitch against noise: B has the high voice asked for but is noisy; paralinguistics outranks quality.
    PairRecipe(
        index="mini-02",
        instruction='In a high-pitched voice, say "We are going to the beach on Sunday morning."',
        answer_a=said("We are going to the beach on Sunday morning.", pitch=LOW, voice="en-us"),
        answer_b=said("We are going to the beach on Sunday morning.", pitch=HIGH, voice="en-us+f3", noise_db=NOISY),
        model_a="charlie-s2s",
        model_b="alpha-s2s",
        content="both_good",
        voice_quality="1",
        paralinguistics="2",
        overall="2",
    ),
    # Loudness against content: A says the sentence at full level, B is quiet but says something else.
    PairRecipe(
        index="mini-03",
        instruction='Say very quietly: "Please keep your voice down, the baby is finally asleep."',
        answer_a=said("Please keep your voice down, the baby is finally asleep.", wpm=150, voice="en-gb-x-rp+f3"),
        answer_b=said(
            "The stock market closed higher today after a busy week of trading.",
            wpm=150,
            voice="en-us+f2",
            gain_db=QUIET,
        ),
        model_a="bravo-s2s",
        model_b="delta-s2s",
        content="1",
        voice_quality="both_good",
        paralinguistics="2",
        overall="both_bad",
    ),
    # Quality decides: both quick and right, A is noisy.
    PairRecipe(
        index="mini-04",
        instruction='Say "Everyone please gather at the front entrance of the building right now" quickly.',
        answer_a=said(
            "Everyone please gather at the front entrance of the building right now.",
            wpm=FAST,
            voice="en-us",
            noise_db=NOISY,
        ),
        answer_b=said(
            "Everyone please gather at the front entrance of the building right now.",
            wpm=FAST,
            voice="en-gb-scotland+f2",
        ),
        model_a="delta-s2s",
        model_b="charlie-s2s",
        content="both_good",
        voice_quality="2",
        paralinguistics="both_good",
        overall="2",
    ),
    # Content decides: both deep, A says only the first three words (padded to a more usual clip length).
    PairRecipe(
        index="mini-05",
        instruction='In a deep, low voice, say "The thunder rolled across the distant hills all night."',
        answer_a=said("The thunder rolled.", pitch=LOW, voice="en-us", pad_s=0.5),
        answer_b=said("The thunder rolled across the distant hills all night.", pitch=LOW, voice="en-us"),
        model_a="alpha-s2s",
        model_b="delta-s2s",
        content="2",
        voice_quality="both_good",
        paralinguistics="both_good",
        overall="2",
    ),
    # Both fail twice: neither says the tongue twister and both are quiet when asked to be loud.
    PairRecipe(
        index="mini-06",
        instruction='Say "Red lorry, yellow lorry, red lorry, yellow lorry" loudly.',
        answer_a=said("I would like a cup of tea with milk and sugar, please.", voice="en-us+f2", gain_db=QUIET),
        answer_b=said("My favourite colour is green and I like to go hiking.", voice="en-gb", gain_db=QUIET),
        model_a="bravo-s2s",
        model_b="charlie-s2s",
        content="both_bad",
        voice_quality="both_good",
        paralinguistics="both_bad",
        overall="both_bad",
    ),
    # Change of pace in noise: A goes from slow to fast as asked, B keeps one pace; both noisy.
    PairRecipe(
        index="mini-07",
        instruction='Say "I take my time in the morning" slowly, then "but I rush all afternoon" quickly.',
        answer_a=(
            said("I take my time in the morning,", wpm=90, voice="en-us", noise_db=NOISY)
            + said("but I rush all afternoon.", wpm=260, voice="en-us", noise_db=NOISY)
        ),
        answer_b=said(
            "I take my time in the morning, but I rush all afternoon.", voice="en-gb-x-rp+f3", noise_db=NOISY
        ),
        model_a="charlie-s2s",
        model_b="bravo-s2s",
        content="both_good",
        voice_quality="both_bad",
        paralinguistics="1",
        overall="1",
    ),
    # Everything right on both sides; same instruction audio as mini-01 (one blueprint serves both).
    PairRecipe(
        index="mini-08",
        instruction=f'Say "{FOX}" slowly.',
        answer_a=said(FOX, wpm=SLOW, voice="en-gb-x-rp+f3"),
        answer_b=said(FOX, wpm=95, voice="en-us"),
        model_a="delta-s2s",
        model_b="alpha-s2s",
        content="both_good",
        voice_quality="both_good",
        paralinguistics="both_good",
        overall="both_good",
        shares_instruction_of="mini-01",
    ),
)


class ExampleMismatch(Exception):
    """The committed example files differ from what the script makes now."""


@contextmanager
def reproducible_sox() -> Iterator[None]:
    # SoX dithers when it writes 16-bit and seeds its noise generator from the clock; -D turns dithering off
    # and -R fixes the seeds, so the same inputs give the same bytes. SOX_OPTS reaches every sox call.
    previous = os.environ.get("SOX_OPTS")
    os.environ["SOX_OPTS"] = "-D -R"
    try:
        yield
    finally:
        if previous is None:
            del os.environ["SOX_OPTS"]
        else:
            os.environ["SOX_OPTS"] = previous


def render(segments: tuple[Segment, ...], out: Path) -> None:
    """Speak the segments one after another into `out` (16-bit WAV)."""
    if len(segments) == 1:
        speak(segments[0].text, out, segments[0].voice)
        return
    parts = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, seg in enumerate(segments):
            part = speak(seg.text, Path(tmp) / f"part{i}.wav", seg.voice)
            samples, rate = sf.read(str(part), dtype="int16")
            if rate != SAMPLE_RATE:
                raise RuntimeError(f"{part}: synthesised at {rate} Hz, expected {SAMPLE_RATE}")
            parts.append(samples)
    sf.write(str(out), np.concatenate(parts), SAMPLE_RATE, subtype="PCM_16")


def _item(recipe: PairRecipe) -> dict:
    instruction_owner = recipe.shares_instruction_of or recipe.index
    return {
        "index": recipe.index,
        "instruction_path": f"{AUDIO_DIR}/{instruction_owner}_instruction.wav",
        "instruction_text": recipe.instruction,
        "audio1_path": f"{AUDIO_DIR}/{recipe.index}_a.wav",
        "audio2_path": f"{AUDIO_DIR}/{recipe.index}_b.wav",
        "model_a": recipe.model_a,
        "model_b": recipe.model_b,
        "label": {
            "content": recipe.content,
            "voice_quality": recipe.voice_quality,
            "paralinguistics": recipe.paralinguistics,
            "overall": recipe.overall,
        },
    }


def generate(out_dir: Path) -> list[Path]:
    """Write manifest.json and audio/ under `out_dir`; returns the files written (relative to out_dir)."""
    if not have_tools():
        raise SynthesisUnavailable("the example needs espeak-ng and sox: apt-get install espeak-ng sox")
    with reproducible_sox():
        return _generate(out_dir)


def _generate(out_dir: Path) -> list[Path]:
    by_index = {r.index: r for r in RECIPES}
    audio_dir = out_dir / AUDIO_DIR
    audio_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for recipe in RECIPES:
        if recipe.shares_instruction_of is not None:
            owner = by_index[recipe.shares_instruction_of]
            if owner.instruction != recipe.instruction:
                raise ValueError(f"{recipe.index} shares the instruction audio of {owner.index} but its text differs")
        else:
            path = audio_dir / f"{recipe.index}_instruction.wav"
            speak(recipe.instruction, path, INSTRUCTION_VOICE)
            written.append(path)
        for side, segments in (("a", recipe.answer_a), ("b", recipe.answer_b)):
            path = audio_dir / f"{recipe.index}_{side}.wav"
            render(segments, path)
            written.append(path)
    return finish(out_dir, written, [_item(r) for r in RECIPES])


def finish(out_dir: Path, written: list[Path], items: list[dict]) -> list[Path]:
    """Write the manifest, remove audio no recipe made; the files written, relative to out_dir."""
    # Leftovers of an older recipe list would otherwise linger beside the new files.
    for stale in set((out_dir / AUDIO_DIR).glob("*.wav")) - set(written):
        stale.unlink()
    manifest = out_dir / "manifest.json"
    manifest.write_text(json.dumps(items, indent=2) + "\n", encoding="utf-8")
    return sorted(p.relative_to(out_dir) for p in [*written, manifest])


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _tool_versions() -> str:
    def first_line(cmd: list[str]) -> str:
        proc = subprocess.run(cmd, capture_output=True, text=True)
        return (proc.stdout or proc.stderr).strip().splitlines()[0] if proc.returncode == 0 else "unknown"

    return f"{first_line(['espeak-ng', '--version'])}; {first_line(['sox', '--version'])}"


def check(committed: Path, make: Callable[[Path], list[Path]] = generate, script: str = "make_example.py") -> None:
    """Regenerate with `make` in a temp dir and compare every generated file with `committed`; raise ExampleMismatch."""
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp)
        expected = make(fresh)
        problems = []
        for rel in expected:
            if not (committed / rel).is_file():
                problems.append(f"missing: {rel}")
            elif _sha256(committed / rel) != _sha256(fresh / rel):
                problems.append(f"differs: {rel}")
        extra = {p.relative_to(committed) for p in (committed / AUDIO_DIR).glob("*.wav")} - set(expected)
        problems += [f"not made by the script: {rel}" for rel in sorted(extra)]
    if problems:
        raise ExampleMismatch(
            f"{committed} does not match a fresh generation ({len(problems)} files):\n  "
            + "\n  ".join(problems)
            + f"\nRe-run `python scripts/{script} --out {committed}` and commit the result, or check that "
            f"the tools match those that made it (here: {_tool_versions()})."
        )


def run_cli(
    argv: list[str] | None, description: str, default_out: Path, make: Callable[[Path], list[Path]], script: str
) -> int:
    """The command line shared by the example generators: write the example, or --check it."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--out", type=Path, default=default_out, help="benchmark folder to write (default: %(default)s)"
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="regenerate in a temp dir and compare hashes with the files in --out; write nothing",
    )
    args = parser.parse_args(argv)
    try:
        if args.check:
            check(args.out, make, script)
            print(f"{args.out}: all generated files match")
            return 0
        files = make(args.out)
    except (SynthesisUnavailable, ExampleMismatch) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    size = sum((args.out / rel).stat().st_size for rel in files)
    print(f"wrote {len(files)} files ({size / 1e6:.2f} MB) to {args.out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_cli(argv, __doc__.splitlines()[0], DEFAULT_OUT, generate, "make_example.py")


if __name__ == "__main__":
    sys.exit(main())
