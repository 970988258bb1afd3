"""The languages a clip can be in: Whisper's codes, their names, and how each writes words.

Codes are those Whisper uses (ISO 639-1 where one exists: `zh` for Mandarin, `haw` for Hawaiian, `yue` for
Cantonese, which only large-v3 knows, and Whisper's own `jw` for Javanese). A manifest declares a clip's
language with one of them (docs/benchmark.md), and the blueprint records one (`language.code`).

Scripts that do not separate words with spaces (Chinese, Japanese, Thai, Lao, Khmer, Burmese, Tibetan) have no
words to count in a transcript: their speaking rate is counted in characters (extractors/rate.py), and their
transcripts are compared character by character (a character error rate rather than a word error rate).
"""

from __future__ import annotations

import difflib
import functools
from dataclasses import dataclass
from typing import Any

__all__ = [
    "LANGUAGES",
    "TEXT_MIN_LETTERS",
    "WITHOUT_SPACES",
    "TextLanguage",
    "characters",
    "code_problem",
    "language_name",
    "separates_words",
    "text_language",
    "text_languages",
]

# Whisper's languages (openai/whisper tokenizer.py), in its order: code -> English name.
LANGUAGES: dict[str, str] = {
    "en": "English",
    "zh": "Chinese",
    "de": "German",
    "es": "Spanish",
    "ru": "Russian",
    "ko": "Korean",
    "fr": "French",
    "ja": "Japanese",
    "pt": "Portuguese",
    "tr": "Turkish",
    "pl": "Polish",
    "ca": "Catalan",
    "nl": "Dutch",
    "ar": "Arabic",
    "sv": "Swedish",
    "it": "Italian",
    "id": "Indonesian",
    "hi": "Hindi",
    "fi": "Finnish",
    "vi": "Vietnamese",
    "he": "Hebrew",
    "uk": "Ukrainian",
    "el": "Greek",
    "ms": "Malay",
    "cs": "Czech",
    "ro": "Romanian",
    "da": "Danish",
    "hu": "Hungarian",
    "ta": "Tamil",
    "no": "Norwegian",
    "th": "Thai",
    "ur": "Urdu",
    "hr": "Croatian",
    "bg": "Bulgarian",
    "lt": "Lithuanian",
    "la": "Latin",
    "mi": "Maori",
    "ml": "Malayalam",
    "cy": "Welsh",
    "sk": "Slovak",
    "te": "Telugu",
    "fa": "Persian",
    "lv": "Latvian",
    "bn": "Bengali",
    "sr": "Serbian",
    "az": "Azerbaijani",
    "sl": "Slovenian",
    "kn": "Kannada",
    "et": "Estonian",
    "mk": "Macedonian",
    "br": "Breton",
    "eu": "Basque",
    "is": "Icelandic",
    "hy": "Armenian",
    "ne": "Nepali",
    "mn": "Mongolian",
    "bs": "Bosnian",
    "kk": "Kazakh",
    "sq": "Albanian",
    "sw": "Swahili",
    "gl": "Galician",
    "mr": "Marathi",
    "pa": "Punjabi",
    "si": "Sinhala",
    "km": "Khmer",
    "sn": "Shona",
    "yo": "Yoruba",
    "so": "Somali",
    "af": "Afrikaans",
    "oc": "Occitan",
    "ka": "Georgian",
    "be": "Belarusian",
    "tg": "Tajik",
    "sd": "Sindhi",
    "gu": "Gujarati",
    "am": "Amharic",
    "yi": "Yiddish",
    "lo": "Lao",
    "uz": "Uzbek",
    "fo": "Faroese",
    "ht": "Haitian Creole",
    "ps": "Pashto",
    "tk": "Turkmen",
    "nn": "Nynorsk",
    "mt": "Maltese",
    "sa": "Sanskrit",
    "lb": "Luxembourgish",
    "my": "Burmese",
    "bo": "Tibetan",
    "tl": "Tagalog",
    "mg": "Malagasy",
    "as": "Assamese",
    "tt": "Tatar",
    "haw": "Hawaiian",
    "ln": "Lingala",
    "ha": "Hausa",
    "ba": "Bashkir",
    "jw": "Javanese",
    "su": "Sundanese",
    "yue": "Cantonese",
}

# Written without spaces between words: Chinese and Cantonese (Han), Japanese, Thai, Lao, Khmer, Burmese, Tibetan.
WITHOUT_SPACES = frozenset({"zh", "yue", "ja", "th", "lo", "km", "my", "bo"})

# What people write for a language that Whisper codes otherwise.
_ALIASES = {  # what people write for a code: ISO 639-2/3 codes, names in the language itself, older codes
    "cmn": "zh", "zho": "zh", "chi": "zh", "mandarin": "zh", "jv": "jw", "iw": "he", "nb": "no",
    "eng": "en", "spa": "es", "fra": "fr", "fre": "fr", "deu": "de", "ger": "de", "ita": "it", "por": "pt",
    "jpn": "ja", "kor": "ko", "rus": "ru", "ara": "ar", "hin": "hi", "nld": "nl", "dut": "nl", "pol": "pl",
    "tur": "tr", "vie": "vi", "tha": "th", "ukr": "uk", "swe": "sv", "ces": "cs", "cze": "cs", "ell": "el",
    "gre": "el", "heb": "he", "ind": "id", "cat": "ca", "ron": "ro", "rum": "ro", "hun": "hu", "fin": "fi",
    "dan": "da", "nor": "no", "español": "es", "castellano": "es", "castilian": "es", "français": "fr",
    "deutsch": "de", "italiano": "it", "português": "pt", "中文": "zh", "日本語": "ja", "한국어": "ko",
    "русский": "ru", "العربية": "ar",
}  # fmt: skip


def separates_words(code: str) -> bool:
    """Whether the language's script puts spaces between words (so that words can be counted)."""
    return code not in WITHOUT_SPACES


def characters(text: str) -> int:
    """The characters of a text that are spoken: letters, ideographs, kana and digits (no spaces, no punctuation,
    no combining marks, which belong to the letter before them)."""
    return sum(c.isalnum() for c in text)


def language_name(code: str | None) -> str:
    """The English name of a code ("es" -> "Spanish"); the code itself when unknown."""
    return LANGUAGES.get(code or "", code or "unknown")


def code_problem(value: object) -> str | None:
    """Why `value` is not a language code Whisper knows (with the code meant, where it can be told); None if it is."""
    if isinstance(value, str) and value in LANGUAGES:
        return None
    meant = None
    if isinstance(value, str):
        text = value.strip().lower()
        base = text.replace("_", "-").split("-")[0]  # a region or script tag: es-ES, zh-Hans
        by_name = {name.lower(): code for code, name in LANGUAGES.items()}
        meant = next(
            (
                code
                for code in (text, base, _ALIASES.get(text), _ALIASES.get(base), by_name.get(text))
                if code in LANGUAGES
            ),
            None,
        )
        if meant is None:
            close = difflib.get_close_matches(text, list(by_name), n=1, cutoff=0.8)
            meant = by_name[close[0]] if close else None
    hint = f"; did you mean {meant!r} ({LANGUAGES[meant]})?" if meant else ""
    return f"{value!r} is not a language code Whisper knows (ISO 639-1, e.g. en, es, fr, zh){hint}"


# -- the language a text is written in ------------------------------------------------------------------

TEXT_MIN_LETTERS = 8  # fewer letters than this say nothing of a text's language ("Di", "hola")


@dataclass(frozen=True)
class TextLanguage:
    """The language a text reads as: py3langid's (langid.py's model) over Whisper's languages."""

    code: str  # Whisper's code
    probability: float  # the identifier's probability of it, over Whisper's languages


@functools.lru_cache(maxsize=1)
def _identifier() -> Any:
    """langid.py's model (py3langid), told to choose among the languages Whisper knows only: a text is compared
    with a clip's detected language, and the model's many close dialects (Aragonese, Extremaduran, Galician
    beside Spanish) would share out the probability of the language meant."""
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    identifier.set_languages([code for code in LANGUAGES if code in identifier.labels])
    return identifier


def text_language(text: str | None) -> TextLanguage | None:
    """The language `text` reads as, with its probability; None for a text of fewer than TEXT_MIN_LETTERS letters.

    Its probability is calibrated enough to stand on: on the Asterisk prompts' transcripts of three words or more
    (282 English, 232 Spanish, 276 French), every text read at 0.5 or more (725 of 790) was read right."""
    letters = sum(c.isalpha() for c in text or "")
    if letters < TEXT_MIN_LETTERS:
        return None
    code, probability = _identifier().classify(text)
    return TextLanguage(str(code), round(float(probability), 3))


def text_languages(text: str | None) -> list[tuple[str, float]] | None:
    """Every language `text` may read as, most probable first, with probabilities over Whisper's languages; None
    for a text of fewer than TEXT_MIN_LETTERS letters."""
    letters = sum(c.isalpha() for c in text or "")
    if letters < TEXT_MIN_LETTERS:
        return None
    return [(str(code), round(float(p), 3)) for code, p in _identifier().rank(text)]
