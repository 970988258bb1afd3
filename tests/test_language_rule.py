"""The one rule that decides a clip's language from its evidence (trace_eval/language_rule.py), on evidence
written as asr records it: the rule's arithmetic and what context does to it. How often the fitted rule is
right is measured on the perception sets (scripts/bench_perception.py, tests/extractors/test_perception.py)."""

from __future__ import annotations

import pytest

from trace_eval.judge.languages import Asked, heard_in, instruction_language
from trace_eval.language_rule import LanguageRule


def guess(text: str, logprob: float, tokens: int, reads: list | None, loops: bool = False) -> dict:
    return {"text": text, "logprob": logprob, "tokens": tokens, "loops": loops, "reads": reads}


RULE = LanguageRule.load()
# A short Spanish answer whose token leans English ("No hay mensajes." heard as "No, I mustn't sahise.").
LEANS_ENGLISH = {
    "speech_s": 1.4,
    "token": {"en": 0.62, "es": 0.21, "pt": 0.06, "it": 0.04},
    "guesses": {
        "en": guess("No, I mustn't sahise.", -9.1, 8, None),
        "es": guess("No hay mensajes.", -5.2, 6, [["es", 0.93]]),
        "pt": guess("Não há mensagens.", -8.8, 7, [["pt", 0.71]]),
        "it": guess("No ai messaggi.", -9.5, 6, [["it", 0.55]]),
    },
}


def blueprint(evidence: dict, code: str, probability: float) -> dict:
    return {"language": {"code": code, "probability": probability, "source": "detected", "evidence": evidence}}


def test_a_sure_token_decodes_no_guesses_and_decides_alone():
    token = {"fr": 0.97, "en": 0.02}
    assert RULE.guesses_to_decode(token) == []
    decision = RULE.decide({"speech_s": 3.0, "token": token})
    assert decision.code == "fr" and decision.probability > 0.9


def test_a_split_token_decodes_its_first_guesses():
    token = {"en": 0.5, "es": 0.3, "ca": 0.15, "gl": 0.001}
    chosen = RULE.guesses_to_decode(token)
    assert chosen[:3] == ["en", "es", "ca"] and "gl" not in chosen


def test_words_written_under_another_token_count_for_their_own_language():
    """English speech decoded under the Tagalog token comes out as English words: that is English's evidence."""
    evidence = {
        "speech_s": 3.2,
        "token": {"tl": 0.41, "vi": 0.22, "en": 0.2},
        "guesses": {
            "tl": guess("At we won't link at the front entrance.", -14.0, 11, [["en", 0.91]]),
            "vi": guess("Ét uy oăn linh ét đờ phờ ron en tran.", -30.0, 24, [["vi", 0.8]]),
            "en": guess("And we want to meet at the front entrance.", -12.5, 10, [["en", 0.97]]),
        },
    }
    decision = RULE.decide(evidence)
    assert decision.code == "en", decision
    assert decision.posterior["en"] > decision.posterior.get("tl", 0)


def test_the_transcripts_settle_a_token_that_leans_the_wrong_way():
    decision = RULE.decide(LEANS_ENGLISH)
    assert decision.code == "es", decision


def test_speech_an_english_only_model_hears_poorly_is_not_english():
    """A recorded Spanish "Transferencia" whose token and guesses lean English: tiny.en, asked for English words,
    writes "Transplantia." at -1.28 per token (the perception sets' test half), and the clip is Spanish; where it
    finds its English words surely, English stands."""
    leaning = {
        "speech_s": 1.1,
        "token": {"en": 0.55, "es": 0.25, "pt": 0.1},
        "guesses": {
            "en": guess("Transfer Ensure.", -4.0, 5, None),
            "es": guess("Transferencia.", -4.5, 5, [["es", 0.6]]),
            "pt": guess("Transferência.", -5.0, 5, [["pt", 0.5]]),
        },
    }
    assert RULE.decide(leaning).code == "en"  # base's evidence alone
    poorly = {"text": "Transplantia.", "logprob_per_token": -1.28, "tokens": 5, "loops": False}
    decision = RULE.decide(leaning | {"english": poorly})
    assert decision.code == "es", decision
    assert "English-only model -1.28 per token" in decision.reason
    surely = {"text": "Transfer Ensure.", "logprob_per_token": -0.2, "tokens": 4, "loops": False}
    assert RULE.decide(leaning | {"english": surely}).code == "en"


def test_a_looping_english_only_decode_is_left_out():
    """espeak-ng's Spanish "Mañana vamos a la playa con mis amigos.": tiny.en writes "I'm here, I'm here, ..." at
    -0.54 per token, a loop's probability, not that of English words; the rule decides as if it had not been asked."""
    spanish = {
        "speech_s": 2.6,
        "token": {"es": 0.5, "en": 0.3, "it": 0.1},
        "guesses": {
            "es": guess("Mañana vamos a la playa con mis amigos.", -9.0, 12, [["es", 0.9]]),
            "en": guess("Manana, vamos a la playa con mis amigos.", -9.5, 12, [["es", 0.6]]),
            "it": guess("Mañana vamos a la playa con mis amigos.", -10.0, 12, [["es", 0.9]]),
        },
    }
    looping = {"text": "I'm here, " * 7 + "I'm here.", "logprob_per_token": -0.54, "tokens": 32, "loops": True}
    alone, with_loop = RULE.decide(spanish), RULE.decide(spanish | {"english": looping})
    assert with_loop.code == alone.code == "es"
    assert with_loop.posterior == alone.posterior
    assert "English-only model -0.54 loops, left out" in with_loop.reason
    assert RULE.decide(spanish | {"english": looping | {"loops": False}}).posterior["en"] > alone.posterior["en"]


def test_an_english_only_decode_that_loops_where_the_speech_repeats_counts():
    """The golden files' whispered "tick, tock, tock, ...": every guess but one loops, because the speech repeats;
    tiny.en's "Tick, tick, ..." at -0.30 per token is then English words, and the clip is English."""
    repeating = {
        "speech_s": 4.88,
        "token": {"en": 0.386, "ja": 0.183, "ko": 0.103, "nn": 0.055, "pl": 0.031, "ru": 0.029, "km": 0.028},
        "guesses": {
            "en": guess("Check, " * 10 + "check", -7.57, 21, [["it", 0.22], ["sn", 0.119]], loops=True),
            "ja": guess("チック" * 18, -4.26, 36, [["ja", 1.0]], loops=True),
            "ko": guess("찍" * 9, -9.15, 18, [["ko", 0.679]]),
            "nn": guess("Chick-Chuck " * 5, -7.89, 20, [["sn", 0.102], ["en", 0.099]], loops=True),
            "pl": guess("Ci" * 27, -10.42, 28, [["la", 0.059], ["ro", 0.05]], loops=True),
        },
    }
    ticks = {"text": "Tick, " * 11 + "tick", "logprob_per_token": -0.3, "tokens": 23, "loops": True}
    assert RULE.decide(repeating).code == "ja"
    decision = RULE.decide(repeating | {"english": ticks})
    assert decision.code == "en", decision
    assert "English-only model -0.30 per token" in decision.reason


def test_the_expected_language_is_a_prior_that_tips_an_ambiguous_answer_but_not_a_sure_one():
    ambiguous = {"speech_s": 1.0, "token": {"en": 0.45, "es": 0.4, "pt": 0.1}}
    assert RULE.decide(ambiguous).code == "en"
    assert RULE.decide(ambiguous, expected="es").code == "es"
    sure = {"speech_s": 3.0, "token": {"en": 0.96, "es": 0.01}}
    assert RULE.decide(sure, expected="es").code == "en"


def test_the_prior_does_not_weigh_for_a_language_the_evidence_never_tested():
    # A recorded Spanish answer (Asterisk's "vm-marked-urgent", Whisper base's token): sure enough that nothing was
    # decoded. Held to an English instruction whose Stage 1 could not know it (spoken only), it stays Spanish ...
    sure = {"speech_s": 2.4, "token": {"es": 0.802, "en": 0.077, "pt": 0.041, "it": 0.032}}
    assert RULE.untested(sure, "en") and not RULE.untested(sure, "es")
    assert RULE.decide(sure, expected="en").code == "es"
    # ... where the prior alone made it English at 0.935. Decoded in English as well (Stage 1's test where the
    # context is known), the prior weighs again, beside the transcripts.
    assert RULE.decide(sure, prior=RULE.expecting("en", sure)).code == "en"
    decoded = {**sure, "guesses": {"es": {"text": "esa mensaje", "logprob": -3.0, "tokens": 6, "loops": False,
                                          "reads": [["es", 0.9]]},
                                   "en": {"text": "is a message", "logprob": -9.0, "tokens": 6, "loops": False,
                                          "reads": [["en", 0.9]]}}}  # fmt: skip
    assert not RULE.untested(decoded, "en")


def test_an_answer_is_held_to_the_instructions_language_through_the_prior():
    asked = Asked("es", False, "es")
    ambiguous = {"speech_s": 1.0, "token": {"en": 0.45, "es": 0.4, "pt": 0.1}}
    heard = heard_in(asked, blueprint(ambiguous, "en", 0.45), 0.5)
    assert heard.in_language is True and heard.what.startswith("in Spanish, probability"), heard
    english = {"speech_s": 3.0, "token": {"en": 0.97, "es": 0.01}}
    heard = heard_in(asked, blueprint(english, "en", 0.97), 0.5)
    assert heard.in_language is False and heard.what.startswith("in English, not Spanish expected"), heard


def test_a_written_text_and_the_audio_are_weighed_together():
    """espeak-ng's Spanish heard as Italian at 0.75; its text reads as Spanish only at 0.39 (Galician and
    Portuguese share the rest): together, Spanish."""
    italian = {"speech_s": 2.5, "token": {"it": 0.75, "es": 0.18, "pt": 0.04}}
    text = "Di la conferencia ha sido extendida"
    told = instruction_language({}, blueprint(italian, "it", 0.75), text)
    assert told is not None and told.code == "es", told
    assert "its text reads es" in (told.evidence or ""), told.evidence
    # Without the text, the audio decides.
    told = instruction_language({}, blueprint(italian, "it", 0.75), None)
    assert told is not None and told.code == "it"


@pytest.mark.parametrize(
    "evidence",
    [None, {}, {"speech_s": 0.0, "token": {}}],
    ids=["none", "empty", "no token"],
)
def test_no_evidence_decides_nothing_and_says_so(evidence):
    decision = RULE.decide(evidence)
    assert decision.code is None and decision.probability is None and decision.reason == "no language evidence"


def test_a_text_no_table_knows_and_an_empty_text_are_read_as_no_evidence():
    audio = {"speech_s": 2.0, "token": {"de": 0.9, "nl": 0.05}}
    for text in ("", "ᚠᚢᚦᚨᚱᚲ ᚷᚹᚺᚾ", "???"):
        told = instruction_language({}, blueprint(audio, "de", 0.9), text)
        assert told is not None and told.code == "de", (text, told)


def test_refitting_the_judges_weights_leaves_every_blueprint_current(monkeypatch):
    """The text's and the prior's weights are the judge's alone: Stage 1 decides without them, so they stay out
    of asr's fingerprint, while a constant Stage 1 decides with moves it."""
    from dataclasses import replace

    from extractors.asr import AsrConfig, AsrExtractor

    asr = AsrExtractor(AsrConfig())
    shipped = asr.fingerprint()
    for changed, moves in ((dict(text_weight=1.0, prior_weight=0.1), False), (dict(english_weight=0.1), True)):
        rule = replace(RULE, **changed)
        monkeypatch.setattr(LanguageRule, "load", classmethod(lambda cls, rule=rule: rule))
        assert (asr.fingerprint() != shipped) is moves, changed
