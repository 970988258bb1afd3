"""Fixtures shared across test modules."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "mini"


@pytest.fixture(scope="session")
def example_with_blueprints(tmp_path_factory) -> Path:
    """A copy of the bundled example with its blueprints made by the real Stage 1 (CPU profile).

    Models that cannot be had offline (emotion2vec, ECAPA) are recorded as unavailable,
    exactly as on a user's machine without them.
    """
    from trace_eval.pipeline import BlueprintOptions, run_blueprints

    root = tmp_path_factory.mktemp("example") / "mini"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("blueprints"))
    summary = run_blueprints(root, BlueprintOptions(device="cpu", progress=False))
    assert summary.ok, summary.failures
    return root
