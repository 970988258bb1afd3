"""The `cues` prosody rules on Stage 1's real output (the recogniser, then the prosody extractor): speech whose
prosody is known from how it was made (espeak-ng SSML, made as scripts/bench_prosody.py makes its stressed words),
and recorded speech (LibriVox, Asterisk) where nothing is decided that the evidence does not hold.

A word is stressed with pitch, volume and rate together: `<emphasis>` alone, or `<prosody volume=...>` alone,
moves the word's prominence too little to tell it from a plain reading (espeak-ng reads `volume="+6dB"` as +6 %),
and Whisper tiny.en mishears some stressed words ("the quick round arc" for "the quick brown fox").
"""

from __future__ import annotations

import json
import shutil

import pytest
from cues_verdict import verdict
from script_modules import load_script

from trace_eval.synth import Voice, have_tools, speak

bench = load_script("bench_prosody")
SWAP = {"1": "2", "2": "1", "both_good": "both_good", "both_bad": "both_bad", None: None}
pytestmark = pytest.mark.skipif(
    not have_tools() or not bench.LIBRIVOX.is_dir() or not bench.ASTERISK.is_dir(),
    reason="needs espeak-ng, sox, pocketsphinx-testdata and asterisk-core-sounds-en-wav (.ci/run installs them)",
)

FOX = "The quick brown fox jumps over the lazy dog."
MONEY = "I never said she stole my money."
GARDEN = "The children played in the garden all afternoon."
ROAD = "We will keep on fighting till the very end of the long and winding road."
STRESSED = "pitch, volume, rate"  # <prosody pitch="+50%" volume="+100%" rate="-30%"> around the word
SPOKEN = {  # name: (SSML or text, the word stressed and how, or None)
    "money": (MONEY, None),
    "money-said": (MONEY, ("said", STRESSED)),
    "money-stole": (MONEY, ("stole", STRESSED)),
    "garden-children": (GARDEN, ("children", STRESSED)),
    "garden-garden": (GARDEN, ("garden", STRESSED)),
    "fox": (FOX, None),
    "fox-fox": (FOX, ("fox", STRESSED)),  # heard as "The quick round farts jump over the lazy nug"
    "question": ("Is it raining outside today?", None),
    "statement": ("It is raining outside today.", None),
    "fox-word-gaps": ("<speak>" + ' <break time="400ms"/> '.join(FOX.split()) + "</speak>", None),
    "road": (ROAD, None),
    "road-louder": (
        '<speak><prosody volume="x-soft">We will keep on fighting</prosody> till the very end '
        '<prosody volume="x-loud">of the long and winding road.</prosody></speak>',
        None,
    ),
    "road-higher": (
        '<speak><prosody pitch="-40%">We will keep on fighting</prosody> till the very end '
        '<prosody pitch="+60%">of the long and winding road.</prosody></speak>',
        None,
    ),
}
VOICED = {  # name: (text, voice)
    # A question said as a statement with a rising end: espeak-ng at its own pace falls to the stressed syllable
    # and rises 3-4 semitones in the last 0.1 s of the phrase.
    "arriving-question": ("He is arriving tomorrow?", Voice(wpm=175)),
    "arriving-statement": ("He is arriving tomorrow.", Voice(wpm=175)),
    "fox-slower": (FOX, Voice(wpm=140)),  # "fox" heard as itself (at 150 wpm "brown fox" is heard as "roundfire")
}
RECORDED = {
    "amiable-himself": bench.LIBRIVOX / "sense_and_sensibility_01_austen_64kb-0930.wav",  # he might even have been ...
    "amiable-woman": bench.LIBRIVOX / "sense_and_sensibility_01_austen_64kb-0920.wav",  # had he married a more ...
    "mailbox": bench.ASTERISK / "vm-login.wav",  # Comedian Mail. Mailbox?
    "goodbye": bench.ASTERISK / "vm-goodbye.wav",  # Goodbye
}


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> dict[str, dict]:
    """The blueprint of every clip above, made by Stage 1 (the recogniser and the prosody extractor)."""
    from trace_eval.stage1.pipeline import BlueprintOptions, run_blueprints
    from trace_eval.stage1.store import BlueprintStore

    root = tmp_path_factory.mktemp("prosody") / "bench"
    (root / "audio").mkdir(parents=True)
    for name, (text, stress) in SPOKEN.items():
        out = root / "audio" / f"{name}.wav"
        if stress:
            bench.synthetic(text, *stress, out)
        else:
            speak(text, out, Voice(wpm=150, ssml=text.startswith("<speak>")))
    for name, (text, voice) in VOICED.items():
        speak(text, root / "audio" / f"{name}.wav", voice)
    for name, path in RECORDED.items():
        shutil.copyfile(path, root / "audio" / f"{name}.wav")
    names = [*SPOKEN, *VOICED, *RECORDED]
    items = [
        {
            "id": name,
            "instruction_text": "Say it.",
            "audio1_path": f"audio/{name}.wav",
            "audio2_path": f"audio/{other}.wav",
        }
        for name, other in zip(names, names[1:] + names[:1])
    ]
    (root / "manifest.json").write_text(json.dumps(items), encoding="utf-8")
    summary = run_blueprints(root, BlueprintOptions(only=["asr", "prosody"], store="bench", progress=False, workers=1))
    assert summary.ok, summary.failures
    store = BlueprintStore(root)
    return {name: store.get_by_path(f"audio/{name}.wav") for name in names}


def paralinguistics(stored: dict, instruction: str, first: str, second: str) -> dict:
    """The verdict on (first, second); the other order must give the mirrored label."""
    answer, swapped = (
        verdict(instruction, stored[first], stored[second]),
        verdict(instruction, stored[second], stored[first]),
    )
    assert swapped["paralinguistics"] == SWAP[answer["paralinguistics"]], (answer["reasoning"], swapped["reasoning"])
    return answer


@pytest.mark.parametrize(
    "instruction, stressing, other",
    [
        (f"Say '{MONEY[:-1]}', stressing 'said'.", "money-said", "money-stole"),
        (f"Say '{MONEY[:-1]}' with the emphasis on 'stole'.", "money-stole", "money"),
        (f"Say '{GARDEN[:-1]}' and stress the word children.", "garden-children", "garden-garden"),
    ],
)
def test_cues_picks_the_answer_that_stresses_the_asked_word(stored, instruction, stressing, other):
    answer = paralinguistics(stored, instruction, stressing, other)
    assert answer["paralinguistics"] == "1", answer["reasoning"]
    assert answer["content"] == "both_good"  # the word to stress is not a word to say twice


def test_a_stressed_word_the_recogniser_misheard_is_found_by_its_place(stored):
    heard = stored["fox-fox"]["agent_response"].lower()
    assert "fox" not in heard and "quick" in heard and "jump" in heard, heard  # the premise: misheard in place
    answer = paralinguistics(stored, f"Say '{FOX[:-1]}', stressing 'fox'.", "fox-fox", "fox-slower")
    assert answer["paralinguistics"] == "1", answer["reasoning"]
    assert "“fox” heard as “" in answer["reasoning"] and "at its place in the quoted sentence" in answer["reasoning"]


def test_a_question_is_told_from_a_statement(stored):
    asked = paralinguistics(stored, "Say 'is it raining outside today' as a question.", "question", "statement")
    assert asked["paralinguistics"] == "1", asked["reasoning"]
    stated = paralinguistics(stored, "Say 'it is raining outside today' as a statement.", "question", "statement")
    assert stated["paralinguistics"] == "2", stated["reasoning"]


def test_a_question_ending_on_a_steep_rise_is_a_question(stored):
    # Its last 0.1 s rises from the stressed syllable's low; read at its last frames, the phrase ends rising.
    ending = stored["arriving-question"]["agent_prosody"]["phrases"][-1]
    assert ending["final_contour"] == "rising", ending
    asked = paralinguistics(
        stored, "Say 'he is arriving tomorrow' as a question.", "arriving-statement", "arriving-question"
    )
    assert asked["paralinguistics"] == "2", asked["reasoning"]
    stated = paralinguistics(
        stored, "Say 'he is arriving tomorrow' as a statement.", "arriving-statement", "arriving-question"
    )
    assert stated["paralinguistics"] == "1", stated["reasoning"]


def test_a_pause_after_each_word(stored):
    answer = paralinguistics(stored, f"Say '{FOX[:-1]}' with a pause after each word.", "fox-word-gaps", "fox")
    assert answer["paralinguistics"] == "1", answer["reasoning"]


@pytest.mark.parametrize(
    "instruction, changing",
    [
        (f"Start quietly and get louder: '{ROAD[:-1]}'.", "road-louder"),
        (f"Say '{ROAD[:-1]}', getting higher and higher.", "road-higher"),
    ],
)
def test_a_change_along_the_answer(stored, instruction, changing):
    answer = paralinguistics(stored, instruction, changing, "road")
    assert answer["paralinguistics"] == "1", answer["reasoning"]


def test_recorded_speech_decides_only_what_its_prosody_holds(stored):
    # Read as the reader read them: "...made amiable himself" puts its accent on "amiable" (the most prominent of
    # its 8 words), "...a more amiable woman..." on other words of its 18 (amiable stands 0.6 below the most
    # prominent): only the first is the answer's focus.
    amiable = paralinguistics(stored, "Read it, stressing 'amiable'.", "amiable-himself", "amiable-woman")
    assert amiable["paralinguistics"] == "1", amiable["reasoning"]
    assert "below the most prominent) not ok" in amiable["reasoning"]
    # A word the recording does not say leaves the request undetermined, with the reason.
    absent = verdict("Read it, stressing 'cheerful'.", stored["amiable-himself"], stored["goodbye"])
    assert absent["paralinguistics"] is None
    assert "“cheerful” not among the recognised words" in absent["undetermined"]["paralinguistics"]
    # A one-word prompt has no boundary to pause at: undetermined, not failed.
    one = verdict("Say it with a pause after each word.", stored["goodbye"], stored["amiable-himself"])
    assert one["paralinguistics"] is None and "no boundary between words" in one["undetermined"]["paralinguistics"]
    # Too short to compare thirds: a change asked for is undetermined with the extractor's reason.
    short = verdict("Get louder and louder.", stored["goodbye"], stored["amiable-himself"])
    assert short["paralinguistics"] is None and "too short to compare" in short["undetermined"]["paralinguistics"]


def test_a_question_mark_in_the_script_is_no_rise_in_the_voice(stored):
    # Asterisk's "Comedian Mail. Mailbox?" (its transcript) is said falling, as a prompt: the rule reads the voice.
    answer = paralinguistics(stored, "Ask it as a question.", "mailbox", "goodbye")
    assert answer["paralinguistics"] == "both_bad", answer["reasoning"]
    assert paralinguistics(stored, "Say it as a statement.", "mailbox", "goodbye")["paralinguistics"] == "both_good"
