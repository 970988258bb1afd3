"""Word times on recorded speech against an aligner that shares nothing with Stage 1 (scripts/reference_words.py,
scripts/bench_word_times.py): the reference itself, and prosody's aligned times nearer it than Whisper's."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.script_modules import load_script

pytest.importorskip("pocketsphinx", reason="the reference aligner: pip install -c constraints.txt -e '.[dev]'")
LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
ASTERISK = Path("/usr/share/asterisk/sounds/en")
pytestmark = pytest.mark.skipif(
    not (LIBRIVOX / "transcription").exists() or not ASTERISK.exists(),
    reason="apt-get install pocketsphinx-testdata asterisk-core-sounds-en-wav asterisk-core-sounds-en",
)

reference = load_script("reference_words")
bench = load_script("bench_word_times")


def test_a_transcript_is_read_as_its_words_and_what_says_nothing_sure_is_named():
    assert reference.spoken_words("Press 1 to record, or press 2.") == (
        ["press", "one", "to", "record", "or", "press", "two"],
        [],
    )
    assert reference.spoken_words("He was ill-disposed ...") == (["he", "was", "ill", "disposed"], [])
    assert reference.spoken_words("Dial 1234 or go to www.asterisk.org") == (
        ["dial", "or", "go", "to"],
        ["1234", "www.asterisk.org"],
    )


def test_the_reference_places_every_word_of_a_recording_in_order():
    clip = LIBRIVOX / "sense_and_sensibility_01_austen_64kb-0880.wav"
    words = reference.reference_words(clip, "He was not an ill disposed young man.")
    assert [w.word for w in words] == "he was not an ill disposed young man".split()
    assert all(a.end <= b.start + 1e-9 for a, b in zip(words, words[1:]))
    assert all(w.end - w.start >= 0.03 for w in words)
    assert 2.5 < words[-1].end < 3.0  # the clip's speech ends near 2.75 s; its file runs on in silence
    disposed = words[5]
    assert disposed.end - disposed.start > 0.4  # two syllables and a cluster, not a frame or two


def test_a_word_the_dictionary_lacks_is_built_from_words_it_holds_or_names_why_not():
    clip = ASTERISK / "conf-adminmenu.wav"
    text = bench.asterisk_prompts("en")["conf-adminmenu"]
    words = reference.reference_words(clip, text)
    assert not isinstance(words, str), words  # "unmute": "un" and "mute"
    assert "unmute" in [w.word for w in words]
    why = reference.reference_words(clip, "Welcome to digium")
    assert why == "not in the pronouncing dictionary: digium"
    assert reference.reference_words(clip, "Press *") == "said in no one way: *"


def test_prosodys_aligned_times_lie_nearer_the_reference_than_whispers(tmp_path):
    """Whisper's times run about 0.1 s late; prosody's alignment to syllable nuclei brings most word starts within
    50 ms of the reference (bench_word_times.py: 64 % of the test half against 21 %)."""
    every = bench.recordings()
    recordings = [r for r in every if r.path.parent == LIBRIVOX][:3]
    recordings += [r for r in every if r.path.stem in ("agent-alreadyon", "vm-options")]
    hearing = bench.Hearing(tmp_path)
    heard, aligned = [], []
    for recording in recordings:
        words = reference.reference_words(recording.path, recording.text)
        assert not isinstance(words, str), (recording.path.name, words)
        blueprint = hearing(recording.path)
        heard += bench.matched(words, blueprint["words"])
        aligned += bench.matched(words, blueprint["agent_prosody"]["words"])
    assert len(heard) >= 60 and len(aligned) >= 60  # the recogniser wrote most words as the transcript has them

    def within(pairs, seconds=0.05):
        starts, _ = bench.errors(pairs)
        return sum(abs(e) <= seconds for e in starts) / len(starts)

    assert within(aligned) >= 0.5 and within(aligned) >= within(heard) + 0.25, (within(aligned), within(heard))


def test_a_pause_is_compared_at_the_boundary_where_both_place_it():
    Word = reference.Word
    words = [Word("one", 0.0, 0.3), Word("two", 0.6, 0.9), Word("three", 1.05, 1.4), Word("four", 1.42, 1.8)]
    section = {
        "words": [{"word": "One,"}, {"word": "two"}, {"word": "three"}, {"word": "four."}],
        "pauses": [{"after_word": 0}, {"after_word": 1}],
    }
    counts = bench.pause_agreement(words, section)
    assert counts == {"both": 1, "prosody only, the reference's silence shorter": 1, "neither": 1}
    section["words"][2] = {"word": "tree"}  # a boundary beside a word heard otherwise is not compared
    assert sum(bench.pause_agreement(words, section).values()) == 1
