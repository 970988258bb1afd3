"""The Python API: judge pairs from code, and run the commands' steps on folders.

    import trace_eval
    judge = trace_eval.Judge(model="cues")
    verdict = judge.compare("instruction.wav", "answer_a.wav", "answer_b.wav", instruction_text="Say ...")
    verdict.overall, verdict.labels, verdict.confidence

`Judge` runs the same judging loop as `python -m trace_eval judge` (trace_eval/judge/judging.py) with the same
answer cache; its clips go through Stage 1's pipeline and store (trace_eval/stage1/clips.py). The folder functions
(`blueprints`, `judge_bench`, `evaluate`, `leaderboard`) are what the commands call (`judge_bench`: the name
`trace_eval.judge` is the judge's package).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import sys
from collections.abc import AsyncGenerator, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from trace_eval.judge.options import JudgeOptions
from trace_eval.languages import code_problem
from trace_eval.rubrics import DEFAULT_RUBRIC
from trace_eval.stage1.clips import AudioInput, ClipFolder

__all__ = [
    "Judge",
    "PairInput",
    "Run",
    "Verdict",
    "blueprint",
    "blueprints",
    "evaluate",
    "judge_bench",
    "leaderboard",
]

# One pair for compare_many: (instruction, a, b), (instruction, a, b, instruction_text), or a mapping with the
# keys instruction, a, b and optionally instruction_text, instruction_language, id, model_a, model_b.
PairInput = Sequence[Any] | Mapping[str, Any]
# compare_many's progress: a bar on stderr (True), none (False), or progress(done, total) after each verdict.
Progress = bool | Callable[[int, int], Any]


@dataclass(frozen=True)
class Verdict:
    """A judge's verdict on one pair: the results.jsonl line of a run, typed.

    Labels are in the rubric's label spaces (TRACE: "1", "2", "both_good", "both_bad"); a label the judge had
    no evidence for is None, with its reason in `undetermined`.
    """

    id: str  # the pair's id: given, else derived from the clips' content and the instruction text
    status: str  # ok | invalid (the answers were no verdict) | error (the call failed) | skipped
    reason: str | None  # why the status is not ok (or why some answers were left out)
    labels: dict[str, str | None]  # dimension -> label
    overall: str | None  # the fused label under `fusion`; None for rubrics without fusion, or undetermined
    fusion: str | None  # the policy of `overall`
    fused: dict[str, str | None]  # every policy of the rubric -> its fused label
    confidence: dict[str, float | None]  # dimension (and "overall") -> how sure, 0..1; None where unknown
    confidence_source: str | None  # stated | logprobs | agreement | ...; None without a confidence
    undetermined: dict[str, str]  # dimension -> why its label is None
    reasoning: Any  # as the judge gave it
    cost_usd: float | None  # of the calls made for this pair (None: unknown price); 0 when every answer was cached
    cache_hit: bool  # every answer came from the answer cache
    tokens: dict[str, int]  # prompt and completion tokens
    latency_s: float  # seconds spent in calls (0 for cached answers)
    record: dict[str, Any] = field(repr=False)  # the whole results.jsonl line

    @classmethod
    def from_record(cls, record: dict[str, Any], policy: str | None) -> Verdict:
        return cls(
            id=str(record["id"]),
            status=record["status"],
            reason=record.get("reason"),
            labels=dict(record.get("verdicts") or {}),
            overall=record.get("overall"),
            fusion=policy if record.get("fused") else None,
            fused=dict(record.get("fused") or {}),
            confidence=dict(record.get("confidence") or {}),
            confidence_source=record.get("confidence_source"),
            undetermined=dict(record.get("undetermined") or {}),
            reasoning=record.get("reasoning"),
            cost_usd=record.get("cost_usd"),
            cache_hit=bool(record.get("cache_hit")),
            tokens=dict(record.get("tokens") or {}),
            latency_s=float(record.get("latency_s") or 0.0),
            record=record,
        )

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def winner(self) -> str | None:
        """ "1" or "2" when the overall label names a winner; None for ties and undetermined pairs."""
        return self.overall if self.overall in ("1", "2") else None


class Judge:
    """A judge of pairs of spoken answers: `compare` one pair, `compare_many` a stream of them.

    `model` is a backbone's name (`cues`: the offline rules over the blueprints) or a litellm model id
    (`openai/gpt-4o`, `openai/NAME` with `api_base` for a local server); `api_key` defaults to
    $TRACE_JUDGE_API_KEY, then the provider's own variable, as on the command line. `profile` and `device` are
    Stage 1's (`cpu`: the light models; `paper`: the paper's, on a GPU). Any other setting of `python -m
    trace_eval judge` is a keyword of the same name as JudgeOptions' (samples, swap, temperature, max_tokens,
    structured, logprobs, drop, timeout_s, rpm, max_cost, ...). Errors are those of the command line (JudgeError and its
    subclasses, with the same messages).
    """

    def __init__(
        self,
        model: str = "cues",
        rubric: str | Path = DEFAULT_RUBRIC,
        fusion: str = "cap",
        *,
        prompt: str | None = None,
        profile: str | None = "cpu",
        device: str = "auto",
        api_base: str | None = None,
        api_key: str | None = None,
        workdir: str | Path | None = None,
        cache_dir: str | Path | None = None,
        **options: Any,
    ):
        from trace_eval.judge.judging import StructuredOutput
        from trace_eval.judge.runner import judge_setup

        self.clips = ClipFolder(workdir)
        self.options = JudgeOptions(
            bench=self.clips.root,
            model=model,
            api_base=api_base,
            api_key=api_key or os.environ.get("TRACE_JUDGE_API_KEY") or None,
            rubric=rubric,
            judge=prompt,
            fusion=fusion,
            cache_dir=Path(cache_dir) if cache_dir is not None else None,
            progress=False,
            **options,
        )
        self.setup = judge_setup(self.options)
        # Under structured="auto" a backbone that refuses the response format is asked without it from then on.
        self._structured = StructuredOutput(
            self.setup.structured, may_drop=self.options.structured == "auto", notice=_notice
        )
        self.rubric = self.setup.rubric
        self.prompt = self.setup.prompt
        self.profile = profile
        self.device = device
        # (clip, declared language or "") -> blueprint, once Stage 1 gave it (a clip is its content)
        self._blueprints: dict[tuple[str, str, tuple[str, ...]], dict] = {}  # (clip, declared, expected)
        self.calls = 0  # answers asked of the backbone, over every compare
        self.cache_hits = 0  # answers read from the answer cache
        self.stage1_runs = 0  # times Stage 1 ran (for clips this judge had no blueprint of yet)
        self.blueprints_made = 0  # clips Stage 1 computed (not found current in the store)

    def __repr__(self) -> str:
        return f"Judge(model={self.options.model!r}, rubric={self.rubric.name!r}, fusion={self.options.fusion!r})"

    # -- one pair ---------------------------------------------------------------------------

    def compare(
        self,
        instruction: AudioInput | None,
        a: AudioInput,
        b: AudioInput,
        instruction_text: str | None = None,
        *,
        id: str | None = None,
        model_a: str | None = None,
        model_b: str | None = None,
        instruction_language: str | None = None,
    ) -> Verdict:
        """The verdict on one pair: `instruction` (its audio, or None with `instruction_text`), answers `a`, `b`.

        Audio is a path, the bytes of an audio file, or (samples, sample rate). `instruction_language` declares
        the instruction's language (Whisper's code: "es", "fr" ...), as a manifest's `instruction_language`
        does: its audio is transcribed in it and the answers are held to it (the answers' own language is
        detected). A code Whisper does not know raises ValueError naming the one meant. A clip without a
        blueprint (its extraction failed) raises MissingBlueprintsError naming why.
        """
        item = {"instruction": instruction, "a": a, "b": b, "instruction_text": instruction_text, "id": id}
        item |= {"model_a": model_a, "model_b": model_b, "instruction_language": instruction_language}
        return _run_sync(self._compare_one(item))

    async def acompare(
        self,
        instruction: AudioInput | None,
        a: AudioInput,
        b: AudioInput,
        instruction_text: str | None = None,
        *,
        id: str | None = None,
        model_a: str | None = None,
        model_b: str | None = None,
        instruction_language: str | None = None,
    ) -> Verdict:
        """`compare` in a running event loop."""
        item = {"instruction": instruction, "a": a, "b": b, "instruction_text": instruction_text, "id": id}
        item |= {"model_a": model_a, "model_b": model_b, "instruction_language": instruction_language}
        return await self._compare_one(item, close=False)

    async def _compare_one(self, item: dict[str, Any], close: bool = True) -> Verdict:
        stream = self._judge_stream([item], concurrency=1, progress=False, strict=True, close=close)
        try:
            return await stream.__anext__()
        finally:
            await stream.aclose()  # counts the calls, closes the backbone's connections when asked

    # -- many pairs -------------------------------------------------------------------------

    def compare_many(
        self, pairs: Iterable[PairInput], concurrency: int = 16, progress: Progress = False
    ) -> Iterator[Verdict]:
        """Verdicts on `pairs`, yielded as they finish (not in the order given: `Verdict.id` says which; a pair
        given without an id gets its position in `pairs`, "0", "1", ...). `concurrency` calls are in flight
        at once. A pair with a clip that cannot be read (a missing file, audio Stage 1 cannot decode) gives a
        "skipped" verdict whose reason names the clip as it was given; the other pairs are judged.
        `progress`: True for a progress bar on stderr, or a callable `progress(done, total)` called after
        each verdict."""
        loop = asyncio.new_event_loop()
        stream = self.acompare_many(pairs, concurrency, progress)
        try:
            while True:
                try:
                    yield loop.run_until_complete(stream.__anext__())
                except StopAsyncIteration:
                    break
        finally:
            loop.run_until_complete(stream.aclose())
            loop.run_until_complete(self.setup.backbone.close())
            _close_loop(loop)

    async def acompare_many(
        self, pairs: Iterable[PairInput], concurrency: int = 16, progress: Progress = False
    ) -> AsyncGenerator[Verdict, None]:
        """`compare_many` in a running event loop: an async iterator of verdicts as they finish."""
        items = [_pair_item(n, given) for n, given in enumerate(pairs)]
        async for verdict in self._judge_stream(items, concurrency, progress, strict=False, close=False):
            yield verdict

    async def _judge_stream(
        self, items: list[dict[str, Any]], concurrency: int, progress: Progress, strict: bool, close: bool
    ) -> AsyncGenerator[Verdict, None]:
        from trace_eval.judge.backbones import FatalBackboneError
        from trace_eval.judge.caller import RunStopped
        from trace_eval.judge.judging import Judging, Unit, unusable_record
        from trace_eval.judge.runner import JudgeError, build_cases, make_caller

        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        report = progress if callable(progress) else None
        if report is None and not isinstance(progress, bool):
            raise TypeError(f"progress is True, False or a callable progress(done, total); got {progress!r}")
        given = await asyncio.to_thread(self._pairs, items, strict)
        pairs = given.pairs
        blueprints = await asyncio.to_thread(self._stage1, given, strict)
        options = replace(self.options, concurrency=concurrency, progress=progress is True)
        setup = self.setup
        skipped = dict(given.unreadable)
        skipped |= {p.id: blueprints.failures_of(p, given) for p in pairs if blueprints.failures_of(p, given)}
        cases, unusable = build_cases(
            self._bench(pairs),
            [p for p in pairs if p.id not in skipped],
            setup.rubric,
            setup.prompt,
            options.drop,
            blueprints.view,
        )
        caller = make_caller(options, setup.backbone, setup.cache, setup.prompt)
        judging = Judging(options, caller, setup.prompt, setup.rubric, self._structured, None, total=len(pairs))

        async def judged(pair: Any) -> dict:
            if pair.id in skipped or pair.id in unusable:
                reason = skipped.get(pair.id) or unusable[pair.id]
                status = "skipped" if pair.id in skipped else "error"
                judging.progress.update(1)
                return unusable_record(pair, reason, options.fusion, setup.rubric, status)
            original, swapped = cases[pair.id]
            orders = (original, swapped) if options.swap and swapped is not None else (original,)
            units = [Unit(case, sample) for case in orders for sample in range(options.samples)]
            return await judging.judge_pair(pair.id, units)

        tasks = [asyncio.ensure_future(judged(pair)) for pair in pairs]
        try:
            for done, finished in enumerate(asyncio.as_completed(tasks), 1):
                try:
                    record = await finished
                except (FatalBackboneError, RunStopped) as stop:  # would hit every pair: authentication, model
                    raise JudgeError(caller.stop_reason or str(stop)) from None
                if report is not None:
                    report(done, len(tasks))
                yield Verdict.from_record(record, options.fusion if setup.rubric.fusion else None)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            judging.progress.close()
            self.calls += caller.calls
            self.cache_hits += caller.cache_hits
            if close:
                await setup.backbone.close()

    def _pairs(self, items: list[dict[str, Any]], strict: bool) -> _Given:
        """The items as benchmark pairs of content-addressed clips, and the name each clip was given by. A clip
        that cannot be read (a missing file, empty bytes) raises when `strict`; else its pair is unreadable,
        with the reason naming the clip as given."""
        from trace_eval.items import Pair

        given = _Given()
        for item in items:
            if item.get("a") is None or item.get("b") is None:
                raise ValueError("a pair needs both answers, a and b")
            text = item.get("instruction_text")
            if item.get("instruction") is None and not text:
                raise ValueError("a pair needs its instruction: its audio, or instruction_text")
            language = item.get("instruction_language")
            if language is not None and code_problem(language):
                raise ValueError(f"instruction_language: {code_problem(language)}")
            clips: dict[str, str | None] = {}
            names: dict[str, str] = {}
            problems = []
            for role in ("instruction", "a", "b"):
                audio = item.get(role)
                clips[role] = None
                if audio is None:
                    continue
                name = _given_name(role, audio)
                try:
                    clip = self.clips.add(audio)
                except (OSError, ValueError) as e:  # a wrong kind of value (TypeError) is the caller's bug
                    if strict:
                        raise
                    problems.append(str(e) if str(e).startswith(name) else f"{name}: {e}")
                    continue
                clips[role] = clip
                names[clip] = name
            pair_id = item.get("id")
            if pair_id is None:
                content = "|".join(str(part) for part in (clips["instruction"], clips["a"], clips["b"], text))
                pair_id = hashlib.sha256(content.encode()).hexdigest()[:16]
            pair = Pair(
                id=str(pair_id),
                instruction_path=clips["instruction"],
                instruction_text=text,
                audio1_path=clips["a"],
                audio2_path=clips["b"],
                model_a=item.get("model_a"),
                model_b=item.get("model_b"),
                languages={"instruction_language": language} if language else {},
            )
            if pair.id in given.names or pair.id in given.unreadable:
                raise ValueError(f"two pairs have the id {pair.id!r}; give each pair its own")
            given.pairs.append(pair)
            given.names[pair.id] = names
            if problems:
                given.unreadable[pair.id] = "; ".join(problems)
        return given

    def _bench(self, pairs: list[Any]) -> Any:
        from trace_eval.bench import Benchmark

        return Benchmark(root=self.clips.root.resolve(), manifest_path=self.clips.root / "manifest.json", pairs=pairs)

    def _stage1(self, given: _Given, strict: bool) -> _Stage1:
        """The blueprints of the pairs' clips: those this judge already has, Stage 1 for the others."""
        from trace_eval.judge.languages import answer_languages, heard_instruction_languages
        from trace_eval.judge.runner import Blueprints, MissingBlueprintsError, with_failed_answers

        if not self.prompt.needs_blueprints:
            return _Stage1(None, self.clips.root)
        readable = [pair for pair in given.pairs if pair.id not in given.unreadable]
        # Each clip with the language it is declared in ("": detected): a declared instruction has a blueprint
        # of its own, decoded in that language.
        declared = {clip: code for pair in readable for clip, code in pair.declared_languages().items() if code}
        # Each answer with the languages its pairs expect it in: the variant that tests them. An answer whose
        # expected language only its spoken instruction's audio tells waits until that is heard (stage1.plan.passes).
        expected: dict[str, tuple[str, ...]] = {}
        heard: dict[str, str] = {}
        failures: dict[str, str] = {}

        def variant(clip: str) -> tuple[str, tuple[str, ...]]:
            return declared.get(clip, ""), expected.get(clip, ())

        def make(clips: list[str]) -> None:
            expected.clear()
            expected.update(answer_languages(readable, heard))
            wanted = [c for c in clips if (c, *variant(c)) not in self._blueprints]
            for language, expects in dict.fromkeys(variant(c) for c in wanted):
                from trace_eval.stage1.pipeline import BlueprintOptions

                found, failed, summary = self.clips.blueprints(
                    [c for c in wanted if variant(c) == (language, expects)],
                    BlueprintOptions(device=self.device, profile=self.profile, progress=False),
                    language or None,
                    expects,
                )
                failures.update(failed)
                self.stage1_runs += 1
                self.blueprints_made += summary.computed
                self._blueprints.update({(clip, language, expects): bp for clip, bp in found.items() if bp is not None})

        clips = list(dict.fromkeys(c for pair in readable for c in pair.audio_paths()))
        waiting = [p.instruction_path for p in readable if p.instruction_path and p.waits_on_instruction()]
        if waiting:
            make(list(dict.fromkeys(waiting)))
            heard = heard_instruction_languages(readable, lambda c: self._blueprints.get((c, *variant(c))))
        make(clips)
        found = {c: self._blueprints.get((c, *variant(c))) for c in clips}
        # Clips named as the caller gave them (a path, bytes, samples), not by their copies in the clip folder.
        names = {clip: name for pair in readable for clip, name in given.names[pair.id].items()}
        said = {c: _in_words(reason, self.clips.root, c, names.get(c, c)) for c, reason in failures.items()}
        # An answer whose audio does not decode loses its pair, as on the command line.
        found = with_failed_answers(found, said, readable, self.clips.root)
        failures = {c: why for c, why in failures.items() if found.get(c) is None}
        if strict and failures:
            named = {names[c]: said[c] for c in failures}
            raise MissingBlueprintsError(self.clips.root, list(named), named)
        view = Blueprints(found, failures)
        return _Stage1(view, self.clips.root)


@dataclass
class _Given:
    """Pairs handed over from code, as pairs of clips of the clip folder."""

    pairs: list[Any] = field(default_factory=list)  # items.Pair, each clip a path in the clip folder
    names: dict[str, dict[str, str]] = field(default_factory=dict)  # pair id -> clip -> the clip as given
    unreadable: dict[str, str] = field(default_factory=dict)  # pair id -> why a clip of it could not be read


@dataclass
class _Stage1:
    view: Any  # runner.Blueprints, or None when the prompt shows no blueprint
    root: Path  # the clip folder

    def failures_of(self, pair: Any, given: _Given) -> str | None:
        """Why some clips of `pair` have no blueprint, each named as it was given; None when all have one."""
        if self.view is None:
            return None
        names = given.names.get(pair.id, {})
        reasons = [
            f"{names.get(clip, clip)}: {_in_words(self.view.failures[clip], self.root, clip, names.get(clip, clip))}"
            for clip in pair.audio_paths()
            if clip in self.view.failures
        ]
        return "; ".join(reasons) or None


def _given_name(role: str, audio: Any) -> str:
    """How a clip is named in a reason: its path as given, else what it was and which clip of the pair."""
    if isinstance(audio, (str, os.PathLike)):
        return str(audio)
    clip = "instruction" if role == "instruction" else f"answer {role}"
    if isinstance(audio, (bytes, bytearray, memoryview)):
        return f"{clip} (the {len(audio)} bytes given)"
    return f"{clip} (the samples given)"


def _in_words(reason: str, root: Path, clip: str, name: str) -> str:
    """A Stage 1 reason with the clip folder's copy (`clips/<sha256>.wav`, absolute or relative) named as given."""
    for copy in (str(root.resolve() / clip), str(root / clip), clip):
        reason = reason.replace(copy, name)
    return reason


def _pair_item(n: int, given: PairInput) -> dict[str, Any]:
    if isinstance(given, Mapping):
        unknown = set(given) - {
            "instruction",
            "a",
            "b",
            "instruction_text",
            "instruction_language",
            "id",
            "model_a",
            "model_b",
        }
        if unknown:
            raise ValueError(f"pair {n}: unknown keys {', '.join(sorted(unknown))}")
        item = dict(given)
    elif isinstance(given, Sequence) and not isinstance(given, (str, bytes)) and len(given) in (3, 4):
        item = dict(zip(("instruction", "a", "b", "instruction_text"), given))
    else:
        raise ValueError(f"pair {n}: expected (instruction, a, b[, instruction_text]) or a mapping")
    item.setdefault("id", str(n))
    return item


def _close_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Close `loop` as asyncio.run closes its own: tasks libraries left running (litellm's logging worker)
    cancelled and awaited first."""

    async def cancel_the_rest() -> None:
        pending = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    loop.run_until_complete(cancel_the_rest())
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.close()


def _notice(message: str) -> None:
    print(message, file=sys.stderr)


def _run_sync(coroutine: Any) -> Any:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    coroutine.close()
    raise RuntimeError("compare() was called inside a running event loop: await acompare() there instead")


# -- one clip ------------------------------------------------------------------------------


def blueprint(
    audio: AudioInput, *, profile: str | None = "cpu", device: str = "auto", workdir: str | Path | None = None
) -> dict:
    """Stage 1 on one clip: its blueprint (the JSON document `show` prints), through the pipeline and store.

    A clip Stage 1 cannot read raises MissingBlueprintsError with the reason.
    """
    from trace_eval.judge.runner import MissingBlueprintsError
    from trace_eval.stage1.pipeline import BlueprintOptions

    clips = ClipFolder(workdir)
    clip = clips.add(audio)
    found, failures, _ = clips.blueprints([clip], BlueprintOptions(device=device, profile=profile, progress=False))
    if found[clip] is None:
        raise MissingBlueprintsError(clips.root, [clip], failures)
    return found[clip]  # type: ignore[return-value]


# -- folders: the commands' steps ------------------------------------------------------------


@dataclass
class Run:
    """A judge run folder: what `judge` wrote, read back."""

    path: Path  # a str or any os.PathLike is taken too
    summary: dict[str, Any] = field(default_factory=dict, repr=False)
    stopped: str | None = None  # why the run stopped early

    def __post_init__(self) -> None:
        self.path = Path(self.path)

    def verdicts(self) -> list[Verdict]:
        """Every pair's verdict (the newest line of each pair in results.jsonl); RunFolderError when the folder
        is not a run folder."""
        from trace_eval.judge.runfolder import read_run_folder

        folder = read_run_folder(self.path)
        policy = folder.config.get("fusion")
        return [Verdict.from_record(r, policy) for r in folder.records.values()]

    def preferences(
        self,
        out: str | Path,
        *,
        trusted_only: bool = False,
        calibration: str | Path | None = None,
        on: str = "overall",
        overwrite: bool = False,
    ) -> Any:
        """Write the verdicts that name a winner as chosen/rejected pairs (trace_eval/export.py); returns what
        was written (`export.Preferences`). An `out` that holds anything is refused unless `overwrite`."""
        from trace_eval.export import export_preferences

        return export_preferences(
            self.path, out, trusted_only=trusted_only, calibration=calibration, on=on, overwrite=overwrite
        )


def blueprints(
    bench: str | Path,
    *,
    profile: str | None = None,
    device: str = "auto",
    engine: str = "local",
    only: list[str] | None = None,
    force: bool = False,
    progress: bool = True,
    one_model_at_a_time: bool = False,
    **settings: Any,
) -> Any:
    """`python -m trace_eval blueprints BENCH`: Stage 1 over a benchmark folder; returns its RunSummary."""
    from trace_eval.stage1.pipeline import BlueprintOptions, run_blueprints, run_one_model_at_a_time

    options = BlueprintOptions(
        only=only, device=device, force=force, profile=profile, progress=progress, engine=engine, **settings
    )
    return run_one_model_at_a_time(bench, options) if one_model_at_a_time else run_blueprints(bench, options)


def judge_bench(bench: str | Path, model: str = "cues", *, out: str | Path | None = None, **options: Any) -> Run:
    """`python -m trace_eval judge --bench BENCH`: every pair of a benchmark into a run folder (resumed when
    `out` holds one made with the same settings). Keywords are JudgeOptions' fields."""
    from trace_eval.judge.runner import run_judge

    outcome = run_judge(
        JudgeOptions(bench=Path(bench), model=model, out=Path(out) if out else None, **options),
        notice=_notice,
    )
    return Run(outcome.out, outcome.summary, outcome.stopped)


def evaluate(
    runs: str | Path | Sequence[str | Path],
    *,
    out: str | Path | None = None,
    labels: str | Path | None = None,
    rubric: str | None = None,
    fusion: str | None = None,
    resamples: int = 2000,
    seed: int = 0,
    calibration: str | Path | None = None,
) -> Any:
    """`python -m trace_eval evaluate RUNDIR...`: agreement with the human labels; writes metrics.json,
    report.md and report.html into `out` (default: RUNDIR/evaluation for one run) and returns their paths and
    the metrics (`evaluation.EvaluationFiles`)."""
    from trace_eval.evaluation import BootstrapSettings, EvaluationError, evaluate_folders, rubric_of_runs

    folders: list[str | Path] = [str(runs)] if isinstance(runs, (str, Path)) else [str(r) for r in runs]
    if out is None and len(folders) != 1:
        raise EvaluationError("several runs need out=DIR for the shared report")
    chosen = rubric_of_runs([str(f) for f in folders], rubric)
    if fusion and chosen.fusion is None:
        raise EvaluationError(f"fusion re-fuses the overall label; the {chosen.name} rubric has none")
    return evaluate_folders(
        folders,
        Path(out) if out else Path(folders[0]) / "evaluation",
        chosen,
        labels=str(labels) if labels else None,
        policy=fusion,
        settings=BootstrapSettings(resamples=resamples, seed=seed),
        calibration=Path(calibration) if calibration else None,
    )


def leaderboard(
    runs: str | Path | Sequence[str | Path] = (),
    *,
    bench: str | Path | None = None,
    by: str | list[str] = "overall",
    fusion: str | None = None,
    baseline: str | None = None,
    resamples: int = 2000,
    seed: int = 0,
    trusted_only: bool = False,
    calibration: str | Path | None = None,
    out: str | Path | None = None,
) -> dict[str, Any]:
    """`python -m trace_eval leaderboard RUNDIR...`: the systems ranked by each run and by the human labels
    (what leaderboard.json holds); written with its tables and pictures into `out` when given."""
    from trace_eval.evaluation import BootstrapSettings
    from trace_eval.evaluation.leaderboard import leaderboard as build
    from trace_eval.evaluation.leaderboard import write_leaderboard

    folders = [str(runs)] if isinstance(runs, (str, Path)) else [str(r) for r in runs]
    board = build(
        folders,
        str(bench) if bench else None,
        by,
        fusion,
        baseline,
        BootstrapSettings(resamples=resamples, seed=seed),
        trusted_only=trusted_only,
        calibration=calibration,
    )
    if out is not None:
        write_leaderboard(board, Path(out))
    return board
