"""The `cues` rules for how words are said (trace_eval/judge/prosody_rules.py) at their edges, on prosody
sections written by hand in the extractor's layout; tests/judge/test_prosody_speech.py runs them on Stage 1's
output of generated and recorded speech."""

from __future__ import annotations

import pytest
from cues_verdict import verdict
from llm_server import blueprint, prosody_section

from trace_eval.judge.cues import _words, confidence_of, paralinguistic_cues
from trace_eval.judge.instructions import read_instruction
from trace_eval.judge.prosody_rules import align, stress_targets

SWAP = {"1": "2", "2": "1", "both_good": "both_good", "both_bad": "both_bad", None: None}
FOX = "The quick brown fox jumps over the lazy dog."
SAY_FOX = f"Say '{FOX[:-1]}', stressing 'fox'."
MONEY = "I never said she stole my money"


def both_orders(instruction: str, bp1: dict, bp2: dict) -> dict:
    """The verdict of (bp1, bp2); (bp2, bp1) must give the mirrored Paralinguistics label."""
    first, second = verdict(instruction, bp1, bp2), verdict(instruction, bp2, bp1)
    assert second["paralinguistics"] == SWAP[first["paralinguistics"]], (first["reasoning"], second["reasoning"])
    return first


def stressed(text: str = FOX, **prominence: float | None) -> dict:
    return blueprint(text, prosody=prosody_section(text, prominence))


# -- reading the instruction --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "instruction, targets, quoted",
    [
        (SAY_FOX, ["fox"], FOX[:-1]),
        (
            "Say “I never said she stole my money” with emphasis on ‘never’.",
            ["never"],
            "I never said she stole my money",
        ),
        ("Emphasize the word 'tomorrow' in 'see you tomorrow'.", ["tomorrow"], "see you tomorrow"),
        ('Say "see you tomorrow" and stress the word tomorrow.', ["tomorrow"], "see you tomorrow"),
        ('Say "see you tomorrow", putting the stress on tomorrow.', ["tomorrow"], "see you tomorrow"),
        ("Say 'I did not take it' with the emphasis on 'did not'.", ["did not"], "I did not take it"),
        # No particular word: emphasis stays a manner no rule measures.
        ("Say 'I never said she stole my money' with emphasis on a different word each time.", [], None),
        ("Read it with stress on the last word.", [], None),
        # A bare word that is not among the words to say is no target ("stressing calm" is a manner).
        ('Say "hello there", stressing calmness.', [], "hello there"),
    ],
)
def test_the_word_to_stress_is_read_and_is_not_a_word_to_say(instruction, targets, quoted):
    read = read_instruction(instruction)
    assert stress_targets(instruction, read.quoted, _words) == targets
    if quoted is not None:
        assert read.quoted == quoted


@pytest.mark.parametrize(
    "instruction, names",
    [
        (SAY_FOX, ["stress on “fox”"]),
        ("Say 'is it raining' as a question.", ["question"]),
        ("Say 'it is raining' as a statement, not as a question.", ["statement"]),
        ("Repeat 'I don't know what you mean' with rising intonation.", ["question"]),
        ("Say 'one two three four' with a pause after each word.", ["pause after each word"]),
        ("Say 'one two three four' word by word.", ["pause after each word"]),
        ("Start quietly and get louder as you say 'we are the champions'.", ["getting louder"]),
        ("Say 'the end is near' loudly, then fade out.", ["getting quieter"]),
        ("Say 'up we go' in a low voice and get higher and higher.", ["getting higher"]),
        ("Say 'down we go', slowing down gradually.", ["slowing down"]),  # the pace rule's, no unknown manner
        ("Say 'hello there' quietly.", ["quiet"]),  # no change asked: the whole-clip level still decides
        ("Say 'is it raining' with a different intonation.", ["intonation"]),  # no direction: unmeasured
    ],
)
def test_prosody_requests_replace_the_cues_their_words_would_ask(instruction, names):
    assert [cue.name for cue in paralinguistic_cues(instruction)] == names


# -- stressing a word ---------------------------------------------------------------------------------------


def test_the_answer_that_stresses_the_asked_word_wins():
    answer = both_orders(SAY_FOX, stressed(fox=1.9), stressed(dog=1.9))
    assert answer["paralinguistics"] == "1"
    assert "“fox” prominence 1.90 (rank 1 of 9 words) ok vs “fox” prominence -0.30" in answer["reasoning"]
    assert answer["confidence"]["paralinguistics"] > 0.9


def test_of_two_that_stress_it_the_clearer_wins_and_alike_is_a_tie():
    assert both_orders(SAY_FOX, stressed(fox=2.2), stressed(fox=1.2))["paralinguistics"] == "1"
    alike = both_orders(SAY_FOX, stressed(fox=1.5), stressed(fox=1.3))
    assert alike["paralinguistics"] == "both_good"
    assert "“fox” stands out alike (0.20 apart)" in alike["reasoning"]
    # A lead of 0.2 is 0.3 from the clear lead of 0.5: 0.6 margin units, less sure than the readings themselves.
    assert alike["confidence"]["paralinguistics"] == confidence_of(0.6)


def test_neither_stressing_it_is_both_bad():
    assert both_orders(SAY_FOX, stressed(dog=1.9), stressed())["paralinguistics"] == "both_bad"


def test_the_asked_word_must_stand_out_and_be_the_answers_focus():
    # Above the answer's typical word: a prominence of 0.4 or more.
    assert both_orders(SAY_FOX, stressed(fox=0.4), stressed(fox=0.39))["paralinguistics"] == "1"
    # And no more than 0.4 below its most prominent word: "dog" said stronger still makes "fox" no focus.
    near = both_orders(SAY_FOX, stressed(fox=1.0, dog=1.4), stressed(fox=1.0, dog=1.41))
    assert near["paralinguistics"] == "1"
    assert "“fox” prominence 1.00 (rank 2 of 9 words, 0.41 below the most prominent) not ok" in near["reasoning"]


@pytest.mark.parametrize(
    "other, why",
    [
        (stressed("A lazy dog sleeps in the sun.", dog=1.9), "“fox” not among the recognised words"),
        (stressed(fox=None), "“fox” prominence unmeasured (prominence: no voiced frame, no level)"),
    ],
)
def test_a_word_not_heard_or_not_measured_leaves_the_request_undetermined(other, why):
    answer = verdict(SAY_FOX, stressed(fox=1.9), other)
    assert answer["paralinguistics"] is None
    assert answer["undetermined"]["paralinguistics"] == f"stress on “fox”: {why} for response 2"


def test_a_measured_failure_decides_beside_a_word_not_heard():
    other = stressed("A lazy dog sleeps in the sun.", dog=1.9)
    assert verdict(SAY_FOX, stressed(dog=1.9), other)["paralinguistics"] is None  # one unknown, one failure
    assert verdict(SAY_FOX, stressed(fox=1.9), other)["paralinguistics"] is None


RED = "My sister bought a red bicycle yesterday"
SAY_RED = f"Say '{RED}', stressing 'red'."


def test_a_word_the_recogniser_misheard_is_found_by_its_place_in_the_quoted_sentence():
    misheard = stressed("My sister bought a rent bicycle yesterday.", rent=1.9)
    answer = both_orders(SAY_RED, misheard, stressed(RED + ".", sister=1.9))
    assert answer["paralinguistics"] == "1"
    assert "“red” heard as “rent” at its place in the quoted sentence prominence 1.90 (rank 1" in answer["reasoning"]
    # Said around other words, and heard as two words: the place holds both, the more prominent counts.
    boston = "Say 'I flew to Boston last week', stressing 'Boston'."
    split = stressed("Well, I flew to Mars ton last week.", ton=1.4)
    answer = both_orders(boston, split, stressed("I flew to Boston last week."))
    assert answer["paralinguistics"] == "1"
    assert "“Boston” heard as “Mars ton” at its place in the quoted sentence prominence 1.40" in answer["reasoning"]


@pytest.mark.parametrize(
    "said",
    [
        "My brother bought a rent bicycle last week.",  # too little of the quoted sentence said
        "My sister bought a rent bike car yesterday.",  # its neighbour changed too, and the count with it
        "Yesterday my sister bought a bicycle.",  # the words in another order
    ],
)
def test_a_place_the_answer_does_not_tell_leaves_the_word_unfound(said):
    answer = verdict(SAY_RED, stressed(RED + ".", red=1.9), stressed(said, rent=1.9, bike=1.9))
    assert answer["paralinguistics"] is None
    assert "“red” not among the recognised words for response 2" in answer["undetermined"]["paralinguistics"]


def test_the_alignment_pairs_each_quoted_word_with_the_word_in_its_place():
    same = lambda heard, asked: heard == asked  # noqa: E731
    quoted = "the quick brown fox jumps".split()
    assert align(quoted, "well the quick round farts jumps again".split(), same) == [1, 2, 3, 4, 5]
    assert align(quoted, "the brown fox jumps".split(), same) == [0, None, 1, 2, 3]


def test_no_prosody_section_says_why():
    unreliable = blueprint(FOX, prosody=None)
    unreliable["agent_prosody"] = None
    unreliable["provenance"] = {
        "extractors": {"prosody": {"status": "ok", "null_reasons": {"agent_prosody": "transcript unreliable: loop"}}}
    }
    answer = verdict(SAY_FOX, stressed(fox=1.9), unreliable)
    assert answer["undetermined"]["paralinguistics"] == "stress on “fox”: transcript unreliable: loop for response 2"
    old = stressed(fox=1.9)
    del old["agent_prosody"]  # a blueprint made before the prosody extractor
    answer = verdict(SAY_FOX, old, stressed(fox=1.9))
    assert answer["undetermined"]["paralinguistics"] == (
        "stress on “fox”: prosody not shown to this judge (--drop prosody, or a prompt without agent_prosody) "
        "for response 1"
    )


def test_dropped_prosody_is_missing_evidence():
    answer = verdict(SAY_FOX, stressed(fox=1.9), stressed(dog=1.9), drop=("prosody",))
    assert answer["paralinguistics"] is None
    assert "prosody not shown to this judge" in answer["undetermined"]["paralinguistics"]


def test_a_quoted_word_to_stress_does_not_make_the_answer_short_of_the_quote():
    said = "Say 'good morning', stressing 'morning'."
    answer = verdict(said, stressed("Good morning.", morning=1.3), stressed("Good morning."))
    assert answer["content"] == "both_good" and answer["paralinguistics"] == "1"


# -- how the answer ends, pauses, changes ----------------------------------------------------------------


def ending(st: float | None, text: str = "Is it raining outside today?") -> dict:
    return blueprint(text, prosody=prosody_section(text, ending_st=st))


@pytest.mark.parametrize(
    "instruction, label", [("Say 'is it raining outside today' as a question.", "1"), ("Say it as a statement.", "2")]
)
def test_question_and_statement_from_the_last_phrase_ending(instruction, label):
    assert both_orders(instruction, ending(4.1), ending(-3.8))["paralinguistics"] == label


def test_a_rise_under_the_threshold_states_rather_than_asks():
    answer = both_orders("Ask it as a question.", ending(1.6), ending(1.4))
    assert answer["paralinguistics"] == "1"
    assert answer["confidence"]["paralinguistics"] == pytest.approx(0.5475, abs=1e-3)  # 0.1 st from 1.5 st


def test_an_ending_not_measured_leaves_question_undetermined():
    answer = verdict("Ask it as a question.", ending(4.1), ending(None))
    assert answer["undetermined"]["paralinguistics"] == (
        "question: final contour unmeasured (4 voiced frame(s) in the phrase's last 0.5 s, fewer than 10) "
        "for response 2"
    )


def paused(after: tuple[int, ...], text: str = "one two three four five") -> dict:
    return blueprint(text, prosody=prosody_section(text, paused_after=after))


def test_a_pause_after_each_word():
    asked = "Say 'one two three four five' with a pause after each word."
    assert both_orders(asked, paused((0, 1, 2, 3)), paused((1,)))["paralinguistics"] == "1"
    assert both_orders(asked, paused((0, 1, 3)), paused((0, 1, 2)))["paralinguistics"] == "both_bad"  # 3 of 4
    one = verdict(asked, paused((0, 1, 2, 3)), paused((), "one"))
    assert one["undetermined"]["paralinguistics"] == (
        "pause after each word: 1 word(s): no boundary between words for response 2"
    )


def changing(loudness_db: float | None, pitch_st: float | None = 0.0, reason: str | None = None) -> dict:
    text = "we are the champions my friend"
    changes = {"loudness_db": loudness_db, "loudness": None, "pitch_st": pitch_st, "pitch": None}
    changes |= {"rate_ratio": 1.0, "rate": "steady", "reason": reason}
    return blueprint(text, lufs=-35.0, prosody=prosody_section(text, changes=changes))


def test_start_quietly_and_get_louder_reads_the_change_not_the_level():
    asked = "Start quietly and get louder as you say 'we are the champions my friend'."
    # Both answers are quiet over all (-35 LUFS): the whole-clip "quiet" cue would pass both.
    answer = both_orders(asked, changing(6.1), changing(0.4))
    assert answer["paralinguistics"] == "1"
    assert "getting louder: last third +6.1 dB against the first ok vs last third +0.4 dB" in answer["reasoning"]
    quieter = both_orders("Say it loudly, then fade out.", changing(-5.0), changing(2.0))
    assert quieter["paralinguistics"] == "1"
    higher = both_orders("Get higher and higher.", changing(0.0, 2.5), changing(0.0, -1.0))
    assert higher["paralinguistics"] == "1"


def test_a_change_not_measured_says_why():
    short = changing(None, None, "speech of 1.20 s: each third shorter than 0.5 s, too short to compare")
    answer = verdict("Get louder and louder.", changing(6.0), short)
    assert answer["undetermined"]["paralinguistics"] == (
        "getting louder: change unmeasured (speech of 1.20 s: each third shorter than 0.5 s, too short to compare) "
        "for response 2"
    )
