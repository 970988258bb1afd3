"""Words compared in any script (trace_eval/text.py): NFKC, case and accents folded where the language allows,
characters for scripts without spaces; the word or character error rate."""

from __future__ import annotations

import pytest

from trace_eval.text import error_rate, fold, match_tokens, tokens


@pytest.mark.parametrize(
    "text, language, words",
    [
        ("¡Buenos días, señor!", "es", ["buenos", "dias", "senor"]),
        ("À bientôt, l’été", "fr", ["a", "bientot", "l'ete"]),
        ("Grüß Gott, STRASSE", "de", ["gruss", "gott", "strasse"]),  # ß folds to ss, as Straße is Strasse
        ("你好，世界！", "zh", ["你", "好", "世", "界"]),  # no spaces: one character a word
        ("ありがとうございます", "ja", ["あ", "り", "が", "と", "う", "ご", "ざ", "い", "ま", "す"]),  # dakuten kept
        ("ＨＥＬＬＯ　１２３", None, ["hello", "123"]),  # full-width forms (NFKC)
        ("مَرْحَبًا بِكُمْ", "ar", ["مرحبا", "بكم"]),  # optional vowel marks folded
        ("नमस्ते दुनिया", "hi", ["नमस्ते", "दुनिया"]),  # vowel signs are letters: kept
        ("Tiếng Việt", "vi", ["tiếng", "việt"]),  # tones tell Vietnamese words apart: kept
        ("用中文说 hello world", "zh", ["用", "中", "文", "说", "hello", "world"]),
    ],
)
def test_tokens_in_any_script(text, language, words):
    assert tokens(text, language) == words


def test_words_are_matched_in_pairs_of_characters_where_there_are_no_spaces():
    assert match_tokens("今天天气很好", "zh") == ["今天", "天天", "天气", "气很", "很好"]
    assert match_tokens("说好 OK 吗", "zh") == ["说好", "ok", "吗"]  # a lone character stays itself


def test_the_same_word_written_two_ways_folds_to_one():
    assert fold("Ｃafé", "fr") == fold("CAFÉ", "fr") == fold("cafe\u0301", "fr") == "cafe"


def test_error_rate_counts_words_where_there_are_spaces_and_characters_where_there_are_none():
    spanish = error_rate(["Buenos días, señor."], ["buenos dias senor"], "es")
    assert (spanish.unit, spanish.value) == ("WER", 0.0)  # case, accents and punctuation are no errors
    assert error_rate(["buenos días señor"], ["buenas días"], "es").value == pytest.approx(2 / 3)
    chinese = error_rate(["你好，世界。"], ["你好视界"], "zh")
    assert (chinese.unit, chinese.edits, chinese.reference_units) == ("CER", 1, 4)
    # Over a corpus: edits over reference units, summed
    assert error_rate(["a b", "c d e f"], ["a b", "c x e"], "en").value == pytest.approx(2 / 6)


def test_a_text_that_begins_with_a_combining_mark_is_folded_not_refused():
    """An odd transcript or answer ("\u0301abc": an accent with no letter before it) must not end a run."""
    assert fold("\u0301abc") == "\u0301abc"
    assert fold("\u0301Café") == "\u0301cafe"
    assert tokens("\u0301 hola") == ["\u0301", "hola"]
