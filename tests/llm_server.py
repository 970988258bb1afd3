"""A local OpenAI-compatible chat-completions server for tests and speed benchmarks.

A real HTTP server on 127.0.0.1 (random port) in a background thread. What it
answers is scripted per request: queued behaviours are used first, in order, then
a responder function (which sees the request body) or a default answer.

    with LLMServer(responder=lambda body: Reply(verdict_json("1", "both_good", "2"))) as server:
        litellm.completion(model="openai/test", api_base=server.api_base, api_key="dummy", ...)
        server.request_count

Behaviours cover what real backbones do: valid JSON, fenced or prose-wrapped JSON,
wrong labels, missing keys, answers cut at max_tokens, 429 with Retry-After, 500,
slow answers, 401, 403, 404, and a server that refuses `response_format`.

`write_benchmark` makes the other half of a judge test: a benchmark folder with
small real wav files and hand-written blueprints in the store layout, from
pairwise items (`PairSpec`) and pointwise ones (`PointSpec`: one answer, with
free-form fields such as character, dialogue_history, style_elements).
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = [
    "Fail",
    "LLMServer",
    "PairSpec",
    "PointSpec",
    "Reply",
    "blueprint",
    "write_benchmark",
    "fenced",
    "prose_wrapped",
    "prompt_text",
    "scores_json",
    "verdict_json",
]


@dataclass(frozen=True)
class Reply:
    """A 200 answer whose message content is `content`, sent after `delay_s` seconds."""

    content: str
    delay_s: float = 0.0
    prompt_tokens: int = 100
    completion_tokens: int = 20
    finish_reason: str = "stop"  # "length": the answer was cut at max_tokens
    # (token, log-probability) sent when the request asks for logprobs; None: the content split into words and
    # punctuation, each with log-probability 0
    token_logprobs: tuple[tuple[str, float], ...] | None = None


@dataclass(frozen=True)
class Fail:
    """An HTTP error in the OpenAI error format (401 authentication, 404 unknown model, 429, 500...)."""

    status: int
    message: str = "scripted failure"
    retry_after: float | None = None  # seconds, sent as the Retry-After header
    delay_s: float = 0.0


Behaviour = Reply | Fail
Responder = Callable[[dict], Behaviour]

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    500: "server_error",
    503: "server_error",
}


def verdict_json(
    content: str | None = "1",
    voice_quality: str | None = "1",
    paralinguistics: str | None = "1",
    reasoning: str | None = "scripted verdict",
    **extra: Any,
) -> str:
    """A verdict answer as a JSON string; `extra` adds keys, and any key given None is left out."""
    doc: dict[str, Any] = {
        "reasoning": reasoning,
        "content": content,
        "voice_quality": voice_quality,
        "paralinguistics": paralinguistics,
        **extra,
    }
    return json.dumps({key: value for key, value in doc.items() if value is not None})


def scores_json(reasoning: str | None = "scripted scores", **labels: Any) -> str:
    """An answer of any rubric as a JSON string: {"reasoning": ..., dimension: label, ...}."""
    doc = {"reasoning": reasoning, **labels} if reasoning is not None else dict(labels)
    return json.dumps(doc)


def fenced(text: str) -> str:
    return f"Here is my verdict.\n```json\n{text}\n```\n"


def prose_wrapped(text: str) -> str:
    return f"After comparing both responses carefully, my answer is {text} and that is final."


def prompt_text(body: dict) -> str:
    """All text of a request's messages joined, for responders that route on the prompt."""
    parts = []
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(p.get("text", "") for p in content if isinstance(p, dict))
    return "\n".join(parts)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send(400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}})
            return
        owner = self.server.owner
        behaviour = owner._next(body, dict(self.headers))
        if behaviour.delay_s:
            with owner._waiting():
                time.sleep(behaviour.delay_s)
        if isinstance(behaviour, Fail):
            headers = {}
            if behaviour.retry_after is not None:
                headers["Retry-After"] = f"{behaviour.retry_after:g}"
            error = {
                "message": behaviour.message,
                "type": _ERROR_TYPES.get(behaviour.status, "error"),
                "code": behaviour.status,
            }
            self._send(behaviour.status, {"error": error}, headers)
            return
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": behaviour.content},
            "finish_reason": behaviour.finish_reason,
        }
        if body.get("logprobs"):
            tokens = behaviour.token_logprobs or tuple((t, 0.0) for t in re.findall(r"\w+|\W", behaviour.content))
            choice["logprobs"] = {
                "content": [
                    {"token": t, "logprob": p, "bytes": list(t.encode()), "top_logprobs": []} for t, p in tokens
                ]
            }
        self._send(
            200,
            {
                "id": f"chatcmpl-{owner.request_count}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "test"),
                "choices": [choice],
                "usage": {
                    "prompt_tokens": behaviour.prompt_tokens,
                    "completion_tokens": behaviour.completion_tokens,
                    "total_tokens": behaviour.prompt_tokens + behaviour.completion_tokens,
                },
            },
        )

    def _send(self, status: int, doc: dict, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(doc).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout test): nothing to deliver


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256  # the speed benchmark opens many connections at once

    owner: LLMServer


class LLMServer:
    """Scriptable OpenAI chat-completions server; use as a context manager or start()/stop()."""

    def __init__(
        self, responder: Responder | None = None, default: Behaviour | None = None, refuse_response_format: bool = False
    ):
        self.responder = responder
        self.default = default or Reply(verdict_json())
        # A server without structured output: a request with response_format gets a 400, as older servers answer.
        self.refuse_response_format = refuse_response_format
        self.requests: list[dict] = []  # bodies, in arrival order
        self.headers: list[dict[str, str]] = []
        self._queue: deque[Behaviour] = deque()
        self._lock = threading.Lock()
        self._in_flight = 0
        self.most_in_flight = 0  # the most requests waiting out their delay at once: how many calls a client overlaps
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- scripting ---------------------------------------------------------------------
    def push(self, *behaviours: Behaviour) -> None:
        """Answer the next requests with these behaviours, in order, before the responder."""
        with self._lock:
            self._queue.extend(behaviours)

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self.requests)

    @contextlib.contextmanager
    def _waiting(self) -> Iterator[None]:
        with self._lock:
            self._in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self._in_flight)
        try:
            yield
        finally:
            with self._lock:
                self._in_flight -= 1

    def _next(self, body: dict, headers: dict[str, str]) -> Behaviour:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            if self._queue:
                return self._queue.popleft()
        if self.refuse_response_format and "response_format" in body:
            return Fail(400, "response_format is not supported by this server")
        return self.responder(body) if self.responder else self.default

    # -- lifecycle ---------------------------------------------------------------------
    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("server not started")
        return self._httpd.server_address[1]

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> LLMServer:
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="llm-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> LLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# -- synthetic benchmarks ------------------------------------------------------------------


def blueprint(
    transcript: str | None = "hello there",
    p808: float | None = 3.6,
    pitch_hz: float | None = 150.0,
    lufs: float | None = -23.0,
    wpm: float | None = 150.0,
    emotion: dict[str, float] | None = None,
    pace: list[float] | None = None,
    prosody: dict | None = None,
) -> dict:
    """Blueprint values (without provenance) with the cues the judge reads; prosody by default a plain
    statement of the transcript's words (`prosody_section`), none without speech."""
    if prosody is None and transcript:
        prosody = prosody_section(transcript)
    return {
        "agent_response": transcript,
        "agent_emotion": emotion if emotion is not None else {"neutral": 0.7, "happy": 0.2, "sad": 0.1},
        "agent_accent": {"us": 0.61, "england": 0.42},
        "accent_probabilities": {"us": 0.8, "england": 0.2},
        "agent_audio_quality": {
            "DNSMOS_Personalized_Signal_Quality": 3.9,
            "DNSMOS_Personalized_Background_Quality": 4.0,
            "DNSMOS_Personalized_Overall_Quality": 3.3,
            "P808_Overall_Quality": p808,
        },
        "agent_audio_properties": {
            "Mean_Pitch_Hz": pitch_hz,
            "Std_Dev_Pitch_Hz": 20.5,
            "Integrated_Loudness_LUFS": lufs,
            "Speech_Rate_WPM": wpm,
            "Pace_Contour_WPM": pace if pace is not None else [wpm or 0.0] * 4,
        },
        "agent_voicing": {"Voiced_Fraction": 0.6, "Pause_Count": 1, "Syllable_Rate_Per_S": 4.2},
        "agent_prosody": prosody,
    }


def prosody_section(
    text: str,
    prominence: dict[str, float | None] | None = None,
    ending_st: float | None = -3.0,
    paused_after: tuple[int, ...] = (),
    changes: dict | None = None,
) -> dict:
    """An agent_prosody section written by hand, in the extractor's layout (extractors/prosody.py): the words of
    `text` 0.3 s each, `prominence` by word (others 0, or -0.3 beside a prominent one), a phrase break and a
    0.4 s pause after each index of `paused_after`, each phrase ending `ending_st` semitones, and `changes`."""
    said = text.split()
    scores = {w.strip(".,?!").lower(): p for w, p in (prominence or {}).items()}
    words, at = [], 0.2
    for i, word in enumerate(said):
        score = scores.get(word.strip(".,?!").lower(), -0.3 if scores else 0.0)
        words.append(
            {
                "word": word,
                "start": round(at, 2),
                "end": round(at + 0.3, 2),
                "pitch_median_st": 0.0,
                "pitch_range_st": 1.0,
                "loudness_db": 0.0,
                "duration_ratio": 1.0,
                "prominence": score,
                "reason": None if score is not None else "prominence: no voiced frame, no level",
            }
        )
        at += 0.3 + (0.4 if i in paused_after else 0.05)
    ranked = sorted(
        (i for i, w in enumerate(words) if (w["prominence"] or 0) >= 1.0), key=lambda i: -words[i]["prominence"]
    )
    contour = None
    if ending_st is not None:
        contour = "rising" if ending_st >= 1.5 else "falling" if ending_st <= -1.5 else "level"
    phrases, first = [], 0
    for last in sorted({*paused_after, len(words) - 1}) if words else []:
        phrases.append(
            {
                "first_word": first,
                "last_word": last,
                "text": " ".join(said[first : last + 1]),
                "final_contour": contour,
                "final_change_st": ending_st,
                "reason": None if contour else "4 voiced frame(s) in the phrase's last 0.5 s, fewer than 10",
            }
        )
        first = last + 1
    steady = {"loudness_db": 0.5, "loudness": "steady", "pitch_st": -0.4, "pitch": "steady"}
    return {
        "speaker_median_pitch_hz": 150.0,
        "time_shift_s": 0.0,
        "words": words,
        "prominent_words": [{"index": i, "word": said[i], "prominence": words[i]["prominence"]} for i in ranked[:3]],
        "phrases": phrases,
        "pauses": [{"after_word": i, "word": said[i], "duration_s": 0.4} for i in paused_after],
        "changes": changes or {**steady, "rate_ratio": 1.0, "rate": "steady", "reason": None},
    }


@dataclass
class PairSpec:
    """One pair of a synthetic benchmark: its instruction and the blueprint values of its clips."""

    id: str
    instruction_text: str = 'Say "hello there" please.'
    instruction: dict = field(default_factory=lambda: blueprint('Say "hello there" please.'))
    response_1: dict = field(default_factory=blueprint)
    response_2: dict = field(default_factory=blueprint)
    label: dict | None = None


@dataclass
class PointSpec:
    """One pointwise item: an instruction, the blueprint values of its one answer, and free-form fields."""

    id: str
    instruction_text: str = 'Say "hello there" cheerfully.'
    response: dict = field(default_factory=blueprint)
    instruction: dict | None = None  # blueprint values of a spoken instruction; None: text only
    label: dict | None = None
    fields: dict = field(default_factory=dict)  # character, dialogue_history, style_elements, context, model, ...


def _write_wav(path: Path, seed: int) -> None:
    import numpy as np
    import soundfile as sf

    rng = np.random.default_rng(seed)  # distinct content, so every clip has its own hash and blueprint
    sf.write(str(path), (0.1 * rng.standard_normal(1600)).astype("float32"), 16000, subtype="PCM_16")


def write_benchmark(root: Path, pairs: list[PairSpec | PointSpec] | int, with_blueprints: bool = True) -> Path:
    """A benchmark folder: manifest.json, audio/*.wav and (optionally) blueprints/ in the store layout.

    `pairs` is a list of specs, or a count of pairs whose responses say "answer N one" / "answer N two".
    """
    from trace_eval.audio import sha256_file
    from trace_eval.stage1.store import BlueprintStore, new_blueprint

    if isinstance(pairs, int):  # distinct answers, so no two pairs render the same prompt
        pairs = [
            PairSpec(id=f"p{n:04d}", response_1=blueprint(f"answer {n} one"), response_2=blueprint(f"answer {n} two"))
            for n in range(pairs)
        ]
    specs = pairs
    audio = root / "audio"
    audio.mkdir(parents=True, exist_ok=True)
    store = BlueprintStore(root)
    manifest = []
    seed = 0
    for spec in specs:
        item: dict[str, Any] = {"id": spec.id, "instruction_text": spec.instruction_text}
        if isinstance(spec, PointSpec):
            clips = (("instruction_path", spec.instruction), ("audio_path", spec.response))
            item.update(spec.fields)
        else:
            clips = (
                ("instruction_path", spec.instruction),
                ("audio1_path", spec.response_1),
                ("audio2_path", spec.response_2),
            )
        for field_name, values in clips:
            if values is None:
                continue
            relative = f"audio/{spec.id}_{field_name.split('_')[0]}.wav"
            _write_wav(root / relative, seed)
            seed += 1
            item[field_name] = relative
            if with_blueprints:
                sha = sha256_file(root / relative)
                doc = new_blueprint(sha, 0.1, 16000, 1)
                doc.update(values)
                doc["provenance"] = {**doc["provenance"], "audio_sha256": sha}  # as every stored blueprint names it
                store.put(sha, doc)
        if spec.label:
            item["label"] = spec.label
        manifest.append(item)
    (root / "manifest.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    return root


if __name__ == "__main__":  # manual use: python tests/llm_server.py
    with LLMServer() as s:
        print(f"serving verdicts at {s.api_base}; Ctrl-C to stop")
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
