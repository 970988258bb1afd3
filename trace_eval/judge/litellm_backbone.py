"""Backbone `litellm`: any litellm model id (OpenAI, Gemini, Anthropic, a local vLLM or Ollama server
through `api_base`). Provider failures are translated into the exceptions of backbones.py.

An OpenAI-compatible server at --api-base (`openai/NAME`) is called over HTTP without litellm (openai_http.py):
the same requests, answers and failures, without the seconds litellm's import takes. litellm is imported only
where it is consulted (another provider, a dry run's token count).
"""

from __future__ import annotations

import email.utils
import logging
import os
import re
import socket
import ssl
import sys
import threading
import time
from dataclasses import replace
from typing import Any

import httpx

from trace_eval.judge.backbones import (
    NO_CONNECTION,
    Backbone,
    BackboneSettings,
    Completion,
    FatalBackboneError,
    RequestRejected,
    TransientBackboneError,
    default_token_budget,
)
from trace_eval.judge.openai_http import OpenAIServer, ServerError, speaks_directly
from trace_eval.judge.prompts import Case

__all__ = ["LiteLLMBackbone", "import_litellm", "start_importing_litellm"]

# The thread importing litellm ahead of its first use (start_importing_litellm), once per process.
_importing: threading.Thread | None = None


def import_litellm():
    """litellm, imported on first use; configured to stay offline and quiet. Waits for an import started ahead
    (start_importing_litellm) to finish, so litellm is used from one thread at a time."""
    if _importing is not None:
        _importing.join()
    return _configured()


def _configured():
    # Without this litellm downloads its price map from the internet at import.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm
    except ImportError as e:  # pragma: no cover - litellm is a declared dependency
        raise FatalBackboneError("the judge needs litellm: pip install litellm") from e
    litellm.suppress_debug_info = True
    logging.getLogger("LiteLLM").setLevel(logging.ERROR)
    return litellm


def start_importing_litellm(model: str, api_base: str | None = None) -> None:
    """Import litellm, and what its first call imports, in a thread of its own, while the caller reads the
    benchmark and its blueprints: importing litellm takes seconds, most of a short run's start.

    The first call's imports are made by a call litellm answers itself (`mock_response`: nothing is sent)
    and by importing the OpenAI client's chat resources, which OpenAI-compatible providers call through. A
    failure here is left for the backbone to meet and report when it imports litellm itself."""
    global _importing
    if _importing is not None or "litellm" in sys.modules:
        return

    def warm() -> None:
        try:
            litellm = _configured()
            message = [{"role": "user", "content": "warm-up"}]
            litellm.completion(model=model, messages=message, api_base=api_base, api_key="-", mock_response="{}")
            import openai.resources.chat  # noqa: F401
        except Exception:  # only a head start: the backbone imports litellm and reports for real
            pass

    # A daemon: a command that stops early (a bad option) does not wait for the import to end.
    _importing = threading.Thread(target=warm, name="import litellm", daemon=True)
    _importing.start()


def _headers_of(error: Exception) -> Any:
    """The HTTP headers of the answer a litellm error came with, if any."""
    headers: Any = getattr(error, "litellm_response_headers", None)
    if headers is None:
        response = getattr(error, "response", None)
        headers = getattr(response, "headers", None)
    return headers


def _retry_after_s(headers: Any) -> float | None:
    """Seconds from a Retry-After (or retry-after-ms) header, when the provider sent one."""
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


_HOST = re.compile(r"host ([^\s:/\[\]]+)(?::\d+)?")


def _connection_failure(error: BaseException) -> tuple[str, str | None, str] | None:
    """(kind, host, detail) when no answer came for want of a connection, else None (a server error).

    kind: "name" (the host name does not resolve), "refused" (nothing listens there), "tls" (the TLS
    handshake failed), "unreachable" (no connection, for another reason), "connection" (one broke).
    litellm reports them all as a 500 or an APIConnectionError; the cause chain tells them apart, and
    its innermost cause is the most precise.
    """
    # The OpenAI client's errors can be in the chain only where it was imported (not on the direct path).
    openai = sys.modules.get("openai")
    timed_out = (openai.APITimeoutError,) if openai else ()
    dropped = (ConnectionError, httpx.TransportError, *((openai.APIConnectionError,) if openai else ()))
    precise = {socket.gaierror: "name", ConnectionRefusedError: "refused", ssl.SSLError: "tls"}
    kind = host = None
    detail = ""
    cause: BaseException | None = error
    for _ in range(16):  # the whole chain: a later (inner) cause overrides what an outer one said
        if cause is None or isinstance(cause, timed_out):
            break
        found = _HOST.search(str(cause))
        host = getattr(cause, "host", None) or (found.group(1) if found else None) or host
        named = next((name for cls, name in precise.items() if isinstance(cause, cls)), None)
        if named:
            kind, detail = named, str(cause)
        elif isinstance(cause, httpx.ConnectError) and kind in (None, "connection"):
            kind, detail = "unreachable", str(cause)
        elif isinstance(cause, dropped) and kind is None:
            kind, detail = "connection", str(cause)
        cause = cause.__cause__ or cause.__context__
    return (kind, host, detail) if kind else None


_MISSING_KEY = re.compile(r"missing\b.{0,60}\bapi[ _-]?key", re.IGNORECASE)


_LITELLM_PREFIX = re.compile(r"^litellm\.\w+: (?:\w+: )?(?:\w+Exception - )?")


def _describe(error: Exception) -> str:
    """The provider's message on one line, without litellm's prefix ("litellm.AuthenticationError:
    AuthenticationError: OpenAIException - ") and the traceback it sometimes folds in: the server's own words,
    as the direct path gives them."""
    text = str(error).split("Traceback (most recent call last)")[0]
    text = _LITELLM_PREFIX.sub("", " ".join(text.split()))
    return text[:500] or type(error).__name__


def _token_logprobs(choice: Any) -> tuple[tuple[str, float], ...] | None:
    """(token, log-probability) of the answer's tokens, when the provider returned them."""
    content = getattr(getattr(choice, "logprobs", None), "content", None)
    if not content:
        return None
    try:
        return tuple((str(t.token), float(t.logprob)) for t in content)
    except (AttributeError, TypeError, ValueError):
        return None


class LiteLLMBackbone(Backbone):
    """Any litellm model. Calls are made once each: retries belong to the runner, which can honour Retry-After."""

    def __init__(self, settings: BackboneSettings):
        local_openai = settings.api_base and settings.model.startswith("openai/")
        if local_openai and not settings.api_key and not os.environ.get("OPENAI_API_KEY"):
            # Local OpenAI-compatible servers need some key to be sent, and ignore it.
            settings = replace(settings, api_key="no-key")
        super().__init__(settings)
        self._imported: Any = None
        self._reasons_first: bool | None = None
        # The server of --api-base spoken to directly (the key litellm would send: the given one, else
        # OPENAI_API_KEY), or None: calls go through litellm.
        self._server: OpenAIServer | None = None
        if settings.api_base and speaks_directly(settings.model, settings.api_base):
            key = settings.api_key or os.environ.get("OPENAI_API_KEY")
            self._server = OpenAIServer(settings.api_base, key, settings.timeout_s)
        else:
            self._check_provider()
        if settings.check_key:
            self._check_key()

    @property
    def _litellm(self) -> Any:
        """litellm, imported where it is first consulted."""
        if self._imported is None:
            self._imported = import_litellm()
        return self._imported

    def _check_provider(self) -> None:
        try:
            self._litellm.get_llm_provider(self.settings.model, api_base=self.settings.api_base)
        except Exception as e:
            raise FatalBackboneError(
                f"litellm does not know which provider serves {self.settings.model!r}: {_describe(e)}. "
                "Give a provider prefix, e.g. openai/gpt-4o, gemini/gemini-2.5-flash, anthropic/claude-sonnet-4-5, "
                "or openai/NAME with --api-base for a local OpenAI-compatible server"
            ) from None

    def key_variables(self) -> list[str]:
        """The environment variables litellm reads this model's API key from (empty when it needs none)."""
        if self._server is not None:  # what litellm says of openai/NAME
            return [] if os.environ.get("OPENAI_API_KEY") else ["OPENAI_API_KEY"]
        try:
            env = self._litellm.validate_environment(model=self.settings.model, api_base=self.settings.api_base)
        except Exception:
            return []
        return list(env.get("missing_keys") or [])

    def _key_hint(self) -> str:
        names = [*self.key_variables(), "TRACE_JUDGE_API_KEY"]
        return "set " + " or ".join(dict.fromkeys(names))

    def _check_key(self) -> None:
        """A model whose key is nowhere to be found stops here, before any call."""
        if self.settings.api_key:
            return
        missing = self.key_variables()
        if missing:
            raise FatalBackboneError(f"{self.name} needs an API key and none is set: {self._key_hint()}")

    def _where(self) -> str:
        return self.settings.api_base or f"the {self._api()} API"

    def _api(self) -> str:
        """The provider's name, as in "the gemini API"."""
        return self._provider() or self.name.split("/")[0]

    def _no_connection(self, kind: str, host: str | None, detail: str) -> str:
        """Why no connection could be opened, and the fix that fits what was given: --api-base or a provider's
        API."""
        base = self.settings.api_base
        if base:
            return {
                "name": f"cannot resolve the host name of --api-base {base}: no such host is known here; "
                "check its spelling, or this machine's DNS",
                "refused": f"connection refused at {base}: nothing listens there; start the server or fix --api-base",
                "tls": f"TLS handshake with {base} failed ({detail}): for a server that speaks plain HTTP write "
                "http:// in --api-base; for a certificate of your own authority set SSL_CERT_FILE to "
                "that authority's certificate",
            }.get(kind, f"cannot connect to {base} ({detail}); check --api-base and that the server runs")
        api = f"{host or 'the host'} (the {self._api()} API)"
        return {
            "name": f"cannot resolve {api} from this machine: no network or no DNS here; connect it to the "
            "internet (behind a proxy: set HTTPS_PROXY), or judge offline with --model cues",
            "refused": f"connection refused by {api}: something on the way turns connections away (a firewall; "
            "behind a proxy: set HTTPS_PROXY)",
            "tls": f"TLS handshake with {api} failed ({detail}): a proxy that inspects TLS is likely in the way; "
            "set SSL_CERT_FILE to its authority's certificate",
        }.get(kind, f"cannot connect to {api} ({detail}); check this machine's network")

    def _timed_out(self) -> str:
        waited = f"timed out: no answer within {self.settings.timeout_s:g} s (--timeout)"
        if self.settings.api_base:
            return (
                f"{waited} from {self.settings.api_base}: a busy server or a slow model (raise --timeout, "
                "lower --concurrency), or a host that drops connections (check --api-base)"
            )
        return (
            f"{waited} from the {self._api()} API: a busy service (raise --timeout, lower --concurrency), "
            "or a network that drops connections"
        )

    def reasons_before_answering(self) -> bool:
        """True when litellm says the model thinks before it answers (its thoughts count against max_tokens).

        False on the direct path, which only names litellm does not know take (openai_http.speaks_directly)."""
        if self._server is not None:
            return False
        try:
            return bool(self._litellm.supports_reasoning(model=self.settings.model))
        except Exception:
            return False

    def token_budget(self, dimensions: int) -> int:
        """max_tokens of a call about `dimensions` dimensions: the user's --max-tokens, else the default budget."""
        if self.settings.max_tokens is not None:
            return self.settings.max_tokens
        if self._reasons_first is None:
            self._reasons_first = self.reasons_before_answering()
        return default_token_budget(dimensions, self._reasons_first)

    def supports_response_schema(self) -> bool:
        try:
            return bool(self._litellm.supports_response_schema(model=self.settings.model))
        except Exception:
            return False

    def structured_output(self, choice: str) -> bool:
        """on: always; auto: where litellm says the model supports a JSON-schema response format, and on the
        server of --api-base, whose models litellm does not know (vLLM, Ollama and llama.cpp's server accept
        one); the run drops it if the server refuses it."""
        return choice == "on" or (
            choice == "auto" and (bool(self.settings.api_base) or self.supports_response_schema())
        )

    def count_prompt_tokens(self, messages: list[dict]) -> tuple[int, bool]:
        """(prompt tokens of `messages`, exact?) through litellm's token_counter.

        Exact for OpenAI's own models (litellm has their tokenizer); for the others litellm counts
        with a stand-in tokenizer (cl100k) and the count is an estimate, as it is for audio parts,
        which are left out of the count.
        """
        litellm = self._litellm
        litellm.disable_hf_tokenizer_download = True  # no downloads: the stand-in counts instead
        provider = self._provider()
        exact = provider == "openai" and not self.settings.api_base
        text_only = []
        for message in messages:
            content = message.get("content")
            if isinstance(content, list):
                exact = exact and all(part.get("type") == "text" for part in content)
                content = "\n".join(part.get("text", "") for part in content if part.get("type") == "text")
            text_only.append({"role": message.get("role", "user"), "content": content or ""})
        # Without the provider prefix litellm picks the model's own tokenizer (gpt-4o: o200k).
        model = self.settings.model.split("/", 1)[1] if exact else self.settings.model
        return int(litellm.token_counter(model=model, messages=text_only)), exact

    def prices_per_token(self) -> tuple[float, float] | None:
        """(input, output) USD per token: --price-in/--price-out, else litellm's price map; None when unknown
        (always on the direct path, which only names litellm does not know take)."""
        s = self.settings
        if s.price_in_per_token is not None:
            return s.price_in_per_token, s.price_out_per_token or 0.0
        if self._server is not None:
            return None
        try:
            info = self._litellm.get_model_info(s.model)
        except Exception:
            return None
        if info.get("input_cost_per_token") is None:
            return None
        return float(info["input_cost_per_token"]), float(info.get("output_cost_per_token") or 0.0)

    def _provider(self) -> str | None:
        if self._server is not None:
            return "openai"
        try:
            return self._litellm.get_llm_provider(self.settings.model, api_base=self.settings.api_base)[1]
        except Exception:
            return None

    def _kwargs(self, messages: list[dict], response_format: dict | None, max_tokens: int | None) -> dict:
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
        kwargs["max_tokens"] = max_tokens
        if response_format is not None:
            kwargs["response_format"] = response_format
        if s.logprobs:
            kwargs["logprobs"] = True
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

    def _litellm_setup_error(self, error: Exception) -> FatalBackboneError:
        litellm = self._litellm
        status = getattr(error, "status_code", None)
        if status is None:
            status = (
                404
                if isinstance(error, litellm.NotFoundError)
                else 403
                if isinstance(error, litellm.PermissionDeniedError)
                else 401
            )
        return self._setup_error(status, _describe(error))

    def _setup_error(self, status: int, said: str) -> FatalBackboneError:
        """A rejected key (401, 403) or an unknown model (404): every call would fail the same way."""
        if status == 404:
            return FatalBackboneError(
                f"{self.name}: unknown model or endpoint at {self._where()} "
                f"(HTTP 404: {said}); check --model and --api-base"
            )
        return FatalBackboneError(
            f"{self.name}: the API key was rejected by {self._where()} (HTTP {status}: {said}); {self._key_hint()}"
        )

    async def close(self) -> None:
        try:
            if self._server is not None:
                await self._server.close()
            elif "litellm" in sys.modules:
                await self._litellm.close_litellm_async_clients()
        except Exception:
            pass  # closing idle connections is a courtesy; the run's results are written

    async def _complete_directly(
        self, server: OpenAIServer, messages: list[dict], response_format: dict | None, max_tokens: int | None
    ) -> Completion:
        """One call to the server of --api-base over HTTP, its failures sorted as litellm's are below."""
        s = self.settings
        body = server.body(s.model, messages, s.temperature, max_tokens, response_format, s.logprobs)
        start = time.perf_counter()
        try:
            completion = await server.chat(body)
        except ServerError as e:
            status, said = e.status, str(e)
            if status in (401, 403, 404):
                raise self._setup_error(status, said) from None
            if status == 429:
                raise TransientBackboneError(said, "rate_limit", _retry_after_s(e.headers)) from None
            if status == 408:
                raise TransientBackboneError(self._timed_out(), "timeout") from None
            if status >= 500:
                raise TransientBackboneError(said, "server") from None
            raise RequestRejected(said) from None
        except httpx.TimeoutException as e:
            raise TransientBackboneError(self._timed_out(), "timeout") from e
        except httpx.TransportError as e:
            failure = _connection_failure(e)
            if failure and failure[0] in NO_CONNECTION:
                raise TransientBackboneError(self._no_connection(*failure), failure[0]) from None
            raise TransientBackboneError(_describe(e), failure[0] if failure else "connection") from None
        prices = self.prices_per_token()
        cost = None
        if prices is not None and completion.prompt_tokens is not None:
            cost = completion.prompt_tokens * prices[0] + (completion.completion_tokens or 0) * prices[1]
        return replace(completion, cost_usd=cost, latency_s=time.perf_counter() - start)

    async def complete(
        self, messages: list[dict], case: Case, response_format: dict | None, max_tokens: int | None
    ) -> Completion:
        if self._server is not None:
            return await self._complete_directly(self._server, messages, response_format, max_tokens)
        litellm = self._litellm
        start = time.perf_counter()
        try:
            response = await litellm.acompletion(**self._kwargs(messages, response_format, max_tokens))
        except (litellm.AuthenticationError, litellm.PermissionDeniedError, litellm.NotFoundError) as e:
            raise self._litellm_setup_error(e) from None
        except litellm.RateLimitError as e:
            raise TransientBackboneError(_describe(e), "rate_limit", _retry_after_s(_headers_of(e))) from None
        except litellm.Timeout as e:
            raise TransientBackboneError(self._timed_out(), "timeout") from e
        except (litellm.ContextWindowExceededError, litellm.ContentPolicyViolationError) as e:
            raise RequestRejected(_describe(e)) from None
        except (
            litellm.InternalServerError,
            litellm.ServiceUnavailableError,
            litellm.BadGatewayError,
            litellm.APIConnectionError,
        ) as e:
            if _MISSING_KEY.search(str(e)):
                raise FatalBackboneError(f"{self.name}: {_describe(e)}; {self._key_hint()}") from None
            failure = _connection_failure(e)
            if failure and failure[0] in NO_CONNECTION:
                raise TransientBackboneError(self._no_connection(*failure), failure[0]) from None
            raise TransientBackboneError(_describe(e), failure[0] if failure else "server") from None
        except litellm.BadRequestError as e:
            if getattr(e, "status_code", None) in (401, 403, 404):
                raise self._litellm_setup_error(e) from None
            raise RequestRejected(_describe(e)) from None
        except Exception as e:  # any other provider error: decide by HTTP status when there is one
            status = getattr(e, "status_code", None)
            if status in (401, 403, 404):
                raise self._litellm_setup_error(e) from None
            if isinstance(status, int) and (status >= 500 or status == 408):
                raise TransientBackboneError(_describe(e), "server") from None
            if isinstance(status, int) and status == 429:
                raise TransientBackboneError(_describe(e), "rate_limit", _retry_after_s(_headers_of(e))) from None
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
            logprobs=_token_logprobs(choice),
            finish_reason=getattr(choice, "finish_reason", None),
            prompt_tokens=getattr(usage, "prompt_tokens", None),
            completion_tokens=getattr(usage, "completion_tokens", None),
            cost_usd=self._cost(response),
            latency_s=latency,
        )
