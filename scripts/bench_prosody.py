"""Prosody per word and per phrase (extractors/prosody.py) against speech whose prosody is known, and its cost.

    python scripts/bench_prosody.py                  # every case below
    python scripts/bench_prosody.py --sentences 4    # fewer synthetic sentences

Every clip goes through the recogniser (`asr`, CPU profile: faster-whisper tiny.en) and then `prosody`, as
Stage 1 runs them. The truth is how each clip was made:

- stressed words, synthetic: espeak-ng SSML around one word of a sentence: `<emphasis>`,
  `<prosody pitch="+50%">`, `volume="+100%"` (espeak-ng reads `volume="+6dB"` as +6 %; doubling the
  amplitude is the 6 dB), `rate="-30%"`, and the three prosody changes together;
- stressed words, recorded: one word of LibriVox read speech and of Asterisk prompts (the longest word of the
  middle half of the transcript, its span as prosody aligned it) made 6 dB louder, or 3 semitones higher (sox
  `gain` / `pitch` on its span, spliced back);
- endings: espeak-ng questions against statements; recorded speech with its last 0.5 s of speech bent 8
  semitones up (sox `bend`), as much as a question's final rise, or 4 down (8 would take a low male voice,
  100 Hz, below the pitch tracker's floor for that speaker).

A stressed word is found when it is among the three most prominent words of its clip (top 3), the most
prominent (top 1), or in `prominent_words`. A case whose stressed word the recogniser did not write is counted
apart: nothing can be said of a word that is not in the transcript. The same words measured on the
recogniser's own times (`align_rounds=0`, no alignment to the syllable nuclei) show what the alignment adds.

Cost: seconds of computing per second of audio, for `prosody` and for the recogniser it runs after, on the same
clips. On a shared machine the figures carry the load; the script prints it.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from extractors import REGISTRY, Clip  # noqa: E402
from extractors.prosody import ProsodyConfig, frame_tracks  # noqa: E402
from trace_eval.audio import load_audio  # noqa: E402
from trace_eval.synth import SOX, Voice, speak  # noqa: E402

# Sentences and the word each stresses, in varied places.
SENTENCES = [
    ("The quick brown fox jumps over the lazy dog.", "fox"),
    ("We should meet at the library after lunch.", "library"),
    ("My sister bought a red bicycle yesterday.", "red"),
    ("Please send the report to the manager today.", "manager"),
    ("The children played in the garden all afternoon.", "garden"),
    ("He never said that she stole the money.", "money"),
    ("Our train leaves the station at seven tonight.", "station"),
    ("The old man walked slowly down the hill.", "slowly"),
    ("I think this coffee is much too sweet.", "coffee"),
    ("They painted the kitchen a bright yellow colour.", "kitchen"),
    ("She will call you back in ten minutes.", "call"),
    ("The museum opens early on Sunday mornings.", "early"),
]
VARIANTS = {
    "emphasis": "<emphasis>{}</emphasis>",
    "pitch +50%": '<prosody pitch="+50%">{}</prosody>',
    "volume +6 dB": '<prosody volume="+100%">{}</prosody>',
    "rate -30%": '<prosody rate="-30%">{}</prosody>',
    "pitch, volume, rate": '<prosody pitch="+50%" volume="+100%" rate="-30%">{}</prosody>',
}
QUESTIONS = [
    ("Is it raining?", "It is raining."),
    ("Are you coming to the party tonight?", "You are coming to the party tonight."),
    ("Did she finish the report?", "She finished the report."),
    ("Is the shop open on Sundays?", "The shop is open on Sundays."),
    ("Can we leave after lunch?", "We can leave after lunch."),
    ("Was the train late again?", "The train was late again."),
]
LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
ASTERISK = Path("/usr/share/asterisk/sounds/en")
ASTERISK_PROMPTS = (
    "agent-newlocation",
    "cannot-complete-as-dialed",
    "check-number-dial-again",
    "conf-getpin",
    "conf-leaderhasleft",
    "conf-onlyperson",
    "conf-placeintoconf",
    "dir-nomatch",
    "feature-not-avail-line",
    "vm-nobodyavail",
)
RECORDED_EFFECTS = {"gain +6 dB": ["gain", "-l", "6"], "pitch +3 st": ["pitch", "300"]}
BEND_UP_CENTS = 800  # 8 semitones: the size of a question's final rise
BEND_DOWN_CENTS = -400
BEND_S = 0.5


def recorded_clips() -> list[Path]:
    """LibriVox sentences and Asterisk prompts, in a fixed order (Debian: pocketsphinx-testdata,
    asterisk-core-sounds-en-wav)."""
    clips = sorted(LIBRIVOX.glob("*.wav")) + [ASTERISK / f"{name}.wav" for name in ASTERISK_PROMPTS]
    missing = [str(p) for p in clips if not p.exists()] or ([] if clips else [str(LIBRIVOX)])
    if missing:
        raise SystemExit(
            f"missing recorded speech: {', '.join(missing[:3])}: apt-get install pocketsphinx-testdata "
            "asterisk-core-sounds-en-wav"
        )
    return clips


# ---------------------------------------------------------------------------------------
# Making clips


def ssml(text: str, target: str, variant: str) -> str:
    """The sentence with `target` (its first occurrence) wrapped in the variant's markup."""
    marked = re.sub(rf"\b{re.escape(target)}\b", VARIANTS[variant].format(target), text, count=1)
    return f"<speak>{marked}</speak>"


def synthetic(text: str, target: str, variant: str, out: Path) -> Path:
    return speak(ssml(text, target, variant), out, Voice(wpm=150, ssml=True))


def sox(*args: str | Path) -> None:
    subprocess.run([*SOX, *map(str, args)], check=True, capture_output=True)


def alter_span(src: Path, dst: Path, start: float, end: float, effect: list[str]) -> Path:
    """`src` with the sox `effect` applied to start..end seconds only (length kept)."""
    with tempfile.TemporaryDirectory() as tmp:
        head, middle, tail = (Path(tmp) / f"{k}.wav" for k in ("head", "middle", "tail"))
        sox(src, head, "trim", "0", f"{start:.3f}")
        sox(src, middle, "trim", f"{start:.3f}", f"={end:.3f}", *effect)
        sox(src, tail, "trim", f"{end:.3f}")
        sox(head, middle, tail, dst)
    return dst


def speech_end(path: Path) -> float:
    """The end of the last sounding frame (prosody's own frame tracks)."""
    frames = frame_tracks(load_audio(path).at(16000), 16000, ProsodyConfig())
    return float(frames.times[np.flatnonzero(frames.sounding)[-1]]) + 0.005


def bend_ending(src: Path, dst: Path, cents: int, seconds: float = BEND_S) -> Path:
    """`src` with its last `seconds` of speech gliding `cents` up (or down)."""
    end = min(speech_end(src), load_audio(src).duration_s - 0.01)  # sox skips a bend that runs past the end
    start = max(end - seconds, 0.0)
    sox(src, dst, "bend", f"{start:.3f},{cents},{end - start:.3f}")
    return dst


# ---------------------------------------------------------------------------------------
# Listening


@dataclass
class Heard:
    """One clip through asr and prosody."""

    blueprint: dict
    asr_s: float
    prosody_s: float
    duration_s: float
    null_reasons: dict = field(default_factory=dict)
    unaligned: dict | None = None  # agent_prosody on the recogniser's own word times

    @property
    def prosody(self) -> dict | None:
        return self.blueprint.get("agent_prosody")

    @property
    def words(self) -> list[dict]:
        return (self.prosody or {}).get("words") or []


class Listener:
    """The recogniser (CPU profile) and prosody, loaded once."""

    def __init__(self, progress=None) -> None:
        from trace_eval.stage1.profiles import profile_settings
        from trace_eval.stage1.settings import make_config

        self.asr = REGISTRY["asr"](make_config(REGISTRY["asr"], profile_settings("cpu").get("asr", {})))
        self.asr.load()
        self.prosody = REGISTRY["prosody"]()
        self.prosody.load()
        self.unaligned = REGISTRY["prosody"](ProsodyConfig(align_rounds=0))
        self.progress = progress

    def __call__(self, path: Path) -> Heard:
        audio = load_audio(path)
        started = time.perf_counter()
        [recognised] = self.asr.extract([Clip("bench", audio)])
        asr_s = time.perf_counter() - started
        if not hasattr(recognised, "values"):
            raise RuntimeError(f"{path}: asr failed: {recognised}")
        blueprint = {"duration_s": audio.duration_s, **recognised.values}
        started = time.perf_counter()
        section = self.prosody.extract_one(Clip("bench", audio, blueprint))
        prosody_s = time.perf_counter() - started
        unaligned = self.unaligned.extract_one(Clip("bench", audio, blueprint)).values["agent_prosody"]
        if self.progress is not None:
            self.progress.update(1)
        return Heard(
            {**blueprint, **section.values}, asr_s, prosody_s, audio.duration_s, section.null_reasons, unaligned
        )


def normalise(word: str) -> str:
    return re.sub(r"[^a-z0-9']", "", word.lower())


def find_word(words: list[dict], target: str) -> int | None:
    """The index of the recognised word that is `target`, else None."""
    return next((k for k, w in enumerate(words) if normalise(w["word"]) == normalise(target)), None)


def overlapping(words: list[dict], start: float, end: float) -> int | None:
    """The word overlapping start..end the most, else None."""
    overlaps = [min(end, w["end"]) - max(start, w["start"]) for w in words]
    best = int(np.argmax(overlaps)) if overlaps else None
    return best if best is not None and overlaps[best] > 0 else None


def rank(heard: Heard, index: int, aligned: bool = True) -> int | None:
    """1 for the most prominent word of the clip; None when the word has no prominence."""
    scores = [w["prominence"] for w in (heard.words if aligned else (heard.unaligned or {}).get("words") or [])]
    if scores[index] is None:
        return None
    return 1 + sum(1 for k, s in enumerate(scores) if k != index and s is not None and s > scores[index])


def prominent(heard: Heard, index: int) -> bool:
    return any(p["index"] == index for p in (heard.prosody or {}).get("prominent_words", []))


def stressable_word(words: list[dict]) -> int | None:
    """The longest word of the middle half of a transcript (the first of equals): the one a test stresses."""
    n = len(words)
    middle = range(n // 4, max(n // 4 + 1, (3 * n + 3) // 4))
    letters = [(len(normalise(words[k]["word"])), -k) for k in middle if k < n]
    return -max(letters)[1] if letters else None


def final_contour(heard: Heard) -> tuple[str | None, float | None]:
    phrases = (heard.prosody or {}).get("phrases") or []
    return (phrases[-1]["final_contour"], phrases[-1]["final_change_st"]) if phrases else (None, None)


# ---------------------------------------------------------------------------------------
# The measurements


@dataclass
class Tally:
    cases: int = 0
    missed: int = 0  # the recogniser did not write the stressed word
    top1: int = 0
    top3: int = 0
    listed: int = 0
    unaligned_top3: int = 0

    def add(self, heard: Heard, index: int | None) -> None:
        self.cases += 1
        if index is None:
            self.missed += 1
            return
        place = rank(heard, index)
        self.top1 += place == 1
        self.top3 += place is not None and place <= 3
        self.listed += prominent(heard, index)
        unaligned = rank(heard, index, aligned=False)
        self.unaligned_top3 += unaligned is not None and unaligned <= 3

    def row(self, name: str) -> str:
        found = self.cases - self.missed
        share = (lambda k: f"{k}/{found} ({k / found:.0%})") if found else (lambda k: "-")
        shares = " | ".join(share(k) for k in (self.top1, self.top3, self.listed, self.unaligned_top3))
        return f"| {name} | {self.cases} | {self.missed} | {shares} |"


def stressed_words(listen: Listener, folder: Path, sentences: int, costs: list[Heard]) -> list[str]:
    tallies = {variant: Tally() for variant in VARIANTS}
    for k, (text, target) in enumerate(SENTENCES[:sentences]):
        for v, variant in enumerate(VARIANTS):
            heard = listen(synthetic(text, target, variant, folder / f"s{k}-{v}.wav"))
            costs.append(heard)
            tallies[variant].add(heard, find_word(heard.words, target))
    for clip in recorded_clips():
        plain = listen(clip)
        costs.append(plain)
        index = stressable_word(plain.words)
        if index is None:
            continue
        start, end = plain.words[index]["start"], plain.words[index]["end"]
        corpus = "LibriVox" if clip.parent == LIBRIVOX else "Asterisk"
        for e, (name, effect) in enumerate(RECORDED_EFFECTS.items()):
            altered = listen(alter_span(clip, folder / f"{clip.stem}-{e}.wav", start, end, effect))
            costs.append(altered)
            tallies.setdefault(f"{corpus}, {name}", Tally()).add(altered, overlapping(altered.words, start, end))
    total = Tally()
    for t in tallies.values():
        for key in vars(total):
            setattr(total, key, getattr(total, key) + getattr(t, key))
    header = [
        "| clips | cases | stressed word not recognised | top 1 | top 3 | in prominent_words "
        "| top 3 on the recogniser's times |",
        "|---|---|---|---|---|---|---|",
    ]
    return header + [t.row(name) for name, t in tallies.items()] + [total.row("all")]


def endings(listen: Listener, folder: Path, costs: list[Heard]) -> list[str]:
    rows = [
        "| clips | ending made | rising | falling | level | none | final change (semitones), median "
        "| against as recorded, median |",
        "|---|---|---|---|---|---|---|---|",
    ]

    def row(name: str, made: str, heard: list[Heard], recorded: list[Heard] | None = None) -> str:
        contours = [final_contour(h) for h in heard]
        counts = {c: sum(1 for k, _ in contours if k == c) for c in ("rising", "falling", "level", None)}
        changes = [x for _, x in contours if x is not None]
        moved = [
            x - y
            for (_, x), (_, y) in zip(contours, [final_contour(h) for h in recorded or []])
            if x is not None and y is not None
        ]
        shown = " | ".join(str(counts[c]) for c in ("rising", "falling", "level", None))
        median = f"{np.median(changes):+.1f}" if changes else "-"
        return f"| {name} | {made} | {shown} | {median} | {f'{np.median(moved):+.1f}' if moved else '-'} |"

    questions, statements = [], []
    for k, (question, statement) in enumerate(QUESTIONS):
        questions.append(listen(speak(question, folder / f"q{k}.wav", Voice(wpm=150))))
        statements.append(listen(speak(statement, folder / f"st{k}.wav", Voice(wpm=150))))
    costs.extend(questions + statements)
    rows += [row("espeak-ng", "question", questions), row("espeak-ng", "statement", statements)]
    for corpus, clips in (
        ("LibriVox", [c for c in recorded_clips() if c.parent == LIBRIVOX]),
        ("Asterisk", [c for c in recorded_clips() if c.parent == ASTERISK]),
    ):
        recorded = [listen(clip) for clip in clips]
        costs.extend(recorded)
        rows.append(row(corpus, "as recorded", recorded))
        for made, cents in ((f"last {BEND_S} s bent up 8 st", BEND_UP_CENTS), ("bent down 4 st", BEND_DOWN_CENTS)):
            heard = [listen(bend_ending(clip, folder / f"{clip.stem}-bend{cents}.wav", cents)) for clip in clips]
            costs.extend(heard)
            rows.append(row(corpus, made, heard, recorded))
    return rows


def cost(costs: list[Heard]) -> list[str]:
    audio = sum(h.duration_s for h in costs)
    asr = sum(h.asr_s for h in costs)
    prosody = sum(h.prosody_s for h in costs)
    shifts = [h.prosody["time_shift_s"] for h in costs if h.prosody and h.prosody["time_shift_s"] is not None]
    low, high = np.percentile(shifts, [10, 90]) if shifts else (0.0, 0.0)
    return [
        f"| step | seconds per second of audio ({len(costs)} clips, {audio:.0f} s) |",
        "|---|---|",
        f"| asr (faster-whisper tiny.en, CPU) | {asr / audio:.3f} |",
        f"| prosody | {prosody / audio:.3f} ({prosody / asr:.0%} of the recogniser's) |",
        "",
        f"The recogniser's word times, moved onto the syllable nuclei (`time_shift_s`, {len(shifts)} clips): "
        + (f"median {np.median(shifts):+.3f} s, 10th-90th percentile {low:+.3f} .. {high:+.3f} s" if shifts else "-"),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sentences", type=int, default=len(SENTENCES), help="synthetic sentences (default: all)")
    parser.add_argument("--only", choices=("stress", "endings"), help="one part only (the cost is of that part)")
    args = parser.parse_args(argv)
    from tqdm import tqdm

    recorded = len(recorded_clips())
    stress = args.sentences * len(VARIANTS) + recorded * (1 + len(RECORDED_EFFECTS))
    clips = {
        None: stress + 2 * len(QUESTIONS) + 3 * recorded,
        "stress": stress,
        "endings": 2 * len(QUESTIONS) + 3 * recorded,
    }[args.only]
    listen = Listener(tqdm(total=clips, unit="clip", desc="asr + prosody", file=sys.stderr))
    costs: list[Heard] = []
    with tempfile.TemporaryDirectory(prefix="bench_prosody_") as tmp:
        if args.only in (None, "stress"):
            print("## Stressed words\n")
            print("\n".join(stressed_words(listen, Path(tmp), args.sentences, costs)))
        if args.only in (None, "endings"):
            print("\n## Phrase endings\n")
            print("\n".join(endings(listen, Path(tmp), costs)))
    print("\n## Cost\n")
    print("\n".join(cost(costs)))
    print(f"\nload average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
