"""Speed of `prepare speakbench` offline: a parquet snapshot in the release's layout (N rows of espeak-ng
speech, answers at 16 and 24 kHz, 3 clips a row), prepared once from scratch, then again on the complete
folder (which must write nothing).

    python scripts/bench_prepare.py               # 100 rows, 300 clips
    python scripts/bench_prepare.py --rows 508    # the size of the release

Reports clips per second and audio seconds per wall second of the first run, and the time of the no-op
re-run (hashing the sources and checking the outputs).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from release_snapshots import SENTENCES, make_clips  # noqa: E402

from trace_eval.prepare import prepare_speakbench  # noqa: E402

MODELS = ["gpt4o-audio", "moshi", "diva+tts", "gemini2-flash-exp"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100)
    args = parser.parse_args()
    import pyarrow as pa
    import pyarrow.parquet as pq
    import soundfile as sf

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        clips = make_clips(root / "speech")
        cell = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
        rows, items = [], []
        for i in range(args.rows):
            model_a, model_b = MODELS[i % 4], MODELS[(i + 1) % 4]
            rate = {"moshi": 24000, "gemini2-flash-exp": 24000}
            q, a, b = i % 9, (i + 1) % 9, (i + 2) % 9
            rows.append(
                {
                    "i": i,
                    "instruction_ID": 1 + i % 80,
                    "instruction": {"bytes": clips[(q, 16000)], "path": "q.wav"},
                    "instruction_text": SENTENCES[q],
                    "audio_a": {"bytes": clips[(a, rate.get(model_a, 16000))], "path": "a.wav"},
                    "audio_b": {"bytes": clips[(b, rate.get(model_b, 16000))], "path": "b.wav"},
                    "model_a": model_a,
                    "model_b": model_b,
                    "label": "a",
                }
            )
            folder = f"audio_data/speakbench508_audio/{i}"
            items.append(
                {
                    "index": i,
                    "instruction_path": f"{folder}/instruction.wav",
                    "instruction_text": SENTENCES[q],
                    "model_a": model_a,
                    "model_b": model_b,
                    "audio1_path": f"{folder}/audio_a.wav",
                    "audio2_path": f"{folder}/audio_b.wav",
                    "label": {"overall": "1"},
                    "instruction_id": 1 + i % 80,
                }
            )
        schema = (
            pa.schema([(k, cell if k in ("instruction", "audio_a", "audio_b") else pa.string()) for k in rows[0]])
            .set(0, pa.field("i", pa.int64()))
            .set(1, pa.field("instruction_ID", pa.int64()))
        )
        (root / "snapshot/data").mkdir(parents=True)
        pq.write_table(
            pa.Table.from_pylist(rows, schema=schema),
            root / "snapshot/data/train-00000-of-00001.parquet",
            row_group_size=100,
        )
        labels = root / "speakbench.json"
        labels.write_text(json.dumps(items))

        start = time.perf_counter()
        done = prepare_speakbench(root / "bench", root / "snapshot", labels, progress=False)
        first = time.perf_counter() - start
        audio_s = sum(sf.info(p).duration for p in (root / "bench").rglob("*.wav"))
        start = time.perf_counter()
        again = prepare_speakbench(root / "bench", root / "snapshot", labels, progress=False)
        second = time.perf_counter() - start
        assert done.written == 3 * args.rows and again.unchanged
        print(f"machine: {platform.processor() or platform.machine()}, python {platform.python_version()}")
        print(f"{args.rows} rows, {done.written} clips, {audio_s:.0f} s of audio")
        print(f"first run: {first:.2f} s ({done.written / first:.0f} clips/s, {audio_s / first:.0f}x real time)")
        print(f"re-run on the complete folder: {second:.2f} s, nothing written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
