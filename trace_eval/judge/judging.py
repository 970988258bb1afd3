"""The judging loop: every item's answers (orders x samples) asked, read, repaired, combined and written.

An answer that cannot be read is sent back with the parser's complaint (or, when
it was cut at the token budget, a request to be brief) up to --repairs times, then
recorded "invalid" with its raw text. Swapped answers are put back in the
manifest's numbering before they are combined. Each finished item is appended to
results.jsonl at once.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from trace_eval.judge import runfolder
from trace_eval.judge.backbones import Backbone, Completion, FatalBackboneError, RequestRejected
from trace_eval.judge.caller import BudgetReached, Caller, CallFailed, RunStopped
from trace_eval.judge.combine import majority, resolve_orders, swap_back
from trace_eval.judge.confidence import answer_confidence, label_probabilities
from trace_eval.judge.options import JudgeOptions
from trace_eval.judge.parse import parse_verdict
from trace_eval.judge.prompts import Case, Prompt, PromptError
from trace_eval.rubrics import Rubric

if TYPE_CHECKING:
    from trace_eval.bench import Pair

__all__ = ["Judging", "StructuredOutput", "Unit", "UnitResult", "pair_record", "response_format", "unusable_record"]


@dataclass(frozen=True)
class Unit:
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
    confidence: dict[str, float] = field(default_factory=dict)  # dimension -> how sure the answer is
    confidence_from: str | None = None  # "stated" (in the answer) | "logprobs" (of its label tokens)
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
        return {
            "order": self.order,
            "sample": self.sample,
            "status": self.status,
            "reason": self.reason,
            "verdicts": self.verdicts,
            "confidence": self.confidence or None,
            "reasoning": self.reasoning,
            "raw": self.raw,
            "cache_hit": self.calls == 0 and self.cache_hits > 0,
        }


class StructuredOutput:
    """Whether calls carry the rubric's JSON-schema response format: --structured on, off, or auto (the
    backbone's call). Under auto the format is tried: a request the backbone rejects with it and answers
    without it shows that the backbone refuses it, and the run goes on without it (`refused` says why).
    Once a call with it is answered, the choice stands."""

    def __init__(self, sent: bool, may_drop: bool, notice: Callable[[str], None]):
        self.sent = sent
        self.settled = not (sent and may_drop)
        self.refused: str | None = None
        self._notice = notice

    def drop(self, reason: str, backbone: str) -> None:
        if self.refused is None:
            self.refused = reason
            self._notice(
                f"notice: {backbone} refused the JSON-schema response format ({reason}); judging "
                "without it (--structured off skips trying)"
            )
        self.sent, self.settled = False, True


def response_format(rubric: Rubric, case: Case, structured: bool) -> dict | None:
    """The JSON-schema response format of the dimensions asked about `case`, when structured output is on."""
    if not structured:
        return None
    schema = rubric.response_schema(case.dimensions or None)
    return {"type": "json_schema", "json_schema": {"name": "verdict", "schema": schema, "strict": True}}


def token_budget(backbone: Backbone, rubric: Rubric, case: Case) -> int | None:
    """max_tokens of the calls about `case`."""
    return backbone.token_budget(len(case.dimensions) or len(rubric.names))


class Judging:
    """The items of one run through `caller`, each finished item written by `writer` (None: only returned, as
    the Python API's verdicts are)."""

    def __init__(
        self,
        options: JudgeOptions,
        caller: Caller,
        prompt: Prompt,
        rubric: Rubric,
        structured: StructuredOutput,
        writer: runfolder.ResultsWriter | None,
        total: int,
    ):
        self.options = options
        self.caller = caller
        self.backbone = caller.backbone
        self.prompt = prompt
        self.rubric = rubric
        self.structured = structured
        self.writer = writer
        # Bounds pairs in flight, so prompts (audio ones are large) are rendered shortly before use.
        self.pair_slots = asyncio.Semaphore(max(2 * options.concurrency, 4))
        self.progress = _progress_bar(total, options.progress)

    async def judge_unit(self, unit: Unit) -> UnitResult:
        result = UnitResult(order=unit.order, sample=unit.sample)
        try:
            messages = self.prompt.render(unit.case)
        except (PromptError, OSError) as e:
            result.status, result.reason = "error", str(e)
            return result
        budget = token_budget(self.backbone, self.rubric, unit.case)
        for attempt in range(1 + self.options.repair_attempts):
            try:
                completion, cache_hit = await self.ask(messages, unit, budget)
            except BudgetReached:
                result.status, result.reason = "skipped", "max-cost reached"
                return result
            except (CallFailed, RequestRejected) as e:
                result.status, result.reason = "error", str(e)
                return result
            result.add(completion, cache_hit)
            result.raw = completion.text
            parsed = parse_verdict(
                completion.text,
                self.rubric,
                unit.case.dimensions or None,
                allow_undetermined=self.backbone.may_leave_undetermined,
            )
            if not parsed.ok and completion.finish_reason == "length":
                result.status, result.reason = "invalid", f"cut at the token budget ({budget} tokens)"
                complaint = (
                    f"your answer was cut at the token budget of {budget} tokens before it was complete; "
                    "answer again briefly: only the JSON object, one short sentence of reasoning per "
                    "dimension"
                )
            elif parsed.ok:
                assert parsed.verdicts is not None
                result.verdicts = (
                    swap_back(parsed.verdicts, self.rubric.spaces()) if unit.case.swapped else parsed.verdicts
                )
                result.reasoning = parsed.reasoning
                result.undetermined = parsed.undetermined
                if self.backbone.states_confidence and parsed.confidence:
                    result.confidence, result.confidence_from = parsed.confidence, "stated"
                elif completion.logprobs:
                    result.confidence = label_probabilities(completion.text, completion.logprobs, parsed.verdicts)
                    result.confidence_from = "logprobs" if result.confidence else None
                result.status, result.reason = "ok", None
                return result
            else:
                result.status, result.reason = "invalid", parsed.error
                complaint = parsed.error or ""
            if attempt < self.options.repair_attempts:
                result.repairs += 1
                messages = [
                    *messages,
                    {"role": "assistant", "content": completion.text},
                    self.prompt.repair(complaint, unit.case),
                ]
        return result

    async def ask(self, messages: list[dict], unit: Unit, budget: int | None) -> tuple[Completion, bool]:
        """One answer (and whether it was cached), without the response format once the backbone refuses it."""
        structured = self.structured
        answer_format = response_format(self.rubric, unit.case, structured.sent)
        try:
            answer = await self.caller.call(messages, unit.case, unit.sample, answer_format, budget)
        except RequestRejected as rejected:
            if answer_format is None or structured.settled:
                raise
            # Rejected again without the format: the request itself is at fault, and the format stays.
            answer = await self.caller.call(messages, unit.case, unit.sample, None, budget)
            structured.drop(str(rejected), self.backbone.name)
            return answer
        structured.settled = structured.settled or answer_format is not None
        return answer

    async def judge_pair(self, pair_id: str, units: list[Unit]) -> dict:
        async with self.pair_slots:
            if self.caller.stop_reason:
                raise RunStopped(self.caller.stop_reason)
            outcomes = await asyncio.gather(*(self.judge_unit(u) for u in units), return_exceptions=True)
        results = []
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
            results.append(outcome)
        case = units[0].case
        unasked = dict.fromkeys(case.unasked, case.instruction_unread or "not asked")
        record = pair_record(pair_id, results, self.options, self.rubric, case.dimensions or None, unasked)
        language = units[0].case.instruction_language
        record["instruction_language"] = None if language is None else language.record()
        if self.writer is not None:
            self.writer.append(record)
        caller = self.caller
        self.progress.update(1)
        self.progress.set_postfix_str(
            f"${caller.spent_usd:.4f}, {caller.calls} calls, {caller.cache_hits} cached", refresh=False
        )
        return record

    async def run(self, work: list[tuple[str, list[Unit]]]) -> None:
        tasks = [asyncio.create_task(self.judge_pair(pair_id, units)) for pair_id, units in work]
        try:
            for next_done in asyncio.as_completed(tasks):
                try:
                    await next_done
                except (FatalBackboneError, RunStopped):
                    break
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self.progress.close()
            await self.backbone.close()


def _progress_bar(total: int, enabled: bool):
    from tqdm import tqdm

    return tqdm(total=total, unit="pair", desc="judge", disable=not enabled, file=sys.stderr, dynamic_ncols=True)


STATUS_PRECEDENCE = ("error", "invalid", "skipped")


def pair_record(
    pair_id: str,
    units: list[UnitResult],
    options: JudgeOptions,
    rubric: Rubric,
    dimensions: tuple[str, ...] | None = None,
    unasked: dict[str, str] | None = None,
) -> dict:
    """The results.jsonl line of one item from its answers (see runfolder for the fields); `unasked`: the
    dimensions the judge was not asked about, each null with why."""
    failing = [u for u in units if u.status != "ok"]
    unasked = unasked or {}
    asked = set(dimensions or rubric.names)
    verdicts: dict[str, Any] = {dim: None for dim in rubric.names if dim in asked or dim in unasked}
    # The majority is over the usable answers: one unusable sample of several does not sink the
    # item, as long as every order judged has at least one usable answer (each stays in `samples`).
    usable = {
        order: [u.verdicts for u in units if u.order == order and u.status == "ok" and u.verdicts]
        for order in (("original", "swapped") if options.swap else ("original",))
    }
    orders: dict[str, dict[str, Any]] = {}
    if all(usable.values()):
        orders = {order: majority(samples) for order, samples in usable.items()}
        verdicts = (
            resolve_orders(orders["original"], orders["swapped"], rubric.spaces())
            if options.swap
            else dict(orders["original"])
        )
        verdicts = {dim: verdicts.get(dim) for dim in rubric.names if dim in asked or dim in unasked}
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
        "tokens": {
            "prompt": sum(u.prompt_tokens for u in units),
            "completion": sum(u.completion_tokens for u in units),
        },
        "cost_usd": sum(costs) if costs else None,
        "latency_s": round(sum(u.latency_s for u in units), 4),
        "cache_hit": all(u.calls == 0 for u in units) and any(u.cache_hits for u in units),
        "repairs": sum(u.repairs for u in units),
        "undetermined": {
            **runfolder.undetermined_reasons(verdicts if status == "ok" else {}, units),
            **(unasked if status == "ok" else {}),
        },
    }
    answered = [u for u in units if u.status == "ok" and u.verdicts] if status == "ok" else []
    answers = [(u.verdicts or {}, u.confidence) for u in answered]
    confidence, source, why = answer_confidence(verdicts, answers)
    if source == "stated":  # said by the answers, or read from their label tokens' probabilities
        source = next((u.confidence_from for u in answered if u.confidence_from), source)
    record.update(confidence=confidence, confidence_source=source, confidence_reason=why)
    runfolder.set_overall(record, options.fusion, rubric)
    if options.swap and len(orders) == 2:
        record["orders"] = orders
    if options.swap or options.samples > 1:
        record["samples"] = [u.as_sample() for u in units]
    return record


def unusable_record(pair: Pair, reason: str, policy: str, rubric: Rubric, status: str = "error") -> dict:
    """The results.jsonl line of an item that was not asked about (no blueprint, not an item of the rubric)."""
    verdicts = {dim: None for dim in rubric.dimensions_for(pair)}
    record = {
        "id": pair.id,
        "status": status,
        "reason": reason,
        "verdicts": verdicts,
        "reasoning": None,
        "raw": None,
        "fused": {},
        "overall": None,
        "tokens": {"prompt": 0, "completion": 0},
        "cost_usd": None,
        "latency_s": 0.0,
        "cache_hit": False,
        "repairs": 0,
        "undetermined": {},
        "confidence": {dim: None for dim in verdicts},
        "confidence_source": None,
        "confidence_reason": "no verdict",
    }
    return runfolder.set_overall(record, policy, rubric)
