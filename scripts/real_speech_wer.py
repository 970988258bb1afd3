"""Word error rate of an ASR profile on the real human speech of tests/extractors/test_real_speech.py.

python scripts/real_speech_wer.py            # the CPU profile (faster-whisper, tiny.en)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "extractors"))

from test_real_speech import _asterisk, _librivox, normalise, word_error_rates  # noqa: E402

from extractors.asr import AsrConfig, AsrExtractor  # noqa: E402


def main() -> None:
    recordings = _librivox() + _asterisk()
    asr = AsrExtractor(AsrConfig(), device="cpu")
    sections = asr.extract([r.clip for r in recordings])
    transcribed = [(r, {"duration_s": r.clip.duration_s, **s.values}) for r, s in zip(recordings, sections)]
    for r, b in transcribed:
        if normalise(r.reference) != normalise(b["agent_response"]):
            print(f"{r.corpus} {r.name}: {r.reference!r} -> {b['agent_response']!r}")
    unreliable = [r.name for r, b in transcribed if not b["transcript_quality"]["reliable"]]
    for corpus, rate in word_error_rates(transcribed).items():
        clips = sum(r.corpus == corpus for r in recordings)
        print(f"{corpus}: {clips} clips, WER {rate:.1%}")
    print(f"unreliable transcripts: {unreliable or 'none'}")


if __name__ == "__main__":
    main()
