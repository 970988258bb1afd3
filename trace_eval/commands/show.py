"""`python -m trace_eval show AUDIO_FILE`: print the stored blueprint of one file."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HELP = "print the stored blueprint of one audio file as JSON (computes nothing)"


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("audio", metavar="AUDIO_FILE")
    p.add_argument(
        "--bench",
        metavar="DIR",
        help="benchmark folder holding the blueprints (default: the nearest "
        "folder above the file with a manifest or a blueprints/ store)",
    )


def _find_bench(audio: Path) -> Path | None:
    for folder in audio.resolve().parents:
        if any((folder / name).exists() for name in ("blueprints", "manifest.json", "manifest.jsonl")):
            return folder
    return None


def run(args: argparse.Namespace) -> int:
    from trace_eval.stage1.store import BlueprintStore

    audio = Path(args.audio)
    if not audio.is_file():
        print(f"error: {audio}: file not found", file=sys.stderr)
        return 2
    bench = Path(args.bench) if args.bench else _find_bench(audio)
    if bench is None:
        print(f"error: no benchmark folder found above {audio}; pass --bench DIR", file=sys.stderr)
        return 1
    store = BlueprintStore(bench)
    relative = None
    try:
        relative = str(audio.resolve().relative_to(store.root))
        blueprint = store.get_by_path(relative)
    except ValueError:  # the file lies outside the benchmark folder: look it up by content
        from trace_eval.audio import sha256_file

        blueprint = store.get(sha256_file(audio))
    if blueprint is None:
        failure = store.recorded_failures().get(relative) if relative else None
        if failure:  # making blueprints again fails the same way
            print(
                f"error: no blueprint for {audio}: it failed when blueprints were made ({failure}); repair or "
                "replace the file, or remove its item from the manifest (judge --skip-failed judges the rest)",
                file=sys.stderr,
            )
        else:
            print(
                f"error: no blueprint stored for {audio} in {store.location}; run: make blueprints BENCH={bench}",
                file=sys.stderr,
            )
        return 1
    print(json.dumps(blueprint, indent=2, ensure_ascii=False))
    return 0
