"""Signal cues against the TRACE release: pitch, loudness and DNSMOS over the same clips.

    python scripts/bench_signal_vs_release.py RELEASE [--repeat 3] [--work DIR] [--release-path DIR]

RELEASE is a checkout of the TRACE release (github.com/arjunchandra2/TRACE). Both
sides run as a whole process, start-up, imports and model loading included, on
the same 20 clips of espeak-ng speech (212 s, generated here the same way every
time):

- the release: `src/TRACE/extraction.py` imported as the release imports it, then
  for every file its pitch (`_pitch_stats_aubio`) and loudness
  (`_loudness_stats_lufs`), and DNSMOS by `DNSMOS/dnsmos_single.py`'s
  `ComputeScore` on the release's ONNX files, one file after the other;
- trace-eval: `python -m trace_eval blueprints DIR --only pitch,loudness,dnsmos`
  on an empty store.

The runs alternate (release, trace-eval, release, ...) so that both see the same
load on a shared machine. Reported per run: wall seconds, CPU seconds (user +
sys of the process and its children) and peak resident memory; then the medians
and their ratio. The release's imports (torch, transformers, speechbrain, funasr,
aubio, librosa) must be importable: `--release-path DIR` adds a folder to its
path, e.g. one made by `pip install --target DIR aubio==0.4.9`.

The DNSMOS scores of both are compared (the release prints two decimals). Pitch
and loudness are measured differently (aubio YIN against Praat, the release's
loudness contour against BS.1770 momentary blocks), so only their time compares.
The release also scores every window with the non-personalized P.835 network,
which its output does not use; `--non-personalized` makes trace-eval compute it
too (`--set dnsmos.non_personalized=true`), for the same network work on both sides.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_extract import SENTENCES, VOICES  # noqa: E402

from trace_eval.synth import Voice, speak  # noqa: E402

CLIPS = 20
LENGTHS_S = np.linspace(5.6, 15.6, CLIPS)  # 212 s in all
EXTRACTORS = "pitch,loudness,dnsmos"

# Run in the release's src/TRACE folder: its own functions, one file after the other.
RELEASE_RUN = """
import json, sys
import extraction
from DNSMOS.dnsmos_single import ComputeScore, SAMPLING_RATE

models = "DNSMOS/models"
scorer = ComputeScore(model_path=f"{models}/sig_bak_ovr.onnx", p_model_path=f"{models}/p_sig_bak_ovr.onnx",
                      p808_model_path=f"{models}/model_v8.onnx")
out = {}
for path in sys.argv[2:]:
    extraction.SignalExtraction._pitch_stats_aubio(None, path)
    extraction.SignalExtraction._loudness_stats_lufs(None, path)
    q = scorer(path, sampling_rate=SAMPLING_RATE)
    out[path] = [q["P_SIG"], q["P_BAK"], q["P_OVRL"], q["P808_MOS"]]
json.dump(out, open(sys.argv[1], "w"))
"""
DNSMOS_KEYS = (
    "DNSMOS_Personalized_Signal_Quality",
    "DNSMOS_Personalized_Background_Quality",
    "DNSMOS_Personalized_Overall_Quality",
    "P808_Overall_Quality",
)


def make_clips(folder: Path) -> list[Path]:
    """The 20 clips: one voice, rate and pitch per clip, cut to lengths from 5.6 s to 15.6 s."""
    audio = folder / "audio"
    audio.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, length_s in enumerate(LENGTHS_S):
        voice = Voice(voice=VOICES[i % len(VOICES)], wpm=140 + (i * 7) % 50, pitch=30 + (i * 11) % 40)
        words = length_s * voice.wpm / 60 * 1.4  # espeak-ng pauses between sentences: ask for more
        text: list[str] = []
        while sum(len(s.split()) for s in text) < words:
            text.append(SENTENCES[(i + len(text)) % len(SENTENCES)])
        path = audio / f"clip{i:02d}.wav"
        speak(" ".join(text), path, voice)
        samples, rate = sf.read(path, dtype="float32")
        if len(samples) < int(length_s * rate):
            raise RuntimeError(f"{path}: espeak-ng made {len(samples) / rate:.2f} s, {length_s:.2f} s needed")
        sf.write(path, samples[: int(length_s * rate)], rate)
        paths.append(path)
    items = [{"id": p.stem, "audio_path": f"audio/{p.name}", "instruction_text": "(benchmark clip)"} for p in paths]
    (folder / "manifest.json").write_text(json.dumps(items))
    return paths


@dataclass
class Run:
    wall_s: float
    cpu_s: float  # user + sys of the process and the children it waited for
    peak_mb: float  # largest resident set of the process or any of its children


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> Run:
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({process.returncode}):\n{output.decode()[-3000:]}")
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


def run_release(release: Path, extra_path: str | None, paths: list[Path], out: Path) -> Run:
    src = release / "src" / "TRACE"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (extra_path, str(src)) if p))
    return timed([sys.executable, "-c", RELEASE_RUN, str(out), *map(str, paths)], src, env)


def run_ours(bench: Path, non_personalized: bool) -> Run:
    shutil.rmtree(bench / "blueprints", ignore_errors=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    command = [
        sys.executable,
        "-m",
        "trace_eval",
        "blueprints",
        str(bench),
        "--store",
        "bench",  # computed again, never found in the user's store
        "--only",
        EXTRACTORS,
        "--device",
        "cpu",
        "--quiet",
    ]
    if non_personalized:
        command += ["--set", "dnsmos.non_personalized=true"]
    return timed(command, ROOT, env)


def dnsmos_differences(bench: Path, paths: list[Path], release_out: Path) -> float:
    """Largest difference between the release's DNSMOS scores and the blueprints' (both rounded to 2 decimals)."""
    from trace_eval.stage1.store import BlueprintStore

    theirs = json.loads(release_out.read_text())
    store = BlueprintStore(bench)
    largest = 0.0
    for path in paths:
        quality = store.get_by_path(f"audio/{path.name}")["agent_audio_quality"]
        for key, value in zip(DNSMOS_KEYS, theirs[str(path)]):
            largest = max(largest, abs(round(quality[key], 2) - round(value, 2)))
    return largest


def describe(name: str, runs: list[Run]) -> str:
    each = "  ".join(f"{r.wall_s:5.1f}/{r.cpu_s:5.1f}" for r in runs)
    return (
        f"  {name:10s} wall/cpu s: {each}   median wall {statistics.median(r.wall_s for r in runs):5.1f} s, "
        f"cpu {statistics.median(r.cpu_s for r in runs):5.1f} s, peak {max(r.peak_mb for r in runs):6.0f} MB"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("release", type=Path, help="a checkout of github.com/arjunchandra2/TRACE")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each side, alternating (default 3)")
    parser.add_argument("--work", type=Path, help="folder for the clips and blueprints (default: a temporary one)")
    parser.add_argument("--release-path", help="a folder added to the release's import path (e.g. where aubio is)")
    parser.add_argument(
        "--non-personalized",
        action="store_true",
        help="trace-eval also scores the non-personalized P.835 network, as the release does",
    )
    args = parser.parse_args(argv)
    if not (args.release / "src" / "TRACE" / "extraction.py").is_file():
        parser.error(f"{args.release} is not a checkout of the TRACE release: no src/TRACE/extraction.py")

    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        bench = work / "bench"
        shutil.rmtree(bench, ignore_errors=True)
        paths = make_clips(bench)
        audio_s = sum(sf.info(str(p)).duration for p in paths)
        print(
            f"{len(paths)} clips, {audio_s:.1f} s of espeak-ng speech; pitch + loudness + DNSMOS, whole processes, "
            f"{args.repeat} alternating runs (load average before: {os.getloadavg()[0]:.1f})"
        )
        release_out = work / "release.json"
        release, ours = [], []
        for _ in range(args.repeat):
            release.append(run_release(args.release, args.release_path, paths, release_out))
            ours.append(run_ours(bench, args.non_personalized))
        print(describe("release", release))
        print(describe("trace-eval", ours))
        wall_ratio = statistics.median(r.wall_s for r in release) / statistics.median(r.wall_s for r in ours)
        cpu_ratio = statistics.median(r.cpu_s for r in release) / statistics.median(r.cpu_s for r in ours)
        print(
            f"  trace-eval is {wall_ratio:.1f}x faster in wall time, {cpu_ratio:.1f}x in CPU time "
            f"(load average after: {os.getloadavg()[0]:.1f})"
        )
        print(f"  DNSMOS scores (2 decimals) differ by at most {dnsmos_differences(bench, paths, release_out):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
