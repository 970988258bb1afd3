"""Where the project's folders are: its data folders `schemas/` and `models/` at the top of a source tree
(an editable install) or their copies under trace_eval/_data in an installed wheel, and the user's cache."""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """The folder `name` (schemas, models): the installed copy when there is one, else the source tree's."""
    installed = PACKAGE_DIR / "_data" / name
    return installed if installed.is_dir() else PACKAGE_DIR.parent / name


def user_cache_dir(name: str) -> Path:
    """The user-level cache folder `name` (blueprints, judge, clips): $TRACE_CACHE_DIR/name, else
    $XDG_CACHE_HOME/trace-eval/name, else ~/.cache/trace-eval/name."""
    if os.environ.get("TRACE_CACHE_DIR"):
        return Path(os.environ["TRACE_CACHE_DIR"]).expanduser() / name
    return Path(os.environ.get("XDG_CACHE_HOME") or "~/.cache").expanduser() / "trace-eval" / name
