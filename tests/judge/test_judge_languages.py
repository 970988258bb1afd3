"""The judges in every language (trace_eval/judge/languages.py and its hooks in cues, prompts and evidence):
quoted words in any script and quotation marks, an answer in another language than asked failing Content,
manner requests read with each language's table, and a language without one left undetermined."""

from __future__ import annotations

from dataclasses import replace

import pytest
from cues_verdict import KEYS, verdict
from llm_server import blueprint

from trace_eval.judge.cues import judge_case, paralinguistic_cues, spoken_words
from trace_eval.judge.evidence import language_summary, rows
from trace_eval.judge.instructions import read_instruction
from trace_eval.judge.languages import (
    ClipLanguage,
    asked_language,
    heard_instruction_languages,
    held_language,
    instruction_language,
    manner_requests,
)
from trace_eval.judge.prompts import Case, blueprint_view, load_prompt


def spoken(code: str | None, probability: float | None = 0.95, source: str = "detected") -> dict:
    return {"code": code, "probability": probability, "source": source} if code else None


def said(transcript: str, language: str | None, probability: float | None = 0.95, **values) -> dict:
    """A response's blueprint values, in `language` (detected with `probability`)."""
    bp = blueprint(transcript, **values)
    bp["language"] = spoken(language, probability)
    return bp


def detected(code: str, probability: float = 0.95) -> ClipLanguage:
    return ClipLanguage(code, probability, "detected")


# -- quoted words in any script --------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, quoted",
    [
        ("Dis « Bonjour à tous » lentement.", "Bonjour à tous"),
        ("Dis\u00a0«\u202fça va\u202f» doucement.", "ça va"),  # French spacing inside the marks
        ("Sag „Guten Morgen“ bitte.", "Guten Morgen"),
        ("Sag »Gute Nacht« leise.", "Gute Nacht"),
        ("Sag ‚Tschüss‘ fröhlich.", "Tschüss"),
        ("Di ‹hola› despacio.", "hola"),
        ("请说「今天天气很好」。", "今天天气很好"),
        ("请说『早上好』", "早上好"),
        ("请大声说“你好”", "你好"),
    ],
)
def test_quotation_marks_of_every_language(text, quoted):
    assert read_instruction(text).quoted == quoted


@pytest.mark.parametrize(
    "instruction, language, right, wrong",
    [
        ("Di «Buenos días, señor» por favor.", "es", "Buenos dias senor.", "Hasta mañana a todos."),
        ("Dis « Ça va très bien » s’il te plaît.", "fr", "ca va tres bien", "Je ne sais pas du tout."),
        ("Sag „Grüße aus München“.", "de", "Grüsse aus Munchen.", "Hallo Welt, wie geht es?"),
        ("请说「今天天气很好」。", "zh", "今天天气很好。", "我不知道你在说什么。"),
        ("「ありがとうございます」と言ってください。", "ja", "ありがとうございます", "すみません、わかりません"),
    ],
)
def test_quoted_words_match_with_accents_case_and_characters_folded(instruction, language, right, wrong):
    answer = verdict(instruction, said(right, language), said(wrong, language), detected(language))
    assert answer["content"] == "1", answer["reasoning"]
    assert "says 100% of the quoted words" in answer["reasoning"]


# -- the language an answer is in ---------------------------------------------------------------------


def test_the_same_sentence_in_another_language_than_asked_fails_content():
    asked = 'Repite "hola, buenos días".'
    answer = verdict(asked, said("Hola, buenos días.", "es"), said("Hola, buenos días.", "pt", 0.81), detected("es"))
    assert answer["content"] == "1"
    assert "response 2 in Portuguese, not Spanish expected (the instruction's language)" in answer["reasoning"]
    assert answer["confidence"]["content"] > 0.5


def test_an_answer_in_another_language_fails_even_a_free_form_question():
    question = "¿Cuál es la capital de Francia?"
    answer = verdict(
        question, said("La capital de Francia es París.", "es"), said("The capital is Paris.", "en"), detected("es")
    )
    assert answer["content"] is None  # response 1: whether it answers well is beyond the rules
    assert "no quoted words" in answer["undetermined"]["content"]
    assert "response 2 in English, not Spanish expected" in answer["reasoning"]
    both_english = verdict(question, said("Paris.", "en"), said("The capital is Paris.", "en"), detected("es"))
    assert both_english["content"] == "both_bad"


def test_a_detection_too_unsure_is_not_held_against_an_answer():
    asked = 'Repite "hola, buenos días".'
    answer = verdict(asked, said("Hola, buenos días.", "es"), said("Hola, buenos días.", "gl", 0.3), detected("es"))
    assert answer["content"] == "both_good"
    assert "heard as Galician only with probability 0.30" in answer["reasoning"]


def no_hay_mensajes(spanish_logprob: float = -2.32) -> dict:
    """Asterisk's recorded Spanish "No hay mensajes." (1.8 s) as Stage 1 heard it: its token says English, so its
    transcript is English; tested in Spanish, the answer to a Spanish instruction (the evidence as recorded)."""
    bp = said("No, I must not say his.", "en", 0.537)
    bp["duration_s"] = 1.84
    guess = {"loops": False}
    bp["language"]["evidence"] = {
        "speech_s": 1.84,
        "token": {"en": 0.412, "he": 0.103, "yo": 0.098, "fa": 0.093, "la": 0.061, "fr": 0.034, "es": 0.029},
        "expects": ["es"],
        "guesses": {
            "en": guess | {"text": "No, I must not say his.", "logprob": -5.74, "tokens": 8, "reads": [["en", 0.86]]},
            "he": guess | {"text": "‫לא עיימא זמן שעז.", "logprob": -13.9, "tokens": 13, "reads": [["he", 1.0]]},
            "la": guess | {"text": "No, I must, men, sayes.", "logprob": -10.95, "tokens": 10, "reads": [["en", 0.17]]},
            "es": guess
            | {"text": "No hay más mensajes.", "logprob": spanish_logprob, "tokens": 6, "reads": [["es", 0.98]]},
        },
        "english": {"text": "No I must means that he's.", "logprob_per_token": -0.905, "tokens": 8, "loops": False},
    }
    return bp


def test_an_answer_held_to_the_expected_language_is_read_in_it_where_that_decoding_is_the_likelier():
    asked = "Di «No hay mensajes.»"
    english = said("No more messages.", "en", 0.99)
    answer = verdict(asked, no_hay_mensajes(), english, detected("es"))
    assert answer["content"] == "1"
    assert (
        "response 1 read from its Spanish decoding (log-probability -2.3 against -5.7 in English), "
        "response 1 says 100% of the quoted words" in answer["reasoning"]
    )
    # Where its Spanish decoding is the less likely, the answer is English, its words those of its transcript.
    unlikely = verdict(asked, no_hay_mensajes(spanish_logprob=-9.0), english, detected("es"))
    assert unlikely["content"] == "both_bad" and "decoding" not in unlikely["reasoning"]
    assert "response 1 says 15% of the quoted words" in unlikely["reasoning"]
    assert "response 1 in English, not Spanish expected" in unlikely["reasoning"]
    # An LLM judge is shown the same words, and why.
    spanish, english = no_hay_mensajes(), said("No more messages.", "en", 0.99)
    case = Case(
        "x",
        None,
        asked,
        (blueprint_view(spanish, KEYS), blueprint_view(english, KEYS)),
        stored=(spanish, english),
        instruction_language=detected("es"),
    )
    why = "its words read from its Spanish decoding (log-probability -2.3 against -5.7 in English)"
    trace = load_prompt("trace").render(case)[1]["content"]
    assert f'{why}):\n{{"agent_response": "No hay más mensajes.",' in trace
    transcript = load_prompt("transcript").render(case)[1]["content"]
    assert f"{why}):\nNo hay más mensajes.\n" in transcript


def test_a_language_asked_for_is_the_one_expected_and_its_quote_may_be_to_translate():
    # The answer is asked in Spanish: saying the quoted words in English is no longer right ...
    answer = verdict(
        'Say "hasta luego" in Spanish.', said("Hasta luego.", "es"), said("Hasta luego.", "en"), detected("en")
    )
    assert answer["content"] == "1"
    assert "response 2 in English, not Spanish expected (asked for in the instruction)" in answer["reasoning"]
    # ... and a translation of the quoted words is not a failure to say them: undetermined, never failed.
    translated = verdict(
        'Say "good morning" in Spanish.', said("Buenos días.", "es"), said("Good morning.", "en"), detected("en")
    )
    assert translated["content"] is None
    assert "may be to translate into Spanish" in translated["undetermined"]["content"]


@pytest.mark.parametrize(
    "instruction, language, asked",
    [
        ("Answer in French, please.", "en", "fr"),
        ("Translate 'good night' into German.", "en", "de"),
        ("Tell me a story in Mandarin.", "en", "zh"),
        ("How do you say 'thank you' in Japanese?", "en", None),  # a question about a word, not its answer's language
        ("Responde en inglés.", "es", "en"),
        ("Tradúcelo al francés.", "es", "fr"),
        ("¿Cómo se dice 'gato' en inglés?", "es", None),
        ("Réponds en espagnol, s'il te plaît.", "fr", "es"),
        ("Comment dit-on « chat » en allemand ?", "fr", None),
        ("Antworte bitte auf Deutsch.", "de", "de"),
        ("Übersetze das ins Englische.", "de", "en"),
        ("请用中文回答。", "zh", "zh"),
        ("用英语说一遍。", "zh", "en"),
        ("“猫”用英语怎么说？", "zh", None),
        ("Réponds en anglais.", None, "en"),  # language unknown: every table is read
    ],
)
def test_requests_to_answer_in_a_language(instruction, language, asked):
    assert asked_language(read_instruction(instruction).manner, language) == asked


def test_a_detection_the_written_instruction_contradicts_gives_way_to_the_text():
    # Whisper base hears espeak-ng's Spanish as Thai: the text, in Latin letters, says it is not Thai, and reads
    # as Spanish.
    heard = {"language": {"code": "th", "probability": 0.79, "source": "detected"}}
    language = instruction_language({}, heard, 'Di "Su mensaje ha sido guardado."')
    assert language is not None and (language.code, language.source) == ("es", "text")
    assert language.probability is not None and language.probability >= 0.5
    assert language.evidence == "detected as Thai (th), not written in the latin script of its text"
    answer = verdict(
        'Di "Su mensaje ha sido guardado."',
        said("Su mensaje ha sido guardado.", "es"),
        said("Votre message a été sauvegardé.", "fr"),
        language,
    )
    assert answer["content"] == "1" and "in French, not Spanish expected" in answer["reasoning"]
    assert answer["paralinguistics"] == "both_good"  # read with the Spanish table: no manner asked
    # A text too short to tell: the detection is refused and nothing takes its place.
    short = instruction_language({}, heard, 'Di "Hola"')
    assert short is not None and short.code is None
    assert short.reason == (
        "detected as Thai (th), not written in the latin script of its text; its text too short to tell"
    )
    # Where the text is in the detected language's script, or declared, the language stands.
    assert instruction_language({}, heard, "พูดว่า สวัสดี").code == "th"
    assert instruction_language({"instruction_language": "es"}, heard, "Di hola").code == "es"


def test_an_unsure_detection_gives_way_to_a_text_that_reads_surely_as_one_language():
    # espeak-ng's Spanish, slowed, heard as Latin at 0.46: no language held against an English answer that says
    # the cognates of the quoted sentence ("conference", "extended") before the text was read.
    heard = {"language": {"code": "la", "probability": 0.46, "source": "detected"}, "agent_response": "di la"}
    text = "Di «La conferencia ha sido extendida.»"
    language = instruction_language({}, heard, text)
    assert language is not None and (language.code, language.source) == ("es", "text")
    assert language.describe() == (
        "Spanish (es), read from the instruction's text with probability 0.82 "
        "(its audio: Latin (la), detected with probability 0.46)"
    )
    right = said("La conferencia ha sido extendida.", "es", 0.77)
    english = said("The conference has been extended.", "en", 0.99)
    answer = verdict(text, english, right, language)
    assert answer["content"] == "2", answer["reasoning"]
    assert "response 1 in English, not Spanish expected" in answer["reasoning"]
    # A detection that is sure, and that a sure text contradicts (espeak-ng's Spanish heard as Finnish at 0.80).
    finnish = {"language": {"code": "fi", "probability": 0.8, "source": "detected"}}
    told = instruction_language({}, finnish, text)
    assert told is not None and (told.code, told.source) == ("es", "text")
    assert "its audio: Finnish (fi), detected with probability 0.80, while its text reads as Spanish" in told.describe()
    # A sure detection the text agrees with stands as detected.
    spanish = {"language": {"code": "es", "probability": 0.9, "source": "detected"}}
    assert instruction_language({}, spanish, text).source == "detected"


def test_where_neither_audio_nor_text_tells_the_language_an_answer_is_not_passed_on_its_words():
    heard = {"language": {"code": "es", "probability": 0.27, "source": "detected"}}
    text = "Di «La conferencia»"  # too short for its language to be read
    language = instruction_language({}, heard, text)
    assert language is not None and language.code is None
    assert language.reason == (
        "its audio: Spanish (es), detected with probability 0.27; its text read as Spanish (es) only with "
        "probability 0.28"
    )
    english = said("The conference.", "en", 0.99)
    silent = said("", None)
    answer = verdict(text, english, silent, language)
    assert answer["content"] is None  # not "1": response 1 says the cognate, but in which language was it asked?
    assert (
        "the instruction's language could not be told, so response 1 may not be in it"
        in (answer["undetermined"]["content"])
    )
    wrong = verdict(text, said("Good night to you all.", "en", 0.99), silent, language)
    assert wrong["content"] == "both_bad"  # an answer that does not say the words fails in any language


def test_a_spoken_instruction_whose_audio_is_unsure_is_read_from_its_transcript():
    heard = {
        "language": {"code": "es", "probability": 0.27, "source": "detected"},
        "agent_response": "Di, la conferencia ha sido extendida.",
    }
    language = instruction_language({}, heard, None)
    assert language is not None and (language.code, language.source) == ("es", "transcript")
    assert "its audio: Spanish (es), detected with probability 0.27" in language.describe()


# -- manner requests per language ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, language, cues",
    [
        ("Dilo despacio y en voz baja.", "es", ["slow", "quiet"]),
        ("Dilo con alegría y más fuerte.", "es", ["loud", "happy"]),
        ("Habla cada vez más rápido.", "es", ["speeding up"]),
        ("Dilo con voz grave y triste.", "es", ["low pitch", "sad"]),
        ("Dímelo con un tono solemne.", "es", ["solemne (a manner)"]),
        ("Dis-le lentement, d'une voix triste.", "fr", ["slow", "sad"]),
        ("Chuchote « bonne nuit ».", "fr", ["quiet"]),
        ("Parle plus fort, d'une voix aiguë.", "fr", ["loud", "high pitch"]),
        ("Chante « joyeux anniversaire » en colère.", "fr", ["angry", "singing"]),
        ("Sag es leise und traurig.", "de", ["quiet", "sad"]),
        ("Sprich immer schneller.", "de", ["speeding up"]),
        ("Sag es wütend mit tiefer Stimme.", "de", ["low pitch", "angry"]),
        ("Sag „Hallo“ fröhlich und langsam.", "de", ["slow", "happy"]),
        ("请慢慢地、小声地说。", "zh", ["slow", "quiet"]),
        ("用开心的语气大声说。", "zh", ["loud", "happy"]),
        ("先慢后快地说这句话。", "zh", ["slow then fast"]),
        ("用低沉的声音生气地说。", "zh", ["low pitch", "angry"]),
        ("请用快乐的语气说「生日快乐」。", "zh", ["happy"]),  # 快乐 is happy, not fast; the quote is not read
        ("请用温柔的语气说。", "zh", ["warmth"]),
        ("Dilo, por favor.", "es", []),
    ],
)
def test_manner_requests_in_spanish_french_german_and_mandarin(text, language, cues):
    assert [c.name for c in paralinguistic_cues(text, language=language)] == cues
    assert manner_requests(read_instruction(text).manner, language) == cues


def test_a_manner_asked_in_spanish_is_measured():
    asked = 'Di "hola" en voz baja.'
    answer = verdict(asked, said("Hola.", "es", lufs=-36.0), said("Hola.", "es", lufs=-20.0), detected("es"))
    assert answer["paralinguistics"] == "1"
    assert "quiet: -36.0 LUFS ok vs -20.0 LUFS not ok" in answer["reasoning"]
    # Asked for a level, the quieter answer is no Voice Quality loss.
    assert answer["voice_quality"] == "both_good"


def test_a_slow_mandarin_answer_is_measured_by_its_syllable_rate():
    asked = "请慢慢地说「你好」。"
    slow, fast = said("你好。", "zh", wpm=None), said("你好。", "zh", wpm=None)
    slow["agent_voicing"]["Syllable_Rate_Per_S"], fast["agent_voicing"]["Syllable_Rate_Per_S"] = 2.8, 6.4
    answer = verdict(asked, slow, fast, detected("zh"))
    assert answer["paralinguistics"] == "1"
    assert "2.80 syllables/s ok vs 6.40 syllables/s not ok" in answer["reasoning"]


def test_a_language_without_a_table_leaves_the_manner_undetermined_never_guessed():
    asked = "「こんにちは」とゆっくり言ってください。"
    answer = verdict(asked, said("こんにちは", "ja"), said("さようなら", "ja"), detected("ja"))
    assert answer["content"] == "1"  # the quoted words are read in any script
    assert answer["paralinguistics"] is None
    why = "manner asked: not understood in Japanese: the cues rules have no table of Japanese manner words"
    assert answer["undetermined"]["paralinguistics"] == f"{why} for both responses"


def test_an_instruction_whose_language_could_not_be_told_leaves_the_manner_undetermined():
    unknown = ClipLanguage(None, None, None, "no speech detected")
    answer = verdict('Say "hello" slowly.', said("Hello.", "en"), said("Hello.", "en"), unknown)
    assert answer["paralinguistics"] is None
    why = "manner asked: not understood: the instruction's language could not be told for both responses"
    assert answer["undetermined"]["paralinguistics"] == why
    # Not told by a recogniser that knows English only, which decoded it in English: read as English, as
    # before languages were recorded, and no answer is held to a language.
    english_only = ClipLanguage(None, None, None, "not detected: whisper-tiny.en-ct2 knows English only", "en")
    told = verdict('Say "hello" slowly.', said("Hello.", "es", wpm=100), said("Hello.", "en", wpm=240), english_only)
    assert (told["paralinguistics"], told["content"]) == ("1", "both_good")
    # Never recorded at all (blueprints made before languages were): read as English, as it always was.
    assert (
        verdict('Say "hello" slowly.', blueprint("Hello.", wpm=100), blueprint("Hello.", wpm=240), None)[
            "paralinguistics"
        ]
        == "1"
    )


# -- what the LLM judges and the run's summary see --------------------------------------------------------


def test_the_prompts_state_each_clips_language_and_mark_one_that_differs():
    bp1, bp2 = said("Hola.", "es"), said("Bonjour.", "fr", 0.9)
    case = Case(
        "x",
        None,
        'Di "hola".',
        (blueprint_view(bp1, KEYS), blueprint_view(bp2, KEYS)),
        stored=(bp1, bp2),
        instruction_language=ClipLanguage("es", None, "declared"),
    )
    for name in ("trace", "transcript"):
        system, user = load_prompt(name).render(case)
        assert "another language than the one asked for is not acceptable" in system["content"]
        text = user["content"]
        assert "language: Spanish (es), declared)" in text
        assert "(language: Spanish (es), detected with probability 0.95)" in text
        assert "(language: French (fr), detected with probability 0.90; not the instruction's language (Spanish))" in (
            text
        )
    assert "another language than the one asked for" in load_prompt("audio").system


def test_the_run_summary_counts_the_languages_heard():
    spanish = ClipLanguage("es", 0.97, "detected")
    hello = said("Hello.", "en")
    heard = language_summary(
        [
            ("a/1.wav", spanish, said("Hola.", "es")),
            ("b/1.wav", spanish, hello),
            ("c/1.wav", spanish, {**said("...", None), "language": None}),
            ("b/1.wav", spanish, hello),  # the same answer in a second pair (`--schedule all`): one clip
        ]
    )
    assert heard == {"responses": {"es": 1, "en": 1, "not known": 1}, "instructions": {"es": 3}, "differ": 1, "of": 3}
    line = "response clips es 1, en 1, not known 1; 1 of 3 in another language than their instruction's"
    assert ("language", line) in rows({"clips": 3, "groups": {}, "languages": heard})
    assert language_summary([("a.wav", None, blueprint("Hello."))]) is None  # nothing recorded: nothing to say


@pytest.mark.parametrize(
    "transcript, language, read",
    [
        ("Say the conference has been extended.", "en", 'say "the conference has been extended"'),
        ("Please repeat after me: good night.", None, 'please repeat after me "good night"'),
        (
            "Por favor, repita la frase la conferencia ha sido extendida.",
            "es",
            'por favor, repita la frase "la conferencia ha sido extendida"',
        ),
        ("Di, la conferencia ha sido extendida.", "und", 'di "la conferencia ha sido extendida"'),
        ("Dis, votre message a été sauvegardé.", "fr", 'dis "votre message a ete sauvegarde"'),
        ("Sag bitte: guten Morgen.", "de", 'sag bitte "guten morgen"'),
        ("Say potato in a British accent.", "en", None),  # more than words to say: left as it is
        ("Dilo despacio: buenas noches.", "es", None),  # "dilo" is no lead-in of the table
        ("What is the capital of France?", "en", None),
        ('Say "hello" slowly.', "en", None),  # quoted already
    ],
)
def test_a_spoken_instruction_s_words_to_say_are_read_after_its_lead_in(transcript, language, read):
    found = spoken_words(transcript, language)
    assert (found[0] if found else None) == read


def test_a_spoken_instruction_is_judged_on_the_words_its_transcript_gives():
    spoken = ClipLanguage("es", 0.71, "detected")
    right = said("La conferencia ha sido extendida.", "es", 0.8)
    english = said("The conference has been extended.", "en", 0.99)
    views = (blueprint_view(english, KEYS), blueprint_view(right, KEYS))
    case = Case(
        "x", "Por favor, repita la frase la conferencia ha sido extendida.", None, views, stored=(english, right)
    )
    answer = judge_case(replace(case, instruction_language=spoken))
    assert answer["content"] == "2", answer["reasoning"]
    assert answer["reasoning"].startswith(
        "Content: words to say read from the instruction's transcript, after “por favor, repita la frase”"
    )
    # Without the lead-in rule the transcript quotes nothing and Content has nothing to check the words against.
    free = judge_case(replace(case, instruction_language=spoken, instruction_transcript="Tell me about conferences."))
    assert free["content"] is None


def test_an_instruction_of_unknown_language_that_asks_for_nothing_but_its_words_asks_for_no_manner():
    unknown = ClipLanguage(None, None, None, "its audio: Spanish (es), detected with probability 0.27")
    right, other = said("Hola.", "es"), said("Hello.", "en")
    # "Di" and the quote: no manner asked, in whatever language, so Paralinguistics is not left undetermined.
    assert verdict("Di «Hola.»", right, other, unknown)["paralinguistics"] == "both_good"
    # Words beyond the lead-in may ask for a manner that cannot be read without the language.
    asked = verdict("Dilo suavecito «Hola.»", right, other, unknown)
    assert "manner asked: not understood" in asked["undetermined"]["paralinguistics"]


@pytest.mark.parametrize(
    ("text", "fields", "heard", "held"),
    [
        ("Translate into Spanish: the weather is very nice today, and we are going out.", {}, None, "es"),
        ("Réponds en espagnol : quel temps fait-il aujourd'hui ?", {"instruction_language": "fr"}, None, "es"),
        ("Please say the following sentence out loud: good morning to everyone here.", {}, "fr", "en"),
        # quoted words are words to say, not a request; a question about words asks for none
        ('Say "I always answer in Spanish" out loud, please, to everyone here.', {}, None, "en"),
        ("How do you say good morning in Spanish?", {}, None, "en"),
        (None, {}, "es", "es"),  # spoken only: as its audio was heard
        (None, {"instruction_language": "fr"}, "es", "fr"),  # declared first
        (None, {}, None, None),
    ],
)
def test_the_language_answers_are_held_to_is_the_one_asked_for_else_the_instructions(text, fields, heard, held):
    """Stage 1 tests the answers in the language the judge holds them to: asked for in the written instruction's
    words, else the instruction's own (declared, its text, its audio as heard)."""
    from trace_eval.items import Pair

    pair = Pair("p", "q.wav", text, "a.wav", "b.wav", languages=fields)
    assert held_language(pair, heard) == held
    assert pair.expected_languages(held) == ({"a.wav": held, "b.wav": held} if held else {})


def test_the_instructions_heard_are_those_only_their_audio_tells_and_surely():
    """Stage 1 tests an item's answers in its spoken instruction's language where neither the manifest nor the
    instruction's text tells it: only for instructions heard at least 0.5 surely, in no language otherwise."""
    from trace_eval.items import Pair

    def item(n: int, **fields) -> Pair:
        return Pair(f"p{n}", f"q{n}.wav", fields.pop("text", None), f"a{n}.wav", f"b{n}.wav", **fields)

    stored = {
        "q0.wav": said("Di, hola.", "es", 0.9),
        "q1.wav": said("Dis, bonjour.", "fr", 0.3),  # unsure
        "q2.wav": said("Di, hola.", "it", 0.9),  # declared Spanish
        "q3.wav": said("Say hello.", "en", 0.9),  # its text tells it
        "q4.wav": None,  # not heard
        "q5.wav": said("", None),  # no language heard
    }
    pairs = [
        item(0),
        item(1),
        item(2, languages={"instruction_language": "es"}),
        item(3, text="Please say the following sentence out loud: good morning to everyone here."),
        item(4),
        item(5),
    ]
    assert [p.waits_on_instruction() for p in pairs] == [True, True, False, False, True, True]
    assert heard_instruction_languages(pairs, stored.get) == {"q0.wav": "es"}
    assert pairs[0].expected_languages("es") == {"a0.wav": "es", "b0.wav": "es"}
    # An answer declared in its own language waits on nothing: no answer of the item is tested.
    both_declared = item(6, languages={"audio1_language": "es", "audio2_language": "en"})
    assert not both_declared.waits_on_instruction() and both_declared.expected_languages("fr") == {}
