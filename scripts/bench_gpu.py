"""Stage 1 on a GPU, paper profile, in one command: the whole Stage 1, then each extractor alone.

    python scripts/bench_gpu.py --out report.json                     # 1,000 clips, CUDA when there is one
    python scripts/bench_gpu.py --device cpu --clips 4 --models DIR --no-build   # a quick run anywhere

1. Weights: the paper profile's three models as full-size random-weight stand-ins
   (scripts/make_standin_models.py, run as a subprocess for the folders of --models
   that are not complete yet; --no-build only checks). They have the published
   layouts and sizes, so loading, memory and arithmetic are those of the real models;
   what they output is noise, but for the sentence planted in Whisper's (below).
   The timings are real, the cues are not.
2. Clips: --clips unique clips of 5-20 s, made without espeak-ng from the 23 files
   of examples/mini/audio (about 90 s of espeak speech that travel with the repo):
   cut into pieces of 1-4 s, each sped up or slowed down by up to 10 %, its gain
   changed by -6..+2 dB, joined with short gaps, with a little white noise over the
   whole clip; seeded per clip, so clip i is the same for any --clips, and every
   clip's audio, so its hash, is unique (checked). Written as a benchmark folder
   (audio/ and manifest.json, one item per pair of clips).
3. The whole Stage 1 on all the clips, first (the headline number): run_blueprints
   with profile="paper", every extractor, everything recomputed, model loading
   included; wall time against the target (2 minutes for about 1,000 clips on one
   H100) and beside a published reference (Whisper large-v3 in transformers, batch
   24 with FlashAttention-2: 150 minutes in 98 s on an A100, about 92x real time;
   greedy, no word timings). Then the first 3 clips again as a benchmark of their
   own: on CUDA too, their blueprints must equal those from the 1,000-clip run
   (batch_invariance in the report, with the first values that differ and where; the CPU tests check
   this on every commit).
4. Each extractor alone, configured as the paper profile configures it, on the
   first --each-clips (250 by default: enough for a steady rate, and it keeps the
   whole command inside the device tool's 600 s; 0: all): load time apart from run
   time, batch size used, seconds, times real time (audio seconds / processing
   seconds), clips per second, and on CUDA the GPU memory the weights hold and the
   peak while running. The per-clip signal extractors run in a process pool, as the
   pipeline runs them (scripts/bench_extract.py's pool). None starts after
   --deadline-s.
5. A table, and with --out a JSON report, rewritten after every step so that a run
   cut short still leaves what it measured.

The bench runs the paper profile as users run it, with the tool's own settings
(beam search at temperature 0, Whisper's temperature fallback, the batch sizes):
nothing is capped or forced. The Whisper stand-in's decoder carries one planted
sentence (trace_eval/stage1/standins.py: STANDIN_SENTENCE, 25 text tokens, then
end-of-text), so every window decodes it once at temperature 0, with an average
log-probability of about 0, and stops; no window falls back, as with a fluent model.
So the decoding share of the timings is that of 25 tokens a window, about what
7-8 s of speech gives; real answers of 5-20 s give some 15-65 (about 3.3 a second),
so with real weights decoding takes longer than here. The report says what Whisper
wrote, read from the blueprints (stage1.transcripts, and the asr entry of
extractors): text tokens per window (each transcript tokenised again), beside what
speech of the clips' mean length would give; the temperatures kept; the windows
that fell back; the average log-probability; how many transcripts are the planted
sentence. WhisperProbe adds what blueprints cannot say, without changing what runs:
seconds inside `generate`, rows (windows) per call, and seconds in the VAD.

Carrying it to a GPU machine (no network, Python 3.12, torch 2.11, transformers 5.17,
onnxruntime 1.30 already there): scripts/gpu_carry.py builds .carry/site.tar.xz,
the smallest set of wheels the paper profile and this bench import there (21
packages and two import stubs, 17.9 MiB; that script says which and why), and
prints the command:

    python3 scripts/gpu_carry.py build     # here, once: downloads pinned wheels, packs .carry/
    python3 scripts/gpu_carry.py command   # the device tool's `run` command, with carry [".carry"]

which is, for run(command=..., carry=[".carry"], timeout_s=600):

    mkdir -p /tmp/site && python3 -c "import tarfile; tarfile.open('.carry/site.tar.xz').extractall('/tmp/site',
    filter='data')" && export PYTHONPATH=/tmp/site:$PWD && set -o pipefail && PYTHONUNBUFFERED=1 python3
    scripts/bench_gpu.py --out $OUT/bench_gpu.json 2>&1 | tee $OUT/bench_gpu.log

(one line, 286 characters). Should the extractors alone not fit, a second call with
--skip-stage1 (and --clips 250: only the clips it times) measures them: 273 s on an H200, stand-ins
built again included, for the machine goes back after some 30 s idle and a new one starts bare.

Measured on one H200 (2026-11-29; docs/models.md has the table): stand-ins built in 45 s, 1,000 clips
in 13.5 s, the whole Stage 1 in 376 s (target not met), asr alone on 250 clips in 56 s (load 7 s); the other
extractors alone were past --deadline-s 480, and were measured on 2026-11-30 (each alone, above).
Estimated before, for one H100: stand-ins built
there about 1 min (about 1 min on this 2-core machine, mostly writing 4.4 GB);
1,000 clips about 15 s (1.2 s per 100 here); the whole Stage 1 some 100-200 s
(208 min of audio: the reference's 92x real time on an A100, greedy, about 41
tokens a window, gives 136 s; an H100 is faster, beam 5 costs more per step, the
stand-in decodes 26 steps a window; emotion, accent and the VAD run clip by clip
beside it); each extractor alone on 250 clips, a quarter of that plus each load,
some 40-90 s. In all some 4-6 minutes under 600 s. Stage 1 has no deadline: were
it to take over 8 minutes, the call would end with only the clips in the report;
--deadline-s (540 s) keeps the extractors alone from starting late.

What was checked here, on a CPU machine with no GPU: the sizes; that every module
the paper profile and this bench import resolves with only the GPU machine's
packages plus the carried ones (`gpu_carry.py check` runs `--device cpu --clips 4`
with the tiny test models in a Python 3.11 that sees nothing else, at this
machine's versions: every extractor loaded and ran); and that the carried binary
wheels import and work under Python 3.12; and runs on the full-size stand-ins
(2026-11-23, two cores shared with another job). `--device cpu --clips 2
--each-clips 1 --no-build` ran the whole Stage 1 in 621 s, every section ok (asr
536 s, 391 s of it in one generate of 2 windows), and so passed --deadline-s: the
extractors alone were skipped. Again with `--skip-stage1 --deadline-s 3600`, every
extractor was ok (asr 96.5 s for one 14.5 s window, 60 s in generate). In both,
every window decoded the planted sentence, 25 tokens, at temperature 0 with an
average log-probability of 0, and none fell back. On a CPU with full-size weights,
pass a --deadline-s above the Stage 1 time. Not checked:
anything on CUDA, and the GPU machine's own versions (transformers 5.17, numpy 2.5,
onnxruntime 1.30).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import gc
import hashlib
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

# first, before numpy: pins the numeric class (extractors/numerics.py), so the whole Stage 1 runs in this
# process, where WhisperProbe and the GPU's peak see it, not in a new one that run_blueprints would start
from extractors import numerics  # noqa: E402, F401, I001

import numpy as np  # noqa: E402
import soundfile as sf  # noqa: E402

from bench_extract import Timing, _time_per_clip, clips_for  # noqa: E402

from extractors import Extractor, ExtractorUnavailable, Section  # noqa: E402
from trace_eval.audio import load_audio  # noqa: E402
from trace_eval.io import write_json  # noqa: E402

RATE = 16000
SEED_AUDIO = ROOT / "examples" / "mini" / "audio"
STANDIN_SCRIPT = ROOT / "scripts" / "make_standin_models.py"
PAPER_CARDS = ("whisper-large-v3", "emotion2vec_plus_large", "accent-commonaccent-ecapa")
TARGET = {"clips": 1000, "seconds": 120.0, "gpu": "one H100"}
REFERENCE = {
    "what": "Whisper large-v3 in transformers, batch 24, FlashAttention-2, on an A100 (greedy, no word timings)",
    "audio_minutes": 150.0,
    "seconds": 98.0,
    "x_real_time": round(150.0 * 60 / 98.0, 1),
}
SPEECH_TOKENS_PER_SECOND = 3.3  # Whisper text tokens a second of speech: about 150 words a minute, 1.3 tokens a word
REPORT_VERSION = 1


# ---------------------------------------------------------------------------------------
# Clips


def load_seed_audio(folder: Path = SEED_AUDIO) -> list[np.ndarray]:
    """The seed recordings as 16 kHz mono float32, silence at either end trimmed."""
    import soxr

    seeds = []
    for path in sorted(folder.glob("*.wav")):
        samples, rate = sf.read(path, dtype="float32", always_2d=True)
        mono = samples.mean(axis=1)
        if rate != RATE:
            mono = soxr.resample(mono, rate, RATE).astype(np.float32)
        loud = np.flatnonzero(np.abs(mono) > 0.01)
        if len(loud):
            seeds.append(mono[loud[0] : loud[-1] + 1])
    if not seeds:
        raise SystemExit(f"no seed audio in {folder}: the clips are made from its WAV files")
    return seeds


def make_clip(seeds: list[np.ndarray], rng: np.random.Generator, seconds: float) -> np.ndarray:
    """`seconds` of speech-like audio: pieces of the seeds, each re-timed and re-levelled, plus noise."""
    import soxr

    target = int(round(seconds * RATE))
    fade = np.linspace(0.0, 1.0, int(0.01 * RATE), dtype=np.float32)
    parts: list[np.ndarray] = []
    length = 0
    while length < target:
        source = seeds[int(rng.integers(len(seeds)))]
        cut = min(len(source), int(rng.uniform(1.0, 4.0) * RATE))
        start = int(rng.integers(0, len(source) - cut + 1))
        speed = rng.uniform(0.9, 1.1)
        piece = soxr.resample(source[start : start + cut], RATE, RATE / speed).astype(np.float32)
        piece *= np.float32(10 ** (rng.uniform(-6.0, 2.0) / 20))
        n = min(len(fade), len(piece) // 2)
        piece[:n] *= fade[:n]
        piece[len(piece) - n :] *= fade[:n][::-1]
        gap = np.zeros(int(rng.uniform(0.05, 0.4) * RATE), dtype=np.float32)
        parts += [piece, gap]
        length += len(piece) + len(gap)
    clip = np.concatenate(parts)[:target]
    clip += rng.normal(0.0, 10 ** (rng.uniform(-65.0, -50.0) / 20), target).astype(np.float32)
    peak = float(np.max(np.abs(clip)))
    return clip * np.float32(0.98 / peak) if peak > 0.98 else clip


def make_benchmark(
    count: int, folder: Path, seed: int = 0, shortest_s: float = 5.0, longest_s: float = 20.0
) -> list[Path]:
    """`count` unique clips under folder/audio and a manifest pairing them (a last odd clip stands alone)."""
    seeds = load_seed_audio()
    (folder / "audio").mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    hashes: set[str] = set()
    for i in range(count):
        rng = np.random.default_rng([seed, i])  # clip i is the same whatever the count
        while True:
            path = folder / "audio" / f"clip{i:05d}.wav"
            sf.write(path, make_clip(seeds, rng, float(rng.uniform(shortest_s, longest_s))), RATE, subtype="PCM_16")
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            if digest not in hashes:  # with noise drawn per clip a repeat cannot happen; checked all the same
                hashes.add(digest)
                break
        paths.append(path)
    items = []
    for k in range(0, count, 2):
        pair = paths[k : k + 2]
        item = {"id": f"pair{k // 2:05d}", "instruction_text": "(benchmark clip)"}
        if len(pair) == 2:
            item.update(audio1_path=f"audio/{pair[0].name}", audio2_path=f"audio/{pair[1].name}")
        else:
            item.update(audio_path=f"audio/{pair[0].name}")
        items.append(item)
    write_json(folder / "manifest.json", items)
    return paths


# ---------------------------------------------------------------------------------------
# Weights


def missing_cards(models: Path) -> list[str]:
    """The paper profile's model cards whose folder under `models` lacks a file the card lists."""
    from extractors.models import is_complete, load_card

    return [name for name in PAPER_CARDS if not is_complete(models / name, load_card(name))]


def ensure_standins(models: Path, build: bool) -> float | None:
    """Build the stand-ins that are not there yet; seconds spent building (None: nothing to build)."""
    missing = missing_cards(models)
    if not missing:
        return None
    if not build:
        raise SystemExit(
            f"{models} lacks {', '.join(missing)}; drop --no-build to build the stand-ins there, "
            f"or pass --models DIR holding {', '.join(PAPER_CARDS)}"
        )
    print(f"building stand-ins for {', '.join(missing)} in {models}", flush=True)
    start = time.perf_counter()
    # In a process of its own: building imports speechbrain, which turns TF32 on for the whole process.
    subprocess.run([sys.executable, str(STANDIN_SCRIPT), str(models), "--only", ",".join(missing)], check=True)
    still = missing_cards(models)
    if still:
        raise SystemExit(f"{STANDIN_SCRIPT.name} ran but {models} still lacks {', '.join(still)}")
    return time.perf_counter() - start


# ---------------------------------------------------------------------------------------
# GPU memory


class Gpu:
    """CUDA synchronisation and memory counters; every method is a no-op on the CPU.

    None of them starts CUDA in this process: Stage 1 forks its worker processes first,
    as it does when run from the command line.
    """

    def __init__(self, device: str):
        self.torch = None
        if device.startswith("cuda"):
            import torch

            self.torch = torch
            self.index = torch.device(device).index or 0

    def _started(self) -> bool:
        return bool(self.torch) and self.torch.cuda.is_initialized()

    def sync(self) -> None:
        if self._started():
            self.torch.cuda.synchronize(self.index)

    def free(self) -> None:
        gc.collect()
        if self._started():
            self.torch.cuda.empty_cache()

    def reset_peak(self) -> None:  # before CUDA starts, the peak is zero
        if self._started():
            self.sync()
            self.torch.cuda.reset_peak_memory_stats(self.index)

    def allocated_gib(self) -> float | None:
        if not self.torch:
            return None
        return round(self.torch.cuda.memory_allocated(self.index) / 2**30, 2) if self._started() else 0.0

    def peak_gib(self) -> float | None:
        if not self.torch:
            return None
        return round(self.torch.cuda.max_memory_allocated(self.index) / 2**30, 2) if self._started() else 0.0

    def describe(self) -> dict:
        """The GPU (this starts CUDA)."""
        if not self.torch:
            return {"gpu": None}
        props = self.torch.cuda.get_device_properties(self.index)
        return {
            "gpu": props.name,
            "gpu_memory_gib": round(props.total_memory / 2**30, 1),
            "cuda": self.torch.version.cuda,
            "multiprocessors": props.multi_processor_count,
        }


# ---------------------------------------------------------------------------------------
# What Whisper decodes


@dataclass
class DecodeStats:
    """What the blueprints do not say: time inside Whisper's generate, its batches, and time in VAD."""

    generate_calls: int = 0
    rows_per_call: list[int] = field(default_factory=list)  # sequences one call decoded (windows, or samples)
    generate_s: float = 0.0
    vad_s: float = 0.0
    vad_clips: int = 0

    def summary(self) -> dict:
        rows = self.rows_per_call
        return {
            "generate_calls": self.generate_calls,
            "rows_per_call": {"mean": round(float(np.mean(rows)), 1), "min": min(rows), "max": max(rows)}
            if rows
            else None,
            "generate_s": round(self.generate_s, 2),
            "vad_s": round(self.vad_s, 2),
            "vad_clips": self.vad_clips,
        }


class WhisperProbe:
    """Times each transformers Whisper backend's `model.generate` and the ASR extractor's `vad_spans`.

    Within a `with` block, each backend made gets its `model.generate` wrapped, and
    `extractors.asr.vad_spans` is wrapped; arguments and results pass through unchanged,
    so Whisper decodes exactly as it does without the probe.
    """

    def __init__(self, gpu: Gpu):
        self.gpu = gpu
        self.stats = DecodeStats()

    def __enter__(self) -> WhisperProbe:
        import extractors.asr as asr
        from extractors._whisper_hf import TransformersWhisper

        probe, original_init, original_vad = self, TransformersWhisper.__init__, asr.vad_spans

        def init(backend, *args, **kwargs):
            original_init(backend, *args, **kwargs)
            generate = backend.model.generate

            def timed_generate(*args, **kwargs):
                probe.gpu.sync()
                start = time.perf_counter()
                sequences = generate(*args, **kwargs)
                probe.gpu.sync()
                probe.stats.generate_s += time.perf_counter() - start
                probe.stats.generate_calls += 1
                probe.stats.rows_per_call.append(int(sequences.shape[0]))
                return sequences

            backend.model.generate = timed_generate  # an instance attribute shadows the method

        def vad_spans(samples, config):
            start = time.perf_counter()
            try:
                return original_vad(samples, config)
            finally:
                probe.stats.vad_s += time.perf_counter() - start
                probe.stats.vad_clips += 1

        self._restore = lambda: (
            setattr(TransformersWhisper, "__init__", original_init),
            setattr(asr, "vad_spans", original_vad),
        )
        TransformersWhisper.__init__ = init
        asr.vad_spans = vad_spans
        return self

    def __exit__(self, *exc) -> None:
        self._restore()


def transcript_stats(blueprints: list[dict], whisper_dir: Path) -> dict:
    """What Whisper wrote, read from the blueprints (or the asr sections): words, tokens, temperature, fallback.

    A clip of 5-20 s is one window (speech is grouped into windows of up to 30 s), so
    per clip is per window. A window's text tokens are its transcript tokenised again
    with the model's tokenizer. It fell back when the kept attempt is not beam search's
    (temperature above 0) or fails Whisper's thresholds (then every temperature was
    tried); the clip's avg_logprob averages its windows.
    """
    from transformers import WhisperTokenizer

    from extractors.asr import AsrConfig
    from trace_eval.stage1.standins import STANDIN_SENTENCE

    limits = AsrConfig()
    tokenizer = WhisperTokenizer.from_pretrained(whisper_dir)
    decoded = [b for b in blueprints if (b.get("transcript_quality") or {}).get("temperature") is not None]
    texts = [(b.get("agent_response") or "").strip() for b in decoded]
    tokens = [len(tokenizer.encode(" " + text, add_special_tokens=False)) if text else 0 for text in texts]
    quality = [b["transcript_quality"] for b in decoded]
    fell_back = sum(
        q["temperature"] > 0
        or q["avg_logprob"] < limits.logprob_threshold
        or q["compression_ratio"] > limits.compression_ratio_threshold
        for q in quality
    )
    words = [len(b.get("words") or []) for b in blueprints]
    seconds = sum(float(b.get("duration_s") or 0.0) for b in blueprints)
    speech_tokens = SPEECH_TOKENS_PER_SECOND * seconds / len(blueprints) if blueprints else None

    def spread(values: list[float], digits: int = 1) -> dict | None:
        return (
            {
                "mean": round(float(np.mean(values)), digits),
                "min": round(min(values), digits),
                "max": round(max(values), digits),
            }
            if values
            else None
        )

    return {
        "clips": len(blueprints),
        "windows_decoded": len(decoded),
        "text_tokens_per_window": spread(tokens),
        "speech_tokens_per_window": round(speech_tokens, 1) if speech_tokens is not None else None,
        "temperatures": {f"{t:g}": n for t, n in sorted(Counter(q["temperature"] for q in quality).items())},
        "windows_that_fell_back": fell_back,
        "avg_logprob": spread([q["avg_logprob"] for q in quality], 3),
        "planted_sentence": sum(text == STANDIN_SENTENCE.strip() for text in texts),
        "words_per_clip": round(float(np.mean(words)), 1) if words else None,
        "words_per_minute": round(sum(words) / seconds * 60, 1) if seconds else None,
        "clips_with_reliable_transcript": sum(
            bool((b.get("transcript_quality") or {}).get("reliable")) for b in blueprints
        ),
        "clips_with_empty_transcript": sum(not (b.get("agent_response") or "").strip() for b in blueprints),
        "note": f"decoding time here is that of {spread(tokens)['mean'] if tokens else 0:g} text tokens a window; "
        f"speech of these clips' mean length gives about {speech_tokens or 0:.0f} "
        f"({SPEECH_TOKENS_PER_SECOND:g} a second: some 15-65 for answers of 5-20 s)",
    }


def _blueprints(folder: Path, paths: list[Path]) -> list[dict]:
    from trace_eval.stage1.store import BlueprintStore

    store = BlueprintStore(folder)
    return [store.get_by_path(f"audio/{path.name}") or {} for path in paths]


def differences(a, b, path: str):
    """(dotted path, a's value, b's value) for each leaf where two JSON values differ (make_goldens.walk)."""
    from make_goldens import dotted, walk

    for where, x, y in walk(a, b, (path,)):
        yield dotted(where), x, y


def batch_invariance(folder: Path, paths: list[Path], options, seed: int, count: int = 3) -> dict:
    """The first `count` clips again as a benchmark of their own, so in other batches than in the whole
    run: every value of their blueprints must be the same (docs/blueprints.md: Same audio, same blueprint)."""
    from trace_eval.stage1.pipeline import run_blueprints

    small = folder / "alone"
    small_paths = make_benchmark(count, small, seed)  # clip i is the same whatever the count
    start = time.perf_counter()
    run_blueprints(small, options)
    differ: dict[str, int] = {}
    examples: list[dict] = []
    for path, whole, alone in zip(paths, _blueprints(folder, paths[:count]), _blueprints(small, small_paths)):
        for key in sorted((set(whole) | set(alone)) - {"provenance"}):
            if whole.get(key) != alone.get(key):
                differ[key] = differ.get(key, 0) + 1
                found = list(differences(whole.get(key), alone.get(key), key))
                examples += [{"clip": path.name, "path": p, "whole": a, "alone": b} for p, a, b in found[:5]]
    return {
        "clips": count,
        "same": not differ,
        "values_that_differ": differ,
        "examples": examples[:20],  # where they differ: path in the blueprint, the value in each run
        "seconds": round(time.perf_counter() - start, 1),
    }


# ---------------------------------------------------------------------------------------
# Each extractor alone


@dataclass
class GpuTiming(Timing):
    batch: str = ""  # how many items one model call took
    weights_gib: float | None = None  # GPU memory the loaded model holds
    peak_gib: float | None = None  # peak GPU memory while it ran (the only model on the GPU then)
    whisper: dict | None = None  # asr: time inside generate, its batches, time in VAD (DecodeStats.summary)
    transcripts: dict | None = None  # asr: what Whisper wrote (transcript_stats)

    @property
    def x_real_time(self) -> float:
        return self.audio_s / self.seconds if self.seconds else 0.0

    def to_json(self) -> dict:
        out = asdict(self)
        out.update(clips_per_s=round(self.clips_per_s, 2), x_real_time=round(self.x_real_time, 1))
        for key in ("load_s", "seconds", "audio_s"):
            out[key] = round(out[key], 2)
        return out


def _batch_of(ext: Extractor, probe: WhisperProbe | None) -> str:
    """How many items one model call of this extractor took, in words."""
    if ext.name == "asr" and probe and probe.stats.rows_per_call:
        rows = probe.stats.rows_per_call
        return (
            f"{np.mean(rows):.1f} windows/generate (max {max(rows)}; "
            f"batch_seconds={ext.config.batch_seconds:g}, beam {ext.config.beam_size})"
        )
    if ext.name == "dnsmos":
        from extractors._dnsmos_net import INPUT_LENGTH_S

        return f"{max(1, int(ext.config.batch_seconds // INPUT_LENGTH_S))} windows of {INPUT_LENGTH_S} s/ONNX run"
    if ext.name in ("emotion", "accent"):
        return "1 clip/forward pass (no padding mask: by design)"
    return "per clip" if ext.sample_rate else "per clip, no audio"


def time_each(
    extractors: list[Extractor],
    device: str,
    paths: list[Path],
    workers: int,
    gpu: Gpu,
    probe: WhisperProbe,
    deadline: float,
    report,
    whisper_dir: Path,
) -> list[GpuTiming]:
    """Every extractor alone, dependencies first; values flow to the dependants as in the pipeline.

    Each is a fresh instance with the configured settings, dropped once timed, so that the
    GPU holds one model at a time.
    """
    from trace_eval.stage1.pipeline import runs_in_workers

    decoded = [load_audio(p) for p in paths]
    audio_s = sum(a.duration_s for a in decoded)
    values: dict[str, list[dict]] = {}
    timings: list[GpuTiming] = []
    for ext in extractors:
        missing = [d for d in ext.depends_on if d not in values]
        if missing:
            timings.append(
                GpuTiming(ext.name, "unavailable", reason=f"depends on {', '.join(missing)}, which did not run")
            )
            continue
        if time.monotonic() > deadline:
            timings.append(GpuTiming(ext.name, "skipped", reason="past --deadline-s"))
            continue
        print(f"  {ext.name} ...", flush=True)
        ext = type(ext)(ext.config, device)
        try:
            if runs_in_workers(ext) and ext.config == type(ext).Config():
                base, sections = _time_per_clip(ext.name, paths, workers)
                timing = GpuTiming(**asdict(base), batch=_batch_of(ext, None))
            else:
                timing, sections = _time_in_process(ext, decoded, values, gpu, probe)
        except ExtractorUnavailable as e:
            timing, sections = GpuTiming(ext.name, "unavailable", reason=str(e)), None
        except Exception as e:  # an extractor bug must not stop the benchmark
            timing, sections = GpuTiming(ext.name, "failed", reason=f"{type(e).__name__}: {e}"), None
        del ext
        gpu.free()
        timings.append(timing)
        if sections is not None:
            timing.audio_s = audio_s
            timing.failed_clips = sum(not isinstance(s, Section) for s in sections)
            values[timing.name] = [s.values if isinstance(s, Section) else {} for s in sections]
            if timing.name == "asr":
                timing.transcripts = transcript_stats(
                    [{**v, "duration_s": a.duration_s} for v, a in zip(values["asr"], decoded)], whisper_dir
                )
        report(timings)
    return timings


def _time_in_process(
    ext: Extractor, decoded: list, values: dict[str, list[dict]], gpu: Gpu, probe: WhisperProbe
) -> tuple[GpuTiming, list]:
    clips = clips_for(ext, decoded, values)
    gpu.free()
    gpu.reset_peak()
    before = gpu.allocated_gib()
    start = time.perf_counter()
    ext.load()
    gpu.sync()
    load_s = time.perf_counter() - start
    weights = None if before is None else round(gpu.allocated_gib() - before, 2)
    ext.extract(clips[:1])  # warm-up: lazy imports, kernel selection and first allocations are not timed
    probe.stats = DecodeStats()
    gpu.reset_peak()
    start = time.perf_counter()
    sections = ext.extract(clips)
    gpu.sync()
    seconds = time.perf_counter() - start
    where = "batched, this process" if ext.batched else "per clip, this process"
    timing = GpuTiming(
        ext.name,
        "ok",
        load_s,
        seconds,
        len(clips),
        device=ext.device,
        where=where,
        batch=_batch_of(ext, probe),
        weights_gib=weights,
        peak_gib=gpu.peak_gib(),
        whisper=probe.stats.summary() if probe.stats.generate_calls else None,
    )
    return timing, sections


def print_timings(timings: list[GpuTiming]) -> None:
    print(
        f"\n{'extractor':<10} {'status':<11} {'device':<6} {'load s':>7} {'run s':>8} {'clips/s':>8} "
        f"{'x real':>7} {'weights':>7} {'peak':>6}  batch"
    )
    for t in timings:
        if t.status != "ok":
            print(f"{t.name:<10} {t.status:<11} {'':<6} {'':>7} {'':>8} {'':>8} {'':>7} {'':>7} {'':>6}  {t.reason}")
            continue
        gib = lambda v: f"{v:.2f}" if v is not None else "-"  # noqa: E731
        failed = f"; {t.failed_clips} clips failed" if t.failed_clips else ""
        print(
            f"{t.name:<10} {t.status:<11} {t.device:<6} {t.load_s:>7.2f} {t.seconds:>8.2f} {t.clips_per_s:>8.1f} "
            f"{t.x_real_time:>7.1f} {gib(t.weights_gib):>7} {gib(t.peak_gib):>6}  {t.batch}{failed}"
        )
    print("  (x real: audio seconds / processing seconds; weights and peak: GPU GiB)")


# ---------------------------------------------------------------------------------------
# The whole Stage 1


def time_stage1(folder: Path, options, gpu: Gpu, probe: WhisperProbe, audio_s: float, clips: int) -> dict:
    from trace_eval.stage1.pipeline import run_blueprints

    gpu.free()
    gpu.reset_peak()
    probe.stats = DecodeStats()
    start = time.perf_counter()
    summary = run_blueprints(folder, options)
    gpu.sync()
    wall = time.perf_counter() - start
    target_s = TARGET["seconds"] * clips / TARGET["clips"]
    return {
        "wall_s": round(wall, 2),
        "x_real_time": round(audio_s / wall, 1),
        "clips_per_s": round(clips / wall, 2),
        "peak_gib": gpu.peak_gib(),
        "device": summary.device,
        "profile": summary.profile,
        "computed": summary.computed,
        "failed": summary.failed,
        "seconds_per_extractor": summary.seconds_per_extractor,
        "sections": summary.sections,
        "unavailable": summary.unavailable,
        "failures": [f"{f.path} {f.stage}: {f.reason}" for f in summary.failures[:20]],
        "target": {
            **TARGET,
            "seconds_for_these_clips": round(target_s, 1),
            "x_real_time_needed": round(audio_s / target_s, 1),
            "met": wall <= target_s,
        },
        "whisper": probe.stats.summary(),
    }


# ---------------------------------------------------------------------------------------


def _versions() -> dict[str, str | None]:
    found = {}
    for package in (
        "torch",
        "torchaudio",
        "transformers",
        "funasr",
        "speechbrain",
        "onnxruntime",
        "numpy",
        "faster-whisper",
        "praat-parselmouth",
        "soundfile",
    ):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = None
    return found


def _commit() -> str | None:
    try:
        return (
            subprocess.run(
                ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10
            ).stdout.strip()
            or None
        )
    except (OSError, subprocess.SubprocessError):
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--clips", type=int, default=1000, help="unique clips of 5-20 s (default 1000, SpeakBench size)"
    )
    parser.add_argument("--device", default="auto", help="auto | cpu | cuda | cuda:N (default auto)")
    parser.add_argument(
        "--models",
        type=Path,
        default=Path(tempfile.gettempdir()) / "trace-standins",
        help="folder of the paper profile's weights, one folder per model card "
        "(default: /tmp/trace-standins, stand-ins built there when missing)",
    )
    parser.add_argument("--no-build", action="store_true", help="use --models as it is; never build stand-ins")
    parser.add_argument("--real-weights", action="store_true", help="--models holds the published weights")
    parser.add_argument("--out", type=Path, help="write the JSON report here")
    parser.add_argument("--work", type=Path, help="benchmark folder to write (default: a temporary one)")
    parser.add_argument("--only", help="comma-separated extractors (default: every one the paper profile runs)")
    parser.add_argument("--skip-each", action="store_true", help="only time the whole Stage 1")
    parser.add_argument(
        "--each-clips",
        type=int,
        default=250,
        help="time each extractor alone on the first N clips (default 250; 0: all)",
    )
    parser.add_argument(
        "--deadline-s",
        type=float,
        default=540.0,
        help="start no extractor alone after this many seconds (default 540: a 600 s command)",
    )
    parser.add_argument("--skip-stage1", action="store_true", help="only time the extractors one by one")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="processes for per-clip work")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    started = time.monotonic()

    from trace_eval.stage1.pipeline import BlueprintOptions, build_extractors, resolve_device

    device = resolve_device(args.device)
    models = args.models.expanduser().resolve()
    build_s = None if args.real_weights else ensure_standins(models, not args.no_build)
    if args.real_weights and missing_cards(models):
        raise SystemExit(f"{models} lacks {', '.join(missing_cards(models))}")
    os.environ["TRACE_MODELS_DIR"] = str(models)
    os.environ.setdefault("TRACE_OFFLINE", "1")  # the weights are all in --models; never wait on a network
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    only = [n.strip() for n in args.only.split(",") if n.strip()] if args.only else None
    options = BlueprintOptions(
        only=only, device=device, workers=args.workers, force=True, profile="paper", progress=False, store="bench"
    )  # no settings: the paper profile as users run it; its blueprints stay in the measured folders
    gpu = Gpu(device)
    report: dict = {
        "report": "trace-eval bench_gpu",
        "version": REPORT_VERSION,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": _commit(),
        "machine": {"device": device, "cpu_cores": os.cpu_count(), "python": platform.python_version()},
        "libraries": _versions(),
        "weights": {
            "kind": "published" if args.real_weights else "stand-ins (random weights)",
            "note": None
            if args.real_weights
            else "random-weight stand-ins in the published layouts (full-size when scripts/make_standin_models.py made "
            "them): the timings are real, the cues are not; the Whisper stand-in decodes one planted sentence a window "
            "(trace_eval/stage1/standins.py), so decoding is as long as that sentence (stage1.transcripts)",
            "models_dir": str(models),
            "built_s": round(build_s, 1) if build_s is not None else None,
        },
        "settings": {"profile": "paper", "workers": args.workers, "overrides": {}},  # the tool's own settings
        "target": TARGET,
        "reference": REFERENCE,
    }

    def save(**parts) -> None:
        report.update(parts)
        if args.out:
            write_json(args.out, report)

    with contextlib.ExitStack() as stack:
        folder = args.work or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench_gpu_")))
        start = time.perf_counter()
        paths = make_benchmark(args.clips, folder, args.seed)
        durations = [sf.info(p).duration for p in paths]
        audio_s = float(sum(durations))
        save(
            clips={
                "count": len(paths),
                "audio_s": round(audio_s, 1),
                "mean_s": round(audio_s / len(paths), 2),
                "min_s": round(min(durations), 2),
                "max_s": round(max(durations), 2),
                "unique": True,
                "seed": args.seed,
                "made_s": round(time.perf_counter() - start, 1),
                "folder": str(folder),
            }
        )
        print(
            f"{len(paths)} unique clips, {audio_s / 60:.1f} min of audio, made in {report['clips']['made_s']} s; "
            f"device {device}; weights: {report['weights']['kind']}"
            + (f" (built in {build_s:.0f} s)" if build_s else ""),
            flush=True,
        )
        probe = stack.enter_context(WhisperProbe(gpu))

        if not args.skip_stage1:  # first: the headline number, measured even when the rest runs out of time
            print(
                "\nthe whole Stage 1 (run_blueprints, paper profile, everything recomputed, loading included) ...",
                flush=True,
            )
            stage1 = time_stage1(folder, options, gpu, probe, audio_s, len(paths))
            stage1["transcripts"] = transcript_stats(_blueprints(folder, paths), models / "whisper-large-v3")
            save(stage1=stage1)
            _print_stage1(stage1)
            invariance = batch_invariance(folder, paths, options, args.seed)
            save(batch_invariance=invariance)
            print(
                f"the first {invariance['clips']} clips again as a benchmark of their own: "
                + (
                    "the same blueprints"
                    if invariance["same"]
                    else f"values differ: {invariance['values_that_differ']}; first: {invariance['examples'][:3]}"
                ),
                flush=True,
            )
        save(machine={**report["machine"], **gpu.describe()})
        if report["machine"]["gpu"]:
            print(f"GPU: {report['machine']['gpu']}, {report['machine']['gpu_memory_gib']} GiB", flush=True)

        if not args.skip_each:
            each = paths[: args.each_clips] if args.each_clips else paths
            print(f"\neach extractor alone (paper profile, {len(each)} clips):", flush=True)
            extractors, _ = build_extractors(options, device)
            timings = time_each(
                extractors,
                device,
                each,
                args.workers,
                gpu,
                probe,
                started + args.deadline_s,
                lambda done: save(extractors=[t.to_json() for t in done]),
                models / "whisper-large-v3",
            )
            del extractors
            gpu.free()
            print_timings(timings)
            asr = next((t for t in timings if t.name == "asr" and t.status == "ok"), None)
            if asr:
                _print_whisper(asr.whisper, asr.transcripts)
    if args.out:
        print(f"\nreport: {args.out}")
    return 0


def _print_whisper(whisper: dict | None, transcripts: dict | None) -> None:
    if transcripts:
        tokens, logprob = transcripts["text_tokens_per_window"], transcripts["avg_logprob"]
        print(
            f"  whisper wrote: {transcripts['windows_decoded']} windows of {transcripts['clips']} clips decoded; "
            f"text tokens per window {tokens['mean'] if tokens else '-'} (min {tokens['min'] if tokens else '-'}, "
            f"max {tokens['max'] if tokens else '-'}; speech of these lengths: about "
            f"{transcripts['speech_tokens_per_window']}); temperatures {transcripts['temperatures']}, "
            f"{transcripts['windows_that_fell_back']} fell back; avg log-prob {logprob['mean'] if logprob else '-'}; "
            f"{transcripts['planted_sentence']} transcripts are the stand-in's planted sentence; "
            f"{transcripts['words_per_clip']} words per clip, {transcripts['clips_with_empty_transcript']} empty"
        )
    if whisper and whisper["generate_calls"]:
        rows = whisper["rows_per_call"]
        print(
            f"  whisper ran: {whisper['generate_calls']} generate calls of {rows['mean']} rows (max {rows['max']}), "
            f"{whisper['generate_s']} s inside generate; VAD {whisper['vad_s']} s for {whisper['vad_clips']} clips"
        )


def _print_stage1(stage1: dict) -> None:
    target = stage1["target"]
    print(
        f"  wall {stage1['wall_s']:.1f} s: {stage1['x_real_time']}x real time, {stage1['clips_per_s']} clips/s, "
        f"peak GPU {stage1['peak_gib'] if stage1['peak_gib'] is not None else '-'} GiB; "
        f"{stage1['computed']} blueprints, {stage1['failed']} failed"
    )
    print(f"  seconds per extractor: {stage1['seconds_per_extractor']}")
    if stage1["unavailable"]:
        print(f"  unavailable: {stage1['unavailable']}")
    print(
        f"  target: {target['seconds_for_these_clips']} s for these clips ({target['seconds']:.0f} s per "
        f"{target['clips']} on {target['gpu']}, {target['x_real_time_needed']}x real time): "
        f"{'met' if target['met'] else 'NOT met'}"
    )
    print(
        f"  reference: {REFERENCE['what']}: {REFERENCE['audio_minutes']:.0f} min in {REFERENCE['seconds']:.0f} s, "
        f"{REFERENCE['x_real_time']}x real time"
    )
    _print_whisper(stage1["whisper"], stage1["transcripts"])


if __name__ == "__main__":
    raise SystemExit(main())
