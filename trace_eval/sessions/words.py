"""What each channel of a session said, word by word with times, from Stage 1's recogniser (multilingual Whisper,
the language detected per channel or declared)."""

from __future__ import annotations

from typing import Any

from trace_eval.audio import Audio
from trace_eval.sessions.session import RATE, Session

__all__ = ["stage1_recogniser", "transcribe"]

Words = dict[str, list[dict[str, Any]] | None]


def transcribe(session: Session, recogniser: Any, language: str | None = None) -> tuple[Words, dict, list[str]]:
    """(words per channel, the language each was heard in, notes): a channel the recogniser cannot take is None
    with the reason in the notes; the rest of the session is kept."""
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
        words[who] = [
            {"word": w["word"], "start": w["start"], "end": w["end"], "probability": w.get("probability")}
            for w in (found or [])
        ]
        languages[who] = result.values.get("language")
        if found is None:
            why = result.null_reasons.get("words") or "the recogniser gave no words"
            notes.append(f"the {who}'s channel has no words: {why}")
    return words, languages, notes


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
