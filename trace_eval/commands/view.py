"""`python -m trace_eval view RUNDIR [RUNDIR ...]`: the audit page of judge runs, opened from disk."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HELP = "write a page to audit every pair: audio, cues, verdicts, reasons, human labels (opens from disk)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "runs",
        nargs="+",
        metavar="RUNDIR",
        help="judge run folder(s) written by `judge`; several are shown side by side",
    )
    parser.add_argument(
        "--bench",
        metavar="DIR",
        help="benchmark folder with the audio, blueprints and human labels (default: the runs' bench)",
    )
    parser.add_argument(
        "--out", metavar="DIR", help="where to write the page (default: RUNDIR/view for one run; required for several)"
    )
    parser.add_argument(
        "--copy-audio",
        action="store_true",
        help="copy the audio into DIR/audio, so the folder can be sent as it is (default: the page "
        "plays the benchmark's files through relative paths)",
    )
    _trust_options(parser)


def _trust_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--trusted-only",
        action="store_true",
        help="show only trusted verdicts (a cascade run's decided ones, or those at or above the thresholds of "
        "--calibration); the others appear undetermined, with why",
    )
    parser.add_argument("--calibration", metavar="FILE", help="calibration file for --trusted-only")


def run(args: argparse.Namespace) -> int:
    from trace_eval.bench import ManifestError
    from trace_eval.judge.runfolder import RunFolderError, view_page
    from trace_eval.rubrics import RubricError
    from trace_eval.view import ViewError, write_view

    if args.out:
        out = Path(args.out)
    elif len(args.runs) == 1:
        out = view_page(args.runs[0]).parent
    else:
        print("error: several runs need --out DIR for the page that shows them side by side", file=sys.stderr)
        return 2
    try:
        files = write_view(
            args.runs,
            out,
            bench=args.bench,
            copy_audio=args.copy_audio,
            trusted_only=args.trusted_only,
            calibration=args.calibration,
        )
    except (ViewError, RunFolderError, ManifestError, FileNotFoundError, RubricError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    from trace_eval.judge.runfolder import read_line

    print(read_line(args.runs, args.bench))
    copied = f", {files.audio_copied} audio files copied into {out / 'audio'}" if args.copy_audio else ""
    print(f"wrote {files.index}: {files.items} items, {files.page_bytes / 1e6:.1f} MB without the audio{copied}")
    print(f"open it in a browser: {files.index.resolve().as_uri()}")
    return 0
