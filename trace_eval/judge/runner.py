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
import re
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import fusion
from trace_eval.audio import sha256_file
from trace_eval.bench import Benchmark, Pair, load_benchmark
from trace_eval.io import write_json
from trace_eval.judge import evidence, runfolder
from trace_eval.judge.backbones import Backbone, BackboneSettings, FatalBackboneError, backbone_for, make_backbone
from trace_eval.judge.cache import AnswerCache, default_cache_dir
from trace_eval.judge.caller import Caller, without_credentials
from trace_eval.judge.judging import Judging, StructuredOutput, Unit, response_format, token_budget, unusable_record
from trace_eval.judge.languages import benchmark_language, instruction_language
from trace_eval.judge.options import JudgeOptions
from trace_eval.judge.prompts import BLUEPRINT_GROUPS, Case, Prompt, PromptError, blueprint_view
from trace_eval.rubrics import DEFAULT_RUBRIC, Rubric, RubricError, load_rubric
from trace_eval.stage1.store import BlueprintStore

__all__ = [
    "JudgeError",
    "JudgeOptions",
    "MissingBlueprintsError",
    "RunOutcome",
    "Setup",
    "dry_run",
    "judge_setup",
    "make_caller",
    "run_judge",
]

STRUCTURED_CHOICES = ("auto", "on", "off")
# Settings that change answers: a run folder is resumed only with the same ones (and the same settings
# the backbone records).
RESUME_KEYS = (
    "bench",
    "model",
    "api_base",
    "rubric",
    "rubric_version",
    "judge",
    "prompt_version",
    "drop",
    "samples",
    "swap",
    "temperature",
    "max_tokens",
    "structured",
    "repair_attempts",
    "logprobs",
)
# What a run folder written before a setting existed was made with.
_BEFORE_THE_SETTING = {"rubric": DEFAULT_RUBRIC, "rubric_version": f"{DEFAULT_RUBRIC}-v1", "logprobs": False}


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
                "or pass --skip-failed to judge the other pairs"
            )
        if never_made:
            parts.append(
                f"{len(never_made)} clip(s) of {bench} have no blueprint: {_listed(never_made)}. "
                f"Make them first with: make blueprints BENCH={bench}  (or: python -m trace_eval blueprints {bench})"
                "; or pass --skip-failed to judge the other pairs"
            )
        super().__init__(". ".join(parts))


@dataclass
class RunOutcome:
    out: Path
    summary: dict
    stopped: str | None  # why the run stopped early, None when every pair was attempted
    records: list[dict] = field(default_factory=list)  # results.jsonl as written, in manifest order


# -- settings ---------------------------------------------------------------------------


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
        raise JudgeError(
            f"unknown fusion policy {options.fusion!r}; expected one of: {', '.join(sorted(fusion.POLICIES))}"
        )
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


def _backbone(options: JudgeOptions, prompt: Prompt, rubric: Rubric, check_key: bool = True) -> Backbone:
    """The backbone that judges with `options.model`, made for this rubric and prompt."""
    settings = BackboneSettings(
        model=options.model,
        rubric=rubric,
        prompt=prompt,
        api_base=options.api_base,
        api_key=options.api_key,
        temperature=options.temperature,
        max_tokens=options.max_tokens,
        timeout_s=options.timeout_s,
        price_in_per_token=None if options.price_in_per_mtok is None else options.price_in_per_mtok / 1e6,
        price_out_per_token=None if options.price_out_per_mtok is None else options.price_out_per_mtok / 1e6,
        check_key=check_key,
        logprobs=options.logprobs,
    )
    try:
        return make_backbone(backbone_for(options.model), settings)
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


def build_config(
    options: JudgeOptions,
    bench: Benchmark,
    rubric: Rubric,
    prompt: Prompt,
    backbone: Backbone,
    structured: bool,
    cache_dir: Path,
) -> dict:
    config: dict[str, Any] = {
        "format_version": runfolder.FORMAT_VERSION,
        "bench": str(bench.root),
        "manifest": str(bench.manifest_path),
        "model": options.model,
        "backbone": backbone_for(options.model),
        "api_base": without_credentials(options.api_base),
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
        "logprobs": options.logprobs,
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
    config.update(backbone.recorded_settings())
    return config


# -- cases ------------------------------------------------------------------------------


class Blueprints(Mapping[str, "dict | None"]):
    """Clip path (relative to the benchmark) -> its blueprint (None if it has none), and why each clip whose
    extraction failed has none: what a run reads from the blueprint store, once, and hands on."""

    def __init__(self, clips: dict[str, dict | None], failures: dict[str, str]):
        self.clips = clips
        self.failures = failures  # clip path -> the failure recorded when its blueprint was made

    def __getitem__(self, path: str) -> dict | None:
        return self.clips[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self.clips)

    def __len__(self) -> int:
        return len(self.clips)


def read_blueprints(bench: Benchmark, pairs: list[Pair]) -> Blueprints:
    """The blueprint of every clip of `pairs` and the recorded failures, read from the store once: the cases,
    the items lacking one and the summary of the cues measured all come from it. An answer whose audio did not
    decode stands as one that says nothing (`failed_answer`)."""
    store = BlueprintStore(bench.root)
    paths = dict.fromkeys(p for pair in pairs for p in pair.audio_paths())
    clips = {path: store.get_by_path(path) for path in paths}
    failures = store.recorded_failures()
    # Stage 1 reads each audio once: a failure is recorded for one of the paths that hold the same bytes.
    by_sha = {
        str(entry["sha256"]): _DECODE_FAILURE + str(entry.get("reason")).replace(str(bench.root / path), path)
        for path, entry in store.recorded_decode_failures().items()
    }
    return Blueprints(with_failed_answers(clips, failures, pairs, bench.root, by_sha), failures)


# A Stage 1 failure of the audio itself, as recorded (`stage: reason`): the file is empty, or does not decode.
_DECODE_FAILURE = "decode: "


def failed_answer(reason: str) -> dict:
    """What a judge reads of an answer whose audio is empty or does not decode: nothing was said. A system that
    returns nothing, or a file no player opens, has given no answer a listener could hear, so it loses to any
    answer (and both lose where both failed) rather than leave the pair out of the count; `answer_failed` says
    why, and every cue but the (empty) transcript is null with that reason."""
    why = f"the answer's audio could not be heard: {reason}"
    return {
        "agent_response": "",
        "answer_failed": reason,
        "language": None,
        "provenance": {
            "extractors": {"decode": {"status": "failed", "reason": why, "null_reasons": {"language": why}}}
        },
    }


def with_failed_answers(
    clips: dict[str, dict | None],
    failures: dict[str, str],
    pairs: list[Pair],
    root: Path,
    by_sha: dict[str, str] | None = None,
) -> dict[str, dict | None]:
    """`clips` with each answer (not instruction) that has no blueprint because its file, present, is empty or
    does not decode, standing as `failed_answer`; `by_sha`: the decode failures recorded by audio hash, for a
    file whose bytes failed under another path. A missing file is no answer of the system's, but a benchmark to
    repair: it stays without a blueprint."""
    answers = {p for pair in pairs for p in (pair.audio1_path, pair.audio2_path, pair.audio_path) if p}
    found = dict(clips)
    for path, blueprint in clips.items():
        if blueprint is not None or path not in answers or not (root / path).is_file():
            continue
        reason = failures.get(path, "")
        if not reason and by_sha:
            reason = by_sha.get(sha256_file(root / path), "")
        if reason.startswith(_DECODE_FAILURE):
            found[path] = failed_answer(reason.removeprefix(_DECODE_FAILURE))
    return found


def lacking_clips(bench: Benchmark, pairs: list[Pair], blueprints: Blueprints | None) -> dict[str, str]:
    """Item id -> which of its clips do not exist or, when the prompt shows `blueprints` (None when it shows
    none), have no blueprint, and why (the failure recorded when it was made, or never made)."""
    failures = blueprints.failures if blueprints is not None else {}

    def lacking(path: str) -> str | None:
        if not bench.resolve(path).is_file():
            return f"{path} does not exist"
        if blueprints is None or blueprints[path] is not None:
            return None
        return f"no blueprint for {path} ({failures.get(path, 'never made')})"

    found: dict[str, str] = {}
    for pair in pairs:
        reasons = [reason for reason in map(lacking, pair.audio_paths()) if reason]
        if reasons:
            found[pair.id] = "; ".join(reasons)
    return found


def build_cases(
    bench: Benchmark,
    pairs: list[Pair],
    rubric: Rubric,
    prompt: Prompt,
    drop: tuple[str, ...],
    blueprints: Blueprints | None = None,
) -> tuple[dict[str, tuple[Case, Case | None]], dict[str, str]]:
    """(item id -> (original, swapped) cases, item id -> why the item cannot be judged).

    `blueprints` are those of `read_blueprints` (read here when not given). Pointwise items have no
    swapped case (None). Raises MissingBlueprintsError naming every clip without a blueprint, and why it
    has none.
    """
    if blueprints is None and prompt.needs_blueprints:
        blueprints = read_blueprints(bench, pairs)

    def blueprint(relative: str | None) -> dict | None:
        return blueprints[relative] if relative and blueprints else None

    cases: dict[str, tuple[Case, Case | None]] = {}
    unusable: dict[str, str] = {}
    missing: dict[str, None] = {}
    usual = benchmark_language((p.languages, blueprint(p.instruction_path), p.instruction_text) for p in pairs)
    for pair in pairs:
        reason = rubric.unusable_reason(pair)
        if reason:
            unusable[pair.id] = reason
            continue
        dimensions = rubric.dimensions_for(pair)
        # A text judge asked about an instruction it cannot read rates only what needs no instruction.
        unread = unread_instruction(pair, blueprint(pair.instruction_path)) if not prompt.needs_audio else None
        unasked: tuple[str, ...] = ()
        if unread:
            unasked = tuple(d for d in dimensions if rubric.dimension(d).needs_instruction)
            dimensions = tuple(d for d in dimensions if d not in unasked)
            if not dimensions:
                unusable[pair.id] = f"{unread}, and every dimension of the {rubric.name} rubric is rated against it"
                continue
        variables = rubric.variables(pair, dimensions)
        if not rubric.pairwise:
            cases[pair.id] = (
                _pointwise_case(
                    bench, pair, prompt, drop, blueprint, missing, dimensions, variables, usual, unread, unasked
                ),
                None,
            )
            continue
        assert pair.audio1_path is not None and pair.audio2_path is not None  # a pairwise rubric's items have both
        instruction_bp = bp1 = bp2 = None
        if prompt.needs_blueprints:
            for relative in (pair.instruction_path, pair.audio1_path, pair.audio2_path):
                if relative and blueprint(relative) is None:
                    missing.setdefault(relative, None)
            instruction_bp, bp1, bp2 = (
                blueprint(p) for p in (pair.instruction_path, pair.audio1_path, pair.audio2_path)
            )
        transcript = (instruction_bp or {}).get("agent_response")
        language = instruction_language(pair.languages, instruction_bp, pair.instruction_text, benchmark=usual)
        views = (blueprint_view(bp1, prompt.blueprint_keys, drop), blueprint_view(bp2, prompt.blueprint_keys, drop))
        instruction_audio = bench.resolve(pair.instruction_path) if pair.instruction_path else None
        audio1, audio2 = bench.resolve(pair.audio1_path), bench.resolve(pair.audio2_path)
        original = Case(
            pair.id,
            transcript,
            pair.instruction_text,
            views,
            (instruction_audio, audio1, audio2),
            False,
            (bp1, bp2),
            dimensions,
            variables,
            language,
            unread,
            unasked,
        )
        swapped = Case(
            pair.id,
            transcript,
            pair.instruction_text,
            views[::-1],
            (instruction_audio, audio2, audio1),
            True,
            (bp2, bp1),
            dimensions,
            responses_swapped(variables),
            language,
            unread,
            unasked,
        )
        cases[pair.id] = (original, swapped)
    if missing:
        raise MissingBlueprintsError(bench.root, list(missing), blueprints.failures if blueprints else {})
    return cases, unusable


def unread_instruction(pair: Pair, blueprint: dict | None) -> str | None:
    """Why a text judge cannot read `pair`'s instruction: it is spoken, with no written text, and Stage 1 heard no
    words in it (silence, a tone, speech the recogniser could not make out); None where it can be read."""
    if not pair.instruction_path or (pair.instruction_text or "").strip() or blueprint is None:
        return None
    transcript = blueprint.get("agent_response")
    if not isinstance(transcript, str) or transcript.strip():  # words, or never transcribed (asr not run)
        return None
    # The transcript's doubt where Whisper heard nothing in speech, the recogniser's reason where it found none.
    why = next(
        (
            section["reason"]
            for key in ("transcript_quality", "asr")
            if isinstance(section := blueprint.get(key), dict) and section.get("reason")
        ),
        "no reason recorded",
    )
    return f"the spoken instruction {pair.instruction_path} has no recognised words ({why})"


def responses_swapped(variables: dict[str, str]) -> dict[str, str]:
    """An item's fields with those of response 1 and response 2 (names ending in _1 and _2) exchanged, for the
    swapped order: the fields follow their responses."""
    swapped = dict(variables)
    for key, value in variables.items():
        stem, _, n = key.rpartition("_")
        if stem and n in ("1", "2"):
            swapped[f"{stem}_{'2' if n == '1' else '1'}"] = value
    return swapped


def _pointwise_case(
    bench: Benchmark,
    pair: Pair,
    prompt: Prompt,
    drop: tuple[str, ...],
    blueprint: Callable[[str | None], dict | None],
    missing: dict[str, None],
    dimensions: tuple[str, ...],
    variables: dict[str, str],
    usual: str | None = None,
    unread: str | None = None,
    unasked: tuple[str, ...] = (),
) -> Case:
    """The case of an item with one answer (audio_path): one blueprint, the answer's audio in slot 1; `usual`:
    the language most of the benchmark's instructions are in; `unread`: why its instruction cannot be read, and
    `unasked` the dimensions not asked therefore."""
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
    language = instruction_language(pair.languages, instruction_bp, pair.instruction_text, benchmark=usual)
    return Case(
        pair.id,
        transcript,
        pair.instruction_text,
        (view,),
        audio,
        False,
        (answer_bp,),
        dimensions,
        variables,
        language,
        unread,
        unasked,
    )


# -- the run ----------------------------------------------------------------------------


def _resume(
    out: Path, config: dict, keys: tuple[str, ...], pair_ids: set[str], notice: Callable[[str], None]
) -> list[dict]:
    """Records of an earlier run in `out` worth keeping (status ok, a pair of this benchmark); lines that
    cannot be read (one cut short by an interruption) are told to `notice`, and their pairs judged again.

    The earlier run must have the same `keys` in its config.json.
    """
    config_path = out / runfolder.CONFIG
    if not config_path.is_file():
        if (out / runfolder.RESULTS).is_file():
            raise JudgeError(
                f"{out} holds {runfolder.RESULTS} but no {runfolder.CONFIG}, so it cannot be resumed "
                "safely; give another --out"
            )
        return []
    previous = runfolder.load_config(out)
    changed = [k for k in keys if previous.get(k, _BEFORE_THE_SETTING.get(k)) != config.get(k)]
    if changed:
        details = ", ".join(f"{k}: {previous.get(k)!r} -> {config.get(k)!r}" for k in changed)
        raise JudgeError(
            f"{out} holds a run made with other settings ({details}); give another --out or remove that folder"
        )
    earlier = runfolder.read_results(out / runfolder.RESULTS)
    for problem in earlier.problems:
        notice(f"warning: {out}: {problem}")
    return [r for r in earlier.records if r.get("status") == "ok" and r["id"] in pair_ids]


@dataclass
class _Plan:
    """What a run is made of, before any call: rubric, prompt, items, backbone, cases, cache."""

    rubric: Rubric
    prompt: Prompt
    bench: Benchmark
    pairs: list[Pair]
    backbone: Backbone
    cases: dict[str, tuple[Case, Case | None]]
    unusable: dict[str, str]
    skipped: dict[str, str]
    blueprints: Blueprints | None  # every clip's, when the prompt shows blueprints (read once); else None
    structured: bool
    cache_dir: Path
    cache: AnswerCache

    def units(self, pair_id: str, options: JudgeOptions) -> list[Unit]:
        original, swapped = self.cases[pair_id]
        orders = (original, swapped) if options.swap and swapped is not None else (original,)
        return [Unit(case, sample) for case in orders for sample in range(options.samples)]

    def caller(self, options: JudgeOptions) -> Caller:
        return make_caller(options, self.backbone, self.cache, self.prompt)


def make_caller(options: JudgeOptions, backbone: Backbone, cache: AnswerCache, prompt: Prompt) -> Caller:
    """The calls of one run (or of one batch of the Python API): cache, budget, rate limit, retries."""
    return Caller(
        backbone,
        cache,
        prompt.id,
        api_base=options.api_base,
        temperature=options.temperature,
        retry=options.retry,
        concurrency=options.concurrency,
        rpm=options.rpm,
        max_cost=options.max_cost,
    )


@dataclass
class Setup:
    """What judging is made with, before any item is read: rubric, prompt, backbone, answer cache."""

    rubric: Rubric
    prompt: Prompt
    backbone: Backbone
    structured: bool
    cache_dir: Path
    cache: AnswerCache


def _rubric_and_prompt(options: JudgeOptions) -> tuple[Rubric, Prompt]:
    _check_options(options)
    try:
        rubric = load_rubric(options.rubric)
        prompt = rubric.prompt(options.judge)
    except (RubricError, PromptError) as e:
        raise JudgeError(str(e)) from None
    if options.swap and not rubric.pairwise:
        raise JudgeError(f"--swap needs a pairwise rubric; {rubric.name} scores one answer per item")
    if rubric.fusion and options.fusion not in rubric.fusion.policies:
        raise JudgeError(
            f"--fusion {options.fusion}: the {rubric.name} rubric fuses under {', '.join(rubric.fusion.policies)}"
        )
    return rubric, prompt


def _setup(options: JudgeOptions, rubric: Rubric, prompt: Prompt, check_key: bool) -> Setup:
    backbone = _backbone(options, prompt, rubric, check_key)
    structured = backbone.structured_output(options.structured)
    cache_dir = Path(options.cache_dir) if options.cache_dir else default_cache_dir()
    cache = AnswerCache(cache_dir, read=options.use_cache, write=True)
    return Setup(rubric, prompt, backbone, structured, cache_dir, cache)


def judge_setup(options: JudgeOptions, check_key: bool = True) -> Setup:
    """Check `options`, load the rubric and its prompt, make the backbone and open the answer cache: the part
    of a run the command line and the Python API share before any benchmark is read."""
    rubric, prompt = _rubric_and_prompt(options)
    return _setup(options, rubric, prompt, check_key)


def _plan(options: JudgeOptions, check_key: bool = True) -> _Plan:
    rubric, prompt = _rubric_and_prompt(options)
    # With --skip-failed a clip that does not exist is skipped with its item, as one without a blueprint is.
    bench = load_benchmark(options.bench, check_audio=not options.skip_failed, rubric=rubric)
    pairs = bench.pairs[: options.limit] if options.limit else list(bench.pairs)
    if options.only is not None:
        pairs = [p for p in pairs if p.id in options.only]
    blueprints = read_blueprints(bench, pairs) if prompt.needs_blueprints else None
    skipped = lacking_clips(bench, pairs, blueprints) if options.skip_failed else {}
    cases, unusable = build_cases(
        bench, [p for p in pairs if p.id not in skipped], rubric, prompt, options.drop, blueprints
    )
    # After the benchmark and its cases: their errors come first, and the backbone's import (litellm's takes
    # seconds; judge starts it ahead, litellm_backbone.start_importing_litellm) goes on meanwhile.
    setup = _setup(options, rubric, prompt, check_key)
    backbone = setup.backbone
    return _Plan(
        rubric,
        prompt,
        bench,
        pairs,
        backbone,
        cases,
        unusable,
        skipped,
        blueprints,
        setup.structured,
        setup.cache_dir,
        setup.cache,
    )


def dry_run(options: JudgeOptions) -> dict:
    """What `run_judge(options)` would ask, without asking: calls after the cache, prompt tokens, price.

    Repair calls are not foreseen (they happen only for unusable answers). The answer cost is an
    upper bound: every answer at the token budget.
    """
    plan = _plan(options, check_key=False)
    backbone = plan.backbone
    report: dict[str, Any] = {
        "model": options.model,
        "pairs": len(plan.cases),
        "skipped": len(plan.skipped),
        "unusable": len(plan.unusable),
        "calls": 0,
        "cached": 0,
        "prompt_tokens": 0,
        "tokens_exact": True,
        "answer_tokens_max": 0,
        "cost_usd_max": None,
        "price": None,
    }
    if backbone.no_calls:
        report.update(price=f"no calls: {backbone.no_calls}", cost_usd_max=0.0)
        return report
    caller = plan.caller(options)
    for pair_id in plan.cases:
        for unit in plan.units(pair_id, options):
            messages = plan.prompt.render(unit.case)
            budget = token_budget(backbone, plan.rubric, unit.case)
            key = caller.key(messages, unit.sample, response_format(plan.rubric, unit.case, plan.structured), budget)
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
    """Judge every pair of `options.bench`; write the run folder; return where and what it holds.

    The run holds the folder's lock (runfolder.locked) from start to end: a second run into the same
    folder stops at once (RunFolderInUse) and says which process holds it.
    """
    out = Path(options.out) if options.out else default_out_dir(options.model)
    with runfolder.locked(out, "judge"):
        return _run_judge(replace(options, out=out), notice)


def _run_judge(options: JudgeOptions, notice: Callable[[str], None] | None = None) -> RunOutcome:
    notice = notice or (lambda message: print(message, file=sys.stderr))
    started = time.perf_counter()
    plan = _plan(options)
    rubric, prompt, bench, pairs, backbone = plan.rubric, plan.prompt, plan.bench, plan.pairs, plan.backbone
    cases, unusable, skipped, structured = plan.cases, plan.unusable, plan.skipped, plan.structured
    cache_dir = plan.cache_dir
    if options.max_cost is not None and backbone.prices_per_token() is None:
        raise JudgeError(
            f"--max-cost needs the price of {options.model}, which litellm does not know; "
            "give --price-in and --price-out (USD per million tokens)"
        )

    out = Path(options.out) if options.out else default_out_dir(options.model)
    out.mkdir(parents=True, exist_ok=True)
    config = build_config(options, bench, rubric, prompt, backbone, structured, cache_dir)
    kept = _resume(out, config, RESUME_KEYS + tuple(backbone.recorded_settings()), {p.id for p in pairs}, notice)
    done = {r["id"] for r in kept}
    write_json(out / runfolder.CONFIG, config)
    runfolder.write_results(out / runfolder.RESULTS, kept)
    if kept:
        notice(f"resuming {out}: {len(kept)} pair(s) already judged")

    writer = runfolder.ResultsWriter(out / runfolder.RESULTS)
    try:
        for pair in pairs:
            if pair.id in unusable and pair.id not in done:
                writer.append(unusable_record(pair, unusable[pair.id], options.fusion, rubric))
            if pair.id in skipped and pair.id not in done:
                writer.append(unusable_record(pair, skipped[pair.id], options.fusion, rubric, "skipped"))
        work = [(pair.id, plan.units(pair.id, options)) for pair in pairs if pair.id not in done and pair.id in cases]
        caller = plan.caller(options)
        tried = StructuredOutput(structured, may_drop=options.structured == "auto", notice=notice)
        asyncio.run(Judging(options, caller, prompt, rubric, tried, writer, total=len(work)).run(work))
    finally:
        writer.close()

    # Final file: manifest order, one line per pair, overall under this run's policy.
    by_id = runfolder.read_results(out / runfolder.RESULTS).latest()
    records = [runfolder.set_overall(by_id[p.id], options.fusion, rubric) for p in pairs if p.id in by_id]
    runfolder.write_results(out / runfolder.RESULTS, records)
    not_run = [p.id for p in pairs if p.id not in by_id]
    run_info = {
        "calls": caller.calls,
        "cache_hits": caller.cache_hits,
        "retries": caller.retries,
        "spent_usd": caller.spent_usd,
        "wall_s": round(time.perf_counter() - started, 3),
        "stopped": caller.stop_reason,
        "not_run": not_run,
        "structured_refused": tried.refused,  # why the backbone refused the response format (--structured auto)
    }
    # The clips the judge was shown: not those of skipped items, or of items the rubric cannot judge.
    responses = dict.fromkeys(
        p for pair in pairs if pair.id in cases for p in (pair.audio1_path, pair.audio2_path, pair.audio_path) if p
    )
    shown = plan.blueprints
    cues = (
        evidence.cue_availability((shown[p] for p in responses), prompt.blueprint_keys, options.drop)
        if shown is not None
        else None
    )
    if cues is not None and shown is not None:
        heard = evidence.language_summary(
            (p, cases[pair.id][0].instruction_language, shown[p])
            for pair in pairs
            if pair.id in cases
            for p in (pair.audio1_path, pair.audio2_path, pair.audio_path)
            if p
        )
        if heard:
            cues["languages"] = heard
    summary = runfolder.summarize(records, config, run_info, rubric, cues)
    write_json(out / runfolder.SUMMARY, summary)
    return RunOutcome(out=out, summary=summary, stopped=caller.stop_reason, records=records)
