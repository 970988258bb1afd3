"""The offline `cues` backbone: deterministic rules over the blueprints, no network, no key.

A transparent baseline and the default when no model is configured. It answers
with the same verdict JSON as an LLM (its reasoning lists every cue it used) and
goes through the same parser, so a run folder looks the same whoever judged.

Each response is first found acceptable, not acceptable, or *unknown* on a
dimension (the cue that decides it is missing); the typed-tie label follows as
for any judge when both are known. When either is unknown the dimension is
**undetermined**: its label is null and the verdict's `undetermined` object
says which cue was missing, e.g.

    {"content": null, "undetermined": {"content": "no quoted words in the instruction: ..."}, ...}

The item's fused labels are then null under every policy, and evaluation counts
it against coverage, never as a guessed label. A measured failure is evidence
even when another cue is missing: a response that fails one measured cue is not
acceptable whatever the unmeasured ones say.

Reading the instruction (`read_instruction`): words to say are quoted in
straight or curly double quotes ("...", “...”), curly single quotes (‘...’) or
straight single quotes ('potato', as SpeakBench writes them; an apostrophe
inside a word, "don't", "the speaker's", is not a quote). Bracketed directives
(S2S-Arena: "[emotion: sad]What should I do now?") are part of the manner
asked for, so their cue words count as paralinguistic cues.

Rules, per dimension:

- Content: a response with no recognised speech is not acceptable. When the
  instruction quotes words to say, a response is acceptable when the
  best-matching stretch of its transcript says at least 20% of the quoted words
  in order, each word weighed by its letters, and the transcript is at least 75%
  as long as the quote (a fragment is not the sentence: the first half of an
  answer is heard 53-66% as long, whole answers 97-107%, in examples/mini's bias
  audit). Words, not letters: a
  heard word counts as a quoted one when spelt the same or nearly so (80%
  similar, four letters or more; "Mr" is "mister"), so recognisers' small slips
  pass, while another sentence keeps only the function words it shares (at most
  8% in the calibration set) and a near miss loses its word ("Calling" for "Call
  waiting": 0%; but "Open the door" for "Open the window" keeps 54% and passes).
  The floor sits in the middle of the fitted range 10-35%: Whisper tiny.en hears
  some espeak-ng voices so badly that the right sentence keeps 0-28%.
  Unknown: a response that has speech when nothing is quoted (whether it
  answers a free-form question is beyond these rules), and a transcript that
  is missing or that the blueprint marks unreliable. A spoken instruction with
  no written text is read from its transcript: after a lead-in that gives words
  to say ("say", "repeat", "di", "repita", "dis", "sag", "说"), the rest is the
  words to say (`spoken_words`). An answer longer than `content_max_s` fails
  whatever it says; one whose audio is empty or does not decode (`answer_failed`)
  says nothing, and fails every dimension.
- Voice Quality: acceptable when DNSMOS P.808 overall quality is at least 2.7,
  the personalised background (noise) score BAK at least 1.45 and the integrated
  loudness at least -45 LUFS (quieter is too quiet to hear comfortably: DNSMOS
  scores a clip 30 dB quieter the same). Of two acceptable responses one wins,
  within the pair, when it sounds clearly better. The much quieter one loses:
  12 LU or more below the other and below -32.5 LUFS, where a listener strains
  or reaches for the volume (a clean answer against the same turned down to -35
  or -40 LUFS in the calibration set; never the bias audit's 3 and 6 dB steps),
  unless the instruction asks for a loudness (then it is Paralinguistics'). At one pace and in one voice
  register (speaking rates less than 1.4 times apart, mean pitches less than
  1.25 times), its P.808 higher by 0.35 and its BAK by 0.05 (audible noise
  against less: the same speech with noise at 11-20 dB SNR against a clean
  copy); across paces or voices DNSMOS leads are no evidence of noise (fast
  speech scores 0.6-1.3 lower, a female espeak voice's BAK as low as
  speech under noise). Or its P.808 higher by 0.85 alone (heavy clipping),
  unless the paces differ (pace is Paralinguistics' business). Fitted on
  `scripts/make_calibration.py`'s set (docs/calibration.md, "Calibration").
  BAK alone cannot carry the floor: clean female espeak voices score
  down to 1.55, as low as speech under 9 dB white noise, so it only rejects severe
  noise. A response with no speech is not acceptable. Unknown: P.808, BAK or
  loudness null or dropped with --drop.
- Paralinguistics: cue words in the instruction outside the quoted words:
  slow/fast -> speaking rate over the speech, first word to last, silence around the answer left out
  (at most 130 / at least 200 WPM);
  quiet/whisper/loud -> integrated loudness (at most -30 / at least -26 LUFS);
  high/low/deep -> mean pitch (at least 180 / at most 90 Hz); emotion words ->
  the emotion scores; slow ... then fast (or "speed up", "slow down") -> the
  speaking rate of the later half of the words against the earlier half (word
  timings, else the pace contour), changed 1.8 times or more; a stressed word, a
  question or a statement, a pause after each word, louder / quieter / higher /
  lower along the answer -> the blueprint's agent_prosody (prosody_rules.py, its
  own thresholds in `Thresholds.prosody`). A response must
  meet every cue found; with no cue word both are acceptable; a response with
  no speech at all (an empty transcript the blueprint trusts) meets none of the
  manners asked for. Unknown: a cue asked for that is null, dropped with --drop,
  or derived from a transcript marked unreliable (the signal-only syllable rate
  still stands in for the speaking rate), and a manner no rule measures
  (`UNMEASURED_MANNERS`: an accent, singing, a robotic voice, intonation or
  emphasis or pauses the prosody rules do not read, imitation, politeness, sarcasm, warmth, excitement asked
  without an emotion word, other tones; and any other manner asked in words
  these rules do not know: "in a <word> tone", or an adverb on a speaking verb,
  "say it solemnly").

Languages (`trace_eval.judge.languages`): words are compared after NFKC, case and accent folding, and
scripts without spaces by overlapping pairs of characters (`trace_eval.text.match_tokens`). An answer heard in another
language than the one asked for (the instruction's, unless it asks for another in words) fails Content; when
it asks for another language, its quoted words may be a text to translate, so not saying them is no
failure. Where the instruction's language cannot be told (by its audio, text or transcript), saying its quoted
words is no pass: an English answer says most of a Spanish sentence's cognates. Manner requests are read with the
table of the instruction's language; a language without one leaves Paralinguistics undetermined.

The numbers are in `Thresholds`; they match how the bundled example is made
(examples/mini/README.md), where the rules recover every label.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from difflib import SequenceMatcher

import fusion
from trace_eval.judge import languages, leadins
from trace_eval.judge.backbones import Backbone, BackboneSettings, Completion, FatalBackboneError
from trace_eval.judge.instructions import Instruction, read_instruction
from trace_eval.judge.prompts import Case
from trace_eval.judge.prosody_rules import (
    MANNER_WORDS,
    ProsodyCue,
    ProsodyThresholds,
    lead_margin,
    prosody_cues,
    shown_prosody,
)
from trace_eval.rubrics import Rubric, load_rubric
from trace_eval.text import match_tokens

__all__ = [
    "CUES_VERSION",
    "CuesBackbone",
    "Instruction",
    "Thresholds",
    "judge_case",
    "read_instruction",
    "transcript_doubt",
]

# 2: undetermined dimensions; single quotes and bracketed directives. 3: Voice Quality on P.808 and BAK.
# 4: a listener's rules: Voice Quality within the pair and a loudness floor, Content on words, unmeasured
# manners undetermined, no speech failing every manner. 5: speaking rate over the speech span (silence around
# an answer no longer makes it slow); Content needs 75% of the quote's length, not 60% (half an answer passed).
# 6: of two acceptable responses the much quieter one loses Voice Quality; an unrelated answer is a sure
# Content loss (its confidence from the longer quoted words it says, not the function words every sentence has).
# 7: Content's confidence follows the match: an answer at the quote's whole length is sure, not 1.25 units.
# 8: every language: words folded (NFKC, case, accents; characters for CJK), quotes of every language, an answer
# in another language than asked fails Content, manner requests read per language.
# 9: prosody requests decided from agent_prosody (prosody_rules.py): a stressed word, a question or a statement,
# a pause after each word, louder / quieter / higher / lower along the answer (English instructions).
# 10: the instruction's language read from its text where its audio cannot tell it; where neither can, an answer
# that says the words is not passed on them; a spoken instruction's words to say read from its transcript
# ("Di la conferencia ..."); an answer longer than `content_max_s` fails Content; a response whose audio is
# empty or broken (`answer_failed`) fails every dimension.
# 11: a word to stress that the recogniser wrote otherwise is found by its place in the quoted sentence.
# 12: a spoken instruction's words to say begin where an answer says the rest of its transcript, after a lead-in
# misheard or lost (leadins.ECHO); a lead-in misheard as a manner word asks for no manner ("vite" for "dites"); a
# question about how words are said ("how do you say this in Spanish") gives no words to say; the instruction's
# language weighs as a prior only on an answer whose evidence tested it (LanguageRule.untested).
# 13: an answer held to the expected language but transcribed in another is read from its decoding in the
# expected language where that decoding is the likelier (languages.expected_reading).
CUES_VERSION = "13"


@dataclass(frozen=True)
class Thresholds:
    """Every number the rules use. Rates: words per minute, syllables per second; loudness: LUFS; pitch: Hz."""

    content_min_recall: float = 0.2  # share of the quoted words (weighted by letters) said, in order
    content_min_length: float = 0.75  # transcript letters over quoted letters
    content_word_match: float = 0.8  # spelling similarity at which a heard word counts as the quoted one
    # An answer longer than this (seconds) fails Content whatever it says: no listener waits through it for the
    # answer to one instruction (a rambling answer is a wrong one, not one whose content is unknown).
    content_max_s: float = 300.0
    # Voice quality, DNSMOS MOS (1-5), fitted on scripts/make_calibration.py's set (docs/calibration.md).
    quality_min_p808: float = 2.7  # P.808 overall
    quality_min_background: float = 1.45  # personalised background (noise) quality, BAK
    quality_min_lufs: float = -45.0  # integrated loudness: quieter is too quiet to hear comfortably
    quality_quieter_lu: float = 12.0  # of two acceptable responses, one this much quieter than the other ...
    quality_comfortable_lufs: float = -32.5  # ... and below this level loses (a listener turns it up, or misses it)
    quality_clear_margin: float = 0.85  # P.808 lead that makes one of two acceptable responses the winner ...
    quality_pace_ratio: float = 1.4  # ... unless their speaking rates differ this much (pace, not quality)
    quality_voice_ratio: float = 1.25  # mean pitches within this: one voice register, DNSMOS leads comparable
    quality_noise_margin_p808: float = 0.35  # P.808 lead and ...
    quality_noise_margin_background: float = 0.05  # ... BAK lead together: audible noise against less
    slow_max_wpm: float = 130.0
    fast_min_wpm: float = 200.0
    slow_max_syllables_per_s: float = 3.5  # used when the transcript-based rate is missing
    fast_min_syllables_per_s: float = 5.5
    quiet_max_lufs: float = -30.0
    loud_min_lufs: float = -26.0
    high_min_hz: float = 180.0
    low_max_hz: float = 90.0
    emotion_min_score: float = 0.3  # or the top-scoring class
    pace_change_min_ratio: float = 1.8  # later over earlier speaking rate (or its inverse)
    # A detected language less sure than this is not held against an answer (nor an instruction's read from its text).
    language_min_probability: float = languages.MIN_PROBABILITY
    prosody: ProsodyThresholds = ProsodyThresholds()  # stressed words, endings, pauses, changes (prosody_rules.py)


DEFAULT_THRESHOLDS = Thresholds()


SLOW_WORDS = {"slow", "slowly", "slower", "leisurely", "unhurried"}
FAST_WORDS = {"fast", "quick", "quickly", "faster", "rapid", "rapidly", "hurried", "hurriedly"}
QUIET_WORDS = {"quiet", "quietly", "softly", "soft", "whisper", "whispering", "whispered", "hushed", "gently"}
LOUD_WORDS = {"loud", "loudly", "louder", "shout", "shouting", "yell", "yelling", "booming"}
EMOTION_WORDS = {
    "happy": "happy",
    "happily": "happy",
    "cheerful": "happy",
    "cheerfully": "happy",
    "joyful": "happy",
    "joyfully": "happy",
    "excited": "happy",
    "excitedly": "happy",
    "sad": "sad",
    "sadly": "sad",
    "sorrowful": "sad",
    "melancholy": "sad",
    "gloomy": "sad",
    "angry": "angry",
    "angrily": "angry",
    "furious": "angry",
    "furiously": "angry",
    "annoyed": "angry",
    "surprised": "surprised",
    "astonished": "surprised",
    "amazed": "surprised",
    "scared": "fearful",
    "afraid": "fearful",
    "fearful": "fearful",
    "frightened": "fearful",
    "nervous": "fearful",
    "disgusted": "disgusted",
    "disgust": "disgusted",
    "calm": "neutral",
    "calmly": "neutral",
    "neutral": "neutral",
}
_HIGH_PITCH = re.compile(r"\bhigh[- ]?pitch(?:ed)?\b|\bhigh(?:er)? voice\b|\bsqueaky\b")
_LOW_PITCH = re.compile(r"\bdeep\b|\blow[- ]?pitch(?:ed)?\b|\blow(?:er)?,? voice\b|\bdeeper\b")
_SPEED_UP = re.compile(r"\bspeed(?:ing)? up\b|\baccelerat\w*|\bfaster and faster\b")
_SLOW_DOWN = re.compile(r"\bslow(?:ing)? down\b|\bdecelerat\w*|\bslower and slower\b")
# Manners an instruction may ask for that no rule here measures: asked for, they leave Paralinguistics
# undetermined rather than passed by default.
UNMEASURED_MANNERS = {
    "accent": re.compile(r"\baccents?\b|\bdialect\b"),
    "singing": re.compile(r"\bsing(?:ing|s)?\b|\bsung\b|\bmelod\w*"),
    "robotic voice": re.compile(r"\brobot(?:ic)?\b"),
    "intonation": re.compile(r"\bintonation\b"),
    "emphasis": re.compile(r"\bemphasi[sz]\w*|\bstress(?:es|ing)? (?:on|the)\b"),
    "pauses": re.compile(r"\bpauses?\b|\bpausing\b"),
    "imitation": re.compile(r"\bimitat\w*|\bmimic\w*|\bimpression of\b"),
    "politeness": re.compile(r"\bpolite(?:ly|ness)?\b|\bcourteous(?:ly)?\b|\brude(?:ly)?\b"),
    "sarcasm": re.compile(r"\bsarcas\w*|\bironic\w*|\bmocking\w*"),
    "warmth": re.compile(r"\bwarm(?:ly|th)?\b|\bfriendly\b|\bkind(?:ly)?\b|\btender(?:ly)?\b|\bcold(?:ly)?\b"),
    "excitement": re.compile(r"\benthusias\w*|\benergetic\w*|\bexcitement\b"),
    "other tone": re.compile(
        r"\b(?:confident|serious|dramatic|playful|mysterious|sincere|formal|casual|"
        r"firm|authoritative|sultry|seductive|bored|shy|proud|persuasive|apologetic|"
        r"gentle|soothing|childlike|elderly)(?:ly)?\b"
    ),
}
# A manner asked for in words no rule knows: "in a <word> tone", or an adverb on a speaking verb.
_ASKED_MANNER = re.compile(
    r"\bin an? ([a-z-]+) (?:tone|voice|manner|way|style)\b|"
    r"\b(?:say|speak|read|repeat|tell|talk|answer|respond|reply)\b[^.?!:\"]{0,40}?\b([a-z]+ly)\b"
)
_NOT_A_MANNER = {
    "only",
    "really",
    "exactly",
    "just",
    "simply",
    "actually",
    "directly",
    "immediately",
    "briefly",
    "early",
    "finally",
    "fully",
    "normally",
    "naturally",
    "clearly",
    "daily",
    "usually",
    "correctly",
    "normal",
    "natural",
    "clear",
    "different",
    "same",
}


def _words(text: str, language: str | None = None) -> list[str]:
    return match_tokens(text, language)


def split_instruction(text: str) -> tuple[str, str]:
    """(the quoted words to say, the rest of the instruction), quotes joined in order."""
    instruction = read_instruction(text)
    return instruction.quoted, instruction.manner


def transcript_doubt(blueprint: dict | None) -> str | None:
    """Why the blueprint says not to trust its transcript (`transcript_quality.reliable` false), else None."""
    quality = (blueprint or {}).get("transcript_quality")
    if isinstance(quality, dict) and quality.get("reliable") is False:
        return f"transcript marked unreliable ({quality.get('reason') or 'no reason given'})"
    return None


def typed_tie(ok1: bool, ok2: bool, better: str | None = None) -> str:
    """The typed-tie label from two acceptability decisions and, when both pass, the clearly better one."""
    if ok1 and ok2 and better:
        return better
    return fusion.label_of(ok1, ok2)


def _duration(blueprint: dict | None) -> float | None:
    value = (blueprint or {}).get("duration_s")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _get(blueprint: dict | None, group: str, key: str) -> float | None:
    section = (blueprint or {}).get(group)
    value = section.get(key) if isinstance(section, dict) else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _fmt(value: float | None, unit: str = "") -> str:
    return "unmeasured" if value is None else f"{value:.3g}{unit}"


# -- Content ---------------------------------------------------------------------------


def _letters(words: list[str]) -> str:
    return "".join(words).replace("'", "")


_NUMBERS = dict(
    zip(
        "0 1 2 3 4 5 6 7 8 9 10 11 12".split(),
        "zero one two three four five six seven eight nine ten eleven twelve".split(),
    )
)
_NUMBERS |= {"mr": "mister", "mrs": "missus", "dr": "doctor", "st": "saint"}  # said in full, written short


def _same_word(heard: str, quoted: str, t: Thresholds) -> bool:
    """A heard word is the quoted one when spelt the same or nearly so ("colour"/"color", "dashwood"/"dashwoods")."""
    heard, quoted = _NUMBERS.get(heard, heard).replace("'", ""), _NUMBERS.get(quoted, quoted).replace("'", "")
    if heard == quoted:
        return True
    return min(len(heard), len(quoted)) >= 4 and SequenceMatcher(None, heard, quoted).ratio() >= t.content_word_match


def _recall(quoted: list[str], said: list[str], t: Thresholds | None = None) -> float:
    """Share of the quoted words said, in order, in the best-matching stretch of the transcript.

    Each word weighs its letters, so missing "window" costs more than missing "the", and the
    function words every sentence shares do not carry an unrelated one over the floor.
    """
    t = t or DEFAULT_THRESHOLDS
    total = len(_letters(quoted))
    if not total:
        return 1.0
    # A stretch a little longer than the quote, so words said around it (a preamble) do not count,
    # and a long answer cannot collect the words from all over.
    size = len(quoted) + max(3, len(quoted) // 2)
    best = 0
    for start in range(max(1, len(said) - size + 1)):
        # Heard words that are spelt nearly like a quoted word are read as that word, then aligned in order.
        window = [next((q for q in quoted if _same_word(w, q, t)), f"\0{w}") for w in said[start : start + size]]
        matcher = SequenceMatcher(None, quoted, window, autojunk=False)
        found = sum(len(_letters(quoted[m.a : m.a + m.size])) for m in matcher.get_matching_blocks())
        best = max(best, found)
    return best / total


def decide(oks: list[bool | None], missing: list[str]) -> tuple[str | None, str | None]:
    """(label, None) when both responses are known acceptable or not; else (None, what was missing)."""
    ok1, ok2 = oks
    if ok1 is None or ok2 is None:
        return None, "; ".join(dict.fromkeys(missing)) or "a deciding cue is missing"
    return typed_tie(ok1, ok2), None


Judgement = tuple[str | None, str, str | None]  # (label or None, what was read, why undetermined)


def judge_content(
    instruction: str,
    bp1: dict | None,
    bp2: dict | None,
    t: Thresholds,
    doubts: tuple[str | None, str | None] = (None, None),
    language: str | None = None,
) -> Judgement:
    read = read_instruction(instruction)
    quoted_words = _words(read.quoted, language)
    asked = languages.expected(read.manner, language)
    oks: list[bool | None] = []
    notes, missing = [], []
    for n, (bp, doubt) in enumerate(zip((bp1, bp2), doubts, strict=True), start=1):
        transcript = (bp or {}).get("agent_response")
        duration = _duration(bp)
        if duration is not None and duration > t.content_max_s:
            # Whatever it says, and however unsure its transcript: no listener waits this long for one answer.
            oks.append(False)
            notes.append(f"response {n} runs {duration:.0f} s, past the {t.content_max_s:g} s an answer may take")
            continue
        heard = languages.heard_in(asked, bp, t.language_min_probability)
        if transcript is None or doubt:
            oks.append(None)
            what = doubt or "transcript unmeasured"
            notes.append(f"response {n} {what}")
            missing.append(f"response {n} {what}")
        elif not transcript.strip():
            oks.append(False)
            failed = (bp or {}).get("answer_failed")
            notes.append(
                f"response {n} " + (f"could not be heard ({failed})" if failed else "has no recognised speech")
            )
        elif quoted_words:
            # Heard in the expected language, its words are read in it where its decoding there is the likelier.
            reading = languages.expected_reading(asked.language, bp, t.language_min_probability)
            if reading is not None:
                transcript = reading[0]
                notes.append(f"response {n} {reading[1]}")
            said = _words(transcript, language)
            recall = _recall(quoted_words, said, t)
            length = len(_letters(said)) / max(1, len(_letters(quoted_words)))
            says_them = recall >= t.content_min_recall and length >= t.content_min_length
            # Asked in another language, the quoted words may be a text to translate: not saying them is no failure.
            oks.append(None if asked.translating and not says_them else says_them)
            notes.append(f"response {n} says {recall:.0%} of the quoted words and is {length:.0%} as long")
            if oks[-1] is None:
                missing.append(f"the quoted words may be to translate into {languages.name(asked.language)}")
        else:
            oks.append(None)
            notes.append(f"response {n} has speech")
            missing.append("no quoted words in the instruction: nothing to check what is said against")
        if heard.in_language is False:
            oks[-1] = False  # an answer in another language than asked fails whatever it says
        elif oks[-1] and asked.language is None and asked.instruction == languages.ASKED_UNKNOWN:
            # Words said are no pass when the language they had to be said in is not known: an English answer
            # says most of a Spanish sentence's cognates ("conference", "extended").
            oks[-1] = None
            missing.append(f"the instruction's language could not be told, so response {n} may not be in it")
        if heard.what:
            notes.append(f"response {n} {heard.what}")
    rule = "no quoted words: only speech presence is evidence"
    if quoted_words:
        rule = (
            f"quoted words: {t.content_min_recall:.0%} of the words (by letters) and "
            f"{t.content_min_length:.0%} of the length needed"
        )
    if asked.language:
        rule += f"; {asked.describe()}"
    label, why = decide(oks, missing)
    return label, f"{rule}; " + ", ".join(notes), why


# -- Voice Quality -----------------------------------------------------------------------

# What a response needs on each quality cue: (section, key, name, Thresholds field). P.808 follows how a
# listener rates the whole clip; the background score (BAK) is the one made for noise; the integrated
# loudness says whether the answer can be heard at all (DNSMOS scores a quiet clip like a loud one).
QUALITY_CUES = (
    ("agent_audio_quality", "P808_Overall_Quality", "P.808", "quality_min_p808"),
    ("agent_audio_quality", "DNSMOS_Personalized_Background_Quality", "BAK", "quality_min_background"),
    ("agent_audio_properties", "Integrated_Loudness_LUFS", "loudness", "quality_min_lufs"),
)


def _quality_ok(bp: dict | None, t: Thresholds) -> tuple[bool | None, str, list[str]]:
    """(acceptable, or None when a cue is unmeasured and none failed; what was read; the unmeasured cues)."""
    ok: bool | None = True
    readings, unmeasured = [], []
    for section, key, name, field in QUALITY_CUES:
        value, minimum = _get(bp, section, key), getattr(t, field)
        unit = " LUFS" if name == "loudness" else ""
        if value is None:
            unmeasured.append(name)
            if ok is True:
                ok = None
        elif value < minimum:
            ok = False  # a measured failure is evidence whatever else is missing
        readings.append(f"{name} {_fmt(value, unit)} (needs {minimum:g}{unit})")
    return ok, " ".join(readings), unmeasured


def speech_span_wpm(bp: dict | None) -> float | None:
    """Words per minute over the speech, from the first word's start to the last word's end: pauses
    inside the answer count, silence before and after it does not (a listener does not hear an answer
    as slower for a second of silence around it). The blueprint's Speech_Rate_WPM rescaled from the
    clip's duration to that span; the rate itself where the word timings are missing."""
    wpm = _get(bp, "agent_audio_properties", "Speech_Rate_WPM")
    words = (bp or {}).get("words")
    duration = (bp or {}).get("duration_s")
    if wpm is None or not isinstance(words, list) or len(words) < 2 or not duration:
        return wpm
    try:
        span = float(words[-1]["end"]) - float(words[0]["start"])
    except (KeyError, TypeError, ValueError):
        return wpm
    return wpm * float(duration) / span if 0 < span <= duration else wpm


def _rate(bp: dict | None) -> float | None:
    """Words per minute over the speech, else syllables per second in the same unit (about 1.4 syllables a word)."""
    wpm = speech_span_wpm(bp)
    if wpm is not None:
        return wpm
    syllables = _get(bp, "agent_voicing", "Syllable_Rate_Per_S")
    return None if syllables is None else syllables * 60 / 1.4


def _ratio(a: float | None, b: float | None) -> float | None:
    return max(a, b) / min(a, b) if a and b and a > 0 and b > 0 else None


def clearly_better(bp1: dict | None, bp2: dict | None, t: Thresholds) -> tuple[str | None, str]:
    """Of two acceptable responses, the one that sounds clearly better ("1", "2" or None) and why.

    Within the pair, not against absolute floors: of two renditions at one pace in one voice register
    (speaking rates within the pace ratio, mean pitches within the voice ratio), the one with audible
    noise loses when its P.808 and its background score (BAK) are both lower by the noise margins.
    DNSMOS scores fast speech lower, and one voice above another (a female espeak voice's BAK is as low
    as speech under noise), so across paces or voices those leads say nothing of the channel. A P.808
    lead alone wins by the clear margin, unless the paces differ: pace is Paralinguistics' business.
    """
    p1, p2 = (_get(bp, "agent_audio_quality", "P808_Overall_Quality") for bp in (bp1, bp2))
    b1, b2 = (_get(bp, "agent_audio_quality", "DNSMOS_Personalized_Background_Quality") for bp in (bp1, bp2))
    # asked only of responses found acceptable on these scores, so all four are measured
    assert p1 is not None and p2 is not None and b1 is not None and b2 is not None
    lead = "1" if p1 > p2 else "2"
    dp, db = abs(p1 - p2), (b1 - b2 if lead == "1" else b2 - b1)
    paces = _ratio(_rate(bp1), _rate(bp2))
    pitches = _ratio(*(_get(bp, "agent_audio_properties", "Mean_Pitch_Hz") for bp in (bp1, bp2)))
    one_pace = paces is not None and paces < t.quality_pace_ratio
    one_voice = pitches is not None and pitches < t.quality_voice_ratio
    if one_pace and one_voice and dp >= t.quality_noise_margin_p808 and db >= t.quality_noise_margin_background:
        return lead, f"response {lead} cleaner: P.808 {dp:.2f} and BAK {db:.2f} higher at one pace and voice"
    if dp >= t.quality_clear_margin:
        if paces is not None and not one_pace:
            return None, f"P.808 {dp:.2f} apart at paces {paces:.1f} times apart: pace, not quality"
        return lead, f"response {lead} clearly better: P.808 {dp:.2f} higher"
    where = "" if one_pace and one_voice else " (leads compared only at one pace and voice)"
    return None, f"no clear difference: P.808 {dp:.2f}, BAK {db:+.2f} apart{where}"


def no_speech(bp: dict | None, doubt: str | None = None) -> bool:
    """The response says nothing: a transcript the blueprint trusts, and empty."""
    transcript = (bp or {}).get("agent_response")
    return not doubt and isinstance(transcript, str) and not transcript.strip()


def asks_for_level(instruction: str, t: Thresholds = DEFAULT_THRESHOLDS, language: str | None = None) -> bool:
    """The instruction asks for a loudness (quietly, loudly): then the level is Paralinguistics' business."""
    return any(cue.name in ("quiet", "loud") for cue in paralinguistic_cues(instruction, t, language))


def much_quieter(bp1: dict | None, bp2: dict | None, t: Thresholds) -> tuple[str | None, str]:
    """Of two acceptable responses, the louder one ("1" or "2") when the other is much quieter than it and
    below a comfortable listening level, else None; and what was read.

    Both conditions: a gap alone is no loss when both are loud enough (-20 against -32 LUFS), and a low level
    alone is no loss when the other is as low (both turned down alike). The gap sits well past the level
    differences listeners barely hear (SpeechJudgeAudit: a +6 dB copy is preferred 61% of the time), so the
    bias audit's 3 and 6 dB probes never meet it, while a 20 dB drop always does.
    """
    l1, l2 = (_get(bp, "agent_audio_properties", "Integrated_Loudness_LUFS") for bp in (bp1, bp2))
    if l1 is None or l2 is None:
        return None, "loudness unmeasured"
    louder, quiet = ("1", l2) if l1 >= l2 else ("2", l1)
    gap = abs(l1 - l2)
    if gap >= t.quality_quieter_lu and quiet < t.quality_comfortable_lufs:
        other = "2" if louder == "1" else "1"
        return louder, f"response {other} much quieter: {gap:.1f} LU below the other, at {quiet:.1f} LUFS"
    return None, f"levels {gap:.1f} LU apart"


def judge_voice_quality(
    bp1: dict | None,
    bp2: dict | None,
    t: Thresholds,
    doubts: tuple[str | None, str | None] = (None, None),
    instruction: str = "",
    language: str | None = None,
) -> Judgement:
    oks: list[bool | None] = []
    notes, missing = [], []
    for n, (bp, doubt) in enumerate(zip((bp1, bp2), doubts, strict=True), start=1):
        if no_speech(bp, doubt):  # no voice to hear: DNSMOS scores silence, loudness is null
            oks.append(False)
            notes.append(f"response {n} has no speech")
            continue
        ok, reading, unmeasured = _quality_ok(bp, t)
        oks.append(ok)
        notes.append(f"response {n} {reading}")
        if unmeasured:
            missing.append(f"response {n} {' and '.join(unmeasured)} unmeasured")
    label, why = decide(oks, missing)
    if label == "both_good":
        louder, reading = (None, "") if asks_for_level(instruction, t, language) else much_quieter(bp1, bp2, t)
        if louder:
            label = louder
            notes.append(reading)
        else:
            better, reading = clearly_better(bp1, bp2, t)
            label = better or label
            notes.append(reading)
    rule = (
        f"acceptable at P.808 {t.quality_min_p808:g}, BAK {t.quality_min_background:g} and "
        f"{t.quality_min_lufs:g} LUFS or more; a winner by {t.quality_quieter_lu:g} LU louder than another below "
        f"{t.quality_comfortable_lufs:g} LUFS (unless a loudness is asked for), by P.808 "
        f"{t.quality_noise_margin_p808:g} with BAK {t.quality_noise_margin_background:g} at one pace and voice, "
        f"or by P.808 {t.quality_clear_margin:g} at one pace"
    )
    return label, f"{rule}; " + ", ".join(notes), why


# -- Paralinguistics ---------------------------------------------------------------------


@dataclass(frozen=True)
class _Cue:
    """One thing the instruction asks for and how to check a blueprint for it."""

    name: str
    check: Callable[[dict | None], tuple[bool | None, str]]  # (meets it, None when unmeasured; what was read)


def _rate_check(slow: bool, t: Thresholds) -> Callable[[dict | None], tuple[bool | None, str]]:
    def check(bp: dict | None) -> tuple[bool | None, str]:
        wpm = speech_span_wpm(bp)
        if wpm is not None:
            ok = wpm <= t.slow_max_wpm if slow else wpm >= t.fast_min_wpm
            return ok, f"{wpm:.0f} WPM"
        syllables = _get(bp, "agent_voicing", "Syllable_Rate_Per_S")
        if syllables is not None:
            ok = syllables <= t.slow_max_syllables_per_s if slow else syllables >= t.fast_min_syllables_per_s
            return ok, f"{syllables:.2f} syllables/s"
        return None, "rate unmeasured"

    return check


def _loudness_check(quiet: bool, t: Thresholds) -> Callable[[dict | None], tuple[bool | None, str]]:
    def check(bp: dict | None) -> tuple[bool | None, str]:
        lufs = _get(bp, "agent_audio_properties", "Integrated_Loudness_LUFS")
        if lufs is None:
            return None, "loudness unmeasured"
        return (lufs <= t.quiet_max_lufs if quiet else lufs >= t.loud_min_lufs), f"{lufs:.1f} LUFS"

    return check


def _pitch_check(high: bool, t: Thresholds) -> Callable[[dict | None], tuple[bool | None, str]]:
    def check(bp: dict | None) -> tuple[bool | None, str]:
        hz = _get(bp, "agent_audio_properties", "Mean_Pitch_Hz")
        if hz is None:
            return None, "pitch unmeasured"
        return (hz >= t.high_min_hz if high else hz <= t.low_max_hz), f"{hz:.0f} Hz"

    return check


def _emotion_label(label: str) -> str:
    # emotion2vec labels read like "生气/angry"; keep the English part.
    return label.split("/")[-1].strip().lower()


def _emotion_check(target: str, t: Thresholds) -> Callable[[dict | None], tuple[bool | None, str]]:
    def check(bp: dict | None) -> tuple[bool | None, str]:
        scores = (bp or {}).get("agent_emotion")
        if not isinstance(scores, dict) or not scores:
            return None, "emotion unmeasured"
        by_label = {_emotion_label(k): float(v) for k, v in scores.items() if isinstance(v, (int, float))}
        if not by_label:
            return None, "emotion unmeasured"
        top = max(by_label, key=lambda label: by_label[label])
        score = by_label.get(target, 0.0)
        return (top == target or score >= t.emotion_min_score), f"{target} {score:.2f} (top {top})"

    return check


def _pace_halves(bp: dict | None) -> tuple[float, float] | None:
    """Speaking rate (WPM) of the earlier and the later half of the response.

    From word timings when there are enough words (the earlier half of the words
    against the later half); else from the pace contour's earlier and later windows.
    """
    words = (bp or {}).get("words")
    if isinstance(words, list) and len(words) >= 6:
        try:
            spans = [(float(w["start"]), float(w["end"])) for w in words]
        except (KeyError, TypeError, ValueError):
            spans = []
        if spans:
            half = len(spans) // 2
            rates = []
            for chunk in (spans[:half], spans[half:]):
                seconds = chunk[-1][1] - chunk[0][0]
                rates.append(60.0 * len(chunk) / seconds if seconds > 0 else 0.0)
            return rates[0], rates[1]
    properties = (bp or {}).get("agent_audio_properties")
    contour = properties.get("Pace_Contour_WPM") if isinstance(properties, dict) else None
    if isinstance(contour, list):
        values = [float(v) for v in contour if isinstance(v, (int, float))]
        if len(values) >= 2:
            half = len(values) // 2
            early, late = values[:half], values[len(values) - half :]
            return sum(early) / len(early), sum(late) / len(late)
    return None


def _pace_change_check(speed_up: bool, t: Thresholds) -> Callable[[dict | None], tuple[bool | None, str]]:
    def check(bp: dict | None) -> tuple[bool | None, str]:
        halves = _pace_halves(bp)
        if halves is None:
            return None, "pace contour unmeasured"
        early, late = halves
        if min(early, late) <= 0:
            return False, f"pace {early:.0f} -> {late:.0f} WPM"
        ratio = late / early if speed_up else early / late
        return ratio >= t.pace_change_min_ratio, f"pace {early:.0f} -> {late:.0f} WPM"

    return check


def paralinguistic_cues(
    instruction: str, t: Thresholds = DEFAULT_THRESHOLDS, language: str | None = None
) -> list[_Cue | ProsodyCue]:
    """The cues an instruction asks for, read from its words outside the quoted text (directives included):
    with the lists below in English (or a language never recorded), else with its language's table."""
    read = read_instruction(instruction)
    if not languages.reads_english(language):
        return list(_cues_in(read.manner, language or "", t))
    text = read.manner.lower()
    words = _words(text)
    prosody = prosody_cues(instruction, read.quoted, read.manner, t.prosody, _words, lambda h, q: _same_word(h, q, t))
    replaced = {name for cue in prosody for name in cue.replaces}
    covered = {name for cue in prosody for name in cue.covers}
    cues: list[_Cue | ProsodyCue] = []
    slow_at = next((i for i, w in enumerate(words) if w in SLOW_WORDS), None)
    fast_at = next((i for i, w in enumerate(words) if w in FAST_WORDS), None)
    if _SPEED_UP.search(text):
        cues.append(_Cue("speeding up", _pace_change_check(True, t)))
    elif _SLOW_DOWN.search(text):
        cues.append(_Cue("slowing down", _pace_change_check(False, t)))
    elif slow_at is not None and fast_at is not None:
        speed_up = slow_at < fast_at
        cues.append(_Cue("slow then fast" if speed_up else "fast then slow", _pace_change_check(speed_up, t)))
    elif slow_at is not None:
        cues.append(_Cue("slow", _rate_check(True, t)))
    elif fast_at is not None:
        cues.append(_Cue("fast", _rate_check(False, t)))
    if any(w in QUIET_WORDS for w in words):
        cues.append(_Cue("quiet", _loudness_check(True, t)))
    elif any(w in LOUD_WORDS for w in words):
        cues.append(_Cue("loud", _loudness_check(False, t)))
    if _HIGH_PITCH.search(text):
        cues.append(_Cue("high pitch", _pitch_check(True, t)))
    elif _LOW_PITCH.search(text):
        cues.append(_Cue("low pitch", _pitch_check(False, t)))
    cues = [cue for cue in cues if cue.name not in replaced]  # "start quietly and get louder" is no "quiet"
    emotions = sorted({EMOTION_WORDS[w] for w in words if w in EMOTION_WORDS})
    cues.extend(_Cue(emotion, _emotion_check(emotion, t)) for emotion in emotions)
    cues.extend(prosody)
    cues.extend(
        _Cue(manner, _not_measured)
        for manner, asked in UNMEASURED_MANNERS.items()
        if asked.search(text) and manner not in covered
    )
    named = {cue.name for cue in cues}
    measured = (
        SLOW_WORDS
        | FAST_WORDS
        | QUIET_WORDS
        | LOUD_WORDS
        | set(EMOTION_WORDS)
        | _NOT_A_MANNER
        | MANNER_WORDS
        | {"high", "low", "deep", "high-pitched", "low-pitched", "squeaky", "higher", "lower", "deeper"}
    )
    for found in _ASKED_MANNER.finditer(text):
        word = found.group(1) or found.group(2)
        # A word a named manner covers ("politely") is already asked for under that name.
        if (
            word not in measured
            and word not in named
            and not any(manner.search(word) for manner in UNMEASURED_MANNERS.values())
        ):
            cues.append(_Cue(f"{word} (a manner)", _not_measured))
            named.add(word)
    return cues


def _not_measured(bp: dict | None) -> tuple[bool | None, str]:
    return None, "not measured by these rules"


def _cues_in(manner: str, language: str, t: Thresholds) -> list[_Cue]:
    """The cues asked for in a language other than English, named by its table (trace_eval.judge.languages);
    one cue nothing can meet where the language has no table."""
    names = languages.manner_requests(manner, language)
    if names is None and language == languages.ASKED_UNKNOWN and not languages.asks_beyond_saying(manner):
        return []  # nothing but the words to say and a lead-in ("Di «...»"): no manner asked, in any language
    if names is None:
        why = languages.not_understood(language)
        return [_Cue("manner asked", lambda bp: (None, why))]
    checks: dict[str, Callable[[dict | None], tuple[bool | None, str]]] = {
        "slow": _rate_check(True, t),
        "fast": _rate_check(False, t),
        "quiet": _loudness_check(True, t),
        "loud": _loudness_check(False, t),
        "high pitch": _pitch_check(True, t),
        "low pitch": _pitch_check(False, t),
        "speeding up": _pace_change_check(True, t),
        "slow then fast": _pace_change_check(True, t),
        "slowing down": _pace_change_check(False, t),
        "fast then slow": _pace_change_check(False, t),
        **{emotion: _emotion_check(emotion, t) for emotion in set(EMOTION_WORDS.values())},
    }
    return [_Cue(name, checks.get(name, _not_measured)) for name in names]


# Cues computed from the transcript's words and times: missing evidence when the transcript is doubted.
TRANSCRIPT_DERIVED = ("Speech_Rate_WPM", "Articulation_Rate_WPM", "Pace_Contour_WPM")


def _without_transcript_cues(bp: dict | None) -> dict | None:
    if bp is None:
        return None
    properties = bp.get("agent_audio_properties")
    if isinstance(properties, dict):
        properties = {k: v for k, v in properties.items() if k not in TRANSCRIPT_DERIVED}
    return {**bp, "agent_audio_properties": properties, "words": None}


def judge_paralinguistics(
    instruction: str,
    bp1: dict | None,
    bp2: dict | None,
    t: Thresholds,
    doubts: tuple[str | None, str | None] = (None, None),
    language: str | None = None,
) -> Judgement:
    cues = paralinguistic_cues(instruction, t, language)
    if not cues:
        return "both_good", "no paralinguistic cue words in the instruction", None
    bps = [_without_transcript_cues(bp) if doubt else bp for bp, doubt in zip((bp1, bp2), doubts, strict=True)]
    # No speech at all does not do any manner asked for, measured or not.
    silent = [no_speech(bp, doubt) for bp, doubt in zip((bp1, bp2), doubts, strict=True)]
    oks: list[bool | None] = [True, True]
    notes, missing = [], []
    for cue in cues:
        readings, unknown = [], {}
        for n, bp in enumerate(bps):
            ok, reading = (False, "no speech") if silent[n] else cue.check(bp)
            if ok is None:
                unknown[n + 1] = reading + (f" ({doubts[n]})" if doubts[n] else "")
                if oks[n] is True:
                    oks[n] = None
            elif not ok:
                oks[n] = False  # a measured failure is evidence whatever else is missing
            readings.append(f"{reading}{'' if ok is None else (' ok' if ok else ' not ok')}")
        notes.append(f"{cue.name}: {readings[0]} vs {readings[1]}")
        if len(set(unknown.values())) == 1 and len(unknown) == 2:
            missing.append(f"{cue.name}: {unknown[1]} for both responses")
        else:
            missing += [f"{cue.name}: {reading} for response {n}" for n, reading in unknown.items()]
    label, why = decide(oks, missing)
    for cue in cues if label == "both_good" else ():
        if isinstance(cue, ProsodyCue) and cue.better is not None:  # of two that stress the word, the clearer
            better, reading, _ = cue.better(*bps)
            notes.append(reading)
            label = better or label
    return label, "; ".join(notes), why


# -- confidence: how far the deciding cues sit from their thresholds -------------------------

# One unit of margin per rule, in the cue's own unit: a cue this far past its threshold is one unit sure.
MARGIN_SCALES = {
    "content_min_recall": 0.1,  # share of the quoted words
    # Transcript length over quote length, a twelfth per unit: at the default floor (0.75) an answer at the quote's
    # whole length passes by 3 units, as sure as no speech fails, and half of it fails by 3 (a unit of 0.2 capped
    # every full answer, and so every pair with one, at 1.25 units: one confidence, 0.857, whatever the evidence).
    "content_min_length": 0.25 / 3,
    "quality_min_p808": 0.3,  # MOS
    "quality_min_background": 0.3,  # MOS
    "quality_min_lufs": 5.0,  # LU
    "quality_quieter_lu": 4.0,  # LU
    "quality_comfortable_lufs": 4.0,  # LU
    "quality_clear_margin": 0.3,  # MOS lead
    "quality_noise_margin_p808": 0.2,  # MOS lead
    "quality_noise_margin_background": 0.1,  # MOS lead
    "slow_max_wpm": 20.0,
    "fast_min_wpm": 20.0,
    "slow_max_syllables_per_s": 0.5,
    "fast_min_syllables_per_s": 0.5,
    "quiet_max_lufs": 3.0,
    "loud_min_lufs": 3.0,
    "high_min_hz": 20.0,
    "low_max_hz": 15.0,
    "emotion_min_score": 0.15,
    "pace_change_min_ratio": 0.3,
    "language_min_probability": 0.15,  # the detector's probability of the language heard
    "content_max_s": 60.0,  # seconds past the longest answer
}
SURE_MARGIN = 3.0  # a response with no speech at all: no threshold decides it
DEFAULT_MARGIN = 1.0  # Paralinguistics with no cue word: both acceptable by default, not by measurement

Margin = float | None


def confidence_of(margin: float) -> float:
    """0.5 at a threshold, 0.82 one unit past it, 0.93 two units, 0.975 three, towards 1."""
    return round(1.0 - 0.5 * math.exp(-margin), 4)


def _distance(value: float, field: str, t: Thresholds) -> float:
    return abs(value - getattr(t, field)) / MARGIN_SCALES[field]


def _response_margin(checks: list[tuple[bool, float]], unknown: bool) -> Margin:
    """A response that passes every cue is as sure as its closest pass; one that fails, as its clearest
    failure (every failure must be undone to pass it); unknown when it passes what was measured only."""
    failures = [m for passed, m in checks if not passed]
    if failures:
        return max(failures)
    if unknown:
        return None
    return min((m for _, m in checks), default=SURE_MARGIN)


def _pair_margin(margins: list[Margin]) -> Margin:
    """The label changes when either response's decision does: the smaller margin decides."""
    return None if None in margins else min(m for m in margins if m is not None)


def _language_check(asked: languages.Asked, bp: dict | None, t: Thresholds) -> list[tuple[bool, float]]:
    """The answer's language against the one expected, as far from the probability floor as its detection
    (a declared language: sure); nothing where it cannot be told."""
    heard = languages.heard_in(asked, bp, t.language_min_probability)
    if heard.in_language is None:
        return []
    p = heard.probability
    return [(heard.in_language, SURE_MARGIN if p is None else _distance(p, "language_min_probability", t))]


def content_margin(
    instruction: str,
    bp1: dict | None,
    bp2: dict | None,
    t: Thresholds,
    doubts: tuple[str | None, str | None],
    language: str | None = None,
) -> Margin:
    """Content: the quoted-word recall and the length ratio against their floors, and the answer's language
    against the one asked for; no speech is sure."""
    read = read_instruction(instruction)
    quoted = _words(read.quoted, language)
    asked = languages.expected(read.manner, language)
    margins: list[Margin] = []
    unknown_language = asked.language is None and asked.instruction == languages.ASKED_UNKNOWN
    for bp, doubt in zip((bp1, bp2), doubts, strict=True):
        transcript = (bp or {}).get("agent_response")
        spoken = _language_check(asked, bp, t)
        duration = _duration(bp)
        if duration is not None and duration > t.content_max_s:
            margins.append(_distance(duration, "content_max_s", t))
        elif transcript is not None and not transcript.strip():
            margins.append(SURE_MARGIN)
        elif spoken and not spoken[0][0]:
            margins.append(spoken[0][1])  # in another language than asked: as sure as that detection
        elif transcript is None or doubt or not quoted:
            margins.append(None)
        else:
            said = _words(transcript, language)
            recall = _recall(quoted, said, t)
            length = len(_letters(said)) / max(1, len(_letters(quoted)))
            below = _distance(recall, "content_min_recall", t)
            if recall < t.content_min_recall:
                # How far from the floor an answer that fails it sits is read on the quoted words of four
                # letters or more: the function words any sentence shares ("the", "a") bring an unrelated
                # answer near the floor without bringing it near the quote.
                longer = [w for w in quoted if len(_letters([w])) >= 4]
                if longer:
                    below = max(below, _distance(_recall(longer, said, t), "content_min_recall", t))
            checks = [
                (recall >= t.content_min_recall, below),
                (length >= t.content_min_length, _distance(length, "content_min_length", t)),
            ]
            if (asked.translating or unknown_language) and all(ok for ok, _ in checks) != asked.translating:
                # to translate, not saying them decides nothing; in a language not known, saying them decides nothing
                margins.append(None)
                continue
            margins.append(_response_margin(checks + spoken, False))
    return _pair_margin(margins)


def quality_margin(
    bp1: dict | None,
    bp2: dict | None,
    t: Thresholds,
    doubts: tuple[str | None, str | None],
    label: str | None,
    instruction: str = "",
    language: str | None = None,
) -> Margin:
    """Voice Quality: each cue against its floor; of two acceptable responses, the P.808 and BAK leads
    against the margins that make a winner (the pace and voice gates are not measured as margins)."""
    margins: list[Margin] = []
    for bp, doubt in zip((bp1, bp2), doubts, strict=True):
        if no_speech(bp, doubt):
            margins.append(SURE_MARGIN)
            continue
        checks, unknown = [], False
        for section, key, _name, field in QUALITY_CUES:
            value = _get(bp, section, key)
            if value is None:
                unknown = True
            else:
                checks.append((value >= getattr(t, field), _distance(value, field, t)))
        margins.append(_response_margin(checks, unknown))
    margin = _pair_margin(margins)
    if margin is None or label not in ("1", "2", "both_good"):
        return margin
    # The level rule needs both the gap and the low level: its distance is the larger shortfall when it did
    # not decide, the smaller lead when it did.
    level: Margin = None
    l1, l2 = (_get(bp, "agent_audio_properties", "Integrated_Loudness_LUFS") for bp in (bp1, bp2))
    if l1 is not None and l2 is not None and not asks_for_level(instruction, t, language):
        parts = [
            (abs(l1 - l2) >= t.quality_quieter_lu, _distance(abs(l1 - l2), "quality_quieter_lu", t)),
            (min(l1, l2) < t.quality_comfortable_lufs, _distance(min(l1, l2), "quality_comfortable_lufs", t)),
        ]
        if all(reached for reached, _ in parts):
            if label != "both_good":
                return min(margin, min(d for _, d in parts))
        else:
            level = max(d for reached, d in parts if not reached)
    p1, p2 = (_get(bp, "agent_audio_quality", "P808_Overall_Quality") for bp in (bp1, bp2))
    b1, b2 = (_get(bp, "agent_audio_quality", "DNSMOS_Personalized_Background_Quality") for bp in (bp1, bp2))
    if None in (p1, p2, b1, b2):
        return margin
    assert p1 is not None and p2 is not None and b1 is not None and b2 is not None
    dp = abs(p1 - p2)
    db = (b1 - b2) if p1 > p2 else (b2 - b1)
    clear = _distance(dp, "quality_clear_margin", t)
    leads = [
        (dp >= t.quality_noise_margin_p808, _distance(dp, "quality_noise_margin_p808", t)),
        (db >= t.quality_noise_margin_background, _distance(db, "quality_noise_margin_background", t)),
    ]
    if label == "both_good":
        # No winner: as sure as the nearest rule is from making one. The noise rule needs both leads, so
        # its distance is the larger shortfall (when both leads are there, the pace or voice gate held it).
        shortfalls = [d for reached, d in leads if not reached]
        nearest = min(margin, clear, max(shortfalls) if shortfalls else clear)
        return nearest if level is None else min(nearest, level)
    by_noise = clearly_better(bp1, bp2, t)[1].startswith(f"response {label} cleaner")
    return min(margin, min(d for _, d in leads) if by_noise else clear)


def _cue_margin(name: str, bp: dict | None, t: Thresholds) -> Margin:
    """How far a response's reading of one paralinguistic cue sits from its threshold (None: no measure)."""
    properties = "agent_audio_properties"
    if name in ("slow", "fast"):
        wpm = _get(bp, properties, "Speech_Rate_WPM")
        if wpm is not None:
            return _distance(wpm, f"{name}_{'max' if name == 'slow' else 'min'}_wpm", t)
        syllables = _get(bp, "agent_voicing", "Syllable_Rate_Per_S")
        field = f"{name}_{'max' if name == 'slow' else 'min'}_syllables_per_s"
        return None if syllables is None else _distance(syllables, field, t)
    if name in ("quiet", "loud"):
        lufs = _get(bp, properties, "Integrated_Loudness_LUFS")
        return None if lufs is None else _distance(lufs, "quiet_max_lufs" if name == "quiet" else "loud_min_lufs", t)
    if name in ("high pitch", "low pitch"):
        hz = _get(bp, properties, "Mean_Pitch_Hz")
        return None if hz is None else _distance(hz, "high_min_hz" if name == "high pitch" else "low_max_hz", t)
    if name in set(EMOTION_WORDS.values()):
        scores = (bp or {}).get("agent_emotion")
        if not isinstance(scores, dict):
            return None
        by_label = {_emotion_label(k): float(v) for k, v in scores.items() if isinstance(v, (int, float))}
        return _distance(by_label.get(name, 0.0), "emotion_min_score", t) if by_label else None
    halves = _pace_halves(bp) if name in ("speeding up", "slowing down", "slow then fast", "fast then slow") else None
    if halves is not None and min(halves) > 0:
        early, late = halves
        ratio = late / early if name in ("speeding up", "slow then fast") else early / late
        return _distance(ratio, "pace_change_min_ratio", t)
    return None


def paralinguistics_margin(
    instruction: str,
    bp1: dict | None,
    bp2: dict | None,
    t: Thresholds,
    doubts: tuple[str | None, str | None],
    language: str | None = None,
    label: str | None = None,
) -> Margin:
    """Paralinguistics: every cue asked for against its threshold, and a stressed word's lead where it could
    name the winner; no cue word is a default, not a reading."""
    cues = paralinguistic_cues(instruction, t, language)
    if not cues:
        return DEFAULT_MARGIN
    margins: list[Margin] = []
    for bp, doubt in zip((bp1, bp2), doubts, strict=True):
        if no_speech(bp, doubt):
            margins.append(SURE_MARGIN)
            continue
        seen = _without_transcript_cues(bp) if doubt else bp
        checks, unknown = [], False
        for cue in cues:
            ok, _ = cue.check(seen)
            distance = cue.margin(seen) if isinstance(cue, ProsodyCue) else _cue_margin(cue.name, seen, t)
            if ok is None or distance is None:
                unknown = unknown or ok is None or ok is True
                if ok is False:  # a failure no margin measures: as sure as a reading at the threshold
                    checks.append((False, 0.0))
            else:
                checks.append((ok, distance))
        margins.append(_response_margin(checks, unknown))
    margin = _pair_margin(margins)
    lead = lead_margin(cues, bp1, bp2, label)
    return margin if margin is None or lead is None else min(margin, lead)


def cue_confidence(
    instruction: str,
    bp1: dict | None,
    bp2: dict | None,
    t: Thresholds,
    doubts: tuple[str | None, str | None],
    labels: dict[str, str | None],
    language: str | None = None,
) -> dict[str, float]:
    """{dimension: confidence} of each determined label, from the margin of its deciding cues."""
    margins = {
        "content": content_margin(instruction, bp1, bp2, t, doubts, language),
        "voice_quality": quality_margin(bp1, bp2, t, doubts, labels.get("voice_quality"), instruction, language),
        "paralinguistics": paralinguistics_margin(
            instruction, bp1, bp2, t, doubts, language, labels.get("paralinguistics")
        ),
    }
    return {dim: confidence_of(m) for dim, m in margins.items() if labels.get(dim) is not None and m is not None}


# -- the backbone ----------------------------------------------------------------------


def spoken_words(
    transcript: str, language: str | None, t: Thresholds = DEFAULT_THRESHOLDS, answers: tuple[str, ...] = ()
) -> tuple[str, str] | None:
    """A spoken instruction's transcript with its words to say in quotation marks, and how the reasoning says they
    were found ("Di, la conferencia ha sido extendida." -> 'di "la conferencia ha sido extendida"', 'after “di”';
    where the lead-in was misheard, how it was read and the words compared; where one of the pair's `answers`
    told where they begin, which one); None where it quotes them already, does not begin as an instruction that
    gives them, or asks for more than saying them (a manner or a language around them: "say potato in a British
    accent" is left as it is)."""
    if not transcript or read_instruction(transcript).quoted:
        return None
    lead = languages.spoken_quote(transcript, language, answers)
    if lead is None:
        return None
    # A manner word among the words to say is one of them where an answer says them all ("I am afraid I was unable
    # to ...", "después del tono grave"); else it may be asked for ("say hello slowly"), and nothing is quoted.
    said_all = None
    for words in (lead.quoted, lead.beyond):  # not the lead-in, whatever it was misheard as ("vite", fast)
        if languages.asked_language(words, lead.language):
            return None
        if paralinguistic_cues(words, t, lead.language):
            said_all = leadins.said_by(words, lead.language, answers) if words == lead.quoted else None
            if said_all is None:
                return None
    if languages.asks_how_said(transcript, lead.language):  # "how do you say this in Spanish" read as "now can you say"
        return None
    how = f"after “{lead.heard}”" if lead.heard else "with no lead-in heard"
    if not lead.sure:
        how += f", {lead.describe()}, so the words compared are “{lead.quoted}”"
    if said_all is not None:
        how += f", its manner words read as words to say, response {said_all} saying them all"
    return f'{lead.heard} "{lead.quoted}"'.lstrip(), how


def no_answer_loses(judgement: Judgement, failed: tuple[bool, bool]) -> Judgement:
    """A response whose audio could not be heard (empty, or not decodable) is no answer: it loses every dimension
    to an answer that can be heard, whatever the dimension's rule could tell of that one (both_bad stands where
    the rule found it unacceptable), and both are bad where neither can be heard."""
    label, why, missing = judgement
    if all(failed):
        return "both_bad", f"{why}; neither response could be heard", None
    if not any(failed) or label in ("both_bad", "1" if failed[1] else "2"):
        return judgement
    heard, lost = ("1", 2) if failed[1] else ("2", 1)
    return heard, f"{why}; response {lost} could not be heard, and any answer wins over none", None


def judge_case(case: Case, thresholds: Thresholds = DEFAULT_THRESHOLDS) -> dict:
    """The verdict document for one case, reasoning included; `undetermined` names each dimension left null."""
    # The written instruction keeps its quotation marks, which tell the words to say from the manner asked for.
    instruction = (case.instruction_text or "").strip() or (case.instruction_transcript or "").strip()
    # Word timings go with the speaking-rate cues: only where agent_audio_properties is shown.
    timed = any(view and "agent_audio_properties" in view for view in case.blueprints)
    # Each answer's language (and the provenance that says why it is null) goes with it, whatever is shown.
    bp1, bp2 = (
        None
        if view is None
        else {
            **{
                key: (stored or {})[key] for key in ("language", "provenance", "answer_failed") if key in (stored or {})
            },
            **view,
            "words": (stored or {}).get("words") if timed else None,
            **shown_prosody(view, stored),
        }
        for view, stored in zip(case.blueprints, case.stored, strict=True)
    )
    doubts = (transcript_doubt(case.stored[0]), transcript_doubt(case.stored[1]))
    language = languages.reading_language(case.instruction_language, thresholds.language_min_probability)
    # A spoken instruction's words to say, from its transcript; the pair's answers may tell where they begin.
    answers = tuple((stored or {}).get("agent_response") or "" for stored in case.stored)
    spoken = None if (case.instruction_text or "").strip() else spoken_words(instruction, language, thresholds, answers)
    if spoken is not None:
        instruction, how = spoken
    content, why_c, missing_c = judge_content(instruction, bp1, bp2, thresholds, doubts, language)
    if spoken is not None:
        why_c = f"words to say read from the instruction's transcript, {how}; {why_c}"
    quality, why_vq, missing_vq = judge_voice_quality(bp1, bp2, thresholds, doubts, instruction, language)
    para, why_p, missing_p = judge_paralinguistics(instruction, bp1, bp2, thresholds, doubts, language)
    failed = (bool((bp1 or {}).get("answer_failed")), bool((bp2 or {}).get("answer_failed")))
    content, why_c, missing_c = no_answer_loses((content, why_c, missing_c), failed)
    quality, why_vq, missing_vq = no_answer_loses((quality, why_vq, missing_vq), failed)
    para, why_p, missing_p = no_answer_loses((para, why_p, missing_p), failed)
    # Only the dimensions asked about (all but voice quality need an instruction the judge could read).
    asked = case.dimensions or ("content", "voice_quality", "paralinguistics")
    decided = {
        "content": ("Content", content, why_c, missing_c),
        "voice_quality": ("Voice quality", quality, why_vq, missing_vq),
        "paralinguistics": ("Paralinguistics", para, why_p, missing_p),
    }
    decided = {dim: decided[dim] for dim in asked}
    reasoning = " ".join(f"{title}: {why} -> {label or 'undetermined'}." for title, label, why, _ in decided.values())
    verdict: dict = {"reasoning": reasoning, **{dim: label for dim, (_, label, _, _) in decided.items()}}
    undetermined = {dim: missing for dim, (_, _, _, missing) in decided.items() if missing}
    if undetermined:
        verdict["undetermined"] = undetermined
    labels = {dim: label for dim, (_, label, _, _) in decided.items()}
    confidence = cue_confidence(instruction, bp1, bp2, thresholds, doubts, labels, language)
    verdict["confidence"] = {dim: value for dim, value in confidence.items() if dim in decided}
    return verdict


class CuesBackbone(Backbone):
    """Backbone `cues`: answers from the blueprints with the rules above. Instant and free, so never cached."""

    cacheable = False
    may_leave_undetermined = True  # a dimension whose deciding cue is missing stays null, with the reason
    states_confidence = True  # from the margins of its deciding cues
    no_calls = "the cues backbone reads the blueprints"

    def __init__(self, settings: BackboneSettings, thresholds: Thresholds = DEFAULT_THRESHOLDS):
        if not judges(settings.rubric):
            raise FatalBackboneError(
                f"the offline `cues` backbone only judges the trace rubric (typed-tie content, voice quality, "
                f"paralinguistics) and the interaction rubric, not {settings.rubric.name}; pass --model with a "
                "litellm model id (e.g. openai/gpt-4o, or openai/NAME with --api-base for a local server)"
            )
        if settings.prompt.needs_audio:
            raise FatalBackboneError(
                f"the cues backbone reads blueprints and cannot judge raw audio "
                f"(--judge {settings.prompt.name}); give an audio-capable --model"
            )
        super().__init__(settings)
        self.thresholds = thresholds

    def structured_output(self, choice: str) -> bool:
        return False  # its answers are made here, not asked for

    def prices_per_token(self) -> tuple[float, float]:
        return 0.0, 0.0

    def recorded_settings(self) -> dict:
        return {"cues": {"version": CUES_VERSION, "thresholds": asdict(self.thresholds)}}

    async def complete(
        self, messages: list[dict], case: Case, response_format: dict | None, max_tokens: int | None
    ) -> Completion:
        start = time.perf_counter()
        if self.settings.rubric.name == "interaction":  # sessions: decided from their timelines
            from trace_eval.sessions.interaction import cues_answer

            verdict = cues_answer(case.pair_id, case.variables)
        else:
            verdict = judge_case(case, self.thresholds)
        text = json.dumps(verdict, ensure_ascii=False)
        return Completion(
            text=text, prompt_tokens=0, completion_tokens=0, cost_usd=0.0, latency_s=time.perf_counter() - start
        )


def judges(rubric: Rubric) -> bool:
    """The rules decide the trace rubric's dimensions, so they judge rubrics with exactly those; and the
    interaction rubric, from the sessions' timelines (trace_eval.sessions.interaction)."""
    if rubric.name == "interaction":
        return rubric.spaces() == load_rubric("interaction").spaces()
    return rubric.pairwise and rubric.spaces() == load_rubric("trace").spaces()
