"""Full-Duplex-Bench v1.5's behaviour task: what the system did once the user's audio was overlapped (one `C_*`
tag per sample: it responded to the overlap, resumed, said it had not heard, or nothing of use), told by an LLM.

A sample is a v1.5 folder: `input.wav` (the user's audio with the overlap), `output.wav` (the system's answer to
it), `clean_input.wav` and `clean_output.wav` (the same without the overlap, and the system's answer to that). The
benchmark asks GPT-4o with its instruction (`v1_v1.5/evaluation/instruction/behavior.txt`) and a message of the
four transcripts (`eval_behavior.py`'s `final_input`); here any model litellm speaks (`sessions DIR --task
behaviour --model MODEL --checkout FULL_DUPLEX_BENCH`), both read from the user's checkout, never copied.

`compat="full-duplex-bench"` reads the benchmark's transcripts (`clean_input.json`, `input.json`,
`clean_output.json`, `output.json`, from its English-only recogniser; a folder without all four is skipped, as
the script skips it, named) and summarises as the script does: each tag's share of the tags given, to 2 decimals.
The default transcribes the four files with trace-eval's multilingual recogniser (`--words`; without it no tag,
saying so) in the same format, and gives each tag's rate with its Wilson interval and the samples left untagged.
The answer is read as the script reads it (the first JSON object with a "behaviour" key); one that holds none is
asked again (checkout_prompts.ATTEMPTS), then recorded untagged with the reason.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trace_eval.sessions.checkout_prompts import ask, fstring
from trace_eval.sessions.errors import SessionError
from trace_eval.sessions.metrics import rate

__all__ = ["TASK", "Tagger", "parse_behaviour", "summarise"]

TASK = "behaviour"
SCRIPT = Path("v1_v1.5/evaluation/eval_behavior.py")
INSTRUCTION = Path("v1_v1.5/evaluation/instruction/behavior.txt")
# The transcripts the message holds, by the script's names for them, and the audio each is of.
TRANSCRIPTS = {
    "input_clean_text": "clean_input",
    "input_noisy_text": "input",
    "output_clean_text": "clean_output",
    "output_noisy_text": "output",
}


def parse_behaviour(answer: str) -> dict[str, Any] | None:
    """The script's reading of an answer: the first JSON object in it with a "behaviour" key."""
    decoder = json.JSONDecoder()
    at = answer.find("{")
    while at != -1:
        try:
            found, end = decoder.raw_decode(answer, at)
        except json.JSONDecodeError:
            at = answer.find("{", at + 1)
            continue
        if isinstance(found, dict) and isinstance(found.get("behaviour"), list):
            return {"behaviour": [str(tag) for tag in found["behaviour"]]}
        at = answer.find("{", end)
    return None


class Tagger:
    """Tags samples with one model, with the instruction and message of a Full-Duplex-Bench checkout;
    `recogniser` (an extractors.asr.AsrExtractor) transcribes the four files for the default."""

    def __init__(
        self,
        checkout: str | Path,
        complete: Callable[[list[dict[str, str]]], str],
        model: str,
        recogniser: Any = None,
        language: str | None = None,
    ) -> None:
        checkout = Path(checkout)
        if not (checkout / INSTRUCTION).is_file():
            raise SessionError(f"{checkout}: not a Full-Duplex-Bench checkout (no {INSTRUCTION})")
        self.instruction = (checkout / INSTRUCTION).read_text(encoding="utf-8")
        self.message = fstring(checkout / SCRIPT, "final_input", tuple(TRANSCRIPTS))
        self.complete, self.model, self.recogniser, self.language = complete, model, recogniser, language

    def tag(self, transcripts: dict[str, Any]) -> dict[str, Any]:
        """{"behaviour": [...], "model"} for the four transcripts (by file stem), or untagged with the reason."""
        compact = {name: json.dumps(transcripts[stem], separators=(",", ":"), ensure_ascii=False)
                   for name, stem in TRANSCRIPTS.items()}  # fmt: skip
        messages = [
            {"role": "system", "content": self.instruction},
            {"role": "user", "content": self.message.render(compact)},
        ]
        return ask(self.complete, messages, parse_behaviour, self.model, "behaviour")

    def script_sample(self, folder: Path) -> dict[str, Any]:
        missing = [f"{stem}.json" for stem in TRANSCRIPTS.values() if not (folder / f"{stem}.json").is_file()]
        if missing:
            raise SessionError(f"{folder}: no {', '.join(missing)}: the benchmark's script skips this folder")
        transcripts = {}
        for stem in TRANSCRIPTS.values():
            try:
                transcripts[stem] = json.loads((folder / f"{stem}.json").read_text(encoding="utf-8"))
            except (json.JSONDecodeError, UnicodeDecodeError) as e:
                raise SessionError(f"{folder / stem}.json: not JSON ({e})") from None
        return {"tagged": self.tag(transcripts)}

    def default_sample(self, folder: Path) -> dict[str, Any]:
        missing = [f"{stem}.wav" for stem in TRANSCRIPTS.values() if not (folder / f"{stem}.wav").is_file()]
        if missing:
            raise SessionError(f"{folder}: no {', '.join(missing)}: a v1.5 sample holds the four recordings")
        if self.recogniser is None:
            return {"tagged": {"behaviour": None, "why": "no words to tag: transcribe with --words"}}
        transcripts, notes = self._transcribed(folder)
        return {"tagged": self.tag(transcripts), "words_from": self.recogniser.model().id, "notes": notes}

    def _transcribed(self, folder: Path) -> tuple[dict[str, Any], list[str]]:
        """The four files' words in the benchmark's format ({"text", "chunks": [{"text", "timestamp"}]})."""
        from extractors import Clip, ClipError
        from trace_eval.audio import load_audio

        self.recogniser.load()
        stems = list(TRANSCRIPTS.values())
        clips = [Clip(f"{folder.name}:{stem}", load_audio(folder / f"{stem}.wav"), language=self.language)
                 for stem in stems]  # fmt: skip
        transcripts, notes = {}, []
        for stem, result in zip(stems, self.recogniser.extract(clips)):
            words = [] if isinstance(result, ClipError) else result.values.get("words") or []
            if isinstance(result, ClipError):
                notes.append(f"{stem}.wav was not transcribed: {result}")
            chunks = [{"text": w["word"].strip(), "timestamp": [w["start"], w["end"]]} for w in words]
            transcripts[stem] = {"text": " ".join(c["text"] for c in chunks), "chunks": chunks}
        return transcripts, notes


def summarise(samples: list[dict[str, Any]], *, compat: str | None = None) -> dict[str, Any]:
    """Compat: each C_ tag's share of those given, to 2 decimals (the script's "Ratios (C-axis)"); the default:
    each tag's rate over the samples tagged, with its interval, and the samples left untagged."""
    tags = Counter(tag for s in samples for tag in s["tagged"].get("behaviour") or ())
    untagged = sum(s["tagged"].get("behaviour") is None for s in samples)
    if compat:
        c_tags = {tag: n for tag, n in tags.items() if tag.startswith("C")}
        total = sum(c_tags.values())
        summary: dict[str, Any] = {"C": {tag: round(n / total, 2) for tag, n in sorted(c_tags.items())}}
        if len(c_tags) < len(tags):
            summary["note"] = "tags outside the C axis are left out (the script stops with an error on them)"
        return summary
    tagged = len(samples) - untagged
    return {
        "tags": {tag: rate(n, tagged) for tag, n in sorted(tags.items())},
        "untagged": rate(untagged, len(samples)),
    }
