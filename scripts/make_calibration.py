"""Make the calibration set of the `cues` backbone: espeak-ng speech degraded in known ways, labels from the recipe.

    python scripts/make_calibration.py OUT_DIR [--rounds N]

writes two benchmark folders, OUT_DIR/fit (the rules' thresholds are set on it)
and OUT_DIR/heldout (other voices, other sentences: the check), each with
manifest.json, audio/ and recipes.json (how every clip was made).

Each response is espeak-ng speech, then at most one degradation:

- white or pink noise, mixed at a true SNR: the noise power is set against the
  power of the active speech (20 ms frames within 40 dB of the loudest), and the
  sum is scaled down only when it would clip. 0, 5, 9, 10 dB (heavy); 15, 20 dB (mild).
- reverberation, sox `reverb REVERBERANCE 50 ROOM`: 30% in a 30% room (mild);
  100% in a 100% room with +6 dB wet gain (heavy).
- clipping: gain by G dB over the peak, clip at the old peak level, scale back.
  4 dB (mild), 20 dB (heavy).

Labels follow from the recipe, one yes/no per response and dimension:

- voice_quality: a response is acceptable unless heavily degraded (noise at 10 dB
  SNR or less, heavy reverberation, heavy clipping). Two acceptable responses are
  both_good: mild degradation (15-20 dB SNR, light reverberation, light clipping) is
  audible but no clear reason to prefer the other. No amount between 10 and 15 dB is
  made, so no label sits on the line.
- content: the response says the quoted sentence, all of it.
- paralinguistics: the response is made the way the instruction asks (espeak-ng
  rate 90-110 vs 240-250 words per minute, gain 0 vs -20 dB, pitch 15 on a male
  voice vs 85 on a female one); with no manner asked, both_good.
- overall: the `cap` fusion policy over the three.

Deterministic: sox runs without dither and with fixed seeds (-D -R), and each noise
is drawn from a generator seeded by the clip's name.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import zlib
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import soundfile as sf

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fusion import label_of as typed_tie  # noqa: E402
from trace_eval.rubrics import load_rubric  # noqa: E402
from trace_eval.synth import SOX, SynthesisUnavailable, Voice, _run, have_tools, speak  # noqa: E402

SAMPLE_RATE = 16000
AUDIO_DIR = "audio"
PAD_S = 0.25  # silence before and after every response, so added noise is heard in the pauses too
INSTRUCTION_VOICE = Voice(wpm=180, pitch=50, voice="en-us")
TRACE = load_rubric("trace")


@dataclass(frozen=True)
class Degradation:
    """What was done to the clean speech of a response."""

    kind: str = "clean"  # clean, white, pink, reverb, clip
    amount: float = 0.0  # SNR in dB (noise); 1 mild, 2 heavy (reverb); dB over the peak (clip)

    @property
    def heavy(self) -> bool:
        """Heavily degraded: not acceptable on voice quality (the labelling rule in the module docstring)."""
        if self.kind in ("white", "pink"):
            return self.amount <= 10
        if self.kind == "reverb":
            return self.amount >= 2
        if self.kind == "clip":
            return self.amount >= 12
        return False

    def __str__(self) -> str:
        if self.kind in ("white", "pink"):
            return f"{self.kind} noise at {self.amount:g} dB SNR"
        if self.kind == "reverb":
            return "heavy reverberation" if self.heavy else "light reverberation"
        if self.kind == "clip":
            return f"clipped {self.amount:g} dB over the peak"
        return "clean"


CLEAN = Degradation()
REVERB = {1: "30 50 30", 2: "100 50 100 100 0 6"}  # sox reverb: reverberance HF-damping room [depth pre-delay wet-gain]


@dataclass(frozen=True)
class Response:
    """One response: what is said, how, and what was done to it."""

    text: str
    voice: str
    wpm: int = 160
    pitch: int = 50
    gain_db: float = 0.0
    degradation: Degradation = CLEAN


@dataclass(frozen=True)
class Pair:
    index: str
    instruction: str
    a: Response
    b: Response
    content: str
    voice_quality: str
    paralinguistics: str

    @property
    def overall(self) -> str:
        return TRACE.fusion.fuse("cap", vars(self))


@dataclass(frozen=True)
class Split:
    name: str
    voices: tuple[str, ...]  # male, male, female, female: the pitch pairs take a male and a female voice
    sentences: tuple[str, ...]
    off_topic: tuple[str, ...]  # said instead of the quoted sentence


SPLITS = (
    Split("fit", ("en-us", "en-gb", "en-us+f2", "en-us+f4"),
          ("The morning train to the city was late again today.",
           "Please remember to water the plants before you leave.",
           "Our team finished the project two days ahead of schedule.",
           "A warm cup of soup is perfect on a rainy evening."),
          ("I think the weather will be sunny all weekend long.",
           "The museum has a new exhibit about ancient Egypt.")),
    Split("heldout", ("en-gb-scotland", "en-029", "en-gb-x-rp+f3", "en-us-nyc+f5"),
          ("The library closes early on Sundays during the summer.",
           "She painted the old fence a bright shade of blue.",
           "Turn left at the bakery and walk past the bridge.",
           "My grandfather still tells stories about his first car."),
          ("We ordered pizza and watched a movie last night.",
           "The dentist said my teeth are in good shape.")),
)


def noise(kind: str, snr: float) -> Degradation:
    return Degradation(kind, float(snr))


# Voice quality: (response 1, response 2). Each runs once per round, with voice and sentence varied.
QUALITY_CONDITIONS: tuple[tuple[Degradation, Degradation], ...] = (
    (CLEAN, noise("white", 0)), (CLEAN, noise("white", 5)), (CLEAN, noise("white", 9)),
    (CLEAN, noise("pink", 5)), (CLEAN, noise("pink", 10)),
    (CLEAN, noise("white", 20)), (CLEAN, noise("pink", 15)), (noise("white", 20), noise("pink", 20)),
    (noise("white", 15), noise("white", 5)), (noise("white", 0), noise("pink", 5)),
    (CLEAN, Degradation("reverb", 2)), (CLEAN, Degradation("reverb", 1)),
    (CLEAN, Degradation("clip", 20)), (CLEAN, Degradation("clip", 4)),
    (Degradation("reverb", 2), Degradation("clip", 20)), (CLEAN, CLEAN),
)
ROUNDS = 2


def quality_pairs(split: Split, rounds: int = ROUNDS) -> list[Pair]:
    pairs = []
    for r in range(rounds):
        for i, (d1, d2) in enumerate(QUALITY_CONDITIONS):
            n = r * len(QUALITY_CONDITIONS) + i
            if n % 2:  # every other pair the degraded response comes first
                d1, d2 = d2, d1
            text = split.sentences[n % len(split.sentences)]
            voice = split.voices[(n + r) % len(split.voices)]
            a, b = Response(text, voice, degradation=d1), Response(text, voice, degradation=d2)
            pairs.append(Pair(f"{split.name}-vq{n + 1:02d}", f'Say "{text}"', a, b, "both_good",
                              typed_tie(not d1.heavy, not d2.heavy), "both_good"))
    return pairs


def content_pairs(split: Split) -> list[Pair]:
    (s1, s2, s3, s4), (o1, o2), (v1, v2, v3, v4) = split.sentences, split.off_topic, split.voices
    fragment = " ".join(s3.split()[:3]) + "."
    mild = noise("white", 20)
    rows = (  # quoted sentence, response 1, response 2, content label
        (s1, Response(s1, v1), Response(o1, v3), "1"),
        (s2, Response(o2, v2), Response(s2, v4), "2"),
        (s3, Response(s3, v3), Response(s3, v2), "both_good"),
        (s4, Response(o1, v4), Response(o2, v1), "both_bad"),
        (s3, Response(fragment, v1), Response(s3, v1), "2"),
        (s4, Response(s4, v2, degradation=mild), Response(o2, v2, degradation=mild), "1"),
    )
    return [Pair(f"{split.name}-c{n:02d}", f'Say "{quoted}"', a, b, label, "both_good", "both_good")
            for n, (quoted, a, b, label) in enumerate(rows, start=1)]


def manner_pairs(split: Split) -> list[Pair]:
    (s1, s2, s3, s4), (v1, v2, v3, v4) = split.sentences, split.voices
    rows = (  # instruction, response 1, response 2, paralinguistics label
        (f'Say "{s1}" slowly.', Response(s1, v1, wpm=90), Response(s1, v2, wpm=240), "1"),
        (f'Say "{s2}" quickly.', Response(s2, v3, wpm=110), Response(s2, v4, wpm=250), "2"),
        (f'Say "{s3}" loudly.', Response(s3, v2, gain_db=-20), Response(s3, v1), "2"),
        (f'Say "{s4}" very quietly.', Response(s4, v4, gain_db=-20), Response(s4, v3), "1"),
        (f'In a high-pitched voice, say "{s1}"', Response(s1, v3, pitch=85), Response(s1, v1, pitch=15), "1"),
        (f'In a deep, low voice, say "{s2}"', Response(s2, v1, pitch=15), Response(s2, v2, pitch=15), "both_good"),
        (f'Say "{s3}" slowly.', Response(s3, v4, wpm=240), Response(s3, v3, wpm=250), "both_bad"),
        (f'Say "{s4}" quickly.', Response(s4, v2, wpm=250), Response(s4, v1, wpm=240), "both_good"),
    )
    return [Pair(f"{split.name}-p{n:02d}", instruction, a, b, "both_good", "both_good", label)
            for n, (instruction, a, b, label) in enumerate(rows, start=1)]


def pairs_of(split: Split, rounds: int = ROUNDS) -> list[Pair]:
    return quality_pairs(split, rounds) + content_pairs(split) + manner_pairs(split)


# -- audio -------------------------------------------------------------------------------------

def _seed(name: str) -> int:
    return zlib.crc32(name.encode("utf-8"))


def active_power(x: np.ndarray, rate: int = SAMPLE_RATE) -> float:
    """Mean power of the speech frames: 20 ms frames within 40 dB of the loudest (pauses left out)."""
    size = rate // 50
    frames = x[: len(x) // size * size].reshape(-1, size)
    power = (frames ** 2).mean(axis=1)
    active = power >= power.max() * 1e-4
    return float(power[active].mean())


def _pink(n: int, rng: np.random.Generator) -> np.ndarray:
    """Pink (1/f power) noise: white noise shaped in the frequency domain."""
    spectrum = np.fft.rfft(rng.standard_normal(n))
    f = np.arange(len(spectrum), dtype=float)
    f[0] = 1.0
    return np.fft.irfft(spectrum / np.sqrt(f), n)


def mix_at_snr(speech: np.ndarray, kind: str, snr_db: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = rng.standard_normal(len(speech)) if kind == "white" else _pink(len(speech), rng)
    n *= np.sqrt(active_power(speech) / 10 ** (snr_db / 10) / np.mean(n ** 2))
    mixed = speech + n
    peak = np.abs(mixed).max()
    return mixed * (0.99 / peak) if peak > 0.99 else mixed  # scaling both keeps the SNR


def clip(speech: np.ndarray, over_db: float) -> np.ndarray:
    peak = np.abs(speech).max()
    ceiling = peak / 10 ** (over_db / 20)
    return np.clip(speech, -ceiling, ceiling) * (peak / ceiling)


def _read(path: Path) -> np.ndarray:
    samples, rate = sf.read(str(path), dtype="float64")
    if rate != SAMPLE_RATE or samples.ndim != 1:
        raise RuntimeError(f"{path}: expected {SAMPLE_RATE} Hz mono, got {rate} Hz, shape {samples.shape}")
    return samples


def render(response: Response, out: Path, tmp: Path) -> None:
    clean = tmp / "clean.wav"
    speak(response.text, clean, Voice(wpm=response.wpm, pitch=response.pitch, voice=response.voice,
                                      gain_db=response.gain_db, sample_rate=SAMPLE_RATE, pad_s=PAD_S))
    d = response.degradation
    if d.kind == "reverb":
        _run([*SOX, str(clean), str(out), "reverb", *REVERB[int(d.amount)].split()])
        return
    speech = _read(clean)
    if d.kind in ("white", "pink"):
        speech = mix_at_snr(speech, d.kind, d.amount, _seed(out.name))
    elif d.kind == "clip":
        speech = clip(speech, d.amount)
    sf.write(str(out), speech, SAMPLE_RATE, subtype="PCM_16")


def _recipe(pair: Pair) -> dict:
    def described(r: Response) -> dict:
        return {**asdict(replace(r, degradation=CLEAN)), "degradation": str(r.degradation)} | {
            "heavy": r.degradation.heavy}
    return {"index": pair.index, "a": described(pair.a), "b": described(pair.b)}


def write_pairs(pairs: list[Pair], out_dir: Path) -> list[Path]:
    """One benchmark folder: manifest.json, recipes.json, audio/. Returns the files written, relative to out_dir."""
    audio = out_dir / AUDIO_DIR
    audio.mkdir(parents=True, exist_ok=True)
    written, instructions, items = [], {}, []
    with tempfile.TemporaryDirectory() as tmp:
        for pair in pairs:
            if pair.instruction not in instructions:  # one file per instruction text, shared by its pairs
                path = audio / f"instruction{len(instructions) + 1:02d}.wav"
                speak(pair.instruction, path, INSTRUCTION_VOICE)
                instructions[pair.instruction] = path
                written.append(path)
            for side, response in (("a", pair.a), ("b", pair.b)):
                path = audio / f"{pair.index}_{side}.wav"
                render(response, path, Path(tmp))
                written.append(path)
            items.append({
                "index": pair.index,
                "instruction_path": instructions[pair.instruction].relative_to(out_dir).as_posix(),
                "instruction_text": pair.instruction,
                "audio1_path": f"{AUDIO_DIR}/{pair.index}_a.wav",
                "audio2_path": f"{AUDIO_DIR}/{pair.index}_b.wav",
                "label": {"content": pair.content, "voice_quality": pair.voice_quality,
                          "paralinguistics": pair.paralinguistics, "overall": pair.overall},
            })
    for stale in set(audio.glob("*.wav")) - set(written):
        stale.unlink()
    (out_dir / "manifest.json").write_text(json.dumps(items, indent=2) + "\n", encoding="utf-8")
    (out_dir / "recipes.json").write_text(json.dumps([_recipe(p) for p in pairs], indent=2) + "\n",
                                          encoding="utf-8")
    return sorted(p.relative_to(out_dir) for p in [*written, out_dir / "manifest.json", out_dir / "recipes.json"])


def generate(out_dir: Path, rounds: int = ROUNDS, splits: tuple[Split, ...] = SPLITS) -> dict[str, list[Path]]:
    if not have_tools():
        raise SynthesisUnavailable("the calibration set needs espeak-ng and sox: apt-get install espeak-ng sox")
    return {split.name: write_pairs(pairs_of(split, rounds), out_dir / split.name) for split in splits}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder to write fit/ and heldout/ into")
    parser.add_argument("--rounds", type=int, default=ROUNDS,
                        help="voice-quality pairs per condition and split (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        made = generate(args.out, args.rounds)
    except SynthesisUnavailable as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    for name, files in made.items():
        manifest = json.loads((args.out / name / "manifest.json").read_text(encoding="utf-8"))
        print(f"{args.out / name}: {len(manifest)} pairs, {len(files)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
