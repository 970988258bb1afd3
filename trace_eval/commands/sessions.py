"""`python -m trace_eval sessions DIR`: the timing of recorded sessions, or Full-Duplex-Bench's tasks on its folders."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

HELP = (
    "timing of full-duplex sessions (a folder of session folders: latency, jump-ins, barge-ins, backchannels, "
    "overlap), Full-Duplex-Bench's v1 tasks on its sample folders (as its scripts compute or as its tasks mean), "
    "or systems judged pairwise on interaction and ranked (--judge)"
)


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("folder", metavar="DIR", help="a session folder, or a folder of them (searched below)")
    p.add_argument(
        "--compat",
        choices=("full-duplex-bench", "flexi"),
        help="give the figures Full-Duplex-Bench's (or FLEXI's) own scripts print on its folders, quirks included "
        "(docs/realtime.md lists each difference); default: what the tasks mean",
    )
    p.add_argument(
        "--flexi-latency",
        type=float,
        default=0.0,
        metavar="S",
        help="--compat flexi: the model's turn-taking latency FLEXI's pause handling lengthens a pause by (its "
        "--latency; default %(default)s)",
    )
    p.add_argument(
        "--task",
        choices=("pause_handling", "smooth_turn_taking", "user_interruption", "backchannel", "timing", "behaviour"),
        help="score every folder of two channels (input.wav, output.wav) below DIR as this Full-Duplex-Bench task's "
        "sample: timing is v1.5's stop and response latencies, behaviour v1.5's C_* tags from --model; default: "
        "each folder's task from its annotation",
    )
    p.add_argument(
        "--checkout",
        metavar="PATH",
        help="a checkout of Full-Duplex-Bench: the prompt --model rates interruptions with, and the backchannel "
        "task's reference (its v1_v1.5/evaluation/icc_gt_distribution.json) unless --reference names another",
    )
    p.add_argument(
        "--model",
        metavar="MODEL",
        help="rate each answer after an interruption (0-5) with this litellm model, as Full-Duplex-Bench asks GPT-4 "
        "Turbo (its prompt read from --checkout; in the default, the answer's words need --words); without it, "
        "compat reads each sample's stored rating.json",
    )
    p.add_argument(
        "--reference",
        metavar="PATH",
        help="Full-Duplex-Bench's backchannel task: its reference distributions (v1_v1.5/evaluation/"
        "icc_gt_distribution.json of a checkout); the sample folders named by a speaker id it holds, with no task "
        "annotation, are scored as that task's",
    )
    p.add_argument(
        "--judge",
        metavar="MODEL",
        help="judge systems pairwise on interaction and rank them: DIR holds one folder per system, each with "
        "the same session folders (the same user channels), or a sessions.jsonl naming each session's system; "
        "MODEL is cues (offline, from the timelines) or a "
        "litellm model id",
    )
    p.add_argument("--api-base", metavar="URL", help="--judge with an LLM: its server (e.g. a local one)")
    p.add_argument(
        "--pairs",
        metavar="BENCH",
        help="write every pair of systems on a session both have (DIR/<system>/<session>/) as a benchmark folder "
        "for the interaction rubric: judge, label, leaderboard and evaluate take it like any other",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        help="--pairs: seeds the draw of which system of each pair is response 1 (recorded in BENCH/seating.json; "
        "default: %(default)s)",
    )
    p.add_argument(
        "--labels",
        metavar="FILE",
        help="--judge: people's labels, JSON lines {sample, system_1, system_2, interaction}: the judge's "
        "agreement with them",
    )
    p.add_argument(
        "--words",
        action="store_true",
        help="transcribe both channels with Stage 1's recogniser (multilingual Whisper): words with times in every "
        "timeline, shown to an LLM judge, and used by Full-Duplex-Bench's default scores instead of its "
        "English-only transcripts",
    )
    p.add_argument(
        "--profile",
        choices=("paper", "cpu"),
        default=None,
        help="--words: the recogniser's model set, as for blueprints (default: paper with CUDA, else cpu)",
    )
    p.add_argument(
        "--language",
        metavar="CODE",
        help="--words: the language spoken on both channels (a code Whisper knows: en, es, ...); default: "
        "detected per channel",
    )
    p.add_argument(
        "--store",
        metavar="DIR|URL",
        default=None,
        help="where timelines are kept, made once per session and settings: the blueprint store's timelines/ "
        "(default: $TRACE_STORE, else ~/.cache/trace-eval/blueprints)",
    )
    p.add_argument(
        "--plot",
        metavar="PNG",
        help="write a picture of each system's response latencies (every answer a dot, the median a bar), where "
        "the sessions name their systems (DIR/<system>/<session>/ or a sessions.jsonl); else of all sessions",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--out", metavar="FILE", help="write everything (each session's timeline or score) as JSON")
    p.add_argument(
        "--page",
        metavar="DIR",
        help="write a page that draws each session's two channels on one time axis and plays its audio from any "
        "point, with the pairs' verdicts beside the drawings under --judge (opens from disk: DIR/index.html)",
    )
    _thresholds(p)


def _thresholds(p: argparse.ArgumentParser) -> None:
    """An option for every threshold of TimelineSettings and InteractionSettings, its help read from the field."""
    from dataclasses import fields

    from trace_eval.sessions.interaction import InteractionSettings
    from trace_eval.sessions.timeline import TimelineSettings

    for title, settings in (
        ("timeline thresholds (docs/realtime.md; recorded in every timeline)", TimelineSettings),
        ("the offline judge's thresholds (--judge cues, --pairs; recorded in the output)", InteractionSettings),
    ):
        group = p.add_argument_group(title)
        for f in fields(settings):
            optional = f.default is None or "None" in str(f.type)
            group.add_argument(
                "--" + f.name.removesuffix("_s").replace("_", "-"),
                dest=f.name,
                type=_number_or_none if optional else float,
                default=f.default,
                metavar="S" if f.name.endswith("_s") else "X",
                help=f"{f.metadata['help']} (default: %(default)s{', none: off' if optional else ''})",
            )


def _number_or_none(text: str) -> float | None:
    return None if text.lower() == "none" else float(text)


def settings_of(args: argparse.Namespace, settings: type) -> Any:
    """The TimelineSettings or InteractionSettings the options give."""
    from dataclasses import fields

    return settings(**{f.name: getattr(args, f.name) for f in fields(settings)})


def run(args: argparse.Namespace) -> int:
    from trace_eval.languages import code_problem

    root = Path(args.folder)
    if not root.is_dir():
        print(f"error: {root}: not a folder", file=sys.stderr)
        return 2
    if args.language and code_problem(args.language):
        print(f"error: --language {args.language}: {code_problem(args.language)}", file=sys.stderr)
        return 2
    if (args.language or args.profile) and not args.words:
        print("error: --language and --profile choose the recogniser of --words; add --words", file=sys.stderr)
        return 2
    from trace_eval.sessions import SessionError
    from trace_eval.sessions.interaction import LLMSetupError

    try:
        args.timelines = Timelines(args)
        result = _judged(root, args) if args.judge or args.pairs else _scored(root, args)
    except SessionError as e:  # a manifest or labels file that is not one
        print(f"error: {e}", file=sys.stderr)
        return 2
    except LLMSetupError as e:  # --model's key, URL or name: every call would fail the same way
        print(f"error: {e}", file=sys.stderr)
        return 1
    if result is None:
        return 1
    if args.out:
        from trace_eval.io import write_json

        write_json(args.out, result)
        print(f"written: {args.out}")
    if args.page:
        from trace_eval.sessions.page import page_of_run

        return page_of_run(result, args.page)
    return 0


def _scored(root: Path, args: argparse.Namespace) -> dict[str, Any] | None:
    from trace_eval.sessions import SessionError
    from trace_eval.sessions.full_duplex_bench import TASKS

    # The benchmark's layout: input.wav and output.wav (a lab's outputs, with or without the benchmark's
    # transcript output.json), a sample where the task's annotation is beside them.
    folders = sorted(p.parent for p in root.rglob("output.wav") if (p.parent / "input.wav").is_file())
    annotated = [f for f in folders if any((f / name).is_file() for name in TASKS)]
    if args.task:
        annotated = folders
    try:
        reference, rater, tagger = _reference(args), _rater(args), _tagger(args)
    except SessionError as e:
        print(f"error: {e}", file=sys.stderr)
        return None
    if reference is not None:
        annotated += [f for f in folders if f not in annotated and f.name in reference]
    if annotated:
        unannotated = [f for f in folders if f not in annotated]
        chosen = (args.compat, args.timelines, args.flexi_latency, reference, args.task, rater, tagger)
        return _benchmark(annotated, unannotated, *chosen)
    if args.task:
        print(f"error: {root}: no folder with input.wav and output.wav", file=sys.stderr)
        return None
    if args.compat:
        print(f"error: {root}: no Full-Duplex-Bench sample (output.wav beside a task annotation)", file=sys.stderr)
        return None
    return _timing(root, args.timelines, args.plot)


def _reference(args: argparse.Namespace) -> dict[str, list[float]] | None:
    """The backchannel task's reference distributions: --reference, else the --checkout's, else none."""
    from trace_eval.sessions.backchannel import REFERENCE, read_reference

    if args.reference:
        return read_reference(args.reference)
    if args.checkout and (Path(args.checkout) / "v1_v1.5" / "evaluation" / REFERENCE).is_file():
        return read_reference(Path(args.checkout) / "v1_v1.5" / "evaluation" / REFERENCE)
    return None


def _tagger(args: argparse.Namespace) -> Any:
    """The behaviour task's model (--model) with the --checkout's instruction; None for any other task."""
    from trace_eval.sessions import SessionError

    if args.task != "behaviour":
        return None
    if not (args.model and args.checkout):
        raise SessionError("--task behaviour asks a model with Full-Duplex-Bench's instruction: add --model MODEL "
                           "and --checkout PATH")  # fmt: skip
    from trace_eval.sessions.behaviour import Tagger
    from trace_eval.sessions.interaction import llm_complete

    complete = llm_complete(args.model, args.api_base)
    return Tagger(args.checkout, complete, args.model, args.timelines.recogniser, args.language)


def _rater(args: argparse.Namespace) -> Any:
    """--model's rater of answers after interruptions, with the --checkout's prompt; None without --model."""
    from trace_eval.sessions import SessionError

    if not args.model or args.task == "behaviour":
        return None
    if not args.checkout:
        raise SessionError("--model rates with Full-Duplex-Bench's prompt, read from its checkout: add --checkout PATH")
    from trace_eval.sessions.interaction import llm_complete
    from trace_eval.sessions.interruption_rating import Rater, read_prompt

    return Rater(read_prompt(args.checkout), llm_complete(args.model, args.api_base), args.model)


class Timelines:
    """Each session's timeline, from the store where it was made before (with the words of both channels where
    --words asks); what was read, with its folder, for the output file."""

    def __init__(self, args: argparse.Namespace):
        from trace_eval.sessions.store import TimelineStore
        from trace_eval.sessions.timeline import TimelineSettings
        from trace_eval.sessions.words import stage1_recogniser

        self.store = TimelineStore(args.store)
        self.settings = settings_of(args, TimelineSettings)
        self.language = args.language
        self.recogniser = stage1_recogniser(args.profile) if args.words else None
        self.quiet = args.quiet
        self.read: list[dict[str, Any]] = []
        self.cached = 0

    def of(self, entry):
        """The timeline of a session (a manifest.SessionEntry)."""
        from trace_eval.sessions.store import timeline_of

        timeline, cached = timeline_of(
            entry.read(), self.settings, recogniser=self.recogniser, language=self.language, store=self.store
        )
        self.cached += cached
        self.read.append({"system": entry.system, "sample": entry.sample, "folder": entry.where,
                          "source": entry.record(), "from_store": cached, "timeline": timeline.record()})  # fmt: skip
        return timeline

    def progress(self, items: list, what: str):
        from tqdm import tqdm

        return tqdm(items, unit="session", desc=what, disable=self.quiet or len(items) < 2, dynamic_ncols=True)


def _benchmark(
    folders: list[Path],
    unannotated: list[Path],
    compat: str | None,
    timelines: Timelines,
    latency_s: float,
    reference: dict[str, list[float]] | None = None,
    task: str | None = None,
    rater: Any = None,
    tagger: Any = None,
) -> dict[str, Any]:
    """Full-Duplex-Bench's samples, task by task (a folder without an annotation, named by a speaker of the
    backchannel `reference`, is that task's; every folder is `task`'s where it is given); a sample that cannot be
    scored, or a folder of the layout without its annotation, is listed with its reason."""
    from trace_eval.sessions import SessionError
    from trace_eval.sessions.backchannel import TASK as BACKCHANNEL
    from trace_eval.sessions.full_duplex_bench import TASKS, score_sample, script_pairing, summarise, task_of
    from trace_eval.sessions.manifest import SessionEntry

    by_task: dict[str, list[dict[str, Any]]] = {}
    forced = task
    # The benchmark's smooth turn-taking script pairs its i-th output with its i-th annotation, so a folder
    # without one shifts every pair after it: compat reproduces that pairing (each record notes it), the default
    # names the folder and scores the others as they are.
    paired: dict[Path, Path | None] = {}
    if compat == "full-duplex-bench":
        for parent in {f.parent for f in unannotated}:
            if any((f / "turn_taking.json").is_file() for f in folders if f.parent == parent):
                pairs = script_pairing(parent)
                paired |= {f: pairs.get(f) for f in [*folders, *unannotated] if f.parent == parent}
    failed = [
        {"sample": str(f), "reason": "no task annotation (pause.json, turn_taking.json or interrupt.json) beside "
         "its input.wav and output.wav: not a sample of any task"}
        for f in unannotated if f not in paired
    ]  # fmt: skip
    for folder in timelines.progress(sorted([*folders, *paired.keys() - set(folders)]), "samples"):
        try:
            if folder in paired:
                if paired[folder] is None:
                    raise SessionError("the benchmark's script leaves it out: more outputs than annotations")
                by_task.setdefault("smooth_turn_taking", []).append(
                    score_sample(folder, "smooth_turn_taking", compat=compat, annotation_from=paired[folder])
                )
                continue
            annotated = any((folder / name).is_file() for name in TASKS)
            task = forced or (task_of(folder) if annotated or reference is None else BACKCHANNEL)
            entry = SessionEntry(folder.name, folder.name, None, folder=folder)
            # behaviour's default transcribes its four recordings itself
            timeline = None if compat or task == "behaviour" else timelines.of(entry)
            by_task.setdefault(task, []).append(
                score_sample(
                    folder,
                    task,
                    compat=compat,
                    timeline=timeline,
                    latency_s=latency_s,
                    reference=reference,
                    rater=rater,
                    tagger=tagger,
                )
            )
        except SessionError as e:
            failed.append({"sample": str(folder), "reason": str(e)})
    mode = compat or "default"
    result: dict[str, Any] = {"mode": mode, "tasks": {}, "sessions": timelines.read, "failed": failed}
    for task, samples in sorted(by_task.items()):
        summary = summarise(task, samples, compat=compat)
        result["tasks"][task] = {"summary": summary, "samples": samples}
        print(f"{task} ({len(samples)} sample{'' if len(samples) == 1 else 's'}, {result['mode']})")
        for key, value in summary.items():
            print(f"  {key:24} {_shown(value)}")
    for f in failed:
        print(f"not scored: {f['sample']}: {f['reason']}", file=sys.stderr)
    return result


def _timing(root: Path, made: Timelines, plot: str | None = None) -> dict[str, Any] | None:
    from trace_eval.sessions import SessionError, timing_metrics
    from trace_eval.sessions.manifest import find_sessions

    entries = find_sessions(root)
    if _one_folder_a_system(root, entries):
        entries = find_sessions(root, by_system=True)
    timelines, failed = [], []
    systems: dict[str, list[Any]] = {}
    for entry in made.progress(entries, "sessions"):
        try:
            timelines.append(made.of(entry))
        except SessionError as e:
            failed.append({"session": entry.where, "reason": str(e)})
            continue
        if entry.system is not None:
            systems.setdefault(entry.system, []).append(timelines[-1])
    for f in failed:
        print(f"not read: {f['session']}: {f['reason']}", file=sys.stderr)
    if not timelines:
        print(f"error: {root}: no session read", file=sys.stderr)
        return None
    metrics = timing_metrics(timelines)
    print(f"{len(timelines)} sessions ({made.cached} timelines from the store at {made.store.location})")
    for key, value in metrics.items():
        if key not in ("sessions", "definitions"):
            print(f"  {key:32} {_shown(value)}")
    result: dict[str, Any] = {"metrics": metrics, "sessions": made.read, "failed": failed}
    if systems:
        result["systems"] = {name: timing_metrics(found) for name, found in sorted(systems.items())}
        _side_by_side(result["systems"])
    if plot:
        from trace_eval.sessions.metrics import latency_plot

        latency_plot(systems or {"all sessions": timelines}, plot)
        print(f"written: {plot}")
    return result


def _one_folder_a_system(root: Path, entries: list[Any]) -> bool:
    """Whether the folders name the systems: every session two levels down (DIR/<system>/<session>/), under two
    or more first-level folders that share a session's name."""
    parts = [Path(e.id).parts for e in entries if e.system is None and e.folder is not None]  # relative to DIR
    if len(parts) != len(entries) or not parts or any(len(p) != 2 for p in parts):
        return False
    by_sample: dict[str, set[str]] = {}
    for system, sample in parts:
        by_sample.setdefault(sample, set()).add(system)
    return len({p[0] for p in parts}) >= 2 and any(len(found) >= 2 for found in by_sample.values())


def _side_by_side(systems: dict[str, dict[str, Any]]) -> None:
    """Every metric per system, a column each."""
    names = list(systems)
    width = max(14, *(len(n) + 2 for n in names))
    print(f"per system ({len(names)}):")
    print(f"  {'':32}" + "".join(f"{n:>{width}}" for n in names))
    for key in systems[names[0]]:
        if key in ("sessions", "definitions"):
            continue
        cells = [_brief(systems[n][key]) for n in names]
        print(f"  {key:32}" + "".join(f"{c:>{width}}" for c in cells))
    print(f"  {'sessions':32}" + "".join(f"{systems[n]['sessions']:>{width}}" for n in names))


def _brief(value: Any) -> str:
    """A figure in a few characters: a distribution's median (n), a rate's k/n."""
    if isinstance(value, dict) and "median" in value:
        return "-" if not value["n"] else f"{value['median']:.3f} ({value['n']})"
    if isinstance(value, dict) and "mean" in value and "std" in value:  # a benchmark script's "mean ± std"
        return f"{value['mean']:.4f} ± {value['std']:.4f}"
    if isinstance(value, dict) and "rate" in value:
        return f"{value['k']}/{value['n']}"
    return "-" if value is None else f"{value:.4g}" if isinstance(value, float) else str(value)


def _shown(value: Any) -> str:
    """A figure as a person reads it: a distribution as its median, interval, 90th percentile and n."""
    if isinstance(value, dict) and "median" in value:
        if not value["n"]:
            return "n 0"
        interval = value["median_interval"]
        around = f" [{interval[0]}, {interval[1]}]" if interval else ""
        return f"median {value['median']}{around}, p90 {value['p90']}, n {value['n']}"
    if isinstance(value, dict) and "rate" in value:
        interval = value["interval"]
        around = f" [{interval[0]}, {interval[1]}]" if interval else ""
        return f"{value['k']} of {value['n']}" + (f" = {value['rate']}{around}" if value["n"] else "")
    return "null" if value is None else f"{value:.4g}" if isinstance(value, float) else str(value)


def _judged(root: Path, args: argparse.Namespace) -> dict[str, Any] | None:
    """Every pair of systems on every session they share, judged on interaction; the systems ranked."""
    from dataclasses import asdict

    from trace_eval.sessions import SessionError
    from trace_eval.sessions.interaction import (
        InteractionSettings,
        LLMSetupError,
        agreement,
        cues_verdict,
        llm_complete,
        llm_verdict,
        pairs_of,
        rank,
        read_labels,
    )
    from trace_eval.sessions.manifest import find_sessions

    made: Timelines = args.timelines
    judging = settings_of(args, InteractionSettings)
    systems: dict[str, dict[str, Any]] = {}
    failed = []
    entries = find_sessions(root, by_system=True)
    unnamed = [e.id for e in entries if e.system is None]
    if unnamed:
        print(f"error: {root}: the manifest names no system for {', '.join(unnamed[:5])}", file=sys.stderr)
        return None
    for entry in made.progress(entries, "sessions"):
        try:
            systems.setdefault(entry.system, {})[entry.sample] = made.of(entry)
        except SessionError as e:
            failed.append({"session": entry.where, "reason": str(e)})
    for f in failed:
        print(f"not read: {f['session']}: {f['reason']}", file=sys.stderr)
    pairs = pairs_of(systems)
    if not pairs:
        print(f"error: {root}: no session that two systems share (expected DIR/<system>/<session>/)", file=sys.stderr)
        return None
    if args.pairs:
        from trace_eval.sessions.pairs import write_pairs

        readers = {(e.system or "", e.sample): e for e in entries}
        labels = read_labels(Path(args.labels)) if args.labels else {}
        count = write_pairs(Path(args.pairs), pairs, systems, readers, labels, judging, args.seed)
        print(f"written: {args.pairs}: {count} interaction pairs (judge them: python -m trace_eval judge --bench "
              f"{args.pairs} --rubric interaction --model cues)")  # fmt: skip
        if not args.judge:
            return {"pairs": args.pairs, "sessions": made.read, "failed": failed}
    try:
        complete = None if args.judge == "cues" else llm_complete(args.judge, args.api_base)
    except LLMSetupError as e:
        print(f"error: {e}", file=sys.stderr)
        return None
    verdicts = []
    for sample, (a, b) in pairs:
        first, second = systems[a][sample], systems[b][sample]
        if complete is None:
            verdicts.append(cues_verdict(sample, (a, b), first, second, judging))
        else:
            try:
                verdicts.append(llm_verdict(sample, (a, b), first, second, complete, args.judge))
            except LLMSetupError as e:  # a key, a URL or a model name: every call would fail the same way
                print(f"error: {e}", file=sys.stderr)
                return None
    table = rank(verdicts)
    decided = sum(v.label is not None for v in verdicts)
    print(f"interaction, judged by {args.judge}: {decided} of {len(verdicts)} pairs decided")
    for v in verdicts:
        if v.label is None:
            print(f"  undetermined: {v.sample} {v.systems[0]} vs {v.systems[1]}: {v.why}")
    print(f"  {'rank':>4} {'system':20} {'score':>7} {'wins':>5} {'good':>5} {'bad':>5} {'losses':>6}")
    for row in table:
        print(f"  {row['rank']:>4} {row['system']:20} {row['score']:7.1f} {row['wins']:5} {row['both_good']:5} "
              f"{row['both_bad']:5} {row['losses']:6}")  # fmt: skip
    result: dict[str, Any] = {"judge": args.judge, "ranking": table, "verdicts": [v.record() for v in verdicts]}
    result["settings"] = {"timeline": asdict(made.settings), "judge": asdict(judging)}
    result["sessions"] = made.read
    result["failed"] = failed
    if args.labels:
        result["agreement"] = agreement(verdicts, read_labels(Path(args.labels)))
        agreement = result["agreement"]
        print(f"  agreement with {args.labels}: {_shown(agreement)}")
    return result
