"""The numeric class: every library whose arithmetic reaches a stored value runs the kernels of the class.

What the libraries run is read back from them (numpy's dispatch, OpenBLAS through threadpoolctl, soxr's engine,
CTranslate2's own log), never taken from the variables that asked for it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from extractors import numerics
from extractors.numerics import CHOOSE, CLASSES, check, default_class, numeric_class

ROOT = Path(__file__).resolve().parents[2]
REPORT = "import json, extractors; from extractors.numerics import check; c = check(); "
REPORT += "print(json.dumps([c.numeric_class, c.kernels, c.reasons]))"


def _fresh(code: str, **env: str | None) -> subprocess.CompletedProcess:
    """`code` in a new Python, with the class's variables cleared and `env` set (None: left unset)."""
    clean = {k: v for k, v in os.environ.items() if k not in numerics.environment("avx2") and k != CHOOSE}
    clean.update({k: v for k, v in env.items() if v is not None})
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=clean, capture_output=True, text=True)


def _report(code: str = REPORT, **env: str | None) -> tuple[str, dict, list]:
    proc = _fresh(code, **env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return tuple(json.loads(proc.stdout.splitlines()[-1]))  # type: ignore[return-value]


def test_this_process_runs_every_library_in_its_class():
    """The test suite itself (tests/conftest.py imports extractors first) runs the machine's class."""
    found = check()
    assert default_class() is not None, "no numeric class on this machine: docs/reproducibility.md"
    assert found.numeric_class == default_class(), found.reasons
    assert not found.reasons
    wanted = CLASSES[found.numeric_class].kernels
    for library in ("numpy", "openblas", "ctranslate2", "onednn", "onnxruntime", "soxr"):
        assert found.kernels[library] in wanted[library], (library, found.kernels)
    assert numeric_class() == found.numeric_class


@pytest.mark.parametrize("name", list(CLASSES))
def test_each_class_is_what_the_libraries_run_in_a_fresh_process(name):
    """The variables reach every library before it loads: what each one reports is the class's."""
    if CLASSES[name].needs - numerics._cpu_flags():
        pytest.skip(f"this CPU cannot run class {name}")
    in_force, kernels, reasons = _report(**{CHOOSE: name})
    assert (in_force, reasons) == (name, []), reasons
    assert {k: v in CLASSES[name].kernels[k] for k, v in kernels.items()} == dict.fromkeys(kernels, True), kernels
    assert {"numpy", "openblas", "soxr", "onnxruntime", "ctranslate2", "onednn"} <= kernels.keys()


def test_torch_runs_the_kernels_of_the_class_once_loaded():
    pytest.importorskip("torch")
    code = "import extractors, torch; " + REPORT.replace("import json, extractors; ", "import json; ")
    for name, capability in (("avx2", "AVX2"), ("generic", "DEFAULT")):
        if CLASSES[name].needs - numerics._cpu_flags():
            continue
        in_force, kernels, reasons = _report(code, **{CHOOSE: name})
        assert (in_force, kernels["torch"], reasons) == (name, capability, [])


def test_a_library_outside_the_class_makes_the_process_unpinned_and_says_why():
    # numpy imported first reads the variables before the class sets them: under generic it still runs the
    # widest kernels the CPU has (X86_V3 on an AVX2 CPU, AVX512_SPR on a Sapphire Rapids Xeon), and its
    # OpenBLAS its own choice (scipy's, loaded later, the class's Nehalem), and the process says so.
    if "avx2" not in numerics._cpu_flags():
        pytest.skip("needs a CPU with AVX2")
    code = "import numpy; " + REPORT
    in_force, kernels, reasons = _report(code, **{CHOOSE: "generic"})
    assert in_force == "unpinned"
    assert kernels["numpy"] not in CLASSES["generic"].kernels["numpy"], kernels
    own, scipys = kernels["openblas"].split("/") if "/" in kernels["openblas"] else (kernels["openblas"], "")
    assert "Nehalem" in (own, scipys) and {own, scipys} - {"Nehalem"}, kernels
    assert any(r.startswith(f"numpy runs {kernels['numpy']} kernels where class generic") for r in reasons), reasons
    assert any("import extractors" in r for r in reasons), reasons
    # A variable set by hand to another value wins over the class, and is named.
    in_force, _, reasons = _report(CT2_USE_MKL="1")
    assert in_force == "unpinned" and reasons == ["CT2_USE_MKL='1' where class avx2 sets '0'"]


def test_ctranslate2_reports_the_kernels_the_class_names():
    """CTranslate2's own log at load: its instruction set and the library of each matrix product."""
    code = (
        "import extractors, ctranslate2; from extractors.asr import card_for; "
        "from extractors.models import resolve_model; "
        "ctranslate2.models.Whisper(str(resolve_model(card_for('whisper-tiny.en-ct2'))), device='cpu', "
        "compute_type='int8', intra_threads=1)"
    )
    for name in CLASSES:
        if CLASSES[name].needs - numerics._cpu_flags():
            continue
        log = _fresh(code, CT2_VERBOSE="1", **{CHOOSE: name}).stderr
        isa = CLASSES[name].kernels["ctranslate2"][0]
        assert f"Selected ISA: {isa}" in log, log[-2000:]
        assert "Use Intel MKL: false" in log and "SGEMM backend: DNNL" in log and "GEMM_S8 backend: DNNL" in log, log


def test_a_class_the_cpu_cannot_run_is_refused(monkeypatch):
    monkeypatch.setenv(CHOOSE, "avx2")
    monkeypatch.setattr(numerics, "_cpu_flags", lambda: frozenset({"sse4_2"}))
    with pytest.raises(ValueError, match=f"{CHOOSE}=generic"):
        numerics.pin()
    monkeypatch.setenv(CHOOSE, "avx512")
    with pytest.raises(ValueError, match="expected one of: avx2, generic"):
        numerics.pin()


def test_sections_record_the_class_and_every_librarys_kernels():
    from extractors.loudness import LoudnessExtractor

    record = LoudnessExtractor().numerics()
    assert record["class"] == numeric_class() and "unpinned" not in record
    assert record["kernels"] == {k: v for k, v in check().kernels.items() if k != "torch"}


def test_torch_s_kernels_are_recorded_where_torch_computes_only():
    """Whatever else the process imported: a section's record does not depend on it."""
    import torch  # noqa: F401  (loaded by another part of the process)

    from extractors.emotion import EmotionExtractor
    from extractors.loudness import LoudnessExtractor

    assert "torch" not in LoudnessExtractor().numerics()["kernels"]
    assert EmotionExtractor().numerics()["kernels"]["torch"] == check().kernels["torch"]
