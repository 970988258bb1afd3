"""SpeakBench with the TRACE labels: 497 pairs of the 508-row Hugging Face release.

The audio is the parquet dataset `potsawee/speakbench-v1-labelled-508` (split `train`; columns `i`,
`instruction_ID`, `instruction` (Audio), `instruction_text`, `audio_a`, `audio_b` (Audio), `model_a`,
`model_b`, `label`), or AudioJudge's prepared `audio_data/` folder. The labels are `data/speakbench.json` of
the TRACE release; its paths (`audio_data/speakbench508_audio/<i>/audio_a.wav`) are where the audio goes,
decoded and written as AudioJudge's preparation writes it: native rate, 16-bit PCM wav, mono.

Each label item is joined to the row whose `i` is its index; the join checks both system names, the
instruction id and its text. The 11 rows with instruction_ID 0 (AudioJudge's few-shot examples) are in no
label item.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from trace_eval.prepare.folder import (
    Clip,
    Plan,
    Prepared,
    PrepareError,
    Problem,
    file_entry,
    file_reader,
    merge_clips,
    prepare_folder,
)
from trace_eval.prepare.hub import (
    GitHubFile,
    Snapshot,
    download_dataset,
    download_label_file,
    local_label_file,
    local_snapshot,
    snapshot_record,
)
from trace_eval.prepare.labels import item_id, read_label_items, same_text
from trace_eval.prepare.tables import Table, open_table

__all__ = ["DATASET", "LABELS", "plan_speakbench", "prepare_speakbench"]

DATASET = "potsawee/speakbench-v1-labelled-508"
LABELS = GitHubFile(
    repo="arjunchandra2/TRACE",
    commit="9cb2a59bedf3d85bffd1446e1555706805fb3ba0",
    path="data/speakbench.json",
    sha256="f375a6a5a202351d53ef0588284fed68ee45dc6bae9556a5417f96979ac16550",
)
INDEX_COLUMNS = ("i", "idx")  # the release names it `i`; AudioJudge's own copy `idx`
AUDIO_COLUMNS = {"instruction_path": "instruction", "audio1_path": "audio_a", "audio2_path": "audio_b"}
# label file field -> dataset column, checked for every item
CHECKED = {
    "model_a": "model_a",
    "model_b": "model_b",
    "instruction_id": "instruction_ID",
    "instruction_text": "instruction_text",
}
AUDIO_DATA = "speakbench508_audio"
_ROW_FOLDER = re.compile(r"/(\d+)/[^/]+$")  # audio_data/speakbench508_audio/<i>/audio_a.wav


def prepare_speakbench(
    out: str | Path,
    source: str | Path | None = None,
    labels: str | Path | None = None,
    revision: str | None = None,
    skip_bad: bool = False,
    progress: bool = True,
    force: bool = False,
) -> Prepared:
    """Download what is not given (`source`: a local snapshot; `labels`: a local label file), then prepare."""
    label_path, label_record = local_label_file(labels, LABELS) if labels else _downloaded_labels()
    if source:
        snapshot, local = local_snapshot(DATASET, source), True
    else:
        snapshot, local = download_dataset(DATASET, revision, ["*.parquet", "data/*"]), False
    plan = plan_speakbench(label_path, snapshot, local)
    plan.sources.insert(0, label_record)
    return prepare_folder(out, plan, skip_bad=skip_bad, progress=progress, force=force)


def _downloaded_labels() -> tuple[Path, dict[str, Any]]:
    path = download_label_file(LABELS)
    return path, LABELS.record(path)


def _audio_data_root(root: Path) -> Path | None:
    """The folder holding `audio_data/speakbench508_audio`, when `root` is (in) AudioJudge's prepared audio."""
    for candidate in (root, root.parent, root.parent.parent):
        if (candidate / "audio_data" / AUDIO_DATA).is_dir():
            return candidate
    return None


def plan_speakbench(labels: Path, snapshot: Snapshot, local: bool) -> Plan:
    items, problems = read_label_items(labels)
    prepared = _audio_data_root(snapshot.root.resolve()) if snapshot.root.is_dir() else None
    if prepared is not None:
        return _from_audio_data(items, problems, prepared, snapshot, local)
    return _from_parquet(items, problems, open_table(snapshot.root, "train"), snapshot, local)


def _from_parquet(items: list[dict], problems: list[Problem], table: Table, snapshot: Snapshot, local: bool) -> Plan:
    index_column = next((c for c in INDEX_COLUMNS if c in table.columns), None)
    if index_column is None:
        raise PrepareError(f"{snapshot.root}: no index column ({' or '.join(INDEX_COLUMNS)}); columns: {table.columns}")
    missing = [c for c in [*AUDIO_COLUMNS.values(), *CHECKED.values()] if c not in table.columns]
    if missing:
        raise PrepareError(f"{snapshot.root}: not the SpeakBench release: no column {', '.join(missing)}")
    rows = {row[index_column]: (ref, row) for ref, row in table.rows([index_column, *CHECKED.values()])}
    if not rows:
        raise PrepareError(f"{snapshot.root}: the dataset has no rows")
    clips: list[Clip] = []
    joined = set()
    for item in items:
        pid = item_id(item)
        index = item.get("index")
        found = rows.get(index)
        if found is None:
            problems.append(
                Problem(
                    pid, f"index {index!r} is no row of the dataset (its {index_column} runs {min(rows)}..{max(rows)})"
                )
            )
            continue
        joined.add(index)
        ref, row = found
        for field, column in CHECKED.items():
            given, data = item.get(field), row.get(column)
            agree = same_text(given, data) if field == "instruction_text" else given == data
            if not agree:
                problems.append(
                    Problem(
                        pid,
                        f"{field} is {_short(given)} in the label file but "
                        f"{column} is {_short(data)} in row {index} of the dataset",
                    )
                )
        for field, column in AUDIO_COLUMNS.items():
            path = item.get(field)
            if not isinstance(path, str):
                continue
            folder = _ROW_FOLDER.search(path)
            if folder and int(folder.group(1)) != index:
                problems.append(Problem(pid, f"{field} {path} is in the folder of row {folder.group(1)}, not {index}"))
            clips.append(
                Clip(path, [pid], f"{DATASET} row {index} column {column}", _reader(table, ref, column), "encode")
            )
    clips = merge_clips(clips, problems)
    unlabelled = len(rows) - len(joined)
    notes = (
        [f"{unlabelled} row(s) of the dataset are in no label item (the release leaves out instruction_ID 0)"]
        if unlabelled
        else []
    )
    files = [
        file_entry(f, str(f.relative_to(table.root)) if f.is_relative_to(table.root) else f.name) for f in table.files
    ]
    return Plan("speakbench", items, clips, problems, [snapshot_record(snapshot, files, local)], notes)


def _reader(table: Table, ref: Any, column: str):
    def read() -> bytes:
        data, _ = table.audio(ref, column)
        return data

    return read


def _from_audio_data(items: list[dict], problems: list[Problem], base: Path, snapshot: Snapshot, local: bool) -> Plan:
    clips = []
    for item in items:
        for field in AUDIO_COLUMNS:
            path = item.get(field)
            if isinstance(path, str):
                source = base / path
                clips.append(
                    Clip(path, [item_id(item)], f"audio_data {path}", file_reader(source), "copy", source.suffix)
                )
    clips = merge_clips(clips, problems)
    files = [file_entry(base / c.path, c.path) for c in clips if (base / c.path).is_file()]
    record = snapshot_record(snapshot, files, local)
    record["layout"] = "AudioJudge prepare_dataset.py audio_data/"
    notes = [
        "the audio came from AudioJudge's prepared audio_data/, which names no systems or texts: "
        "the join was checked on the paths alone"
    ]
    return Plan("speakbench", items, clips, problems, [record], notes)


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 4] + "...'"
