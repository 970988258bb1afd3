"""Stressed words on speech no rule was set on: is the stressed word among the two most prominent, and does the
`cues` judge prefer the answer that stresses the asked word?

    python scripts/bench_stress.py                # the test half's table (transcripts cached after a first run)
    python scripts/bench_stress.py --half tune    # the tuning half's
    python scripts/bench_stress.py --fit          # the tuning half's grid of prominence weightings, then report
    python scripts/bench_stress.py --fit-judge    # the judge's thresholds set on the tuning half, then report
    python scripts/bench_stress.py --prosody 2 --judge-alone 0.75   # prosody 2, the judge before its focus rule

The sets (`--cache`, default ~/.cache/trace-eval/stress, holds the clips made and each clip's transcript):

- synthetic: SENTENCES, each said by espeak-ng's six voice variants of bench_perception.py (m1, m3, f2, f4, croak,
  klatt2 at their speeds), once with the asked word stressed and once with another word of the sentence
  stressed, in two manners: espeak-ng's own `<emphasis>`, and the word higher, louder and slower together
  (`<prosody pitch="+30%" volume="+60%" rate="-20%">`, the cues a speaker moves at once);
- recorded: LibriVox's read sentences and 60 of Asterisk's English prompts of 6 words or more (Debian:
  pocketsphinx-testdata, asterisk-core-sounds-en-wav), one word made prominent by sox on its span as an
  independent aligner places it (CMU PocketSphinx given the known transcript, scripts/reference_words.py; a
  recording it cannot place is left out): 4 dB louder, 2 semitones higher and 15 % longer together; the asked
  word is the longest of the middle half of the transcript, the other the longest at least two words away from
  it; the recognised word over the span is the stressed one.

A clip is heard as Stage 1 hears it, English declared (the recogniser of the `cpu` profile, tiny.en; the
language is measured by bench_perception.py), then `prosody`. A stressed word is found when it is among the two
most prominent words of its clip; a clip whose stressed word the recogniser did not write is counted apart.
A pair is one sentence and voice: the instruction "Say “SENTENCE”, stressing “WORD”." with the two clips, in an
order fixed by the hash; the `cues` judge's Paralinguistics is right when it names the one that stresses the
asked word. The same is asked of two voices (m1 and m3, f2 and f4, croak and klatt2), one stressing the asked word
and the other another word, as two systems would answer, and of two voices that both stress it (`both_good`) or
both stress another (`both_bad`).

Every sentence or recording is in one half, fixed by a hash of its text or its file name: a pair and each voice of
a sentence are in the same half, so the test half's sentences are heard nowhere in the tuning half. `--fit` sets
the weights of prominence's four parts (extractors/prosody.py) on the tuning half only.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import math
import re
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_perception import ESPEAK_VOICES as VOICES  # noqa: E402  (the perception sets' speakers; pins the class)
from bench_perception import asterisk_prompts  # noqa: E402
from bench_prosody import alter_span, normalise, overlapping, stressable_word  # noqa: E402
from reference_words import reference_words  # noqa: E402

from extractors import REGISTRY, Clip  # noqa: E402
from extractors.prosody import ProsodyConfig, prominences  # noqa: E402
from trace_eval.audio import load_audio  # noqa: E402
from trace_eval.judge import cues  # noqa: E402
from trace_eval.stage1.store import apply_section, new_blueprint  # noqa: E402
from trace_eval.synth import Voice, speak  # noqa: E402

# Sentence, the word asked to be stressed, another word of it stressed by the other answer.
SENTENCES = [
    ("The quick brown fox jumps over the lazy dog.", "fox", "lazy"),
    ("We should meet at the library after lunch.", "library", "meet"),
    ("My sister bought a red bicycle yesterday.", "red", "sister"),
    ("Please send the report to the manager today.", "manager", "report"),
    ("The children played in the garden all afternoon.", "garden", "children"),
    ("He never said that she stole the money.", "money", "never"),
    ("Our train leaves the station at seven tonight.", "station", "train"),
    ("The old man walked slowly down the hill.", "slowly", "old"),
    ("I think this coffee is much too sweet.", "coffee", "sweet"),
    ("They painted the kitchen a bright yellow colour.", "kitchen", "yellow"),
    ("She will call you back in ten minutes.", "call", "minutes"),
    ("The museum opens early on Sunday mornings.", "early", "museum"),
    ("I left my umbrella on the bus this morning.", "umbrella", "morning"),
    ("Your parcel will arrive on Thursday afternoon.", "Thursday", "parcel"),
    ("We watched a wonderful film at the cinema.", "wonderful", "cinema"),
    ("The doctor told him to drink more water.", "water", "doctor"),
    ("Nobody knew the answer to the last question.", "answer", "nobody"),
    ("The cat slept on the warm blanket by the fire.", "blanket", "cat"),
    ("Turn left at the second traffic light.", "second", "left"),
    ("Her brother plays the piano every evening.", "piano", "brother"),
    ("The meeting has been moved to next Monday.", "Monday", "meeting"),
    ("I would like a cup of green tea please.", "green", "cup"),
    ("The river flooded the village after the storm.", "village", "river"),
    ("Can you bring the blue folder to my office?", "blue", "office"),
    ("The bakery on the corner sells fresh bread every morning.", "fresh", "corner"),
    ("My grandmother grew tomatoes behind her little house.", "tomatoes", "grandmother"),
    ("We missed the last bus because the concert ran late.", "concert", "missed"),
    ("Please close the window before you leave the room.", "window", "leave"),
    ("The students finished their project two days early.", "project", "students"),
    ("A strong wind knocked over the fence last night.", "fence", "wind"),
    ("He bought a new guitar with the money he saved.", "guitar", "saved"),
    ("The hotel room had a beautiful view of the ocean.", "beautiful", "hotel"),
    ("Could you pass me the salt and the pepper?", "salt", "pepper"),
    ("The pilot announced a short delay before takeoff.", "delay", "pilot"),
    ("Our neighbours are painting their fence bright green.", "neighbours", "painting"),
    ("She found her keys under the sofa cushion.", "keys", "sofa"),
    ("The library closes at nine on weekdays.", "nine", "library"),
    ("I need to buy milk and eggs on the way home.", "milk", "home"),
    ("The baby finally fell asleep after midnight.", "finally", "baby"),
    ("They travelled by train across the whole country.", "train", "country"),
    ("The teacher wrote the answer on the board.", "board", "teacher"),
    ("We ordered two large pizzas for the party.", "large", "party"),
    ("His phone battery died in the middle of the call.", "battery", "middle"),
    ("The garden looks lovely after the spring rain.", "lovely", "garden"),
    ("You should always wear a helmet on your bike.", "helmet", "always"),
    ("The shop around the corner sells cheap shoes.", "cheap", "shop"),
    ("My cousin is moving to Canada next summer.", "Canada", "cousin"),
    ("The dog barked loudly at the mail carrier.", "loudly", "carrier"),
]
MANNERS = {
    "emphasis": "<emphasis>{}</emphasis>",
    "pitch, volume, rate": '<prosody pitch="+30%" volume="+60%" rate="-20%">{}</prosody>',
}
RECORDED_STRESS = ["gain", "4", "pitch", "200", "tempo", "-s", str(round(1 / 1.15, 3))]
LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
ASTERISK = Path("/usr/share/asterisk/sounds/en")
RECORDED_MIN_WORDS = 6
RECORDED_PROMPTS = 60  # Asterisk prompts, the first by a hash of their name
CACHE = Path.home() / ".cache" / "trace-eval" / "stress"


@dataclass(frozen=True)
class StressClip:
    """One clip of the set: its group (a sentence or recording: the half and the pair), what is stressed."""

    set: str  # synthetic | recorded
    manner: str  # emphasis | pitch, volume, rate | sox
    group: str  # the sentence's text, or the recording's name
    voice: str
    sentence: str
    stressed: str  # the word made prominent
    asked_word: str  # the word the instruction asks to stress
    asked: bool  # the stressed word is the asked one
    path: Path
    span: tuple[float, float] | None = None  # recorded: where the word is, in the plain clip

    @property
    def half(self) -> str:
        return "tune" if int(hashlib.sha256(self.group.encode()).hexdigest()[:8], 16) % 2 == 0 else "test"

    @property
    def pair(self) -> tuple[str, str, str, str]:
        return self.set, self.manner, self.group, self.voice


def _ssml(text: str, word: str, manner: str) -> str:
    marked = re.sub(rf"\b{re.escape(word)}\b", MANNERS[manner].format(word), text, count=1)
    return f"<speak>{marked}</speak>"


def synthetic(folder: Path, sentences=SENTENCES, voices=VOICES, manners=tuple(MANNERS)) -> list[StressClip]:
    clips = []
    for (text, asked, other), (variant, wpm), manner in itertools.product(sentences, voices, manners):
        for word in (asked, other):
            name = hashlib.sha256(f"{text}|{variant}|{manner}|{word}".encode()).hexdigest()[:16]
            path = folder / "synthetic" / f"{name}.wav"
            if not path.exists():
                path.parent.mkdir(parents=True, exist_ok=True)
                speak(_ssml(text, word, manner), path, Voice(voice=f"en-us+{variant}", wpm=wpm, ssml=True))
            clips.append(StressClip("synthetic", manner, text, variant, text, word, asked, word == asked, path))
    return clips


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


def librivox_transcripts() -> dict[str, str]:
    """LibriVox clip name -> its transcript (pocketsphinx-testdata's `transcription`)."""
    transcripts = {}
    for line in (LIBRIVOX / "transcription").read_text().splitlines():
        text, _, name = line.rpartition("(")
        transcripts[name.rstrip(") ")] = text.replace("<s>", "").replace("</s>", "").strip()
    return transcripts


def recordings() -> list[tuple[Path, str]]:
    """(recording, its transcript): LibriVox's sentences and RECORDED_PROMPTS of Asterisk's English prompts."""
    missing = [p for p in (LIBRIVOX, ASTERISK) if not p.exists()]
    if missing:
        raise SystemExit(f"{missing[0]} is missing: apt-get install pocketsphinx-testdata asterisk-core-sounds-en-wav "
                         "asterisk-core-sounds-en")  # fmt: skip
    prompts = {  # whole prompts, not the letters and digits of the subfolders
        name: text
        for name, text in asterisk_prompts("en").items()
        if "/" not in name and len(_words(text)) >= RECORDED_MIN_WORDS and (ASTERISK / f"{name}.wav").is_file()
    }
    names = sorted(prompts, key=lambda name: hashlib.sha256(name.encode()).hexdigest())[:RECORDED_PROMPTS]
    librivox = librivox_transcripts()
    return [(p, librivox[p.stem]) for p in sorted(LIBRIVOX.glob("*.wav")) if p.stem in librivox] + [
        (ASTERISK / f"{name}.wav", prompts[name]) for name in names
    ]


def _pick(words: list[dict]) -> tuple[int, int] | None:
    """The asked word (bench_prosody's: the longest of the middle half) and the other (the longest two words away
    or more)."""
    if len(words) < RECORDED_MIN_WORDS:
        return None
    asked = stressable_word(words)
    letters = [len(normalise(w["word"])) for w in words]
    others = [k for k in range(len(words)) if abs(k - asked) >= 2]
    return asked, max(others, key=lambda k: (letters[k], -k))


def recorded(folder: Path) -> list[StressClip]:
    """Each recording twice, its asked word and its other word made prominent on the span an independent aligner
    gives them (scripts/reference_words.py), not the span Stage 1 would: the reference must not be the measured
    system's own. A recording the aligner cannot place is left out."""
    clips = []
    for source, text in recordings():
        reference = reference_words(source, text)
        if isinstance(reference, str):
            print(f"  {source.name} left out: {reference}", file=sys.stderr)
            continue
        words = [{"word": w.word, "start": w.start, "end": w.end} for w in reference]
        picked = _pick(words)
        if picked is None:
            continue
        for k in picked:
            start, end = words[k]["start"], words[k]["end"]
            path = folder / "recorded" / f"{source.stem}-{start:.2f}-{end:.2f}.wav"
            if not path.exists():
                path.parent.mkdir(parents=True, exist_ok=True)
                alter_span(source, path, start, end, RECORDED_STRESS)
            group = f"{source.parent.name}/{source.stem}"
            clips.append(StressClip("recorded", "sox", group, source.parent.name, text, words[k]["word"],
                                    words[picked[0]]["word"], k == picked[0], path, (start, end)))  # fmt: skip
    return clips


class Hearing:
    """Each clip's `asr` section (English declared, the cpu profile), cached by audio hash, and its `prosody`."""

    def __init__(self, cache: Path, config: ProsodyConfig | None = None) -> None:
        from trace_eval.stage1.profiles import profile_settings
        from trace_eval.stage1.settings import make_config

        settings = {**profile_settings("cpu").get("asr", {}), "language": "en"}
        self.asr = REGISTRY["asr"](make_config(REGISTRY["asr"], settings))
        self.path = cache / f"asr-{self.asr.fingerprint()}.jsonl"
        self.known: dict[str, dict] = {}
        if self.path.exists():
            for line in self.path.read_text().splitlines():
                record = json.loads(line)
                self.known[record["sha256"]] = record["asr"]
        self.prosody = REGISTRY["prosody"](config or ProsodyConfig())
        self.loaded = False
        self.heard = 0
        self.started = time.process_time()

    def asr_values(self, path: Path) -> tuple[Clip, dict]:
        audio = load_audio(path)
        sha = hashlib.sha256(path.read_bytes()).hexdigest()
        if sha not in self.known:
            if not self.loaded:
                self.asr.load()
                self.loaded = True
            [section] = self.asr.extract([Clip(sha, audio)])
            values = section.values if hasattr(section, "values") else {"error": str(section)}
            self.known[sha] = values
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a") as out:
                out.write(json.dumps({"sha256": sha, "asr": values}) + "\n")
            self.heard += 1
            if self.heard % 25 == 0:
                print(f"  heard {self.heard} ({time.process_time() - self.started:.0f} CPU s)", file=sys.stderr)
        return Clip(sha, audio), self.known[sha]

    def __call__(self, path: Path) -> dict:
        """The clip's blueprint: its asr values and agent_prosody (None where prosody has nothing)."""
        clip, values = self.asr_values(path)
        blueprint = {**new_blueprint(clip.sha256, clip.audio.duration_s, None, None), **values}
        if "error" in values:
            return blueprint
        section = self.prosody.extract_one(Clip(clip.sha256, clip.audio, blueprint))
        entry = {
            "name": "prosody",
            "status": "ok",
            "null_reasons": section.null_reasons,
        }  # a null reads with its reason
        apply_section(blueprint, self.prosody.outputs, entry, section.values)
        return blueprint


def stressed_index(c: StressClip, blueprint: dict) -> int | None:
    """The recognised word that was stressed: the same word (synthetic), or the word over its span (recorded)."""
    words = (blueprint.get("agent_prosody") or {}).get("words") or []
    if c.span is None:
        return next((k for k, w in enumerate(words) if normalise(w["word"]) == normalise(c.stressed)), None)
    return overlapping(words, *c.span)


def place(c: StressClip, blueprint: dict) -> int | None:
    """Where the stressed word ranks by prominence (1: the most prominent); None: not recognised, or no
    prominence."""
    index = stressed_index(c, blueprint)
    words = (blueprint.get("agent_prosody") or {}).get("words") or []
    if index is None or words[index]["prominence"] is None:
        return None
    mine = words[index]["prominence"]
    return 1 + sum(
        1 for k, w in enumerate(words) if k != index and w["prominence"] is not None and w["prominence"] > mine
    )


def _instruction(c: StressClip) -> str:
    return f"Say “{c.sentence}”, stressing “{c.asked_word}”."


def judge_pair(
    asked: StressClip,
    other: StressClip,
    blueprints: dict[Path, dict],
    thresholds: cues.Thresholds = cues.DEFAULT_THRESHOLDS,
) -> tuple[str, str, str]:
    """(the label the judge gives, the right one, its reasoning) for the pair in its hashed order."""
    first = int(hashlib.sha256(asked.group.encode() + asked.voice.encode()).hexdigest()[8:16], 16) % 2 == 0
    pair = (asked, other) if first else (other, asked)
    label, reasoning = paralinguistics(
        _instruction(asked), blueprints[pair[0].path], blueprints[pair[1].path], thresholds
    )
    return label, "1" if first else "2", reasoning


def paralinguistics(instruction: str, bp1: dict, bp2: dict, thresholds: cues.Thresholds) -> tuple[str | None, str]:
    """The `cues` judge's Paralinguistics label and reasoning, each transcript doubted where the judge doubts it."""
    doubts = (cues.transcript_doubt(bp1), cues.transcript_doubt(bp2))
    label, reasoning, _ = cues.judge_paralinguistics(instruction, bp1, bp2, thresholds, doubts)
    return label, reasoning


def _share(k: int, n: int) -> str:
    return f"{k}/{n} ({k / n:.0%})" if n else "-"


def pairs_of(clips: list[StressClip]) -> list[tuple[StressClip, StressClip]]:
    """(asked, other) of each sentence, voice and manner."""
    pairs: dict[tuple, dict[bool, StressClip]] = {}
    for c in clips:
        pairs.setdefault(c.pair, {})[c.asked] = c
    return [(pair[True], pair[False]) for pair in pairs.values()]


def alike_pairs(clips: list[StressClip], asked_word: bool = True) -> list[tuple[StressClip, StressClip]]:
    """Two voices stressing the same word of the same sentence in the same manner (m1 and m3, f2 and f4, croak
    and klatt2): the asked word (the judge is right with `both_good`), or the other (`both_bad`)."""
    asked = {(c.manner, c.group, c.voice): c for c in clips if c.set == "synthetic" and c.asked == asked_word}
    voices = [v for v, _ in VOICES]
    return [
        (asked[(manner, group, a)], asked[(manner, group, b)])
        for (manner, group, voice) in sorted(asked)
        if voice in voices[::2]
        for a, b in [(voice, voices[voices.index(voice) + 1])]
        if (manner, group, b) in asked
    ]


def two_voice_pairs(clips: list[StressClip]) -> list[tuple[StressClip, StressClip]]:
    """(asked, other) said by the two voices of `alike_pairs`, one each: the asked word stressed by one voice,
    another word by the other, as two systems would answer (the pairs of `pairs_of` share a voice)."""
    other = {(c.manner, c.group, c.voice): c for c in clips if c.set == "synthetic" and not c.asked}
    found = []
    for first, second in alike_pairs(clips):
        for asked, by in ((first, second.voice), (second, first.voice)):
            if (asked.manner, asked.group, by) in other:
                found.append((asked, other[(asked.manner, asked.group, by)]))
    return found


def judge_alike(
    first: StressClip, second: StressClip, blueprints: dict[Path, dict], thresholds: cues.Thresholds
) -> str:
    return paralinguistics(_instruction(first), blueprints[first.path], blueprints[second.path], thresholds)[0]


def found_and_judged(clips: list[StressClip], blueprints: dict[Path, dict]) -> tuple[int, int, int, int]:
    """(stressed words among the two most prominent, stressed words found, pairs the judge gets right, pairs)."""
    places = [place(c, blueprints[c.path]) for c in clips]
    pairs = pairs_of(clips)
    right = sum(label == truth for label, truth, _ in (judge_pair(*p, blueprints) for p in pairs))
    return (
        sum(1 for p in places if p is not None and p <= 2),
        sum(1 for p in places if p is not None),
        right,
        len(pairs),
    )


def report(
    clips: list[StressClip],
    blueprints: dict[Path, dict],
    half: str,
    show: bool = False,
    thresholds: cues.Thresholds = cues.DEFAULT_THRESHOLDS,
) -> None:
    chosen = [c for c in clips if c.half == half]
    print(f"\n{half} half: {len(chosen)} clips, {len({c.group for c in chosen})} sentences or recordings")
    print(
        "| clips | stressed | word not recognised, or no prominence | top 1 | top 2 | top 3 | judge: the asked word "
        "against another (pairs) | judge: both stress it, `both_good` | judge: both stress another, `both_bad` | "
        "judge: the asked word against another, two voices |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for set_, manner in sorted({(c.set, c.manner) for c in chosen}) + [("all", "")]:
        mine = [c for c in chosen if set_ == "all" or (c.set, c.manner) == (set_, manner)]
        places = [place(c, blueprints[c.path]) for c in mine]
        found = [p for p in places if p is not None]
        cells = [str(len(mine)), str(len(places) - len(found))]
        cells += [_share(sum(1 for p in found if p <= n), len(found)) for n in (1, 2, 3)]
        pairs, right = pairs_of(mine), 0
        for asked, other in pairs:
            label, truth, reasoning = judge_pair(asked, other, blueprints, thresholds)
            right += label == truth
            if show and label != truth:
                print(f"    {asked.sentence} [{asked.voice}, {asked.manner}] {label} not {truth}: {reasoning}")
        cells.append(_share(right, len(pairs)))
        for asked_word, label in ((True, "both_good"), (False, "both_bad")):
            alike = alike_pairs(mine, asked_word)
            cells.append(_share(sum(judge_alike(*p, blueprints, thresholds) == label for p in alike), len(alike)))
        two = [judge_pair(*p, blueprints, thresholds) for p in two_voice_pairs(mine)]
        cells.append(_share(sum(label == truth for label, truth, _ in two), len(two)))
        print(f"| {f'{set_}, {manner}' if manner else set_} | " + " | ".join(cells) + " |")


PROSODY_VERSIONS = {  # how each version of prosody aligned and weighed, for the tables beside the one shipped
    "2": ProsodyConfig(prominence_weights=(1.0, 1.0, 1.0, 1.0), align_start_shift_s=0.0, align_max_shift_s=math.inf),
    "3": ProsodyConfig(align_start_shift_s=0.0, align_max_shift_s=math.inf),
    "4": ProsodyConfig(align_max_shift_s=math.inf),
    "5": ProsodyConfig(),
}
WEIGHTS = (0.0, 0.5, 1.0, 1.5, 2.0)
JUDGE_BEHIND = (0.0, 0.2, 0.4, 0.6, 0.8, math.inf)  # inf: prominence alone


def fit(clips: list[StressClip], heard: dict[Path, dict]) -> ProsodyConfig:
    """The weighting of prominence's parts that puts the stressed word among the two most prominent most often on
    the tuning half (of equals, the weights nearest equal)."""
    tune = [c for c in clips if c.half == "tune"]
    best = None
    for weights in itertools.product(WEIGHTS, repeat=4):
        if not any(weights):
            continue
        config = ProsodyConfig(prominence_weights=weights)
        blueprints = {c.path: reweigh(heard[c.path], config) for c in tune}
        top2 = sum(1 for c in tune if (rank := place(c, blueprints[c.path])) is not None and rank <= 2)
        key = (top2, -sum(abs(w - 1.0) for w in weights))
        if best is None or key > best[0]:
            best = (key, config)
    (top2, _), config = best
    print(
        f"tuning half: weights {config.prominence_weights} put {top2} of {len(tune)} stressed words (recognised or "
        "not) among the two most prominent"
    )
    return config


def fit_judge(clips: list[StressClip], blueprints: dict[Path, dict]) -> cues.Thresholds:
    """The judge's prominence an asked word needs, how far behind the answer's most prominent word it may lie, and
    the lead that names the better of two answers, set on the tuning half's pairs: the mean of the three kinds'
    rates (the asked word against another, both stress it, both stress another), so that no kind outweighs the
    others by its count; of equals, the largest values."""
    import numpy as np
    from tqdm import tqdm

    tune = [c for c in clips if c.half == "tune"]
    kinds = [
        (pairs_of(tune), lambda p, t: (lambda label, truth, _: label == truth)(*judge_pair(*p, blueprints, t))),
        (alike_pairs(tune), lambda p, t: judge_alike(*p, blueprints, t) == "both_good"),
        (alike_pairs(tune, asked_word=False), lambda p, t: judge_alike(*p, blueprints, t) == "both_bad"),
    ]
    best = None
    grid = itertools.product(np.arange(0.0, 1.01, 0.1), JUDGE_BEHIND, np.arange(0.2, 0.81, 0.1))
    for least, behind, lead in tqdm(list(grid), desc="judge thresholds", file=sys.stderr):
        prosody = replace(cues.DEFAULT_THRESHOLDS.prosody, emphasis_min_prominence=round(float(least), 2),
                          emphasis_max_behind=behind, emphasis_clear_lead=round(float(lead), 2))  # fmt: skip
        thresholds = replace(cues.DEFAULT_THRESHOLDS, prosody=prosody)
        rates = [sum(right(p, thresholds) for p in pairs) / len(pairs) for pairs, right in kinds]
        key = (sum(rates) / len(rates), least, behind, lead)
        if best is None or key > best[0]:
            best = (key, thresholds, rates)
    (mean, least, behind, lead), thresholds, rates = best
    print(f"tuning half: the judge right on {', '.join(f'{r:.0%}' for r in rates)} of the three kinds of pairs "
          f"(mean {mean:.0%}) with prominence {least:.2f}, at most {behind} behind, lead {lead:.2f}")  # fmt: skip
    return thresholds


def reweigh(blueprint: dict, config: ProsodyConfig) -> dict:
    """The blueprint with each word's prominence computed again from its parts under `config`'s weights."""
    section = blueprint.get("agent_prosody")
    if not section:
        return blueprint
    words = [dict(w) for w in section["words"]]
    for w, p in zip(words, prominences(words, config)):
        w["prominence"] = None if p is None else round(p, 2)
    return {**blueprint, "agent_prosody": {**section, "words": words}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--half", choices=("test", "tune"), default="test")
    parser.add_argument("--fit", action="store_true", help="choose prominence's weights on the tuning half first")
    parser.add_argument("--fit-judge", action="store_true", help="choose the judge's thresholds on the tuning half")
    parser.add_argument("--show", action="store_true", help="print each pair the judge gets wrong")
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--prosody", choices=sorted(PROSODY_VERSIONS), help="prosody as that version measured it")
    parser.add_argument("--weights", help="prominence's weights instead of the extractor's, e.g. 1,1,1,1")
    parser.add_argument(
        "--judge-alone", type=float, metavar="PROMINENCE", help="the judge before its focus rule: this prominence alone"
    )
    args = parser.parse_args()
    config = PROSODY_VERSIONS[args.prosody] if args.prosody else ProsodyConfig()
    if args.weights:
        config = replace(config, prominence_weights=tuple(float(w) for w in args.weights.split(",")))
    hearing = Hearing(args.cache, config)
    clips = synthetic(args.cache) + recorded(args.cache)
    blueprints = {c.path: hearing(c.path) for c in clips}
    print(f"{len(clips)} clips, transcripts in {hearing.path}", file=sys.stderr)
    thresholds = cues.DEFAULT_THRESHOLDS
    if args.judge_alone is not None:
        alone = replace(thresholds.prosody, emphasis_min_prominence=args.judge_alone, emphasis_max_behind=math.inf)
        thresholds = replace(thresholds, prosody=alone)
    if args.fit:
        config = fit(clips, blueprints)
        hearing = Hearing(args.cache, config)
        blueprints = {c.path: hearing(c.path) for c in clips}
    if args.fit or args.fit_judge:
        thresholds = fit_judge(clips, blueprints)
    report(clips, blueprints, args.half, args.show, thresholds)


if __name__ == "__main__":
    main()
