"""Reading judge run folders and the human labels of a benchmark."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fusion import LABELS
from trace_eval.rubrics import DEFAULT_RUBRIC, load_rubric

TRACE = load_rubric(DEFAULT_RUBRIC)  # the rubric these records are read with
DIMENSIONS = TRACE.names

HUMAN_KEYS = (*DIMENSIONS, "overall")


class RunFolderError(ValueError):
    """A judge run folder that cannot be read."""


@dataclass(frozen=True)
class RunRecord:
    """One pair of a judge run, reduced to what evaluation needs."""

    id: str
    status: str  # ok | invalid | error | skipped
    reason: str | None
    # All three dimensions, or None when the verdict failed; with status ok a dimension's label is None
    # when the judge left it undetermined (it lacked the evidence), and `undetermined` says why.
    verdicts: dict[str, str | None] | None
    overall: str | None  # the label the run itself recorded under its policy
    undetermined: dict[str, str] = field(default_factory=dict)  # dimension -> why its label is None

    @property
    def decided(self) -> bool:
        """Every dimension has a label, so the item has an overall label under every policy."""
        return self.verdicts is not None and all(v is not None for v in self.verdicts.values())


@dataclass
class JudgeRun:
    name: str
    path: Path
    config: dict[str, Any]
    records: dict[str, RunRecord]  # by id, in file order
    problems: list[str] = field(default_factory=list)  # lines that could not be read, duplicates
    summary: dict[str, Any] = field(default_factory=dict)  # summary.json as the judge wrote it ({} if absent)

    @property
    def policy(self) -> str | None:
        value = self.config.get("fusion")
        if isinstance(value, dict):  # tolerate {"policy": name}
            value = value.get("policy") or value.get("name")
        return value if isinstance(value, str) else None

    @property
    def bench(self) -> str | None:
        value = self.config.get("bench")
        return value if isinstance(value, str) else None

    def describe(self) -> dict[str, Any]:
        judge = self.config.get("judge")
        return {
            "name": self.name,
            "path": str(self.path),
            "model": self.config.get("model"),
            "judge": judge if isinstance(judge, (str, int, float)) or judge is None else json.dumps(judge, sort_keys=True),
            "run_fusion": self.policy,
        }


def _record(raw: dict[str, Any]) -> RunRecord:
    """Validate one results.jsonl object; anything unusable becomes an unscored record with its reason.

    Run folders written before undetermined verdicts existed have no `undetermined` field and no null
    label in an ok record, so they read exactly as they always did.
    """
    item_id = str(raw["id"])
    status = str(raw.get("status") or "error")
    reason = raw.get("reason")
    verdicts = raw.get("verdicts")
    overall = raw.get("overall") if raw.get("overall") in LABELS else None
    if status != "ok":
        return RunRecord(item_id, status, str(reason) if reason else f"status {status}", None, overall)
    if not isinstance(verdicts, dict):
        return RunRecord(item_id, "invalid", "status ok but no verdicts object", None, overall)
    reasons = raw.get("undetermined") if isinstance(raw.get("undetermined"), dict) else {}
    # A null label is undetermined when the record says why; a missing key or any other value is invalid.
    bad = [f"{d}={verdicts.get(d)!r}" for d in DIMENSIONS
           if verdicts.get(d) not in LABELS and not (verdicts.get(d) is None and reasons.get(d))]
    if bad:
        return RunRecord(item_id, "invalid", "verdict not a label: " + ", ".join(bad), None, overall)
    undetermined = {d: str(reasons[d]) for d in DIMENSIONS if verdicts[d] is None}
    return RunRecord(item_id, "ok", None, {d: verdicts[d] for d in DIMENSIONS}, overall, undetermined)


def read_run_folder(path: str | Path) -> tuple[dict[str, Any], dict[str, dict[str, Any]], list[str]]:
    """RUNDIR/config.json and the results.jsonl objects by id, with the lines that could not be used.

    A line that is not JSON or has no id is reported in `problems` (it cannot be
    matched to a pair); when an id appears more than once the last line wins,
    since a resumed run appends its newer answer.
    """
    path = Path(path)
    results = path / "results.jsonl"
    if not results.is_file():
        raise RunFolderError(f"{path}: no results.jsonl; expected a folder written by `python -m trace_eval judge`")
    config_path = path / "config.json"
    config: dict[str, Any] = {}
    if config_path.is_file():
        try:
            loaded = json.loads(config_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            raise RunFolderError(f"{config_path}: not JSON ({e.msg} at line {e.lineno})") from e
        if isinstance(loaded, dict):
            config = loaded
    raws: dict[str, dict[str, Any]] = {}
    problems: list[str] = []
    for number, line in enumerate(results.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as e:
            problems.append(f"results.jsonl line {number}: not JSON ({e.msg}); skipped")
            continue
        if not isinstance(raw, dict) or raw.get("id") is None:
            problems.append(f"results.jsonl line {number}: no id; skipped")
            continue
        item_id = str(raw["id"])
        if item_id in raws:
            problems.append(f"id {item_id}: appears more than once; the last line is used")
            del raws[item_id]
        raws[item_id] = raw
    return config, raws, problems


def load_run(path: str | Path, name: str | None = None) -> JudgeRun:
    """Read RUNDIR/config.json and RUNDIR/results.jsonl of a TRACE run (see `read_run_folder`)."""
    path = Path(path)
    config, raws, problems = read_run_folder(path)
    records = {item_id: _record(raw) for item_id, raw in raws.items()}
    return JudgeRun(name or path.resolve().name, path, config, records, problems, read_summary(path))


def read_summary(path: Path) -> dict[str, Any]:
    """RUNDIR/summary.json, or {} when it is absent or unreadable (it only adds to the report)."""
    try:
        summary = json.loads((Path(path) / "summary.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    return summary if isinstance(summary, dict) else {}


def unique_names(paths: list[Path]) -> list[str]:
    """Short names for runs: the folder name, with parents added until they differ."""
    parts = [p.resolve().parts for p in paths]
    depth = 1
    while True:
        names = ["/".join(p[-depth:]) for p in parts]
        if len(set(names)) == len(names) or depth >= max(len(p) for p in parts):
            break
        depth += 1
    if len(set(names)) != len(names):  # the same folder given twice
        names = [f"{n}#{i + 1}" for i, n in enumerate(names)]
    return names


def load_human_labels(bench: str | Path) -> tuple[dict[str, dict[str, str]], Path]:
    """Human typed-tie labels by pair id (only keys that hold a label) and the manifest path.

    Only the manifest is read; audio need not be present.
    """
    from trace_eval.bench import load_benchmark

    benchmark = load_benchmark(bench, check_audio=False)
    labels = {
        pair.id: {key: pair.label[key] for key in HUMAN_KEYS if pair.label.get(key) in LABELS}
        for pair in benchmark.pairs
    }
    return labels, benchmark.manifest_path
