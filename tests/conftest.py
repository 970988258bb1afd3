"""Fixtures shared across test modules."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _with_blueprints(tmp_path_factory, name: str) -> Path:
    """A copy of a bundled example with its blueprints made by the real Stage 1 (CPU profile).

    Models that cannot be had offline (emotion2vec, ECAPA) are recorded as unavailable,
    exactly as on a user's machine without them.
    """
    from trace_eval.pipeline import BlueprintOptions, run_blueprints

    root = tmp_path_factory.mktemp("example") / name
    shutil.copytree(EXAMPLES / name, root, ignore=shutil.ignore_patterns("blueprints"))
    summary = run_blueprints(root, BlueprintOptions(device="cpu", progress=False))
    assert summary.ok, summary.failures
    return root


@pytest.fixture(scope="session")
def example_with_blueprints(tmp_path_factory) -> Path:
    """examples/mini (pairs) with blueprints."""
    return _with_blueprints(tmp_path_factory, "mini")


@pytest.fixture(scope="session")
def style_example_with_blueprints(tmp_path_factory) -> Path:
    """examples/mini-style (single answers) with blueprints."""
    return _with_blueprints(tmp_path_factory, "mini-style")
