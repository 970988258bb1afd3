"""Text in any script: the one way words are compared, and the error rate of a transcript.

Every comparison of words (the `cues` judge's quoted words, transcription-quality scripts) reads text
through `tokens`: NFKC (full-width forms, ligatures), case folding ("Straße" is "strasse"), accents folded
where the language writes them as optional marks on a letter, and scripts written without spaces between
words (Chinese, Japanese, Thai ...) split into characters, as jiwer's CER and Whisper's own normaliser
(`split_letters`) do. So "¡Buenos días!" reads as ["buenos", "dias"] and "你好，世界" as ["你", "好", "世", "界"].
Where words are matched rather than counted (`match_tokens`), characters of those scripts go in overlapping
pairs.

`error_rate` is the word error rate where words are separated by spaces and the character error rate
where they are not (`unit` says which).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from trace_eval.languages import separates_words

__all__ = [
    "ErrorRate",
    "error_rate",
    "fold",
    "match_tokens",
    "spaced",
    "tokens",
    "units",
    "unspaced_char",
]

# Blocks of scripts written without spaces between words: each character is a token of its own.
_UNSPACED_BLOCKS = (
    (0x0E00, 0x0EFF),  # Thai, Lao
    (0x0F00, 0x0FFF),  # Tibetan
    (0x1000, 0x109F),  # Myanmar
    (0x1780, 0x17FF),  # Khmer
    (0x2E80, 0x2FDF),  # CJK radicals, Kangxi radicals
    (0x3005, 0x3007),  # 々 〆 〇
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3100, 0x312F),  # Bopomofo
    (0x31F0, 0x31FF),  # Katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0x20000, 0x3FFFF),  # CJK extensions B and after
)
# Scripts whose combining marks are optional accents on a letter (é, ü, ñ; Greek tonos; Arabic and Hebrew
# vowel points) and fold away; elsewhere (Devanagari vowel signs, Japanese dakuten, Thai tones) a mark is
# part of the letter and stays.
_FOLDED_SCRIPTS = ("LATIN", "GREEK", "CYRILLIC", "ARABIC", "HEBREW")
# Languages where an accent on a Latin letter tells words apart and is written every time: kept.
_ACCENTS_MEAN_WORDS = frozenset({"vi", "yo"})
_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "ʼ": "'", "`": "'", "´": "'"})


def spaced(language: str | None) -> bool:
    """Whether `language` separates words with spaces (an unknown language is taken to, as most do)."""
    return separates_words((language or "").split("-")[0].lower())


def unspaced_char(char: str) -> bool:
    """A character of a script written without spaces between words."""
    point = ord(char)
    return any(low <= point <= high for low, high in _UNSPACED_BLOCKS)


def _folds(base: str) -> bool:
    if not base:  # a mark the text begins with has no letter to fold it into: kept
        return False
    name = unicodedata.name(base, "")
    return name.startswith(_FOLDED_SCRIPTS)


def fold(text: str, language: str | None = None) -> str:
    """`text` as words are compared: NFKC, case folded, accents folded where the language allows."""
    text = unicodedata.normalize("NFKC", text).casefold().translate(_APOSTROPHES)
    if (language or "").split("-")[0].lower() in _ACCENTS_MEAN_WORDS:
        return text
    kept: list[str] = []
    base = ""
    for char in unicodedata.normalize("NFD", text):
        category = unicodedata.category(char)
        if not category.startswith("M"):
            base = char
        elif category == "Mn" and _folds(base):
            continue
        kept.append(char)
    return unicodedata.normalize("NFC", "".join(kept))


def _word_char(char: str) -> bool:
    return unicodedata.category(char)[0] in "LMN"


def tokens(text: str, language: str | None = None) -> list[str]:
    """The words of `text` after `fold`; characters of scripts written without spaces one token each.
    Punctuation and symbols separate words; an apostrophe inside a word belongs to it ("don't", "l'eau")."""
    found: list[str] = []
    word: list[str] = []

    def end() -> None:
        if word:
            found.append("".join(word).strip("'"))
            word.clear()

    for char in fold(text, language):
        if unspaced_char(char):
            end()
            found.append(char)
        elif _word_char(char) or (char == "'" and word):
            word.append(char)
        else:
            end()
    end()
    return [t for t in found if t]


def match_tokens(text: str, language: str | None = None) -> list[str]:
    """`tokens`, with each run of characters of a script without spaces read as its overlapping pairs
    ("今天天气" -> 今天, 天天, 天气): a word there is most often two characters, and single characters that
    every sentence has (的, ま, す) would otherwise read as the words said. A lone character stays itself."""
    found: list[str] = []
    run: list[str] = []

    def end() -> None:
        if len(run) == 1:
            found.append(run[0])
        found.extend(a + b for a, b in zip(run, run[1:]))
        run.clear()

    for token in tokens(text, language):
        if len(token) == 1 and unspaced_char(token):
            run.append(token)
        else:
            end()
            found.append(token)
    end()
    return found


def _distance(reference: list[str], hypothesis: list[str]) -> int:
    """Levenshtein distance between two token lists (substitutions, deletions, insertions)."""
    previous = list(range(len(hypothesis) + 1))
    for i, ref in enumerate(reference, start=1):
        current = [i]
        for j, hyp in enumerate(hypothesis, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ref != hyp)))
        previous = current
    return previous[-1]


@dataclass(frozen=True)
class ErrorRate:
    """Edits over reference units, summed over every pair of texts."""

    unit: str  # "WER" (words) or "CER" (characters, for languages written without spaces)
    edits: int
    reference_units: int

    @property
    def value(self) -> float | None:
        return self.edits / self.reference_units if self.reference_units else None


def units(text: str, language: str | None = None) -> list[str]:
    """What the error rate counts in `text`: its words, or its characters where `language` has no spaces."""
    found = tokens(text, language)
    return found if spaced(language) else [char for token in found for char in token]


def error_rate(references: Iterable[str], hypotheses: Iterable[str], language: str | None = None) -> ErrorRate:
    """Corpus word error rate of `hypotheses` against `references`, or character error rate where
    `language` is written without spaces; both read through `tokens` (case, accents and punctuation
    folded alike on both sides)."""
    edits = total = 0
    for reference, hypothesis in zip(references, hypotheses, strict=True):
        ref, hyp = units(reference, language), units(hypothesis, language)
        edits += _distance(ref, hyp)
        total += len(ref)
    return ErrorRate("WER" if spaced(language) else "CER", edits, total)
