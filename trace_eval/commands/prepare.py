"""`python -m trace_eval prepare SOURCE DIR`: a benchmark folder from a published release, a local audio
dataset, or systems' outputs (see docs/prepare.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HELP = (
    "make a benchmark folder: SpeakBench, S2S-Arena or SageLM (downloaded or local), any audio dataset, "
    "or pairs of systems' outputs"
)

SOURCES = {
    "speakbench": "SpeakBench with the TRACE labels (497 pairs): potsawee/speakbench-v1-labelled-508",
    "s2s-arena": "S2S-Arena (English) with the TRACE labels (314 pairs): FreedomIntelligence/S2S-Arena(-output)",
    "sagelm": "SageLM's test sets (multi-aspect rubric): LGB666/SageLM_testset_audio",
    "dataset": "a local Hugging Face audio dataset (parquet or save_to_disk) with a column map",
    "pairs": "pairs from systems' outputs: instructions and one folder of answers per system",
    "sessions": "full-duplex sessions: a released benchmark's user channels (Full-Duplex-Bench, FLEXI) and each "
    "system's outputs in a copy of its tree",
}


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("out", metavar="DIR", help="the benchmark folder to write (created; an interrupted run resumes)")
    p.add_argument(
        "--skip-bad",
        action="store_true",
        help="write the manifest without the items that cannot be prepared (each is recorded in SOURCE.json "
        "with its reason); by default they stop the run, the work done kept",
    )
    p.add_argument("--force", action="store_true", help="write every file again, even in a complete folder")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def _release(p: argparse.ArgumentParser, label_help: str, several: bool = False) -> None:
    p.add_argument(
        "--from",
        dest="source",
        metavar="PATH",
        help="a local copy of the audio instead of downloading it (layouts: docs/prepare.md)",
    )
    p.add_argument("--labels", metavar="FILE", nargs="+" if several else None, help=label_help)
    p.add_argument("--revision", metavar="REV", help="dataset revision to download (default: main; recorded)")


def _systems_option(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--system",
        dest="systems",
        metavar="NAME=FOLDER",
        action="append",
        required=True,
        help=f"{what}; repeat per system",
    )


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="source_kind", required=True, metavar="SOURCE")
    for name, about in SOURCES.items():
        p = sub.add_parser(name, help=about, description=about, prog=f"python -m trace_eval prepare {name}")
        _common(p)
        if name == "speakbench":
            _release(
                p, "local copy of data/speakbench.json of the TRACE release (default: downloaded at its pinned commit)"
            )
        elif name == "s2s-arena":
            _release(
                p, "local copy of data/s2sarena.json of the TRACE release (default: downloaded at its pinned commit)"
            )
            p.add_argument("--output-revision", metavar="REV", help="revision of S2S-Arena-output (default: main)")
        elif name == "sagelm":
            _release(p, "local copies of test_semantic.json and/or test_acoustic.json (default: downloaded)", True)
            p.add_argument(
                "--sets",
                default="semantic,acoustic",
                help="which test sets to download: semantic, acoustic or both (default: %(default)s)",
            )
        elif name == "dataset":
            p.add_argument(
                "--from",
                dest="source",
                metavar="PATH",
                required=True,
                help="parquet file, folder of parquet files, or save_to_disk folder",
            )
            p.add_argument(
                "--map",
                dest="columns",
                metavar="FIELD=COLUMN",
                action="append",
                required=True,
                help="manifest field from a column, e.g. audio1_path=response_a, label.overall=preference (repeat)",
            )
            p.add_argument("--split", default="train", help="split (default: %(default)s)")
            p.add_argument("--name", help="the benchmark's name in SOURCE.json (default: the folder's name)")
        elif name == "sessions":
            p.add_argument(
                "--release",
                metavar="PATH",
                required=True,
                help="the released benchmark: one folder per sample holding input.wav (the user) and its annotations",
            )
            _systems_option(p, "a system's outputs: FOLDER/<sample>/output.wav (and output.json), the release's tree")
        else:
            p.add_argument(
                "--instructions",
                metavar="PATH",
                required=True,
                help="folder of instruction audio (id = file name without suffix; text in <id>.txt), or a manifest",
            )
            _systems_option(p, "a system's answers: FOLDER/<id>.wav (or .mp3, .flac, ...)")
            p.add_argument(
                "--schedule",
                choices=("reference", "all", "sample"),
                default="reference",
                help="reference: every system against --reference; all: every two systems; "
                "sample: --per-instruction pairs drawn per instruction (default: %(default)s)",
            )
            p.add_argument("--reference", metavar="NAME", help="the reference system (schedule reference)")
            p.add_argument("--per-instruction", type=int, default=1, help="pairs per instruction (schedule sample)")
            p.add_argument("--seed", type=int, default=0, help="seed of the sampled schedule and seat draws")
            p.add_argument(
                "--instruction-language",
                metavar="CODE",
                help="the language the instructions are in (es, fr, en ...), for those whose row in --instructions "
                "declares no instruction_language; the answers' language is left to be detected",
            )


def run(args: argparse.Namespace) -> int:
    from trace_eval.prepare import (
        PrepareError,
        parse_column_map,
        prepare_dataset,
        prepare_pairs,
        prepare_s2s_arena,
        prepare_sagelm,
        prepare_speakbench,
        print_prepared,
    )

    common = {"skip_bad": args.skip_bad, "progress": not args.quiet, "force": args.force}
    try:
        kind = args.source_kind
        if kind == "speakbench":
            done = prepare_speakbench(args.out, args.source, args.labels, args.revision, **common)
        elif kind == "s2s-arena":
            done = prepare_s2s_arena(args.out, args.source, args.labels, args.revision, args.output_revision, **common)
        elif kind == "sagelm":
            sets = tuple(s.strip() for s in args.sets.split(",") if s.strip())
            unknown = [s for s in sets if s not in ("semantic", "acoustic")]
            if unknown or not sets:
                print(f"error: --sets: semantic, acoustic or both, got {args.sets!r}", file=sys.stderr)
                return 2
            done = prepare_sagelm(args.out, args.source, args.labels, sets, args.revision, **common)
        elif kind == "dataset":
            done = prepare_dataset(
                args.out, args.source, parse_column_map(args.columns), args.split, args.name, **common
            )
        elif kind == "sessions":
            from trace_eval.prepare.sessions import prepare_sessions

            systems = _systems(args.systems)
            if systems is None:
                return 2
            done = prepare_sessions(args.out, args.release, systems, **common)
        else:
            systems = _systems(args.systems)
            if systems is None:
                return 2
            done = prepare_pairs(
                args.out,
                args.instructions,
                systems,
                args.schedule,
                args.reference,
                args.per_instruction,
                args.seed,
                instruction_language=args.instruction_language,
                **common,
            )
    except PrepareError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print_prepared(done)
    return 0


def _systems(given: list[str]) -> dict[str, str | Path] | None:
    systems: dict[str, str | Path] = {}
    for one in given:
        name, sep, folder = one.partition("=")
        if not sep or not name or not folder:
            print(f"error: --system {one!r}: expected NAME=FOLDER", file=sys.stderr)
            return None
        systems[name] = folder
    return systems
