"""Fixtures shared across test modules."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

import extractors  # noqa: F401  (first: pins the numeric class before any test module loads numpy; extractors/numerics.py)

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

# Blueprints go to a store of this test session, never to the user's ~/.cache (subprocesses inherit it);
# session fixtures write there, and each test gets a store of its own (`own_store`), so a test that
# blueprints audio another test made computes it again.
_SESSION_STORE = tempfile.mkdtemp(prefix="trace-store-")
os.environ["TRACE_STORE"] = _SESSION_STORE


@pytest.fixture(autouse=True)
def own_store(tmp_path_factory, monkeypatch) -> Path:
    """The blueprint store of one test ($TRACE_STORE)."""
    store = tmp_path_factory.mktemp("store")
    monkeypatch.setenv("TRACE_STORE", str(store))
    return store


def _with_blueprints(tmp_path_factory, name: str) -> Path:
    """A copy of a bundled example with its blueprints made by the real Stage 1 (CPU profile).

    Models that cannot be had offline (emotion2vec, ECAPA) are recorded as unavailable,
    exactly as on a user's machine without them.
    """
    from trace_eval.stage1.pipeline import BlueprintOptions, run_blueprints

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


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """Headless Chromium for the page tests (tests/view, tests/labels); in CI a missing browser fails."""
    from view_pages import browser_problem, start_chromium

    problem = browser_problem()
    if problem:
        if os.environ.get("CI"):
            pytest.fail(f"the browser tests must run in CI: {problem}")
        pytest.skip(problem)
    driver = start_chromium(tmp_path_factory.mktemp("chromium-profile"))
    yield driver
    driver.quit()
