"""Reading the README and the documentation pages the way a reader pastes from them: a section's text, the
commands of its ```sh blocks, a table row."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def section(title: str, path: Path = README) -> str:
    """The text of a `## title` section of `path`, its subsections included."""
    text = path.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def shell_lines(text: str) -> list[str]:
    """The commands of the ```sh blocks of `text`, comments dropped."""
    blocks = re.findall(r"```sh\n(.*?)```", text, flags=re.S)
    return [re.sub(r"\s+#.*$", "", line).strip() for block in blocks for line in block.splitlines() if line.strip()]


def row(text: str, first_cell: str) -> str:
    """The table row of `text` whose first cell is `first_cell`."""
    return next(line for line in text.splitlines() if line.startswith(f"| {first_cell} |"))
