"""`python -m trace_eval fuse RUNDIR --fusion POLICY`: re-fuse a judge run without any call."""
from __future__ import annotations

import argparse
import sys

import fusion

HELP = "recompute the overall labels of a judge run under another fusion policy (no backbone calls)"


def configure(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = "fusion policies:\n" + "\n".join(
        f"  {name:22} {policy.description}" for name, policy in sorted(fusion.POLICIES.items())
    )
    p.add_argument("run_dir", metavar="RUNDIR", help="run folder written by `judge`")
    p.add_argument("--fusion", required=True, choices=sorted(fusion.POLICIES), help="policy for `overall`")


def run(args: argparse.Namespace) -> int:
    from trace_eval.judge import RunFolderError, refuse

    try:
        summary = refuse(args.run_dir, args.fusion)
    except (RunFolderError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    overall = ", ".join(f"{label} {n}" for label, n in summary["labels"]["overall"].items())
    print(f"{args.run_dir}: overall under {args.fusion}: {overall}")
    return 0
