"""Judge backbones: anything that turns rendered messages into answer text, found by name.

A backbone is a `Backbone` made from `BackboneSettings`; the runner asks it
everything it needs (caching, token budget, structured output, prices) and never
looks at its type. Built in: `cues` (the offline rules, cues.py) and `litellm`
(any litellm model id, litellm_backbone.py). Another package adds one through the
entry point group `trace_eval.backbones`, e.g. in its pyproject.toml:

    [project.entry-points."trace_eval.backbones"]
    mine = "my_package.judge:MyBackbone"

after which `--model mine` judges with it. A --model that names no backbone is a
litellm model id.

Failures of a call are three exceptions the runner acts on: retry
(TransientBackboneError), give up on this request (RequestRejected), or stop the
whole run (FatalBackboneError; also raised when a backbone cannot judge what the
run asks, e.g. a rubric it has no rules for).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING

from trace_eval.judge.prompts import Case, Prompt

if TYPE_CHECKING:
    from trace_eval.rubrics import Rubric

__all__ = [
    "BUILT_IN",
    "ENTRY_POINT_GROUP",
    "Backbone",
    "BackboneError",
    "BackboneSettings",
    "Completion",
    "FatalBackboneError",
    "NO_CONNECTION",
    "RequestRejected",
    "TransientBackboneError",
    "UnknownBackboneError",
    "available_backbones",
    "backbone_for",
    "default_token_budget",
    "make_backbone",
]


class BackboneError(Exception):
    """Base of the failures a backbone reports."""


class FatalBackboneError(BackboneError):
    """Every further call would fail the same way (bad key, unknown model): the run stops."""


NO_CONNECTION = ("name", "refused", "tls", "unreachable")  # kinds of TransientBackboneError: no connection opened


class TransientBackboneError(BackboneError):
    """Worth retrying: rate limit, server error, timeout, dropped connection. A connection that cannot be
    opened at all (NO_CONNECTION) stops the run when no call has got through yet."""

    def __init__(self, message: str, kind: str, retry_after_s: float | None = None):
        super().__init__(message)
        # rate_limit | server | timeout | connection (one broke) | no connection could be opened: name (the
        # host name does not resolve), refused (nothing listens there), tls (the handshake failed), unreachable
        self.kind = kind
        self.retry_after_s = retry_after_s


class RequestRejected(BackboneError):
    """This one request cannot succeed (bad request, prompt too long): the pair is recorded as an error."""


class UnknownBackboneError(BackboneError, LookupError):
    """No backbone is registered under this name."""


@dataclass(frozen=True)
class Completion:
    """One answer of a backbone."""

    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None  # None when the price of the model is unknown
    latency_s: float = 0.0
    finish_reason: str | None = None  # "length": cut at the token budget
    # (token, natural log of its probability) of every answer token, where asked (--logprobs) and returned
    logprobs: tuple[tuple[str, float], ...] | None = None


# Answer budget when --max-tokens is not given. Answers with two sentences of reasoning per
# dimension measure 167 tokens (TRACE, 3 dimensions) and 213 (5 dimensions) with
# scripts/bench_judge.py --answer-size; the budget leaves about five times that, growing with
# the dimensions asked, and cuts a rambling answer short (one was seen at 1,400+ tokens).
BUDGET_BASE_TOKENS = 256
BUDGET_PER_DIMENSION_TOKENS = 192
# Models that think before answering spend their thoughts from the same budget.
BUDGET_REASONING_TOKENS = 8192


def default_token_budget(dimensions: int, reasons_first: bool) -> int:
    """max_tokens sent when the user gives none: room for an answer about `dimensions` dimensions, with margin."""
    budget = BUDGET_BASE_TOKENS + BUDGET_PER_DIMENSION_TOKENS * max(1, dimensions)
    return budget + (BUDGET_REASONING_TOKENS if reasons_first else 0)


@dataclass(frozen=True)
class BackboneSettings:
    """What a backbone is made with: the run's model and sampling settings, and what it is asked.

    Only `model`, `api_base` and the sampling fields change answers.
    """

    model: str  # the --model given: a backbone's name, or a litellm model id
    rubric: Rubric
    prompt: Prompt
    api_base: str | None = None
    api_key: str | None = None  # never written to a run folder or a cache key
    temperature: float = 0.0
    max_tokens: int | None = None
    timeout_s: float = 120.0
    price_in_per_token: float | None = None  # USD, for models no price map knows
    price_out_per_token: float | None = None
    check_key: bool = True  # False for a dry run, which prices calls without a key
    logprobs: bool = False  # ask for the answer tokens' log-probabilities (a confidence of each label)


class Backbone:
    """What the runner asks of a backbone. Subclass it, implement `complete`, register it by name.

    The defaults suit a backbone that honours --max-tokens, has no structured output
    and no known price; override what differs.
    """

    cacheable: bool = True  # False for backbones cheaper to run than to look up
    may_leave_undetermined: bool = False  # may answer null with the reason; others must give every label
    no_calls: str | None = None  # why a dry run has nothing to count (the backbone answers locally)
    states_confidence: bool = False  # its answers' `confidence` (dimension -> 0..1) is recorded as the confidence

    def __init__(self, settings: BackboneSettings):
        self.settings = settings
        self.name = settings.model  # part of every cache key

    async def complete(
        self, messages: list[dict], case: Case, response_format: dict | None, max_tokens: int | None
    ) -> Completion:
        raise NotImplementedError

    def token_budget(self, dimensions: int) -> int | None:
        """max_tokens of a call about `dimensions` dimensions (sent, and part of the cache key)."""
        return self.settings.max_tokens

    def structured_output(self, choice: str) -> bool:
        """Whether calls carry a JSON-schema response format under --structured `choice` (auto | on | off).
        Under auto, a format the backbone refuses (a request rejected with it, answered without) is dropped
        for the rest of the run."""
        return choice == "on"

    def prices_per_token(self) -> tuple[float, float] | None:
        """(input, output) USD per token; None when unknown."""
        return None

    def count_prompt_tokens(self, messages: list[dict]) -> tuple[int, bool]:
        """(prompt tokens of `messages`, exact?), for a dry run."""
        raise NotImplementedError(f"the {self.name} backbone cannot count prompt tokens")

    def recorded_settings(self) -> dict:
        """What config.json records about this backbone beyond the run's settings; a run resumes only with
        the same."""
        return {}

    async def close(self) -> None:
        """Release connections at the end of a run."""


BackboneFactory = Callable[[BackboneSettings], Backbone]
ENTRY_POINT_GROUP = "trace_eval.backbones"
# Imported by name only when used, as entry points are; a package cannot replace them.
BUILT_IN = {
    "cues": "trace_eval.judge.cues:CuesBackbone",
    "litellm": "trace_eval.judge.litellm_backbone:LiteLLMBackbone",
}


def available_backbones() -> dict[str, EntryPoint]:
    """Backbone name -> where it is defined: the built-in ones, then those installed packages declare."""
    found = {name: EntryPoint(name, value, ENTRY_POINT_GROUP) for name, value in BUILT_IN.items()}
    for entry in _declared(tuple(sys.path)):
        found.setdefault(entry.name, entry)
    return found


@cache
def _declared(search_path: tuple[str, ...]) -> tuple[EntryPoint, ...]:
    """The backbones installed packages declare, looked up once per `search_path` (sys.path, where they are
    found): reading every installed package's metadata takes 25-50 ms, and a run asks several times."""
    return tuple(entry_points(group=ENTRY_POINT_GROUP))


def backbone_for(model: str) -> str:
    """The name of the backbone that judges with --model `model`: the one of that name, else litellm."""
    return model if model in available_backbones() else "litellm"


def make_backbone(name: str, settings: BackboneSettings) -> Backbone:
    """The backbone registered as `name`, made with `settings`.

    Raises UnknownBackboneError naming the choices, or FatalBackboneError when it cannot be imported or
    cannot judge this run.
    """
    found = available_backbones()
    if name not in found:
        raise UnknownBackboneError(f"unknown backbone {name!r}; expected one of: {', '.join(sorted(found))}")
    try:
        factory: BackboneFactory = found[name].load()
    except ImportError as e:
        raise FatalBackboneError(
            f"backbone {name!r} ({found[name].value}) cannot be imported: {e}; install the package that provides it"
        ) from e
    return factory(settings)
