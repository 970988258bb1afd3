"""`python -m trace_eval sessions DIR`: the timing of recorded sessions, or Full-Duplex-Bench's tasks on its folders."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

HELP = (
    "timing of full-duplex sessions (a folder of session folders: latency, jump-ins, barge-ins, backchannels, "
    "overlap), or Full-Duplex-Bench's v1 tasks on its sample folders, as its scripts compute or as its tasks mean"
)


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("folder", metavar="DIR", help="a session folder, or a folder of them (searched below)")
    p.add_argument(
        "--compat",
        choices=("full-duplex-bench",),
        help="give the figures Full-Duplex-Bench's own scripts print, quirks included (docs/realtime.md lists "
        "each difference); default: what its tasks mean",
    )
    p.add_argument("--out", metavar="FILE", help="write everything (each session's timeline or score) as JSON")


def run(args: argparse.Namespace) -> int:
    from trace_eval.sessions.full_duplex_bench import TASKS

    root = Path(args.folder)
    if not root.is_dir():
        print(f"error: {root}: not a folder", file=sys.stderr)
        return 2
    annotated = sorted({p.parent for name in TASKS for p in root.rglob(name) if (p.parent / "output.json").is_file()})
    if annotated:
        result = _benchmark(annotated, compat=args.compat is not None)
    elif args.compat:
        print(f"error: {root}: no Full-Duplex-Bench sample (output.json beside a task annotation)", file=sys.stderr)
        return 2
    else:
        result = _timing(root)
        if result is None:
            return 1
    if args.out:
        from trace_eval.io import write_json

        write_json(args.out, result)
        print(f"written: {args.out}")
    return 0


def _benchmark(folders: list[Path], compat: bool) -> dict[str, Any]:
    """Full-Duplex-Bench's samples, task by task; a sample that cannot be scored is listed with its reason."""
    from trace_eval.sessions import SessionError
    from trace_eval.sessions.full_duplex_bench import score_sample, summarise, task_of

    by_task: dict[str, list[dict[str, Any]]] = {}
    failed = []
    for folder in folders:
        try:
            task = task_of(folder)
            by_task.setdefault(task, []).append(score_sample(folder, task, compat=compat))
        except SessionError as e:
            failed.append({"sample": str(folder), "reason": str(e)})
    result: dict[str, Any] = {"mode": "full-duplex-bench" if compat else "default", "tasks": {}, "failed": failed}
    for task, samples in sorted(by_task.items()):
        summary = summarise(task, samples, compat=compat)
        result["tasks"][task] = {"summary": summary, "samples": samples}
        print(f"{task} ({len(samples)} sample{'' if len(samples) == 1 else 's'}, {result['mode']})")
        for key, value in summary.items():
            print(f"  {key:24} {_shown(value)}")
    for f in failed:
        print(f"not scored: {f['sample']}: {f['reason']}", file=sys.stderr)
    return result


def _timing(root: Path) -> dict[str, Any] | None:
    from trace_eval.sessions import SessionError, make_timeline, read_session, timing_metrics

    folders = sorted({p.parent for p in root.rglob("*.wav")})
    timelines, failed = [], []
    for folder in folders:
        try:
            timelines.append(make_timeline(read_session(folder)))
        except SessionError as e:
            failed.append({"session": str(folder), "reason": str(e)})
    for f in failed:
        print(f"not read: {f['session']}: {f['reason']}", file=sys.stderr)
    if not timelines:
        print(f"error: {root}: no session read", file=sys.stderr)
        return None
    metrics = timing_metrics(timelines)
    print(f"{len(timelines)} sessions")
    for key, value in metrics.items():
        if key not in ("sessions", "definitions"):
            print(f"  {key:32} {_shown(value)}")
    return {"metrics": metrics, "timelines": [t.record() for t in timelines], "failed": failed}


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
