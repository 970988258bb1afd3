"""The whole job on the bundled example, as `make demo` runs it: real Stage 1 on CPU,
the offline judge, fusion and the evaluation report."""

from __future__ import annotations

import json

from trace_eval.bench import load_benchmark
from trace_eval.cli import main
from trace_eval.schemas import validation_errors
from trace_eval.stage1.store import BlueprintStore


def test_blueprints_of_the_example_are_complete_and_cached(example_with_blueprints, capsys):
    bench = load_benchmark(example_with_blueprints)
    summary = json.loads((bench.root / "blueprints" / "summary.json").read_text())
    assert summary["clips"] == 24 and summary["unique_audio"] == 23  # one instruction serves two pairs
    for pair in bench.pairs:
        for bp in BlueprintStore(bench.root).for_pair(pair):
            assert validation_errors("blueprint", bp) == []
            sections = bp["provenance"]["extractors"]
            assert {n for n, s in sections.items() if s["status"] == "ok"} >= {
                "asr",
                "rate",
                "dnsmos",
                "pitch",
                "loudness",
                "voicing",
            }
            for name in ("emotion", "accent"):  # no weights offline: said so, with the fix
                if sections[name]["status"] == "unavailable":
                    assert f"--set {name}.model_path=DIR" in sections[name]["reason"]
    instruction, first, _ = BlueprintStore(bench.root).for_pair(bench.pairs[0])
    assert "fox" in first["agent_response"].lower()

    assert main(["blueprints", str(bench.root), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "cached 23  computed 0  failed 0" in printed, printed


def test_judge_fuse_and_evaluate_the_example(example_with_blueprints, tmp_path, capsys):
    run = tmp_path / "run"
    assert (
        main(["judge", "--bench", str(example_with_blueprints), "--model", "cues", "--out", str(run), "--quiet"]) == 0
    )
    assert main(["fuse", str(run), "--fusion", "cap", "--table"]) == 0
    table = capsys.readouterr().out
    assert "mini-03" in table and "both_bad" in table

    assert main(["evaluate", str(run), "--out", str(tmp_path / "report")]) == 0
    metrics = json.loads((tmp_path / "report" / "metrics.json").read_text())
    text = json.dumps(metrics)
    assert "NaN" not in text
    assert (tmp_path / "report" / "report.html").stat().st_size > 10_000
    assert (tmp_path / "report" / "confusion.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
