"""The DNSMOS networks and their arithmetic, as the published scorer computes them.

The scores are those of Microsoft's published scorer (DNS-Challenge
`dnsmos_local.py`, also shipped as the `speechmos` package, whose ONNX files this
extractor loads): 16 kHz audio, a clip shorter than one 9.01 s window is repeated
(doubled) until it fills one, windows start every second, each window is scored
by the P.835 network on its samples and by the P.808 network on the log-mel
spectrogram of its first 144000 samples, the P.835 outputs go through the
published polynomial calibration, and the window scores are averaged.

What makes it fast without changing a score:
- consecutive windows overlap by 8 of their 9 seconds, so the expensive
  full-resolution convolutions at the front of the P.835 network (the "head",
  ~95% of its cost) run once over each stretch of consecutive windows instead of
  once per window; only the 4 frames at each window edge, where the network's
  zero padding differs, are computed per window. The rest of the network (the
  "tail") then runs on each window. Likewise the P.808 spectrogram is computed
  once per stretch of a few windows and only each window's first and last frame
  are redone;
- windows of many clips are stacked into one ONNX run (on a CPU this alone gains
  nothing: the convolutions already keep the cores busy).
Without the `onnx` package (needed to split the network) whole windows are scored.

Memory does not grow with a clip's length: the head runs over a stretch a block
of frames at a time, and each network sees a few windows at a time; only the
scores of each window (a few numbers) are kept until they are averaged.

`score_one_window_at_a_time` is the plain reference loop, one window per ONNX run,
kept to check the fast path against and to time it.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from extractors.base import ClipError
from extractors.numerics import onnx_session_options

__all__ = [
    "DnsmosScorer",
    "DnsmosScores",
    "INPUT_LENGTH_S",
    "LAYOUTS",
    "SAMPLE_RATE",
    "WINDOW_SAMPLES",
    "score_one_window_at_a_time",
    "tile_to_window",
    "window_starts",
]

# How onnxruntime lays out the convolutions: "nchwc" blocks channels as the CPU's instruction set suits (16 with
# AVX-512, 8 without), faster; "reference" keeps the sums of the numeric class (below its layout level).
LAYOUTS = ("nchwc", "reference")
SAMPLE_RATE = 16000
INPUT_LENGTH_S = 9.01
WINDOW_SAMPLES = int(INPUT_LENGTH_S * SAMPLE_RATE)  # 144160
HOP_SAMPLES = SAMPLE_RATE  # a window starts every second
FRAME_SAMPLES = 160  # hop of the P.835 frames and of the P.808 mel frames
FRAMES_PER_WINDOW = 900
# The four 3x3 convolutions of the head each see one frame either side, so a head
# output frame depends on input frames up to 4 away: only 4 frames per window edge
# feel the window's zero padding.
EDGE_FRAMES = 4
EDGE_INPUT_FRAMES = 2 * EDGE_FRAMES
HEAD_CHANNELS, HEAD_BINS = 32, 161  # the head's output: (N, 32, frames, 161)
HEAD_BLOCK_FRAMES = 1000  # the head runs over a stretch 10 s at a time (21 MB of output)
SPECTROGRAM_WINDOWS = 16  # one P.808 spectrogram serves up to 16 consecutive windows (25 s, 10 MB)
# P.808 mel spectrogram of the reference: n_fft 321 (sic), hop 160, 120 bands, on the
# window minus its last 160 samples.
MEL_N_FFT = 321
MEL_BANDS = 120
MEL_SAMPLES = WINDOW_SAMPLES - FRAME_SAMPLES

# Published calibration polynomials (highest power first) for the P.835 outputs.
_CALIBRATION = {
    True: {  # personalized model (pdnsmos_models/sig_bak_ovr.onnx)
        "sig": [-0.01019296, 0.02751166, 1.19576786, -0.24348726],
        "bak": [-0.04976499, 0.44276479, -0.1644611, 0.96883132],
        "ovr": [-0.00533021, 0.005101, 1.18058466, -0.11236046],
    },
    False: {  # non-personalized model (dnsmos_models/sig_bak_ovr.onnx)
        "sig": [-0.08397278, 1.22083953, 0.0052439],
        "bak": [-0.13166888, 1.60915514, -0.39604546],
        "ovr": [-0.06766283, 1.11546468, 0.04602535],
    },
}

# Files inside the model directory (the layout of the speechmos package).
PERSONALIZED_FILE = "pdnsmos_models/sig_bak_ovr.onnx"
NON_PERSONALIZED_FILE = "dnsmos_models/sig_bak_ovr.onnx"
P808_FILE = "dnsmos_models/model_v8.onnx"

# Tensor names inside the P.835 graph where it is cut into head and tail.
_FRAMES_TENSOR = "mos_estimator_logpow/concat:0"  # (N, 900, 320) frames of 320 samples, hop 160
_HEAD_TENSOR = "mos_estimator_logpow/conv2d_3/Relu:0"  # (N, 32, 900, 161) before the first pooling
_OUTPUT_TENSOR = "Identity:0"  # (N, 3) raw SIG, BAK, OVRL


# ---------------------------------------------------------------------------------------
# Windows, exactly as the reference picks them


def tile_to_window(samples: np.ndarray) -> np.ndarray:
    """A clip shorter than one window, doubled until it fills one (as the reference does)."""
    samples = np.asarray(samples, dtype=np.float32)
    if len(samples) == 0:
        raise ClipError("no samples")
    while len(samples) < WINDOW_SAMPLES:
        samples = np.append(samples, samples)
    return samples


def window_starts(n_samples: int) -> list[int]:
    """Start sample of every window the reference scores in a (tiled) clip of n_samples.

    The reference computes each window's end as int((idx + 9.01) * 16000); floating
    point makes that one sample short for idx 7..23 (and others), and the reference
    skips those windows. They are skipped here too, so scores stay comparable.
    """
    num_hops = int(np.floor(n_samples / SAMPLE_RATE) - INPUT_LENGTH_S) + 1
    starts = []
    for idx in range(num_hops):
        start = int(idx * HOP_SAMPLES)
        end = min(int((idx + INPUT_LENGTH_S) * HOP_SAMPLES), n_samples)
        if end - start >= WINDOW_SAMPLES:
            starts.append(start)
    return starts


# ---------------------------------------------------------------------------------------
# P.808 input: log-mel spectrogram of each window


def _hz_to_mel(hz: np.ndarray | float) -> np.ndarray:
    """Slaney's mel scale: linear below 1 kHz (200/3 Hz a mel), then 27 mels per factor 6.4."""
    hz = np.asarray(hz, dtype=np.float64)
    return np.where(hz >= 1000.0, 15.0 + np.log(np.maximum(hz, 1000.0) / 1000.0) / _MEL_LOG_STEP, hz / (200.0 / 3))


def _mel_to_hz(mel: np.ndarray) -> np.ndarray:
    return np.where(mel >= 15.0, 1000.0 * np.exp(_MEL_LOG_STEP * (mel - 15.0)), mel * (200.0 / 3))


_MEL_LOG_STEP = np.log(6.4) / 27.0


def mel_basis() -> np.ndarray:
    """The reference's mel filters, (120, 161) float32: librosa's defaults (Slaney scale, triangles of unit area)."""
    bins = np.fft.rfftfreq(MEL_N_FFT, 1.0 / SAMPLE_RATE)
    edges = _mel_to_hz(np.linspace(_hz_to_mel(0.0), _hz_to_mel(SAMPLE_RATE / 2), MEL_BANDS + 2))
    width = np.diff(edges)
    distance = edges[:, np.newaxis] - bins[np.newaxis, :]
    rising, falling = -distance[:-2] / width[:-1, np.newaxis], distance[2:] / width[1:, np.newaxis]
    weights = np.maximum(0.0, np.minimum(rising, falling)).astype(np.float32)
    weights *= (2.0 / (edges[2:] - edges[:-2]))[:, np.newaxis]
    return weights


def hann_window() -> np.ndarray:
    """The periodic 321-point Hann window librosa.stft uses, float64."""
    return (0.5 + 0.5 * np.cos(np.linspace(-np.pi, np.pi, MEL_N_FFT + 1)))[:-1]


def _power_frames(frames: np.ndarray, window: np.ndarray) -> np.ndarray:
    """|rfft|^2 of (n, 321) frames, with librosa.stft's precision (float64 FFT stored as complex64)."""
    spectrum = np.fft.rfft(frames * window, axis=-1).astype(np.complex64)
    return np.abs(spectrum) ** 2


def _to_p808_features(mel_power: np.ndarray) -> np.ndarray:
    """(n, 900, 120) mel power -> (power_to_db(ref=max per window, top_db=80) + 40) / 40."""
    amin, top_db = np.float32(1e-10), np.float32(80.0)
    ref = mel_power.max(axis=(1, 2), keepdims=True)
    log_spec = np.float32(10.0) * np.log10(np.maximum(amin, mel_power))
    log_spec -= np.float32(10.0) * np.log10(np.maximum(amin, ref))
    log_spec = np.maximum(log_spec, log_spec.max(axis=(1, 2), keepdims=True) - top_db)
    return ((log_spec + 40) / 40).astype(np.float32)


def p808_features(tiled: np.ndarray, starts: list[int], mel_basis: np.ndarray, window: np.ndarray) -> np.ndarray:
    """P.808 input of some windows of one clip, from one spectrogram of the stretch they cover.

    A mel frame of a window is centred on a multiple of 160 samples and spans 321;
    all but the first and last frame of a window lie inside it and equal the frame
    of the stretch at the same place. The first and last are redone with the
    zero padding the reference's per-window librosa call gives them.
    """
    half = MEL_N_FFT // 2  # 160
    first = starts[0]
    span = tiled[first : starts[-1] + MEL_SAMPLES]
    inner = np.lib.stride_tricks.sliding_window_view(span, MEL_N_FFT)[
        ::FRAME_SAMPLES
    ]  # row i: frame at first+(i+1)*160
    span_power = _power_frames(inner, window)
    edges = np.zeros((2 * len(starts), MEL_N_FFT), dtype=np.float32)
    for i, start in enumerate(starts):
        edges[2 * i, half:] = tiled[start : start + half + 1]  # frame 0: 160 zeros, then 161 samples
        edges[2 * i + 1, :-1] = tiled[start + MEL_SAMPLES - 2 * half : start + MEL_SAMPLES]  # frame 899: 320, one zero
    edge_power = _power_frames(edges, window)
    power = np.empty((len(starts), FRAMES_PER_WINDOW, span_power.shape[1]), dtype=np.float32)
    for i, start in enumerate(starts):
        row = (start - first) // FRAME_SAMPLES  # the stretch's row of window frame 1
        power[i, 0] = edge_power[2 * i]
        power[i, 1:-1] = span_power[row : row + FRAMES_PER_WINDOW - 2]
        power[i, -1] = edge_power[2 * i + 1]
    mel_power = power @ mel_basis.T  # (n, 900, 120)
    return _to_p808_features(mel_power)


def p808_features_reference(segment: np.ndarray) -> np.ndarray:
    """The reference's P.808 input for one 9.01 s window, with librosa: (900, 120)."""
    import librosa

    mel = librosa.feature.melspectrogram(
        y=segment[:-FRAME_SAMPLES], sr=SAMPLE_RATE, n_fft=MEL_N_FFT, hop_length=FRAME_SAMPLES, n_mels=MEL_BANDS
    )
    return ((librosa.power_to_db(mel, ref=np.max) + 40) / 40).T.astype(np.float32)


# ---------------------------------------------------------------------------------------
# Scores


@dataclass
class DnsmosScores:
    """Window-averaged scores of one clip (MOS, 1-5), before rounding."""

    signal: float
    background: float
    overall: float
    p808: float
    windows: int
    # The non-personalized P.835 model's scores, when asked for.
    plain_signal: float | None = None
    plain_background: float | None = None
    plain_overall: float | None = None


def calibrate(raw: np.ndarray, personalized: bool) -> np.ndarray:
    """(n, 3) raw SIG, BAK, OVRL -> calibrated MOS, float64, as np.poly1d does it in the reference."""
    coefficients = _CALIBRATION[personalized]
    return np.stack([np.polyval(coefficients[k], raw[:, i]) for i, k in enumerate(("sig", "bak", "ovr"))], axis=1)


def _frames_of(samples: np.ndarray, first_frame: int, count: int) -> np.ndarray:
    """(count, 320) P.835 frames: frame k holds samples [k*160, k*160 + 320)."""
    span = samples[first_frame * FRAME_SAMPLES : (first_frame + count + 1) * FRAME_SAMPLES]
    return np.lib.stride_tricks.sliding_window_view(span, 2 * FRAME_SAMPLES)[::FRAME_SAMPLES]


def _runs_of_consecutive(starts: list[int]) -> list[list[int]]:
    """Window starts grouped into runs one hop apart."""
    runs: list[list[int]] = []
    for start in starts:
        if runs and start - runs[-1][-1] == HOP_SAMPLES:
            runs[-1].append(start)
        else:
            runs.append([start])
    return runs


class _Session:
    """An ONNX session over one graph, run on at most `most` windows at a time."""

    def __init__(self, model: bytes | str, options: Any, providers: list, most: int):
        import onnxruntime as ort

        self.session = ort.InferenceSession(model, sess_options=options, providers=providers)
        self.input = self.session.get_inputs()[0].name
        self.most = most

    def __call__(self, batch: np.ndarray) -> np.ndarray:
        return self.session.run(None, {self.input: np.ascontiguousarray(batch)})[0]


class _Batch:
    """The inputs of one network, filled in place a window at a time and run `most` windows at a time.

    Memory holds one batch of inputs, whatever the number or length of the clips;
    the outputs (a few numbers per window) come back in the order the windows came.
    """

    def __init__(self, session: _Session, shape: tuple[int, ...]):
        self.session = session
        self.inputs = np.empty((session.most, *shape), np.float32)
        self.filled = 0
        self.outputs: list[np.ndarray] = []

    def next_input(self) -> np.ndarray:
        """The input of the next window, to be filled by the caller."""
        if self.filled == len(self.inputs):
            self._run()
        self.filled += 1
        return self.inputs[self.filled - 1]

    def outputs_in_order(self) -> np.ndarray:
        self._run()
        return np.concatenate(self.outputs)

    def _run(self) -> None:
        if self.filled:
            self.outputs.append(self.session(self.inputs[: self.filled]))
            self.filled = 0


def _split_p835(path: Path) -> tuple[bytes, bytes] | None:
    """The P.835 graph cut into head (frames -> features) and tail (features -> scores), or None without `onnx`."""
    try:
        import onnx
    except ImportError:
        return None
    model = onnx.load(str(path))
    head = _subgraph(
        model,
        _FRAMES_TENSOR,
        ["N", "frames", 2 * FRAME_SAMPLES],
        _HEAD_TENSOR,
        ["N", HEAD_CHANNELS, "frames", HEAD_BINS],
    )
    tail = _subgraph(model, _HEAD_TENSOR, ["N", HEAD_CHANNELS, FRAMES_PER_WINDOW, HEAD_BINS], _OUTPUT_TENSOR, ["N", 3])
    return head, tail


def _subgraph(model: Any, input_name: str, input_shape: list, output_name: str, output_shape: list) -> bytes:
    """The nodes of `model` between two tensors, as a model of its own (serialized)."""
    import onnx
    from onnx import helper

    producer = {out: node for node in model.graph.node for out in node.output}
    if input_name not in {i for node in model.graph.node for i in node.input} or output_name not in producer:
        raise ValueError(f"not the DNSMOS P.835 graph: no tensor {input_name} or {output_name}")
    keep: set[int] = set()
    todo = [output_name]
    while todo:
        tensor = todo.pop()
        node = producer.get(tensor)
        if tensor == input_name or node is None or id(node) in keep:
            continue
        keep.add(id(node))
        todo.extend(node.input)
    nodes = [node for node in model.graph.node if id(node) in keep]  # graph order is topological
    used = {i for node in nodes for i in node.input}
    graph = helper.make_graph(
        nodes,
        f"{input_name} -> {output_name}",
        [helper.make_tensor_value_info(input_name, onnx.TensorProto.FLOAT, input_shape)],
        [helper.make_tensor_value_info(output_name, onnx.TensorProto.FLOAT, output_shape)],
        [init for init in model.graph.initializer if init.name in used],
    )
    part = helper.make_model(graph, opset_imports=model.opset_import, ir_version=model.ir_version)
    return part.SerializeToString()


class _HeadStream:
    """The head's output over a run of frames, as one call over the whole run gives it, computed a
    block at a time and kept only while a window still needs it (memory bounded however long the run).

    A block is computed with EDGE_FRAMES frames of context either side (within the run) and
    those are dropped: every frame kept saw the same inputs as in one call over the run.
    """

    def __init__(self, head: _Session, samples: np.ndarray, first: int, count: int):
        self.head, self.samples = head, samples
        self.first, self.end = first, first + count
        self.computed = first  # frames before this one are computed
        self.blocks: list[tuple[int, np.ndarray]] = []  # (first frame, (channels, frames, bins))

    def copy_window(self, frame: int, out: np.ndarray) -> None:
        """Frames frame .. frame+899 of the run's head output into `out`."""
        last = frame + FRAMES_PER_WINDOW
        while self.computed < last:
            self._compute_block()
        self.blocks = [(start, block) for start, block in self.blocks if start + block.shape[1] > frame]
        for start, block in self.blocks:
            low, high = max(start, frame), min(start + block.shape[1], last)
            if low < high:
                out[:, low - frame : high - frame] = block[:, low - start : high - start]

    def _compute_block(self) -> None:
        start, end = self.computed, min(self.computed + HEAD_BLOCK_FRAMES, self.end)
        low, high = max(start - EDGE_FRAMES, self.first), min(end + EDGE_FRAMES, self.end)
        features = self.head(_frames_of(self.samples, low, high - low)[np.newaxis])[0]
        self.blocks.append((start, features[:, start - low : end - low]))
        self.computed = end


class _P835:
    """One DNSMOS P.835 network with its calibration."""

    def __init__(self, path: Path, personalized: bool, options: Any, providers: list, most: int):
        self.path, self.personalized = path, personalized
        self._setup = (options, providers, most)
        parts = _split_p835(path)
        self.head = self.tail = None
        if parts is not None:
            self.head = _Session(parts[0], *self._setup)
            self.tail = _Session(parts[1], *self._setup)

    @functools.cached_property
    def whole(self) -> _Session:
        """The network in one piece: for whole windows without `onnx`, and for the reference loop."""
        return _Session(str(self.path), *self._setup)

    def batch(self) -> _Batch:
        if self.head is None or self.tail is None:  # set together, from the split network's two parts
            return _Batch(self.whole, (WINDOW_SAMPLES,))
        return _Batch(self.tail, (HEAD_CHANNELS, FRAMES_PER_WINDOW, HEAD_BINS))

    def add_run(self, tiled: np.ndarray, run: list[int], batch: _Batch) -> None:
        """The inputs of a run of consecutive windows into `batch`: window samples, or the head's
        output shared by the run with each window's edge frames redone under its own zero padding."""
        if self.head is None:
            for start in run:
                batch.next_input()[:] = tiled[start : start + WINDOW_SAMPLES]
            return
        first = run[0] // FRAME_SAMPLES
        stream = _HeadStream(self.head, tiled, first, (run[-1] - run[0]) // FRAME_SAMPLES + FRAMES_PER_WINDOW)
        for w, start in enumerate(run):
            frame = start // FRAME_SAMPLES
            window = batch.next_input()
            stream.copy_window(frame, window)
            # A run's first and last window edges are the run's own: their padding is already the window's.
            edges = [] if w == 0 else [frame]
            if w < len(run) - 1:
                edges.append(frame + FRAMES_PER_WINDOW - EDGE_INPUT_FRAMES)
            if edges:
                out = self.head(np.stack([_frames_of(tiled, e, EDGE_INPUT_FRAMES) for e in edges]))
                if w > 0:
                    window[:, :EDGE_FRAMES] = out[0][:, :EDGE_FRAMES]
                if w < len(run) - 1:
                    window[:, -EDGE_FRAMES:] = out[-1][:, EDGE_FRAMES:]

    def scores_of_one_window(self, segment: np.ndarray) -> np.ndarray:
        """Calibrated SIG, BAK, OVRL of one 9.01 s window, by the whole network."""
        return calibrate(self.whole(segment[np.newaxis]), self.personalized)[0]


class DnsmosScorer:
    """The DNSMOS networks, loaded once; scores many clips per call."""

    def __init__(
        self,
        model_dir: Path,
        num_threads: int = 0,
        windows_per_run: int = 8,
        non_personalized: bool = False,
        device: str = "cpu",
        layout: str = "nchwc",
    ):
        import onnxruntime as ort

        if layout not in LAYOUTS:
            raise ValueError(f"layout {layout!r}; expected one of: {', '.join(LAYOUTS)}")
        options = ort.SessionOptions()
        if layout == "reference":  # the numeric class's arithmetic on every CPU
            options = onnx_session_options(options)
        else:  # onnxruntime's every optimisation, its NCHWc layout included: sums that follow the CPU
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = num_threads or os.cpu_count() or 1
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        # Idle ONNX threads sleep instead of spinning: the decode workers need those cores meanwhile.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.device = "cpu"
        providers: list = ["CPUExecutionProvider"]
        if device.startswith("cuda") and "CUDAExecutionProvider" in ort.get_available_providers():
            device_id = int(device.split(":", 1)[1]) if ":" in device else 0
            providers = [("CUDAExecutionProvider", {"device_id": device_id}), "CPUExecutionProvider"]
            self.device = device
        most = max(1, windows_per_run)
        self.p835 = _P835(model_dir / PERSONALIZED_FILE, True, options, providers, most)
        self.plain_p835 = (
            _P835(model_dir / NON_PERSONALIZED_FILE, False, options, providers, most) if non_personalized else None
        )
        self.p808 = _Session(str(model_dir / P808_FILE), options, providers, most)
        self.mel_basis = mel_basis()
        self.mel_window = hann_window()

    @property
    def shares_frames(self) -> bool:
        return self.p835.head is not None

    def score(self, clips: list[np.ndarray]) -> list[DnsmosScores]:
        """Scores of each clip (16 kHz mono float32), window by window: the windows of all clips
        share ONNX runs of a few windows each, so memory does not grow with the clips' length."""
        p808 = _Batch(self.p808, (FRAMES_PER_WINDOW, MEL_BANDS))
        networks = [(net, net.batch()) for net in (self.p835, self.plain_p835) if net is not None]
        counts = []
        for samples in clips:
            tiled = tile_to_window(samples)
            starts = window_starts(len(tiled))
            counts.append(len(starts))
            for run in _runs_of_consecutive(starts):
                for i in range(0, len(run), SPECTROGRAM_WINDOWS):
                    group = run[i : i + SPECTROGRAM_WINDOWS]
                    for features in p808_features(tiled, group, self.mel_basis, self.mel_window):
                        p808.next_input()[:] = features
                for net, batch in networks:
                    net.add_run(tiled, run, batch)
        p808_scores = p808.outputs_in_order()[:, 0]
        calibrated = [calibrate(batch.outputs_in_order(), net.personalized) for net, batch in networks]
        personal, plain = calibrated[0], calibrated[1] if len(calibrated) > 1 else None
        results = []
        offset = 0
        for count in counts:
            rows = slice(offset, offset + count)
            results.append(_average(personal[rows], p808_scores[rows], None if plain is None else plain[rows]))
            offset += count
        return results


def _average(personal: np.ndarray, p808: np.ndarray, plain: np.ndarray | None) -> DnsmosScores:
    sig, bak, ovr = (float(np.mean(personal[:, i])) for i in range(3))
    scores = DnsmosScores(sig, bak, ovr, float(np.mean(p808)), len(personal))
    if plain is not None:
        scores.plain_signal, scores.plain_background, scores.plain_overall = (
            float(np.mean(plain[:, i])) for i in range(3)
        )
    return scores


def score_one_window_at_a_time(scorer: DnsmosScorer, samples: np.ndarray) -> DnsmosScores:
    """The reference loop: each window scored by its own ONNX runs on the whole networks."""
    tiled = tile_to_window(samples)
    personal, plain, p808 = [], [], []
    for start in window_starts(len(tiled)):
        segment = tiled[start : start + WINDOW_SAMPLES]
        features = p808_features_reference(segment)[np.newaxis]
        p808.append(scorer.p808.session.run(None, {scorer.p808.input: features})[0][0, 0])
        personal.append(scorer.p835.scores_of_one_window(segment))
        if scorer.plain_p835:
            plain.append(scorer.plain_p835.scores_of_one_window(segment))
    return _average(np.array(personal), np.array(p808), np.array(plain) if plain else None)
