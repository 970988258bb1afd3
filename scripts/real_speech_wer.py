"""How well and how fast the CPU profile's recognisers transcribe recorded human speech, per language.

    python scripts/real_speech_wer.py                         # English: LibriVox and Asterisk
    python scripts/real_speech_wer.py --languages es,fr --prompts 20   # Asterisk prompts in Spanish and French
    python scripts/real_speech_wer.py --languages en,es --speed         # what each recogniser costs instead

For each language: the word error rate (character error rate for languages written without spaces) with the
language detected, as a benchmark that declares nothing gets it, and with it declared; how often the language
is detected right, by Whisper's language token alone and with the check that decodes an unsure token's first
guesses (extractors/asr.py); unreliable transcripts. The prompts are tests/recorded_speech.py's plain_prompts:
at least four words, no digits, spread over each package's list. Transcripts are compared after NFKC, case and
accent folding (the Spanish transcripts mostly leave accents out).

--speed times, instead, the recogniser alone (the `asr` section: the other sections do not depend on the language) on
the English clips and on the others, in CPU seconds (the process's, all its threads) per second of audio, for
the recognisers the cpu profile can run: tiny.en alone (English only), base detecting and tiny.en decoding
English (the profile), base for everything. The machine's load is printed: on a shared machine wall seconds
measure the other work too, CPU seconds much less so.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from recorded_speech import Recording, asterisk, error_rate, fold, librivox, plain_prompts, unit  # noqa: E402

from extractors import Clip  # noqa: E402  (pins the numeric class before any library loads)
from extractors.asr import (  # noqa: E402
    SAMPLE_RATE,
    AsrConfig,
    AsrExtractor,
    recogniser_input,
    speech_windows,
)

RECOGNISERS = {  # what the cpu profile can run, by what it decodes English with
    "tiny.en alone": AsrConfig(model="whisper-tiny.en-ct2", language="en"),
    "cpu profile (base detects, tiny.en decodes English)": AsrConfig(
        model="whisper-base-ct2", english_model="whisper-tiny.en-ct2"
    ),
    "base for everything": AsrConfig(model="whisper-base-ct2", english_model="whisper-base-ct2"),
}
PROFILE = "cpu profile (base detects, tiny.en decodes English)"


def recordings(language: str, prompts: int) -> list[Recording]:
    if language == "en":
        return librivox() + asterisk("en")
    return asterisk(language, plain_prompts(language, prompts))


def declared(recording: Recording) -> Clip:
    clip = recording.clip
    return Clip(clip.sha256, clip.audio, language=recording.language)


def token_guesses(asr: AsrExtractor, clips: list[Clip]) -> list[str | None]:
    """Whisper's language token alone on each clip's first window of speech (None: no speech)."""
    guesses: list[str | None] = []
    for clip in clips:
        samples = clip.samples(SAMPLE_RATE)
        heard, _ = recogniser_input(samples, asr.config)
        windows, _ = speech_windows(samples, asr.config, heard)
        if not windows:
            guesses.append(None)
            continue
        start, end = windows[0]
        window = heard[int(start * SAMPLE_RATE) : int(end * SAMPLE_RATE)]
        probabilities = asr._loaded.detect_languages([window])[0]
        guesses.append(max(probabilities, key=lambda code: probabilities[code]))
    return guesses


def accuracy(language: str, asr: AsrExtractor, found: list[Recording]) -> None:
    clips = [r.clip for r in found]
    detected = [s.values for s in asr.extract(clips)]
    said = [s.values for s in asr.extract([declared(r) for r in found])]
    guesses = token_guesses(asr, clips)
    right = sum((b["language"] or {}).get("code") == language for b in detected)
    by_token = sum(g == language for g in guesses)
    name = unit(language)
    pairs = [(r.reference, b["agent_response"]) for r, b in zip(found, detected)]
    declared_pairs = [(r.reference, b["agent_response"]) for r, b in zip(found, said)]
    print(f"{language}: {len(found)} clips, {sum(c.duration_s for c in clips):.1f} s")
    print(f"  language detected right: {right}/{len(found)} (Whisper's token alone: {by_token}/{len(found)})")
    print(f"  {name} with the language detected: {error_rate(pairs, language):.1%}")
    print(f"  {name} with the language declared: {error_rate(declared_pairs, language):.1%}")
    unreliable = [r.name for r, b in zip(found, detected) if not b["transcript_quality"]["reliable"]]
    print(f"  unreliable transcripts: {', '.join(unreliable) or 'none'}")
    for r, b, g in zip(found, detected, guesses):
        code = (b["language"] or {}).get("code")
        if code != language or fold(r.reference, language) != fold(b["agent_response"], language):
            print(f"    {r.name} [{code}, token {g}]: {r.reference!r} -> {b['agent_response']!r}")


def speed(by_language: dict[str, list[Recording]]) -> None:
    english = [r.clip for r in by_language.get("en", [])]
    others = [r.clip for language, found in by_language.items() if language != "en" for r in found]
    print(f"\nthe recogniser alone, CPU s per audio s (load average {os.getloadavg()[0]:.1f} at the start):")
    for name, config in RECOGNISERS.items():
        asr = AsrExtractor(config)
        asr.load()
        for label, clips in (("English", english), ("other languages", others)):
            if not clips or (label != "English" and name == "tiny.en alone"):
                continue
            audio_s = sum(c.duration_s for c in clips)
            cpu, wall = time.process_time(), time.perf_counter()
            asr.extract(clips)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            print(
                f"  {name}, {label} ({len(clips)} clips, {audio_s:.0f} s): {cpu / audio_s:.2f} CPU s per audio s, "
                f"{audio_s / wall:.2f} audio s per wall s"
            )
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--languages", default="en", help="comma-separated: en (LibriVox + Asterisk), es, fr")
    parser.add_argument("--prompts", type=int, default=20, help="Asterisk prompts per language other than en")
    parser.add_argument("--speed", action="store_true", help="time each recogniser the cpu profile can run instead")
    args = parser.parse_args()
    by_language = {language: recordings(language, args.prompts) for language in args.languages.split(",")}
    if args.speed:
        speed(by_language)
        return
    asr = AsrExtractor(RECOGNISERS[PROFILE])
    asr.load()
    for language, found in by_language.items():
        accuracy(language, asr, found)


if __name__ == "__main__":
    main()
