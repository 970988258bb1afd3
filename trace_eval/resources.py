"""Where the project's data folders are: `schemas/` and `models/` at the top of a source tree
(an editable install), or their copies under trace_eval/_data in an installed wheel."""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """The folder `name` (schemas, models): the installed copy when there is one, else the source tree's."""
    installed = PACKAGE_DIR / "_data" / name
    return installed if installed.is_dir() else PACKAGE_DIR.parent / name
