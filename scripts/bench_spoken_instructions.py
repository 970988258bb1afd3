"""Spoken-only instructions: how often the `cues` judge finds the words to say in an instruction's transcript.

    python scripts/bench_spoken_instructions.py              # the test half (transcripts cached after a first run)
    python scripts/bench_spoken_instructions.py --fit        # the tuning half's grid the lead-in thresholds were set on
    python scripts/bench_spoken_instructions.py --show       # every instruction: transcript and the words read

The set: instructions in English, Spanish and French spoken by espeak-ng in four voices per language, each a
lead-in ("Say:", "Di,", "Répétez la phrase") and a sentence to say, with no written text; and instructions that
give no words to say ("Describe your favourite meal.", "Do you like cats?"), which must be left alone. Each clip
is heard two ways by Stage 1's recogniser (`extractors.asr.AsrExtractor(AsrConfig())`): with nothing declared
(the judge reads the instruction in the language its blueprint tells, where sure), and with its language declared
as a manifest would. Each instruction with words to say has a pair of answers, heard the same way: the sentence
said by another voice (right) and another sentence of the same language (wrong).

The words to say are found right where the transcript is split as it is best split when aligned word by word to
the written lead-in and sentence (after `trace_eval.text.fold`): no lead-in's remains kept, no word of the sentence
cut. Content is judged (`trace_eval.judge.cues.judge_content`) on the pair in an order fixed by the hash. Each
figure is beside the same figure for main c59102a (its `spoken_quote` and `spoken_words`, copied below).

Each instruction is split once, by a hash of its audio bytes, into a tuning half and a test half. Transcripts are
cached in `--cache` by the clip's audio hash, the language declared and the recogniser's fingerprint: a second
run costs seconds.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from extractors import Clip  # noqa: E402  (pins the numeric class before any library loads)
from trace_eval.audio import load_audio  # noqa: E402
from trace_eval.judge import cues, languages  # noqa: E402
from trace_eval.judge.instructions import read_instruction  # noqa: E402
from trace_eval.text import fold  # noqa: E402

# The sentences to say, per language: an answer that says one of another item is a wrong answer.
SENTENCES = {
    "en": [
        "The conference has been extended.",
        "We are going to the beach tomorrow.",
        "The train leaves at eight in the morning.",
        "There are no new messages.",
        "The library is closed on Sundays.",
        "I like coffee with milk.",
        "The dog is sleeping in the garden.",
        "It is very hot today.",
        "The meeting starts in ten minutes.",
        "My sister lives in London.",
        "The windows are open.",
        "I need to buy bread and cheese.",
    ],
    "es": [
        "La conferencia ha sido extendida.",
        "Mañana vamos a la playa con mis amigos.",
        "El tren sale a las ocho de la mañana.",
        "No hay mensajes nuevos.",
        "La biblioteca cierra los domingos.",
        "Me gusta el café con leche.",
        "El perro duerme en el jardín.",
        "Hoy hace mucho calor.",
        "La reunión empieza en diez minutos.",
        "Mi hermana vive en Barcelona.",
        "Las ventanas están abiertas.",
        "Necesito comprar pan y queso.",
    ],
    "fr": [
        "La conférence a été prolongée.",
        "Votre message a été sauvegardé.",
        "Le train part à huit heures.",
        "Il fait très beau aujourd'hui.",
        "La bibliothèque ferme le dimanche.",
        "J'aime le café au lait.",
        "Le chien dort dans le jardin.",
        "La réunion commence dans dix minutes.",
        "Ma sœur habite à Lyon.",
        "Les fenêtres sont ouvertes.",
        "Je dois acheter du pain.",
        "Nous partons en vacances demain.",
    ],
}
# Lead-ins as a benchmark's author writes them, taken in turn.
LEADS = {
    "en": ["Say:", "Repeat after me:", "Please say", "Read this sentence aloud:", "Could you repeat", "Say"],
    "es": ["Di:", "Di,", "Repite:", "Por favor, repite la frase", "Lee:", "Diga:"],
    "fr": ["Dis :", "Répète :", "Répétez la phrase", "Lis :", "Dites :", "S'il te plaît, répète :"],
}
# espeak-ng voice and words per minute, taken in turn (the answer is said by the next voice).
VOICES = {
    "en": [("en-us", 160), ("en-gb", 150), ("en-us+f3", 170), ("en-gb-scotland+m3", 150)],
    "es": [("es", 160), ("es-419", 150), ("es+f3", 170), ("es+m5", 150)],
    "fr": [("fr-fr", 160), ("fr-be", 150), ("fr+f2", 170), ("fr-ch+m3", 150)],
}
# Instructions that give no words to say: left alone.
# Some begin as a lead-in almost does ("Do", "De", "Dans"), or with a short word and a pause ("So,", "Sí,").
OTHERS = {
    "en": ["What is the capital of France?", "Tell me a joke about cats.", "Describe your favourite meal.",
           "Do you like cats?", "Sing a short song.", "So, what is your favourite colour?", "Hey, how are you today?"],
    "es": ["¿Cuál es la capital de Francia?", "Cuéntame un chiste sobre gatos.", "Describe tu comida favorita.",
           "De todas las frutas, ¿cuál prefieres?", "¿Dónde está la estación?", "Sí, cuéntame más.",
           "Bueno, ¿qué hora es?"],
    "fr": ["Quelle est la capitale de la France ?", "Raconte-moi une blague.", "Décris ton repas préféré.",
           "Dans quelle ville habites-tu ?", "Le matin, que manges-tu ?", "Oui, parle-moi de toi.",
           "Alors, comment vas-tu ?"],
}  # fmt: skip


@dataclass(frozen=True)
class Item:
    """A spoken instruction, the sentence it gives to say (None: it gives none) and its two answers."""

    language: str
    lead: str  # the lead-in written ("Di,"; "" where it gives no words to say)
    sentence: str | None
    clip: Clip
    answers: tuple[Clip, Clip] | None = None  # (right, wrong)

    @property
    def half(self) -> str:
        """tune or test, fixed by the instruction's audio bytes."""
        return "tune" if int(self.clip.sha256[:8], 16) % 2 == 0 else "test"


def spoken_clip(text: str, voice: str, wpm: int, folder: Path) -> Clip:
    """`text` said by espeak-ng's `voice` at `wpm`, written once into `folder` (named by a hash of all three)."""
    from trace_eval.synth import Voice, speak

    path = folder / f"{hashlib.sha256(f'{voice} {wpm} {text}'.encode()).hexdigest()[:16]}.wav"
    if not path.exists():
        speak(text, path, Voice(voice=voice, wpm=wpm))
    return Clip(hashlib.sha256(path.read_bytes()).hexdigest(), load_audio(path))


def items(folder: Path) -> list[Item]:
    out = []
    for language, sentences in SENTENCES.items():
        voices, leads = VOICES[language], LEADS[language]
        said = [spoken_clip(s, *voices[(n + 1) % len(voices)], folder) for n, s in enumerate(sentences)]
        for n, sentence in enumerate(sentences):
            lead = leads[n % len(leads)]
            clip = spoken_clip(f"{lead} {sentence}", *voices[n % len(voices)], folder)
            out.append(Item(language, lead, sentence, clip, (said[n], said[(n + 1) % len(said)])))
        for n, text in enumerate(OTHERS[language]):
            out.append(Item(language, "", None, spoken_clip(text, *voices[n % len(voices)], folder)))
    return out


# -- transcripts, cached -----------------------------------------------------------------------------------------


def transcript_key(clip: Clip, declared: str | None = None) -> tuple[str, str | None]:
    """A clip's key among `transcribe`'s transcripts: (sha256, the language declared), or (sha256, "expects-es")
    for an answer tested in the language its instruction expects."""
    return clip.sha256, "expects-" + "+".join(clip.expects) if clip.expects else declared


def transcribe(
    clips: list[tuple[Clip, str | None]], cache: Path, threads: int = 1
) -> dict[tuple[str, str | None], dict]:
    """(sha256, declared language) -> {agent_response, language, duration_s} as Stage 1's asr section writes them,
    for each clip heard with its language declared, or detected (None); a clip that expects languages
    (`Clip.expects`, an answer tested in its instruction's) is keyed (sha256, "expects-es")."""
    from extractors.asr import AsrConfig, AsrExtractor
    from extractors.base import Extractor

    asr = AsrExtractor(AsrConfig(num_threads=threads))
    path = cache / f"transcripts-{Extractor.fingerprint(asr)}.jsonl"
    known: dict[tuple[str, str | None], dict] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            record = json.loads(line)
            known[record["sha256"], record.get("declared")] = record["blueprint"]
    wanted = {transcript_key(c, code): Clip(c.sha256, c.audio, language=code, expects=c.expects) for c, code in clips}
    todo = [(key, clip) for key, clip in wanted.items() if key not in known]
    if todo:
        start = time.process_time()
        cache.mkdir(parents=True, exist_ok=True)
        with path.open("a") as out:
            for n in range(0, len(todo), 8):
                batch = todo[n : n + 8]
                for (key, clip), section in zip(batch, asr.extract([c for _, c in batch]), strict=True):
                    values = getattr(section, "values", None) or {}
                    blueprint = {
                        "agent_response": values.get("agent_response"),
                        "language": values.get("language"),
                        "duration_s": clip.duration_s,
                    }
                    known[key] = blueprint
                    record = {"sha256": key[0], "declared": key[1], "blueprint": blueprint}
                    out.write(json.dumps(record, ensure_ascii=False) + "\n")
                out.flush()
                print(f"  transcribed {n + len(batch)}/{len(todo)} ({time.process_time() - start:.0f} CPU s)",
                      file=sys.stderr)  # fmt: skip
    return known


# -- main c59102a's reading, copied -------------------------------------------------------------------------------

OLD_SAY_LEADS: dict[str, str] = {
    "en": r"^(?:(?:please|now|okay|ok)\W+)*(?:(?:can|could|would|will) you\s+)?(?:repeat after me|repeat|say|read out|"
    r"read aloud|read)(?: (?:the|this) (?:sentence|phrase))?\b",
    "es": r"^(?:(?:por favor|ahora)\W+)*(?:repite|repita|repitan|di|diga|digan|dime|lee|lea)(?: (?:la|esta) frase)?\b",
    "fr": r"^(?:(?:s'il (?:te|vous) plait|maintenant)\W+)*(?:repete|repetez|dis|dites|lis|lisez)"
    r"(?: (?:la|cette) phrase)?\b",
    "de": r"^(?:(?:bitte|jetzt)\W+)*(?:sag|sage|sagen sie|wiederhole|wiederholen sie|lies|lesen sie)"
    r"(?: (?:den|diesen) satz)?\b",
    "zh": r"^(?:请|請)?(?:跟我说|跟我說|重复|重複|说|說|读|讀)",
}


def old_spoken_quote(transcript: str, language: str | None) -> tuple[str, str, str] | None:
    codes = [language] if language in OLD_SAY_LEADS else list(OLD_SAY_LEADS)
    if language is None:
        codes = ["en"]
    for code in codes:
        folded = fold(transcript, code).strip()
        match = re.match(OLD_SAY_LEADS[code], folded)
        if not match:
            continue
        rest = folded[match.end() :]
        lead, colon, after = rest.partition(":")
        quoted = after if colon else rest
        lead = folded[: match.end()] + (lead if colon else "")
        quoted = re.sub(r"[\"“”«»]", " ", quoted).strip(" ,.;!?")
        if sum(ch.isalnum() for ch in quoted) >= 2:
            return quoted, lead.strip(" ,"), code
    return None


def old_spoken_words(transcript: str, language: str | None) -> str | None:
    if not transcript or read_instruction(transcript).quoted:
        return None
    found = old_spoken_quote(transcript, language)
    if found is None:
        return None
    quoted, lead, code = found
    if cues.paralinguistic_cues(quoted, cues.DEFAULT_THRESHOLDS, code) or languages.asked_language(quoted, code):
        return None
    return f'{lead} "{quoted}"'


def new_spoken_words(transcript: str, language: str | None) -> str | None:
    found = cues.spoken_words(transcript, language)
    return found[0] if found else None


READERS = {"c59102a": old_spoken_words, "now": new_spoken_words}

# -- scoring ------------------------------------------------------------------------------------------------------


def _edits(said: list[str], reference: list[str]) -> int:
    row = list(range(len(said) + 1))
    for i, r in enumerate(reference, 1):
        prev, row[0] = row[0], i
        for j, s in enumerate(said, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (r != s))
    return row[-1]


def _words(text: str, language: str) -> list[str]:
    return re.findall(r"\w+", fold(text, language))


def found_right(item: Item, transcript: str, read: str | None) -> bool:
    """Whether `read` (the instruction with its words to say quoted, or None) is right: None for an instruction
    that gives none; else split where the transcript, aligned word by word to the written lead-in and sentence,
    is best split (the words before the split against the lead-in, those after against the sentence)."""
    if item.sentence is None or read is None:
        return item.sentence is None and read is None
    before, _, quoted = read.partition(' "')
    lead, sentence = _words(item.lead, item.language), _words(item.sentence, item.language)
    heard = _words(transcript, item.language)
    best = min(_edits(heard[:k], lead) + _edits(heard[k:], sentence) for k in range(len(heard) + 1))
    return _edits(_words(before, item.language), lead) + _edits(_words(quoted, item.language), sentence) <= best


def content_right(item: Item, read: str | None, answers: tuple[dict, dict], language: str | None) -> bool:
    """Whether Content picks the right answer of the pair, in the order the hash fixes."""
    right, wrong = answers
    first = int(item.clip.sha256[8:16], 16) % 2 == 0
    pair = (right, wrong) if first else (wrong, right)
    label, _, _ = cues.judge_content(read or "", *pair, cues.DEFAULT_THRESHOLDS, language=language)
    return label == ("1" if first else "2")


# How a benchmark's clips are heard: each clip's language detected (nothing declared; the judge reads the
# instruction in the language its blueprint says, where sure), or declared by the manifest.
HEARD = ("detected", "declared")


def read_all(chosen: list[Item], blueprints: dict, reader) -> list[dict]:
    """Each item of `chosen`, heard each way, as `reader` reads it."""
    t = cues.DEFAULT_THRESHOLDS
    rows = []
    for heard in HEARD:
        for item in chosen:
            declared = item.language if heard == "declared" else None
            blueprint = blueprints[item.clip.sha256, declared]
            transcript = blueprint["agent_response"] or ""
            language = languages.reading_language(languages.ClipLanguage.of(blueprint), t.language_min_probability)
            read = reader(transcript, language)
            row = {"heard": heard, "item": item, "transcript": transcript, "language": language, "read": read}
            row["right"] = found_right(item, transcript, read)
            if item.answers:
                answers = tuple(blueprints[c.sha256, declared] for c in item.answers)
                row["content"] = content_right(item, read, answers, language)  # type: ignore[arg-type]
            rows.append(row)
    return rows


def fit(tune: list[Item], blueprints: dict) -> None:
    """The lead-in matcher's constants on the tuning half: instructions read right (words found right, or left
    alone), both ways of hearing them together, for each threshold of edits per letter without and with a pause
    heard after the lead-in, and each cost of a lost space."""
    from trace_eval.judge import leadins

    print(f"tuning half: {len(tune)} instructions, each heard two ways; read right of {2 * len(tune)}")
    for glued in (0.5, 1.0):
        print(f"\nglued cost {glued:g}\n{'paused':<8}" + "".join(f"{r:>7g}" for r in PLAIN) + "   (no pause)")
        for paused in PAUSED:
            scores = []
            for plain in PLAIN:
                leadins.MAX_EDIT_RATIO, leadins.MAX_EDIT_RATIO_PAUSED, leadins.GLUED_COST = plain, paused, glued
                leadins.find_lead_in.cache_clear()
                scores.append(sum(row["right"] for row in read_all(tune, blueprints, new_spoken_words)))
            print(f"{paused:<8g}" + "".join(f"{s:>7}" for s in scores), flush=True)


PLAIN = (0.0, 0.2, 0.3, 0.34, 0.4, 0.5)
PAUSED = (0.5, 0.6, 0.7, 0.8, 1.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, default=Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")).expanduser()
                        / "trace-eval" / "spoken-instructions")  # fmt: skip
    parser.add_argument("--half", choices=("test", "tune", "all"), default="test")
    parser.add_argument("--fit", action="store_true", help="print the matcher's constants' scores on the tuning half")
    parser.add_argument("--show", action="store_true", help="print every instruction of the half")
    args = parser.parse_args()

    every = items(args.cache / "espeak")
    clips = [(c, code) for i in every for c in (i.clip, *(i.answers or ())) for code in (None, i.language)]
    blueprints = transcribe(clips, args.cache)
    if args.fit:
        fit([i for i in every if i.half == "tune"], blueprints)
        return
    chosen = [i for i in every if args.half in ("all", i.half)]
    pairs = [i for i in chosen if i.sentence is not None]
    print(f"{args.half} half: {len(pairs)} instructions that give words to say ("
          + ", ".join(f"{c} {sum(i.language == c for i in pairs)}" for c in SENTENCES)
          + f"), {len(chosen) - len(pairs)} that give none, each heard two ways")  # fmt: skip
    print(f"\n{'languages':<11}{'code':<10}{'words found right':>19}{'left alone':>12}{'Content right':>15}")
    for heard in HEARD:
        for name, reader in READERS.items():
            rows = [row for row in read_all(chosen, blueprints, reader) if row["heard"] == heard]
            found = [row["right"] for row in rows if row["item"].sentence]
            alone = [row["right"] for row in rows if not row["item"].sentence]
            content = [row["content"] for row in rows if "content" in row]
            print(f"{heard:<11}{name:<10}{sum(found):>15}/{len(found):<3}{sum(alone):>8}/{len(alone):<3}"
                  f"{sum(content):>11}/{len(content):<3}")  # fmt: skip
            for row in rows if args.show else ():
                print(f"    {row['item'].language} as {row['language']}: {row['transcript']!r} -> {row['read']!r}"
                      + ("" if row["right"] else "  (wrong)"))  # fmt: skip
    print(f"\nmachine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
