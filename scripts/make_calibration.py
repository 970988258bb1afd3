"""Make the calibration set of the `cues` backbone: speech degraded in known ways, labels from the recipe.

    python scripts/make_calibration.py OUT_DIR

writes three benchmark folders, each with manifest.json, audio/ and recipes.json
(how every clip was made): OUT_DIR/fit (espeak-ng; the rules' thresholds are set
on it), OUT_DIR/heldout (other espeak-ng voices, other sentences: the check) and
OUT_DIR/recorded (human speech: Asterisk telephone prompts and LibriVox read
speech, with the same degradations added).

Each response is one sentence, then at most one degradation:

- white or pink noise, mixed at a true SNR (noise power against the power of the
  active speech: 20 ms frames within 40 dB of the loudest), the sum scaled down
  only when it would clip: 0-10 dB (heavy), 11-20 dB (audible), 25-30 dB (faint);
  nothing between 20 and 25 dB.
- a level: the response scaled to an integrated loudness (BS.1770) of -60 to -50
  LUFS (too quiet), -40 to -35 LUFS (much quieter than speech at its natural
  level, about -20 LUFS) or -30 to -18 LUFS; nothing between -50 and -40 or
  between -35 and -30.
- reverberation, sox `reverb`: light (30% in a 30% room) or heavy (100% in a 100%
  room, +6 dB wet gain).
- clipping: gain by G dB over the peak, clip at the old peak level, scale back:
  4 dB (mild), 20 dB (heavy).
- silence: no speech at all (the same length of digital silence).

Labelling rule, written before any threshold was set: the paper's judge
instruction, a winner only for a "clear and obvious" difference.

- voice_quality: a response is not acceptable when heavily degraded (noise at
  10 dB SNR or less, heavy reverberation, heavy clipping) or too quiet to hear
  comfortably (-50 LUFS or less). Of two acceptable responses, one that sounds
  clean (no degradation, or noise at 25 dB SNR or more, at any level and pace)
  wins against one with audible noise (11-20 dB SNR): hiss against none is clear
  and obvious. A response at its natural level wins against the same words
  turned down to -40 to -35 LUFS (15 dB and more quieter: the listener strains
  or reaches for the volume), unless the instruction asks for a loudness (then
  the level is paralinguistics'). Anything else between two acceptable responses (mild reverberation
  or clipping, two noisy ones, two paces) is both_good.
- content: the response says the quoted sentence, all of it; another sentence, a
  fragment or a near miss ("Calling" for "Call waiting") is not acceptable;
  silence is not.
- paralinguistics: the response is made the way the instruction asks (espeak-ng
  rate 90-110 vs 240-250 words per minute, gain 0 vs -20 dB, pitch 15 on a male
  voice vs 85 on a female one); silence does not do any manner asked; with no
  manner asked, or one no recipe controls (politeness), both_good.
- overall: the `cap` fusion policy over the three.

Deterministic: sox runs without dither and with fixed seeds (-D -R), and each noise
is drawn from a generator seeded by the clip's name.
"""

from __future__ import annotations

import argparse
import gzip
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
LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
ASTERISK = Path("/usr/share/asterisk/sounds/en")
ASTERISK_TRANSCRIPTS = Path("/usr/share/doc/asterisk-core-sounds-en/core-sounds-en.txt.gz")
RECORDED_INSTALL = "apt-get install pocketsphinx-testdata asterisk-core-sounds-en-wav asterisk-core-sounds-en"


@dataclass(frozen=True)
class Degradation:
    """What was done to the clean speech of a response."""

    kind: str = "clean"  # clean, white, pink, level, reverb, clip, silent
    amount: float = 0.0  # SNR in dB (noise); LUFS (level); 1 mild, 2 heavy (reverb); dB over the peak (clip)

    @property
    def heavy(self) -> bool:
        """Not acceptable on voice quality (the labelling rule in the module docstring)."""
        if self.kind in ("white", "pink"):
            return self.amount <= 10
        if self.kind == "level":
            return self.amount <= -50
        if self.kind == "reverb":
            return self.amount >= 2
        if self.kind == "clip":
            return self.amount >= 12
        return self.kind == "silent"

    @property
    def turned_down(self) -> bool:
        """Acceptable, but much quieter than speech at its natural level: loses to it (the labelling rule)."""
        return self.kind == "level" and -50 < self.amount <= -35

    @property
    def audible(self) -> bool:
        """Acceptable but audibly noisy: loses to a clean-sounding response."""
        return self.kind in ("white", "pink") and 10 < self.amount <= 20

    @property
    def sounds_clean(self) -> bool:
        return (
            self.kind in ("clean", "level") and not self.heavy or (self.kind in ("white", "pink") and self.amount >= 25)
        )

    def __str__(self) -> str:
        if self.kind in ("white", "pink"):
            return f"{self.kind} noise at {self.amount:g} dB SNR"
        if self.kind == "level":
            return f"scaled to {self.amount:g} LUFS"
        if self.kind == "reverb":
            return "heavy reverberation" if self.heavy else "light reverberation"
        if self.kind == "clip":
            return f"clipped {self.amount:g} dB over the peak"
        return self.kind


CLEAN = Degradation()
SILENT = Degradation("silent")
REVERB = {1: "30 50 30", 2: "100 50 100 100 0 6"}  # sox reverb: reverberance HF-damping room [depth pre-delay wet-gain]


def vq_label(d1: Degradation, d2: Degradation) -> str:
    """The voice quality label of two responses from their degradations (the labelling rule)."""
    ok1, ok2 = not d1.heavy, not d2.heavy
    if ok1 and ok2:
        if d1.sounds_clean and d2.audible or d2.turned_down and d1.kind != "level":
            return "1"
        if d2.sounds_clean and d1.audible or d1.turned_down and d2.kind != "level":
            return "2"
    return typed_tie(ok1, ok2)


@dataclass(frozen=True)
class Response:
    """One response: what is said, how, and what was done to it."""

    text: str
    voice: str  # an espeak-ng voice, or "recorded" (then `source` is the recording)
    wpm: int = 160
    pitch: int = 50
    gain_db: float = 0.0
    degradation: Degradation = CLEAN
    source: str = ""  # a recorded wav, used instead of espeak-ng


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
    near_miss: tuple[str, str]  # a short quote and a response that misses it by a word


SPLITS = (
    Split(
        "fit",
        ("en-us", "en-gb", "en-us+f2", "en-us+f4"),
        (
            "The morning train to the city was late again today.",
            "Please remember to water the plants before you leave.",
            "Our team finished the project two days ahead of schedule.",
            "A warm cup of soup is perfect on a rainy evening.",
        ),
        ("I think the weather will be sunny all weekend long.", "The museum has a new exhibit about ancient Egypt."),
        ("Open the window.", "Open the door."),
    ),
    Split(
        "heldout",
        ("en-gb-scotland", "en-029", "en-gb-x-rp+f3", "en-us-nyc+f5"),
        (
            "The library closes early on Sundays during the summer.",
            "She painted the old fence a bright shade of blue.",
            "Turn left at the bakery and walk past the bridge.",
            "My grandfather still tells stories about his first car.",
        ),
        ("We ordered pizza and watched a movie last night.", "The dentist said my teeth are in good shape."),
        ("Call waiting.", "Calling."),
    ),
)


def noise(kind: str, snr: float) -> Degradation:
    return Degradation(kind, float(snr))


def level(lufs: float) -> Degradation:
    return Degradation("level", float(lufs))


# Voice quality: (response 1, response 2), one pair each, voice and sentence varied. SNR 0-30 dB, alternately
# white and pink noise, against clean speech; levels -60 to -18 LUFS against clean speech; then the rest.
SNRS = (0, 3, 6, 9, 10, 11, 12, 13, 15, 17, 20, 25, 30)
LEVELS = (-60, -55, -50, -40, -35, -30, -18)
QUALITY_CONDITIONS: tuple[tuple[Degradation, Degradation], ...] = (
    *((CLEAN, noise("white" if i % 2 == 0 else "pink", snr)) for i, snr in enumerate(SNRS)),
    *((CLEAN, level(lufs)) for lufs in LEVELS),
    (noise("white", 15), noise("white", 5)),
    (noise("white", 20), noise("pink", 12)),
    (CLEAN, Degradation("reverb", 2)),
    (CLEAN, Degradation("reverb", 1)),
    (CLEAN, Degradation("clip", 20)),
    (CLEAN, Degradation("clip", 4)),
    (CLEAN, CLEAN),
)
# Pace: (wpm, degradation) of response 1 and 2, the same sentence in the same voice.
PACE_CONDITIONS = (
    ((85, CLEAN), (260, CLEAN)),
    ((160, CLEAN), (260, CLEAN)),
    ((260, CLEAN), (85, noise("white", 12))),
    ((85, noise("pink", 15)), (260, CLEAN)),
)


def quality_pairs(split: Split) -> list[Pair]:
    pairs = []
    rows = [((160, d1), (160, d2)) for d1, d2 in QUALITY_CONDITIONS] + list(PACE_CONDITIONS)
    for n, ((w1, d1), (w2, d2)) in enumerate(rows):
        if n % 2:  # every other pair the second condition comes first
            (w1, d1), (w2, d2) = (w2, d2), (w1, d1)
        text = split.sentences[n % len(split.sentences)]
        voice = split.voices[(n + n // len(split.voices)) % len(split.voices)]
        a = Response(text, voice, wpm=w1, degradation=d1)
        b = Response(text, voice, wpm=w2, degradation=d2)
        pairs.append(
            Pair(f"{split.name}-vq{n + 1:02d}", f'Say "{text}"', a, b, "both_good", vq_label(d1, d2), "both_good")
        )
    return pairs


def content_pairs(split: Split) -> list[Pair]:
    (s1, s2, s3, s4), (o1, o2), (v1, v2, v3, v4) = split.sentences, split.off_topic, split.voices
    fragment = " ".join(s3.split()[:3]) + "."
    mild = noise("white", 20)
    quote, miss = split.near_miss
    rows = (  # quoted sentence, response 1, response 2, content label
        (s1, Response(s1, v1), Response(o1, v3), "1"),
        (s2, Response(o2, v2), Response(s2, v4), "2"),
        (s3, Response(s3, v3), Response(s3, v2), "both_good"),
        (s4, Response(o1, v4), Response(o2, v1), "both_bad"),
        (s3, Response(fragment, v1), Response(s3, v1), "2"),
        (s4, Response(s4, v2, degradation=mild), Response(o2, v2, degradation=mild), "1"),
        (quote, Response(miss, v3), Response(quote, v3), "2"),
        (quote, Response(quote, v4), Response(miss, v4), "1"),
    )
    return [
        Pair(
            f"{split.name}-c{n:02d}",
            f'Say "{quoted}"',
            a,
            b,
            label,
            vq_label(a.degradation, b.degradation),
            "both_good",
        )
        for n, (quoted, a, b, label) in enumerate(rows, start=1)
    ]


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
        (f'Say this slowly: "{s1}"', Response(s1, v2, degradation=SILENT), Response(s1, v2, wpm=90), "2"),
        (f'Say "{s2}" quickly.', Response(s2, v4, wpm=250), Response(s2, v4, degradation=SILENT), "1"),
        (f'Say this politely: "{s3}"', Response(s3, v1), Response(s3, v3), "both_good"),
    )
    pairs = []
    for n, (instruction, a, b, label) in enumerate(rows, start=1):
        content = typed_tie(a.degradation.kind != "silent", b.degradation.kind != "silent")
        pairs.append(
            Pair(f"{split.name}-p{n:02d}", instruction, a, b, content, vq_label(a.degradation, b.degradation), label)
        )
    return pairs


def pairs_of(split: Split) -> list[Pair]:
    return quality_pairs(split) + content_pairs(split) + manner_pairs(split)


# -- recorded human speech ---------------------------------------------------------------------

# Prompts of a few seconds with plain words, as in tests/extractors/test_real_speech.py.
ASTERISK_PROMPTS = (
    "agent-incorrect",
    "agent-newlocation",
    "auth-incorrect",
    "cannot-complete-as-dialed",
    "check-number-dial-again",
    "conf-getpin",
    "conf-invalid",
    "conf-kicked",
    "conf-onlyperson",
    "conf-placeintoconf",
    "dir-nomatch",
    "feature-not-avail-line",
)
LIBRIVOX_CLIPS = ("0870", "0880", "0890", "0920", "0930")


def recordings() -> list[tuple[str, str]]:
    """(wav path, transcript) of the recorded speech, Asterisk prompts then LibriVox sentences."""
    if not (ASTERISK_TRANSCRIPTS.exists() and LIBRIVOX.exists()):
        raise SynthesisUnavailable(f"the recorded part needs human speech: {RECORDED_INSTALL}")
    lines = gzip.open(ASTERISK_TRANSCRIPTS, "rt", encoding="utf-8", errors="replace").read().splitlines()
    said = dict(line.split(": ", 1) for line in lines if ": " in line)
    out = [(str(ASTERISK / f"{name}.wav"), said[name].strip()) for name in ASTERISK_PROMPTS]
    text = {}
    for line in (LIBRIVOX / "transcription").read_text(encoding="utf-8").splitlines():
        words, _, name = line.rpartition("(")
        text[name.strip(") ")[-4:]] = words.replace("<s>", "").replace("</s>", "").strip().capitalize() + "."
    out += [(str(LIBRIVOX / f"sense_and_sensibility_01_austen_64kb-{n}.wav"), text[n]) for n in LIBRIVOX_CLIPS]
    return out


RECORDED_CONDITIONS = (
    (CLEAN, noise("white", 3)),
    (CLEAN, noise("pink", 9)),
    (CLEAN, noise("white", 12)),
    (CLEAN, noise("pink", 15)),
    (CLEAN, noise("white", 20)),
    (CLEAN, noise("pink", 30)),
    (CLEAN, level(-55)),
    (CLEAN, level(-38)),
    (CLEAN, Degradation("clip", 20)),
    (CLEAN, Degradation("reverb", 2)),
    (CLEAN, CLEAN),
)


def recorded_pairs() -> list[Pair]:
    recs = recordings()
    pairs = []
    for n, (d1, d2) in enumerate(RECORDED_CONDITIONS):
        if n % 2:
            d1, d2 = d2, d1
        path, text = recs[(3 * n) % len(recs)]
        a, b = (Response(text, "recorded", degradation=d, source=path) for d in (d1, d2))
        pairs.append(Pair(f"recorded-vq{n + 1:02d}", f'Say "{text}"', a, b, "both_good", vq_label(d1, d2), "both_good"))
    by_name = {Path(p).stem: (p, t) for p, t in recs}
    call_waiting = (str(ASTERISK / "call-waiting.wav"), "Call waiting.")
    calling = (str(ASTERISK / "calling.wav"), "Calling.")
    content_rows = (  # quoted (path, text), response 1, response 2, label
        (recs[0], recs[0], recs[5], "1"),
        (recs[13], recs[2], recs[13], "2"),
        (by_name["conf-kicked"], by_name["conf-kicked"], by_name["conf-kicked"], "both_good"),
        (recs[14], recs[3], recs[8], "both_bad"),
        (call_waiting, calling, call_waiting, "2"),
        (call_waiting, call_waiting, calling, "1"),
    )
    for n, (quoted, r1, r2, label) in enumerate(content_rows, start=1):
        a, b = (Response(t, "recorded", source=p) for p, t in (r1, r2))
        pairs.append(Pair(f"recorded-c{n:02d}", f'Say "{quoted[1]}"', a, b, label, "both_good", "both_good"))
    return pairs


# -- audio -------------------------------------------------------------------------------------


def _seed(name: str) -> int:
    return zlib.crc32(name.encode("utf-8"))


def active_power(x: np.ndarray, rate: int = SAMPLE_RATE) -> float:
    """Mean power of the speech frames: 20 ms frames within 40 dB of the loudest (pauses left out)."""
    size = rate // 50
    frames = x[: len(x) // size * size].reshape(-1, size)
    power = (frames**2).mean(axis=1)
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
    n *= np.sqrt(active_power(speech) / 10 ** (snr_db / 10) / np.mean(n**2))
    mixed = speech + n
    peak = np.abs(mixed).max()
    return mixed * (0.99 / peak) if peak > 0.99 else mixed  # scaling both keeps the SNR


def clip(speech: np.ndarray, over_db: float) -> np.ndarray:
    peak = np.abs(speech).max()
    ceiling = peak / 10 ** (over_db / 20)
    return np.clip(speech, -ceiling, ceiling) * (peak / ceiling)


def loudness_lufs(speech: np.ndarray, rate: int = SAMPLE_RATE) -> float:
    """BS.1770 integrated loudness (pyloudnorm)."""
    import pyloudnorm

    return float(pyloudnorm.Meter(rate).integrated_loudness(speech))


def at_level(speech: np.ndarray, lufs: float) -> np.ndarray:
    """Speech scaled to an integrated loudness; refused when that would clip (a level, not a distortion)."""
    scaled = speech * 10 ** ((lufs - loudness_lufs(speech)) / 20)
    if np.abs(scaled).max() > 0.99:
        raise ValueError(f"scaling to {lufs} LUFS would clip")
    return scaled


def _read(path: Path) -> np.ndarray:
    samples, rate = sf.read(str(path), dtype="float64")
    if rate != SAMPLE_RATE or samples.ndim != 1:
        raise RuntimeError(f"{path}: expected {SAMPLE_RATE} Hz mono, got {rate} Hz, shape {samples.shape}")
    return samples


def render(response: Response, out: Path, tmp: Path) -> None:
    clean = tmp / "clean.wav"
    if response.source:  # a recording: 16 kHz mono, padded like the synthetic speech
        _run(
            [
                *SOX,
                response.source,
                "-b",
                "16",
                "-c",
                "1",
                str(clean),
                "rate",
                str(SAMPLE_RATE),
                "pad",
                str(PAD_S),
                str(PAD_S),
            ]
        )
    else:
        speak(
            response.text,
            clean,
            Voice(
                wpm=response.wpm,
                pitch=response.pitch,
                voice=response.voice,
                gain_db=response.gain_db,
                sample_rate=SAMPLE_RATE,
                pad_s=PAD_S,
            ),
        )
    d = response.degradation
    if d.kind == "reverb":
        _run([*SOX, str(clean), str(out), "reverb", *REVERB[int(d.amount)].split()])
        return
    speech = _read(clean)
    if d.kind in ("white", "pink"):
        speech = mix_at_snr(speech, d.kind, d.amount, _seed(out.name))
    elif d.kind == "level":
        speech = at_level(speech, d.amount)
    elif d.kind == "clip":
        speech = clip(speech, d.amount)
    elif d.kind == "silent":
        speech = np.zeros_like(speech)
    sf.write(str(out), speech, SAMPLE_RATE, subtype="PCM_16")


def _recipe(pair: Pair) -> dict:
    def described(r: Response) -> dict:
        return {**asdict(replace(r, degradation=CLEAN)), "degradation": str(r.degradation)} | {
            "heavy": r.degradation.heavy
        }

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
            items.append(
                {
                    "index": pair.index,
                    "instruction_path": instructions[pair.instruction].relative_to(out_dir).as_posix(),
                    "instruction_text": pair.instruction,
                    "audio1_path": f"{AUDIO_DIR}/{pair.index}_a.wav",
                    "audio2_path": f"{AUDIO_DIR}/{pair.index}_b.wav",
                    "label": {
                        "content": pair.content,
                        "voice_quality": pair.voice_quality,
                        "paralinguistics": pair.paralinguistics,
                        "overall": pair.overall,
                    },
                }
            )
    for stale in set(audio.glob("*.wav")) - set(written):
        stale.unlink()
    (out_dir / "manifest.json").write_text(json.dumps(items, indent=2) + "\n", encoding="utf-8")
    (out_dir / "recipes.json").write_text(json.dumps([_recipe(p) for p in pairs], indent=2) + "\n", encoding="utf-8")
    return sorted(p.relative_to(out_dir) for p in [*written, out_dir / "manifest.json", out_dir / "recipes.json"])


def generate(out_dir: Path, splits: tuple[Split, ...] = SPLITS, recorded: bool = True) -> dict[str, list[Path]]:
    if not have_tools():
        raise SynthesisUnavailable("the calibration set needs espeak-ng and sox: apt-get install espeak-ng sox")
    made = {split.name: write_pairs(pairs_of(split), out_dir / split.name) for split in splits}
    if recorded:
        made["recorded"] = write_pairs(recorded_pairs(), out_dir / "recorded")
    return made


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder to write fit/, heldout/ and recorded/ into")
    parser.add_argument("--no-recorded", action="store_true", help="leave out the recorded human speech")
    args = parser.parse_args(argv)
    try:
        made = generate(args.out, recorded=not args.no_recorded)
    except SynthesisUnavailable as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    for name, files in made.items():
        manifest = json.loads((args.out / name / "manifest.json").read_text(encoding="utf-8"))
        print(f"{args.out / name}: {len(manifest)} pairs, {len(files)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
