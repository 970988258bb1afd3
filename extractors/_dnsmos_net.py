"""The DNSMOS networks and their arithmetic, as the published scorer computes them.

The scores are those of Microsoft's published scorer (DNS-Challenge
`dnsmos_local.py`, also shipped as the `speechmos` package, whose ONNX files this
extractor loads): 16 kHz audio, a clip shorter than one 9.01 s window is repeated
(doubled) until it fills one, windows start every second, each window is scored
by the P.835 network on its samples and by the P.808 network on the log-mel
spectrogram of its first 144000 samples, the P.835 outputs go through the
published polynomial calibration, and the window scores are averaged.

Two things make it fast without changing a score:
- windows of many clips are stacked into one ONNX run;
- consecutive windows overlap by 8 of their 9 seconds, so the expensive
  full-resolution convolutions at the front of the P.835 network (the "head",
  ~95% of its cost) run once over each stretch of consecutive windows instead of
  once per window; only the 4 frames at each window edge, where the network's
  zero padding differs, are computed per window. The rest of the network (the
  "tail") then runs on each window. Likewise the P.808 spectrogram is computed
  once per clip and only each window's first and last frame are redone.
Without the `onnx` package (needed to split the network) whole windows are scored.
On a CPU, stacking alone gains nothing (the convolutions already keep the cores
busy); sharing the head cuts the work by 2.6x on clips of 5-15 s.

`score_one_window_at_a_time` is the plain reference loop, one window per ONNX run,
kept to check the fast path against and to time it.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from extractors.base import ClipError

__all__ = [
    "DnsmosScorer",
    "DnsmosScores",
    "INPUT_LENGTH_S",
    "SAMPLE_RATE",
    "WINDOW_SAMPLES",
    "score_one_window_at_a_time",
    "tile_to_window",
    "window_starts",
]

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


def _mel_basis() -> np.ndarray:
    import librosa

    return librosa.filters.mel(sr=SAMPLE_RATE, n_fft=MEL_N_FFT, n_mels=MEL_BANDS)  # (120, 161) float32


def _hann_321() -> np.ndarray:
    import scipy.signal

    return scipy.signal.get_window("hann", MEL_N_FFT, fftbins=True)  # float64, as librosa.stft uses it


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
    """P.808 input of every window, from one spectrogram of the whole clip.

    A mel frame of a window is centred on a multiple of 160 samples and spans 321;
    all but the first and last frame of a window lie inside it and equal the frame
    of the whole clip at the same place. The first and last are redone with the
    zero padding the reference's per-window librosa call gives them.
    """
    half = MEL_N_FFT // 2  # 160
    last_start = starts[-1]
    # Clip frame k is centred on sample k*160; frames 1 .. last window's 898th are needed.
    span = tiled[: last_start + MEL_SAMPLES]
    inner = np.lib.stride_tricks.sliding_window_view(span, MEL_N_FFT)[::FRAME_SAMPLES]  # row i = frame i+1
    clip_power = _power_frames(inner, window)
    edges = np.zeros((2 * len(starts), MEL_N_FFT), dtype=np.float32)
    for i, start in enumerate(starts):
        edges[2 * i, half:] = tiled[start : start + half + 1]  # frame 0: 160 zeros, then 161 samples
        edges[2 * i + 1, :-1] = tiled[start + MEL_SAMPLES - 2 * half : start + MEL_SAMPLES]  # frame 899: 320, one zero
    edge_power = _power_frames(edges, window)
    power = np.empty((len(starts), FRAMES_PER_WINDOW, clip_power.shape[1]), dtype=np.float32)
    for i, start in enumerate(starts):
        first = start // FRAME_SAMPLES  # clip frame of window frame 0
        power[i, 0] = edge_power[2 * i]
        power[i, 1:-1] = clip_power[first : first + FRAMES_PER_WINDOW - 2]  # clip frames first+1 .. first+898
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


def _runs_of_consecutive(starts: list[int], most: int) -> list[list[int]]:
    """Window starts grouped into runs one hop apart, each at most `most` long."""
    runs: list[list[int]] = []
    for start in starts:
        if runs and start - runs[-1][-1] == HOP_SAMPLES and len(runs[-1]) < most:
            runs[-1].append(start)
        else:
            runs.append([start])
    return runs


class _Session:
    """An ONNX session over one graph, run on inputs split into runs of at most `most` items."""

    def __init__(self, model: bytes | str, options: Any, providers: list, most: int):
        import onnxruntime as ort

        self.session = ort.InferenceSession(model, sess_options=options, providers=providers)
        self.input = self.session.get_inputs()[0].name
        self.most = most

    def __call__(self, batch: np.ndarray, most: int | None = None) -> np.ndarray:
        most = most or self.most
        outputs = [
            self.session.run(None, {self.input: np.ascontiguousarray(batch[i : i + most])})[0]
            for i in range(0, len(batch), most)
        ]
        return np.concatenate(outputs) if len(outputs) > 1 else outputs[0]


def _split_p835(path: Path) -> tuple[bytes, bytes] | None:
    """The P.835 graph cut into head (frames -> features) and tail (features -> scores), or None without `onnx`."""
    try:
        import onnx
    except ImportError:
        return None
    model = onnx.load(str(path))
    head = _subgraph(model, _FRAMES_TENSOR, ["N", "frames", 2 * FRAME_SAMPLES], _HEAD_TENSOR, ["N", 32, "frames", 161])
    tail = _subgraph(model, _HEAD_TENSOR, ["N", 32, FRAMES_PER_WINDOW, 161], _OUTPUT_TENSOR, ["N", 3])
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


class _P835:
    """One DNSMOS P.835 network with its calibration."""

    def __init__(self, path: Path, personalized: bool, options: Any, providers: list, most: int):
        self.personalized = personalized
        self.whole = _Session(str(path), options, providers, most)
        parts = _split_p835(path)
        self.head = self.tail = None
        if parts is not None:
            self.head = _Session(parts[0], options, providers, most)
            self.tail = _Session(parts[1], options, providers, most)

    def scores(self, clips: list[tuple[np.ndarray, list[int]]]) -> np.ndarray:
        """(total windows, 3) calibrated SIG, BAK, OVRL of the windows of every (tiled samples, starts) pair."""
        if self.head is None:
            windows = np.stack([t[s : s + WINDOW_SAMPLES] for t, starts in clips for s in starts])
            return calibrate(self.whole(windows), self.personalized)
        return calibrate(self._shared_head(clips), self.personalized)

    def scores_of_one_window(self, segment: np.ndarray) -> np.ndarray:
        """Calibrated SIG, BAK, OVRL of one 9.01 s window, by the whole network."""
        return calibrate(self.whole(segment[np.newaxis]), self.personalized)[0]

    def _shared_head(self, clips: list[tuple[np.ndarray, list[int]]]) -> np.ndarray:
        most = self.whole.most
        runs = [(c, run) for c, (_, starts) in enumerate(clips) for run in _runs_of_consecutive(starts, most)]
        # 1. Edge frames of windows inside a run (a run's own ends see the same padding as
        #    their window), for all clips in one stacked head run.
        edge_inputs, edge_slots = [], []
        for c, run in runs:
            tiled = clips[c][0]
            for w, start in enumerate(run):
                frame = start // FRAME_SAMPLES
                if w > 0:
                    edge_inputs.append(_frames_of(tiled, frame, EDGE_INPUT_FRAMES))
                    edge_slots.append((c, start, "left"))
                if w < len(run) - 1:
                    last = frame + FRAMES_PER_WINDOW - EDGE_INPUT_FRAMES
                    edge_inputs.append(_frames_of(tiled, last, EDGE_INPUT_FRAMES))
                    edge_slots.append((c, start, "right"))
        edges = {}
        if edge_inputs:
            # Edge inputs are 8 frames where a window has 900: many more fit in one run.
            outputs = self.head(np.stack(edge_inputs), most=self.head.most * FRAMES_PER_WINDOW // EDGE_INPUT_FRAMES)
            for slot, out in zip(edge_slots, outputs):
                edges[slot] = out[:, :EDGE_FRAMES] if slot[2] == "left" else out[:, EDGE_FRAMES:]
        # 2. Each run's head once, cut into windows, edges patched; tails stacked across clips.
        results: list[np.ndarray] = []
        pending: np.ndarray | None = None  # tail input being filled
        filled = 0
        for c, run in runs:
            tiled = clips[c][0]
            first = run[0] // FRAME_SAMPLES
            count = (run[-1] - run[0]) // FRAME_SAMPLES + FRAMES_PER_WINDOW
            features = self.head(_frames_of(tiled, first, count)[np.newaxis])[0]  # (32, count, 161)
            for start in run:
                if pending is None:
                    channels, _, bins = features.shape
                    pending = np.empty((self.tail.most, channels, FRAMES_PER_WINDOW, bins), np.float32)
                offset = start // FRAME_SAMPLES - first
                window = pending[filled]
                window[:] = features[:, offset : offset + FRAMES_PER_WINDOW]
                if (c, start, "left") in edges:
                    window[:, :EDGE_FRAMES] = edges[(c, start, "left")]
                if (c, start, "right") in edges:
                    window[:, -EDGE_FRAMES:] = edges[(c, start, "right")]
                filled += 1
                if filled == len(pending):
                    results.append(self.tail(pending))
                    filled = 0
        if filled:
            results.append(self.tail(pending[:filled]))
        return np.concatenate(results)


class DnsmosScorer:
    """The DNSMOS networks, loaded once; scores many clips per call."""

    def __init__(self, model_dir: Path, num_threads: int = 0, windows_per_run: int = 8, non_personalized: bool = False,
                 device: str = "cpu"):
        import onnxruntime as ort

        options = ort.SessionOptions()
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
        self.mel_basis = _mel_basis()
        self.mel_window = _hann_321()

    @property
    def shares_frames(self) -> bool:
        return self.p835.head is not None

    def score(self, clips: list[np.ndarray]) -> list[DnsmosScores]:
        """Scores of each clip (16 kHz mono float32), all windows stacked into shared ONNX runs."""
        prepared = []
        for samples in clips:
            tiled = tile_to_window(samples)
            prepared.append((tiled, window_starts(len(tiled))))
        counts = [len(starts) for _, starts in prepared]
        features = np.concatenate([p808_features(t, s, self.mel_basis, self.mel_window) for t, s in prepared])
        p808 = self.p808(features)[:, 0]
        personal = self.p835.scores(prepared)
        plain = self.plain_p835.scores(prepared) if self.plain_p835 else None
        results = []
        offset = 0
        for count in counts:
            rows = slice(offset, offset + count)
            results.append(_average(personal[rows], p808[rows], None if plain is None else plain[rows]))
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
