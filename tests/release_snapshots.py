"""Small local snapshots laid out exactly as the releases are, and label files of the same shape.

SpeakBench: parquet with the release's columns and Audio structs (`{"bytes", "path"}`) at 16 and 24 kHz.
S2S-Arena: the two dataset repositories as folders of wav and mp3 files. SageLM: LLaMA-Factory JSON rows
and the audio repository's folders. The speech is espeak-ng's (trace_eval.synth); nothing is downloaded,
and no released label file is copied: the label files here are written by the tests.
"""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

from trace_eval.synth import Voice, speak

SENTENCES = [
    "Please count from one to five slowly.",
    "One, two, three, four, five.",
    "One two three four five six seven.",
    "Say hello in a happy voice.",
    "Hello there, what a lovely day.",
    "Hello.",
    "Tell me the capital of France.",
    "The capital of France is Paris.",
    "I do not know.",
]


def make_clips(folder: Path) -> dict[tuple[int, int], bytes]:
    """Wav bytes of each sentence at 16 and 24 kHz."""
    made = {}
    for n, text in enumerate(SENTENCES):
        for rate in (16000, 24000):
            path = speak(text, folder / f"{n}_{rate}.wav", Voice(sample_rate=rate, wpm=200))
            made[(n, rate)] = path.read_bytes()
    return made


def audio_struct(data: bytes | None, name: str) -> dict | None:
    return None if data is None else {"bytes": data, "path": name}


# The SpeakBench-like rows: (i, instruction_ID, instruction sentence, a sentence, b sentence, model_a, model_b)
SPEAKBENCH_ROWS = [
    (0, 0, 0, 1, 2, "gpt4o-audio", "moshi"),  # a few-shot example: in no label item
    (1, 3, 0, 1, 2, "gpt4o-audio", "diva+tts"),
    (2, 7, 3, 4, 5, "moshi", "gpt4o-audio"),
    (3, 9, 6, 7, 8, "diva+tts", "gemini2-flash-exp"),
]
RATE = {"moshi": 24000, "gemini2-flash-exp": 24000}  # the others at 16 kHz


def write_speakbench(root: Path, clips: dict, rows=SPEAKBENCH_ROWS, broken: dict | None = None) -> Path:
    """A parquet snapshot (two row groups) of the SpeakBench release's columns; `broken` replaces the bytes of
    (i, column) cells (None: no audio)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    broken = broken or {}
    columns: dict[str, list] = {
        k: []
        for k in (
            "i",
            "instruction_ID",
            "instruction",
            "instruction_text",
            "audio_a",
            "audio_b",
            "model_a",
            "model_b",
            "label",
        )
    }
    for i, iid, q, a, b, model_a, model_b in rows:
        cells = {
            "instruction": clips[(q, 16000)],
            "audio_a": clips[(a, RATE.get(model_a, 16000))],
            "audio_b": clips[(b, RATE.get(model_b, 16000))],
        }
        cells.update({column: data for (row, column), data in broken.items() if row == i})
        columns["i"].append(i)
        columns["instruction_ID"].append(iid)
        columns["instruction_text"].append(SENTENCES[q])
        columns["model_a"].append(model_a)
        columns["model_b"].append(model_b)
        columns["label"].append("a")
        for column, data in cells.items():
            columns[column].append(audio_struct(data, f"{column}.wav"))
    audio = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    audio_columns = ("instruction", "audio_a", "audio_b")
    table = pa.table({k: pa.array(v, type=audio if k in audio_columns else None) for k, v in columns.items()})
    path = root / "data" / "train-00000-of-00001.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, row_group_size=2)
    return root


def speakbench_labels(path: Path, rows=SPEAKBENCH_ROWS, change: dict | None = None) -> Path:
    """A label file of the TRACE release's shape for the labelled rows; `change` edits fields by index."""
    items = []
    for i, iid, q, _a, _b, model_a, model_b in rows:
        if iid == 0:
            continue
        folder = f"audio_data/speakbench508_audio/{i}"
        item = {
            "index": i,
            "instruction_path": f"{folder}/instruction.wav",
            "instruction_text": SENTENCES[q],
            "model_a": model_a,
            "model_b": model_b,
            "audio1_path": f"{folder}/audio_a.wav",
            "audio2_path": f"{folder}/audio_b.wav",
            "label": {"content": "1", "voice_quality": "both_good", "paralinguistics": "2", "overall": "1"},
            "instruction_id": iid,
        }
        item.update((change or {}).get(i, {}))
        items.append(item)
    path.write_text(json.dumps(items, indent=2))
    return path


def to_mp3(wav: bytes, out: Path) -> Path:
    src = out.with_suffix(".src.wav")
    src.write_bytes(wav)
    subprocess.run(["sox", "-R", str(src), str(out)], check=True)
    src.unlink()
    return out


def decode(data: bytes):
    import soundfile as sf

    return sf.read(io.BytesIO(data), dtype="int16")
