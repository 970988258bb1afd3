"""One benchmark item, as the manifest gives it: below both the benchmark reader (bench.py), which makes
items, and the rubrics, which say what is asked of each."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from trace_eval.languages import text_language

__all__ = ["LANGUAGE_FIELDS", "Pair"]

# A written instruction that reads as one language at least this surely (py3langid) tells which language its
# answers are tested in (trace_eval/languages.py: every Asterisk transcript read so surely was read right).
TEXT_SURE = 0.5

# The manifest field that declares the language of each audio field's clip (docs/benchmark.md).
LANGUAGE_FIELDS = {
    "instruction_path": "instruction_language",
    "audio1_path": "audio1_language",
    "audio2_path": "audio2_language",
    "audio_path": "audio_language",
}


@dataclass
class Pair:
    """One manifest item: an instruction and two spoken responses (or one, for pointwise items)."""

    id: str
    instruction_path: str | None
    instruction_text: str | None
    audio1_path: str | None
    audio2_path: str | None
    model_a: str | None = None
    model_b: str | None = None
    label: dict[str, Any] = field(default_factory=dict)  # human labels, typed-tie normalised where possible
    extra: dict[str, Any] = field(default_factory=dict)  # free-form context: context, dialogue_history, character, ...
    audio_path: str | None = None  # the one answer of a pointwise item
    # Languages the manifest declares (item fields, else the manifest's defaults), by field: instruction_language
    # (of the spoken instruction, or of instruction_text), audio1_language, audio2_language, audio_language.
    # A clip declared nothing for has its language detected.
    languages: dict[str, str] = field(default_factory=dict)

    @property
    def pointwise(self) -> bool:
        return self.audio_path is not None and self.audio1_path is None

    def audio_paths(self) -> list[str]:
        """Relative paths of every audio file this item refers to (instruction first)."""
        paths = [self.instruction_path, self.audio1_path, self.audio2_path, self.audio_path]
        return [p for p in paths if p]

    def declared_languages(self) -> dict[str, str]:
        """Relative audio path -> the language the manifest declares for that clip (only clips declared)."""
        declared = {}
        for path_field, language_field in LANGUAGE_FIELDS.items():
            path = getattr(self, path_field)
            if path and language_field in self.languages:
                declared[path] = self.languages[language_field]
        return declared

    def told_language(self) -> str | None:
        """The instruction's language as the manifest tells it: declared, else what its written text reads as
        surely; None where only its audio can tell."""
        declared = self.languages.get("instruction_language")
        if declared or not self.instruction_text:
            return declared or None
        read = text_language(self.instruction_text)
        return read.code if read is not None and read.probability >= TEXT_SURE else None

    def expected_languages(self, held: str | None) -> dict[str, str]:
        """Relative path -> `held`, the language the judge holds this item's answers to (trace_eval/judge/languages.py
        `held_language`), for each answer whose own language is not declared. Stage 1 decodes an answer in it
        where the answer's own evidence does not already make it the surest (the hypothesis test of
        trace_eval/language_rule.py); the judge weighs it as a prior."""
        return {path: held for path in self.undeclared_answers()} if held else {}

    def undeclared_answers(self) -> list[str]:
        """The answers' paths whose language the manifest does not declare."""
        declared = self.declared_languages()
        return [p for p in (self.audio1_path, self.audio2_path, self.audio_path) if p and p not in declared]

    def waits_on_instruction(self) -> bool:
        """Whether an answer's expected language can come only from hearing the spoken instruction first."""
        return bool(self.instruction_path) and bool(self.undeclared_answers()) and self.told_language() is None
