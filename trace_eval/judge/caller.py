"""One backbone call, through the answer cache, the cost budget, the rate limit and retries.

What a failure means is decided here: a rate limit pauses every call (honouring
Retry-After), a server error or dropped connection is retried with backoff, and a
server that cannot be connected to at all (a host name that does not resolve, a
refused connection, a failed TLS handshake) before any call got through stops the
run, since every pair would fail the same way.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from trace_eval.judge.backbones import NO_CONNECTION, Backbone, Completion, FatalBackboneError, TransientBackboneError
from trace_eval.judge.cache import AnswerCache, request_key
from trace_eval.judge.prompts import Case

__all__ = ["BudgetReached", "CallFailed", "Caller", "RateLimiter", "RetryPolicy", "RunStopped", "without_credentials"]


class BudgetReached(Exception):
    """--max-cost is spent: no new calls."""


class CallFailed(Exception):
    """A call still failing after its retries."""


class RunStopped(Exception):
    """The run stops (a failure every call would meet); the reason is the message."""


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries with exponential backoff (and jitter); a Retry-After header is honoured as sent."""

    max_retries: int = 4  # server errors, timeouts, dropped connections
    max_rate_limit_retries: int = 10
    base_delay_s: float = 1.0
    max_delay_s: float = 60.0
    max_retry_after_s: float = 600.0

    def backoff(self, attempt: int) -> float:
        delay = min(self.max_delay_s, self.base_delay_s * (2**attempt))
        return delay * (0.5 + random.random() / 2)


class RateLimiter:
    """Spaces call starts to the requests-per-minute limit and holds every call during a rate-limit pause."""

    def __init__(self, rpm: float | None):
        self.interval = 60.0 / rpm if rpm else 0.0
        self._next = 0.0
        self._paused_until = 0.0
        self._lock = asyncio.Lock()

    def pause(self, seconds: float) -> None:
        self._paused_until = max(self._paused_until, time.monotonic() + seconds)

    async def wait(self) -> None:
        async with self._lock:
            now = time.monotonic()
            start = max(now, self._next, self._paused_until)
            self._next = start + self.interval
        if start > now:
            await asyncio.sleep(start - now)


def without_credentials(url: str | None) -> str | None:
    """`url` without a user name or password in it, as written to run folders and cache keys."""
    if not url:
        return url
    parts = urlsplit(url)
    if parts.username or parts.password:
        host = parts.hostname or ""
        netloc = f"{host}:{parts.port}" if parts.port else host
        parts = parts._replace(netloc=netloc)
    return urlunsplit(parts)


class Caller:
    """Calls of one run: counts calls, cache hits, retries and money spent, and why the run stopped."""

    def __init__(
        self,
        backbone: Backbone,
        cache: AnswerCache,
        prompt_version: str,
        *,
        api_base: str | None,
        temperature: float,
        retry: RetryPolicy,
        concurrency: int,
        rpm: float | None,
        max_cost: float | None,
    ):
        self.backbone = backbone
        self.cache = cache
        self.prompt_version = prompt_version
        self.api_base = api_base
        self.temperature = temperature
        self.retry = retry
        self.max_cost = max_cost
        self.slots = asyncio.Semaphore(concurrency)
        self.limiter = RateLimiter(rpm)
        self.calls = 0
        self.cache_hits = 0
        self.retries = 0
        self.spent_usd = 0.0
        self.stop_reason: str | None = None

    def key(self, messages: list[dict], sample: int, response_format: dict | None, max_tokens: int | None) -> str:
        """The cache key of a request: everything that changes its answer, nothing else."""
        # max_tokens is the budget sent (it changes answers): with --max-tokens, the value given as before.
        return request_key(
            {
                "backbone": self.backbone.name,
                "api_base": without_credentials(self.api_base),
                "prompt_version": self.prompt_version,
                "messages": messages,
                "sampling": {"temperature": self.temperature, "max_tokens": max_tokens}
                | ({"logprobs": True} if self.backbone.settings.logprobs else {}),
                "response_format": response_format,
                "sample_index": sample,
            }
        )

    def budget_reached(self) -> bool:
        return self.max_cost is not None and self.spent_usd >= self.max_cost

    def _stop(self, reason: str) -> FatalBackboneError:
        self.stop_reason = self.stop_reason or reason
        return FatalBackboneError(self.stop_reason)

    async def call(
        self, messages: list[dict], case: Case, sample: int, response_format: dict | None, max_tokens: int | None
    ) -> tuple[Completion, bool]:
        """(the answer, whether it came from the cache)."""
        key = self.key(messages, sample, response_format, max_tokens) if self.backbone.cacheable else None
        if key is not None:
            entry = self.cache.get(key)
            if entry is not None:
                self.cache_hits += 1
                return Completion(
                    entry["text"],
                    entry.get("prompt_tokens"),
                    entry.get("completion_tokens"),
                    entry.get("cost_usd"),
                    0.0,
                    entry.get("finish_reason"),
                    tuple((str(t), float(p)) for t, p in entry["logprobs"]) if entry.get("logprobs") else None,
                ), True
        completion = await self._call_with_retries(messages, case, response_format, max_tokens)
        self.calls += 1
        if completion.cost_usd:
            self.spent_usd += completion.cost_usd
        if key is not None:
            # In a thread: the write waits for the disk (fsync), and the calls in flight need the event loop.
            await asyncio.to_thread(
                self.cache.put,
                key,
                {
                    "model": self.backbone.name,
                    "text": completion.text,
                    "prompt_tokens": completion.prompt_tokens,
                    "completion_tokens": completion.completion_tokens,
                    "cost_usd": completion.cost_usd,
                    "finish_reason": completion.finish_reason,
                    "logprobs": [list(pair) for pair in completion.logprobs] if completion.logprobs else None,
                    "latency_s": round(completion.latency_s, 4),
                    "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                },
            )
        return completion, False

    async def _call_with_retries(
        self, messages: list[dict], case: Case, response_format: dict | None, max_tokens: int | None
    ) -> Completion:
        policy = self.retry
        transient = rate_limited = 0
        while True:
            if self.stop_reason:
                raise RunStopped(self.stop_reason)
            if self.budget_reached():
                raise BudgetReached()
            async with self.slots:
                await self.limiter.wait()
                if self.budget_reached():
                    raise BudgetReached()
                if self.stop_reason:
                    raise RunStopped(self.stop_reason)
                try:
                    return await self.backbone.complete(messages, case, response_format, max_tokens)
                except TransientBackboneError as e:
                    error = e
                except FatalBackboneError as e:
                    self.stop_reason = self.stop_reason or str(e)
                    raise
            if error.kind in NO_CONNECTION and not self.calls:
                # Nothing has got through and no connection can be opened: every pair would fail the same way.
                raise self._stop(f"cannot reach {self.backbone.name}: {error}")
            if error.kind == "rate_limit":
                rate_limited += 1
                if rate_limited > policy.max_rate_limit_retries:
                    raise CallFailed(f"rate limited {rate_limited} times in a row: {error}")
                delay = (
                    policy.backoff(rate_limited - 1)
                    if error.retry_after_s is None
                    else min(error.retry_after_s, policy.max_retry_after_s)
                )
                self.limiter.pause(delay)  # every call waits, not only this one
            else:
                transient += 1
                if transient > policy.max_retries:
                    message = f"{error.kind}: {error} (gave up after {policy.max_retries} retries of this call)"
                    if error.kind == "connection" and not self.calls:
                        # Nothing has got through yet: an unreachable server would fail every pair the same way.
                        raise self._stop(f"cannot reach {self.backbone.name}: {message}")
                    raise CallFailed(message)
                delay = policy.backoff(transient - 1)
            self.retries += 1  # counted once it is decided: a call given up on is not a retry
            await asyncio.sleep(delay)
