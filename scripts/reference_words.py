"""Where each word of a recorded English clip lies, by a recogniser that shares nothing with Stage 1's.

The benchmarks need a word's true span on recorded speech to alter it (bench_stress.py) and to measure how
far Stage 1's word times lie from it (bench_word_times.py). Whisper's own times, or prosody's alignment of
them, would grade Stage 1 against itself. CMU PocketSphinx (PyPI `pocketsphinx`, its US English acoustic model
and pronouncing dictionary inside the package) is a hidden-Markov-model recogniser of another lineage: given the
clip's known transcript, it aligns its phones to the audio by Viterbi search, and the words' spans follow.

    words = reference_words(path, "He was not an ill disposed young man.")
    # [Word("he", 0.21, 0.33), Word("was", 0.33, 0.56), ...], or a string saying why there are none

Silences are left out. A word the dictionary does not hold is said as the two words it joins ("unmute") or, up
to four letters, spelt out ("pbx"); any other (a name, a misspelling) makes the whole clip unaligned, since the
words after it would be placed against the wrong sounds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from trace_eval.audio import load_audio

RATE = 16_000  # the acoustic model's


@dataclass(frozen=True)
class Word:
    word: str
    start: float
    end: float


DIGITS = "zero one two three four five six seven eight nine".split()


def spoken_words(text: str) -> tuple[list[str], list[str]]:
    """The words of a transcript as the dictionary spells them (lower case, a digit as its word), and the tokens
    that say nothing sure (a number of several digits, a symbol, an address)."""
    words, unsure = [], []
    for token in text.lower().split():
        token = token.strip('.,;:!?"()…')
        if token in tuple("0123456789"):
            words.append(DIGITS[int(token)])
        elif re.fullmatch(r"[a-z]+(?:'[a-z]+)*(?:-[a-z]+(?:'[a-z]+)*)*", token):
            words += token.split("-")
        elif token.strip(".-"):
            unsure.append(token)
    return words, unsure


_decoder = None


def _shared_decoder():
    """One decoder for the process: loading the model takes about a second."""
    global _decoder
    if _decoder is None:
        from pocketsphinx import Decoder

        _decoder = Decoder(samprate=RATE, bestpath=False, loglevel="FATAL")
    return _decoder


def _known(decoder, word: str) -> bool:
    """Whether the dictionary holds the word, adding it where it is two words it holds ("unmute", "rerecord")
    or, up to four letters, letters spelt out ("pbx")."""
    if decoder.lookup_word(word) is not None:
        return True
    parts = [(word[:k], word[k:]) for k in range(len(word) - 1, 1, -1)]  # the longest known first part first
    phones = next(
        (
            f"{first} {second}"
            for a, b in parts
            if (first := decoder.lookup_word(a)) and (second := decoder.lookup_word(b))
        ),
        None,
    )
    if phones is None and len(word) <= 4 and all(decoder.lookup_word(c) for c in word):
        phones = " ".join(decoder.lookup_word(c) for c in word)
    if phones is None:
        return False
    decoder.add_word(word, phones, True)
    return True


def _decode(decoder, pcm: bytes) -> None:
    decoder.start_utt()
    decoder.process_raw(pcm, full_utt=True)
    decoder.end_utt()


def reference_words(path: Path, text: str) -> list[Word] | str:
    """Each word of `text` with its span in the clip at `path`, in order; or why they cannot be placed."""
    words, unsure = spoken_words(text)
    if unsure:
        return f"said in no one way: {', '.join(unsure)}"
    if not words:
        return "no words in the transcript"
    decoder = _shared_decoder()
    unknown = [w for w in words if not _known(decoder, w)]
    if unknown:
        return f"not in the pronouncing dictionary: {', '.join(sorted(set(unknown)))}"
    pcm = np.clip(load_audio(path).at(RATE) * 32768.0, -32768, 32767).astype(np.int16).tobytes()
    try:
        decoder.set_align_text(" ".join(words))
        _decode(decoder, pcm)  # the path through the words
        decoder.set_alignment()
        _decode(decoder, pcm)  # each word's phones' spans along it
    except RuntimeError as e:  # no path through the words: the audio does not say them, or says more
        return f"the aligner found no path ({e})"
    frame_s = 1.0 / decoder.config["frate"]
    spans = [
        Word(re.sub(r"\(\d+\)$", "", w.name), w.start * frame_s, (w.start + w.duration) * frame_s)
        for w in decoder.get_alignment()
        if not w.name.startswith("<") and w.name not in ("[NOISE]", "[SPEECH]")
    ]
    if [w.word for w in spans] != words:
        return "the aligner did not place every word"
    return spans
