"""SageLM's test sets for the `multi-aspect` rubric.

The labels are LLaMA-Factory JSON files of the SageLM release (`IronBeliever/SageLM`):
`test_semantic.json` (182 pairs x 4 aspects, one row per aspect) and `test_acoustic.json` (410 rows, each
a speech-instruction-following question: gender, emotion, character). A row's `instruction` names the aspect
("Evaluate in terms of **honesty**") and holds the user's instruction (text only; there is no instruction
audio); the answer is the first line of `output` (`1`, `2` or `Tie`); `audios` are the two responses, files
of the dataset repository `LGB666/SageLM_testset_audio`, copied as they are to the paths the rows name.

The rows of one pair (same two responses, same instruction) become one item with a label per aspect.
"""

from __future__ import annotations

import glob
import json
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

__all__ = ["DATASET", "LABELS", "plan_sagelm", "prepare_sagelm"]

DATASET = "LGB666/SageLM_testset_audio"
_COMMIT = "fc6f2e3f8c913fc2a3236151d79cab354577a09c"
LABELS = {
    "semantic": GitHubFile(
        "IronBeliever/SageLM",
        _COMMIT,
        "LLaMA-Factory/data/test_semantic.json",
        "2fbdaf1f947934b020dcb3873e6bf088690d79f64d6fd60c860bc2cee9539e10",
    ),
    "acoustic": GitHubFile(
        "IronBeliever/SageLM",
        _COMMIT,
        "LLaMA-Factory/data/test_acoustic.json",
        "922b49cd92c1ac39a3ad3e4c8db4ca5295da81c272d926938d963821f5be884e",
    ),
}
SEMANTIC = ("truthfulness", "honesty", "helpfulness", "instruction_following")
ACOUSTIC = "speech_instruction_following"
ANSWERS = {"1": "1", "2": "2", "tie": "tie"}
_ASPECT = re.compile(r"Evaluate in terms of \*\*(.+?)\*\*")
_QUESTION = re.compile(r"### Instruction:\n(.*?)\n\n### Response 1:", re.S)


def prepare_sagelm(
    out: str | Path,
    source: str | Path | None = None,
    labels: list[str | Path] | None = None,
    sets: tuple[str, ...] = ("semantic", "acoustic"),
    revision: str | None = None,
    skip_bad: bool = False,
    progress: bool = True,
    force: bool = False,
) -> Prepared:
    """`labels`: local copies of the test sets (their set is read from the name); else downloaded."""
    files: list[tuple[str, Path, dict[str, Any]]] = []
    if labels:
        for given in labels:
            name = next((s for s in LABELS if s in Path(given).name), None)
            if name is None:
                raise PrepareError(f"{given}: say which test set it is by its name (test_semantic / test_acoustic)")
            path, record = local_label_file(given, LABELS[name])
            files.append((name, path, record))
    else:
        for name in sets:
            path = download_label_file(LABELS[name])
            files.append((name, path, LABELS[name].record(path)))
    rows = [(name, _read_rows(path)) for name, path, _ in files]
    if source:
        snapshot, local = local_snapshot(DATASET, source), True
    else:
        wanted = sorted({a for _, set_rows in rows for row in set_rows for a in row.get("audios", []) if a})
        patterns = [glob.escape(p) for p in wanted]  # a name is a pattern to the hub
        snapshot, local = download_dataset(DATASET, revision, patterns or None), False
    plan = plan_sagelm(rows, snapshot, local)
    plan.sources[:0] = [record for _, _, record in files]
    return prepare_folder(out, plan, skip_bad=skip_bad, progress=progress, force=force)


def _read_rows(path: Path) -> list[dict[str, Any]]:
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise PrepareError(f"{path}: not a JSON test set ({error})") from error
    if not isinstance(rows, list):
        raise PrepareError(f"{path}: expected a JSON list of rows")
    return rows


def plan_sagelm(sets: list[tuple[str, list[dict[str, Any]]]], snapshot: Snapshot, local: bool) -> Plan:
    items: dict[tuple, dict[str, Any]] = {}
    problems: list[Problem] = []
    for name, rows in sets:
        for n, row in enumerate(rows):
            where = f"{name}#{n}"
            text = row.get("instruction", "") if isinstance(row, dict) else ""
            aspect = _ASPECT.search(text)
            question = _QUESTION.search(text)
            audios = row.get("audios") if isinstance(row, dict) else None
            answer = (
                str(row.get("output", "")).strip().split("\n", 1)[0].strip().lower() if isinstance(row, dict) else ""
            )
            if not (aspect and question and isinstance(audios, list) and len(audios) == 2 and all(audios)):
                problems.append(Problem(where, "not a SageLM row (an aspect, an instruction and two audios)"))
                continue
            if answer not in ANSWERS:
                problems.append(Problem(where, f"output starts {answer!r}, not 1, 2 or Tie"))
                continue
            dimension = _dimension(name, aspect.group(1))
            if dimension is None:
                problems.append(Problem(where, f"aspect {aspect.group(1)!r} is no dimension of multi-aspect"))
                continue
            key = (name, audios[0], audios[1], question.group(1).strip())
            item = items.get(key)
            if item is None:
                item = items[key] = {
                    "id": f"{name}-{len([k for k in items if k[0] == name]):04d}",
                    "instruction_text": question.group(1).strip(),
                    "audio1_path": audios[0],
                    "audio2_path": audios[1],
                    "label": {},
                    "test_set": name,
                    "source_rows": [],
                }
            if dimension in item["label"] and item["label"][dimension] != ANSWERS[answer]:
                problems.append(Problem(item["id"], f"{dimension} is labelled twice, differently (row {where})"))
            item["label"][dimension] = ANSWERS[answer]
            item["source_rows"].append(n)
            if dimension == ACOUSTIC:
                item["aspect"] = aspect.group(1)
    clips = []
    for item in items.values():
        for field in ("audio1_path", "audio2_path"):
            rel = item[field]
            source = snapshot.root / rel
            clips.append(Clip(rel, [item["id"]], f"{DATASET}:{rel}", file_reader(source), "copy", source.suffix))
    clips = merge_clips(clips, problems)
    files = [file_entry(snapshot.root / c.path, c.path) for c in clips if (snapshot.root / c.path).is_file()]
    notes = [
        "SageLM gives the instruction as text only: items have no instruction audio; judge with --rubric multi-aspect"
    ]
    return Plan("sagelm", list(items.values()), clips, problems, [snapshot_record(snapshot, files, local)], notes)


def _dimension(test_set: str, aspect: str) -> str | None:
    """The multi-aspect dimension a row's aspect is: the semantic ones by name, every acoustic one
    (gender, emotion, character instruction following) is speech instruction following."""
    name = aspect.strip().lower().replace(" ", "_")
    if name in SEMANTIC:
        return name
    if test_set == "acoustic" and name.endswith("instruction_following"):
        return ACOUSTIC
    return None
