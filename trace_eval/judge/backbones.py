"""Judge backbones: anything that turns rendered messages into answer text.

`LiteLLMBackbone` reaches any litellm model id (OpenAI, Gemini, Anthropic, a
local vLLM or Ollama server through `api_base`). The offline `cues` backbone
lives in cues.py. Provider failures are translated into three exceptions the
runner acts on: retry (TransientBackboneError), give up on this request
(RequestRejected), or stop the whole run (FatalBackboneError).
"""
from __future__ import annotations

import email.utils
import logging
import os
import time
from dataclasses import dataclass
from typing import Any, Protocol

from trace_eval.judge.prompts import Case

__all__ = [
    "Backbone",
    "BackboneError",
    "BackboneSettings",
    "Completion",
    "FatalBackboneError",
    "LiteLLMBackbone",
    "RequestRejected",
    "TransientBackboneError",
    "import_litellm",
]


class BackboneError(Exception):
    """Base of the failures a backbone call reports."""


class FatalBackboneError(BackboneError):
    """Every further call would fail the same way (bad key, unknown model): the run stops."""


class TransientBackboneError(BackboneError):
    """Worth retrying: rate limit, server error, timeout, dropped connection."""

    def __init__(self, message: str, kind: str, retry_after_s: float | None = None):
        super().__init__(message)
        self.kind = kind  # rate_limit | server | timeout | connection
        self.retry_after_s = retry_after_s


class RequestRejected(BackboneError):
    """This one request cannot succeed (bad request, prompt too long): the pair is recorded as an error."""


@dataclass(frozen=True)
class Completion:
    """One answer of a backbone."""

    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None  # None when the price of the model is unknown
    latency_s: float = 0.0


class Backbone(Protocol):
    name: str
    cacheable: bool  # False for backbones cheaper to run than to look up

    async def complete(self, messages: list[dict], case: Case, response_format: dict | None) -> Completion: ...


@dataclass(frozen=True)
class BackboneSettings:
    """What a litellm call is made with. Only `model`, `api_base` and the sampling fields change answers."""

    model: str
    api_base: str | None = None
    api_key: str | None = None  # never written to a run folder or a cache key
    temperature: float = 0.0
    max_tokens: int | None = None
    timeout_s: float = 120.0
    price_in_per_token: float | None = None  # USD, for models litellm has no price for
    price_out_per_token: float | None = None


def import_litellm():
    """litellm, imported on first use; configured to stay offline and quiet."""
    # Without this litellm downloads its price map from the internet at import.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm
    except ImportError as e:  # pragma: no cover - litellm is a declared dependency
        raise FatalBackboneError("the judge needs litellm: pip install litellm") from e
    litellm.suppress_debug_info = True
    logging.getLogger("LiteLLM").setLevel(logging.ERROR)
    return litellm


def _retry_after_s(error: Exception) -> float | None:
    """Seconds from a Retry-After (or retry-after-ms) header, when the provider sent one."""
    headers: Any = getattr(error, "litellm_response_headers", None)
    if headers is None:
        response = getattr(error, "response", None)
        headers = getattr(response, "headers", None)
    if not headers:
        return None
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return max(0.0, float(value) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        when = email.utils.parsedate_to_datetime(value) if value else None
        return None if when is None else max(0.0, when.timestamp() - time.time())


def _is_connection_failure(error: BaseException) -> bool:
    """True when the cause chain shows the server was never reached (litellm reports it as a 500)."""
    import httpx
    import openai

    seen = 0
    cause: BaseException | None = error
    while cause is not None and seen < 12:
        if isinstance(cause, openai.APITimeoutError):
            return False
        if isinstance(cause, (ConnectionError, httpx.ConnectError, openai.APIConnectionError)):
            return True
        cause = cause.__cause__ or cause.__context__
        seen += 1
    return False


def _describe(error: Exception) -> str:
    text = str(error).replace("\n", " ").strip()
    return text[:500] or type(error).__name__


class LiteLLMBackbone:
    """Any litellm model. Calls are made once each: retries belong to the runner, which can honour Retry-After."""

    cacheable = True

    def __init__(self, settings: BackboneSettings):
        self.settings = settings
        self.name = settings.model
        self._litellm = import_litellm()
        self._check_provider()

    def _check_provider(self) -> None:
        try:
            self._litellm.get_llm_provider(self.settings.model, api_base=self.settings.api_base)
        except Exception as e:
            raise FatalBackboneError(
                f"litellm does not know which provider serves {self.settings.model!r}: {_describe(e)}. "
                "Give a provider prefix, e.g. openai/gpt-4o, gemini/gemini-2.5-flash, anthropic/claude-sonnet-4-5, "
                "or openai/NAME with --api-base for a local OpenAI-compatible server"
            ) from None

    def supports_response_schema(self) -> bool:
        try:
            return bool(self._litellm.supports_response_schema(model=self.settings.model))
        except Exception:
            return False

    def price_known(self) -> bool:
        if self.settings.price_in_per_token is not None:
            return True
        try:
            info = self._litellm.get_model_info(self.settings.model)
        except Exception:
            return False
        return info.get("input_cost_per_token") is not None

    def _kwargs(self, messages: list[dict], response_format: dict | None) -> dict:
        s = self.settings
        kwargs: dict[str, Any] = {
            "model": s.model,
            "messages": messages,
            "temperature": s.temperature,
            "timeout": s.timeout_s,
            "max_retries": 0,  # the OpenAI client's own retries would hide Retry-After from the runner
            "num_retries": 0,
            "drop_params": True,  # e.g. reasoning models that refuse `temperature`
        }
        if s.api_base:
            kwargs["api_base"] = s.api_base
        if s.api_key:
            kwargs["api_key"] = s.api_key
        if s.max_tokens is not None:
            kwargs["max_tokens"] = s.max_tokens
        if response_format is not None:
            kwargs["response_format"] = response_format
        if s.price_in_per_token is not None:
            kwargs["input_cost_per_token"] = s.price_in_per_token
            kwargs["output_cost_per_token"] = s.price_out_per_token or 0.0
        return kwargs

    def _cost(self, response: Any) -> float | None:
        hidden = getattr(response, "_hidden_params", None) or {}
        cost = hidden.get("response_cost")
        if cost is None:
            try:
                cost = self._litellm.completion_cost(completion_response=response)
            except Exception:
                return None
        return float(cost) if cost is not None else None

    async def complete(self, messages: list[dict], case: Case, response_format: dict | None) -> Completion:
        litellm = self._litellm
        start = time.perf_counter()
        try:
            response = await litellm.acompletion(**self._kwargs(messages, response_format))
        except (litellm.AuthenticationError, litellm.PermissionDeniedError) as e:
            raise FatalBackboneError(
                f"{self.name}: authentication failed ({_describe(e)}). Set the provider's API key "
                "(e.g. OPENAI_API_KEY, GEMINI_API_KEY, ANTHROPIC_API_KEY) or TRACE_JUDGE_API_KEY"
            ) from None
        except litellm.NotFoundError as e:
            where = f" at {self.settings.api_base}" if self.settings.api_base else ""
            raise FatalBackboneError(f"{self.name}: unknown model or endpoint{where} ({_describe(e)})") from None
        except litellm.RateLimitError as e:
            raise TransientBackboneError(_describe(e), "rate_limit", _retry_after_s(e)) from None
        except litellm.Timeout as e:
            raise TransientBackboneError(f"timed out after {self.settings.timeout_s:g} s", "timeout") from e
        except (litellm.ContextWindowExceededError, litellm.ContentPolicyViolationError) as e:
            raise RequestRejected(_describe(e)) from None
        except (litellm.InternalServerError, litellm.ServiceUnavailableError, litellm.BadGatewayError,
                litellm.APIConnectionError) as e:
            kind = "connection" if _is_connection_failure(e) else "server"
            raise TransientBackboneError(_describe(e), kind) from None
        except litellm.BadRequestError as e:
            raise RequestRejected(_describe(e)) from None
        except Exception as e:  # any other provider error: decide by HTTP status when there is one
            status = getattr(e, "status_code", None)
            if isinstance(status, int) and (status >= 500 or status == 408):
                raise TransientBackboneError(_describe(e), "server") from None
            if isinstance(status, int) and status == 429:
                raise TransientBackboneError(_describe(e), "rate_limit", _retry_after_s(e)) from None
            if isinstance(status, int) and 400 <= status < 500:
                raise RequestRejected(_describe(e)) from None
            # Anything else the provider library raised concerns this request; the run goes on.
            raise RequestRejected(f"{type(e).__name__}: {_describe(e)}") from None
        latency = time.perf_counter() - start
        choice = response.choices[0] if getattr(response, "choices", None) else None
        text = getattr(getattr(choice, "message", None), "content", None) or ""
        usage = getattr(response, "usage", None)
        return Completion(
            text=text,
            prompt_tokens=getattr(usage, "prompt_tokens", None),
            completion_tokens=getattr(usage, "completion_tokens", None),
            cost_usd=self._cost(response),
            latency_s=latency,
        )
