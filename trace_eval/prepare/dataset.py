"""Any local Hugging Face audio dataset as a benchmark folder (a StyleSet-like release, a lab's own data).

A column map says which column fills which manifest field (`--map audio1_path=response_a
--map label.overall=preference`); Audio columns are decoded and written as wav files (native rate, 16-bit
PCM, mono) at `audio/<id>/<field>.wav`, every other mapped column is copied into the items.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trace_eval.bench import AUDIO_FIELDS
from trace_eval.prepare.folder import (
    Clip,
    Plan,
    Prepared,
    PrepareError,
    Problem,
    close_match,
    file_entry,
    merge_clips,
    prepare_folder,
)
from trace_eval.prepare.hub import local_snapshot, snapshot_record
from trace_eval.prepare.tables import RowRef, Table, open_table

__all__ = ["parse_column_map", "plan_dataset", "prepare_dataset"]

_FILE_NAMES = {
    "instruction_path": "instruction",
    "audio1_path": "audio1",
    "audio2_path": "audio2",
    "audio_path": "audio",
}


def parse_column_map(pairs: list[str]) -> dict[str, str]:
    """`FIELD=COLUMN` strings into {field: column}."""
    mapping: dict[str, str] = {}
    for pair in pairs:
        field, sep, column = pair.partition("=")
        if not sep or not field.strip() or not column.strip():
            raise PrepareError(f"--map {pair!r}: expected FIELD=COLUMN, e.g. audio1_path=response_a")
        mapping[field.strip()] = column.strip()
    return mapping


def prepare_dataset(
    out: str | Path,
    source: str | Path,
    columns: dict[str, str],
    split: str = "train",
    name: str | None = None,
    repo: str | None = None,
    skip_bad: bool = False,
    progress: bool = True,
    force: bool = False,
) -> Prepared:
    if not Path(source).exists():
        raise PrepareError(f"--from {source}: not found{close_match(Path(source))}")
    table = open_table(source, split)
    plan = plan_dataset(table, columns, name or Path(source).resolve().name)
    files = [file_entry(f, str(f.relative_to(table.root))) for f in table.files]
    # Audio the rows only point to is part of the source: a changed wav changes the fingerprint, so a re-run
    # writes it again instead of calling the folder complete.
    audio_columns = [c for f, c in columns.items() if f in AUDIO_FIELDS]
    audio = [file_entry(f, _relative(f, table.root)) for f in table.referenced_files(audio_columns)]
    if repo is None:  # a local dataset is recorded as local, never as a hub repository it is not
        record: dict[str, Any] = {
            "kind": "dataset",
            "repo": None,
            "revision": None,
            "local": str(Path(source).resolve()),
        }
        record["files"] = files
    else:
        record = snapshot_record(local_snapshot(repo, source), files, local=True)
    if audio:
        record["audio_files"] = audio
    plan.sources.append(record | {"split": split, "columns": columns})
    return prepare_folder(out, plan, skip_bad=skip_bad, progress=progress, force=force)


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def plan_dataset(table: Table, columns: dict[str, str], name: str) -> Plan:
    audio_fields = [f for f in columns if f in AUDIO_FIELDS]
    if not audio_fields:
        raise PrepareError(
            f"--map names no audio field ({', '.join(AUDIO_FIELDS)}); the Audio columns of this dataset: "
            f"{', '.join(table.audio_columns()) or 'none'}"
        )
    if not ({"audio1_path", "audio2_path"} <= set(columns) or "audio_path" in columns):
        raise PrepareError("--map needs audio1_path and audio2_path (pairs), or audio_path (single answers)")
    unknown = sorted({c for c in columns.values() if c not in table.columns})
    if unknown:
        raise PrepareError(
            f"--map names no column {', '.join(map(repr, unknown))}; the columns: {', '.join(table.columns)}"
        )
    id_field = "id" if "id" in columns else "index" if "index" in columns else None
    scalars = [c for f, c in columns.items() if f not in AUDIO_FIELDS]
    rows = table.rows(sorted(set(scalars)))
    items: list[dict[str, Any]] = []
    clips: list[Clip] = []
    problems: list[Problem] = []
    for n, (ref, row) in enumerate(rows):
        pid = str(row[columns[id_field]]) if id_field else str(n)
        item: dict[str, Any] = {id_field or "id": row[columns[id_field]] if id_field else pid}
        for field, column in columns.items():
            if field in AUDIO_FIELDS or field == id_field:
                continue
            if field.startswith("label."):
                item.setdefault("label", {})[field[len("label.") :]] = row[column]
            else:
                item[field] = row[column]
        for field in audio_fields:
            rel = f"audio/{_safe(pid)}/{_FILE_NAMES[field]}.wav"
            item[field] = rel
            clips.append(Clip(rel, [pid], f"row {n} column {columns[field]}", _reader(table, ref, columns[field])))
        items.append(item)
    return Plan(name, items, merge_clips(clips, problems), problems)


def _reader(table: Table, ref: RowRef, column: str):
    def read() -> bytes:
        return table.audio(ref, column)[0]

    return read


def _safe(pid: str) -> str:
    """An id as a folder name."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in pid) or "_"
