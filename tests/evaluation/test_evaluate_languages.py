"""Benchmarks in several languages downstream of the judge: `evaluate` reports agreement per language (the
instruction's), and reports and leaderboards carry names in any script intact (UTF-8 Markdown, CSV, JSON, HTML,
and figures drawn with glyphs, not boxes)."""

from __future__ import annotations

import csv
import json
import warnings
from pathlib import Path

from llm_server import PairSpec, blueprint, write_benchmark
from test_leaderboard import HAND, write_manifest

from trace_eval.cli import main

G = "both_good"


def _in(text: str, code: str, probability: float | None = 0.96) -> dict:
    values = blueprint(text)
    values["language"] = {"code": code, "probability": probability, "source": "detected"}
    return values


# (instruction, its language, response in that language, the same sentence in another language, that language)
SAYS = [
    ('Say "good morning".', "en", "Good morning.", "Buenos días.", "es"),
    ('Say "thank you very much".', "en", "Thank you very much.", "Merci beaucoup.", "fr"),
    ('Di "buenos días".', "es", "Buenos días.", "Good morning.", "en"),
    ('Di "muchas gracias".', "es", "Muchas gracias.", "Merci beaucoup.", "fr"),
    ("Dis « bonne nuit ».", "fr", "Bonne nuit.", "Good night.", "en"),
    ("Dis « merci beaucoup ».", "fr", "Merci beaucoup.", "Muchas gracias.", "es"),
]


def multilingual_bench(root: Path) -> Path:
    """English, Spanish and French items, the answer in the instruction's language first or second, labelled
    by people as preferring it; one Spanish item with its written instruction's language declared."""
    specs = []
    for n, (text, code, right, other, other_code) in enumerate(SAYS):
        first = n % 2 == 0
        answers = (_in(right, code), _in(other, other_code)) if first else (_in(other, other_code), _in(right, code))
        winner = "1" if first else "2"
        specs.append(
            PairSpec(
                id=f"{code}{n}",
                instruction_text=text,
                instruction=_in(text.replace('"', ""), code),
                response_1=answers[0],
                response_2=answers[1],
                label={"content": winner, "voice_quality": G, "paralinguistics": G, "overall": winner},
            )
        )
    bench = write_benchmark(root, specs)
    manifest = json.loads((bench / "manifest.json").read_text(encoding="utf-8"))
    del manifest[3]["instruction_path"]  # a written instruction only, its language declared
    manifest[3]["instruction_language"] = "es"
    (bench / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False), encoding="utf-8")
    return bench


def test_evaluate_reports_agreement_per_language(tmp_path, capsys):
    bench = multilingual_bench(tmp_path / "bench")
    run = tmp_path / "run"
    assert main(["judge", "--bench", str(bench), "--model", "cues", "--out", str(run), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "language: response clips en 4, es 4, fr 4; 6 of 12 in another language than their instruction's" in printed
    records = [json.loads(line) for line in (run / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    # The answer in the instruction's language beats the same sentence in another: every item, either order.
    assert {r["id"]: r["verdicts"]["content"] for r in records} == {
        "en0": "1",
        "en1": "2",
        "es2": "1",
        "es3": "2",
        "fr4": "1",
        "fr5": "2",
    }

    out = tmp_path / "eval"
    assert main(["evaluate", str(run), "--out", str(out)]) == 0
    by_language = json.loads((out / "metrics.json").read_text(encoding="utf-8"))["runs"][0]["by_language"]
    assert list(by_language) == ["en", "es", "fr"]
    for code, name in (("en", "English"), ("es", "Spanish"), ("fr", "French")):
        slot = by_language[code]
        assert (slot["name"], slot["items"], slot["4way"]["correct"], slot["4way"]["n"]) == (name, 2, 2, 2)
        assert slot["per_dimension"]["content"]["value"] == 1.0
    markdown = (out / "report.md").read_text(encoding="utf-8")
    assert "## Agreement per language" in markdown
    assert "| run | Spanish (es) | 2 | 100.0% (2/2) | 100.0% [" in markdown
    assert "<h2>Agreement per language</h2>" in (out / "report.html").read_text(encoding="utf-8")


def test_a_benchmark_in_one_language_has_no_section_per_language(tmp_path, capsys):
    specs = [PairSpec(id=f"p{n}", response_1=_in("hello there", "en"), response_2=_in("hi", "en")) for n in range(2)]
    for spec in specs:
        spec.label = {"content": "1", "voice_quality": "1", "paralinguistics": "1", "overall": "1"}
    bench = write_benchmark(tmp_path / "bench", specs)
    run = tmp_path / "run"
    assert main(["judge", "--bench", str(bench), "--model", "cues", "--out", str(run), "--quiet"]) == 0
    assert main(["evaluate", str(run), "--out", str(tmp_path / "eval")]) == 0
    capsys.readouterr()
    assert json.loads((tmp_path / "eval" / "metrics.json").read_text())["runs"][0]["by_language"] is None
    assert "per language" not in (tmp_path / "eval" / "report.md").read_text(encoding="utf-8")


NAMES = {"amy": "通义千问", "bob": "نموذج-عربي", "cat": "Ωmega-ü"}


def test_a_leaderboard_of_systems_named_in_other_scripts(tmp_path, capsys):
    items = [
        {**entry, **{key: NAMES.get(entry.get(key), entry.get(key)) for key in ("model_a", "model_b") if key in entry}}
        for entry in HAND
    ]
    bench = write_manifest(tmp_path / "bench", items)
    out = tmp_path / "board"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(["leaderboard", "--bench", str(bench), "--out", str(out)]) == 0
    missing = [str(w.message) for w in caught if "missing from font" in str(w.message)]
    assert not missing, f"figures drawn with boxes for missing glyphs (.ci/run installs fonts-wqy-microhei): {missing}"
    printed = capsys.readouterr().out
    board = json.loads((out / "leaderboard.json").read_text(encoding="utf-8"))
    assert set(board["systems"]) == set(NAMES.values())
    markdown = (out / "leaderboard.md").read_text(encoding="utf-8")
    with open(out / "leaderboard.csv", newline="", encoding="utf-8") as f:
        in_csv = {row["system"] for row in csv.DictReader(f)}
    for name in NAMES.values():
        assert name in markdown and name in in_csv and name in printed
