"""Fixtures of the label store's tests: the systems' answers once per session, a prepared benchmark per test
(tests/label_benches.py makes both)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from label_benches import SYSTEMS, make_outputs, prepare_pairs


@pytest.fixture(scope="session")
def outputs(tmp_path_factory) -> Path:
    """Six instructions q00..q05 (with text) and four systems' answers to each."""
    if shutil.which("sox") is None:
        if os.environ.get("CI"):
            pytest.fail("the labelling tests must run in CI: sox is needed to make the audio (.ci/run installs it)")
        pytest.skip("sox is needed to make the audio")
    return make_outputs(tmp_path_factory.mktemp("outputs"))


@pytest.fixture
def bench(tmp_path, outputs) -> Path:
    """18 pairs: three systems, every two of them on six instructions."""
    out = tmp_path / "bench"
    prepare_pairs(out, outputs, SYSTEMS[:3])
    return out
