"""Rows of a local Hugging Face dataset, read with pyarrow alone (no `datasets` at run time).

Two layouts: parquet files (as the hub serves them: `data/train-00000-of-00002.parquet`), and a
`save_to_disk` folder (`state.json` and Arrow stream files; a DatasetDict holds one such folder per split).
An Audio column is a struct `{"bytes", "path"}`: the encoded file, or only a path when the audio was not
embedded (then the path is read, relative to the dataset folder unless absolute).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trace_eval.prepare.folder import PrepareError

__all__ = ["Table", "open_table", "RowRef"]


@dataclass(frozen=True)
class RowRef:
    """Where a row sits: file, row group (parquet) and row within it."""

    file: int
    group: int
    row: int


class Table:
    """The rows of one split: scalar columns read at once, audio read on demand, a row group at a time."""

    def __init__(self, files: list[Path], kind: str, root: Path):
        self.files = files
        self.kind = kind  # "parquet" or "arrow"
        self.root = root
        self._group: tuple[int, int] | None = None  # the row group whose audio columns are held
        self._held: dict[str, Any] = {}
        self.columns = self._schema().names

    def _schema(self) -> Any:
        import pyarrow.parquet as pq

        if self.kind == "parquet":
            return pq.ParquetFile(self.files[0]).schema_arrow
        return self._arrow(0).schema

    def _arrow(self, index: int) -> Any:
        import pyarrow as pa

        with pa.memory_map(str(self.files[index])) as source:
            return pa.ipc.open_stream(source).read_all()

    def audio_columns(self) -> list[str]:
        """Columns holding Audio structs (a struct with `bytes` and `path`)."""
        import pyarrow as pa

        schema = self._schema()
        found = []
        for name in schema.names:
            kind = schema.field(name).type
            if pa.types.is_struct(kind) and {"bytes", "path"} <= {kind.field(i).name for i in range(kind.num_fields)}:
                found.append(name)
        return found

    def rows(self, columns: list[str]) -> list[tuple[RowRef, dict[str, Any]]]:
        """Every row's `columns` (no audio is read unless asked for), with where the row sits."""
        import pyarrow.parquet as pq

        missing = [c for c in columns if c not in self.columns]
        if missing:
            raise PrepareError(
                f"{self.root}: no column {', '.join(map(repr, missing))}; its columns: {', '.join(self.columns)}"
            )
        out: list[tuple[RowRef, dict[str, Any]]] = []
        for f, path in enumerate(self.files):
            if self.kind == "parquet":
                parquet = pq.ParquetFile(path)
                for g in range(parquet.num_row_groups):
                    for r, row in enumerate(parquet.read_row_group(g, columns=columns).to_pylist()):
                        out.append((RowRef(f, g, r), row))
            else:
                for r, row in enumerate(self._arrow(f).select(columns).to_pylist()):
                    out.append((RowRef(f, 0, r), row))
        return out

    def referenced_files(self, columns: list[str]) -> list[Path]:
        """The audio files that cells of `columns` point to without embedding the audio (a `to_parquet` dataset
        stores paths), existing ones only: what the prepared folder is a function of beside the tables. The
        embedded bytes are never read here."""
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        found: set[Path] = set()
        for f in range(len(self.files)):
            table = pq.read_table(self.files[f], columns=columns) if self.kind == "parquet" else self._arrow(f)
            for column in columns:
                cells = table.column(column)
                if pa.types.is_struct(cells.type):
                    paths = pc.if_else(
                        pc.is_null(pc.struct_field(cells, "bytes")), pc.struct_field(cells, "path"), None
                    )
                elif pa.types.is_string(cells.type) or pa.types.is_large_string(cells.type):
                    paths = cells
                else:
                    continue
                for value in paths.to_pylist():
                    if value:
                        path = Path(value) if Path(value).is_absolute() else self.root / value
                        if path.is_file():
                            found.add(path)
        return sorted(found)

    def audio(self, ref: RowRef, column: str) -> tuple[bytes, str]:
        """The encoded audio of one cell and its file suffix; KeyError when the cell holds none."""
        import pyarrow.parquet as pq

        if self._group != (ref.file, ref.group):
            self._group, self._held = (ref.file, ref.group), {}
        if column not in self._held:
            if self.kind == "parquet":
                table = pq.ParquetFile(self.files[ref.file]).read_row_group(ref.group, columns=[column])
            else:
                table = self._arrow(ref.file).select([column])
            self._held[column] = table.column(column)
        cell = self._held[column][ref.row].as_py()
        where = f"{self.files[ref.file].name} row {ref.row} column {column}"
        if isinstance(cell, str):  # a column of file paths
            cell = {"bytes": None, "path": cell}
        if not isinstance(cell, dict):
            raise KeyError(f"{where}: no audio")
        suffix = Path(cell.get("path") or "x.wav").suffix or ".wav"
        if cell.get("bytes"):
            return cell["bytes"], suffix
        if cell.get("path"):
            path = Path(cell["path"])
            path = path if path.is_absolute() else self.root / path
            if not path.is_file():
                raise FileNotFoundError(f"{where}: the audio is not embedded and {path} does not exist")
            return path.read_bytes(), suffix
        raise KeyError(f"{where}: no audio")


def open_table(path: str | Path, split: str = "train") -> Table:
    """The `split` of a local dataset: a parquet file, a folder of parquet files, or a save_to_disk folder."""
    path = Path(path)
    if not path.exists():
        raise PrepareError(f"{path}: not found")
    if path.is_file():
        if path.suffix == ".parquet":
            return Table([path], "parquet", path.parent)
        if path.suffix == ".arrow":
            return Table([path], "arrow", path.parent)
        raise PrepareError(
            f"{path}: not a dataset (expected a .parquet file, a folder of them, or a save_to_disk folder)"
        )
    if (path / "dataset_dict.json").is_file():  # DatasetDict.save_to_disk: one folder per split
        splits = json.loads((path / "dataset_dict.json").read_text()).get("splits", [])
        if split not in splits:
            raise PrepareError(f"{path}: no split {split!r}; it has {', '.join(splits)} (--split NAME)")
        path = path / split
    if (path / "state.json").is_file():
        state = json.loads((path / "state.json").read_text())
        files = [path / entry["filename"] for entry in state.get("_data_files", [])]
        if not files:
            raise PrepareError(f"{path}: state.json names no data files")
        return Table(files, "arrow", path)
    parquet = sorted(path.rglob("*.parquet"))
    if not parquet:
        raise PrepareError(
            f"{path}: no parquet files and no save_to_disk dataset (state.json) here; "
            "give the folder the dataset was downloaded or saved to"
        )
    # The hub names a split's files `<split>-00000-of-00001.parquet`, or puts them in a folder named after it.
    chosen = [p for p in parquet if p.name.startswith(f"{split}-") or p.parent.name == split]
    return Table(chosen or parquet, "parquet", path)
