"""The `cues` prosody rules on Stage 1's real output (the recogniser, then the prosody extractor): speech whose
prosody is known from how it was made (espeak-ng SSML, `espeak-ng -m`; word gaps with `-g`), and recorded
speech (LibriVox, Asterisk) where nothing is decided that the evidence does not hold.

The SSML is what Whisper tiny.en still hears word for word: a word made louder with `<prosody volume="x-loud">`
(espeak-ng's `+6dB` moves the measured level of one word by about 1 dB; `<emphasis>` and a raised pitch on one
word make the recogniser mishear it, "the quick round arc" for "the quick brown fox").
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from trace_eval.judge.cues import judge_case
from trace_eval.judge.parse import parse_verdict
from trace_eval.judge.prompts import Case, blueprint_view, load_prompt
from trace_eval.rubrics import load_rubric

TRACE = load_rubric("trace")
KEYS = load_prompt("trace").blueprint_keys
SWAP = {"1": "2", "2": "1", "both_good": "both_good", "both_bad": "both_bad", None: None}
LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
ASTERISK = Path("/usr/share/asterisk/sounds/en")
pytestmark = pytest.mark.skipif(
    shutil.which("espeak-ng") is None or not LIBRIVOX.is_dir() or not ASTERISK.is_dir(),
    reason="needs espeak-ng, pocketsphinx-testdata and asterisk-core-sounds-en-wav (.ci/run installs them)",
)

FOX = "The quick brown fox jumps over the lazy dog."
MONEY = "I never said she stole my money."
ROAD = "We will keep on fighting till the very end of the long and winding road."
LOUD = '<prosody volume="x-loud">{}</prosody>'
SPOKEN = {  # name: (SSML, espeak-ng options)
    "fox": (FOX, ()),
    "fox-loud-fox": (FOX.replace("fox", LOUD.format("fox")), ()),
    "money-loud-said": (MONEY.replace("said", LOUD.format("said")), ()),
    "money-loud-stole": (MONEY.replace("stole", LOUD.format("stole")), ()),
    "question": ("Is it raining outside today?", ()),
    "statement": ("It is raining outside today.", ()),
    "fox-word-gaps": (FOX, ("-g", "40")),  # 400 ms between words
    "road": (ROAD, ()),
    "road-louder": (
        '<prosody volume="x-soft">We will keep on fighting</prosody> till the very end '
        '<prosody volume="x-loud">of the long and winding road.</prosody>',
        (),
    ),
    "road-higher": (
        '<prosody pitch="-40%">We will keep on fighting</prosody> till the very end '
        '<prosody pitch="+60%">of the long and winding road.</prosody>',
        (),
    ),
}
RECORDED = {
    "amiable-himself": LIBRIVOX
    / "sense_and_sensibility_01_austen_64kb-0930.wav",  # he might even have been made amiable himself
    "amiable-woman": LIBRIVOX
    / "sense_and_sensibility_01_austen_64kb-0920.wav",  # had he married a more amiable woman ...
    "mailbox": ASTERISK / "vm-login.wav",  # Comedian Mail. Mailbox?
    "goodbye": ASTERISK / "vm-goodbye.wav",  # Goodbye
}


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> dict[str, dict]:
    """The blueprint of every clip above, made by Stage 1 (the recogniser and the prosody extractor)."""
    from trace_eval.stage1.pipeline import BlueprintOptions, run_blueprints
    from trace_eval.stage1.store import BlueprintStore

    root = tmp_path_factory.mktemp("prosody") / "bench"
    (root / "audio").mkdir(parents=True)
    for name, (ssml, options) in SPOKEN.items():
        raw = root / f"{name}.raw.wav"
        subprocess.run(["espeak-ng", "-m", "-v", "en-us", *options, "-w", str(raw), ssml], check=True)
        subprocess.run(
            ["sox", "-D", "-R", str(raw), "-b", "16", "-c", "1", str(root / "audio" / f"{name}.wav"), "rate", "16000"],
            check=True,
        )
        raw.unlink()
    for name, path in RECORDED.items():
        shutil.copyfile(path, root / "audio" / f"{name}.wav")
    names = [*SPOKEN, *RECORDED]
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


def verdict(instruction: str, bp1: dict, bp2: dict) -> dict:
    views = (blueprint_view(bp1, KEYS), blueprint_view(bp2, KEYS))
    answer = judge_case(Case("x", None, instruction, views, stored=(bp1, bp2)))
    assert parse_verdict(json.dumps(answer), TRACE, allow_undetermined=True).ok
    return answer


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
        (f"Say '{FOX[:-1]}', stressing 'fox'.", "fox-loud-fox", "fox"),
        (f"Say '{MONEY[:-1]}' with the emphasis on the word said.", "money-loud-said", "money-loud-stole"),
    ],
)
def test_cues_picks_the_answer_that_stresses_the_asked_word(stored, instruction, stressing, other):
    answer = paralinguistics(stored, instruction, stressing, other)
    assert answer["paralinguistics"] == "1", answer["reasoning"]
    assert answer["content"] == "both_good"  # the word to stress is not a word to say twice


def test_a_question_is_told_from_a_statement(stored):
    asked = paralinguistics(stored, "Say 'is it raining outside today' as a question.", "question", "statement")
    assert asked["paralinguistics"] == "1", asked["reasoning"]
    stated = paralinguistics(stored, "Say 'it is raining outside today' as a statement.", "question", "statement")
    assert stated["paralinguistics"] == "2", stated["reasoning"]


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
    # Read without stress on the word: neither reading makes "amiable" stand out.
    amiable = paralinguistics(stored, "Read it, stressing 'amiable'.", "amiable-himself", "amiable-woman")
    assert amiable["paralinguistics"] == "both_bad", amiable["reasoning"]
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
