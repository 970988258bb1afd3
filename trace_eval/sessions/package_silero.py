"""Silero VAD as Full-Duplex-Bench's scripts run it: the `silero-vad` package's model (it ships inside the package:
nothing is downloaded) and its `get_speech_timestamps`, for the compat modes that reproduce those scripts. The
timelines use the Silero inside faster-whisper, with the edges refined (timeline.py)."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from trace_eval.sessions.errors import SessionError

__all__ = ["speech_timestamps"]


@functools.cache
def _model() -> Any:
    try:
        from silero_vad import load_silero_vad
    except ImportError as e:
        raise SessionError(
            f"the benchmark's scripts find speech with the silero-vad package ({e}): pip install 'trace-eval[models]'"
        ) from None
    return load_silero_vad()


def speech_timestamps(samples: np.ndarray, **options: Any) -> list[dict[str, float]]:
    """`silero_vad.get_speech_timestamps` on mono float32 samples, with the package's model and `options`."""
    import torch
    from silero_vad import get_speech_timestamps

    model = _model()
    return get_speech_timestamps(torch.from_numpy(np.ascontiguousarray(samples, dtype=np.float32)), model, **options)
