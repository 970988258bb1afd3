"""Recorded human speech with known transcripts, in several languages, and how a transcript is scored against it.

Two Debian packages hold it: LibriVox read English at 16 kHz (pocketsphinx-testdata, five sentences of Sense and
Sensibility) and the Asterisk telephone prompts at 8 kHz in English, Spanish and French
(asterisk-core-sounds-{en,es,fr}-wav, their transcripts in asterisk-core-sounds-{en,es,fr}). Used by
tests/extractors/test_real_speech.py, tests/extractors/test_languages.py and scripts/real_speech_wer.py.

Scoring is trace_eval.text's (NFKC, case and accents folded: the Asterisk Spanish transcripts mostly leave
accents out, "numero", "contrasena"; punctuation dropped; word error rate where the language separates words
with spaces, character error rate where it does not), with LibriVox's spelt-out titles read as written.
"""

from __future__ import annotations

import gzip
import re
from dataclasses import dataclass
from pathlib import Path

from extractors import Clip
from trace_eval.audio import load_audio
from trace_eval.text import error_rate as text_error_rate
from trace_eval.text import spaced, units

LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
INSTALL = (
    "apt-get install pocketsphinx-testdata asterisk-core-sounds-en-wav asterisk-core-sounds-en "
    "asterisk-core-sounds-es-wav asterisk-core-sounds-es asterisk-core-sounds-fr-wav asterisk-core-sounds-fr"
)
# English prompts of a few seconds with plain words (no digits, no tones), fixed so the figures are comparable.
ENGLISH_PROMPTS = (
    "agent-incorrect",
    "agent-newlocation",
    "agent-pass",
    "auth-incorrect",
    "cannot-complete-as-dialed",
    "check-number-dial-again",
    "conf-getpin",
    "conf-invalid",
    "conf-kicked",
    "conf-leaderhasleft",
    "conf-now-recording",
    "conf-onlyperson",
    "conf-placeintoconf",
    "dir-nomatch",
    "feature-not-avail-line",
)


class MissingSpeech(FileNotFoundError):
    """A package of recorded speech is not installed; the message says which."""


@dataclass(frozen=True)
class Recording:
    corpus: str  # librivox | asterisk
    language: str
    name: str
    reference: str
    clip: Clip


def _require(path: Path) -> Path:
    if not path.exists():
        raise MissingSpeech(f"{path} is missing: recorded speech comes from Debian packages: {INSTALL}")
    return path


def librivox() -> list[Recording]:
    recordings = []
    for line in _require(LIBRIVOX / "transcription").read_text().splitlines():
        match = re.fullmatch(r"<s>(.*)</s> \((\S+)\)", line.strip())
        if match:
            text, name = match.groups()
            path = _require(LIBRIVOX / f"{name}.wav")
            recordings.append(Recording("librivox", "en", name, text, Clip(name, load_audio(path))))
    return recordings


def asterisk_transcripts(language: str) -> dict[str, str]:
    path = Path(f"/usr/share/doc/asterisk-core-sounds-{language}/core-sounds-{language}.txt.gz")
    transcripts = {}
    for line in gzip.open(_require(path), "rt", encoding="utf-8"):
        name, sep, text = line.partition(":")
        if sep and not line.startswith(";"):
            transcripts[name.strip()] = text.strip()
    return transcripts


def plain_prompts(language: str, count: int) -> list[str]:
    """`count` prompts of at least four words with no digits and no tones, spread evenly over the sorted list
    of those the package holds: the same selection on every machine."""
    folder = Path(f"/usr/share/asterisk/sounds/{language}")
    plain = sorted(
        name
        for name, text in asterisk_transcripts(language).items()
        if "[" not in text
        and not re.search(r"\d", text)
        and len(text.split()) >= 4
        and (folder / f"{name}.wav").is_file()
    )
    step = max(1, len(plain) // count)
    return plain[::step][:count]


def asterisk(language: str = "en", names: tuple[str, ...] | list[str] | None = None, declared: bool = False):
    """Asterisk prompts in `language` (ENGLISH_PROMPTS for English unless names are given); `declared`: each
    clip carries its language, as a manifest that declares it would."""
    transcripts = asterisk_transcripts(language)
    folder = Path(f"/usr/share/asterisk/sounds/{language}")
    chosen = names if names is not None else ENGLISH_PROMPTS
    return [
        Recording(
            "asterisk",
            language,
            name,
            transcripts[name],
            Clip(
                f"{language}/{name}",
                load_audio(_require(folder / f"{name}.wav")),
                language=language if declared else None,
            ),
        )
        for name in chosen
    ]


def _titles_spelt_out(text: str) -> str:
    """LibriVox's transcripts spell titles out ("mister"), the recogniser writes them short ("Mr.")."""
    return re.sub(r"\bmr\b\.?", "mister", text, flags=re.IGNORECASE)


def fold(text: str, language: str) -> str:
    """The words (or, for a language written without spaces, the characters) a transcript is scored on."""
    return " ".join(units(_titles_spelt_out(text), language))


def error_rate(pairs: list[tuple[str, str]], language: str) -> float:
    """Word (or character) error rate of (reference, hypothesis) pairs, over all their words together."""
    rate = text_error_rate(
        [_titles_spelt_out(ref) for ref, _ in pairs], [_titles_spelt_out(hyp) for _, hyp in pairs], language
    )
    return rate.value or 0.0


def unit(language: str) -> str:
    return "WER" if spaced(language) else "CER"
