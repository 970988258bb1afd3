"""Prosody per word and per phrase: which word stood out, how each phrase ended, what changed over the answer.

Built from the recogniser's word times (`asr`) and the frame tracks of the pitch
and loudness extractors, computed again here with their own code (pitch.py's
Praat track with the pitch extractor's settings, loudness.py's K-weighted block
powers), on one 10 ms grid:

- level: BS.1770 K-weighted loudness of 50 ms blocks at a 10 ms hop (dB);
- F0: the Praat track's nearest frame (0 where unvoiced), in semitones relative
  to the clip's median voiced F0, the speaker's own register;
- sounding: the voicing extractor's rule for speech against silence (a level
  threshold relative to the clip, gaps under 0.25 s kept as speech, bursts with
  no voicing dropped), applied to these levels; in a clip without any voice
  (whispered) every stretch above the threshold is speech.

The recogniser's word times are moved onto the signal first. Whisper's word
times (cross-attention alignment) run about 0.1 s late on clear speech, half a
syllable: measured on its spans, a word takes its neighbour's first syllable. So
the syllable nuclei of the signal (the voicing extractor's rule: level peaks
standing out 2 dB, on voiced speech) are given to the words in order, each word
taking about as many as its text has syllables, near its own time span (a small
dynamic programme), the recogniser's times first moved 0.1 s earlier
(`align_start_shift_s`); the words' shift is the median move of the boundaries,
and the assignment is made again from the shifted times until it settles, never
later than -0.1 s (`align_max_shift_s`): a round that moved the words later had
followed a word holding its neighbour's syllable (against an independent aligner
on recorded prompts, scripts/bench_word_times.py, this holds more word starts
within 50 ms).
Started from the recogniser's own times, a word that took its neighbour's first
syllable moved the boundaries late, and every later round kept them there. Between
two words that hold nuclei, the boundary is the silence or the level minimum
between them; a word holding none keeps its shifted times. `time_shift_s` says
how far the recogniser's times were moved (null when no boundary could be
placed); each word's `start` and `end` are the aligned times its values are
measured on.

Per word (one entry per recognised word, in order):

- `pitch_median_st`, `pitch_range_st`: median and 90th-10th percentile span of the
  word's voiced frames, semitones; null under `min_voiced_frames` / `min_range_frames`.
- `loudness_db`: the power mean level of the word's sounding frames less the
  clip's speech level (the power mean level of every sounding frame inside a word).
- `duration_ratio`: the word's sounding time over its syllables times the clip's
  mean syllable duration (sounding time of the words over their syllables); a
  word said at the clip's articulation rate is 1. Syllables are estimated from
  the text by script (`syllable_count`); null where no estimate exists.
- `prominence`: the weighted mean of the word's z-scores within the clip of pitch_median_st,
  pitch_range_st, loudness_db and log2(duration_ratio) (`prominence_weights`: 0.5, 1.5,
  1.5 and 0, set on scripts/bench_stress.py's tuning half), over those it has (each
  needs at least `min_words` words with a value and some spread): a raised, moving or
  louder word stands out. One that stands out on every part by one standard deviation
  scores 1.
- `reason`: why a field of the word is null (field: reason; ...), else null.

`prominent_words`: the words whose prominence is at least `prominent_z` (0.5),
best first, at most `max_prominent` (3).

`pauses`: silent stretches of the signal (at least 0.25 s, between the first and
last sounding frames), each placed at the word boundary it covers or lies
nearest to (`after_word`), and dropped when no boundary is within `pause_reach_s`.

`phrases`: runs of words split after a pause and after sentence punctuation
(. ? ! ; : and their full-width forms); a phrase runs on to the end of the speech
its last word ends in (never into the next word). `final_change_st` is the pitch
of its last 0.1 s of voice against the low (10th percentile) or the high (90th)
of its last `final_window_s` of voiced frames, whichever is further: a statement's
fall is negative, a question's rise positive, and a question's fall to the nucleus
before the rise counts as the rise it ends with. A rise is also read at the pitch
of the last three voiced frames: a question's rise is often steepest there (espeak-ng
rises 3-4 semitones in the last 0.1 s of "tomorrow?"), where a median over 0.1 s
lags behind it; a fall is read over the 0.1 s only, as a creaky phrase end halves
the tracked pitch of its last frames. `rising` at
+`contour_threshold_st` or more, `falling` at -`contour_threshold_st` or less,
else `level`; null when the window holds fewer than `min_final_voiced_frames`.

`changes`: the last third of the speech span (first word start to last word end)
against the first third, words counted in the third holding their midpoint:
`loudness_db` (difference of the speech levels), `pitch_st` (difference of the
median voiced pitch), `rate_ratio` (syllables per sounding second, last over
first), each with a direction word (`louder`/`quieter`/`steady`,
`higher`/`lower`/`steady`, `faster`/`slower`/`steady`) beyond `change_loudness_db`,
`change_pitch_st` and `change_rate_ratio`.

A transcript marked unreliable, or no words, makes the whole section null with the
reason: word times that cannot be trusted place nothing. Null fields inside the
section carry their reason beside them (`reason` of a word, phrase or `changes`).
"""

from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass
from typing import Any

import numpy as np

from extractors.base import Clip, ClipError, Extractor, Section, register
from extractors.loudness import block_powers, gated_loudness
from extractors.pitch import Config as PitchConfig
from extractors.pitch import track_pitch
from extractors.voicing import Config as VoicingConfig
from extractors.voicing import Stretches, nucleus_frames, sounding_frames

__all__ = ["ProsodyConfig", "ProsodyExtractor", "syllable_count"]

SECTION = "agent_prosody"
_HOP_S = 0.01  # the frame grid: the pitch tracker's step
_SILENT_DB = -120.0  # level given to digital silence, so that percentiles stay finite
_SENTENCE_END = frozenset(".?!;:…。？！；：")
_ALIGN_BLOCK_WORDS = 200  # words aligned at once: the assignment's table grows with words x nuclei
_END_S = 0.1  # a phrase ends on the pitch of its last tenth of a second of voice
_RISE_END_FRAMES = 3  # ...or, for a rise, of its last three voiced frames


@dataclass
class ProsodyConfig:
    level_block_s: float = 0.05  # K-weighted level blocks: a syllable nucleus, not a whole word
    min_voiced_frames: int = 3  # a word's median pitch needs this many voiced 10 ms frames
    min_range_frames: int = 5  # ...and its range this many
    align_reach_s: float = 0.5  # a word may take syllable nuclei this far outside its recognised time span
    align_seconds_per_cost: float = 0.1  # a nucleus this far outside its word costs as much as a syllable too many
    align_skip_cost: float = 2.0  # a nucleus given to no word (a breath, a click) costs this many syllables
    align_rounds: int = 3
    # Where the first assignment starts: Whisper's word times run this late (set on scripts/bench_stress.py's
    # tuning half: -0.08 to -0.15 s put as many stressed words among the two most prominent, 0 s 25 fewer of 496)
    align_start_shift_s: float = -0.1
    # The latest shift the rounds may settle on: moved later than where they start, they followed a word that took
    # its neighbour's syllable (set on the tuning halves of scripts/bench_word_times.py, -0.1 s: 66 % of starts
    # within 50 ms of an independent aligner's against 63 % unbounded, and of bench_stress.py: 444 against 438)
    align_max_shift_s: float = -0.1
    min_words: int = 3  # a z-score needs this many words with the value
    # How much each part of prominence counts: the z-scores of pitch median, pitch range, loudness and log
    # duration. Set on the tuning half of scripts/bench_stress.py: a stressed word moves its pitch and level, while
    # the aligned length is phrase-final lengthening and boundary error as often as stress (weight 0).
    prominence_weights: tuple[float, float, float, float] = (0.5, 1.5, 1.5, 0.0)
    prominent_z: float = 0.5  # prominence at which a word counts as standing out
    max_prominent: int = 3
    pause_reach_s: float = 0.3  # a pause further than this from every word boundary is not placed
    final_window_s: float = 0.5  # a phrase's ending: its last half second of voiced frames
    min_final_voiced_frames: int = 10
    contour_threshold_st: float = 1.5  # a final rise or fall at least this large is not level
    change_loudness_db: float = 3.0  # beyond these, `changes` names a direction
    change_pitch_st: float = 2.0
    change_rate_ratio: float = 1.2  # faster at or above this, slower at or below its inverse
    min_third_s: float = 0.5  # a third of the speech span shorter than this is too short to compare


# ---------------------------------------------------------------------------------------
# Syllables from text


# Vowel letters of the alphabetic scripts after accent folding: a syllable is a run of them.
_VOWELS = {
    "LATIN": frozenset("aeiouyæøœ"),
    "CYRILLIC": frozenset("аеёиоуыэюяєіїў"),
    "GREEK": frozenset("αεηιουω"),
}
# Scripts written a syllable (or mora) a character: Chinese characters, kana, Hangul blocks.
_SYLLABIC = ("CJK", "HIRAGANA", "KATAKANA", "HANGUL")


def _script(char: str) -> str:
    name = unicodedata.name(char, "")
    for syllabic in _SYLLABIC:
        if name.startswith(syllabic):
            return syllabic
    return name.split(" ", 1)[0] if name else "UNKNOWN"


def syllable_count(word: str, language: str | None = None) -> tuple[int | None, str | None]:
    """Estimated syllables of one written word, or None with the reason.

    Alphabetic scripts (Latin, Cyrillic, Greek): runs of vowel letters after NFKC,
    case folding and accent folding; in English a final silent "e" ("made", not
    "little") is not counted. Chinese characters, kana (small kana excepted) and
    Hangul blocks: one each. Other scripts have no estimate.
    """
    text = unicodedata.normalize("NFKC", word).casefold()
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return None, f"no letters in {word.strip()!r}"
    scripts = {_script(c) for c in letters}
    if scripts <= set(_SYLLABIC):
        count = sum(1 for c in letters if "SMALL" not in unicodedata.name(c, ""))
        return count, None
    unknown = sorted(s.title() for s in scripts if s not in _VOWELS)
    if unknown:
        return None, f"no syllable estimate for the {', '.join(unknown)} script"
    folded = "".join(c for c in unicodedata.normalize("NFD", "".join(letters)) if not unicodedata.combining(c))
    vowels = frozenset().union(*(_VOWELS[s] for s in scripts))
    count = sum(1 for k, c in enumerate(folded) if c in vowels and (k == 0 or folded[k - 1] not in vowels))
    if (language or "").split("-")[0] == "en" and count > 1 and folded.endswith("e") and not folded.endswith("le"):
        count -= 1
    if count == 0:
        return None, f"no vowel letter in {word.strip()!r}"
    return count, None


# ---------------------------------------------------------------------------------------
# Frame tracks


@dataclass
class Frames:
    """The clip on one 10 ms grid: frame centres (s), level (dB), F0 (Hz, 0 unvoiced), sounding."""

    times: np.ndarray
    level_db: np.ndarray
    f0: np.ndarray
    sounding: np.ndarray

    @property
    def voiced(self) -> np.ndarray:
        return self.f0 > 0

    def within(self, start: float, end: float) -> np.ndarray:
        return (self.times >= start) & (self.times < end)


def frame_tracks(samples: np.ndarray, rate: int, config: ProsodyConfig) -> Frames:
    """Level blocks (loudness.py), F0 (pitch.py, the pitch extractor's settings) and sounding frames (voicing.py)."""
    overlap = 1.0 - _HOP_S / config.level_block_s
    powers = block_powers(samples, rate, config.level_block_s, overlap)
    _, block_lufs = gated_loudness(powers)
    level = np.maximum(np.nan_to_num(block_lufs, nan=_SILENT_DB, neginf=_SILENT_DB), _SILENT_DB)
    times = np.arange(len(level)) * _HOP_S + config.level_block_s / 2.0
    track = track_pitch(samples, rate, PitchConfig(time_step_s=_HOP_S))
    f0 = np.zeros(len(times))
    if len(track.times):
        nearest = np.clip(np.round((times - track.times[0]) / _HOP_S).astype(int), 0, len(track.times) - 1)
        close = np.abs(track.times[nearest] - times) <= _HOP_S / 2 + 1e-9
        f0[close] = track.f0[nearest[close]]
    voiced = f0 > 0
    # Without any voice (whispered speech) nothing tells speech from a breath: every stretch above the level
    # threshold is speech.
    if np.count_nonzero(voiced) * _HOP_S < PitchConfig().min_voiced_s:
        voiced = np.ones(len(times), dtype=bool)
    sounding = sounding_frames(level, voiced, VoicingConfig(time_step_s=_HOP_S))
    return Frames(times, level, f0, sounding)


def _power_mean_db(level_db: np.ndarray) -> float:
    return float(10.0 * np.log10(np.mean(np.power(10.0, level_db / 10.0))))


def _semitones(f0: np.ndarray, reference_hz: float) -> np.ndarray:
    return 12.0 * np.log2(f0 / reference_hz)


def _round(value: float | None, digits: int = 2) -> float | None:
    return None if value is None or not math.isfinite(value) else round(float(value), digits)


# ---------------------------------------------------------------------------------------
# Word times onto the signal


def align_words(
    spans: list[tuple[float, float]], syllables: list[int | None], frames: Frames, config: ProsodyConfig
) -> tuple[list[tuple[float, float]], float | None]:
    """The words' time spans moved onto the syllable nuclei of the signal, and the shift of the recogniser's times
    (None, and the spans as given, when no boundary between two words could be placed)."""
    if config.align_rounds < 1:
        return list(spans), None
    nuclei = nucleus_frames(frames.level_db, frames.sounding, frames.voiced, VoicingConfig(time_step_s=_HOP_S))
    counts = [c or 1 for c in syllables]

    def assign(offset: float) -> tuple[list[tuple[float, float]], list[float]]:
        """The spans bounded by the nuclei assigned to them when moved by `offset`, and the moves of the
        boundaries the signal placed."""
        moved = [(start + offset, end + offset) for start, end in spans]
        owned = _assign_nuclei(frames.times[nuclei], moved, counts, config)
        aligned = _bounds(moved, [[int(nuclei[k]) for k in held] for held in owned], frames)
        return aligned, [aligned[i][1] - spans[i][1] for i in range(len(spans) - 1) if owned[i] and owned[i + 1]]

    # The first assignment starts from the recogniser's usual lateness: started from its own times, a word
    # takes its late neighbour's first syllable, the boundaries move late and later rounds keep them there.
    shift = config.align_start_shift_s
    aligned, moves = assign(shift)
    if not moves:  # no boundary placed: nothing measures a shift
        return assign(0.0)[0], None
    for _ in range(config.align_rounds):
        measured = min(float(np.median(moves)), config.align_max_shift_s)
        settled = abs(measured - shift) < _HOP_S / 2
        shift = measured
        if settled:
            break
        aligned, moves = assign(shift)
        if not moves:
            break
    return aligned, shift


def _assign_nuclei(
    times: np.ndarray, spans: list[tuple[float, float]], syllables: list[int], config: ProsodyConfig
) -> list[list[int]]:
    """Nuclei (indices into `times`, in time order) for each word, a block of words at a time (memory stays
    bounded on long clips)."""
    owned: list[list[int]] = []
    taken_up_to = 0
    for low in range(0, len(spans), _ALIGN_BLOCK_WORDS):
        block = spans[low : low + _ALIGN_BLOCK_WORDS]
        first = max(taken_up_to, int(np.searchsorted(times, block[0][0] - config.align_reach_s)))
        last = max(first, int(np.searchsorted(times, max(end for _, end in block) + config.align_reach_s)))
        for nuclei in _assign_block(times[first:last], block, syllables[low : low + len(block)], config):
            owned.append([first + k for k in nuclei])
            taken_up_to = max([taken_up_to] + [first + k + 1 for k in nuclei])
    return owned


def _assign_block(
    times: np.ndarray, spans: list[tuple[float, float]], syllables: list[int], config: ProsodyConfig
) -> list[list[int]]:
    """The monotone assignment of least cost: a word costs one per syllable it holds too many or too few, each
    nucleus its distance outside its word's span (one per `align_seconds_per_cost`), a nucleus given to no word
    `align_skip_cost`."""
    n, m = len(spans), len(times)
    steps = np.arange(m + 1) * config.align_skip_cost
    cost = steps.copy()  # nuclei before the first word belong to none
    taken = np.zeros((n, m + 1), dtype=np.int32)  # nuclei word i holds when the first i+1 words hold j; -1: skip
    for i, ((start, end), count) in enumerate(zip(spans, syllables)):
        row = cost + count  # the word holds none
        outside = np.maximum(np.maximum(start - times, times - end), 0.0) / config.align_seconds_per_cost
        first = int(np.searchsorted(times, start - config.align_reach_s))
        last = int(np.searchsorted(times, end + config.align_reach_s))
        for j in range(first + 1, last + 1):
            held = 0.0
            for k in range(1, min(count + 3, j - first) + 1):
                held += outside[j - k]
                c = cost[j - k] + abs(k - count) + held
                if c < row[j]:
                    row[j], taken[i, j] = c, k
        # a nucleus between this word's and the next word's belongs to none
        relative = row - steps
        best = np.minimum.accumulate(relative)
        taken[i, best < relative] = -1
        cost = best + steps
    owned: list[list[int]] = [[] for _ in range(n)]
    i, j = n - 1, m
    while i >= 0:
        k = int(taken[i, j])
        if k < 0:
            j -= 1
            continue
        owned[i] = list(range(j - k, j))
        i, j = i - 1, j - k
    return owned


def _bounds(spans: list[tuple[float, float]], owned: list[list[int]], frames: Frames) -> list[tuple[float, float]]:
    """Spans whose shared boundaries lie between the nuclei of the words either side: at the silence there, else
    at the lowest level; a word without nuclei keeps its span, inside its neighbours'."""
    bounds = [list(span) for span in spans]
    for i in range(len(spans) - 1):
        if owned[i] and owned[i + 1]:
            between = np.arange(owned[i][-1], owned[i + 1][0] + 1)
            silent = between[~frames.sounding[between]]
            if len(silent):
                bounds[i][1], bounds[i + 1][0] = frames.times[silent[0]], frames.times[silent[-1]] + _HOP_S
            else:
                bounds[i][1] = bounds[i + 1][0] = frames.times[between[np.argmin(frames.level_db[between])]]
    for i, (start, end) in enumerate(bounds):
        if owned[i]:  # a word's span holds its own nuclei
            start = min(start, frames.times[owned[i][0]] - _HOP_S)
            end = max(end, frames.times[owned[i][-1]] + _HOP_S)
        low = bounds[i - 1][1] if i > 0 and owned[i - 1] else -math.inf
        high = bounds[i + 1][0] if i + 1 < len(bounds) and owned[i + 1] else math.inf
        if min(end, high) - max(start, low) >= 2 * _HOP_S:  # else (a word the signal shows no syllable of) as given
            start, end = max(start, low), min(end, high)
        bounds[i] = [start, end]
    return [(float(a), float(b)) for a, b in bounds]


# ---------------------------------------------------------------------------------------
# Per word


@dataclass
class _Word:
    text: str
    start: float
    end: float
    pitch_st: np.ndarray  # voiced frames, semitones re the clip median
    sounding_s: float
    level_db: float | None  # absolute (dB), relative only once the clip's speech level is known
    syllables: int | None
    reasons: dict[str, str]


def _time_problem(start: float, end: float, frames: Frames) -> str | None:
    """Why the recogniser's times of a word cannot place it, else None."""
    if not (math.isfinite(start) and math.isfinite(end)) or end <= start:
        return "times unreliable: zero length" if end == start else "times unreliable: ends before it starts"
    if start >= frames.times[-1]:
        return "times unreliable: beyond the end of the audio"
    return None


def _measure_word(
    text: str,
    span: tuple[float, float],
    syllables: tuple[int | None, str | None],
    problem: str | None,
    frames,
    median_hz,
) -> _Word:
    start, end = span
    inside = frames.within(start, end)
    if problem is None and np.count_nonzero(inside) < 2:
        problem = "word shorter than 2 frames"
    if problem is not None:
        return _Word(text, start, end, np.zeros(0), 0.0, None, syllables[0], {"all": problem})
    reasons = {"duration_ratio": syllables[1]} if syllables[1] else {}
    voiced = inside & frames.voiced
    pitch = _semitones(frames.f0[voiced], median_hz) if median_hz else np.zeros(0)
    sounding = inside & frames.sounding
    level = _power_mean_db(frames.level_db[sounding if sounding.any() else inside])
    if not sounding.any():
        reasons["duration_ratio"] = "no sounding frame in the word's time span"
    return _Word(text, start, end, pitch, float(np.count_nonzero(sounding)) * _HOP_S, level, syllables[0], reasons)


def _zscores(values: list[float | None], min_count: int) -> list[float | None]:
    present = np.array([v for v in values if v is not None], dtype=np.float64)
    if len(present) < min_count or float(np.std(present)) == 0.0:
        return [None] * len(values)
    mean, std = float(np.mean(present)), float(np.std(present))
    return [None if v is None else (v - mean) / std for v in values]


PROMINENCE_PARTS = ("pitch_median_st", "pitch_range_st", "loudness_db", "duration_ratio")


def prominences(words: list[dict], config: ProsodyConfig) -> list[float | None]:
    """Each word's prominence: the weighted mean of its z-scores within the clip over PROMINENCE_PARTS (the
    duration ratio as its log), over the parts it has; None where it has none. `words` hold the parts by name."""
    columns = []
    for name in PROMINENCE_PARTS:
        values = [w.get(name) for w in words]
        if name == "duration_ratio":
            values = [None if v is None or v <= 0 else math.log2(v) for v in values]
        columns.append(_zscores(values, config.min_words))
    out: list[float | None] = []
    for k in range(len(words)):
        weighed = [
            (weight, score)
            for weight, z in zip(config.prominence_weights, columns)
            if weight and (score := z[k]) is not None
        ]
        total = sum(weight for weight, _ in weighed)
        out.append(sum(weight * score for weight, score in weighed) / total if total else None)
    return out


def _word_entries(words: list[_Word], speech_db: float | None, median_hz: float | None, config: ProsodyConfig):
    pitch_median: list[float | None] = []
    pitch_range: list[float | None] = []
    loudness: list[float | None] = []
    durations: list[float | None] = []
    for w in words:
        if "all" in w.reasons:
            pitch_median.append(None)
            pitch_range.append(None)
            loudness.append(None)
            continue
        n = len(w.pitch_st)
        if median_hz is None:
            w.reasons["pitch"] = "no voice found in the clip"
        elif n < config.min_voiced_frames:
            w.reasons["pitch"] = (
                "no voiced frame" if n == 0 else f"{n} voiced frame(s), fewer than {config.min_voiced_frames}"
            )
        pitch_median.append(float(np.median(w.pitch_st)) if n >= config.min_voiced_frames else None)
        if n >= config.min_range_frames:
            low, high = np.percentile(w.pitch_st, [10, 90])
            pitch_range.append(float(high - low))
        else:
            pitch_range.append(None)
            if "pitch" not in w.reasons:
                w.reasons["pitch_range"] = f"{n} voiced frames, fewer than {config.min_range_frames}"
        if speech_db is None or w.level_db is None:
            w.reasons["loudness"] = "no sounding frame inside any word: no speech level to compare with"
        loudness.append(w.level_db - speech_db if w.level_db is not None and speech_db is not None else None)

    # The clip's mean syllable duration over the words that have syllables and sounding time.
    timed = [w for w in words if w.syllables and w.sounding_s > 0 and "all" not in w.reasons]
    syllable_s = sum(w.sounding_s for w in timed) / sum(w.syllables or 0 for w in timed) if timed else None
    for w in words:
        if w in timed and syllable_s:
            durations.append(w.sounding_s / ((w.syllables or 0) * syllable_s))
        else:
            durations.append(None)

    parts = [
        {"pitch_median_st": m, "pitch_range_st": r, "loudness_db": v, "duration_ratio": d}
        for m, r, v, d in zip(pitch_median, pitch_range, loudness, durations)
    ]
    entries = []
    for k, (w, prominence) in enumerate(zip(words, prominences(parts, config))):
        if prominence is None and "all" not in w.reasons:
            w.reasons["prominence"] = (
                f"nothing to compare: fewer than {config.min_words} words with a pitch, pitch range, level or duration"
                if len(words) >= config.min_words
                else f"{len(words)} word(s): a prominence needs at least {config.min_words} to compare"
            )
        entries.append(
            {
                "word": w.text,
                "start": round(w.start, 2),
                "end": round(w.end, 2),
                "pitch_median_st": _round(pitch_median[k]),
                "pitch_range_st": _round(pitch_range[k]),
                "loudness_db": _round(loudness[k]),
                "duration_ratio": _round(durations[k]),
                "prominence": _round(prominence),
                "reason": _reason_text(w.reasons),
            }
        )
    return entries


def _reason_text(reasons: dict[str, str]) -> str | None:
    if not reasons:
        return None
    if "all" in reasons:
        return reasons["all"]
    return "; ".join(f"{field}: {why}" for field, why in reasons.items())


# ---------------------------------------------------------------------------------------
# Pauses, phrases, changes


def _pauses(words: list[_Word], frames: Frames, config: ProsodyConfig) -> list[dict]:
    """Silent stretches between speech, placed at the word boundary they cover or lie nearest to."""
    if len(words) < 2 or not frames.sounding.any():
        return []
    runs = Stretches.of(frames.sounding)
    placed: dict[int, float] = {}
    for k, (start, length, sounding) in enumerate(zip(runs.starts, runs.lengths, runs.values)):
        if sounding or k == 0 or k == len(runs.starts) - 1:  # leading and trailing silence is no pause
            continue
        low, high = frames.times[start] - _HOP_S / 2, frames.times[start + length - 1] + _HOP_S / 2
        best, best_distance = None, config.pause_reach_s
        for i in range(len(words) - 1):
            gap_low, gap_high = sorted((words[i].end, words[i + 1].start))
            distance = max(gap_low - high, low - gap_high, 0.0)
            if distance < best_distance or (distance == best_distance == 0.0 and best is None):
                best, best_distance = i, distance
        if best is not None:
            placed[best] = placed.get(best, 0.0) + length * _HOP_S
    return [{"after_word": i, "word": words[i].text, "duration_s": round(placed[i], 2)} for i in sorted(placed)]


def _final_change(times: np.ndarray, semitones: np.ndarray, config: ProsodyConfig) -> float | None:
    """The rise (+) or fall (-) at the end of a phrase, semitones: the pitch of its last 0.1 s of voiced frames
    against the low (10th percentile) and the high (90th) of its last `final_window_s`, whichever is further;
    where the pitch of its last `_RISE_END_FRAMES` voiced frames reads as a larger rise, that rise.

    A question's V (a fall to the nucleus, then the rise) counts as the rise it ends with. The last frames count
    for a rise only: a median over 0.1 s lags behind a steep final rise, while a creaky end's halved pitch
    would make a short ending read as a fall."""
    if not len(times):
        return None
    window = times >= times[-1] - config.final_window_s
    if np.count_nonzero(window) < config.min_final_voiced_frames:
        return None
    low, high = np.percentile(semitones[window], [10, 90])

    def movement(end: float) -> float:
        rise, fall = end - low, end - high
        return float(rise if rise >= -fall else fall)

    over_end = movement(float(np.median(semitones[times >= times[-1] - _END_S])))
    at_end = movement(float(np.median(semitones[-_RISE_END_FRAMES:])))
    return max(over_end, at_end) if at_end > 0 else over_end


def _phrases(
    words: list[_Word], pauses: list[dict], frames: Frames, median_hz: float | None, config: ProsodyConfig
) -> list[dict]:
    ends = {p["after_word"] for p in pauses}
    ends |= {i for i, w in enumerate(words) if w.text and w.text[-1] in _SENTENCE_END}
    ends.add(len(words) - 1)
    phrases, first = [], 0
    for last in sorted(ends):
        start, end = words[first].start, max(w.end for w in words[first : last + 1])
        # The recogniser often ends a phrase's last word early: the phrase runs on to the end of the speech
        # its last word ends in (never into the next word).
        end = min(_sounding_until(frames, end), words[last + 1].start if last + 1 < len(words) else math.inf)
        phrase: dict[str, Any] = {
            "first_word": first,
            "last_word": last,
            "text": " ".join(w.text for w in words[first : last + 1]),
            "final_contour": None,
            "final_change_st": None,
            "reason": None,
        }
        voiced = frames.within(start, end) & frames.voiced
        change = (
            _final_change(frames.times[voiced], _semitones(frames.f0[voiced], median_hz), config) if median_hz else None
        )
        if median_hz is None:
            phrase["reason"] = "no voice found in the clip"
        elif change is None:
            phrase["reason"] = (
                f"fewer than {config.min_final_voiced_frames} voiced frames in its last {config.final_window_s} s"
            )
        else:
            phrase["final_change_st"] = _round(change)
            phrase["final_contour"] = (
                "rising"
                if change >= config.contour_threshold_st
                else "falling"
                if change <= -config.contour_threshold_st
                else "level"
            )
        phrases.append(phrase)
        first = last + 1
    return phrases


def _sounding_until(frames: Frames, t: float) -> float:
    """The end of the sounding stretch holding time t (t itself when it falls in silence)."""
    k = int(np.searchsorted(frames.times, t)) - 1
    if k < 0 or not frames.sounding[k]:
        return t
    silent = np.flatnonzero(~frames.sounding[k:])
    last = k + int(silent[0]) - 1 if len(silent) else len(frames.times) - 1
    return max(t, float(frames.times[last]) + _HOP_S / 2)


def _direction(change: float, threshold: float, up: str, down: str) -> str:
    return up if change >= threshold else down if change <= -threshold else "steady"


@dataclass
class _Third:
    level_db: float | None  # speech level: power mean of the sounding frames inside words
    pitch_st: float | None  # median voiced pitch re the clip median
    syllable_rate: float | None  # syllables per sounding second of its words


def _third(
    words: list[_Word], low: float, high: float, in_words: np.ndarray, frames: Frames, median_hz: float | None, config
) -> _Third:
    span = frames.within(low, high)
    speech = span & in_words & frames.sounding
    voiced = span & frames.voiced
    pitch = None
    if median_hz is not None and np.count_nonzero(voiced) >= config.min_final_voiced_frames:
        pitch = float(np.median(_semitones(frames.f0[voiced], median_hz)))
    timed = [w for w in words if low <= (w.start + w.end) / 2 <= high and w.syllables and w.sounding_s > 0]
    seconds = sum(w.sounding_s for w in timed)
    rate = sum(w.syllables or 0 for w in timed) / seconds if len(timed) >= 2 else None
    return _Third(_power_mean_db(frames.level_db[speech]) if speech.any() else None, pitch, rate)


def _changes(words: list[_Word], frames: Frames, median_hz: float | None, config: ProsodyConfig) -> dict:
    """The last third of the speech span against the first, with direction words."""
    changes: dict[str, Any] = dict.fromkeys(("loudness_db", "loudness", "pitch_st", "pitch", "rate_ratio", "rate"))
    usable = [w for w in words if "all" not in w.reasons]
    start, end = (usable[0].start, max(w.end for w in usable)) if usable else (0.0, 0.0)
    third = (end - start) / 3.0
    if third < config.min_third_s:
        changes["reason"] = (
            f"{end - start:.2f} s of speech: too short to compare thirds of at least {config.min_third_s} s"
        )
        return changes
    in_words = np.zeros(len(frames.times), dtype=bool)
    for w in usable:
        in_words |= frames.within(w.start, w.end)
    first = _third(usable, start, start + third, in_words, frames, median_hz, config)
    last = _third(usable, end - third, end, in_words, frames, median_hz, config)
    reasons = []
    if first.level_db is not None and last.level_db is not None:
        changes["loudness_db"] = _round(last.level_db - first.level_db)
        changes["loudness"] = _direction(last.level_db - first.level_db, config.change_loudness_db, "louder", "quieter")
    else:
        reasons.append("loudness: a third has no sounding frame inside a word")
    if first.pitch_st is not None and last.pitch_st is not None:
        changes["pitch_st"] = _round(last.pitch_st - first.pitch_st)
        changes["pitch"] = _direction(last.pitch_st - first.pitch_st, config.change_pitch_st, "higher", "lower")
    else:
        reasons.append(f"pitch: a third has fewer than {config.min_final_voiced_frames} voiced frames")
    if first.syllable_rate and last.syllable_rate is not None:
        ratio = last.syllable_rate / first.syllable_rate
        changes["rate_ratio"] = _round(ratio)
        changes["rate"] = _direction(math.log(ratio), math.log(config.change_rate_ratio), "faster", "slower")
    else:
        reasons.append("rate: a third has fewer than 2 words with syllables and sounding time")
    changes["reason"] = "; ".join(reasons) or None
    return changes


# ---------------------------------------------------------------------------------------


def prosody(samples: np.ndarray, rate: int, words: list[dict], language: str | None, config: ProsodyConfig) -> dict:
    """The agent_prosody section of one clip from its samples and recognised words (times in seconds)."""
    frames = frame_tracks(samples, rate, config)
    voiced_f0 = frames.f0[frames.voiced]
    median_hz = float(np.median(voiced_f0)) if len(voiced_f0) * _HOP_S >= PitchConfig().min_voiced_s else None
    texts = [str(w.get("word", "")).strip() for w in words]
    spans = [(float(w["start"]), float(w["end"])) for w in words]
    counted = [syllable_count(text, language) for text in texts]
    problems = [_time_problem(start, end, frames) for start, end in spans]
    placed = [k for k, problem in enumerate(problems) if problem is None]
    aligned, shift = align_words([spans[k] for k in placed], [counted[k][0] for k in placed], frames, config)
    duration_s = len(samples) / rate
    for k, (start, end) in zip(placed, aligned):
        spans[k] = (max(start, 0.0), min(end, duration_s))
    measured = [_measure_word(*args, frames, median_hz) for args in zip(texts, spans, counted, problems)]
    sounding_in_words = np.zeros(len(frames.times), dtype=bool)
    for w in measured:
        if "all" not in w.reasons:
            sounding_in_words |= frames.within(w.start, w.end) & frames.sounding
    speech_db = _power_mean_db(frames.level_db[sounding_in_words]) if sounding_in_words.any() else None
    entries = _word_entries(measured, speech_db, median_hz, config)
    ranked = sorted(
        (k for k, e in enumerate(entries) if e["prominence"] is not None and e["prominence"] >= config.prominent_z),
        key=lambda k: (-entries[k]["prominence"], k),
    )[: config.max_prominent]
    pauses = _pauses(measured, frames, config)
    return {
        "speaker_median_pitch_hz": _round(median_hz),
        "time_shift_s": _round(shift),
        "words": entries,
        "prominent_words": [
            {"index": k, "word": entries[k]["word"], "prominence": entries[k]["prominence"]} for k in ranked
        ],
        "phrases": _phrases(measured, pauses, frames, median_hz, config),
        "pauses": pauses,
        "changes": _changes(measured, frames, median_hz, config),
    }


@register
class ProsodyExtractor(Extractor):
    name = "prosody"
    # 5: the rounds settle no later than -0.1 s (align_max_shift_s); 4: the alignment starts 0.1 s early
    # (align_start_shift_s); 3: prominence weighs its parts
    version = "5"
    description = "pitch, loudness, duration and prominence per word; phrase endings, pauses and changes"
    sample_rate = 16000
    depends_on = ("asr",)
    outputs = (SECTION,)
    libraries = ("praat-parselmouth", "pyloudnorm", "scipy", "numpy")
    Config = ProsodyConfig

    def load(self) -> None:
        import parselmouth  # noqa: F401
        import pyloudnorm  # noqa: F401

    def extract_one(self, clip: Clip) -> Section:
        config: ProsodyConfig = self.config
        blueprint = clip.blueprint
        words = blueprint.get("words")
        quality = blueprint.get("transcript_quality") or {}
        if words is None:
            return _null("no word timings: asr did not run or failed on this clip")
        if words and quality.get("reliable") is False:
            return _null(f"transcript unreliable: {quality.get('reason') or 'no reason recorded'}")
        if not words:
            why = (blueprint.get("asr") or {}).get("reason")
            return _null(f"no words transcribed: {why}" if why else "no words transcribed")
        samples = clip.samples(self.sample_rate)
        if len(samples) < 2 * config.level_block_s * self.sample_rate:
            return _null(f"clip of {len(samples) / self.sample_rate:.2f} s is too short to measure prosody")
        try:
            values = prosody(samples, self.sample_rate, words, _language(blueprint), config)
        except (KeyError, TypeError, ValueError) as e:
            raise ClipError(f"malformed word timings: {type(e).__name__}: {e}") from e
        reasons = {}
        if values["speaker_median_pitch_hz"] is None:
            reasons[f"{SECTION}.speaker_median_pitch_hz"] = "no voice found: less voiced time than pitch analysis needs"
        return Section({SECTION: values}, reasons)


def _null(reason: str) -> Section:
    return Section({SECTION: None}, {SECTION: reason})


def _language(blueprint: dict) -> str | None:
    """The clip's language code: the blueprint's `language` where it has one, else the recogniser's."""
    language = blueprint.get("language")
    if isinstance(language, dict) and language.get("code"):
        return str(language["code"])
    return (blueprint.get("asr") or {}).get("language")
