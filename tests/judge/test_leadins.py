"""The words to say in a spoken instruction's transcript, found after a lead-in that may have been misheard.

The transcripts are Whisper base's of espeak-ng instructions (scripts/bench_spoken_instructions.py), written as
the recogniser wrote them.
"""

from __future__ import annotations

import pytest

from trace_eval.judge import leadins
from trace_eval.judge.cues import spoken_words
from trace_eval.judge.languages import asks_beyond_saying, spoken_quote
from trace_eval.judge.leadins import LEADINS, find_lead_in


@pytest.mark.parametrize(
    "transcript, language, quoted, heard, phrase",
    [
        # "Di, la conferencia ...": the lead-in heard as a letter, before the pause.
        ("D, la conferencia A, C, V, X, D, Y.", "es", "la conferencia a, c, v, x, d, y", "d", "di"),
        ("Sí, el pego web en el Camil", "es", "el pego web en el camil", "si", "di"),
        # "Lee: La biblioteca ...", heard "Le:" (as near "lea": the first in order).
        ("Le: la biblioteca cierra los domingos.", "es", "la biblioteca cierra los domingos", "le", "lea"),
        # "Dites :" heard "dite,"; "Répétez la phrase" heard "et pêter la phrase".
        ("dite, la bibliothèque fèmme de mâche.", "fr", "la bibliotheque femme de mache", "dite", "dites"),
        ("et pêter la phrase le temps pas mal diteur.", "fr", "le temps pas mal diteur", "et peter la phrase",
         "repetez la phrase"),
        ("S'il te plaît, oipette, j'aime le café ou l'air.", "fr", "j'aime le cafe ou l'air",
         "s'il te plait, oipette", "s'il te plait repete"),
        # "Please say the train leaves ...", heard "Please save a train ...".
        ("Please save a train leaving a gate in the morning.", "en", "a train leaving a gate in the morning",
         "please save", "please say"),
        # A lead-in glued to the next word.
        ("Repeat after methe windows are open.", "en", "the windows are open", "repeat after me", "repeat after me"),
        # "Di, la conferencia ...", heard "Dila conferencia": read as "diga", the article goes with it (not sure).
        ("Dila conferencia ha sido extendida.", "es", "conferencia ha sido extendida", "dila", "diga"),
    ],
)  # fmt: skip
def test_a_misheard_lead_in_is_found(transcript, language, quoted, heard, phrase):
    lead = find_lead_in(transcript, language)
    assert lead is not None
    assert (lead.quoted, lead.heard, lead.phrase) == (quoted, heard, phrase)
    assert not lead.sure and lead.ratio > 0


@pytest.mark.parametrize(
    "transcript, language, quoted",
    [
        # The lead-in's remains are left out of the words to say.
        ("Read this sentence aloud, my sister lives in London.", "en", "my sister lives in london"),
        ("read the sentence alone. There are no new messages.", "en", "there are no new messages"),
        ("Por favor, repite la frase no hay mensajes nuevos.", "es", "no hay mensajes nuevos"),
        ("repeat after me, it is very hot today.", "en", "it is very hot today"),
        ("Sag bitte: guten Morgen.", "de", "guten morgen"),
    ],
)
def test_the_lead_in_s_remains_are_not_words_to_say(transcript, language, quoted):
    lead = find_lead_in(transcript, language)
    assert lead is not None and lead.quoted == quoted


@pytest.mark.parametrize(
    "transcript, language",
    [
        ("What is the capital and friends?", "en"),
        ("Describe your favorite meal.", "en"),
        ("Tell me a joke about cats.", "en"),
        ("cuéntame un chise solegato.", "es"),
        ("de tonas as frutas, cual prefieres.", "es"),  # "de" is no "di" without the pause after a lead-in
        ("donde está la estación.", "es"),
        ("à courtes-moi une blague.", "fr"),
        ("Le train part à huit heures.", "fr"),  # Spanish "lee" counts only heard as written in French
        ("Hello.", "und"),
        ("", "und"),
    ],
)
def test_a_transcript_without_a_lead_in_is_left_alone(transcript, language):
    assert find_lead_in(transcript, language) is None
    assert spoken_words(transcript, language) is None


@pytest.mark.parametrize(
    "code, transcript, quoted",
    [
        ("en", "Could you repeat the library is closed on Sundays?", "the library is closed on sundays"),
        ("es", "Repita después de mí: buenas noches.", "buenas noches"),
        ("fr", "Répétez après moi : bonne nuit.", "bonne nuit"),
        ("de", "Wiederholen Sie den Satz: gute Nacht.", "gute nacht"),
        ("zh", "请跟我说：晚安。", "晚安。"),
    ],
)
def test_every_language_s_lead_in_is_found_and_tells_its_language(code, transcript, quoted):
    assert code in LEADINS
    for language in (code, "und"):
        lead = find_lead_in(transcript, language)
        assert lead is not None and lead.language == code and lead.sure
        assert lead.quoted.rstrip("。") == quoted.rstrip("。")


def test_another_language_s_lead_in_counts_only_heard_as_written():
    # A Spanish instruction whose audio was surely heard as English still gives its words to say ...
    lead = find_lead_in("Di, la conferencia ha sido extendida.", "en")
    assert lead is not None and lead.language == "es" and lead.quoted == "la conferencia ha sido extendida"
    # ... but a misheard one is read only in its own language, or where the language is not known.
    assert find_lead_in("D, la conferencia ha sido extendida.", "en") is None
    assert find_lead_in("D, la conferencia ha sido extendida.", "und") is not None
    assert find_lead_in("D, la conferencia ha sido extendida.", "gl") is not None  # no lead-ins of Galician


def test_a_language_never_recorded_prefers_english():
    lead = spoken_quote("Please repeat after me: good night.", None)
    assert lead is not None and (lead.language, lead.quoted) == ("en", "good night")


def test_the_judge_says_which_words_it_compared_where_the_split_is_not_sure():
    read, how = spoken_words("D, la conferencia ha sido extendida.", "es")
    assert read == 'd "la conferencia ha sido extendida"'
    assert how == (
        "after “d”, read as Spanish “di” (1 edit), so the words compared are “la conferencia ha sido extendida”"
    )
    assert spoken_words("Di, la conferencia ha sido extendida.", "es") == (
        'di "la conferencia ha sido extendida"',
        "after “di”",
    )


# Whisper base's transcripts of espeak-ng's "Di, ..." and of Asterisk's recorded answers
# (scripts/bench_bilingual.py): the lead-in misheard beyond what the transcript alone can tell.
ENTERING = "clave incorrecta, por favor ingreses un número de agentes seguidos por la tecla de número."
LOGIN = "login incorrect. Please enter your agent number followed by the pound key."


@pytest.mark.parametrize(
    "transcript, answers, quoted, heard, echo",
    [
        # "Di," heard as "Y": 2 edits, no pause; the first answer says the rest.
        ("Y clave intomeca, por favor, ingrese su número de agentes seguimos por la clave número.", (ENTERING, LOGIN),
         "clave intomeca, por favor, ingrese su numero de agentes seguimos por la clave numero", "y", 1),
        # The lead-in lost: the second answer says the whole transcript.
        ("para expulsar el participante impresado más recientemente en la conferencia.",
         ("to remove the participant who most recently joined the conference.",
          "puede expulsar al participante ingresado, más recientemente en la conferencia."),
         "para expulsar el participante impresado mas recientemente en la conferencia", "", 2),
    ],
)  # fmt: skip
def test_an_answer_that_says_the_transcript_s_end_tells_where_the_words_to_say_begin(
    transcript, answers, quoted, heard, echo
):
    assert find_lead_in(transcript, "es") is None  # the transcript alone: no lead-in near enough
    lead = find_lead_in(transcript, "es", answers)
    assert lead is not None and (lead.quoted, lead.heard, lead.echo) == (quoted, heard, echo)
    assert lead.language == "es" and not lead.sure
    read, how = spoken_words(transcript, "es", answers=answers)
    assert read == (f'{heard} "{quoted}"' if heard else f'"{quoted}"')
    assert f"response {echo} saying" in how


@pytest.mark.parametrize(
    "transcript, answers",
    [
        # An echo of an instruction that asks for something else: its first words are no lead-in.
        ("Cuéntame sobre la conferencia de mañana.", ("la conferencia de mañana", LOGIN)),
        ("Traduce al inglés: clave incorrecta, por favor ingrese su número.", ("clave incorrecta, por favor ingrese "
                                                                                "su número", LOGIN)),
        # Answers that say something else, or too little to tell.
        ("Y clave intomeca, por favor, ingrese su número de agentes.", (LOGIN, "Hasta luego.")),
        ("Y adiós.", ("adiós", "")),
    ],
)  # fmt: skip
def test_an_answer_that_does_not_echo_a_lead_in_s_words_tells_nothing(transcript, answers):
    assert find_lead_in(transcript, "es", answers) is None
    assert spoken_words(transcript, "es", answers=answers) is None


def test_a_lead_in_heard_closely_is_not_moved_by_the_answers():
    transcript = "Di, la conferencia ha sido extendida."
    assert find_lead_in(transcript, "es", ("ha sido extendida", "")) == find_lead_in(transcript, "es")


@pytest.mark.parametrize(
    "transcript, language",
    [
        # Whisper base's transcripts of espeak-ng's translate instructions (scripts/bench_spoken_pairs.py): "how do
        # you say" is 4 edits from "now can you say", but the instruction asks how something is said.
        ("How do you say this in Spanish? Please try again.", "en"),
        ("Como se dice en inglés, todos los representantes se encuentran ocupados.", "es"),
        ("Comment dit-on en anglais : la conférence est terminée.", "fr"),
    ],
)
def test_a_question_about_how_words_are_said_gives_no_words_to_say(transcript, language):
    assert spoken_words(transcript, language) is None


def test_a_lead_in_misheard_as_a_manner_word_asks_for_no_manner():
    # "Dites, ..." heard as "Vite, ..." (fast): the lead-in's letters, not a pace asked for.
    read, how = spoken_words("vite, la conférence et moteur enregistrée.", "fr")
    assert read == 'vite "la conference et moteur enregistree"'
    assert "read as French “dites” (2 edits)" in how
    # A manner word between the lead-in and a colon is the instruction's own.
    assert spoken_words("Dis vite : la conférence est terminée.", "fr") is None


@pytest.mark.parametrize(
    "transcript, language",
    [
        ("Say potato in a British accent.", "en"),  # asks beyond saying: left as it is
        ("Dilo despacio: buenas noches.", "es"),  # a manner beside the lead-in
        ('Say "hello" slowly.', "en"),  # quoted already
    ],
)
def test_an_instruction_that_asks_more_than_saying_is_left_as_it_is(transcript, language):
    assert spoken_words(transcript, language) is None


def test_a_manner_word_among_the_words_to_say_is_one_of_them_where_an_answer_says_them_all():
    # Asterisk's "I am afraid I was unable to ..." and "... el tono grave": words, not a fearful or low
    # voice asked for, where an answer says every one of them.
    transcript = "For repeat the phrase, I am afraid I was unable to create a connection to the server."
    answers = ("Lo siento, no fue posible.", "I'm afraid I was unable to create a connection to the server.")
    read, how = spoken_words(transcript, "en", answers=answers)
    assert read.endswith('"i am afraid i was unable to create a connection to the server"')
    assert "its manner words read as words to say, response 2 saying them all" in how
    assert spoken_words(transcript, "en") is None  # with no answer to tell, a manner may be asked for
    read, _ = spoken_words(
        "Di, deje su mensaje al oír el tono grave.", "es", answers=("Deje su mensaje al oír el tono grave.",)
    )
    assert read == 'di "deje su mensaje al oir el tono grave"'
    # An answer that says the other words only leaves the manner asked for.
    assert spoken_words("Say hello there slowly.", "en", answers=("Hello there.", "Hola.")) is None
    # Never words to say: a manner between a lead-in and a colon, a language asked for.
    assert (
        spoken_words("Dis vite : la conférence est terminée.", "fr", answers=("La conférence est terminée.",)) is None
    )
    assert (
        spoken_words("Say in Spanish: good morning everyone.", "en", answers=("in spanish good morning everyone",))
        is None
    )


def test_words_outside_quotes_are_only_a_lead_in_or_more():
    assert not asks_beyond_saying("Di")
    assert not asks_beyond_saying("Por favor, repite:")
    assert not asks_beyond_saying("Say:")
    assert not asks_beyond_saying("")
    assert asks_beyond_saying("Dilo suavecito")
    assert asks_beyond_saying("Say slowly")


def test_the_thresholds_are_those_set_on_the_tuning_half():
    # scripts/bench_spoken_instructions.py --fit and scripts/bench_spoken_pairs.py --half tune --fit; docs/languages.md
    assert (leadins.MAX_EDIT_RATIO, leadins.MAX_EDIT_RATIO_PAUSED, leadins.GLUED_COST) == (0.34, 0.6, 1.0)
    assert (leadins.ECHO.edit_ratio, leadins.ECHO.lead_in_edits) == (0.2, 2)
