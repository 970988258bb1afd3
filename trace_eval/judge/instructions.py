"""An instruction's text read the way benchmarks write them: the quoted words to say, the manner asked for
around them and the bracketed directives. Below the judge's rules (cues.py) and the languages' reading
(languages.py), which both read instructions so."""

from __future__ import annotations

import re
from dataclasses import dataclass

from trace_eval.judge.prosody_rules import without_stress_targets

__all__ = ["Instruction", "read_instruction"]

# Words to say: "...", “...”, ‘...’, or '...' where the marks stand outside words (so "don't" and "the
# speaker's" are not quotes, while 'I don't know' is one); and other languages' marks: „...“, «...», »...«,
# ‹...›, ‚...‘, 「...」, 『...』.
_QUOTED = re.compile(
    r'"([^"]+)"|“([^”]+)”|„([^“”]+)[“”]|«\s*([^»]+?)\s*»|»\s*([^«]+?)\s*«|‹\s*([^›]+?)\s*›|‚([^‘’]+)[‘’]'
    r"|「([^」]+)」|『([^』]+)』|‘(.+?)’(?!\w)|(?<![\w\'’])\'(?=\S)(.+?)(?<=\S)\'(?!\w)"
)
_DIRECTIVE = re.compile(r"\[([^\[\]]+)\]")


@dataclass(frozen=True)
class Instruction:
    """An instruction read the way benchmarks write them."""

    quoted: str  # the words to say, every quote joined in order; "" when nothing is quoted
    manner: str  # everything outside the quotes: how to say it (bracketed directives included)
    directives: tuple[str, ...]  # bracketed directives, "[emotion: sad]" -> "emotion: sad"


def read_instruction(text: str) -> Instruction:
    """The quoted words to say, the manner asked for and the bracketed directives of an instruction."""
    text = without_stress_targets(text)  # "stress 'fox'" asks how to say a word, not to say it again
    quoted = " ".join(next(g for g in groups if g) for groups in _QUOTED.findall(text))
    manner = _QUOTED.sub(" ", text)
    directives = tuple(d.strip() for d in _DIRECTIVE.findall(manner))
    # A directive runs into the text after it ("[emotion: sad]What ..."): keep its words apart.
    return Instruction(quoted, _DIRECTIVE.sub(lambda m: f" {m.group(1)} ", manner), directives)
