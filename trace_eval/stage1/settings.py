"""Extractor settings from the command line (--set NAME.FIELD=VALUE): typed, checked, split from the
engine's pool settings. Below both the pipeline and the engines, which read them."""

from __future__ import annotations

import dataclasses
from typing import Any

from extractors import Extractor
from extractors.base import POOL_SETTINGS

__all__ = ["coerce", "make_config"]


def coerce(value: Any, default: Any) -> Any:
    """Turn a CLI string into the type of the config field's default."""
    if not isinstance(value, str):
        return value
    if value.lower() in ("none", "null"):
        return None
    if isinstance(default, bool):
        return value.lower() in ("1", "true", "yes", "on")
    if isinstance(default, tuple) and default:  # "1,1,1,1": each item as the default's items
        return tuple(coerce(item.strip(), default[0]) for item in value.split(","))
    for kind in (int, float):
        if isinstance(default, kind):
            return kind(value)
    if default is None:
        for kind in (int, float):
            try:
                return kind(value)
            except ValueError:
                pass
    return value


def make_config(cls: type[Extractor], overrides: dict[str, Any]) -> Any:
    """The extractor's config with the overrides; pool fields (actors, num_gpus, ...) are the engine's."""
    fields = {f.name: f for f in dataclasses.fields(cls.Config)}
    overrides = {k: v for k, v in overrides.items() if k not in POOL_SETTINGS}
    unknown = set(overrides) - set(fields)
    if unknown:
        raise ValueError(
            f"{cls.name} has no setting {', '.join(sorted(unknown))}; expected one of: "
            f"{', '.join([*fields, *sorted(POOL_SETTINGS)])}"
        )
    base = cls.Config()
    return dataclasses.replace(base, **{k: coerce(v, getattr(base, k)) for k, v in overrides.items()})
