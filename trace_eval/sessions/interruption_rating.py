"""Full-Duplex-Bench's rating of an answer after an interruption (0 to 5), asked of any LLM.

The benchmark asks GPT-4 Turbo, with the prompt its `eval_user_interruption.py` holds; here any model litellm
speaks (`sessions DIR --model MODEL [--api-base URL] --checkout FULL_DUPLEX_BENCH`), with that prompt read from
the user's checkout (the script's `system_msg`, and its `user_msg` with the sample's context, interruption and
answer put in: checkout_prompts.py). The answer is parsed as the script parses it (its last "Analysis:
...\\nI would rate the AI's response as N"); one that does not parse is asked again (checkout_prompts.ATTEMPTS),
then recorded as no rating, with the reason and what the model said.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trace_eval.sessions.checkout_prompts import Template, ask, fstring, string
from trace_eval.sessions.errors import SessionError

__all__ = ["Rater", "parse_rating", "read_prompt"]

SCRIPT = Path("v1_v1.5/evaluation/eval_user_interruption.py")
_RATED = re.compile(r"Analysis:\s*(.*?)\nI would rate the AI's response as (\d+)", re.DOTALL)
# What the script's user message puts in, by the names it gives them.
_FIELDS = {
    "in_before_interrupt_text": "context",
    "in_interrupt_text": "interrupt",
    "out_after_interrupt_text": "answer",
}


class Prompt:
    def __init__(self, system: str, user: Template) -> None:
        self.system, self.user = system, user

    def messages(self, context: str, interrupt: str, answer: str) -> list[dict[str, str]]:
        given = {"context": context, "interrupt": interrupt, "answer": answer}
        user = self.user.render({name: given[field] for name, field in _FIELDS.items()})
        return [{"role": "system", "content": self.system}, {"role": "user", "content": user}]


def read_prompt(checkout: str | Path) -> Prompt:
    """The rating prompt of a Full-Duplex-Bench checkout: its script's `system_msg` and `user_msg`."""
    path = Path(checkout) / SCRIPT
    if not path.is_file():
        raise SessionError(f"{checkout}: not a Full-Duplex-Bench checkout (no {SCRIPT})")
    return Prompt(string(path, "system_msg"), fstring(path, "user_msg", tuple(_FIELDS)))


def parse_rating(answer: str) -> dict[str, Any] | None:
    """The script's reading of an answer: its last analysis and rating, or None."""
    found = None
    for match in _RATED.finditer(answer + "\n"):
        found = {"analysis": match.group(1).strip(), "rating": int(match.group(2))}
    return found


class Rater:
    """Rates answers after interruptions with one model: `complete` sends messages and returns the answer's text
    (interaction.llm_complete); a failed call or an answer that never parses is a rating of None with the
    reason."""

    def __init__(self, prompt: Prompt, complete: Callable[[list[dict[str, str]]], str], model: str) -> None:
        self.prompt, self.complete, self.model = prompt, complete, model

    def __call__(self, context: str, interrupt: str, answer: str) -> dict[str, Any]:
        messages = self.prompt.messages(context, interrupt, answer)
        return ask(self.complete, messages, parse_rating, self.model, "rating")
