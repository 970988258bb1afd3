"""Command line: one verb per stage. Each verb is a module in trace_eval.commands
exposing `HELP`, `configure(parser)` and `run(args) -> int`; it is imported only
when used, so `show` does not pay for importing torch or litellm."""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys

# In the order of the work: a benchmark folder, people's labels, Stage 1, Stage 2, fusion, evaluation, the
# confidence thresholds, ranking, training data from the verdicts, the audit page, the bias audit; then a look at
# one blueprint, and the store blueprints are kept in; then a session recorded live from a system, and sessions'
# timing, scores and interaction verdicts.
VERBS = (
    "prepare",
    "label",
    "blueprints",
    "judge",
    "fuse",
    "evaluate",
    "calibrate",
    "leaderboard",
    "export",
    "view",
    "audit",
    "show",
    "store",
    "live",
    "sessions",
)
EXAMPLES = {
    "prepare": "python -m trace_eval prepare speakbench data/speakbench",
    "label": "python -m trace_eval label data/speakbench --annotator ana --sample 200 --seed 0 --split",
    "blueprints": "python -m trace_eval blueprints examples/mini",
    "judge": "python -m trace_eval judge --bench examples/mini --model cues --out runs/demo",
    "fuse": "python -m trace_eval fuse runs/demo --fusion content-first --table",
    "evaluate": "python -m trace_eval evaluate runs/demo",
    "calibrate": "python -m trace_eval calibrate runs/demo --agreement 0.85 --delta 0.1 --out calibration.json",
    "leaderboard": "python -m trace_eval leaderboard runs/demo --by all",
    "export": "python -m trace_eval export preferences runs/demo --out prefs/demo",
    "view": "python -m trace_eval view runs/demo",
    "audit": "python -m trace_eval audit examples/mini --model cues --out runs/audit",
    "show": "python -m trace_eval show examples/mini/audio/mini-01_a.wav",
    "store": "python -m trace_eval store verify",
    "sessions": "python -m trace_eval sessions fdb/v1/smooth_turn_taking --compat full-duplex-bench",
    "live": "python -m trace_eval live ws://127.0.0.1:8765/talk --user question.wav --out sessions/s1 --tail 3",
}
DESCRIPTION = """\
Judge pairs of spoken answers with TRACE: turn every audio file into a blueprint
of cues, ask a judge for Content, Voice Quality and Paralinguistics verdicts,
fuse them into an overall label, and score the judge against human labels."""


def _command(verb: str):
    return importlib.import_module(f"trace_eval.commands.{verb}")


def build_parser(verbs: tuple[str, ...] = VERBS) -> argparse.ArgumentParser:
    commands = {verb: _command(verb) for verb in verbs}
    tasks = "\n".join(f"  {verb:11} {commands[verb].HELP}\n  {'':11} {EXAMPLES[verb]}" for verb in verbs)
    parser = argparse.ArgumentParser(
        prog="python -m trace_eval",
        usage="%(prog)s TASK [options]",
        description=f"{DESCRIPTION}\n\ntasks (python -m trace_eval TASK --help for the options of one):\n{tasks}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="verb", required=True, metavar="TASK", help=argparse.SUPPRESS)
    for verb, command in commands.items():
        command.configure(sub.add_parser(verb, prog=f"python -m trace_eval {verb}", description=command.HELP))
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        try:
            return _run(sys.argv[1:] if argv is None else argv)
        finally:
            sys.stdout.flush()  # a closed pipe shows here, inside the try, rather than at exit
    except BrokenPipeError:
        # The reader went away (`show FILE | head`): stop quietly, as the Python docs advise
        # (signal module, "Note on SIGPIPE"); devnull takes the output Python still flushes at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def entry() -> int:
    """The process's entry (`python -m trace_eval`, the `trace-eval` script): `main`, then the heap left as it is.

    The interpreter's last garbage collection walks every object the run made, and after an LLM judge those
    are litellm's thousands of classes: seconds at exit, for memory the OS takes back at once. Frozen objects
    are not walked (their finalizers are not needed: every file the run writes is closed before `main` ends).
    """
    code = main()
    gc.freeze()
    return code


def _run(argv: list[str]) -> int:
    # Build only the parser of the verb asked for, to keep start-up fast.
    verb = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser((verb,) if verb in VERBS else VERBS)
    if not argv:
        parser.print_help()
        return 2
    args = parser.parse_args(argv)
    return int(_command(args.verb).run(args) or 0)
