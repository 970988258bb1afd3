"""`python -m trace_eval fuse RUNDIR [--fusion POLICY]`: re-fuse a judge run without any call."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import fusion

HELP = "recompute the overall labels of a judge run under another fusion policy (no backbone calls)"


def configure(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = "fusion policies:\n" + "\n".join(
        f"  {name:22} {policy.description}" for name, policy in sorted(fusion.POLICIES.items())
    )
    p.add_argument("run_dir", metavar="RUNDIR", help="run folder written by `judge`")
    p.add_argument(
        "--fusion",
        choices=sorted(fusion.POLICIES),
        help="policy for `overall` (default: the run's own, as config.json records it)",
    )
    p.add_argument("--table", action="store_true", help="also print each pair's verdicts and fused label")


def run(args: argparse.Namespace) -> int:
    from trace_eval.judge import RunFolderError, refuse

    try:
        summary = refuse(args.run_dir, args.fusion)
    except (RunFolderError, FileNotFoundError, fusion.UnknownPolicy) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    overall = ", ".join(f"{label} {n}" for label, n in summary["labels"]["overall"].items())
    undetermined = (summary.get("undetermined") or {}).get("overall")
    if undetermined:
        overall += f", undetermined {undetermined} (a dimension lacked evidence: null under every policy)"
    policy = args.fusion or f"{summary['fusion']} (the run's own)"
    print(f"{args.run_dir}: overall under {policy}: {overall}")
    if summary.get("settings", {}).get("bench"):
        print(f"  benchmark: {summary['settings']['bench']}")
    if args.table:
        print_table(Path(args.run_dir))
    return 0


def print_table(run_dir: Path) -> None:
    """Each item's verdicts, one column per dimension of the run's rubric (headed by the initials of its
    title: C, VQ, P for TRACE), and its fused label."""
    from trace_eval.judge.runfolder import load_config, read_results
    from trace_eval.rubrics import rubric_of_run

    rubric = rubric_of_run(load_config(run_dir))
    short = {d.name: "".join(word[0] for word in d.title.split()).upper() for d in rubric.dimensions}
    records = read_results(run_dir / "results.jsonl").records
    # Ids whole: prepared pairs are named "q00:base-vs-new", and a cut id names another pair or none.
    width = max([16, *(len(str(r["id"])) for r in records)])
    print(f"{'pair':{width}s} " + " ".join(f"{s:>10s}" for s in short.values()) + f" {'overall':>10s}  status")
    for record in records:
        verdicts = record.get("verdicts") or {}
        # "?" marks an undetermined label (the judge lacked the evidence); "-" no verdict at all.
        blank = "?" if record.get("status") == "ok" else "-"
        cells = [str(verdicts.get(d) or blank) for d in short]
        missing = "; ".join(f"{short.get(d, d)}: {why}" for d, why in (record.get("undetermined") or {}).items())
        print(
            f"{str(record['id']):{width}s} "
            + " ".join(f"{cell:>10s}" for cell in cells)
            + f" {str(record.get('overall') or blank):>10s}  {record.get('status')}"
            + (f"  undetermined: {missing}" if missing else "")
        )
