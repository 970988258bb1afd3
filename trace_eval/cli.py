"""Command line: one verb per stage. Each verb is a module in trace_eval.commands
exposing `HELP`, `configure(parser)` and `run(args) -> int`; it is imported only
when used, so `show` does not pay for importing torch or litellm."""
from __future__ import annotations

import argparse
import importlib
import sys

VERBS = ("blueprints", "show", "judge", "fuse", "evaluate")


def _command(verb: str):
    return importlib.import_module(f"trace_eval.commands.{verb}")


def build_parser(verbs: tuple[str, ...] = VERBS) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m trace_eval", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    for verb in verbs:
        command = _command(verb)
        p = sub.add_parser(verb, help=command.HELP, description=command.HELP)
        command.configure(p)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # Build only the parser of the verb asked for, to keep start-up fast.
    verb = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser((verb,) if verb in VERBS else VERBS)
    args = parser.parse_args(argv)
    return int(_command(args.verb).run(args) or 0)
