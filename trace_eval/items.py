"""One benchmark item, as the manifest gives it: below both the benchmark reader (bench.py), which makes
items, and the rubrics, which say what is asked of each."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Pair"]


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

    @property
    def pointwise(self) -> bool:
        return self.audio_path is not None and self.audio1_path is None

    def audio_paths(self) -> list[str]:
        """Relative paths of every audio file this item refers to (instruction first)."""
        paths = [self.instruction_path, self.audio1_path, self.audio2_path, self.audio_path]
        return [p for p in paths if p]
