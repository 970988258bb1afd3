"""A judge run: every item of a benchmark through a backbone, into a run folder.

The rubric (trace_eval/rubrics) says what is asked about each item and in which
label space; everything else here is the same for every rubric.

Calls are asynchronous with bounded concurrency (and an optional requests-per-
minute limit); every answer is cached; each finished pair is appended to
results.jsonl at once, so re-running with the same --out resumes (pairs already
"ok" are kept, the others are judged again). Failures are data: an answer that
stays unusable after repair is "invalid" with its raw text, a call that keeps
failing is "error", pairs left when --max-cost is reached (or, with --skip-failed,
whose clips have no blueprint) are "skipped". Only
failures that would hit every pair (authentication, unknown model) stop the run.
"""
from __future__ import annotations

import asyncio
import os
import random
import re
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlsplit, urlunsplit

import fusion
from trace_eval.bench import Benchmark, Pair, load_benchmark
from trace_eval.io import write_json
from trace_eval.judge.backbones import (
    BackboneSettings,
    Completion,
    FatalBackboneError,
    LiteLLMBackbone,
    RequestRejected,
    TransientBackboneError,
)
from trace_eval.judge.cache import AnswerCache, default_cache_dir, request_key
from trace_eval.judge.combine import majority, resolve_orders, swap_back
from trace_eval.judge.cues import CUES_VERSION, CuesBackbone, transcript_doubt
from trace_eval.judge.parse import parse_verdict
from trace_eval.judge.prompts import BLUEPRINT_GROUPS, Case, Prompt, PromptError, blueprint_view
from trace_eval.judge import evidence, runfolder
from trace_eval.rubrics import DEFAULT_RUBRIC, Rubric, RubricError, load_rubric
from trace_eval.store import BlueprintStore

__all__ = [
    "JudgeError",
    "JudgeOptions",
    "MissingBlueprintsError",
    "RetryPolicy",
    "RunOutcome",
    "dry_run",
    "run_judge",
]

CUES_MODEL = "cues"
STRUCTURED_CHOICES = ("auto", "on", "off")
# Settings that change answers: a run folder is resumed only with the same ones.
RESUME_KEYS = ("bench", "model", "api_base", "rubric", "rubric_version", "judge", "prompt_version", "drop",
               "samples", "swap", "temperature", "max_tokens", "structured", "repair_attempts", "cues")
# What a run folder written before a setting existed was made with.
_BEFORE_THE_SETTING = {"rubric": DEFAULT_RUBRIC, "rubric_version": f"{DEFAULT_RUBRIC}-v1"}


class JudgeError(Exception):
    """The run cannot start: bad options, unknown rubric or prompt, a run folder made with other settings."""


def _listed(items: list[str]) -> str:
    return "; ".join(items[:10]) + (f" and {len(items) - 10} more" if len(items) > 10 else "")


class MissingBlueprintsError(JudgeError):
    """Some clips have no blueprint. The judge never extracts: it names the fix that matches the cause.

    A clip whose extraction failed (blueprints/failures.jsonl) is not fixed by running it again:
    the advice is to repair or remove the item, or to judge the rest with --skip-failed.
    """

    def __init__(self, bench: Path, missing: list[str], failures: dict[str, str] | None = None):
        self.bench = bench
        self.missing = missing
        failures = failures or {}
        failed = [p for p in missing if p in failures]
        never_made = [p for p in missing if p not in failures]
        parts = []
        if failed:
            parts.append(
                f"{len(failed)} clip(s) of {bench} failed when their blueprints were made: "
                f"{_listed([f'{p} ({failures[p]})' for p in failed])}. Making blueprints again will not fix "
                "this: repair or replace the file, or remove the item from the manifest; "
                "or pass --skip-failed to judge the other pairs")
        if never_made:
            parts.append(
                f"{len(never_made)} clip(s) of {bench} have no blueprint: {_listed(never_made)}. "
                f"Make them first with: make blueprints BENCH={bench}  (or: python -m trace_eval blueprints {bench})"
                "; or pass --skip-failed to judge the other pairs")
        super().__init__(". ".join(parts))


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries with exponential backoff (and jitter); a Retry-After header is honoured as sent."""

    max_retries: int = 4  # server errors, timeouts, dropped connections
    max_rate_limit_retries: int = 10
    base_delay_s: float = 1.0
    max_delay_s: float = 60.0
    max_retry_after_s: float = 600.0

    def backoff(self, attempt: int) -> float:
        delay = min(self.max_delay_s, self.base_delay_s * (2 ** attempt))
        return delay * (0.5 + random.random() / 2)


@dataclass
class JudgeOptions:
    """Everything a judge run is made with. Only some fields change answers (see RESUME_KEYS)."""

    bench: Path
    model: str = CUES_MODEL  # a litellm model id, or "cues" for the offline rules
    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False)  # never written anywhere
    rubric: str | Path = DEFAULT_RUBRIC  # a bundled rubric's name or a rubric file
    judge: str | None = None  # prompt of the rubric (trace: trace | transcript | audio); None for its first
    fusion: str = "cap"
    drop: tuple[str, ...] = ()  # blueprint groups hidden from the judge: emotion, accent, quality, properties
    samples: int = 1
    swap: bool = False
    temperature: float = 0.0
    max_tokens: int | None = None
    structured: str = "auto"  # JSON-schema response_format: auto (when litellm says the model supports it) | on | off
    repair_attempts: int = 1
    concurrency: int = 8
    rpm: float | None = None  # requests per minute, None for no limit
    timeout_s: float = 120.0
    max_cost: float | None = None  # USD; no new calls once spent
    price_in_per_mtok: float | None = None  # USD per million tokens, for models litellm has no price for
    price_out_per_mtok: float | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    use_cache: bool = True  # False: ask again even when cached (fresh answers replace cached ones)
    cache_dir: Path | None = None
    out: Path | None = None
    limit: int | None = None  # judge only the first N pairs
    skip_failed: bool = False  # items with a clip without blueprint are recorded "skipped", the rest judged
    progress: bool = True


@dataclass
class RunOutcome:
    out: Path
    summary: dict
    stopped: str | None  # why the run stopped early, None when every pair was attempted


# -- settings ---------------------------------------------------------------------------

def _without_credentials(url: str | None) -> str | None:
    if not url:
        return url
    parts = urlsplit(url)
    if parts.username or parts.password:
        host = parts.hostname or ""
        netloc = f"{host}:{parts.port}" if parts.port else host
        parts = parts._replace(netloc=netloc)
    return urlunsplit(parts)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-")[:60] or "run"


def default_out_dir(model: str) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = Path("runs") / f"{stamp}_{_slug(model)}"
    n = 2
    while out.exists():
        out = Path("runs") / f"{stamp}_{_slug(model)}-{n}"
        n += 1
    return out


def _check_options(options: JudgeOptions) -> None:
    if options.fusion not in fusion.POLICIES:
        raise JudgeError(f"unknown fusion policy {options.fusion!r}; "
                         f"expected one of: {', '.join(sorted(fusion.POLICIES))}")
    unknown = [g for g in options.drop if g not in BLUEPRINT_GROUPS]
    if unknown:
        raise JudgeError(f"--drop {','.join(unknown)}: expected names among {', '.join(BLUEPRINT_GROUPS)}")
    if options.samples < 1:
        raise JudgeError(f"--samples must be at least 1, got {options.samples}")
    if options.concurrency < 1:
        raise JudgeError(f"--concurrency must be at least 1, got {options.concurrency}")
    if options.rpm is not None and options.rpm <= 0:
        raise JudgeError(f"--rpm must be positive, got {options.rpm}")
    if options.structured not in STRUCTURED_CHOICES:
        raise JudgeError(f"structured output {options.structured!r}: expected one of {', '.join(STRUCTURED_CHOICES)}")
    if options.repair_attempts < 0:
        raise JudgeError("repair attempts cannot be negative")


def make_backbone(options: JudgeOptions, prompt: Prompt, rubric: Rubric | None = None, check_key: bool = True):
    if options.model == CUES_MODEL:
        if rubric is not None and not CuesBackbone.judges(rubric):
            raise JudgeError(f"the offline `cues` backbone only judges the trace rubric (typed-tie content, voice "
                             f"quality, paralinguistics), not {rubric.name}; pass --model with a litellm model id "
                             "(e.g. openai/gpt-4o, or openai/NAME with --api-base for a local server)")
        if prompt.needs_audio:
            raise JudgeError(f"the cues backbone reads blueprints and cannot judge raw audio (--judge {prompt.name}); "
                             "give an audio-capable --model")
        return CuesBackbone()
    api_key = options.api_key
    local_openai = options.api_base and options.model.startswith("openai/")
    if local_openai and not api_key and not os.environ.get("OPENAI_API_KEY"):
        api_key = "no-key"  # local OpenAI-compatible servers need some key to be sent, and ignore it
    settings = BackboneSettings(
        model=options.model,
        api_base=options.api_base,
        api_key=api_key,
        temperature=options.temperature,
        max_tokens=options.max_tokens,
        timeout_s=options.timeout_s,
        price_in_per_token=None if options.price_in_per_mtok is None else options.price_in_per_mtok / 1e6,
        price_out_per_token=None if options.price_out_per_mtok is None else options.price_out_per_mtok / 1e6,
    )
    try:
        return LiteLLMBackbone(settings, check_key=check_key)
    except FatalBackboneError as e:
        raise JudgeError(str(e)) from None


def _versions() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    found: dict[str, str | None] = {}
    for package in ("trace-eval", "litellm"):
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            found[package] = None
    return found


def build_config(options: JudgeOptions, bench: Benchmark, prompt: Prompt, backbone: Any, structured: bool,
                 cache_dir: Path, rubric: Rubric | None = None) -> dict:
    rubric = rubric or load_rubric(DEFAULT_RUBRIC)
    config: dict[str, Any] = {
        "format_version": runfolder.FORMAT_VERSION,
        "bench": str(bench.root),
        "manifest": str(bench.manifest_path),
        "model": options.model,
        "backbone": "cues" if isinstance(backbone, CuesBackbone) else "litellm",
        "api_base": _without_credentials(options.api_base),
        "rubric": rubric.name,
        "rubric_version": rubric.id,
        "rubric_file": str(rubric.path) if rubric.path else None,
        "dimensions": list(rubric.names),
        "judge": prompt.name,
        "prompt_version": prompt.id,
        "prompt_file": str(prompt.path) if prompt.path else None,
        "fusion": options.fusion,
        "drop": list(options.drop),
        "samples": options.samples,
        "swap": options.swap,
        "temperature": options.temperature,
        "max_tokens": options.max_tokens,
        "structured": structured,
        "repair_attempts": options.repair_attempts,
        "concurrency": options.concurrency,
        "rpm": options.rpm,
        "timeout_s": options.timeout_s,
        "max_cost": options.max_cost,
        "price_in_per_mtok": options.price_in_per_mtok,
        "price_out_per_mtok": options.price_out_per_mtok,
        "retry": asdict(options.retry),
        "cache": {"enabled": options.use_cache, "dir": str(cache_dir)},
        "limit": options.limit,
        "skip_failed": options.skip_failed,
        "versions": _versions(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    if isinstance(backbone, CuesBackbone):
        config["cues"] = {"version": CUES_VERSION, "thresholds": asdict(backbone.thresholds)}
    return config


# -- cases ------------------------------------------------------------------------------

def lacking_blueprints(bench: Benchmark, pairs: list[Pair]) -> dict[str, str]:
    """Item id -> which of its clips have no blueprint and why (the failure recorded, or never made)."""
    store = BlueprintStore(bench.root)
    failures = store.recorded_failures()
    found: dict[str, str] = {}
    for pair in pairs:
        lacking = [p for p in pair.audio_paths() if store.get_by_path(p) is None]
        if lacking:
            found[pair.id] = "no blueprint for " + "; ".join(
                f"{p} ({failures[p]})" if p in failures else f"{p} (never made)" for p in lacking)
    return found


def build_cases(bench: Benchmark, pairs: list[Pair], prompt: Prompt, drop: tuple[str, ...],
                rubric: Rubric | None = None) -> tuple[dict[str, tuple[Case, Case | None]], dict[str, str]]:
    """(item id -> (original, swapped) cases, item id -> why the item cannot be judged).

    Pointwise items have no swapped case (None). Raises MissingBlueprintsError
    naming every clip without a blueprint, and why it has none.
    """
    rubric = rubric or load_rubric(DEFAULT_RUBRIC)
    store = BlueprintStore(bench.root)
    loaded: dict[str, dict | None] = {}

    def blueprint(relative: str | None) -> dict | None:
        if relative is None:
            return None
        if relative not in loaded:
            loaded[relative] = store.get_by_path(relative)
        return loaded[relative]

    cases: dict[str, tuple[Case, Case | None]] = {}
    unusable: dict[str, str] = {}
    missing: dict[str, None] = {}
    for pair in pairs:
        reason = rubric.unusable_reason(pair)
        if reason:
            unusable[pair.id] = reason
            continue
        dimensions = rubric.dimensions_for(pair)
        variables = rubric.variables(pair, dimensions)
        if not rubric.pairwise:
            cases[pair.id] = (_pointwise_case(bench, pair, prompt, drop, blueprint, missing, dimensions, variables),
                              None)
            continue
        instruction_bp = bp1 = bp2 = None
        if prompt.needs_blueprints:
            for relative in (pair.instruction_path, pair.audio1_path, pair.audio2_path):
                if relative and blueprint(relative) is None:
                    missing.setdefault(relative, None)
            instruction_bp, bp1, bp2 = (blueprint(p)
                                        for p in (pair.instruction_path, pair.audio1_path, pair.audio2_path))
        transcript = (instruction_bp or {}).get("agent_response")
        views = (blueprint_view(bp1, prompt.blueprint_keys, drop), blueprint_view(bp2, prompt.blueprint_keys, drop))
        # Word timings go with the speaking-rate cues: only where agent_audio_properties is shown.
        timed = any(v and "agent_audio_properties" in v for v in views)
        words = tuple((bp or {}).get("words") if timed else None for bp in (bp1, bp2))
        instruction_audio = bench.resolve(pair.instruction_path) if pair.instruction_path else None
        audio1, audio2 = bench.resolve(pair.audio1_path), bench.resolve(pair.audio2_path)
        doubts = (transcript_doubt(bp1), transcript_doubt(bp2))
        original = Case(pair.id, transcript, pair.instruction_text, views, (instruction_audio, audio1, audio2), False,
                        words, dimensions, variables, doubts)
        swapped = Case(pair.id, transcript, pair.instruction_text, views[::-1], (instruction_audio, audio2, audio1),
                       True, words[::-1], dimensions, variables, doubts[::-1])
        cases[pair.id] = (original, swapped)
    if missing:
        raise MissingBlueprintsError(bench.root, list(missing), store.recorded_failures())
    return cases, unusable


def _pointwise_case(bench: Benchmark, pair: Pair, prompt: Prompt, drop: tuple[str, ...],
                    blueprint: Callable[[str | None], dict | None], missing: dict[str, None],
                    dimensions: tuple[str, ...], variables: dict[str, str]) -> Case:
    """The case of an item with one answer (audio_path): one blueprint, the answer's audio in slot 1."""
    assert pair.audio_path is not None
    instruction_bp = answer_bp = None
    if prompt.needs_blueprints:
        for relative in (pair.instruction_path, pair.audio_path):
            if relative and blueprint(relative) is None:
                missing.setdefault(relative, None)
        instruction_bp, answer_bp = blueprint(pair.instruction_path), blueprint(pair.audio_path)
    transcript = (instruction_bp or {}).get("agent_response")
    view = blueprint_view(answer_bp, prompt.blueprint_keys, drop)
    instruction_audio = bench.resolve(pair.instruction_path) if pair.instruction_path else None
    audio = (instruction_audio, bench.resolve(pair.audio_path), None)
    return Case(pair.id, transcript, pair.instruction_text, (view,), audio, False, (None,), dimensions, variables)


# -- one answer -------------------------------------------------------------------------

class _BudgetReached(Exception):
    pass


class _CallFailed(Exception):
    pass


class _RunStopped(Exception):
    pass


@dataclass(frozen=True)
class _Unit:
    """One answer to obtain: a pair, in one presentation order, one sample."""

    case: Case
    sample: int

    @property
    def order(self) -> str:
        return "swapped" if self.case.swapped else "original"


@dataclass
class UnitResult:
    order: str
    sample: int
    status: str = "ok"
    reason: str | None = None
    verdicts: dict[str, str | None] | None = None  # in the manifest's numbering
    undetermined: dict[str, str] = field(default_factory=dict)  # dimension -> why its label is null
    reasoning: Any = None  # as the judge gave it
    raw: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    latency_s: float = 0.0
    calls: int = 0
    cache_hits: int = 0
    repairs: int = 0

    def add(self, completion: Completion, cache_hit: bool) -> None:
        self.prompt_tokens += completion.prompt_tokens or 0
        self.completion_tokens += completion.completion_tokens or 0
        if completion.cost_usd is not None:
            self.cost_usd = (self.cost_usd or 0.0) + completion.cost_usd
        if cache_hit:
            self.cache_hits += 1
        else:
            self.calls += 1
            self.latency_s += completion.latency_s

    def as_sample(self) -> dict:
        return {"order": self.order, "sample": self.sample, "status": self.status, "reason": self.reason,
                "verdicts": self.verdicts, "reasoning": self.reasoning, "raw": self.raw,
                "cache_hit": self.calls == 0 and self.cache_hits > 0}


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


# -- the run ----------------------------------------------------------------------------

class _Session:
    def __init__(self, options: JudgeOptions, backbone: Any, prompt: Prompt, cache: AnswerCache,
                 structured: bool, writer: runfolder.ResultsWriter, total: int, rubric: Rubric):
        self.options = options
        self.backbone = backbone
        self.prompt = prompt
        self.rubric = rubric
        self.cache = cache
        self.structured = structured
        self.writer = writer
        self.calls_slots = asyncio.Semaphore(options.concurrency)
        # Bounds pairs in flight, so prompts (audio ones are large) are rendered shortly before use.
        self.pair_slots = asyncio.Semaphore(max(2 * options.concurrency, 4))
        self.limiter = RateLimiter(options.rpm)
        self.calls = 0
        self.cache_hits = 0
        self.retries = 0
        self.spent_usd = 0.0
        self.stop_reason: str | None = None
        self.progress = _progress_bar(total, options.progress)

    def response_format(self, case: Case) -> dict | None:
        """The JSON-schema response format of the dimensions asked about `case`, when structured output is on."""
        if not self.structured:
            return None
        schema = self.rubric.response_schema(case.dimensions or None)
        return {"type": "json_schema", "json_schema": {"name": "verdict", "schema": schema, "strict": True}}

    # one backbone call, through cache, budget, limiter and retries
    def token_budget(self, case: Case) -> int | None:
        """max_tokens of the calls about `case`: --max-tokens, else a budget for its dimensions (litellm only)."""
        if isinstance(self.backbone, LiteLLMBackbone):
            return self.backbone.token_budget(len(case.dimensions) or len(self.rubric.names))
        return self.options.max_tokens

    def _request(self, messages: list[dict], sample: int, response_format: dict | None,
                 max_tokens: int | None) -> dict:
        # max_tokens is the budget sent (it changes answers): with --max-tokens, the value given as before.
        return {
            "backbone": self.backbone.name,
            "api_base": _without_credentials(self.options.api_base),
            "prompt_version": self.prompt.id,
            "messages": messages,
            "sampling": {"temperature": self.options.temperature, "max_tokens": max_tokens},
            "response_format": response_format,
            "sample_index": sample,
        }

    def _budget_reached(self) -> bool:
        return self.options.max_cost is not None and self.spent_usd >= self.options.max_cost

    async def call(self, messages: list[dict], case: Case, sample: int) -> tuple[Completion, bool]:
        response_format = self.response_format(case)
        key = (request_key(self._request(messages, sample, response_format, self.token_budget(case)))
               if self.backbone.cacheable else None)
        if key is not None:
            entry = self.cache.get(key)
            if entry is not None:
                self.cache_hits += 1
                return Completion(entry["text"], entry.get("prompt_tokens"), entry.get("completion_tokens"),
                                  entry.get("cost_usd"), 0.0, entry.get("finish_reason")), True
        policy = self.options.retry
        transient = rate_limited = 0
        while True:
            if self.stop_reason:
                raise _RunStopped(self.stop_reason)
            if self._budget_reached():
                raise _BudgetReached()
            error: TransientBackboneError | None = None
            async with self.calls_slots:
                await self.limiter.wait()
                if self._budget_reached():
                    raise _BudgetReached()
                if self.stop_reason:
                    raise _RunStopped(self.stop_reason)
                try:
                    completion = await self.backbone.complete(messages, case, response_format)
                except TransientBackboneError as e:
                    error = e
                except FatalBackboneError as e:
                    self.stop_reason = self.stop_reason or str(e)
                    raise
            if error is None:
                break
            if error.kind == "refused" and not self.calls:
                # Nothing has got through and nothing listens there: every pair would fail the same way.
                self.stop_reason = self.stop_reason or f"cannot reach {self.backbone.name}: {error}"
                raise FatalBackboneError(self.stop_reason)
            if error.kind == "rate_limit":
                rate_limited += 1
                if rate_limited > policy.max_rate_limit_retries:
                    raise _CallFailed(f"rate limited {rate_limited} times in a row: {error}")
                delay = (policy.backoff(rate_limited - 1) if error.retry_after_s is None
                         else min(error.retry_after_s, policy.max_retry_after_s))
                self.limiter.pause(delay)  # every call waits, not only this one
            else:
                transient += 1
                if transient > policy.max_retries:
                    message = f"{error.kind}: {error} (gave up after {policy.max_retries} retries of this call)"
                    if error.kind in ("connection", "refused") and not self.calls:
                        # Nothing has got through yet: an unreachable server would fail every pair the same way.
                        self.stop_reason = self.stop_reason or f"cannot reach {self.backbone.name}: {message}"
                        raise FatalBackboneError(self.stop_reason)
                    raise _CallFailed(message)
                delay = policy.backoff(transient - 1)
            self.retries += 1  # counted once it is decided: a call given up on is not a retry
            await asyncio.sleep(delay)
        self.calls += 1
        if completion.cost_usd:
            self.spent_usd += completion.cost_usd
        if key is not None:
            self.cache.put(key, {
                "model": self.backbone.name,
                "text": completion.text,
                "prompt_tokens": completion.prompt_tokens,
                "completion_tokens": completion.completion_tokens,
                "cost_usd": completion.cost_usd,
                "finish_reason": completion.finish_reason,
                "latency_s": round(completion.latency_s, 4),
                "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            })
        return completion, False

    async def judge_unit(self, unit: _Unit) -> UnitResult:
        result = UnitResult(order=unit.order, sample=unit.sample)
        try:
            messages = self.prompt.render(unit.case)
        except (PromptError, OSError) as e:
            result.status, result.reason = "error", str(e)
            return result
        for attempt in range(1 + self.options.repair_attempts):
            try:
                completion, cache_hit = await self.call(messages, unit.case, unit.sample)
            except _BudgetReached:
                result.status, result.reason = "skipped", "max-cost reached"
                return result
            except (_CallFailed, RequestRejected) as e:
                result.status, result.reason = "error", str(e)
                return result
            result.add(completion, cache_hit)
            result.raw = completion.text
            parsed = parse_verdict(completion.text, self.rubric, unit.case.dimensions or None,
                                   allow_undetermined=getattr(self.backbone, "may_leave_undetermined", False))
            if not parsed.ok and completion.finish_reason == "length":
                budget = self.token_budget(unit.case)
                result.status, result.reason = "invalid", f"cut at the token budget ({budget} tokens)"
                if attempt < self.options.repair_attempts:
                    result.repairs += 1
                    brief = (f"your answer was cut at the token budget of {budget} tokens before it was complete; "
                             "answer again briefly: only the JSON object, one short sentence of reasoning per "
                             "dimension")
                    messages = [*messages, {"role": "assistant", "content": completion.text},
                                self.prompt.repair(brief, unit.case)]
                continue
            if parsed.ok:
                assert parsed.verdicts is not None
                result.verdicts = (swap_back(parsed.verdicts, self.rubric.spaces()) if unit.case.swapped
                                   else parsed.verdicts)
                result.reasoning = parsed.reasoning
                result.undetermined = parsed.undetermined
                result.status, result.reason = "ok", None
                return result
            result.status, result.reason = "invalid", parsed.error
            if attempt < self.options.repair_attempts:
                result.repairs += 1
                messages = [*messages, {"role": "assistant", "content": completion.text},
                            self.prompt.repair(parsed.error or "", unit.case)]
        return result

    async def judge_pair(self, pair_id: str, units: list[_Unit]) -> dict:
        async with self.pair_slots:
            if self.stop_reason:
                raise _RunStopped(self.stop_reason)
            outcomes = await asyncio.gather(*(self.judge_unit(u) for u in units), return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
        record = pair_record(pair_id, list(outcomes), self.options, self.rubric,  # type: ignore[arg-type]
                             units[0].case.dimensions or None)
        self.writer.append(record)
        self.progress.update(1)
        self.progress.set_postfix_str(f"${self.spent_usd:.4f}, {self.calls} calls, {self.cache_hits} cached",
                                      refresh=False)
        return record

    async def run(self, work: list[tuple[str, list[_Unit]]]) -> None:
        tasks = [asyncio.create_task(self.judge_pair(pair_id, units)) for pair_id, units in work]
        try:
            for next_done in asyncio.as_completed(tasks):
                try:
                    await next_done
                except (FatalBackboneError, _RunStopped):
                    break
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self.progress.close()
            if isinstance(self.backbone, LiteLLMBackbone):
                try:
                    await self.backbone._litellm.close_litellm_async_clients()
                except Exception:
                    pass  # closing idle connections is a courtesy; the run's results are written


def _progress_bar(total: int, enabled: bool):
    from tqdm import tqdm

    return tqdm(total=total, unit="pair", desc="judge", disable=not enabled, file=sys.stderr, dynamic_ncols=True)


STATUS_PRECEDENCE = ("error", "invalid", "skipped")


def pair_record(pair_id: str, units: list[UnitResult], options: JudgeOptions, rubric: Rubric | None = None,
                dimensions: tuple[str, ...] | None = None) -> dict:
    """The results.jsonl line of one item from its answers (see runfolder for the fields)."""
    rubric = rubric or load_rubric(DEFAULT_RUBRIC)
    failing = [u for u in units if u.status != "ok"]
    verdicts: dict[str, Any] = {dim: None for dim in dimensions or rubric.names}
    # The majority is over the usable answers: one unusable sample of several does not sink the
    # item, as long as every order judged has at least one usable answer (each stays in `samples`).
    usable = {order: [u.verdicts for u in units if u.order == order and u.status == "ok" and u.verdicts]
              for order in (("original", "swapped") if options.swap else ("original",))}
    orders: dict[str, dict[str, Any]] = {}
    if all(usable.values()):
        orders = {order: majority(samples) for order, samples in usable.items()}
        verdicts = (resolve_orders(orders["original"], orders["swapped"], rubric.spaces()) if options.swap
                    else dict(orders["original"]))
        status = "ok"
        reason = f"{len(failing)} of {len(units)} answers unusable; majority of the rest" if failing else None
        shown = next(u for u in units if u.status == "ok")
    else:
        status = next(s for s in STATUS_PRECEDENCE if any(u.status == s for u in failing))
        shown = next(u for u in failing if u.status == status)
        reason = shown.reason
        if len(units) > 1:
            reason = f"{shown.order} order, sample {shown.sample}: {reason}"
    costs = [u.cost_usd for u in units if u.cost_usd is not None]
    record: dict[str, Any] = {
        "id": pair_id,
        "status": status,
        "reason": reason,
        "verdicts": verdicts,
        "reasoning": shown.reasoning,
        "raw": shown.raw,
        "fused": {},
        "overall": None,
        "tokens": {"prompt": sum(u.prompt_tokens for u in units),
                   "completion": sum(u.completion_tokens for u in units)},
        "cost_usd": sum(costs) if costs else None,
        "latency_s": round(sum(u.latency_s for u in units), 4),
        "cache_hit": all(u.calls == 0 for u in units) and any(u.cache_hits for u in units),
        "repairs": sum(u.repairs for u in units),
        "undetermined": runfolder.undetermined_reasons(verdicts if status == "ok" else {}, units),
    }
    runfolder.set_overall(record, options.fusion, rubric)
    if options.swap and len(orders) == 2:
        record["orders"] = orders
    if options.swap or options.samples > 1:
        record["samples"] = [u.as_sample() for u in units]
    return record


def _unusable_record(pair: Pair, reason: str, policy: str, rubric: Rubric, status: str = "error") -> dict:
    verdicts = {dim: None for dim in rubric.dimensions_for(pair)}
    record = {"id": pair.id, "status": status, "reason": reason, "verdicts": verdicts,
              "reasoning": None, "raw": None, "fused": {}, "overall": None, "tokens": {"prompt": 0, "completion": 0},
              "cost_usd": None, "latency_s": 0.0, "cache_hit": False, "repairs": 0, "undetermined": {}}
    return runfolder.set_overall(record, policy, rubric)


def _resume(out: Path, config: dict, pair_ids: set[str], notice: Callable[[str], None]) -> list[dict]:
    """Records of an earlier run in `out` worth keeping (status ok, a pair of this benchmark); lines that
    cannot be read (one cut short by an interruption) are told to `notice`, and their pairs judged again."""
    config_path = out / runfolder.CONFIG
    if not config_path.is_file():
        if (out / runfolder.RESULTS).is_file():
            raise JudgeError(f"{out} holds {runfolder.RESULTS} but no {runfolder.CONFIG}, so it cannot be resumed "
                             "safely; give another --out")
        return []
    previous = runfolder.load_config(out)
    changed = [k for k in RESUME_KEYS if previous.get(k, _BEFORE_THE_SETTING.get(k)) != config.get(k)]
    if changed:
        details = ", ".join(f"{k}: {previous.get(k)!r} -> {config.get(k)!r}" for k in changed)
        raise JudgeError(f"{out} holds a run made with other settings ({details}); give another --out "
                         "or remove that folder")
    previous = runfolder.read_results(out / runfolder.RESULTS)
    for problem in previous.problems:
        notice(f"warning: {out}: {problem}")
    return [r for r in previous.records if r.get("status") == "ok" and r["id"] in pair_ids]


@dataclass
class _Plan:
    """What a run is made of, before any call: rubric, prompt, items, backbone, cases, cache."""

    rubric: Rubric
    prompt: Prompt
    bench: Benchmark
    pairs: list[Pair]
    backbone: Any
    cases: dict[str, tuple[Case, Case | None]]
    unusable: dict[str, str]
    skipped: dict[str, str]
    structured: bool
    cache_dir: Path
    cache: AnswerCache

    def units(self, pair_id: str, options: JudgeOptions) -> list[_Unit]:
        original, swapped = self.cases[pair_id]
        orders = (original, swapped) if options.swap and swapped is not None else (original,)
        return [_Unit(case, sample) for case in orders for sample in range(options.samples)]


def _plan(options: JudgeOptions, check_key: bool = True) -> _Plan:
    _check_options(options)
    try:
        rubric = load_rubric(options.rubric)
        prompt = rubric.prompt(options.judge)
    except (RubricError, PromptError) as e:
        raise JudgeError(str(e)) from None
    if options.swap and not rubric.pairwise:
        raise JudgeError(f"--swap needs a pairwise rubric; {rubric.name} scores one answer per item")
    if rubric.fusion and options.fusion not in rubric.fusion.policies:
        raise JudgeError(f"--fusion {options.fusion}: the {rubric.name} rubric fuses under "
                         f"{', '.join(rubric.fusion.policies)}")
    bench = load_benchmark(options.bench, rubric=rubric)
    pairs = bench.pairs[: options.limit] if options.limit else list(bench.pairs)
    backbone = make_backbone(options, prompt, rubric, check_key)
    skipped = lacking_blueprints(bench, pairs) if options.skip_failed and prompt.needs_blueprints else {}
    cases, unusable = build_cases(bench, [p for p in pairs if p.id not in skipped], prompt, options.drop, rubric)

    if options.structured == "on":
        structured = not isinstance(backbone, CuesBackbone)
    elif options.structured == "auto":
        structured = isinstance(backbone, LiteLLMBackbone) and backbone.supports_response_schema()
    else:
        structured = False
    cache_dir = Path(options.cache_dir) if options.cache_dir else default_cache_dir()
    cache = AnswerCache(cache_dir, read=options.use_cache, write=True)
    return _Plan(rubric, prompt, bench, pairs, backbone, cases, unusable, skipped, structured, cache_dir, cache)


def dry_run(options: JudgeOptions) -> dict:
    """What `run_judge(options)` would ask, without asking: calls after the cache, prompt tokens, price.

    Repair calls are not foreseen (they happen only for unusable answers). The answer cost is an
    upper bound: every answer at the token budget.
    """
    plan = _plan(options, check_key=False)
    backbone = plan.backbone
    report: dict[str, Any] = {"model": options.model, "pairs": len(plan.cases), "skipped": len(plan.skipped),
                              "unusable": len(plan.unusable), "calls": 0, "cached": 0, "prompt_tokens": 0,
                              "tokens_exact": True, "answer_tokens_max": 0, "cost_usd_max": None,
                              "price": None}
    if not isinstance(backbone, LiteLLMBackbone):
        report.update(price="no calls: the cues backbone reads the blueprints", cost_usd_max=0.0)
        return report
    probe = _Session(replace(options, progress=False), backbone, plan.prompt, plan.cache, plan.structured,
                     None, 0, plan.rubric)
    for pair_id in plan.cases:
        for unit in plan.units(pair_id, options):
            messages = plan.prompt.render(unit.case)
            budget = probe.token_budget(unit.case)
            key = request_key(probe._request(messages, unit.sample, probe.response_format(unit.case), budget))
            if plan.cache.get(key) is not None:
                report["cached"] += 1
                continue
            tokens, exact = backbone.count_prompt_tokens(messages)
            report["calls"] += 1
            report["prompt_tokens"] += tokens
            report["tokens_exact"] = report["tokens_exact"] and exact
            report["answer_tokens_max"] += budget or 0
    prices = backbone.prices_per_token()
    if prices is None:
        report["price"] = "unknown price"
    else:
        report["price"] = {"input_per_mtok": prices[0] * 1e6, "output_per_mtok": prices[1] * 1e6}
        report["cost_usd_max"] = report["prompt_tokens"] * prices[0] + report["answer_tokens_max"] * prices[1]
        report["cost_usd_prompts"] = report["prompt_tokens"] * prices[0]
    return report


def run_judge(options: JudgeOptions, notice: Callable[[str], None] | None = None) -> RunOutcome:
    """Judge every pair of `options.bench`; write the run folder; return where and what it holds."""
    notice = notice or (lambda message: print(message, file=sys.stderr))
    started = time.perf_counter()
    plan = _plan(options)
    rubric, prompt, bench, pairs, backbone = plan.rubric, plan.prompt, plan.bench, plan.pairs, plan.backbone
    cases, unusable, skipped, structured = plan.cases, plan.unusable, plan.skipped, plan.structured
    cache_dir, cache = plan.cache_dir, plan.cache
    if options.max_cost is not None and isinstance(backbone, LiteLLMBackbone) and not backbone.price_known():
        raise JudgeError(f"--max-cost needs the price of {options.model}, which litellm does not know; "
                         "give --price-in and --price-out (USD per million tokens)")

    out = Path(options.out) if options.out else default_out_dir(options.model)
    out.mkdir(parents=True, exist_ok=True)
    config = build_config(options, bench, prompt, backbone, structured, cache_dir, rubric)
    kept = _resume(out, config, {p.id for p in pairs}, notice)
    done = {r["id"] for r in kept}
    write_json(out / runfolder.CONFIG, config)
    runfolder.write_results(out / runfolder.RESULTS, kept)
    if kept:
        notice(f"resuming {out}: {len(kept)} pair(s) already judged")

    writer = runfolder.ResultsWriter(out / runfolder.RESULTS)
    try:
        for pair in pairs:
            if pair.id in unusable and pair.id not in done:
                writer.append(_unusable_record(pair, unusable[pair.id], options.fusion, rubric))
            if pair.id in skipped and pair.id not in done:
                writer.append(_unusable_record(pair, skipped[pair.id], options.fusion, rubric, "skipped"))
        work = [(pair.id, plan.units(pair.id, options)) for pair in pairs if pair.id not in done and pair.id in cases]
        session = _Session(options, backbone, prompt, cache, structured, writer, total=len(work), rubric=rubric)
        asyncio.run(session.run(work))
    finally:
        writer.close()

    # Final file: manifest order, one line per pair, overall under this run's policy.
    by_id = runfolder.read_results(out / runfolder.RESULTS).latest()
    records = [runfolder.set_overall(by_id[p.id], options.fusion, rubric) for p in pairs if p.id in by_id]
    runfolder.write_results(out / runfolder.RESULTS, records)
    not_run = [p.id for p in pairs if p.id not in by_id]
    run_info = {
        "calls": session.calls,
        "cache_hits": session.cache_hits,
        "retries": session.retries,
        "spent_usd": session.spent_usd,
        "wall_s": round(time.perf_counter() - started, 3),
        "stopped": session.stop_reason,
        "not_run": not_run,
    }
    cues = (evidence.load_run_cues(bench, pairs, prompt.blueprint_keys, options.drop) if prompt.needs_blueprints
            else None)
    summary = runfolder.summarize(records, config, run_info, rubric, cues)
    write_json(out / runfolder.SUMMARY, summary)
    return RunOutcome(out=out, summary=summary, stopped=session.stop_reason)
