"""The speech every snapshot of these tests is made of, synthesised once."""

from __future__ import annotations

import pytest
from release_snapshots import make_clips

from trace_eval.synth import have_tools


@pytest.fixture(scope="session")
def clips(tmp_path_factory) -> dict[tuple[int, int], bytes]:
    if not have_tools():
        pytest.skip("espeak-ng and sox are needed to make the speech")
    return make_clips(tmp_path_factory.mktemp("speech"))
