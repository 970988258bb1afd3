"""Extractor settings per profile.

- paper: the models of the TRACE paper (Whisper large-v3 through transformers,
  emotion2vec_plus_large, CommonAccent ECAPA, DNSMOS); the default with CUDA.
  large-v3 detects each clip's language and transcribes every language.
- cpu: the same cues with small recognisers shipped on PyPI (faster-whisper): the
  multilingual Whisper base detects each clip's language and transcribes the clips
  not in English, Whisper tiny.en transcribes English; the default without CUDA.

Every registered extractor runs in both; those that load no model (pitch, loudness, voicing, rate, prosody)
have the same settings in both. Any setting can still be overridden with --set NAME.FIELD=VALUE.
"""

from __future__ import annotations

import copy

PROFILES: dict[str, dict[str, dict]] = {
    "paper": {"asr": {"backend": "transformers", "model": "whisper-large-v3"}},
    "cpu": {"asr": {"backend": "faster-whisper", "model": "whisper-base-ct2", "english_model": "whisper-tiny.en-ct2"}},
}


def profile_settings(name: str) -> dict[str, dict]:
    if name not in PROFILES:
        raise ValueError(f"unknown profile {name!r}; expected one of: {', '.join(PROFILES)}")
    from extractors import REGISTRY

    # Settings for extractors that are not installed are dropped, not errors.
    return {k: v for k, v in copy.deepcopy(PROFILES[name]).items() if k in REGISTRY}
