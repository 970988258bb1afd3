"""Full-Duplex-Bench's own scripts and trace-eval's compat mode on the same sample folders: the same numbers?

    git clone https://github.com/DanielLin94144/Full-Duplex-Bench
    python scripts/full_duplex_bench_compat.py --repo Full-Duplex-Bench [--data DIR] [--built]

For each v1 task (pause handling, smooth turn-taking, user interruption) it copies the task's folder (by default
the repository's `v1_v1.5/evaluation/example_data/<task>_example`) to a scratch folder, runs the benchmark's
`eval_<task>` function from the checkout on it, reads the figures it prints, runs
`trace_eval.sessions.full_duplex_bench.score_task(..., compat=True)` and the default computation on the same
folder, and prints the three side by side. Exit status 1 when a compat figure differs from the benchmark's.
`--built` does the same on sample folders in the benchmark's layout built from recorded speech
(tests/planted_sessions.py): one per way its scripts and the default computation part.

The user-interruption script asks GPT-4 Turbo for a rating of each answer; no such service is reached here:
its client is given the rating the sample's own `rating.json` holds, in the format the script parses.
Nothing of the benchmark is copied into trace-eval: its code runs from the checkout named.
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
PRINTED = {
    "Average take turn": "average_take_turn",
    "Average latency": "average_latency",
    "Average rating": "average_rating",
}


class StoredRatings:
    """An OpenAI-style client whose chat completion is the sample's stored rating, as the script parses it."""

    def __init__(self) -> None:
        self.folder: Path | None = None
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self._create))

    def _create(self, **request):
        # The script names the sample only in the prompt; the stored ratings are looked up by the answer text.
        text = request["messages"][1]["content"]
        for rating in self.ratings:
            if rating["answer"] in text:
                content = f"Analysis: {rating['analysis']}\nI would rate the AI's response as {rating['rating']}"
                return SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content=content))])
        raise RuntimeError("no stored rating for this answer")

    def load(self, root: Path) -> None:
        self.ratings = []
        for path in sorted(root.rglob("rating.json")):
            stored = json.loads(path.read_text())
            answer = json.loads((path.parent / "output.json").read_text())["text"]
            self.ratings.append({**stored, "answer": answer})


def theirs(evaluation: Path, task: str, folder: Path) -> dict[str, float]:
    sys.path.insert(0, str(evaluation))
    module = importlib.import_module(f"eval_{task}")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(io.StringIO()):
        if task == "user_interruption":
            client = StoredRatings()
            client.load(folder)
            module.eval_user_interruption(str(folder), client)
        else:
            getattr(module, f"eval_{task}")(str(folder))
    found = {}
    for label, key in PRINTED.items():
        match = re.search(rf"{label}:\s+([-0-9.eE]+)", printed.getvalue())
        if match:
            found[key] = float(match.group(1))
    return found


def _built(root: Path) -> Path:
    from planted_sessions import full_duplex_bench_samples

    full_duplex_bench_samples(root)
    for folder in root.iterdir():
        folder.rename(root / f"{folder.name}_example")
    # The user-interruption script asks an LLM for a 0-5 rating of each answer; these samples hold a stand-in.
    for k, output in enumerate(sorted((root / "user_interruption_example").rglob("output.json"))):
        rating = {"analysis": "a stand-in rating, written with the sample", "rating": 4 - 3 * k}
        (output.parent / "rating.json").write_text(json.dumps(rating))
    return root


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, required=True, help="a checkout of Full-Duplex-Bench")
    parser.add_argument("--data", type=Path, help="a folder holding <task>_example folders (default: the repo's)")
    parser.add_argument("--built", action="store_true", help="samples built from recorded speech instead")
    args = parser.parse_args()
    evaluation = args.repo / "v1_v1.5" / "evaluation"
    if not (evaluation / "eval_pause_handling.py").is_file():
        parser.error(f"{args.repo}: not a Full-Duplex-Bench checkout (no v1_v1.5/evaluation/eval_pause_handling.py)")
    differences = 0
    with tempfile.TemporaryDirectory() as scratch:
        data = args.data or evaluation / "example_data"
        if args.built:
            data = _built(Path(scratch) / "built")
        for task in TASKS:
            source = data / f"{task}_example"
            if not source.is_dir():
                print(f"{task}: no {source}, skipped")
                continue
            folder = Path(scratch) / f"{task}_example"
            shutil.copytree(source, folder)
            benchmark = theirs(evaluation, task, folder)
            compat = score_task(source, task, compat=True)["summary"]
            default = score_task(source, task)["summary"]
            print(f"\n{task} ({sum(1 for _ in source.rglob('output.json'))} sample(s), {source})")
            print(f"  {'figure':20} {'their script':>14} {'compat':>10}")
            for key, value in benchmark.items():
                ours = compat.get(key)
                same = ours is not None and abs(ours - value) < 1e-9
                differences += not same
                shown = "-" if ours is None else f"{ours:.6g}"
                print(f"  {key:20} {value:14.6g} {shown:>10}{'' if same else '  DIFFERENT'}")
            print("  default: " + json.dumps(default))
    print(f"\n{differences} difference(s) between the benchmark's scripts and compat mode")
    return 1 if differences else 0


if __name__ == "__main__":
    raise SystemExit(main())
