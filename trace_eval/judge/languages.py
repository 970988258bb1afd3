"""What the judges read in every language: each clip's language, the language an answer is asked in, and the
manner requests (louder, slower, whisper, happy ...) of the languages a table is written for.

A clip's language is in its blueprint (`language`: code, probability, detected or declared; null with the
reason when it could not be told), or declared by the manifest (`instruction_language`, ...). The
instruction's language is the language its answers are expected in, unless the instruction asks for another
in words ("answer in Spanish", "en español", "auf Deutsch", "用中文"): an answer heard in any other language
fails Content. A detection less sure than `Thresholds.language_min_probability` is not held against an answer.
Where the audio cannot tell the instruction's language, its written text (else its transcript) may
(`instruction_language`), and the evidence that told it is recorded.

Manner requests are read with a table per language (`TABLES`): words and phrases, matched on the text as
`trace_eval.text.fold` writes it (accents folded, so "rápido" is "rapido"), each naming a cue the `cues` rules
measure ("slow", "loud", "happy", "high pitch" ...) or one they do not ("singing", "accent" ...). English is
read by the rules' own word lists (`trace_eval.judge.cues`); an instruction whose language has no table has
its manner requests *not understood*, which leaves Paralinguistics undetermined rather than passed by
default. An instruction whose language was never recorded (a blueprint made before languages were, a written
instruction with no declared language) is read as English, as it always was.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, NamedTuple

from trace_eval.judge.instructions import read_instruction
from trace_eval.judge.leadins import LeadIn, find_lead_in, is_lead_in
from trace_eval.language_rule import LanguageRule
from trace_eval.languages import language_name, text_language, text_languages
from trace_eval.text import fold

if TYPE_CHECKING:
    from trace_eval.items import Pair

__all__ = [
    "ASKED_UNKNOWN",
    "TABLES",
    "Asked",
    "ClipLanguage",
    "Heard",
    "Table",
    "answer_languages",
    "asked_language",
    "heard_instruction_languages",
    "held_language",
    "asks_how_said",
    "benchmark_language",
    "describe_clip",
    "expected",
    "expected_reading",
    "heard_in",
    "instruction_language",
    "language_evidence",
    "manner_requests",
    "name",
    "not_understood",
    "reading_language",
    "asks_beyond_saying",
    "reads_english",
    "spoken_quote",
]

# The instruction's language was recorded but could not be told (ISO 639-2's code for "undetermined").
ASKED_UNKNOWN = "und"

# The cues a table may name, in the order the rules read them (pace, level, pitch, emotions), then the
# manners no rule measures, named as `cues.UNMEASURED_MANNERS` names them.
PACE = ("speeding up", "slowing down", "slow", "fast")
LEVEL = ("quiet", "loud")
PITCH = ("high pitch", "low pitch")
EMOTIONS = ("angry", "disgusted", "fearful", "happy", "neutral", "sad", "surprised")


def name(code: str | None) -> str:
    """A language's English name ("es" -> "Spanish"), for reasons and prompts."""
    if code == ASKED_UNKNOWN:
        return "an undetermined language"
    return language_name(code)


# -- the language of a clip ---------------------------------------------------------------


@dataclass(frozen=True)
class ClipLanguage:
    """A clip's language as its blueprint or the manifest records it."""

    code: str | None  # Whisper's code ("es", "zh"); None when it could not be told
    probability: float | None  # the detector's probability; None when declared
    source: str | None  # "detected" or "declared"
    reason: str | None = None  # why `code` is None
    # The language its transcript was decoded in (`asr.language`): English where the recogniser knows English
    # only, or where a detection too unsure fell back to it.
    decoded: str | None = None
    # An instruction's: what the other evidence said, beside the one that decided ("its audio: Latin (la),
    # detected with probability 0.46"); None where nothing else was read.
    evidence: str | None = None

    @classmethod
    def of(cls, blueprint: dict | None) -> ClipLanguage | None:
        """The blueprint's language; None when the blueprint records none (made before languages were)."""
        if not isinstance(blueprint, dict) or "language" not in blueprint:
            return None
        value = blueprint["language"]
        asr = blueprint.get("asr")
        decoded = asr.get("language") if isinstance(asr, dict) and isinstance(asr.get("language"), str) else None
        if not isinstance(value, dict) or not value.get("code"):
            return cls(None, None, None, _null_reason(blueprint), decoded)
        probability = value.get("probability")
        return cls(
            str(value["code"]),
            float(probability) if isinstance(probability, (int, float)) else None,
            str(value.get("source") or "detected"),
            None,
            decoded,
        )

    def trusted(self, min_probability: float) -> bool:
        """Known, and declared or detected at least as surely as `min_probability`."""
        if self.code is None:
            return False
        if self.source == "declared":
            return True
        return self.probability is None or self.probability >= min_probability

    def record(self) -> dict[str, Any]:
        """What a run records of an instruction's language (results.jsonl `instruction_language`)."""
        return {
            "code": self.code,
            "probability": self.probability,
            "source": self.source,
            "evidence": self.evidence,
            "reason": self.reason,
        }

    def describe(self) -> str:
        """ "Spanish (es), detected with probability 0.93", "French (fr), declared", or why it is unknown."""
        if self.code is None:
            return f"not known ({self.reason or 'no reason recorded'})"
        if self.source == "declared":
            return f"{name(self.code)} ({self.code}), declared"
        sure = f" with probability {self.probability:.2f}" if self.probability is not None else ""
        how = {"text": "read from the instruction's text", "transcript": "read from the instruction's transcript"}
        told = f"{name(self.code)} ({self.code}), {how.get(self.source or '', 'detected')}{sure}"
        return told + (f" ({self.evidence})" if self.evidence else "")


def _null_reason(blueprint: dict) -> str | None:
    """Why the blueprint's language is null: the `null_reasons` entry of whichever extractor recorded it."""
    extractors = ((blueprint.get("provenance") or {}).get("extractors")) or {}
    for record in extractors.values():
        reason = (record.get("null_reasons") or {}).get("language") if isinstance(record, dict) else None
        if reason:
            return str(reason)
    return None


# The scripts a language is written in, for the languages not written in Latin letters (unicodedata's first
# word of a letter's name); every other language is written in Latin letters.
SCRIPTS: dict[str, frozenset[str]] = {
    **dict.fromkeys(("zh", "yue"), frozenset({"CJK"})),
    "ja": frozenset({"CJK", "HIRAGANA", "KATAKANA"}),
    "ko": frozenset({"HANGUL", "CJK"}),
    **dict.fromkeys(("ru", "uk", "bg", "be", "mk", "kk", "mn", "tg", "tt", "ba"), frozenset({"CYRILLIC"})),
    **dict.fromkeys(("sr", "uz"), frozenset({"CYRILLIC", "LATIN"})),
    **dict.fromkeys(("ar", "fa", "ur", "ps", "sd"), frozenset({"ARABIC"})),
    **dict.fromkeys(("he", "yi"), frozenset({"HEBREW"})),
    "el": frozenset({"GREEK"}),
    **dict.fromkeys(("hi", "mr", "ne", "sa"), frozenset({"DEVANAGARI"})),
    **dict.fromkeys(("bn", "as"), frozenset({"BENGALI"})),
    "ta": frozenset({"TAMIL"}),
    "te": frozenset({"TELUGU"}),
    "kn": frozenset({"KANNADA"}),
    "ml": frozenset({"MALAYALAM"}),
    "gu": frozenset({"GUJARATI"}),
    "pa": frozenset({"GURMUKHI"}),
    "si": frozenset({"SINHALA"}),
    "th": frozenset({"THAI"}),
    "lo": frozenset({"LAO"}),
    "km": frozenset({"KHMER"}),
    "my": frozenset({"MYANMAR"}),
    "bo": frozenset({"TIBETAN"}),
    "ka": frozenset({"GEORGIAN"}),
    "hy": frozenset({"ARMENIAN"}),
    "am": frozenset({"ETHIOPIC"}),
}
MIN_LETTERS = 3  # a text needs this many letters before its script says anything


def script_of(text: str) -> str | None:
    """The script most of the letters of `text` are in ("LATIN", "CJK", "ARABIC" ...); None for too few."""
    found = Counter(
        unicodedata.name(char, "?").split()[0] for char in text if unicodedata.category(char).startswith("L")
    )
    if sum(found.values()) < MIN_LETTERS:
        return None
    return found.most_common(1)[0][0]


# A detected language less sure than this is not held against an answer (the cues rules' default,
# `Thresholds.language_min_probability`), and a text's language less sure than this tells nothing.
MIN_PROBABILITY = 0.5


def text_reading(text: str | None) -> list[tuple[str, float]] | None:
    """What a written text reads as (`text_languages`), among the languages written in its script: None for a
    text too short to read, or in a script no language here is written in (runes read as Amharic otherwise)."""
    script = script_of(text or "")
    readings = text_languages(text) if script is not None else None
    if not readings:
        return None
    kept = [(c, p) for c, p in readings if script in SCRIPTS.get(c, frozenset({"LATIN"}))]
    total = sum(p for _, p in kept)
    return [(c, round(p / total, 3)) for c, p in kept] if total > 0 else None


def instruction_language(
    declared: dict[str, Any],
    blueprint: dict | None,
    text: str | None = None,
    min_probability: float = MIN_PROBABILITY,
    benchmark: str | None = None,
) -> ClipLanguage | None:
    """The instruction's language, and which evidence told it (`benchmark`: the language most of its
    benchmark's instructions are in, `benchmark_language`, a prior where the evidence is recorded):

    1. declared by the manifest (`instruction_language`, the item's `Pair.languages`);
    2. else, where its blueprint records the evidence of its language (`language.evidence`), the one rule over
       that evidence and what its written text reads as (trace_eval/language_rule.py): a Spanish text heard as
       Italian is Spanish when the text says so more surely than the audio says Italian.

    A blueprint made before the evidence was recorded is read by the chain that came before:

    2. detected from its audio, when the detection is sure (`min_probability`) and the written instruction
       (`text`) does not contradict it: a text in another script (synthetic Spanish heard as Thai), or a text
       that reads surely as another language (espeak-ng's Spanish heard as Finnish at 0.80);
    3. else read from the written instruction, when it reads surely as one language (`text_language`);
    4. else, an instruction with no written text, read from its transcript, when that reads surely as one
       language (a transcript is written in the language it was decoded in, so it is read only where the
       audio could not tell);
    5. else not known (`code` None), with what the audio and the text said.

    None when nothing records a language: no declaration, and a blueprint made before languages were (or no
    spoken instruction)."""
    code = declared.get("instruction_language")
    if isinstance(code, str) and code:
        return ClipLanguage(code, None, "declared", None, code)
    audio = ClipLanguage.of(blueprint)
    if audio is None:
        return None
    written = (text or "").strip()
    evidence = language_evidence(blueprint)
    if evidence is not None:
        # One rule over the audio's evidence and the text's reading (trace_eval/language_rule.py).
        rule = LanguageRule.load()
        readings = text_reading(written)
        decision = rule.decide(evidence, text=dict(readings) if readings else None, expected=benchmark)
        evidence_said = f"its audio: {decision.reason}"
        if written:
            evidence_said += "; its text " + (
                "reads " + ", ".join(f"{c} {p:.2f}" for c, p in readings[:3]) if readings else "too short to read"
            )
        # Told by the text where the audio alone (with the benchmark's prior) would have decided otherwise.
        alone = rule.decide(evidence, expected=benchmark).code
        source = "text" if readings and decision.code != alone else "detected"
        code, probability = decision.code, decision.probability
        return replace(audio, code=code, probability=probability, source=source, evidence=evidence_said)
    script = script_of(written)
    read = text_language(written) if written else None
    sure_text = read if read is not None and read.probability >= min_probability else None
    heard = f"its audio: {audio.describe()}" if audio.code else f"its audio: {audio.reason or 'no language told'}"
    if audio.code and script is not None and script not in SCRIPTS.get(audio.code, frozenset({"LATIN"})):
        refused = (
            f"detected as {name(audio.code)} ({audio.code}), not written in the {script.lower()} script of its text"
        )
    elif audio.code and sure_text is not None and sure_text.code != audio.code and audio.trusted(min_probability):
        refused = f"{heard}, while its text reads as {name(sure_text.code)} ({sure_text.code})"
    elif audio.trusted(min_probability):
        return audio
    else:
        refused = ""
    if sure_text is not None:
        return replace(
            audio,
            code=sure_text.code,
            probability=sure_text.probability,
            source="text",
            reason=None,
            evidence=refused or heard,
        )
    if not written and audio.code is not None:
        transcript = (blueprint or {}).get("agent_response")
        quality = (blueprint or {}).get("transcript_quality")
        trusted = not (isinstance(quality, dict) and quality.get("reliable") is False)
        said = text_language(transcript) if isinstance(transcript, str) and trusted else None
        if said is not None and said.probability >= min_probability:
            return replace(audio, code=said.code, probability=said.probability, source="transcript", evidence=heard)
    if not refused and (audio.code is None or not written):
        return audio  # the audio's own reading, unsure or unknown: reading_language says what follows
    texts = (
        "its text too short to tell"
        if read is None
        else f"its text read as {name(read.code)} ({read.code}) only with probability {read.probability:.2f}"
    )
    # Refused, the audio's decoding language says nothing either (not read as English by default).
    return ClipLanguage(None, None, None, f"{refused or heard}; {texts}", None if refused else audio.decoded, heard)


def benchmark_language(instructions: Iterable[tuple[dict[str, Any], dict | None, str | None]]) -> str | None:
    """The language most of a benchmark's instructions are in, each as its own evidence tells it (declared, or
    decided without a prior: `instruction_language`), when more than half are surely in it; None otherwise.
    `instructions`: (declared languages, blueprint, text) of each item."""
    told: Counter[str] = Counter()
    total = 0
    for declared, blueprint, text in instructions:
        total += 1
        language = instruction_language(declared, blueprint, text)
        if language is not None and language.code and language.trusted(MIN_PROBABILITY):
            told[language.code] += 1
    if not told:
        return None
    code, count = told.most_common(1)[0]
    return code if count > total / 2 else None


def heard_instruction_languages(
    pairs: Iterable[Pair], blueprint_of: Callable[[str], dict | None], min_probability: float = MIN_PROBABILITY
) -> dict[str, str]:
    """Instruction path -> the language the judge holds its answers to, for the items whose answers wait on
    their spoken instruction (`Pair.waits_on_instruction`: neither a declaration nor a sure text tells it):
    `instruction_language` over its blueprint and written text, with the benchmark's usual language as the
    prior, where at least `min_probability` sure. Stage 1 tests their answers against it once it has heard the
    instructions (`Pair.expected_languages`'s `heard`)."""
    spoken = [(p, p.instruction_path) for p in pairs if p.instruction_path]
    waiting = [(p, path) for p, path in spoken if p.waits_on_instruction()]
    if not waiting:  # nothing to read: a benchmark whose instructions are all declared or written
        return {}
    stored = {path: blueprint_of(path) for _, path in spoken}
    usual = benchmark_language((p.languages, stored[path], p.instruction_text) for p, path in spoken)
    heard: dict[str, str] = {}
    for pair, path in waiting:
        told = instruction_language(pair.languages, stored[path], pair.instruction_text, benchmark=usual)
        if told is not None and told.code and told.trusted(min_probability):
            heard[path] = told.code
    return heard


def reading_language(language: ClipLanguage | None, min_probability: float) -> str | None:
    """The language the judge reads an instruction in: its code when known (declared, or detected at least
    as surely as `min_probability`); None, read as English as before languages were recorded, when it was never
    recorded, when Stage 1 could not tell it and decoded it in English (a recogniser that knows English
    only), or when English was its most probable language but not a sure one (the English word lists read it
    as they did before languages were recorded, and no answer is held to it); `ASKED_UNKNOWN` otherwise (no
    speech, a language other than English too unsure, or one contradicted by the text)."""
    if language is None:
        return None
    if language.code and language.trusted(min_probability):
        return language.code
    english = language.code == "en" or (language.code is None and language.decoded == "en")
    return None if english else ASKED_UNKNOWN


def reads_english(language: str | None) -> bool:
    """The cues rules read the instruction with their own English word lists."""
    return language in (None, "en")


def describe_clip(blueprint: dict | None, instruction: ClipLanguage | None = None) -> str:
    """A response's language for a prompt, heard with the instruction's language as the prior where its evidence
    is recorded (as `heard_in` hears it), and whether it differs from the instruction's."""
    language = ClipLanguage.of(blueprint)
    if language is None:
        return "not recorded"
    evidence = language_evidence(blueprint)
    if evidence is not None and instruction is not None and instruction.code:
        decision = LanguageRule.load().decide(evidence, expected=instruction.code)
        language = replace(language, code=decision.code, probability=decision.probability)
    text = language.describe()
    if instruction is not None and instruction.code and language.code and language.code != instruction.code:
        text += f"; not the instruction's language ({name(instruction.code)})"
    return text


# -- per-language tables ------------------------------------------------------------------------


@dataclass(frozen=True)
class Table:
    """What the judge reads in one language, matched on `fold`ed text."""

    code: str
    # A language's name as this language writes it (folded) -> its code: "espanol" -> "es".
    names: dict[str, str]
    # Where an instruction asks for the answer in a language; `{name}` stands for any of `names`.
    requests: tuple[str, ...]
    # Where a language is named without asking the answer in it ("how do you say ... in Japanese?").
    questions: str | None = None
    # Cue name -> pattern; None where the cues rules read the language with their own lists (English).
    manners: dict[str, str] | None = None
    # A manner asked in words the table may not know: group 1 is the word ("con un tono solemne").
    asked: str | None = None
    # Words the `asked` pattern may catch that ask for no manner ("de manera natural").
    plain: frozenset[str] = frozenset()

    def request_patterns(self) -> list[re.Pattern[str]]:
        names = "|".join(sorted(map(re.escape, self.names), key=len, reverse=True))
        return [re.compile(p.replace("{name}", f"(?P<name>{names})")) for p in self.requests]


def _w(*words: str) -> str:
    """Whole words or phrases of a language with spaces, any of them."""
    return r"\b(?:" + "|".join(words) + r")\b"


def _any(*phrases: str) -> str:
    """Any of the phrases, anywhere (a language written without spaces)."""
    return "(?:" + "|".join(phrases) + ")"


ENGLISH = Table(
    "en",
    names={
        **{language_name(code).lower(): code for code in ("en", "es", "fr", "de", "zh", "ja", "ko", "it", "pt")},
        **{language_name(code).lower(): code for code in ("ru", "ar", "hi", "nl", "pl", "tr", "sv", "yue")},
        "mandarin": "zh",
        "castilian": "es",
        "farsi": "fa",
    },
    requests=(
        r"\b(?:answer|respond|reply|speak|talk|say|tell|explain|read|repeat|sing|describe)\b[^.?!]{0,40}?\bin {name}\b",
        r"\btranslat\w*\b[^.?!]{0,60}?\b(?:in|into|to) {name}\b",
        r"\b(?:in|into) {name},? (?:please|only)\b",
        r"\b(?:switch|change) (?:to|into) {name}\b",
        r"^\W*in {name}\b",
    ),
    questions=r"\bhow (?:do|would|can|should) (?:you|i|we|one) say\b|\bwhat (?:is|does)\b[^.?!]{0,40}\bmean\b",
)

SPANISH = Table(
    "es",
    names={
        "espanol": "es",
        "castellano": "es",
        "ingles": "en",
        "frances": "fr",
        "aleman": "de",
        "chino": "zh",
        "mandarin": "zh",
        "japones": "ja",
        "italiano": "it",
        "portugues": "pt",
        "catalan": "ca",
        "ruso": "ru",
        "arabe": "ar",
        "coreano": "ko",
    },
    requests=(r"\b(?:en|al) {name}\b",),
    questions=r"\bcomo se dice\b|\bcomo (?:dirias|digo|decir)\b|\bque significa\b|\bque quiere decir\b",
    manners={
        "speeding up": _w(r"acelera\w*", "cada vez mas rapido", "mas y mas rapido"),
        "slowing down": _w(r"desacelera\w*", "cada vez mas lento", "mas y mas lento"),
        "slow": _w("lento", "lenta", "lentamente", "despacio", "despacito", r"pausad\w*"),
        "fast": _w("rapido", "rapida", "rapidamente", "deprisa", "aprisa", "veloz", "velozmente"),
        "quiet": _w(r"susurr\w*", "en voz baja", "bajito", "suave", "suavemente", "en un susurro"),
        "loud": _w("fuerte", "fuertemente", "mas fuerte", r"grit\w*", "a gritos", "voz muy alta"),
        "high pitch": _w(r"voz (?:mas )?aguda", r"tono (?:mas )?(?:agudo|alto)", "agudo", "aguda"),
        "low pitch": _w(r"voz (?:mas )?(?:grave|profunda)", r"tono (?:mas )?(?:grave|bajo)"),
        "happy": _w(r"feliz\w*", r"alegre\w*", r"content[oa]s?", "con alegria", r"entusiasmad\w*"),
        "sad": _w(r"trist\w*", "con tristeza", r"melancolic\w*", r"apenad\w*"),
        "angry": _w(r"enojad\w*", r"enfadad\w*", r"furios\w*", "con enojo", "con rabia", r"molest[oa]s?"),
        "surprised": _w(r"sorprendid\w*", r"asombrad\w*"),
        "fearful": _w(r"asustad\w*", "con miedo", r"temeros\w*", r"nervios\w*"),
        "disgusted": _w(r"asquead\w*", "con asco"),
        "neutral": _w("con calma", "calmad[oa]", r"tranquil\w*", "neutral", "neutro", "neutra"),
        "accent": _w(r"acentos?", r"dialectos?"),
        "singing": _w(r"canta\w*", "cantar", r"cancion\w*", r"melodi\w*"),
        "robotic voice": _w(r"robot\w*"),
        "intonation": _w(r"entonacion\w*"),
        "emphasis": _w("enfasis", r"enfatiz\w*"),
        "pauses": _w("pausa", "pausas"),
        "imitation": _w(r"imit\w*"),
        "politeness": _w(r"cortes\w*", r"educad\w*", r"groser\w*"),
        "sarcasm": _w(r"sarcas\w*", r"ironi\w*"),
        "warmth": _w(r"calid\w*", r"amable\w*", "con carino", r"carinos\w*", "frio", "fria", r"tiern\w*"),
        "excitement": _w(r"emocionad\w*", r"energic\w*"),
        "other tone": _w(r"seri[oa]s?", r"dramatic\w*", r"misterios\w*", "formal", r"confiad\w*", r"timid\w*"),
    },
    asked=r"\bcon (?:un |una )?(?:tono|voz) (\w+)|\bde (?:manera|forma|modo) (\w+)",
    plain=frozenset({"normal", "natural", "clara", "claro", "correcta", "directa", "breve", "sencilla", "que"}),
)

FRENCH = Table(
    "fr",
    names={
        "francais": "fr",
        "anglais": "en",
        "espagnol": "es",
        "allemand": "de",
        "chinois": "zh",
        "mandarin": "zh",
        "japonais": "ja",
        "italien": "it",
        "portugais": "pt",
        "russe": "ru",
        "arabe": "ar",
        "coreen": "ko",
    },
    requests=(r"\ben {name}\b",),
    questions=r"\bcomment (?:dit-on|on dit|dire|se dit)\b|\bque (?:veut dire|signifie)\b",
    manners={
        "speeding up": _w(r"accelere\w*", r"accelerant", "de plus en plus vite"),
        "slowing down": _w(r"ralenti\w*", "de plus en plus lentement"),
        "slow": _w("lent", "lente", "lentement", "plus lentement", r"posement"),
        "fast": _w("vite", "rapide", "rapidement", "plus vite"),
        "quiet": _w(r"chuchot\w*", r"murmur\w*", "a voix basse", "tout bas", "doucement", "voix douce"),
        "loud": _w("fort", "plus fort", "tres fort", r"cri(?:e|es|ez|er|ant)", r"hurl\w*"),
        "high pitch": _w(r"aigu\w*", "voix haut perchee"),
        "low pitch": _w("voix grave", "ton grave", "voix profonde", "plus grave"),
        "happy": _w(r"joyeu\w*", r"heureu\w*", "gai", "gaie", "gaiement", "avec joie", r"enjoue\w*"),
        "sad": _w(r"trist\w*", "avec tristesse", r"melancoli\w*"),
        "angry": _w("en colere", r"colerique\w*", r"furieu\w*", r"fache\w*", r"irrite\w*"),
        "surprised": _w(r"surpri\w*", r"etonne\w*"),
        "fearful": _w(r"effraye\w*", "avec peur", r"apeure\w*", r"nerveu\w*", r"inquiet\w*"),
        "disgusted": _w(r"degoute\w*", "avec degout"),
        "neutral": _w(r"calme\w*", "neutre", r"serein\w*"),
        "accent": _w(r"accents?", r"dialectes?"),
        "singing": _w(r"chant\w*", r"melodi\w*"),
        "robotic voice": _w(r"robot\w*"),
        "intonation": _w(r"intonation\w*"),
        "emphasis": _w(r"insist\w*", r"accentu\w*"),
        "pauses": _w("pause", "pauses"),
        "imitation": _w(r"imit\w*"),
        "politeness": _w("poli", "polie", "poliment", r"courtois\w*", r"impoli\w*"),
        "sarcasm": _w(r"sarcas\w*", r"ironi\w*"),
        "warmth": _w(r"chaleureu\w*", r"gentil\w*", r"froid\w*", r"tendre\w*"),
        "excitement": _w(r"enthousias\w*", r"energi\w*", r"excite\w*"),
        "other tone": _w(r"serieu\w*", r"dramati\w*", r"mysterieu\w*", r"formel\w*", r"timide\w*"),
    },
    asked=r"\b(?:d'un|sur un) ton (\w+)|\bd'une voix (\w+)|\bde (?:maniere|facon) (\w+)",
    plain=frozenset({"normal", "normale", "naturel", "naturelle", "claire", "clair", "simple", "breve", "a", "que"}),
)

GERMAN = Table(
    "de",
    names={
        "deutsch": "de",
        "deutsche": "de",
        "englisch": "en",
        "englische": "en",
        "spanisch": "es",
        "spanische": "es",
        "franzosisch": "fr",
        "franzosische": "fr",
        "chinesisch": "zh",
        "chinesische": "zh",
        "mandarin": "zh",
        "japanisch": "ja",
        "japanische": "ja",
        "italienisch": "it",
        "italienische": "it",
        "russisch": "ru",
        "russische": "ru",
        "portugiesisch": "pt",
        "arabisch": "ar",
        "koreanisch": "ko",
    },
    requests=(r"\bauf {name}\b", r"\bins {name}n?\b"),
    questions=r"\bwie sagt man\b|\bwas (?:heisst|bedeutet)\b",
    manners={
        "speeding up": _w("immer schneller", r"beschleunig\w*"),
        "slowing down": _w("immer langsamer", r"verlangsam\w*"),
        "slow": _w(r"langsam\w*"),
        "fast": _w(r"schnell\w*", r"zugig\w*", "rasch"),
        "quiet": _w(r"leise\w*", r"flust\w*", r"gedampft\w*"),
        "loud": _w("lauter", "sehr laut", "ganz laut", r"schrei\w*", r"brull\w*"),
        "high pitch": _w(r"hohe[rn]? stimme", r"hohe[rn]? tonlage", r"piepsig\w*"),
        "low pitch": _w(r"tiefe[rn]? stimme", r"tiefe[rn]? tonlage"),
        "happy": _w(r"frohlich\w*", r"glucklich\w*", "froh", r"freudig\w*", "heiter"),
        "sad": _w(r"traurig\w*", r"betrubt\w*", r"melanchol\w*"),
        "angry": _w(r"wutend\w*", r"verargert\w*", r"zornig\w*", "bose"),
        "surprised": _w(r"uberrascht\w*", r"erstaunt\w*"),
        "fearful": _w(r"angstlich\w*", r"verangstigt\w*", r"nervos\w*"),
        "disgusted": _w(r"angeekelt\w*", r"angewidert\w*"),
        "neutral": _w(r"ruhig\w*", r"gelassen\w*", r"neutral\w*"),
        "accent": _w(r"akzent\w*", r"dialekt\w*"),
        "singing": _w(r"sing\w*", "gesungen", r"melod\w*"),
        "robotic voice": _w(r"roboter\w*", r"robotisch\w*"),
        "intonation": _w(r"intonation\w*", r"satzmelodie"),
        "emphasis": _w(r"beton\w*"),
        "pauses": _w(r"pause\w*"),
        "imitation": _w(r"imitier\w*", r"nachahm\w*"),
        "politeness": _w(r"hoflich\w*", r"unhoflich\w*"),
        "sarcasm": _w(r"sarkas\w*", r"ironi\w*"),
        "warmth": _w(r"warm\w*", r"freundlich\w*", r"herzlich\w*", r"kalt\w*"),
        "excitement": _w(r"begeister\w*", r"energi\w*", r"aufgeregt\w*"),
        "other tone": _w(r"ernst\w*", r"dramati\w*", r"geheimnisvoll\w*", r"formell\w*", r"schuchtern\w*"),
    },
    asked=r"\b(?:in|mit) (?:einem|einer) (\w+) (?:ton|stimme|art|weise)\b|\bmit (\w+) stimme\b",
    plain=frozenset({"normalen", "normaler", "naturlichen", "naturlicher", "klaren", "klarer", "anderen"}),
)

MANDARIN = Table(
    "zh",
    names={
        **dict.fromkeys(("中文", "汉语", "漢語", "普通话", "普通話", "国语", "國語", "华语", "華語"), "zh"),
        **dict.fromkeys(("粤语", "粵語", "广东话", "廣東話"), "yue"),
        **dict.fromkeys(("英文", "英语", "英語"), "en"),
        **dict.fromkeys(("西班牙语", "西班牙文", "西班牙語"), "es"),
        **dict.fromkeys(("法语", "法文", "法語"), "fr"),
        **dict.fromkeys(("德语", "德文", "德語"), "de"),
        **dict.fromkeys(("日语", "日文", "日語"), "ja"),
        **dict.fromkeys(("韩语", "韩文", "韓語", "韓文"), "ko"),
        **dict.fromkeys(("俄语", "俄語"), "ru"),
        **dict.fromkeys(("意大利语", "意大利語"), "it"),
        **dict.fromkeys(("葡萄牙语", "葡萄牙語"), "pt"),
        **dict.fromkeys(("阿拉伯语", "阿拉伯語"), "ar"),
    },
    requests=(r"(?:用|说|說|讲|講|以|翻译成|翻譯成|译成|譯成|翻成|改成|换成|換成){name}",),
    questions=_any("怎么说", "怎麼說", "如何说", "如何說", "什么意思", "什麼意思"),
    manners={
        "speeding up": _any("越来越快", "越來越快", "逐渐加快", "逐漸加快", "加快", "加速"),
        "slowing down": _any("越来越慢", "越來越慢", "逐渐变慢", "逐漸變慢", "放慢", "减速", "減速"),
        "slow": _any("慢"),
        # 快 is fast, but not in 快乐/愉快 (happy), 尽快 (as soon as possible) or 凉快 (cool).
        "fast": r"(?<![愉尽盡凉涼痛爽])快(?![乐樂活])|迅速|飞速|飛速",
        "quiet": _any("小声", "小聲", "轻声", "輕聲", "低声", "低聲", "耳语", "耳語", "悄悄", "轻轻", "輕輕", "柔声"),
        "loud": _any("大声", "大聲", "高声", "高聲", "喊", "吼", "响亮", "響亮"),
        "high pitch": _any("高音", "尖声", "尖聲", "音调高", "音調高", "尖细", "尖細"),
        "low pitch": _any("低音", "低沉", "浑厚", "渾厚", "音调低", "音調低"),
        "happy": _any("开心", "開心", "高兴", "高興", "快乐", "快樂", "愉快", "欢快", "歡快", "兴奋", "興奮"),
        "sad": _any("悲伤", "悲傷", "难过", "難過", "伤心", "傷心", "忧伤", "憂傷"),
        "angry": _any("生气", "生氣", "愤怒", "憤怒", "恼火", "惱火"),
        "surprised": _any("惊讶", "驚訝", "吃惊", "吃驚"),
        "fearful": _any("害怕", "恐惧", "恐懼", "紧张", "緊張"),
        "disgusted": _any("厌恶", "厭惡", "恶心", "噁心"),
        "neutral": _any("平静", "平靜", "冷静", "冷靜", "中性"),
        "accent": _any("口音", "方言", "腔调", "腔調"),
        "singing": _any("唱"),
        "robotic voice": _any("机器人", "機器人"),
        "intonation": _any("语调", "語調"),
        "emphasis": _any("强调", "強調", "重读", "重讀"),
        "pauses": _any("停顿", "停頓"),
        "imitation": _any("模仿"),
        "politeness": _any("礼貌", "禮貌"),
        "sarcasm": _any("讽刺", "諷刺", "嘲讽", "嘲諷"),
        "warmth": _any("温柔", "溫柔", "温暖", "溫暖", "亲切", "親切", "冷淡"),
        "excitement": _any("热情", "熱情", "激动", "激動"),
        "other tone": _any("严肃", "嚴肅", "戏剧", "戲劇", "神秘", "自信", "正式", "害羞", "骄傲", "驕傲"),
    },
    asked=r"(?:用|以)([^，。！？,.!?的]{1,4})的(?:语气|語氣|声音|聲音|口吻|方式|腔调|腔調)",
    plain=frozenset({"正常", "自然", "清楚", "平常"}),
)

TABLES: dict[str, Table] = {table.code: table for table in (ENGLISH, SPANISH, FRENCH, GERMAN, MANDARIN)}


def not_understood(language: str) -> str:
    """Why the manner asked for in `language` is not read."""
    if language == ASKED_UNKNOWN:
        return "not understood: the instruction's language could not be told"
    return f"not understood in {name(language)}: the cues rules have no table of {name(language)} manner words"


def manner_requests(text: str, language: str) -> list[str] | None:
    """The cues `text` (an instruction outside its quoted words) asks for, read with `language`'s table and
    named as the cues rules name them; None when the language has no table."""
    table = TABLES.get(language)
    if table is None or table.manners is None:
        return None
    folded = fold(text, language)
    found = {cue: m.start() for cue, pattern in table.manners.items() if (m := re.search(pattern, folded))}
    asked: list[str] = []
    if "speeding up" in found or "slowing down" in found:
        asked.append("speeding up" if "speeding up" in found else "slowing down")
    elif "slow" in found and "fast" in found:
        asked.append("slow then fast" if found["slow"] < found["fast"] else "fast then slow")
    else:
        asked += [cue for cue in ("slow", "fast") if cue in found][:1]
    asked += [cue for cue in LEVEL if cue in found][:1]
    asked += [cue for cue in PITCH if cue in found][:1]
    asked += [cue for cue in EMOTIONS if cue in found]
    asked += [cue for cue in table.manners if cue in found and cue not in (*PACE, *LEVEL, *PITCH, *EMOTIONS)]
    for match in re.finditer(table.asked or r"(?!)", folded):
        word = next(g for g in match.groups() if g)
        # Known when the phrase it stands in ("con voz grave") or the word itself is in the table.
        known = word in table.plain or any(re.search(p, match.group(0)) for p in table.manners.values())
        if not known and f"{word} (a manner)" not in asked:
            asked.append(f"{word} (a manner)")
    return asked


# -- the words to say, in a spoken instruction ------------------------------------------------------------

# The lead-ins of instructions that give the words to say, and where they end in a transcript that may have
# misheard them, are in trace_eval.judge.leadins.


def asks_beyond_saying(manner: str) -> bool:
    """Whether an instruction's words outside its quotes say more than a lead-in to the words to say ("Di",
    "Say:", "Por favor, repite"), in any language a lead-in is known for: a manner may be asked in them."""
    return not is_lead_in(manner)


def spoken_quote(transcript: str, language: str | None, answers: tuple[str, ...] = ()) -> LeadIn | None:
    """The words to say in a spoken instruction's transcript that begins as one that gives them ("Say the
    conference has been extended", "Di: la conferencia ...", "Dila conferencia ..." misheard), after its lead-in
    and without the lead-in's remains, with the lead-in as heard and its language; None when it does not. The
    instruction language's lead-ins are preferred; a language never recorded is read as English. The pair's
    `answers` (transcripts) may tell where the words begin after a lead-in misheard or lost."""
    return find_lead_in(transcript, "en" if language is None else language, answers)


# -- the language an answer is asked in ------------------------------------------------------------


def asked_language(text: str, language: str | None) -> str | None:
    """The language `text` (an instruction outside its quoted words) asks the answer in, in words; None
    when it asks for none. Read with the instruction language's table, or every table where it has none."""
    tables = [TABLES[language]] if language in TABLES else list(TABLES.values())
    for table in tables:
        folded = fold(text, table.code)
        if table.questions and re.search(table.questions, folded):
            continue
        for pattern in table.request_patterns():
            match = pattern.search(folded)
            if match:
                return table.names[match.group("name")]
    return None


def asks_how_said(text: str, language: str | None) -> bool:
    """Whether `text` asks how something is said, or what it means ("how do you say this in Spanish?", "¿cómo se
    dice ...?"): a question about words, not words to say. Read as `asked_language` reads."""
    tables = [TABLES[language]] if language in TABLES else list(TABLES.values())
    return any(table.questions and re.search(table.questions, fold(text, table.code)) for table in tables)


@dataclass(frozen=True)
class Asked:
    """The language an instruction's answers are expected in, and why."""

    language: str | None  # None: not known
    requested: bool  # asked for in words, not only the instruction's own language
    instruction: str | None  # the instruction's own language (None: never recorded; ASKED_UNKNOWN: not told)

    @property
    def translating(self) -> bool:
        """The answer is asked in another language than the instruction's: its quoted words may be to
        translate, not to say as they are."""
        return self.requested and self.language != self.instruction

    def describe(self) -> str:
        if self.language is None:
            return "no language known to expect"
        how = "asked for in the instruction" if self.requested else "the instruction's language"
        return f"{name(self.language)} expected ({how})"


def expected(manner: str, language: str | None) -> Asked:
    """The language an answer should be in: the one `manner` (the instruction outside its quotes) asks
    for, else the instruction's own (`language` as `reading_language` gives it)."""
    requested = asked_language(manner, language)
    if requested:
        return Asked(requested, True, language)
    known = language if language not in (None, ASKED_UNKNOWN) else None
    return Asked(known, False, language)


def held_language(pair: Pair, heard: str | None = None) -> str | None:
    """The language a pair's answers are held to, as Stage 1 tests them and the judge reads them (`expected`): the
    one its written instruction asks for in words ("Translate into Spanish: ..."), else the instruction's own, told
    by the manifest or its text (`Pair.told_language`), else `heard`, its audio's as the judge reads it
    (`heard_instruction_languages`). A spoken instruction's request is read by the judge alone: where its words to
    say begin depends on the answers' transcripts (cues.spoken_words)."""
    own = pair.told_language() or heard
    text = (pair.instruction_text or "").strip()
    return expected(read_instruction(text).manner, own).language if text else own


def answer_languages(pairs: Iterable[Pair], heard: Mapping[str, str]) -> dict[str, tuple[str, ...]]:
    """Relative answer path -> the languages its items hold it to (`held_language`; `heard`: instruction path ->
    its language as heard, `heard_instruction_languages`), for answers whose language is not declared: what Stage 1
    tests each answer in."""
    found: dict[str, set[str]] = {}
    for pair in pairs:
        for path, code in pair.expected_languages(held_language(pair, heard.get(pair.instruction_path or ""))).items():
            found.setdefault(path, set()).add(code)
    return {path: tuple(sorted(codes)) for path, codes in found.items()}


class Heard(NamedTuple):
    """Whether an answer is in the language expected, in words, and how probable the language it was heard in."""

    in_language: bool | None  # None: not known, or nothing expected
    what: str  # "in Spanish", "in English, not Spanish expected ...", why it is not known; "" when nothing expected
    probability: float | None = None  # of the language heard, given the context; None when declared


def heard_in(asked: Asked, blueprint: dict | None, min_probability: float) -> Heard:
    """The answer's language against the one expected: (True, what) when in it, (False, what) when heard in
    another, (None, why) when that cannot be told. Where the blueprint records its language's evidence, the
    expected language is the rule's prior (trace_eval/language_rule.py): an answer the evidence leaves ambiguous
    goes the instruction's way, a surely English one stays English."""
    if asked.language is None:
        return Heard(None, "")
    heard = ClipLanguage.of(blueprint)
    if heard is None:
        return Heard(None, "its language not recorded")
    if heard.code is None:
        return Heard(None, f"its language not known ({heard.reason or 'no reason recorded'})")
    evidence = language_evidence(blueprint)
    context = ""
    if evidence is not None:
        decision = LanguageRule.load().decide(evidence, expected=asked.language)
        heard = replace(heard, code=decision.code, probability=decision.probability)
        context = f", probability {decision.probability:.2f} given {name(asked.language)} expected"
    if not heard.trusted(min_probability):
        return Heard(
            None, f"heard as {name(heard.code)} only with probability {heard.probability:.2f}", heard.probability
        )
    if heard.code == asked.language:
        return Heard(True, f"in {name(heard.code)}{context}", heard.probability)
    return Heard(False, f"in {name(heard.code)}, not {asked.describe()}{context}", heard.probability)


def language_evidence(blueprint: dict | None) -> dict | None:
    """The evidence a detected language was decided from (`language.evidence`); None where declared, or in a
    blueprint made before the evidence was recorded."""
    value = (blueprint or {}).get("language")
    evidence = value.get("evidence") if isinstance(value, dict) and value.get("source") == "detected" else None
    return evidence if isinstance(evidence, dict) else None


# The language evidence decodes a clip's first window (extractors/asr.py WINDOW_S, Whisper's input): the whole of a
# clip no longer than it.
ONE_WINDOW_S = 30.0


def expected_reading(
    expected: str | None, blueprint: dict | None, min_probability: float = MIN_PROBABILITY
) -> tuple[str, str] | None:
    """The words of an answer heard in the `expected` language (its evidence with that language as the prior, at
    least `min_probability` sure) but transcribed in another, read from its decoding in the expected language (the
    hypothesis test's, `language.evidence.guesses`) where that decoding is the likelier of the two, in total and
    per token, and is the whole clip: the token, not the words, took it elsewhere ("No hay mensajes.", heard as
    English by its token, decodes as "No, I must not say his." at -5.74 and as Spanish at -2.32). A decoding the
    evidence does not prefer is often a fluent translation, and is never read. (text, what was read) or None."""
    evidence = language_evidence(blueprint)
    heard = ClipLanguage.of(blueprint)
    decoded = (heard.decoded or heard.code) if heard is not None else None  # its transcript's language
    if evidence is None or expected is None or decoded in (None, expected):
        return None
    guesses = evidence.get("guesses") or {}
    mine, theirs = guesses.get(expected), guesses.get(decoded)
    duration = (blueprint or {}).get("duration_s")
    if not mine or not theirs or mine.get("loops") or not isinstance(duration, (int, float)):
        return None
    if duration > ONE_WINDOW_S or not str(mine.get("text") or "").strip():
        return None

    def per_token(guess: dict) -> float:
        return float(guess["logprob"]) / max(1, int(guess["tokens"]))

    if mine["logprob"] <= theirs["logprob"] or per_token(mine) <= per_token(theirs):
        return None
    decision = LanguageRule.load().decide(evidence, expected=expected)
    if decision.code != expected or decision.probability is None or decision.probability < min_probability:
        return None
    what = (
        f"read from its {name(expected)} decoding (log-probability {mine['logprob']:.1f} against "
        f"{theirs['logprob']:.1f} in {name(decoded)})"
    )
    return str(mine["text"]), what
