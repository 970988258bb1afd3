"""The benchmarks' own scripts and trace-eval's compat modes on the same sample folders: the same numbers?

    git clone https://github.com/DanielLin94144/Full-Duplex-Bench
    git clone https://github.com/ChristineCHEN274/FLEXI
    python scripts/full_duplex_bench_compat.py --repo Full-Duplex-Bench [--flexi FLEXI] [--data DIR] [--built]

For each v1 task (pause handling, smooth turn-taking, user interruption) it copies the task's folder (by default
Full-Duplex-Bench's `v1_v1.5/evaluation/example_data/<task>_example`) to a scratch folder, runs the benchmark's
scoring function from its checkout on it, reads the figures it prints, runs
`trace_eval.sessions.full_duplex_bench.score_task` in compat mode and in the default computation on the same
folder, and prints them side by side. With `--flexi`, FLEXI's scripts the same way (`--flexi-latency`: its pause
handling's model latency). Exit status 1 when a compat figure differs from the script's.
`--built` does the same on sample folders in the benchmarks' layout built from recorded speech
(tests/planted_sessions.py): one per way the scripts and the default computation part.

The user-interruption scripts ask GPT-4 Turbo for a rating of each answer; no such service is reached here:
the client they are given answers with the rating the sample's own `rating.json` holds, in the format they parse
(FLEXI reads that file itself). Nothing of the benchmarks is copied into trace-eval: their code runs from the
checkouts named.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import re
import shutil
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from trace_eval.sessions.full_duplex_bench import score_task  # noqa: E402

TASKS = ("pause_handling", "smooth_turn_taking", "user_interruption")
# What each benchmark's scripts print -> the key of our compat summary.
PRINTED = {
    "full-duplex-bench": {
        r"Average take turn:\s+": "average_take_turn",
        r"Average latency:\s+": "average_latency",
        r"Average rating:\s+": "average_rating",
    },
    "flexi": {
        r"-TOR:\s+": "TOR",
        r"-Latency:\s+": "latency",
        r"-JIR:\s+": "JIR",
        r"-TTR:\s+": "TTR",
        r"-LLM Rating:\s+": "LLM Rating",
    },
}


class StoredRatings:
    """An OpenAI-style client whose chat completion is the sample's stored rating, as the scripts parse it."""

    def __init__(self, root: Path) -> None:
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self._create))
        self.ratings = []
        for path in sorted(root.rglob("rating.json")):
            stored = json.loads(path.read_text())
            answer = json.loads((path.parent / "output.json").read_text())["text"]
            self.ratings.append({**stored, "answer": answer})

    def _create(self, **request):
        # The script names the sample only in the prompt; the stored ratings are looked up by the answer text.
        text = request["messages"][1]["content"]
        for rating in self.ratings:
            if rating["answer"] in text:
                content = f"Analysis: {rating['analysis']}\nI would rate the AI's response as {rating['rating']}"
                return SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content=content))])
        raise RuntimeError("no stored rating for this answer")


def _run(module_name: str, where: Path, call) -> str:
    sys.path.insert(0, str(where))
    try:
        module = importlib.import_module(module_name)
    finally:
        sys.path.remove(str(where))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(io.StringIO()):
        call(module)
    return printed.getvalue()


def full_duplex_bench(checkout: Path, task: str, folder: Path, latency_s: float) -> str:
    evaluation = checkout / "v1_v1.5" / "evaluation"
    if task == "user_interruption":
        return _run(f"eval_{task}", evaluation, lambda m: m.eval_user_interruption(str(folder), StoredRatings(folder)))
    return _run(f"eval_{task}", evaluation, lambda m: getattr(m, f"eval_{task}")(str(folder)))


def flexi(checkout: Path, task: str, folder: Path, latency_s: float) -> str:
    evaluation = checkout / "evaluate"
    if task == "pause_handling":

        def call(m):
            m.fixed_latency = latency_s  # set from --latency by its command line
            m.process_folder(str(folder))

        return _run("eval_pause_handing", evaluation, call)
    if task == "smooth_turn_taking":
        return _run("eval_turn_taking", evaluation, lambda m: m.eval_smooth_turn_taking(str(folder)))
    ratings = StoredRatings(folder)
    return _run("eval_user_interrupt", evaluation, lambda m: m.eval_user_interruption(str(folder), ratings))


def figures(printed: str, benchmark: str) -> dict[str, float]:
    found = {}
    for pattern, key in PRINTED[benchmark].items():
        match = re.search(pattern + r"([-0-9.eE]+)(%?)", printed)
        if match:
            found[key] = float(match.group(1)) / (100 if match.group(2) else 1)
    return found


def _built(root: Path, layout: str) -> Path:
    from planted_sessions import full_duplex_bench_samples

    full_duplex_bench_samples(root, layout=layout)
    for folder in root.iterdir():
        folder.rename(root / f"{folder.name}_example")
    # The user-interruption scripts ask an LLM for a 0-5 rating of each answer; these samples hold a stand-in.
    for k, output in enumerate(sorted((root / "user_interruption_example").rglob("output.json"))):
        rating = {"analysis": "a stand-in rating, written with the sample", "rating": 4 - 3 * k}
        (output.parent / "rating.json").write_text(json.dumps(rating))
    return root


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, required=True, help="a checkout of Full-Duplex-Bench")
    parser.add_argument("--flexi", type=Path, help="a checkout of FLEXI: its scripts too")
    parser.add_argument("--flexi-latency", type=float, default=0.0, help="FLEXI's pause handling --latency")
    parser.add_argument("--data", type=Path, help="a folder holding <task>_example folders (default: the repo's)")
    parser.add_argument("--built", action="store_true", help="samples built from recorded speech instead")
    args = parser.parse_args()
    if not (args.repo / "v1_v1.5" / "evaluation" / "eval_pause_handling.py").is_file():
        parser.error(f"{args.repo}: not a Full-Duplex-Bench checkout (no v1_v1.5/evaluation/eval_pause_handling.py)")
    if args.flexi and not (args.flexi / "evaluate" / "eval_turn_taking.py").is_file():
        parser.error(f"{args.flexi}: not a FLEXI checkout (no evaluate/eval_turn_taking.py)")
    runs = {"full-duplex-bench": (args.repo, full_duplex_bench)}
    if args.flexi:
        runs["flexi"] = (args.flexi, flexi)
    differences = 0
    with tempfile.TemporaryDirectory() as scratch:
        for benchmark, (checkout, script) in runs.items():
            data = args.data or args.repo / "v1_v1.5" / "evaluation" / "example_data"
            if args.built:
                data = _built(Path(scratch) / "built" / benchmark, benchmark)
            print(f"\n{benchmark}: its scripts on {data}")
            for task in TASKS:
                source = data / f"{task}_example"
                if not source.is_dir():
                    print(f"  {task}: no {source}, skipped")
                    continue
                folder = Path(scratch) / benchmark / f"{task}_example"
                shutil.copytree(source, folder)
                theirs = figures(script(checkout, task, folder, args.flexi_latency), benchmark)
                ours = score_task(source, task, compat=benchmark, latency_s=args.flexi_latency)["summary"]
                count = sum(1 for _ in source.rglob("output.json"))
                for key, value in theirs.items():
                    mine = ours.get(key)
                    same = mine is not None and abs(mine - value) < 1e-6
                    differences += not same
                    shown = "-" if mine is None else f"{mine:.6g}"
                    print(f"  {task:19} ({count}) {key:18} its script {value:10.6g}  compat {shown:>10}"
                          + ("" if same else "  DIFFERENT"))  # fmt: skip
                print(f"  {'':23} default: " + json.dumps(score_task(source, task)["summary"]))
    print(f"\n{differences} difference(s) between the benchmarks' scripts and compat mode")
    return 1 if differences else 0


if __name__ == "__main__":
    raise SystemExit(main())
