"""The benchmarks' own scripts and trace-eval's compat modes on the same sample folders: the same numbers?

    git clone https://github.com/DanielLin94144/Full-Duplex-Bench
    git clone https://github.com/ChristineCHEN274/FLEXI
    python scripts/full_duplex_bench_compat.py --repo Full-Duplex-Bench [--flexi FLEXI] [--data DIR] [--built]

For each v1 task (pause handling, smooth turn-taking, user interruption, backchannel) it copies the task's
folder (by default Full-Duplex-Bench's `v1_v1.5/evaluation/example_data/<task>_example`) to a scratch folder,
runs the benchmark's scoring function from its checkout on it, reads the figures it prints, runs
`trace_eval.sessions.full_duplex_bench.score_task` in compat mode and in the default computation on the same
folder, and prints them side by side. With `--flexi`, FLEXI's scripts the same way (`--flexi-latency`: its pause
handling's model latency). Exit status 1 when a compat figure differs from the script's.
`--built` does the same on sample folders in the benchmarks' layout built from recorded speech
(tests/planted_sessions.py): one per way the scripts and the default computation part. The backchannel task's
samples are scored against the reference distributions of the checkout (`icc_gt_distribution.json`), read
there; the benchmark ships no example of that task, so it is compared on the built samples only. Then v1.5's
timing (`get_timing.py`) on every sample folder of the tasks above: the `latency_intervals.json` it writes in
each, against compat's lists. Its Silero comes from `torch.hub`, which is not reached here: it is handed the
silero-vad package's model, the same one. Then v1.5's behaviour (`eval_behavior.py`) on v1.5 folders made of
the user-interruption samples (their clean recordings copies): the script asks GPT-4o for each sample's tag; here
both it and compat are answered by a stand-in that tags each message by its hash, so the same summary means the
same messages were sent, parsed and counted alike.

The user-interruption scripts ask GPT-4 Turbo for a rating of each answer; no such service is reached here:
the client they are given answers with the rating the sample's own `rating.json` holds, in the format they parse
(FLEXI reads that file itself). Nothing of the benchmarks is copied into trace-eval: their code runs from the
checkouts named.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
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

from trace_eval.sessions.backchannel import REFERENCE, read_reference  # noqa: E402
from trace_eval.sessions.full_duplex_bench import score_task  # noqa: E402

TASKS = ("pause_handling", "smooth_turn_taking", "user_interruption", "backchannel")
V1_5_TIMING = "timing"  # get_timing.py, on every sample folder of the tasks above
# What each benchmark's scripts print -> the key of our compat summary.
PRINTED = {
    "full-duplex-bench": {
        r"Average take turn:\s+": "average_take_turn",
        r"Average latency:\s+": "average_latency",
        r"Average rating:\s+": "average_rating",
        r"JSD - Mean:\s+": "JSD",
        r"TOR - Mean:\s+": "TOR",
        r"Frequency - Mean:\s+": "Frequency",
        r"JSD - Mean:\s+[-0-9.eE]+ ± ": "JSD std",
        r"TOR - Mean:\s+[-0-9.eE]+ ± ": "TOR std",
        r"Frequency - Mean:\s+[-0-9.eE]+ ± ": "Frequency std",
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


@contextlib.contextmanager
def _torchaudio_load_by_soundfile():
    """torchaudio 2.9 and later decode through torchcodec, which is not installed here: the script's
    `torchaudio.load` is given what it returns for a WAV file (float32, channels first), read by soundfile."""
    import soundfile as sf
    import torch
    import torchaudio

    def load(path, *args, **kwargs):
        samples, rate = sf.read(path, dtype="float32", always_2d=True)
        return torch.from_numpy(samples.T.copy()), rate

    kept = torchaudio.load
    torchaudio.load = load
    try:
        yield
    finally:
        torchaudio.load = kept


@contextlib.contextmanager
def _hub_silero_from_the_package():
    """get_timing.py loads Silero from torch.hub when it imports: it is handed the package's model."""
    import torch
    from silero_vad import load_silero_vad

    kept = torch.hub.load
    torch.hub.load = lambda *args, **kwargs: (load_silero_vad(), None)
    try:
        yield
    finally:
        torch.hub.load = kept


def v1_5_timing(checkout: Path, folder: Path) -> dict[str, dict]:
    """get_timing.py on each sample folder under `folder`: {folder name: its latency_intervals.json}."""
    evaluation = checkout / "v1_v1.5" / "evaluation"
    samples = sorted(p.parent for p in folder.glob("*/output.wav"))
    with _hub_silero_from_the_package(), _torchaudio_load_by_soundfile():
        _run("get_timing", evaluation, lambda m: [m.process_folder(sample) for sample in samples])
    return {s.name: json.loads((s / "latency_intervals.json").read_text()) for s in samples}


def _gathered(data: Path, into: Path) -> Path:
    """Every sample folder of data's <task>_example folders, side by side (named task-sample) in `into`."""
    for task in TASKS:
        for sample in sorted((data / f"{task}_example").glob("*/output.wav")):
            shutil.copytree(sample.parent, into / f"{task}-{sample.parent.name}")
    return into


def full_duplex_bench(checkout: Path, task: str, folder: Path, latency_s: float) -> str:
    evaluation = checkout / "v1_v1.5" / "evaluation"
    if task == "backchannel":  # it reads ./icc_gt_distribution.json: run from its folder
        with contextlib.chdir(evaluation), _torchaudio_load_by_soundfile():
            return _run("eval_backchannel", evaluation, lambda m: m.eval_backchannel(str(folder)))
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


def figures(printed: str, benchmark: str) -> dict[str, tuple[float, float]]:
    """Each figure a script printed, with how far a value may be from it and still print the same: half a unit
    of its last decimal (the backchannel script prints 4), or 1e-6 where it prints them all."""
    found = {}
    for pattern, key in PRINTED[benchmark].items():
        match = re.search(pattern + r"([-0-9.eE]+)(%?)", printed)
        if match:
            scale = 100 if match.group(2) else 1
            decimals = len(match.group(1).partition(".")[2]) if "e" not in match.group(1).lower() else 15
            found[key] = float(match.group(1)) / scale, max(1e-6, 0.5 * 10.0**-decimals / scale)
    return found


TAGS = ("C_RESPOND", "C_RESUME", "C_UNCERTAIN_HANDLING", "C_UNKNOWN")


def stand_in_tag(messages: list[dict[str, str]]) -> str:
    """A tag for a behaviour request, from the hash of its user message: the same message, the same tag."""
    digest = int(hashlib.sha256(messages[1]["content"].encode()).hexdigest(), 16)
    return json.dumps({"behaviour": [TAGS[digest % len(TAGS)]]})


class StandInTagger:
    """An OpenAI-style client for eval_behavior.py that answers with `stand_in_tag`."""

    def __init__(self) -> None:
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self._create))

    def _create(self, **request):
        content = stand_in_tag(request["messages"])
        return SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content=content))])


def behaviour(checkout: Path, data: Path, into: Path) -> tuple[dict, dict] | None:
    """eval_behavior.py's ratios and compat's on v1.5 folders made of data's user-interruption samples."""
    from trace_eval.sessions.behaviour import Tagger

    samples = sorted((data / "user_interruption_example").glob("*/output.json"))
    if not samples:
        return None
    for sample in samples:
        folder = into / sample.parent.name
        shutil.copytree(sample.parent, folder)
        for name in ("input", "output"):
            shutil.copy(folder / f"{name}.wav", folder / f"clean_{name}.wav")
            if not (folder / f"{name}.json").is_file():  # the benchmark's examples hold no transcript of the user
                (folder / f"{name}.json").write_text(json.dumps({"text": "", "chunks": []}))
            shutil.copy(folder / f"{name}.json", folder / f"clean_{name}.json")
    evaluation = checkout / "v1_v1.5" / "evaluation"
    theirs: dict = {}
    with contextlib.chdir(evaluation):  # it reads ./instruction/behavior.txt
        _run(
            "eval_behavior",
            evaluation,
            lambda m: theirs.update(m.eval_behavior_all(str(into), StandInTagger(), "behavior")),
        )
    tagger = Tagger(checkout, stand_in_tag, "stand-in")
    ours = score_task(into, "behaviour", compat="full-duplex-bench", tagger=tagger)["summary"]
    return theirs, ours


def _built(root: Path, layout: str) -> Path:
    from planted_sessions import backchannel_samples, full_duplex_bench_samples

    full_duplex_bench_samples(root, layout=layout)
    if layout == "full-duplex-bench":
        backchannel_samples(root / "backchannel")
    for folder in root.iterdir():
        folder.rename(root / f"{folder.name}_example")
    # The user-interruption scripts ask an LLM for a 0-5 rating of each answer; these samples hold a stand-in.
    for k, output in enumerate(sorted((root / "user_interruption_example").rglob("output.json"))):
        rating = {"analysis": "a stand-in rating, written with the sample", "rating": 4 - 3 * k}
        (output.parent / "rating.json").write_text(json.dumps(rating))
    return root


def _close(mine, theirs, tolerance: float) -> bool:
    if isinstance(theirs, list):
        return len(mine) == len(theirs) and all(abs(a - b) <= tolerance for a, b in zip(mine, theirs))
    return abs(mine - theirs) <= tolerance


def _g(value) -> str:
    if value is None:
        return "-"
    return ", ".join(f"{v:.6g}" for v in value) if isinstance(value, list) else f"{value:.6g}"


def _flat(summary: dict) -> dict:
    """A summary's figures by the names `figures` gives them: a script's "mean ± std" as NAME and NAME std."""
    flat = {}
    for key, value in summary.items():
        if isinstance(value, dict) and "mean" in value:
            flat[key], flat[f"{key} std"] = value["mean"], value["std"]
        else:
            flat[key] = value
    return flat


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
                if task == "backchannel" and benchmark == "flexi":
                    continue  # FLEXI has no such task
                reference = (
                    read_reference(args.repo / "v1_v1.5" / "evaluation" / REFERENCE) if task == "backchannel" else None
                )
                if not source.is_dir():
                    print(f"  {task}: no {source}, skipped")
                    continue
                folder = Path(scratch) / benchmark / f"{task}_example"
                shutil.copytree(source, folder)
                printed = script(checkout, task, folder, args.flexi_latency)
                theirs = figures(printed, benchmark)
                scored = score_task(source, task, compat=benchmark, latency_s=args.flexi_latency, reference=reference)
                ours = _flat(scored["summary"])
                if task == "backchannel":  # its summary has 4 decimals; each sample's distance, all of them
                    theirs["each JSD"] = sorted(float(x) for x in re.findall(r"^JSD: (\S+)$", printed, re.M)), 1e-9
                    ours["each JSD"] = sorted(sample["jsd"] for sample in scored["samples"])
                count = sum(1 for _ in source.rglob("output.json"))
                for key, (value, tolerance) in theirs.items():
                    mine = ours.get(key)
                    same = mine is not None and _close(mine, value, tolerance)
                    differences += not same
                    print(f"  {task:19} ({count}) {key:18} its script {_g(value):>10}  compat {_g(mine):>10}"
                          + ("" if same else "  DIFFERENT"))  # fmt: skip
                print(f"  {'':23} default: " + json.dumps(score_task(source, task, reference=reference)["summary"]))
            if benchmark == "full-duplex-bench":
                source = _gathered(data, Path(scratch) / benchmark / "timing")
                theirs_by_sample = v1_5_timing(checkout, source)
                scored = score_task(source, V1_5_TIMING, compat=benchmark)
                ours_by_sample = {Path(s["sample"]).name: s for s in scored["samples"]}
                for name, written in theirs_by_sample.items():
                    mine = {k: ours_by_sample[name][k] for k in written}
                    same = mine == written
                    differences += not same
                    print(f"  v1.5 timing {name:32} its script {json.dumps(written)}"
                          + ("" if same else f"  DIFFERENT: compat {json.dumps(mine)}"))  # fmt: skip
                print(f"  {'':23} default: " + json.dumps(score_task(source, V1_5_TIMING)["summary"]))
                compared = behaviour(checkout, data, Path(scratch) / benchmark / "behaviour")
                if compared is not None:
                    theirs_tags, ours_tags = compared
                    same = theirs_tags == {"C": ours_tags["C"]}
                    differences += not same
                    print(f"  v1.5 behaviour (stand-in tags)  its script {json.dumps(theirs_tags)}  compat "
                          f"{json.dumps(ours_tags)}" + ("" if same else "  DIFFERENT"))  # fmt: skip
    print(f"\n{differences} difference(s) between the benchmarks' scripts and compat mode")
    return 1 if differences else 0


if __name__ == "__main__":
    raise SystemExit(main())
