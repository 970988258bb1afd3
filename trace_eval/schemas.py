"""JSON Schemas of the records trace-eval reads and writes (files in schemas/)."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import jsonschema

from trace_eval.resources import data_dir

SCHEMAS_DIR = data_dir("schemas")


@cache
def load_schema(name: str) -> dict:
    path = SCHEMAS_DIR / f"{name}.schema.json"
    if not path.is_file():
        known = sorted(p.name.split(".")[0] for p in SCHEMAS_DIR.glob("*.schema.json"))
        raise KeyError(f"no schema {name!r}; expected one of: {', '.join(known)}")
    return json.loads(path.read_text())


@cache
def validator(name: str) -> jsonschema.protocols.Validator:
    schema = load_schema(name)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def validation_errors(name: str, document: Any) -> list[str]:
    """Every problem of `document` against schema `name`, as "path: message" lines."""
    return [
        f"{'/'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}"
        for e in sorted(validator(name).iter_errors(document), key=lambda e: list(map(str, e.absolute_path)))
    ]
