"""Verdicts that name a winner, as chosen/rejected pairs for preference training (DPO and the like).

`export_preferences(RUN, OUT)` writes, from one judge run folder:

    OUT/data-00000-of-00001.arrow, dataset_info.json, state.json   `datasets.load_from_disk(OUT)`
    OUT/data/train-00000-of-00001.parquet                           `load_dataset("parquet", data_files=...)`
    OUT/preferences.jsonl                                           the same rows, audio as file paths
    OUT/README.md                                                   the dataset card

Audio columns hold the benchmark's files, byte for byte, as Hugging Face `Audio` structs (`bytes`, `path`);
each `path` is the file's content hash with its suffix, so two files never share a name (every answer of a
benchmark may be `q1.wav` in its system's folder) and a trainer that writes the audio out by path writes each
clip once. The dataset names the run and the benchmark by their folders' names, never by a path of this
machine; only `preferences.jsonl` holds local paths (for reading the files where they are). The Audio
features are declared `decode=False`: a row reads back as the files' bytes wherever `datasets` is installed,
while decoding on access (`cast_column(..., Audio())`) needs `torchcodec` and FFmpeg, which recent `datasets`
releases require and this install does not hold.
Everything is written with pyarrow: `datasets` is needed only to read it back. A pair whose label (overall,
or one dimension with `on`) is a tie or undetermined is left out and counted; with `trusted_only`, so is
every verdict the calibration does not trust. An `out` folder that holds anything is left alone unless
`overwrite`.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from trace_eval.io import atomic_write_text, write_json

__all__ = ["ExportError", "Preferences", "export_preferences"]

WINNERS = ("1", "2")
OVERALL = "overall"
ARROW = "data-00000-of-00001.arrow"
PARQUET = "data/train-00000-of-00001.parquet"
JSONL = "preferences.jsonl"
AUDIO_COLUMNS = ("instruction_audio", "chosen_audio", "rejected_audio")
CARD = "README.md"
FILES = (ARROW, PARQUET, "dataset_info.json", "state.json", JSONL)


class ExportError(ValueError):
    """A run that cannot be exported as preferences (not pairwise, an unknown label to export on), or an `out`
    folder that already holds files."""


@dataclass
class Preferences:
    """What `export_preferences` wrote, and how many pairs it left out and why."""

    out: Path
    rows: int  # pairs written
    pairs: int  # pairs in the run
    left_out: dict[str, int] = field(default_factory=dict)  # why -> pairs: tie, undetermined, not trusted, no verdict
    on: str = OVERALL
    files: list[Path] = field(default_factory=list)  # every file written, under `out`

    @property
    def coverage(self) -> float | None:
        """Share of the run's pairs written."""
        return self.rows / self.pairs if self.pairs else None


def _features() -> dict[str, Any]:
    """The Hugging Face `Features` of a row (dataset_info.json and the parquet schema metadata)."""
    string, number = {"dtype": "string", "_type": "Value"}, {"dtype": "float64", "_type": "Value"}
    # Rows read back as {bytes, path} without torchcodec (which datasets 4 and later decode with).
    audio = {"decode": False, "_type": "Audio"}
    return {
        "id": string,
        "instruction_audio": audio,
        "instruction_text": string,
        "chosen_audio": audio,
        "rejected_audio": audio,
        "chosen_system": string,
        "rejected_system": string,
        "chosen_position": string,
        "label": string,
        "on": string,
        "confidence": number,
        "verdicts": string,
        "judge": string,
        "prompt": string,
        "rubric": string,
        "fusion": string,
        "trusted": {"dtype": "bool", "_type": "Value"},
        "run": string,
    }


def _schema() -> Any:
    import pyarrow as pa

    audio = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    fields = []
    for name, feature in _features().items():
        if feature["_type"] == "Audio":
            kind = audio
        else:
            kind = {"string": pa.string(), "float64": pa.float64(), "bool": pa.bool_()}[feature["dtype"]]
        fields.append(pa.field(name, kind))
    metadata = {"huggingface": json.dumps({"info": {"features": _features()}})}
    return pa.schema(fields, metadata=metadata)


def _label_of(raw: dict[str, Any], on: str) -> str | None:
    return raw.get(OVERALL) if on == OVERALL else (raw.get("verdicts") or {}).get(on)


def export_preferences(
    run: str | Path,
    out: str | Path,
    *,
    trusted_only: bool = False,
    calibration: str | Path | None = None,
    on: str = OVERALL,
    overwrite: bool = False,
) -> Preferences:
    """Write the preference pairs of the run folder `run` into `out` (see the module's docstring)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from trace_eval.bench import load_benchmark
    from trace_eval.evaluation.records import EvaluationError, load_run
    from trace_eval.evaluation.trust import keep_trusted, trusted_ids
    from trace_eval.judge.confidence import read_calibration
    from trace_eval.rubrics import rubric_of_run

    out = Path(out)
    loaded = load_run(run)
    _check_out(out, overwrite)
    config = loaded.config
    rubric = rubric_of_run(config)
    if not rubric.pairwise:
        raise ExportError(f"{run}: the {rubric.name} rubric scores one answer per item; preferences need pairs")
    if on != OVERALL and on not in rubric.names:
        raise ExportError(f"--on {on}: expected overall or a dimension of {rubric.name}: {', '.join(rubric.names)}")
    if on == OVERALL and rubric.fusion is None:
        raise ExportError(f"--on overall: the {rubric.name} rubric has no overall label; give --on DIMENSION")
    if trusted_only and calibration is None and not isinstance(config.get("cascade"), dict):
        raise EvaluationError(
            f"run {loaded.name}: --trusted-only needs --calibration FILE (written by `python -m trace_eval "
            "calibrate`) to say which verdicts are trusted"
        )
    calibrated = read_calibration(calibration) if calibration else None
    trusted, how = trusted_ids(loaded, calibrated) if (calibrated or config.get("cascade")) else (None, None)
    kept = keep_trusted([loaded], Path(calibration) if calibration else None)[0] if trusted_only else loaded
    if config.get("bench") is None:
        raise ExportError(f"{run}: config.json names no benchmark folder, so the audio cannot be found")
    bench = load_benchmark(config["bench"], check_audio=False)
    pairs = {p.id: p for p in bench.pairs}

    left_out: Counter[str] = Counter()
    rows: list[dict[str, Any]] = []
    for item_id, raw in kept.raws.items():
        pair = pairs.get(item_id)
        if pair is None or pair.audio1_path is None or pair.audio2_path is None:
            left_out["not an item of the benchmark"] += 1
            continue
        label = _label_of(raw, on)
        if raw.get("status") != "ok":
            left_out["no verdict"] += 1
        elif label in WINNERS:
            rows.append(_row(raw, pair, bench, label, on, config, trusted, Path(run).resolve().name))
        elif label is not None:
            left_out["tie"] += 1
        elif trusted_only and str(next(iter((raw.get("undetermined") or {}).values()), "")).startswith("not trusted"):
            left_out["not trusted"] += 1
        else:
            left_out["undetermined"] += 1
    result = Preferences(out, len(rows), len(loaded.raws), dict(sorted(left_out.items())), on)

    out.mkdir(parents=True, exist_ok=True)
    schema = _schema()
    table = pa.Table.from_pylist([_with_audio(r) for r in rows], schema=schema)
    _write_arrow(table, out / ARROW)
    (out / PARQUET).parent.mkdir(parents=True, exist_ok=True)
    tmp = out / f"{PARQUET}.tmp"
    pq.write_table(table, tmp)
    tmp.replace(out / PARQUET)
    write_json(out / "dataset_info.json", _dataset_info(config, result))
    write_json(out / "state.json", _state(rows))
    atomic_write_text(out / JSONL, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    result.files = [out / name for name in (*FILES, CARD)]
    atomic_write_text(out / CARD, _card(config, result, run, trusted_only, calibration, calibrated, how))
    return result


def _check_out(out: Path, overwrite: bool) -> None:
    """Refuse to write into a folder that holds anything, unless told to overwrite it."""
    if out.exists() and not out.is_dir():
        raise ExportError(f"--out {out}: a file, not a folder")
    if out.is_dir() and any(out.iterdir()) and not overwrite:
        ours = (out / CARD).is_file() and (out / ARROW).is_file()
        held = "an earlier export" if ours else "files"
        raise ExportError(
            f"--out {out} already holds {held}: choose another folder, or pass --overwrite (overwrite=True) "
            "to replace the export's files there"
        )


def _row(
    raw: dict[str, Any],
    pair: Any,
    bench: Any,
    label: str,
    on: str,
    config: dict,
    trusted: set[str] | None,
    run: str,
) -> dict[str, Any]:
    first, second = (pair.audio1_path, pair.audio2_path) if label == "1" else (pair.audio2_path, pair.audio1_path)
    systems = (pair.model_a, pair.model_b) if label == "1" else (pair.model_b, pair.model_a)
    confidence = (raw.get("confidence") or {}).get(on)
    return {
        "id": str(raw["id"]),
        "instruction_audio": str(bench.resolve(pair.instruction_path)) if pair.instruction_path else None,
        "instruction_text": pair.instruction_text,
        "chosen_audio": str(bench.resolve(first)),
        "rejected_audio": str(bench.resolve(second)),
        "chosen_system": systems[0],
        "rejected_system": systems[1],
        "chosen_position": label,
        "label": label,
        "on": on,
        "confidence": None if confidence is None else float(confidence),
        "verdicts": json.dumps(raw.get("verdicts") or {}, sort_keys=True),
        "judge": config.get("model"),
        "prompt": config.get("prompt_version"),
        "rubric": config.get("rubric_version"),
        "fusion": raw.get("fusion") or config.get("fusion"),
        "trusted": None if trusted is None else str(raw["id"]) in trusted,
        "run": run,
    }


def _with_audio(row: dict[str, Any]) -> dict[str, Any]:
    """The row with each audio path replaced by the file's bytes, named by their sha256 (an Audio struct)."""
    embedded = dict(row)
    for column in AUDIO_COLUMNS:
        path = row[column]
        if path is None:
            embedded[column] = None
            continue
        data = Path(path).read_bytes()
        embedded[column] = {"bytes": data, "path": hashlib.sha256(data).hexdigest() + Path(path).suffix.lower()}
    return embedded


def _write_arrow(table: Any, path: Path) -> None:
    """An Arrow stream file, as `datasets.save_to_disk` writes its shards."""
    import pyarrow as pa

    tmp = path.with_name(f".{path.name}.tmp")
    with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    tmp.replace(path)


def _dataset_info(config: dict, result: Preferences) -> dict[str, Any]:
    return {
        "citation": "",
        "description": f"Preference pairs from the verdicts of {config.get('model')} on {_name(config.get('bench'))}",
        "features": _features(),
        "homepage": "",
        "license": "",
        "splits": {"train": {"name": "train", "num_examples": result.rows}},
    }


def _relative(path: Path, folder: Path) -> str:
    return path.relative_to(folder).as_posix()


def _name(path: str | Path | None) -> str | None:
    """A folder or file named by its last part: what a dataset may say of this machine's paths."""
    return None if path is None else Path(path).name


def _state(rows: list[dict]) -> dict[str, Any]:
    fingerprint = hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest()[:16]
    return {
        "_data_files": [{"filename": ARROW}],
        "_fingerprint": fingerprint,
        "_format_columns": None,
        "_format_kwargs": {},
        "_format_type": None,
        "_output_all_columns": False,
        "_split": "train",
    }


def _card(
    config: dict,
    result: Preferences,
    run: str | Path,
    trusted_only: bool,
    calibration: str | Path | None,
    calibrated: dict | None,
    how: str | None,
) -> str:
    coverage = "n/a" if result.coverage is None else f"{result.coverage:.1%}"
    target = "none (every verdict that names a winner)"
    if calibrated is not None:
        target = (
            f"agreement with people at least {calibrated.get('target_agreement'):.0%} with probability at least "
            f"{1 - calibrated.get('delta', 0):.0%} ({_name(calibration)})"
        )
    elif isinstance(config.get("cascade"), dict):
        target = f"the cascade's calibration ({_name(config['cascade'].get('calibration'))})"
    left = "\n".join(f"| left out: {why} | {n} |" for why, n in result.left_out.items())
    settings = {k: config.get(k) for k in ("samples", "swap", "temperature", "drop", "structured", "logprobs")}
    counts = asdict(result) | {"out": result.out.name, "files": [_relative(f, result.out) for f in result.files]}
    return f"""---
configs:
- config_name: default
  data_files:
  - split: train
    path: {PARQUET}
---

# Preference pairs from trace-eval verdicts

Chosen and rejected spoken answers to the same instruction, from the judge run `{Path(run).resolve().name}`: every pair
whose {"overall label" if result.on == OVERALL else f"{result.on} label"} names a winner. Ties and undetermined
pairs are left out and counted below.

| | |
|---|---|
| judge | `{config.get("model")}` |
| prompt | `{config.get("prompt_version")}` |
| rubric | `{config.get("rubric_version")}` |
| fusion | `{config.get("fusion")}` |
| label exported | `{result.on}` |
| only trusted verdicts | {"yes" if trusted_only else "no"}{f" ({how})" if how else ""} |
| calibration target | {target} |
| benchmark | `{_name(config.get("bench"))}` |
| pairs in the run | {result.pairs} |
| pairs written | {result.rows} |
| coverage | {coverage} |
{left}

Settings of the judge: `{json.dumps(settings)}`.

## Files

- `{ARROW}`, `dataset_info.json`, `state.json`: `datasets.load_from_disk(DIR)`
- `{PARQUET}`: `datasets.load_dataset("parquet", data_files="DIR/{PARQUET}")`
- `{JSONL}`: the same rows with the audio as paths of the benchmark's files on the machine that exported it

## Columns

`instruction_audio`, `chosen_audio`, `rejected_audio` are `Audio(decode=False)` (the benchmark's files, byte
for byte, read back as `{{bytes, path}}`, each `path` the file's sha256 with its suffix; to decode on access,
with `torchcodec` installed: `dataset.cast_column("chosen_audio", datasets.Audio())`);
`chosen_system`, `rejected_system` name the systems (null where the benchmark does not); `chosen_position` is
the winner's position in the benchmark's pair ("1" or "2"); `confidence` is the judge's confidence in the
exported label (null where it has none); `verdicts` is every dimension's label (JSON); `trusted` says whether
the calibration trusts the verdict (null without one).

Counts as JSON: `{json.dumps(counts)}`
"""
