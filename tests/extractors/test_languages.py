"""Stage 1 in other languages than English: recorded Spanish and French, espeak-ng in Spanish, German, Japanese,
Mandarin and Arabic, through the CPU profile's recognisers (Whisper base detects the language and transcribes it,
tiny.en keeps English).

Checked: the language each clip is detected in (or declared in), transcripts within the error rate measured on
the recorded prompts (scripts/real_speech_wer.py, docs/speed.md), a speaking rate in every language (characters
per second where words are not separated by spaces), and a declared language honoured.

What holds for espeak-ng with Whisper base: its German, Spanish and kana-only Japanese are detected (Japanese
written with kanji is read as "Chinese letter", in English); its Mandarin is not (base said English 0.79 for
the sentence below, Thai 0.41 for another), nor its Arabic (Japanese 0.25-0.30) nor its French (English 0.12,
French 0.10; recorded French is detected at 0.93-0.99). Those are declared here, as a manifest would.
"""

from __future__ import annotations

import pytest
from recorded_speech import MissingSpeech, Recording, asterisk, error_rate, plain_prompts

from extractors import Clip, Section
from extractors.asr import AsrConfig, AsrExtractor
from extractors.rate import RateExtractor
from extractors.voicing import VoicingExtractor
from trace_eval.audio import load_audio
from trace_eval.synth import Voice, speak

PROPS = "agent_audio_properties"
# The first recorded prompts of each language's measured selection (plain_prompts(language, 20)).
RECORDED = 6
# Error rates measured on 20 prompts per language (scripts/real_speech_wer.py): the bounds leave room for a
# selection of 6, where one misheard word moves the rate by several points.
MAX_ERROR = {"es": 0.25, "fr": 0.25}
# espeak-ng sentences that Whisper base tells apart: voice -> text, language detected.
SPOKEN = {
    "de": ("Wir fahren morgen mit dem Zug nach Berlin.", "de"),
    "es": ("Mañana vamos a la playa con mis amigos.", "es"),
    "ja": ("わたしは まいにち がっこうへ いきます。", "ja"),
}
# espeak-ng sentences it does not: declared, they are transcribed in the declared language and script.
# espeak-ng's Mandarin voice reads its characters' tone numbers aloud here ("你好，很高兴认识你。" is heard as
# "3k3,3k3,3k1,4k4 ..."), so no recogniser can give it back in characters: Mandarin is declared in the tests of
# the judges and pages (text), not spoken here; its clip serves the undeclared case below.
MANDARIN = "我们明天去北京看长城。"
DECLARED = {"ar": ("مرحبا، كيف حالك اليوم؟", "ar")}
SCRIPTS = {"zh": ("\u4e00", "\u9fff"), "ar": ("\u0600", "\u06ff")}
# Recorded Spanish prompts on which Whisper base's language token is unsure, with its first guess: the guesses'
# transcripts settle them.
UNSURE = {"conf-roll-callcomplete": "en", "vm-changeto": "es"}


@pytest.fixture(scope="module")
def recorded() -> list[Recording]:
    try:
        return [r for language in ("es", "fr") for r in asterisk(language, plain_prompts(language, 20)[:RECORDED])]
    except MissingSpeech as e:
        pytest.fail(str(e))


@pytest.fixture(scope="module")
def unsure() -> list[Recording]:
    try:
        return asterisk("es", list(UNSURE))
    except MissingSpeech as e:
        pytest.fail(str(e))


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> dict[str, Clip]:
    folder = tmp_path_factory.mktemp("languages")
    clips = {
        name: Clip(f"espeak-{name}", load_audio(speak(text, folder / f"{name}.wav", Voice(voice=voice))))
        for name, (text, voice) in SPOKEN.items()
    }
    for voice, (text, code) in DECLARED.items():
        audio = load_audio(speak(text, folder / f"{voice}.wav", Voice(voice=voice)))
        clips[f"{voice}-declared"] = Clip(f"espeak-{voice}-declared", audio, language=code)
    clips["cmn"] = Clip("espeak-cmn", load_audio(speak(MANDARIN, folder / "cmn.wav", Voice(voice="cmn"))))
    clips["en"] = Clip("espeak-en", load_audio(speak("We are going to the beach tomorrow.", folder / "en.wav")))
    french = asterisk("fr", ["agent-pass"], declared=True)[0]
    clips["fr-declared"] = french.clip
    return clips


@pytest.fixture(scope="module")
def blueprints(recorded, unsure, synthetic) -> dict[str, dict]:
    """The asr section (with the duration) of every clip, in one call of the CPU profile's recogniser."""
    asr = AsrExtractor(AsrConfig(num_threads=2))
    clips = [r.clip for r in recorded + unsure] + list(synthetic.values())
    sections = asr.extract(clips)
    assert all(isinstance(s, Section) for s in sections), sections
    return {clip.sha256: {"duration_s": clip.duration_s, **s.values} for clip, s in zip(clips, sections)}


def test_recorded_spanish_and_french_are_detected_and_transcribed_in_their_language(recorded, blueprints):
    for language in ("es", "fr"):
        mine = [r for r in recorded if r.language == language]
        for r in mine:
            blueprint = blueprints[r.clip.sha256]
            assert blueprint["language"]["code"] == language, (r.name, blueprint["language"], blueprint["asr"])
            assert blueprint["language"]["source"] == "detected" and 0 < blueprint["language"]["probability"] <= 1
            assert blueprint["asr"]["language"] == language
            assert blueprint["asr"]["model"] == "Systran/faster-whisper-base"
        rate = error_rate([(r.reference, blueprints[r.clip.sha256]["agent_response"]) for r in mine], language)
        heard = [(r.reference, blueprints[r.clip.sha256]["agent_response"]) for r in mine]
        assert rate <= MAX_ERROR[language], (language, rate, heard)


def test_an_unsure_language_token_is_settled_by_its_guesses_transcripts(unsure, blueprints):
    """The prompt "Rol de llamadas completo": the token's first guess is English (0.57), but the words decoded in
    Spanish are far more probable. "Cambiar a que carpeta": the token says Spanish (0.60), its few words decoded
    in Indonesian score a little higher: the rule weighs token and transcripts together, and Spanish stands. The
    evidence is kept in the blueprint and said in words."""
    for r in unsure:
        blueprint = blueprints[r.clip.sha256]
        evidence = blueprint["language"]["evidence"]
        assert max(evidence["token"], key=evidence["token"].get) == UNSURE[r.name], evidence
        assert {"es", "en"} <= set(evidence["guesses"]), evidence
        detection = blueprint["asr"]["language_detection"]
        assert detection.startswith("token ") and "; transcripts: " in detection and " es -" in detection, detection
        assert blueprint["language"]["code"] == "es", (r.name, detection)


def test_a_short_spanish_answer_heard_as_english_is_spanish_when_spanish_is_expected():
    """ "No hay mensajes." (1.8 s, recorded): Whisper's token says English, and Spanish is not among its first
    guesses. An answer to a Spanish instruction is also decoded in Spanish (the hypothesis test): with the
    instruction's language as the prior, it is Spanish."""
    from trace_eval.judge.languages import Asked, heard_in

    try:
        [answer] = asterisk("es", ["vm-nomore"])
    except MissingSpeech as e:
        pytest.fail(str(e))
    asr = AsrExtractor(AsrConfig(num_threads=2))
    clip = Clip(answer.clip.sha256, answer.clip.audio, expects=("es",))
    [section] = asr.extract([clip])
    assert isinstance(section, Section)
    evidence = section.values["language"]["evidence"]
    assert evidence["expects"] == ["es"] and "es" in evidence["guesses"], evidence
    heard = heard_in(Asked("es", False, "es"), section.values, 0.5)
    assert heard.in_language is True, (heard, section.values["language"])


@pytest.mark.parametrize("name", SPOKEN)
def test_espeak_speech_is_detected_in_its_language(synthetic, blueprints, name):
    blueprint = blueprints[synthetic[name].sha256]
    assert blueprint["language"]["code"] == SPOKEN[name][1], (blueprint["language"], blueprint["agent_response"])
    assert blueprint["agent_response"]


def test_english_is_still_transcribed_by_tiny_en(synthetic, blueprints):
    blueprint = blueprints[synthetic["en"].sha256]
    assert blueprint["language"]["code"] == "en" and blueprint["asr"]["language"] == "en"
    assert blueprint["asr"]["model"] == "Systran/faster-whisper-tiny.en"
    assert "beach tomorrow" in blueprint["agent_response"].lower()


def test_a_declared_language_is_honoured_and_recorded_as_declared(synthetic, blueprints):
    french = blueprints[synthetic["fr-declared"].sha256]
    assert french["language"] == {"code": "fr", "probability": None, "source": "declared"}  # no evidence kept
    assert french["asr"]["language"] == "fr" and "mot de passe" in french["agent_response"].lower()
    for voice, (_, code) in DECLARED.items():
        blueprint = blueprints[synthetic[f"{voice}-declared"].sha256]
        assert blueprint["language"] == {"code": code, "probability": None, "source": "declared"}
        assert blueprint["asr"]["language"] == code and blueprint["asr"]["model"] == "Systran/faster-whisper-base"
        first, last = SCRIPTS[code]
        assert any(first <= c <= last for c in blueprint["agent_response"]), (voice, blueprint["agent_response"])


def test_espeak_mandarin_undeclared_is_not_taken_for_mandarin(synthetic, blueprints):
    """What holds with base on espeak-ng's Mandarin: a language is detected and recorded with its probability,
    just not Mandarin; declaring it (above) is the way to such clips."""
    detected = blueprints[synthetic["cmn"].sha256]["language"]
    assert detected["source"] == "detected" and detected["code"] != "zh" and detected["probability"] is not None


def test_every_language_has_a_speaking_rate(recorded, unsure, synthetic, blueprints):
    """Words per minute where words are separated by spaces, characters per second where they are not, and the
    signal's syllable rate everywhere."""
    clips = {r.clip.sha256: r.clip for r in recorded + unsure} | {c.sha256: c for c in synthetic.values()}
    for sha, blueprint in blueprints.items():
        language = blueprint["asr"]["language"]
        rates = RateExtractor().extract_one(Clip(sha, None, blueprint))
        values = rates.values[PROPS]
        if language in ("zh", "ja"):
            assert values["Speech_Rate_Chars_Per_S"] and values["Articulation_Rate_Chars_Per_S"], (sha, rates)
            assert values["Speech_Rate_WPM"] is None
            assert rates.null_reasons[f"{PROPS}.Speech_Rate_WPM"] == (
                f"words are not separated by spaces in {language}: see Speech_Rate_Chars_Per_S"
            )
        elif blueprint["transcript_quality"]["reliable"]:
            assert values["Speech_Rate_WPM"] and 40 <= values["Speech_Rate_WPM"] <= 400, (sha, values)
            assert values["Speech_Rate_Chars_Per_S"] is None
        voicing = VoicingExtractor().extract_one(clips[sha]).values["agent_voicing"]
        assert voicing["Syllable_Rate_Per_S"], (sha, voicing)
