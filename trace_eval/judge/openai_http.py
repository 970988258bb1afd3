"""An OpenAI-compatible server at --api-base (vLLM, Ollama, llama.cpp's server), spoken to over HTTP with httpx.

`--model openai/NAME --api-base URL` sends here the request litellm sends for that model id, and reads the
answer as litellm reads it, without importing litellm, which takes seconds at every start. The litellm
backbone (litellm_backbone.py) calls through here and sorts what fails (`ServerError` for an answer with an
error status, httpx's own errors where no answer came) into the same messages as litellm's failures.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
from functools import cache
from pathlib import Path
from typing import Any

import httpcore  # noqa: F401 - imported by httpx's first client; here with httpx (see commands/judge.py)
import httpx

from trace_eval.judge.backbones import Completion

__all__ = ["VIA_LITELLM", "OpenAIServer", "ServerError", "speaks_directly"]

# Set (to anything but 0) to send the calls to a local server through litellm instead, as before.
VIA_LITELLM = "TRACE_JUDGE_VIA_LITELLM"

# The finish reasons of OpenAI's format; litellm reads any other as "stop", except a cut at the budget.
_FINISH_REASONS = {"stop", "length", "tool_calls", "content_filter", "function_call"}
_CUT_AT_THE_BUDGET = {"max_tokens", "MAX_TOKENS"}


def speaks_directly(model: str, api_base: str | None) -> bool:
    """True when --model `model` calls the server of --api-base straight over HTTP: an `openai/NAME` id with an API
    base, unless TRACE_JUDGE_VIA_LITELLM is set or litellm knows NAME. A name litellm knows is one of OpenAI's own
    models behind a proxy, and what litellm knows of it is kept: the parameters it refuses, its price, the room
    it needs to reason first."""
    via_litellm = os.environ.get(VIA_LITELLM, "") not in ("", "0")
    if not api_base or not model.startswith("openai/") or via_litellm:
        return False
    name = model.removeprefix("openai/")
    return not any(f'"{key}": {{'.encode() in _litellm_models() for key in (name, model))


@cache
def _litellm_models() -> bytes:
    """The map of the models litellm knows, as the file it ships and reads offline (found without importing
    litellm); empty where there is none."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or spec.origin is None:
        return b""
    try:
        return (Path(spec.origin).parent / "model_prices_and_context_window_backup.json").read_bytes()
    except OSError:
        return b""


class ServerError(Exception):
    """The server answered with an error status (or 200 with a body that is no answer)."""

    def __init__(self, status: int, message: str, headers: httpx.Headers | None = None):
        super().__init__(message)
        self.status = status
        self.headers = headers or httpx.Headers()


class OpenAIServer:
    """POSTs to `{api_base}/chat/completions`, through one connection pool per event loop."""

    def __init__(self, api_base: str, api_key: str | None, timeout_s: float):
        self.url = api_base.rstrip("/") + "/chat/completions"  # as the OpenAI client joins its base URL
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout = httpx.Timeout(timeout_s)
        # Plain HTTP has no certificate to check: loading the certificate authorities would take 50 ms of the start.
        self._verify = not api_base.lower().startswith("http://")
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @staticmethod
    def body(
        model: str,
        messages: list[dict],
        temperature: float,
        max_tokens: int | None,
        response_format: dict | None,
        logprobs: bool,
    ) -> dict[str, Any]:
        """The request litellm sends for `openai/NAME`: the name without its prefix, and no field left unset."""
        body: dict[str, Any] = {"model": model.removeprefix("openai/"), "messages": messages}
        body["temperature"] = temperature
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if response_format is not None:
            body["response_format"] = response_format
        if logprobs:
            body["logprobs"] = True
        return body

    def _client_here(self) -> httpx.AsyncClient:
        # A pool's connections belong to the loop that opened them; the Python API may run several loops.
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            self._client = httpx.AsyncClient(headers=self._headers, timeout=self._timeout, verify=self._verify)
            self._loop = loop
        return self._client

    async def chat(self, body: dict[str, Any]) -> Completion:
        """The server's answer to `body` (text, finish reason, tokens, log-probabilities; no cost, no latency).

        Raises ServerError for an error status, httpx.TimeoutException or httpx.TransportError where no answer
        came."""
        response = await self._client_here().post(self.url, json=body)
        if response.status_code >= 400:
            raise ServerError(response.status_code, _error_message(response), response.headers)
        try:
            doc = response.json()
        except ValueError:
            raise ServerError(500, f"an answer that is not JSON: {response.text[:200]!r}") from None
        return _completion(doc)

    async def close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()


def _error_message(response: httpx.Response) -> str:
    """The server's own words: `error.message` in OpenAI's format (vLLM, Ollama, llama.cpp), else the body."""
    try:
        doc = response.json()
    except ValueError:
        return " ".join(response.text.split())[:500] or response.reason_phrase
    error = doc.get("error") if isinstance(doc, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    if isinstance(error, str):
        return error
    if isinstance(doc, dict) and doc.get("message"):  # older vLLM: {"object": "error", "message": ...}
        return str(doc["message"])
    return " ".join(response.text.split())[:500]


def _completion(doc: Any) -> Completion:
    choices = doc.get("choices") if isinstance(doc, dict) else None
    if not choices or not isinstance(choices[0], dict):
        raise ServerError(500, f"an answer without choices: {str(doc)[:200]!r}")
    choice = choices[0]
    message = choice.get("message") or {}
    usage = doc.get("usage") or {}
    reason = choice.get("finish_reason")
    return Completion(
        text=message.get("content") or "",
        prompt_tokens=usage.get("prompt_tokens"),
        completion_tokens=usage.get("completion_tokens"),
        finish_reason=reason if reason in _FINISH_REASONS else "length" if reason in _CUT_AT_THE_BUDGET else "stop",
        logprobs=_token_logprobs(choice),
    )


def _token_logprobs(choice: dict) -> tuple[tuple[str, float], ...] | None:
    content = (choice.get("logprobs") or {}).get("content")
    if not content:
        return None
    try:
        return tuple((str(t["token"]), float(t["logprob"])) for t in content)
    except (KeyError, TypeError, ValueError):
        return None
