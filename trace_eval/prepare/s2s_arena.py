"""S2S-Arena (English) with the TRACE labels: 314 pairs.

The audio is two Hugging Face dataset repositories kept as folders of audio files (the parquet view loses
the paths): the instructions are `FreedomIntelligence/S2S-Arena` and the answers
`FreedomIntelligence/S2S-Arena-output`. The labels, `data/s2sarena.json` of the TRACE release, name
`input/<path>` (a file of the first) and `output/<path>` (a file of the second); answer file names cannot be
derived from instruction names, so they are taken from the label file as written. Files are copied as they
are published (158 of the instructions are mp3), once they are known to decode.

Offline, `--from DIR` is a folder holding both repositories as `DIR/input` and `DIR/output` (what
`hf download ... --local-dir DIR/input` writes). The join checks that every file exists and decodes, and that
each system's answers come from one folder of the output repository.
"""

from __future__ import annotations

import glob
from collections import Counter, defaultdict
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
from trace_eval.prepare.labels import item_id, read_label_items

__all__ = ["INPUT_DATASET", "OUTPUT_DATASET", "LABELS", "plan_s2s_arena", "prepare_s2s_arena"]

INPUT_DATASET = "FreedomIntelligence/S2S-Arena"
OUTPUT_DATASET = "FreedomIntelligence/S2S-Arena-output"
LABELS = GitHubFile(
    repo="arjunchandra2/TRACE",
    commit="9cb2a59bedf3d85bffd1446e1555706805fb3ba0",
    path="data/s2sarena.json",
    sha256="0b9debfc42b53b1b6678e0f4b5fcd1b9ee12bb9780f6d8ad7e3ae9ef27364a4b",
)
PREFIXES = {"input": INPUT_DATASET, "output": OUTPUT_DATASET}
FIELDS = ("instruction_path", "audio1_path", "audio2_path")
ANSWERS = {"audio1_path": "model_a", "audio2_path": "model_b"}


def prepare_s2s_arena(
    out: str | Path,
    source: str | Path | None = None,
    labels: str | Path | None = None,
    revision: str | None = None,
    output_revision: str | None = None,
    skip_bad: bool = False,
    progress: bool = True,
    force: bool = False,
) -> Prepared:
    if labels:
        label_path, label_record = local_label_file(labels, LABELS)
    else:
        label_path = download_label_file(LABELS)
        label_record = LABELS.record(label_path)
    items, problems = read_label_items(label_path)
    if source:
        base = Path(source)
        missing = [name for name in PREFIXES if not (base / name).is_dir()]
        if missing:
            raise PrepareError(
                f"{base}: expected the two dataset repositories as {base}/input ({INPUT_DATASET}) and "
                f"{base}/output ({OUTPUT_DATASET}); {', '.join(missing)} is missing"
            )
        snapshots = {name: local_snapshot(repo, base / name) for name, repo in PREFIXES.items()}
        local = True
    else:
        wanted = _wanted(items)
        revisions = {"input": revision, "output": output_revision}
        snapshots = {
            # Only the files the labels name; a name is a pattern to the hub, so its brackets are escaped.
            name: download_dataset(repo, revisions[name], [glob.escape(p) for p in sorted(wanted[name])] or None)
            for name, repo in PREFIXES.items()
        }
        local = False
    plan = plan_s2s_arena(items, problems, snapshots, local)
    plan.sources.insert(0, label_record)
    return prepare_folder(out, plan, skip_bad=skip_bad, progress=progress, force=force)


def _wanted(items: list[dict[str, Any]]) -> dict[str, set[str]]:
    """The files of each repository the label file names (so a download fetches only those)."""
    wanted: dict[str, set[str]] = {name: set() for name in PREFIXES}
    for item in items:
        for field in FIELDS:
            prefix, _, rest = str(item.get(field, "")).partition("/")
            if prefix in wanted and rest:
                wanted[prefix].add(rest)
    return wanted


def plan_s2s_arena(
    items: list[dict[str, Any]], problems: list[Problem], snapshots: dict[str, Snapshot], local: bool
) -> Plan:
    clips: list[Clip] = []
    folders: dict[str, Counter] = defaultdict(Counter)  # system -> output folder -> answers
    for item in items:
        pid = item_id(item)
        for field in FIELDS:
            path = item.get(field)
            if not isinstance(path, str):
                continue
            prefix, _, rest = path.partition("/")
            if prefix not in PREFIXES or not rest:
                problems.append(Problem(pid, f"{field} {path} is in neither input/ nor output/"))
                continue
            if field in ANSWERS and prefix != "output":
                problems.append(Problem(pid, f"{field} {path} is not an answer (not under output/)"))
            if field == "instruction_path" and prefix != "input":
                problems.append(Problem(pid, f"{field} {path} is not an instruction (not under input/)"))
            if field in ANSWERS:
                folders[str(item.get(ANSWERS[field]))][rest.split("/")[0]] += 1
            source = snapshots[prefix].root / rest
            origin = f"{PREFIXES[prefix]}:{rest}"
            clips.append(Clip(path, [pid], origin, file_reader(source), "copy", source.suffix))
    problems += _system_problems(items, folders)
    clips = merge_clips(clips, problems)
    sources = []
    for prefix, snapshot in snapshots.items():
        files = [
            file_entry(snapshot.root / c.path.partition("/")[2], c.path.partition("/")[2])
            for c in clips
            if c.path.startswith(prefix + "/") and (snapshot.root / c.path.partition("/")[2]).is_file()
        ]
        sources.append(snapshot_record(snapshot, files, local))
    notes = ["the folders hold no instruction texts: instruction_text is the label file's, unchecked"]
    return Plan("s2s-arena", items, clips, problems, sources, notes)


def _system_problems(items: list[dict[str, Any]], folders: dict[str, Counter]) -> list[Problem]:
    """An answer filed under another system's folder than the rest of its system's answers."""
    home = {system: counts.most_common(1)[0][0] for system, counts in folders.items()}
    owners: dict[str, list[str]] = defaultdict(list)
    for system, folder in home.items():
        owners[folder].append(system)
    problems = []
    for item in items:
        for field, model in ANSWERS.items():
            path, system = item.get(field), str(item.get(model))
            if not isinstance(path, str) or not path.startswith("output/"):
                continue
            folder = path.split("/")[1]
            if folder != home.get(system):
                problems.append(
                    Problem(
                        item_id(item),
                        f"{model} is {system!r} but {path} is in output/{folder}/, where the answers of "
                        f"{' and '.join(map(repr, owners.get(folder, ['no system'])))} are; {system!r} answers "
                        f"from output/{home.get(system)}/",
                    )
                )
    return problems
