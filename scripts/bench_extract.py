"""Stage 1 speed: time every registered extractor on generated speech, then compare
two ways of computing pitch + loudness + DNSMOS for a set of files.

    python scripts/bench_extract.py                    # 40 clips of 5-15 s
    python scripts/bench_extract.py --clips 100 --only dnsmos,pitch --workers 2

Part 1, per extractor: how the blueprint pipeline runs it (batched extractors on
all clips in this process, per-clip extractors in a process pool), reported as
clips per second and real-time factor (processing seconds / audio seconds; lower
is faster). An extractor that cannot load is listed as unavailable with its reason.

Part 2, pitch + loudness + DNSMOS together:
- straightforward: one file after the other; each extractor decodes the file
  itself; DNSMOS scores one 9.01 s window per ONNX run (the reference loop);
- optimized: the blueprint pipeline itself (`run_blueprints`, everything
  recomputed, start-up included): each file decoded once in a process pool over
  all cores that also runs pitch and loudness, while DNSMOS scores the clips of
  the previous chunk in stacked batches in this process (its convolution
  front-end computed once over overlapping windows).
Both must give the same values; the script checks that.

With --engine ray, the whole Stage 1 (every extractor asked for, everything
recomputed) through the local engine, then through the ray engine on a local Ray
with one actor per model, then two; the blueprints of every way must be equal.
Ray's own start is timed apart; each run includes loading the models.

    python scripts/bench_extract.py --engine ray --clips 40 --only asr,dnsmos,pitch,loudness,voicing,rate

What a new user meets first, each in a fresh process as they run it (start-up, imports and model loading
included; wall seconds and CPU seconds, user + system, of every process it started):

    python scripts/bench_extract.py --example --repeat 2   # `blueprints examples/mini` on a fresh copy
    python scripts/bench_extract.py --demo --repeat 2      # `make demo` on a fresh copy of the example

CPU seconds are reported beside wall seconds everywhere: on a shared machine wall time measures the other
work too. Every figure names the numeric class the recogniser ran (extractors/numerics.py).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from extractors import REGISTRY, Clip, ClipError, Extractor, ExtractorUnavailable, Section  # noqa: E402
from trace_eval.audio import Audio, load_audio  # noqa: E402
from trace_eval.synth import Voice, speak  # noqa: E402

SENTENCES = [
    "The weather today will be mostly sunny with a light breeze from the west.",
    "Please remember to bring your laptop and the signed forms to the meeting.",
    "Our train leaves at half past seven, so we should be at the station early.",
    "The recipe calls for two cups of flour, one egg and a pinch of salt.",
    "I am sorry, but I cannot answer that question without more information.",
    "Scientists have found water ice in the shadowed craters near the lunar pole.",
    "If you turn left at the next corner, the library is on your right.",
    "Thank you for calling, your request has been recorded and will be handled soon.",
    "The committee will publish its final report at the end of the month.",
    "Could you please speak a little more slowly so that everyone can follow?",
]
VOICES = ["en-us", "en-gb", "en-us+f3", "en-gb+m3", "en-us+m7"]
COMBINED = ("pitch", "loudness", "dnsmos")


# ---------------------------------------------------------------------------------------
# Test material


def make_clips(count: int, folder: Path, seed: int, shortest_s: float = 5.0, longest_s: float = 15.0) -> list[Path]:
    """`count` wav files of espeak-ng speech, lengths drawn uniformly in [shortest_s, longest_s]."""
    rng = np.random.default_rng(seed)
    paths = []
    for i in range(count):
        target_s = float(rng.uniform(shortest_s, longest_s))
        voice = Voice(wpm=int(rng.integers(140, 190)), voice=str(rng.choice(VOICES)), pitch=int(rng.integers(30, 70)))
        words_needed = target_s * voice.wpm / 60 * 1.3  # espeak pauses between sentences: ask for more
        text: list[str] = []
        while sum(len(s.split()) for s in text) < words_needed:
            text.append(str(rng.choice(SENTENCES)))
        path = folder / f"clip{i:03d}.wav"
        speak(" ".join(text), path, voice)
        samples, rate = sf.read(path, dtype="float32")
        sf.write(path, samples[: int(target_s * rate)], rate)
        paths.append(path)
    return paths


# ---------------------------------------------------------------------------------------
# Part 1: each extractor alone


@dataclass
class Timing:
    name: str
    status: str  # ok | unavailable | failed
    load_s: float = 0.0
    seconds: float = 0.0
    clips: int = 0
    audio_s: float = 0.0
    failed_clips: int = 0
    device: str = "cpu"
    where: str = ""  # how it ran: batched in-process, or per-clip in N processes
    reason: str = ""
    cpu_s: float = 0.0  # CPU seconds (user + system) of the processes that ran it, all threads

    @property
    def clips_per_s(self) -> float:
        return self.clips / self.seconds if self.seconds else 0.0

    @property
    def rtf(self) -> float:
        return self.seconds / self.audio_s if self.audio_s else 0.0


_WORKER: dict[str, Extractor] = {}


def _load_in_worker(names: list[str]) -> None:
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # one process per core already
    for name in names:
        extractor = REGISTRY[name]()
        extractor.load()
        _WORKER[name] = extractor


def _warm_up_worker() -> int:
    """Run each loaded extractor once on a second of noise, so lazy imports are not timed."""
    noise = np.random.default_rng(0).normal(0, 0.1, 16000).astype(np.float32)
    for extractor in _WORKER.values():
        extractor.extract([Clip("warm-up", Audio(noise, 16000))])
    return os.getpid()


def _run_in_worker(path: str, names: list[str]) -> tuple[np.ndarray, dict[str, Section | ClipError], float]:
    """Decode once, run the per-clip extractors; the 16 kHz samples go back for the batched ones, with the
    CPU seconds the extractors took."""
    audio = load_audio(path)
    clip = Clip(path, audio)
    start = time.process_time()
    results = {name: _WORKER[name].extract([clip])[0] for name in names}
    return audio.at(16000), results, time.process_time() - start


def _pool(workers: int, names: list[str]) -> ProcessPoolExecutor:
    """A started pool (start-up is not timed: a pipeline pays it once per run)."""
    pool = ProcessPoolExecutor(
        workers, mp_context=multiprocessing.get_context("spawn"), initializer=_load_in_worker, initargs=(names,)
    )
    for future in [pool.submit(_warm_up_worker) for _ in range(workers * 2)]:
        future.result()
    return pool


def _in_dependency_order(names: list[str]) -> list[str]:
    ordered: list[str] = []

    def visit(name: str) -> None:
        if name not in ordered:
            for dependency in REGISTRY[name].depends_on:
                if dependency in REGISTRY:
                    visit(dependency)
            ordered.append(name)

    for name in names:
        visit(name)
    return ordered


def time_extractors(names: list[str], paths: list[Path], device: str, workers: int) -> list[Timing]:
    from trace_eval.stage1.pipeline import runs_in_workers

    decoded = [load_audio(p) for p in paths]
    audio_s = sum(a.duration_s for a in decoded)
    values: dict[str, list[dict]] = {}  # extractor -> section values per clip, for dependants
    timings = []
    for name in _in_dependency_order(names):
        cls = REGISTRY[name]
        missing = [d for d in cls.depends_on if d not in values]
        if missing:
            timings.append(Timing(name, "unavailable", reason=f"depends on {', '.join(missing)}, which did not run"))
            continue
        per_clip = runs_in_workers(cls(device=device))  # placed as the pipeline places it
        try:
            if per_clip:
                timing, sections = _time_per_clip(name, paths, workers)
            else:
                timing, sections = _time_in_process(cls, decoded, values, device)
        except ExtractorUnavailable as e:
            timings.append(Timing(name, "unavailable", reason=str(e)))
            continue
        except Exception as e:  # an extractor bug must not stop the benchmark
            timings.append(Timing(name, "failed", reason=f"{type(e).__name__}: {e}"))
            continue
        timing.audio_s = audio_s
        timing.failed_clips = sum(not isinstance(s, Section) for s in sections)
        values[name] = [s.values if isinstance(s, Section) else {} for s in sections]
        timings.append(timing)
    return timings


def _time_per_clip(name: str, paths: list[Path], workers: int) -> tuple[Timing, list]:
    start = time.perf_counter()
    try:
        pool = _pool(workers, [name])
    except Exception as e:  # ExtractorUnavailable raised in a worker's initializer breaks the pool
        raise ExtractorUnavailable(_unavailable_reason(name, e)) from e
    load_s = time.perf_counter() - start
    with pool:
        start = time.perf_counter()
        outputs = list(pool.map(_run_in_worker, [str(p) for p in paths], [[name]] * len(paths)))
        seconds = time.perf_counter() - start
    sections = [results[name] for _, results, _ in outputs]
    cpu_s = sum(cpu for _, _, cpu in outputs)
    timing = Timing(name, "ok", load_s, seconds, len(paths), where=f"per clip, {workers} processes", cpu_s=cpu_s)
    return timing, sections


def _unavailable_reason(name: str, error: Exception) -> str:
    try:
        REGISTRY[name]().load()  # load here to get the extractor's own message
    except ExtractorUnavailable as e:
        return str(e)
    except Exception:
        pass
    return f"{type(error).__name__}: {error}"


def clips_for(ext: Extractor | type[Extractor], decoded: list, values: dict[str, list[dict]]) -> list[Clip]:
    """The clips an in-process extractor gets: the audio at its rate and the values of what it depends on."""
    clips = []
    for i, audio in enumerate(decoded):
        blueprint = {"duration_s": audio.duration_s}
        for dependency in ext.depends_on:
            blueprint.update(values[dependency][i])
        clips.append(Clip(str(i), audio if ext.sample_rate else None, blueprint))
        if ext.sample_rate:
            audio.at(ext.sample_rate)  # resampling is done by the decoding workers, not timed here
    return clips


def _time_in_process(
    cls: type[Extractor], decoded: list, values: dict[str, list[dict]], device: str
) -> tuple[Timing, list]:
    extractor = cls(device=device)
    start = time.perf_counter()
    extractor.load()
    load_s = time.perf_counter() - start
    clips = clips_for(cls, decoded, values)
    extractor.extract(clips[:1])  # warm-up: lazy imports and first-run allocations are not timed
    start, cpu = time.perf_counter(), time.process_time()
    sections = extractor.extract(clips)
    seconds, cpu_s = time.perf_counter() - start, time.process_time() - cpu
    where = "batched, this process" if cls.batched else "per clip, this process"
    timing = Timing(cls.name, "ok", load_s, seconds, len(clips), device=extractor.device, where=where, cpu_s=cpu_s)
    return timing, sections


def print_timings(timings: list[Timing]) -> None:
    print(
        f"\n{'extractor':<10} {'status':<11} {'device':<6} {'load s':>7} {'run s':>8} {'CPU s':>8} {'clips/s':>8} "
        f"{'RTF':>7}  how"
    )
    for t in timings:
        if t.status != "ok":
            print(f"{t.name:<10} {t.status:<11} {'':<6} {'':>7} {'':>8} {'':>8} {'':>8} {'':>7}  {t.reason}")
            continue
        failed = f", {t.failed_clips} clips failed" if t.failed_clips else ""
        print(
            f"{t.name:<10} {t.status:<11} {t.device:<6} {t.load_s:>7.2f} {t.seconds:>8.2f} {t.cpu_s:>8.2f} "
            f"{t.clips_per_s:>8.2f} {t.rtf:>7.4f}  {t.where}{failed}"
        )


# ---------------------------------------------------------------------------------------
# Part 2: pitch + loudness + DNSMOS, straightforward vs optimized


def straightforward(paths: list[Path], signal: list[Extractor], dnsmos: Extractor) -> tuple[float, list[dict]]:
    from extractors.dnsmos import score_one_window_at_a_time, to_section

    start = time.perf_counter()
    results = []
    for path in paths:
        values: dict[str, Section | ClipError] = {}
        for extractor in signal:
            values[extractor.name] = extractor.extract([Clip(str(path), load_audio(path))])[0]
        samples = load_audio(path).at(16000)
        values["dnsmos"] = to_section(score_one_window_at_a_time(dnsmos.scorer, samples))
        results.append(values)
    return time.perf_counter() - start, results


def optimized(folder: Path, names: list[str], workers: int) -> tuple[float, list[dict]]:
    """The pipeline itself, as `python -m trace_eval blueprints` runs it (everything recomputed)."""
    from trace_eval.stage1.pipeline import BlueprintOptions, run_blueprints
    from trace_eval.stage1.store import BlueprintStore, get_dotted, set_dotted

    options = BlueprintOptions(only=names, device="cpu", workers=workers, force=True, progress=False, store="bench")
    start = time.perf_counter()
    run_blueprints(folder, options)
    elapsed = time.perf_counter() - start
    store = BlueprintStore(folder)
    results = []
    for path in sorted(folder.glob("clip*.wav")):
        blueprint = store.get_by_path(path.name)
        values: dict[str, Section | ClipError] = {}
        for name in names:
            section: dict = {}
            for key in REGISTRY[name].outputs:
                if get_dotted(blueprint, key, _ABSENT) is not _ABSENT:
                    set_dotted(section, key, get_dotted(blueprint, key))
            values[name] = Section(section)
        results.append(values)
    return elapsed, results


_ABSENT = object()


def _write_manifest(paths: list[Path], folder: Path) -> None:
    items = [{"id": p.stem, "audio_path": p.name, "instruction_text": "(benchmark clip)"} for p in paths]
    (folder / "manifest.json").write_text(json.dumps(items))


def _differences(a: list[dict], b: list[dict]) -> list[str]:
    """Values that differ between the two ways (DNSMOS may differ by one in the last rounded digit)."""
    problems = []
    for i, (x, y) in enumerate(zip(a, b)):
        for name in x:
            vx = x[name].values if isinstance(x[name], Section) else str(x[name])
            vy = y[name].values if isinstance(y[name], Section) else str(y[name])
            if name == "dnsmos" and isinstance(vx, dict) and isinstance(vy, dict):
                qx, qy = vx["agent_audio_quality"], vy["agent_audio_quality"]
                if any(abs(qx[k] - qy[k]) > 0.0015 for k in qx):
                    problems.append(f"clip {i} dnsmos: {qx} vs {qy}")
            elif vx != vy:
                problems.append(f"clip {i} {name}: {vx} vs {vy}")
    return problems


def compare_combined(paths: list[Path], audio_s: float, workers: int, repeat: int) -> None:
    names = [n for n in COMBINED if n in REGISTRY]
    print(
        f"\n{' + '.join(names)}, {len(paths)} clips, {audio_s:.0f} s of audio, best of {repeat}: "
        "a plain per-file loop against the pipeline"
    )
    if "dnsmos" not in names:
        print("  dnsmos is not registered: nothing to compare")
        return
    signal_names = [n for n in names if n != "dnsmos"]
    dnsmos = REGISTRY["dnsmos"]()
    dnsmos.load()
    signal = [REGISTRY[n]() for n in signal_names]
    for extractor in signal:
        extractor.load()
    warm_up = [Clip("warm-up", load_audio(paths[0]))]
    for extractor in [*signal, dnsmos]:
        extractor.extract(warm_up)
    times: dict[str, list[float]] = {"straightforward": [], "optimized": []}
    problems: list[str] = []
    folder = paths[0].parent
    _write_manifest(paths, folder)
    # Alternating the two ways and keeping each one's best run evens out other load on the machine.
    for _ in range(repeat):
        plain_s, plain = straightforward(paths, signal, dnsmos)
        fast_s, fast = optimized(folder, names, workers)
        times["straightforward"].append(plain_s)
        times["optimized"].append(fast_s)
        problems += _differences(plain, fast)
    print(f"  {'way':<16} {'seconds':>8} {'clips/s':>8} {'RTF':>7}  all runs (s)")
    for way, runs in times.items():
        best = min(runs)
        print(
            f"  {way:<16} {best:>8.2f} {len(paths) / best:>8.2f} {best / audio_s:>7.4f}  "
            + " ".join(f"{r:.2f}" for r in runs)
        )
    speed_up = min(times["straightforward"]) / min(times["optimized"])
    print(f"  speed-up: {speed_up:.2f}x on {os.cpu_count()} cores ({workers} worker processes)")
    print("  outputs agree" if not problems else "  OUTPUTS DIFFER:\n    " + "\n    ".join(problems[:10]))


def compare_engines(paths: list[Path], audio_s: float, names: list[str], workers: int, repeat: int) -> None:
    """Local engine against the ray engine (1 and 2 actors per model) on the same clips."""
    from trace_eval.stage1 import ray_engine
    from trace_eval.stage1.pipeline import BlueprintOptions, run_blueprints
    from trace_eval.stage1.store import BlueprintStore

    folder = paths[0].parent
    _write_manifest(paths, folder)
    start = time.perf_counter()
    ray_engine.start_local()
    print(
        f"\nengines, {len(paths)} clips, {audio_s:.0f} s of audio, {', '.join(names)}; best of {repeat} "
        f"(Ray started in {time.perf_counter() - start:.1f} s, not counted)"
    )
    models = [n for n in names if REGISTRY[n].batched and REGISTRY[n].sample_rate]
    ways = {
        "local": BlueprintOptions(only=names, device="cpu", workers=workers, store="bench"),
        "ray, 1 actor/model": BlueprintOptions(only=names, device="cpu", engine="ray", store="bench"),
        "ray, 2 actors/model": BlueprintOptions(
            only=names, device="cpu", engine="ray", settings={m: {"actors": 2} for m in models}, store="bench"
        ),
    }
    times: dict[str, list[float]] = {way: [] for way in ways}
    reference: dict[str, dict] = {}
    problems: list[str] = []
    for _ in range(repeat):
        for way, options in ways.items():
            options.force, options.progress = True, False
            begin = time.perf_counter()
            summary = run_blueprints(folder, options)
            times[way].append(time.perf_counter() - begin)
            if not summary.ok:
                problems.append(f"{way}: {summary.failed} clip(s) failed")
            store = BlueprintStore(folder)
            for path in paths:
                blueprint = store.get_by_path(path.name)
                for entry in blueprint["provenance"]["extractors"].values():
                    entry.pop("seconds"), entry.pop("engine")
                if reference.setdefault(path.name, blueprint) != blueprint:
                    problems.append(f"{way}: {path.name} differs from the local engine's blueprint")
    print(f"  {'way':<20} {'seconds':>8} {'clips/s':>8} {'RTF':>7}  all runs (s)")
    for way, runs in times.items():
        best = min(runs)
        print(
            f"  {way:<20} {best:>8.2f} {len(paths) / best:>8.2f} {best / audio_s:>7.4f}  "
            + " ".join(f"{r:.2f}" for r in runs)
        )
    print("  blueprints agree" if not problems else "  BLUEPRINTS DIFFER:\n    " + "\n    ".join(problems[:10]))


# ---------------------------------------------------------------------------------------
# What a new user meets first: the example's blueprints, and `make demo`


ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "mini"


def _measured(command: list[str], cwd: Path) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system, the command and every process it started) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def time_first_runs(what: str, repeat: int) -> None:
    """`blueprints examples/mini` or `make demo` on a fresh copy of the example, each run in a new process."""
    from extractors.numerics import numeric_class
    from trace_eval.audio import load_audio

    audio_s = sum(load_audio(p).duration_s for p in sorted((EXAMPLE / "audio").glob("*.wav")))
    clips = len(list((EXAMPLE / "audio").glob("*.wav")))
    print(
        f"\n{what} on examples/mini ({clips} clips, {audio_s:.1f} s of audio), numeric class {numeric_class()}, "
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}"
    )
    print(f"  {'run':<4} {'wall s':>8} {'CPU s':>8} {'wall RTF':>9} {'CPU RTF':>8} {'clips/s':>8}")
    for run in range(repeat):
        with tempfile.TemporaryDirectory(prefix="bench_example_") as tmp:
            bench = Path(tmp) / "mini"
            shutil.copytree(EXAMPLE, bench, ignore=shutil.ignore_patterns("blueprints"))
            if what == "blueprints":
                # --store bench: computed again, never found in the user's store
                command = [sys.executable, "-m", "trace_eval", "blueprints", str(bench), "--device", "cpu"]
                command += ["--store", "bench"]
            else:  # the Makefile's own recipe, on an installed clone: the install step is taken as done
                command = ["make", "-o", ".venv/.installed", "demo", f"PY={sys.executable}", f"BENCH={bench}"]
                command += [f"DEMO_RUN={Path(tmp) / 'run'}", "DEVICE=cpu"]
            wall, cpu = _measured(command, ROOT)
            shown = " ".join(command).replace(tmp, "$TMP").replace(sys.executable, "python")
        print(
            f"  {run + 1:<4} {wall:>8.1f} {cpu:>8.1f} {wall / audio_s:>9.3f} {cpu / audio_s:>8.3f} {clips / wall:>8.2f}"
        )
    print(f"  command: {shown} (in {ROOT}, $TMP a fresh copy of the example)")


# ---------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clips", type=int, default=40, help="number of generated clips (default 40)")
    parser.add_argument("--device", default="auto", help="auto | cpu | cuda (default auto)")
    parser.add_argument("--only", help="comma-separated extractor names (default: every registered one)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="processes for per-clip work")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=2, help="runs of each way in the comparison; the best counts")
    parser.add_argument("--skip-combined", action="store_true", help="only time the extractors one by one")
    parser.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="ray: compare the whole Stage 1 on the local and the ray engine instead",
    )
    parser.add_argument("--example", action="store_true", help="time `blueprints examples/mini` (fresh copy)")
    parser.add_argument("--demo", action="store_true", help="time `make demo` on a fresh copy of the example")
    args = parser.parse_args(argv)
    if args.example or args.demo:
        for what, wanted in (("blueprints", args.example), ("make demo", args.demo)):
            if wanted:
                time_first_runs(what, max(1, args.repeat))
        return 0

    names = sorted(REGISTRY) if not args.only else [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in REGISTRY]
    if unknown:
        parser.error(f"unknown extractor(s) {', '.join(unknown)}; expected one of: {', '.join(sorted(REGISTRY))}")
    from trace_eval.stage1.pipeline import resolve_device

    device = resolve_device(args.device)
    with tempfile.TemporaryDirectory(prefix="bench_extract_") as folder:
        start = time.perf_counter()
        paths = make_clips(args.clips, Path(folder), args.seed)
        audio_s = sum(sf.info(p).duration for p in paths)
        print(
            f"{len(paths)} clips, {audio_s:.0f} s of speech (generated in {time.perf_counter() - start:.1f} s); "
            f"device {device}; {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}"
        )
        if args.engine == "ray":
            compare_engines(paths, audio_s, names, args.workers, max(1, args.repeat))
            return 0
        print_timings(time_extractors(names, paths, device, args.workers))
        if not args.skip_combined:
            compare_combined(paths, audio_s, args.workers, max(1, args.repeat))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
