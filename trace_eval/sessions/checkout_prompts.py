"""Prompts a benchmark's scripts hold, read from the user's checkout (never copied here), and any model asked them.

Full-Duplex-Bench asks GPT models with prompts written in its scripts (a string, and an f-string the sample's
texts are put into) or in its instruction files. `string` and `fstring` read them from the script's source
without running it; `ask` sends the messages through `complete` (interaction.llm_complete: any litellm model)
and parses the answer as the script does, asking again up to `ATTEMPTS` times where the script would ask forever.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trace_eval.sessions.errors import SessionError

__all__ = ["ATTEMPTS", "Template", "ask", "fstring", "string"]

ATTEMPTS = 3


@dataclass(frozen=True)
class Template:
    """An f-string of a script: its text, and the names of what is put in, in order."""

    parts: tuple[str | None, ...]  # the text; None where a value goes
    fields: tuple[str, ...]

    def render(self, values: Mapping[str, str]) -> str:
        given = iter(values[name] for name in self.fields)
        return "".join(part if part is not None else next(given) for part in self.parts)


def _assignments(path: Path) -> dict[str, ast.expr]:
    if not path.is_file():
        raise SessionError(f"{path}: not found (is the checkout the benchmark's?)")
    found: dict[str, ast.expr] = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            found.setdefault(node.targets[0].id, node.value)
    return found


def string(path: Path, name: str) -> str:
    """The string assigned to `name` in a script."""
    value = _assignments(path).get(name)
    if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
        raise SessionError(f"{path}: no string `{name}` (the prompt read from the benchmark's script)")
    return value.value


def fstring(path: Path, name: str, known: tuple[str, ...]) -> Template:
    """The f-string assigned to `name` in a script, each value it puts in one of the names `known`."""
    value = _assignments(path).get(name)
    if not isinstance(value, ast.JoinedStr):
        raise SessionError(f"{path}: no f-string `{name}` (the message read from the benchmark's script)")
    parts: list[str | None] = []
    fields: list[str] = []
    for piece in value.values:
        if isinstance(piece, ast.Constant) and isinstance(piece.value, str):
            parts.append(piece.value)
        elif isinstance(piece, ast.FormattedValue) and isinstance(piece.value, ast.Name) and piece.value.id in known:
            parts.append(None)
            fields.append(piece.value.id)
        else:
            raise SessionError(f"{path}: `{name}` puts in {ast.unparse(piece)}, which is not known here")
    return Template(tuple(parts), tuple(fields))


def ask(
    complete: Callable[[list[dict[str, str]]], str],
    messages: list[dict[str, str]],
    parse: Callable[[str], dict[str, Any] | None],
    model: str,
    wanted: str,
) -> dict[str, Any]:
    """The model's answer parsed ({..., "model"}), or {wanted: None, "model", "why"[, "raw"]} where the call
    failed or no answer parsed in ATTEMPTS."""
    from trace_eval.sessions.interaction import CallFailed

    said = ""
    for _ in range(ATTEMPTS):
        try:
            said = complete(messages)
        except CallFailed as e:
            return {wanted: None, "model": model, "why": f"the call failed: {e}"}
        parsed = parse(said)
        if parsed is not None:
            return {**parsed, "model": model}
    return {wanted: None, "model": model, "why": f"no answer in the script's format in {ATTEMPTS} answers", "raw": said}
