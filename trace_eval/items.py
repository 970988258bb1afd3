"""One benchmark item, as the manifest gives it: below both the benchmark reader (bench.py), which makes
items, and the rubrics, which say what is asked of each."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["LANGUAGE_FIELDS", "Pair"]

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
