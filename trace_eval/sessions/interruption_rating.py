"""Full-Duplex-Bench's rating of an answer after an interruption (0 to 5), asked of any LLM.

The benchmark asks GPT-4 Turbo, with the prompt its `eval_user_interruption.py` holds; here any model litellm
speaks (`sessions DIR --model MODEL [--api-base URL] --checkout FULL_DUPLEX_BENCH`), with that prompt read from
the user's checkout (the script's `system_msg`, and its user message with the sample's context, interruption and
answer put in), never copied. The answer is parsed as the script parses it (its last "Analysis: ...\\nI would
rate the AI's response as N"). Where the script asks again forever, an answer that does not parse is asked again
up to `ATTEMPTS` times, then recorded as no rating, with the reason and what the model said.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trace_eval.sessions.errors import SessionError

__all__ = ["ATTEMPTS", "Rater", "read_prompt"]

SCRIPT = Path("v1_v1.5/evaluation/eval_user_interruption.py")
ATTEMPTS = 3
_RATED = re.compile(r"Analysis:\s*(.*?)\nI would rate the AI's response as (\d+)", re.DOTALL)
# What the script's user message puts in, by the names it gives them.
_FIELDS = {
    "in_before_interrupt_text": "context",
    "in_interrupt_text": "interrupt",
    "out_after_interrupt_text": "answer",
}


@dataclass(frozen=True)
class Prompt:
    system: str
    user: tuple[str | None, ...]  # the user message's text, None where a field goes (in _FIELDS' order of use)
    fields: tuple[str, ...]

    def messages(self, context: str, interrupt: str, answer: str) -> list[dict[str, str]]:
        given = {"context": context, "interrupt": interrupt, "answer": answer}
        values = iter(given[_FIELDS[name]] for name in self.fields)
        user = "".join(part if part is not None else next(values) for part in self.user)
        return [{"role": "system", "content": self.system}, {"role": "user", "content": user}]


def read_prompt(checkout: str | Path) -> Prompt:
    """The rating prompt of a Full-Duplex-Bench checkout: its script's `system_msg` and its user message."""
    path = Path(checkout) / SCRIPT
    if not path.is_file():
        raise SessionError(f"{checkout}: not a Full-Duplex-Bench checkout (no {SCRIPT})")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    system, user = None, None
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name == "system_msg" and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                system = node.value.value
            elif name == "user_msg" and isinstance(node.value, ast.JoinedStr):
                user = node.value
    if system is None or user is None:
        raise SessionError(f"{path}: no rating prompt found (a `system_msg` string and a `user_msg` f-string)")
    parts: list[str | None] = []
    fields: list[str] = []
    for value in user.values:
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            parts.append(value.value)
        elif isinstance(value, ast.FormattedValue) and isinstance(value.value, ast.Name) and value.value.id in _FIELDS:
            parts.append(None)
            fields.append(value.value.id)
        else:
            raise SessionError(f"{path}: the user message puts in {ast.unparse(value)}, which is not known here")
    return Prompt(system, tuple(parts), tuple(fields))


def parse_rating(answer: str) -> dict[str, Any] | None:
    """The script's reading of an answer: its last analysis and rating, or None."""
    found = None
    for match in _RATED.finditer(answer + "\n"):
        found = {"analysis": match.group(1).strip(), "rating": int(match.group(2))}
    return found


class Rater:
    """Rates answers after interruptions with one model: `complete` sends messages and returns the answer's text
    (interaction.litellm_complete); a failed call or an answer that never parses is a rating of None with the
    reason."""

    def __init__(self, prompt: Prompt, complete: Callable[[list[dict[str, str]]], str], model: str) -> None:
        self.prompt, self.complete, self.model = prompt, complete, model

    def __call__(self, context: str, interrupt: str, answer: str) -> dict[str, Any]:
        from trace_eval.sessions.interaction import CallFailed

        said = ""
        for _ in range(ATTEMPTS):
            try:
                said = self.complete(self.prompt.messages(context, interrupt, answer))
            except CallFailed as e:
                return {"rating": None, "model": self.model, "why": f"the call failed: {e}"}
            parsed = parse_rating(said)
            if parsed is not None:
                return {**parsed, "model": self.model}
        return {
            "rating": None,
            "model": self.model,
            "why": f'no "I would rate the AI\'s response as N" in {ATTEMPTS} answers',
            "raw": said,
        }
