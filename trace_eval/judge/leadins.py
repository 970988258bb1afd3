"""Where the words to say begin in a spoken instruction's transcript: after its lead-in ("Say ...", "Di ...",
"Répète ..."), found by edit distance so that a misheard lead-in is still found.

A transcript has no quotation marks, and the recogniser mishears short words: "Di, la conferencia" comes back as
"Dila conferencia", "Lee:" as "Le:", "Dis :" as "Dit". The lead-ins of every language of `LEADINS` (phrases made
of polite words, a verb and what it names, as data) are aligned, letter by letter after `trace_eval.text.fold`,
to the transcript's first words; of those within `MAX_EDIT_RATIO` edits per letter (`MAX_EDIT_RATIO_PAUSED` where
a pause is written after it), the one that explains most letters ends the lead-in, and the words after it (or
after a colon that follows it closely) are the words to say. A lead-in glued to the next word costs
`GLUED_COST`, the space it lost. The language whose lead-in it is, is evidence of the
instruction's language (`LeadIn.language`, with `LeadIn.ratio` for how close it was).

Where no lead-in is heard that closely, the pair's answers are evidence (`ECHO`): an answer that says what the
transcript ends with, within `Echo.edit_ratio` edits per letter, tells where the words to say begin, and the
words before them are a lead-in misheard ("Y clave incorrecta ..." for "Di, clave incorrecta ...") or lost,
where they are within `Echo.lead_in_edits` edits of one (a lost one costs its letters). An answer
that echoes an instruction asking for something else ("Traduce al inglés: ...") is not one: its first words are
no lead-in.

The thresholds were set on the tuning halves of scripts/bench_spoken_instructions.py and (the echo's)
scripts/bench_spoken_pairs.py (docs/languages.md).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from functools import cache, lru_cache

from trace_eval.languages import language_name, separates_words
from trace_eval.text import fold

__all__ = [
    "ECHO",
    "EDIT_WEIGHT",
    "Echo",
    "GLUED_COST",
    "LEADINS",
    "MAX_EDIT_RATIO",
    "MAX_EDIT_RATIO_PAUSED",
    "LeadIn",
    "Phrases",
    "find_lead_in",
    "is_lead_in",
    "said_by",
]

# Edits per letter of the phrase within which a transcript's first words are its lead-in, and where the
# recogniser heard a pause after them (a comma, a colon: "D, la conferencia" for "Di, la conferencia"), which a
# lead-in has and the first words of other instructions mostly lack ("De todas las frutas"). Set on the tuning
# half.
MAX_EDIT_RATIO = 0.34
MAX_EDIT_RATIO_PAUSED = 0.6
# A lead-in heard glued to the next word ("dila" for "di, la") lost one space.
GLUED_COST = 1.0
# Letters of a lead-in one edit outweighs, in choosing among those within MAX_EDIT_RATIO: a lead-in read whole
# with an edit ("repeat after mi") rather than its exact beginning ("repeat") with its remains among the words
# to say, since a word that only looks like the rest of a lead-in is rarer than a misheard letter.
EDIT_WEIGHT = 3.0
# What the recogniser writes for a pause.
PAUSES = frozenset(",:;.!?-")
# Words between a lead-in and a colon that still belong to it ("sag bitte: guten morgen").
COLON_WITHIN_WORDS = 3


@dataclass(frozen=True)
class Echo:
    """When an answer that says the end of an instruction's transcript tells where its words to say begin."""

    edit_ratio: float = 0.2  # edits per letter of the answer from the transcript's tail, at most
    # Edits from the nearest lead-in to the words before that tail, at most: a count, not a share, since any short
    # phrase is within a share of a long lead-in ("cuentame sobre" of "repita esta frase").
    lead_in_edits: int = 2
    min_letters: int = 8  # an answer shorter matches some tail by chance


ECHO = Echo()


@dataclass(frozen=True)
class Phrases:
    """A language's lead-ins, as `fold` writes them: any of `polite`, then a verb, then any of `objects`."""

    verbs: tuple[str, ...]
    polite: tuple[str, ...] = ()
    objects: tuple[str, ...] = ()

    def phrases(self, spaced: bool = True) -> tuple[str, ...]:
        joiner = " " if spaced else ""
        parts = itertools.product(("", *self.polite), self.verbs, ("", *self.objects))
        return tuple(joiner.join(p for p in words if p) for words in parts)


LEADINS: dict[str, Phrases] = {
    "en": Phrases(
        verbs=("say", "repeat", "repeat after me", "read", "read out", "read aloud", "can you say",
               "could you say", "could you repeat", "would you say", "will you say"),
        polite=("please", "now", "okay", "ok"),
        objects=("the sentence", "this sentence", "the phrase", "this phrase", "the following", "after me",
                 "the sentence aloud", "this sentence aloud", "the phrase aloud", "this phrase aloud"),
    ),
    "es": Phrases(
        verbs=("repite", "repita", "repitan", "di", "diga", "digan", "dime", "lee", "lea"),
        polite=("por favor", "ahora"),
        objects=("la frase", "esta frase", "la siguiente frase", "en voz alta", "conmigo", "despues de mi"),
    ),
    "fr": Phrases(
        verbs=("repete", "repetez", "dis", "dites", "lis", "lisez"),
        polite=("s'il te plait", "s'il vous plait", "maintenant"),
        objects=("la phrase", "cette phrase", "la phrase suivante", "a voix haute", "apres moi"),
    ),
    "de": Phrases(
        verbs=("sag", "sage", "sagen sie", "wiederhole", "wiederholen sie", "lies", "lesen sie", "sprich nach",
               "sprechen sie nach"),
        polite=("bitte", "jetzt"),
        objects=("den satz", "diesen satz", "laut", "mir nach"),
    ),
    "zh": Phrases(verbs=("跟我说", "跟我說", "重复", "重複", "说", "說", "读", "讀"), polite=("请", "請")),
}  # fmt: skip


@dataclass(frozen=True)
class LeadIn:
    """A transcript read as a lead-in and the words to say after it."""

    quoted: str  # the words to say, folded, without the lead-in's remains
    heard: str  # the lead-in as the transcript has it, folded (up to a colon after it)
    phrase: str  # the table's lead-in it was read as
    language: str  # the language whose lead-in it is: evidence of the instruction's language
    edits: float  # edits from `phrase` to what was heard (a lost space costs GLUED_COST)
    echo: int = 0  # the answer (1 or 2) that says the words after it, where that told where they begin; 0: none
    # Words heard between the lead-in and a colon after it ("slowly" of "say slowly: ..."): the instruction's own,
    # unlike the lead-in's letters, which say nothing whatever they were misheard as ("vite" for "dites").
    beyond: str = ""

    @property
    def ratio(self) -> float:
        """Edits per letter of the phrase: 0 where it was heard as written."""
        return self.edits / max(1, len(self.phrase))

    @property
    def sure(self) -> bool:
        """Heard as written, so the words to say surely begin where it ends."""
        return self.edits == 0 and not self.echo

    def describe(self) -> str:
        """How it was read, where it was not heard as written: 'read as Spanish “lee” (1 edit)'; where an answer
        told where the words to say begin, which one ('response 1 saying them', where none was heard)."""
        edits = f"{self.edits:g} edit" + ("" if self.edits == 1 else "s")
        if not self.heard:
            return f"response {self.echo} saying them"
        read = f"read as {language_name(self.language)} “{self.phrase}” ({edits})"
        return read + (f", response {self.echo} saying the words after it" if self.echo else "")


@cache
def _phrases(code: str) -> frozenset[str]:
    return frozenset(LEADINS[code].phrases(separates_words(code)))


class _Node:
    """A trie of a language's lead-ins, so that phrases that begin alike are aligned once."""

    def __init__(self) -> None:
        self.children: dict[str, _Node] = {}
        self.phrase: str | None = None  # the lead-in that ends here
        self.longest = 0  # letters of the longest lead-in below


@cache
def _trie(code: str) -> _Node:
    root = _Node()
    for phrase in sorted(_phrases(code)):
        node = root
        node.longest = max(node.longest, len(phrase))
        for char in phrase:
            node = node.children.setdefault(char, _Node())
            node.longest = max(node.longest, len(phrase))
        node.phrase = phrase
    return root


def _letters(folded: str) -> tuple[str, list[int]]:
    """`folded` with each run of characters other than letters, digits and apostrophes one space, and the
    index in `folded` of each character kept."""
    kept: list[str] = []
    where: list[int] = []
    for i, char in enumerate(folded):
        if char.isalnum() or char == "'":
            kept.append(char)
            where.append(i)
        elif kept and kept[-1] != " ":
            kept.append(" ")
            where.append(i)
    return "".join(kept), where


def _ends(text: str, code: str, limit: float) -> list[tuple[float, int, str, bool]]:
    """(edits, end in `text`, phrase, glued) of each of `code`'s lead-ins aligned to a prefix of `text` within `limit`
    edits per letter, ending where a word may: after a space (matched to the one after the phrase), or inside a
    word (glued: the space lost, at GLUED_COST)."""
    spaced = separates_words(code)
    cap = min(len(text), int(max(map(len, _phrases(code))) * (1 + limit)) + 2)
    ends: list[tuple[float, int, str, bool]] = []

    def step(row: list[int], char: str, i: int) -> list[int]:
        new = [i]
        for j in range(1, cap + 1):
            new.append(min(row[j] + 1, new[j - 1] + 1, row[j - 1] + (char != text[j - 1])))
        return new

    def walk(node: _Node, row: list[int], depth: int) -> None:
        if min(row) > limit * node.longest:  # a row's least edits never fall further on
            return
        if node.phrase is not None:
            most = limit * len(node.phrase)
            after = step(row, " ", depth + 1) if spaced else row
            for j in range(1, min(cap + 1, len(text))):  # words to say must follow
                glued = spaced and text[j - 1] != " "
                if not glued:
                    edits = float(after[j])
                elif text[j].isalnum() and text[j - 1].isalnum():
                    edits = row[j] + GLUED_COST
                else:
                    continue
                if edits <= most:
                    ends.append((edits, j, node.phrase, glued))
        for char, child in node.children.items():
            walk(child, step(row, char, depth + 1), depth + 1)

    walk(_trie(code), list(range(cap + 1)), 0)
    return ends


@lru_cache(maxsize=4096)  # an instruction is read once for each of its pairs
def find_lead_in(transcript: str, language: str | None = None, answers: tuple[str, ...] = ()) -> LeadIn | None:
    """The lead-in `transcript` begins with and the words to say after it; None where it begins with none.
    `language` (the instruction's, where known) is preferred: another language's lead-in must then be heard as
    written. A language with no lead-ins here (not known, `und`, or heard as one: Spanish as Galician) reads every
    language's alike. Where none is heard closely enough, the `answers`' transcripts may tell where the words to
    say begin (`ECHO`)."""
    if answers:  # the lead-in as heard is read once per instruction (cached), whatever its pairs' answers
        return find_lead_in(transcript, language) or _echoed_lead_in(transcript, language, answers)
    return _heard_lead_in(transcript, language)


def _heard_lead_in(transcript: str, language: str | None) -> LeadIn | None:
    found: list[tuple[float, bool, int, bool, str, LeadIn]] = []
    for code in LEADINS:
        folded = fold(transcript, code).strip()
        text, where = _letters(folded)
        near = language == code or language not in LEADINS
        for edits, end, phrase, glued in _ends(text, code, max(MAX_EDIT_RATIO, MAX_EDIT_RATIO_PAUSED) if near else 0):
            # The words to say begin after the separator the lead-in ends at, or inside the word it is glued to.
            cut = where[end - 1] if text[end - 1] == " " else where[end]
            paused = not glued and folded[cut:].lstrip()[:1] in PAUSES
            if edits > (MAX_EDIT_RATIO_PAUSED if paused else MAX_EDIT_RATIO) * len(phrase):
                continue
            lead = _read(folded[:cut], folded[cut:], phrase, code, edits)
            if lead is not None:
                # Most letters explained (its remains are not words to say), then a split between words, the
                # longest phrase, the stated language.
                found.append((EDIT_WEIGHT * edits - len(phrase), glued, -len(phrase), code != language, phrase, lead))
    if not found:
        return None
    return min(found, key=lambda f: f[:5])[5]


def _tail_edits(answer: str, text: str) -> list[int]:
    """For each start s in `text`, the edits from `answer` to `text[s:]` (aligned back from both ends)."""
    row = list(range(len(answer) + 1))  # the empty tail against each of the answer's last letters
    edits = [row[-1]]
    for j, char in enumerate(reversed(text), 1):
        new = [j]
        for i, letter in enumerate(reversed(answer), 1):
            new.append(min(row[i] + 1, new[i - 1] + 1, row[i - 1] + (char != letter)))
        row = new
        edits.append(row[-1])
    return edits[::-1]


def _nearest_lead_in(before: str, language: str | None) -> tuple[float, str, str] | None:
    """(edits, phrase, language) of the lead-in nearest to `before` (the words before an echoed tail, letters and
    single spaces) within `ECHO.lead_in_edits`; an empty `before` is a lead-in lost (the instruction language's
    shortest, every letter an edit)."""
    codes = [language] if language in LEADINS else list(LEADINS)
    if not before:
        phrase = min(_phrases(codes[0]), key=len)
        return (float(len(phrase)), phrase, codes[0]) if len(phrase) <= ECHO.lead_in_edits else None
    found = []
    for code in LEADINS:
        most = ECHO.lead_in_edits if code in codes else 0  # another language's, heard as written
        # Its phrases aligned to the whole of `before`: to a text where one more word follows it.
        for edits, end, phrase, glued in _ends(f"{before} x", code, most / 2):  # a share of the shortest phrase
            if end == len(before) + 1 and not glued and edits <= most:
                found.append((edits, -len(phrase), phrase, code))
    if not found:
        return None
    edits, _, phrase, code = min(found)
    return edits, phrase, code


def _echoed_lead_in(transcript: str, language: str | None, answers: tuple[str, ...]) -> LeadIn | None:
    """The words to say where an answer says what `transcript` ends with (the closest of `answers` within
    `ECHO.edit_ratio` edits per letter, from a word's start) and the words before them are a lead-in."""
    folded = fold(transcript, language).strip()
    text, where = _letters(folded)
    text = text.strip()
    starts = [s for s in range(len(text)) if s == 0 or text[s - 1] == " "]
    best: tuple[float, int, int, tuple[float, str, str]] | None = None  # (edits per letter, start, answer, lead-in)
    for n, answer in enumerate(answers, 1):
        said = _letters(fold(answer, language).strip())[0].strip()
        if sum(ch.isalnum() for ch in said) < ECHO.min_letters:
            continue
        tail = _tail_edits(said, text)
        for start in starts:
            ratio = tail[start] / len(said)
            if ratio <= ECHO.edit_ratio and (best is None or ratio < best[0]):
                lead = _nearest_lead_in(text[:start].strip(), language)
                if lead is not None:
                    best = (ratio, start, n, lead)
    if best is None:
        return None
    _, start, n, (edits, phrase, code) = best
    cut = where[start] if start else 0
    quoted = re.sub(r"[\"“”«»]", " ", folded[cut:]).strip(" ,.;:!?")
    return LeadIn(quoted, folded[:cut].strip(" ,.;:"), phrase, code, edits, echo=n)


def said_by(words: str, language: str | None, answers: tuple[str, ...]) -> int | None:
    """The first of `answers` (1, 2, ...) that says all of `words`, within `ECHO.edit_ratio` edits per letter;
    None where none does (or the words are too short to tell)."""
    text = _letters(fold(words, language).strip())[0].strip()
    if sum(ch.isalnum() for ch in text) < ECHO.min_letters:
        return None
    for n, answer in enumerate(answers, 1):
        said = _letters(fold(answer, language).strip())[0].strip()
        if said and _tail_edits(said, text)[0] <= ECHO.edit_ratio * len(said):
            return n
    return None


def _read(heard: str, rest: str, phrase: str, code: str, edits: float) -> LeadIn | None:
    before, colon, after = rest.partition(":")
    beyond = ""
    if colon and len(before.split()) <= COLON_WITHIN_WORDS:
        heard, rest, beyond = heard + before, after, before
    quoted = re.sub(r"[\"“”«»]", " ", rest).strip(" ,.;:!?")
    if sum(ch.isalnum() for ch in quoted) < 2:
        return None
    return LeadIn(quoted, heard.strip(" ,.;:"), phrase, code, edits, beyond=beyond.strip(" ,.;:"))


def is_lead_in(text: str) -> bool:
    """Whether `text` (an instruction's words outside its quotes) is nothing but a lead-in, as written, in any
    language of `LEADINS` ("Di", "Say:", "Por favor, repite")."""
    for code in LEADINS:
        letters, _ = _letters(fold(text, code).strip())
        if not letters.strip() or letters.strip() in _phrases(code):
            return True
    return False
