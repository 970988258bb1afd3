"""Reading a released label file (the TRACE HCoT files: a JSON list of manifest items) and what every source
checks of it before any audio is read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from trace_eval.prepare.folder import PrepareError, Problem

__all__ = ["read_label_items", "same_text"]

PATH_FIELDS = ("instruction_path", "audio1_path", "audio2_path")


def read_label_items(path: Path) -> tuple[list[dict[str, Any]], list[Problem]]:
    """The items of a label file and the problems of their shape (no id, a duplicate id, a path missing)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise PrepareError(f"{path}: not a JSON label file ({error})") from error
    if not isinstance(data, list) or not data:
        raise PrepareError(f"{path}: expected a JSON list of items")
    problems: list[Problem] = []
    seen: set[str] = set()
    items = []
    for n, item in enumerate(data):
        if not isinstance(item, dict) or item.get("index", item.get("id")) is None:
            problems.append(Problem(f"#{n}", "not an item with an index"))
            continue
        pid = str(item.get("id", item.get("index")))
        if pid in seen:
            problems.append(Problem(pid, "the index appears twice in the label file"))
        seen.add(pid)
        for name in PATH_FIELDS:
            value = item.get(name)
            if not isinstance(value, str) or not value or Path(value).is_absolute() or ".." in Path(value).parts:
                problems.append(Problem(pid, f"{name} {value!r} is not a relative path inside the folder"))
        items.append(item)
    return items, problems


def same_text(a: Any, b: Any) -> bool:
    """Texts equal up to white space (a label file may re-wrap an instruction)."""
    return isinstance(a, str) and isinstance(b, str) and " ".join(a.split()) == " ".join(b.split())


def item_id(item: dict[str, Any]) -> str:
    return str(item.get("id", item.get("index")))
