"""What each channel of a session said, word by word with times, from Stage 1's recogniser (multilingual Whisper),
and the language of each turn.

A channel is first transcribed whole, in the language declared or the one its first speech is heard in (the
channel's). Then, where nothing is declared, each turn is heard alone: its language decided by the language rule
(trace_eval/language_rule.py) from the turn's own evidence with the channel's language as the prior, so a surely
Spanish turn in an English session is Spanish and an unclear one goes the channel's way; a turn heard surely in
another language is transcribed again in it, its words replacing the channel's there. A turn whose language
cannot be told (no language as likely as the judges' MIN_PROBABILITY, trace_eval/judge/languages.py) keeps the
channel's words, with a note.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from trace_eval.audio import Audio
from trace_eval.sessions.segments import Segment
from trace_eval.sessions.session import RATE, Session

__all__ = ["stage1_recogniser", "transcribe"]

Words = dict[str, list[dict[str, Any]] | None]
TURN_PAD_S = 0.2  # heard around a turn, so its first and last sounds are whole


def transcribe(
    session: Session, recogniser: Any, language: str | None = None, turns: dict[str, list[Segment]] | None = None
) -> tuple[Words, dict, list[str]]:
    """(words per channel, the language each was heard in, notes): a channel the recogniser cannot take is None
    with the reason in the notes; the rest of the session is kept. With `turns` and no `language`, each turn's
    language too (`languages[who]["turns"]`), and the words of a turn heard in another language than its
    channel's transcribed in it."""
    from extractors import Clip, ClipError

    recogniser.load()
    channels = {"user": session.user, "system": session.system}
    clips = [
        Clip(f"{session.name}:{who}", Audio(samples, RATE), language=language) for who, samples in channels.items()
    ]
    words: Words = {}
    languages: dict[str, dict | None] = {}
    notes = []
    for who, result in zip(channels, recogniser.extract(clips)):
        if isinstance(result, ClipError):
            words[who], languages[who] = None, None
            notes.append(f"the {who}'s channel was not transcribed: {result}")
            continue
        found = result.values.get("words")
        words[who] = [_word(w) for w in found or []]
        languages[who] = result.values.get("language")
        if found is None:
            why = result.null_reasons.get("words") or "the recogniser gave no words"
            notes.append(f"the {who}'s channel has no words: {why}")
    if language is None and turns:
        for who, samples in channels.items():
            heard = languages.get(who)
            if words.get(who) is not None and heard is not None:
                notes += _turn_languages(session.name, who, samples, turns[who], recogniser, words, heard)
    return words, languages, notes


def _word(w: dict[str, Any], offset_s: float = 0.0) -> dict[str, Any]:
    return {"word": w["word"], "start": round(w["start"] + offset_s, 3), "end": round(w["end"] + offset_s, 3),
            "probability": w.get("probability")}  # fmt: skip


def _turn_languages(
    session: str, who: str, samples: np.ndarray, turns: list[Segment], recogniser: Any, words: Words, heard: dict
) -> list[str]:
    """Each turn's language (into heard["turns"]) and, for a turn surely in another language than the channel's,
    its words transcribed in that language in place of the channel's; notes for turns not told."""
    from extractors import Clip, ClipError
    from trace_eval.judge.languages import MIN_PROBABILITY
    from trace_eval.language_rule import LanguageRule

    rule = LanguageRule.load()
    usual = heard.get("code")
    notes, per_turn, again = [], [], []
    for turn in turns:
        first = max(0, int((turn.start - TURN_PAD_S) * RATE))
        last = min(len(samples), int((turn.end + TURN_PAD_S) * RATE))
        clip = Clip(
            f"{session}:{who}:{turn.start:.3f}", Audio(samples[first:last], RATE), expects=(usual,) if usual else ()
        )
        decision = rule.decide(recogniser.language_evidence(clip), expected=usual)
        told = decision.code is not None and (decision.probability or 0) >= MIN_PROBABILITY
        per_turn.append({"turn": turn.record(), "code": decision.code if told else None,
                         "probability": decision.probability, "posterior": decision.posterior})  # fmt: skip
        if not told:
            said = ", ".join(f"{c} {p:.2f}" for c, p in list(decision.posterior.items())[:2]) or "no speech heard"
            notes.append(f"the {who}'s turn at {turn.start:.2f}-{turn.end:.2f} s: its language was not told ({said}); "
                         f"its words are the channel's ({usual})")  # fmt: skip
        elif decision.code != usual:
            again.append((turn, first / RATE, Clip(clip.sha256, clip.audio, language=decision.code)))
    heard["turns"] = per_turn
    for (turn, offset_s, clip), result in zip(again, recogniser.extract([c for _, _, c in again])):
        if isinstance(result, ClipError):
            notes.append(f"the {who}'s turn at {turn.start:.2f} s in {clip.language} was not transcribed: {result}")
            continue
        kept = [w for w in words[who] or () if not turn.start - TURN_PAD_S <= w["start"] < turn.end]
        found = [_word(w, offset_s) for w in result.values.get("words") or ()]
        words[who] = sorted(kept + found, key=lambda w: w["start"])
    return notes


def stage1_recogniser(profile: str | None = None, device: str = "auto") -> Any:
    """Stage 1's recogniser (extractors.asr.AsrExtractor) with a profile's models (`paper`, `cpu`; default:
    paper with CUDA, else cpu), on CUDA where there is one."""
    from extractors.asr import AsrExtractor
    from trace_eval.stage1.pipeline import resolve_device
    from trace_eval.stage1.profiles import profile_settings
    from trace_eval.stage1.settings import make_config

    device = resolve_device(device)
    settings = profile_settings(profile or ("paper" if device.startswith("cuda") else "cpu")).get("asr", {})
    return AsrExtractor(make_config(AsrExtractor, settings), device=device)
