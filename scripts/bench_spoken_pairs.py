"""Spoken-only instructions read with their pair's answers: is the answer that says the instruction's words kept,
and an echo of an instruction that asks for something else not taken for them?

    python scripts/bench_spoken_pairs.py                     # the test half (transcripts cached after a first run)
    python scripts/bench_spoken_pairs.py --half tune --fit   # the grid the echo's constants were set on
    python scripts/bench_spoken_pairs.py --show              # every pair Content got wrong, with its transcripts

The set, built from Asterisk's recorded prompts (those in English, Spanish and French alike, of 3 words or more,
no digits, none of scripts/bench_bilingual.py's), 30 per language chosen by a hash of the name:
- an instruction to say the prompt, spoken by espeak-ng in one of six voices with one of four lead-ins ("Di,",
  "Repite la frase:", "Dites,", "Repeat after me:"), no written text; two pairs of recorded answers:
  - `language`: the prompt in the instruction's language (right) against the same prompt translated (English, or
    Spanish for an English instruction);
  - `content`: the prompt (right) against another prompt of the same language;
  - `both`: the prompt (right) against the prompt said by espeak-ng in another voice (right too: both good);
  - `neither`: the prompt translated against another prompt translated (both in the wrong language: both bad);
- an instruction to translate the prompt ("Traduce al inglés: ...", "Translate into Spanish: ..."), and the pair
  `translate`: the translation (right) against the prompt said back in the instruction's language, an echo that
  looks like an answer to a repeat instruction and is not one.

Content is judged (`trace_eval.judge.cues.judge_content`) on each pair, in an order fixed by a hash, with the
instruction read as the judge reads it (`cues.spoken_words`, with the pair's answers) and, beside it, without the
answers (the lead-in alone); the answers as Stage 1 makes them, tested in the language the instruction was surely
heard in (`heard_instruction_languages`), and beside it heard with nothing expected (answers untested). A pair is
right where Content prefers the right answer (`both`: where it finds both good, `neither`: both bad); a
`translate` pair is also right where Content is undetermined (it must not prefer the echo).

Each instruction is split once, by a hash of its audio bytes, into a tuning half and a test half; the echo's
constants (trace_eval/judge/leadins.py) were set on the tuning half. Every clip is heard by Stage 1's recogniser
(nothing declared) and its transcript cached as in scripts/bench_spoken_instructions.py.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import os
import re
import sys
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_perception import ESPEAK_VOICES  # noqa: E402  (pins the numeric class before any library loads)
from bench_spoken_instructions import spoken_clip, transcribe, transcript_key  # noqa: E402
from recorded_speech import asterisk_transcripts  # noqa: E402

from extractors import Clip  # noqa: E402
from trace_eval.audio import load_audio  # noqa: E402
from trace_eval.judge import cues, languages, leadins  # noqa: E402

SOUNDS = Path("/usr/share/asterisk/sounds")
LANGUAGES = ("en", "es", "fr")
TRANSLATED = {"en": "es", "es": "en", "fr": "en"}  # the language a prompt is translated into
LEADS = {
    "en": ("Say,", "Repeat after me:", "Please say:", "Repeat the phrase:"),
    "es": ("Di,", "Repite la frase:", "Por favor, di:", "Repite:"),
    "fr": ("Dites,", "Répétez la phrase :", "Dis :", "Répète :"),
}
TRANSLATE = {
    "en": ("Translate into Spanish:", "How do you say this in Spanish:"),
    "es": ("Traduce al inglés:", "¿Cómo se dice en inglés?"),
    "fr": ("Traduis en anglais :", "Comment dit-on en anglais :"),
}
KINDS = ("language", "content", "both", "neither", "translate")
PER_LANGUAGE = 30


@dataclass(frozen=True)
class Pair:
    """A spoken instruction and two answers: the right one and the wrong one (of `both`, another right one)."""

    kind: str
    language: str
    prompt: str
    instruction: Clip
    right: Clip
    wrong: Clip

    @property
    def half(self) -> str:
        """tune or test, fixed by the instruction's audio bytes."""
        return "tune" if int(self.instruction.sha256[:8], 16) % 2 == 0 else "test"

    @property
    def right_first(self) -> bool:
        return int(hashlib.sha256(f"{self.kind}:{self.instruction.sha256}".encode()).hexdigest()[:8], 16) % 2 == 0


def chosen_prompts() -> dict[str, list[str]]:
    """Per language, the prompt names its instructions ask for (none of the bilingual benchmark's)."""
    from bench_bilingual import prompts as bilingual_prompts

    texts = {code: asterisk_transcripts(code) for code in LANGUAGES}

    def plain(code: str, name: str) -> bool:
        text = texts[code].get(name, "")
        return (len(text.split()) >= 3 and not re.search(r"[\d\[\]]", text)
                and (SOUNDS / code / f"{name}.wav").is_file())  # fmt: skip

    used = {name for _, name, _ in bilingual_prompts(30)}
    pool = [n for n in texts["en"] if n not in used and all(plain(code, n) for code in LANGUAGES)]
    return {
        code: sorted(pool, key=lambda n: hashlib.sha256(f"echo:{code}:{n}".encode()).hexdigest())[:PER_LANGUAGE]
        for code in LANGUAGES
    }


def _recorded(code: str, name: str) -> Clip:
    path = SOUNDS / code / f"{name}.wav"
    return Clip(hashlib.sha256(path.read_bytes()).hexdigest(), load_audio(path))


def pairs(folder: Path) -> list[Pair]:
    folder.mkdir(parents=True, exist_ok=True)
    texts = {code: asterisk_transcripts(code) for code in LANGUAGES}
    out = []
    for code, names in chosen_prompts().items():
        other = TRANSLATED[code]
        for n, name in enumerate(names):
            variant, wpm = ESPEAK_VOICES[n % len(ESPEAK_VOICES)]
            voice = f"{code}+{variant}"
            say = spoken_clip(f"{LEADS[code][n % len(LEADS[code])]} {texts[code][name]}", voice, wpm, folder)
            translate = spoken_clip(
                f"{TRANSLATE[code][n % len(TRANSLATE[code])]} {texts[code][name]}", voice, wpm, folder
            )
            right, another = _recorded(code, name), _recorded(code, names[(n + 1) % len(names)])
            translated = _recorded(other, name)
            another_translated = _recorded(other, names[(n + 1) % len(names)])
            variant, wpm = ESPEAK_VOICES[(n + 3) % len(ESPEAK_VOICES)]
            synthetic = spoken_clip(texts[code][name], f"{code}+{variant}", wpm, folder)
            out += [
                Pair("language", code, name, say, right, translated),
                Pair("content", code, name, say, right, another),
                Pair("both", code, name, say, right, synthetic),
                Pair("neither", code, name, say, translated, another_translated),
                Pair("translate", code, name, translate, translated, right),
            ]
    return out


def _language(instruction: dict) -> str | None:
    """The language the judge reads the instruction in: its blueprint's, where sure."""
    clip = languages.ClipLanguage.of(instruction)
    return languages.reading_language(clip, cues.DEFAULT_THRESHOLDS.language_min_probability)


def heard_language(instruction: dict) -> str | None:
    """The language Stage 1 tests the instruction's answers in (`heard_instruction_languages`: the judge's reading,
    at least 0.5 sure; no benchmark prior, as no language is most of the set's)."""
    told = languages.instruction_language({}, instruction, None)
    return told.code if told is not None and told.code and told.trusted(languages.MIN_PROBABILITY) else None


def answer_clips(pair: Pair, heard: dict) -> list[Clip]:
    """The pair's answers as Stage 1 makes them: tested in the language its instruction was heard in."""
    code = heard_language(heard[pair.instruction.sha256, None])
    return [replace(c, expects=(code,) if code else ()) for c in (pair.right, pair.wrong)]


def judged(pair: Pair, heard: dict, with_answers: bool, tested: bool = True) -> str | None:
    """Content's label for `pair`, right answer first where `right_first`; `tested`: its answers as Stage 1 makes
    them (`answer_clips`), else heard with nothing expected."""
    t = cues.DEFAULT_THRESHOLDS
    instruction = heard[pair.instruction.sha256, None]
    transcript = instruction["agent_response"] or ""
    right_answer, wrong_answer = answer_clips(pair, heard) if tested else (pair.right, pair.wrong)
    ordered = (right_answer, wrong_answer) if pair.right_first else (wrong_answer, right_answer)
    answers = tuple(heard[transcript_key(c)] for c in ordered)
    language = _language(instruction)
    said = tuple(a["agent_response"] or "" for a in answers) if with_answers else ()
    spoken = cues.spoken_words(transcript, language, t, said)
    label, _, _ = cues.judge_content(spoken[0] if spoken else transcript, *answers, t, language=language)
    return label


def right(pair: Pair, label: str | None) -> bool:
    wanted = {"both": "both_good", "neither": "both_bad"}.get(pair.kind, "1" if pair.right_first else "2")
    return label == wanted or (pair.kind == "translate" and label is None)


# reading -> (the answers tell where the words begin, the answers tested in the instruction's language)
READINGS = {
    "lead-in alone": (False, True),
    "answers untested": (True, False),
    "with the answers": (True, True),
}


def table(chosen: list[Pair], heard: dict, readings=READINGS) -> dict[tuple[str, str], tuple[int, int]]:
    """(reading, kind or language) -> (right, of)."""
    counts: dict[tuple[str, str], list[int]] = {}
    for pair in chosen:
        for reading, (with_answers, tested) in readings.items():
            ok = right(pair, judged(pair, heard, with_answers, tested))
            for key in (pair.kind, pair.language, "all"):
                cell = counts.setdefault((reading, key), [0, 0])
                cell[0] += ok
                cell[1] += 1
    return {key: (a, b) for key, (a, b) in counts.items()}


def print_table(counts: dict) -> None:
    columns = (*KINDS, *LANGUAGES, "all")
    print(f"{'Content right':<18}" + "".join(f"{c:>14}" for c in columns))
    for reading in READINGS:
        cells = [counts.get((reading, c), (0, 0)) for c in columns]
        print(f"{reading:<18}" + "".join(f"{f'{a}/{b} {100 * a / max(1, b):.0f}%':>14}" for a, b in cells))


def fit(chosen: list[Pair], heard: dict) -> None:
    """Each grid point's mean rate over the three kinds on `chosen` (the tuning half)."""
    grid = itertools.product((0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5), (0, 1, 2, 3, 4))
    scores = []
    for echo, prefix in grid:
        leadins.ECHO = replace(leadins.ECHO, edit_ratio=echo, lead_in_edits=prefix)
        leadins.find_lead_in.cache_clear()
        counts = table(chosen, heard, {"with the answers": READINGS["with the answers"]})
        rates = [counts[("with the answers", k)][0] / counts[("with the answers", k)][1] for k in KINDS]
        scores.append((sum(rates) / len(rates), echo, prefix, rates))
    # Of equal scores, the strictest constants first: an echo is believed only as far as it earns it.
    for mean, echo, prefix, rates in sorted(scores, key=lambda s: (-s[0], s[1], s[2])):
        print(f"echo {echo:<5} lead-in {prefix:<5} mean {100 * mean:.1f}%  " + "  ".join(
            f"{k} {100 * r:.1f}%" for k, r in zip(KINDS, rates, strict=True)))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    cache = Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")).expanduser() / "trace-eval" / "spoken-pairs"
    parser.add_argument("--cache", type=Path, default=cache)
    parser.add_argument("--half", choices=("test", "tune", "all"), default="test")
    parser.add_argument("--fit", action="store_true", help="print the echo's constants' scores on the tuning half")
    parser.add_argument("--show", action="store_true", help="print every pair Content got wrong")
    args = parser.parse_args()

    every = pairs(args.cache / "clips")
    clips = {c.sha256: c for p in every for c in (p.instruction, p.right, p.wrong)}
    heard = transcribe([(c, None) for c in clips.values()], args.cache, threads=os.cpu_count() or 1)
    tested = {(c.sha256, c.expects): c for p in every for c in answer_clips(p, heard) if c.expects}
    heard |= transcribe([(c, None) for c in tested.values()], args.cache, threads=os.cpu_count() or 1)
    chosen = [p for p in every if args.half in ("all", p.half)]
    kinds = ", ".join(f"{kind} {n}" for kind, n in Counter(p.kind for p in chosen).items())
    print(
        f"{args.half} half: {len(chosen)} pairs ({kinds}), {len({p.instruction.sha256 for p in chosen})} spoken "
        "instructions\n"
    )
    if args.fit:
        if args.half != "tune":
            parser.error("--fit reads the tuning half only (--half tune)")
        fit(chosen, heard)
        return
    print_table(table(chosen, heard))
    if args.show:
        for pair in chosen:
            label = judged(pair, heard, True)
            if not right(pair, label):
                said = [heard[c.sha256, None]["agent_response"] for c in (pair.instruction, pair.right, pair.wrong)]
                print(f"\n{pair.kind} {pair.language} {pair.prompt}: {label} (right is {1 if pair.right_first else 2})"
                      f"\n  instruction: {said[0]}\n  right: {said[1]}\n  wrong: {said[2]}")  # fmt: skip
    print(f"\nmachine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
