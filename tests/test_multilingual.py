"""A benchmark in English, Spanish and French, the whole job on real speech: instructions spoken by espeak-ng
with their written text, answers recorded by people (the Asterisk prompts, the same sentence in each
language), prepared with `prepare pairs`, blueprints made by the real recogniser (which detects each answer's
language), judged with `cues`: the answer in the instruction's language beats the same sentence in another
language, and `evaluate` reports agreement per language."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from trace_eval.cli import main

SOUNDS = Path("/usr/share/asterisk/sounds")
PROMPT = "vm-msgsaved"  # "Your message has been saved." in each language
# The instruction's language, its text, its espeak-ng voice, and the language of the other system's answer.
ITEMS = (
    ("en", 'Say "Your message has been saved."', "en-us", "es"),
    ("es", 'Di "Su mensaje ha sido guardado."', "es", "fr"),
    ("fr", "Dis « Votre message a été sauvegardé. »", "fr", "en"),
)
OTHER = {lang: other for lang, _, _, other in ITEMS}
NAMES = {"en": "English", "es": "Spanish", "fr": "French"}
INSTALL = "apt-get install espeak-ng asterisk-core-sounds-{en,es,fr}-wav"


@pytest.fixture
def given(tmp_path) -> Path:
    """Each system's answers and the instructions, as a lab has them before `prepare pairs`."""
    missing = [p for p in (SOUNDS / lang / f"{PROMPT}.wav" for lang in ("en", "es", "fr")) if not p.is_file()]
    if missing or shutil.which("espeak-ng") is None:
        pytest.fail(f"recorded prompts or espeak-ng missing ({missing}): {INSTALL}")
    root = tmp_path / "given"
    for folder in ("instructions", "native", "other"):
        (root / folder).mkdir(parents=True)
    for lang, text, voice, other in ITEMS:
        (root / "instructions" / f"{lang}.txt").write_text(text + "\n", encoding="utf-8")
        spoken = text.replace("«", "").replace("»", "").replace('"', "")
        subprocess.run(["espeak-ng", "-v", voice, "-w", str(root / "instructions" / f"{lang}.wav"), spoken], check=True)
        shutil.copy(SOUNDS / lang / f"{PROMPT}.wav", root / "native" / f"{lang}.wav")
        shutil.copy(SOUNDS / other / f"{PROMPT}.wav", root / "other" / f"{lang}.wav")
    return root


def test_the_answer_in_the_instructions_language_wins_in_english_spanish_and_french(given, tmp_path, capsys):
    bench = tmp_path / "bench"
    systems = ["--system", f"native={given / 'native'}", "--system", f"other={given / 'other'}"]
    command = ["prepare", "pairs", str(bench), "--instructions", str(given / "instructions"), *systems]
    assert main([*command, "--schedule", "all", "--quiet"]) == 0
    manifest = json.loads((bench / "manifest.json").read_text(encoding="utf-8"))
    for item in manifest:
        # The benchmark's author knows the language of the instructions written; people prefer the native answer.
        item["instruction_language"] = item["instruction_id"]
        native = "1" if item["model_a"] == "native" else "2"
        item["label"] = {"content": native, "voice_quality": "both_good", "paralinguistics": "both_good"}
        item["label"]["overall"] = native
    (bench / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False), encoding="utf-8")

    assert main(["blueprints", str(bench), "--only", "asr", "--quiet"]) == 0  # the cpu profile detects languages
    run = tmp_path / "run"
    assert main(["judge", "--bench", str(bench), "--model", "cues", "--out", str(run), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "3 of 6 in another language than their instruction's" in printed, printed

    records = [json.loads(line) for line in (run / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    by_item = {manifest[n]["instruction_id"]: (manifest[n], r) for n, r in enumerate(records)}
    for lang, (item, record) in by_item.items():
        native = "1" if item["model_a"] == "native" else "2"
        assert record["verdicts"]["content"] == native, record["reasoning"]
        assert f"in {NAMES[OTHER[lang]]}, not {NAMES[lang]} expected" in record["reasoning"]

    out = tmp_path / "eval"
    assert main(["evaluate", str(run), "--out", str(out)]) == 0
    by_language = json.loads((out / "metrics.json").read_text(encoding="utf-8"))["runs"][0]["by_language"]
    assert sorted(by_language) == ["en", "es", "fr"]
    assert all(slot["per_dimension"]["content"]["value"] == 1.0 for slot in by_language.values())
