"""A Spanish and English lab's benchmark, the whole job on real speech: three instructions spoken by espeak-ng (one
whose Spanish Whisper base's token hears as Latin, and the language rule as Spanish, not surely), answers
recorded by people (the Asterisk prompt "La conferencia ha sido extendida." / "The conference has been
extended.", whose words are cognates), three systems (one answering in the instruction's language, one in the
other language, one alike the first), prepared with `prepare pairs` and judged with `cues`:

- with the instructions' texts and no language declared: the text tells the language the audio cannot, and the
  answer in the other language loses, its cognates notwithstanding;
- with the languages declared in an `--instructions` JSON lines file and `--instruction-language`;
- from the audio alone: the words to say are read from the instruction's transcript, the answer in the other
  language loses wherever the audio tells the language, and where no words to say are found in a transcript, no
  answer is passed on its words;
- from Python: `Judge.compare(..., instruction_language="es")` declares it;
- the run summary counts each response clip once, and the audit page marks off-language answers against the
  language the judges hold them to."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from view_pages import read_page_data

import trace_eval
from trace_eval.cli import main
from trace_eval.stage1.store import BlueprintStore

SOUNDS = Path("/usr/share/asterisk/sounds")
PROMPT = "conf-extended"  # "The conference has been extended." / "La conferencia ha sido extendida."
# id, language, the written instruction, espeak-ng's arguments and what it says.
INSTRUCTIONS = (
    # Its token says Latin 0.34, Spanish second; the Spanish transcript's words read as Spanish: the language rule
    # hears Spanish at 0.6, and the text agrees.
    ("es-di", "es", "Di «La conferencia ha sido extendida.»", ["-v", "es", "-s", "130"],
     "Di La conferencia ha sido extendida."),
    # Heard as Spanish with probability 0.71: the audio tells it.
    (
        "es-repita",
        "es",
        "Por favor, repita la frase: «La conferencia ha sido extendida.»",
        ["-v", "es"],
        "Por favor, repita la frase: la conferencia ha sido extendida.",
    ),
    ("en-say", "en", 'Say "The conference has been extended."', ["-v", "en-us"],
     "Say the conference has been extended."),
)  # fmt: skip
OTHER = {"es": "en", "en": "es"}
INSTALL = "apt-get install espeak-ng asterisk-core-sounds-en-wav asterisk-core-sounds-es-wav"


@pytest.fixture(scope="module")
def given(tmp_path_factory) -> Path:
    """The lab's files before `prepare pairs`: instructions with their texts, the same audio alone, a JSON lines
    file that declares the languages, and each system's answers."""
    prompts = [SOUNDS / lang / f"{PROMPT}.wav" for lang in ("en", "es")]
    if not all(p.is_file() for p in prompts) or shutil.which("espeak-ng") is None:
        pytest.fail(f"recorded prompts or espeak-ng missing: {INSTALL}")
    root = tmp_path_factory.mktemp("bilingual")
    for folder in ("instructions", "spoken", "native", "other", "twin"):
        (root / folder).mkdir()
    rows = []
    for iid, lang, text, voice, says in INSTRUCTIONS:
        audio = root / "instructions" / f"{iid}.wav"
        subprocess.run(["espeak-ng", *voice, "-w", str(audio), says], check=True)
        (root / "instructions" / f"{iid}.txt").write_text(text + "\n", encoding="utf-8")
        shutil.copy(audio, root / "spoken" / f"{iid}.wav")
        shutil.copy(SOUNDS / lang / f"{PROMPT}.wav", root / "native" / f"{iid}.wav")
        shutil.copy(SOUNDS / lang / f"{PROMPT}.wav", root / "twin" / f"{iid}.wav")
        shutil.copy(SOUNDS / OTHER[lang] / f"{PROMPT}.wav", root / "other" / f"{iid}.wav")
        row = {"id": iid, "instruction_path": f"instructions/{iid}.wav", "instruction_text": text}
        rows.append(row | ({"instruction_language": lang} if lang == "es" else {}))  # English: the option's
    (root / "instructions.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return root


def prepared(given: Path, out: Path, instructions: str, *options: str) -> list[dict]:
    """`prepare pairs` with every two of the three systems, then Stage 1's transcripts and languages."""
    systems = [f"--system={name}={given / name}" for name in ("native", "other", "twin")]
    command = ["prepare", "pairs", str(out), "--instructions", str(given / instructions), *systems, *options]
    assert main([*command, "--schedule", "all", "--quiet"]) == 0
    assert main(["blueprints", str(out), "--only", "asr", "--quiet"]) == 0
    return json.loads((out / "manifest.json").read_text(encoding="utf-8"))


def judged(bench: Path, run: Path, capsys) -> tuple[dict[str, dict], str]:
    """{pair id: its results.jsonl record}, and what `judge` printed."""
    capsys.readouterr()
    assert main(["judge", "--bench", str(bench), "--model", "cues", "--out", str(run), "--quiet"]) == 0
    lines = (run / "results.jsonl").read_text(encoding="utf-8").splitlines()
    return {r["id"]: r for r in map(json.loads, lines)}, capsys.readouterr().out


def right_answer(item: dict) -> str:
    """The slot of the system answering in the instruction's language, or both_good for native against twin."""
    if "other" not in (item["model_a"], item["model_b"]):
        return "both_good"
    return "2" if item["model_a"] == "other" else "1"


def test_the_text_tells_the_language_the_audio_cannot_and_the_other_language_loses(given, tmp_path, capsys):
    bench = tmp_path / "bench"
    manifest = prepared(given, bench, "instructions")
    assert not any("instruction_language" in item for item in manifest)  # nothing declared
    heard = BlueprintStore(bench).get_by_path("instructions/es-di.wav")["language"]
    token = heard["evidence"]["token"]
    assert max(token, key=token.get) == "la" and heard["code"] == "es", heard  # the rule hears past the token

    records, printed = judged(bench, tmp_path / "run", capsys)
    for item in manifest:
        record = records[item["id"]]
        assert record["verdicts"]["content"] == right_answer(item), record["reasoning"]
        if "other" in (item["model_a"], item["model_b"]):
            assert "in English, not Spanish expected" in record["reasoning"] or item["instruction_id"] == "en-say"
    told = records[next(i["id"] for i in manifest if i["instruction_id"] == "es-di")]["instruction_language"]
    assert told["code"] == "es" and told["probability"] >= heard["probability"], told  # the text makes it surer
    assert told["evidence"].startswith("its audio: token la") and "its text reads es" in told["evidence"], told
    # 9 pairs, 18 answer slots, 9 response clips (each answer is in two pairs): every count is of clips.
    assert "cues measured over 9 response clips" in printed, printed
    assert "language: response clips es 5, en 4; 3 of 9 in another language than their instruction's" in printed

    # The audit page holds the answers to the language the judges hold them to, whatever the audio was heard as.
    assert main(["view", str(tmp_path / "run"), "--out", str(tmp_path / "page")]) == 0
    page = read_page_data(tmp_path / "page")
    for pair in page["pairs"]:
        expected = pair["id"].split(":")[0][:2]
        assert pair["instruction"]["expect"] == expected
    di = next(p for p in page["pairs"] if p["id"].startswith("es-di:"))
    assert "told" not in di["instruction"]  # the audio told it, the text agreed: no "text" tag


def test_languages_declared_in_the_instructions_file_and_by_option(given, tmp_path, capsys):
    bench = tmp_path / "bench"
    manifest = prepared(given, bench, "instructions.jsonl", "--instruction-language", "en")
    declared = {item["instruction_id"]: item["instruction_language"] for item in manifest}
    assert declared == {"es-di": "es", "es-repita": "es", "en-say": "en"}
    records, _ = judged(bench, tmp_path / "run", capsys)
    for item in manifest:
        record = records[item["id"]]
        assert record["verdicts"]["content"] == right_answer(item), record["reasoning"]
        assert record["instruction_language"]["source"] == "declared"


def test_spoken_only_instructions_are_judged_from_their_transcripts(given, tmp_path, capsys):
    bench = tmp_path / "bench"
    manifest = prepared(given, bench, "spoken")
    assert not any("instruction_text" in item for item in manifest)
    records, _ = judged(bench, tmp_path / "run", capsys)
    for item in manifest:
        record = records[item["id"]]
        if item["instruction_id"] == "es-di":
            # Heard as Spanish, but its transcript ("De la conferencia a si mo extendi ma.") gives no words to say:
            # the answer in English fails, the Spanish one cannot be checked, and no answer passes on its words.
            assert record["instruction_language"]["code"] == "es"
            assert record["verdicts"]["content"] is None, record["reasoning"]
            assert "no quoted words" in record["undetermined"]["content"]
            if right_answer(item) != "both_good":
                assert "in English, not Spanish expected" in record["reasoning"]
            continue
        assert record["verdicts"]["content"] == right_answer(item), record["reasoning"]
        assert "words to say read from the instruction's transcript" in record["reasoning"]
        if right_answer(item) != "both_good":
            wrong = "in English, not Spanish expected" if item["instruction_id"] != "en-say" else "in Spanish, not"
            assert wrong in record["reasoning"]
    # Stage 1 heard the instructions first and made each answer once, tested in the language its instruction was
    # surely heard in (the English prompt answers a Spanish instruction and an English one: tested in both).
    store = BlueprintStore(bench)
    for item in manifest:
        told = records[item["id"]]["instruction_language"]
        assert told["probability"] >= 0.5, told
        for answer in (item["audio1_path"], item["audio2_path"]):
            key = store.key_for_path(answer)
            assert key.startswith(store.hash_of(answer) + ".expects-"), key
            assert told["code"] in key.rpartition(".expects-")[2].split("+")


def test_compare_declares_the_instruction_s_language(given, tmp_path):
    judge = trace_eval.Judge(model="cues", workdir=tmp_path / "work")
    native, other = given / "native" / "es-di.wav", given / "other" / "es-di.wav"
    # A written instruction too short for its language to be read: only the declaration tells it.
    short = "Di «Conferencia extendida.»"
    assert judge.compare(None, other, native, short).labels["content"] == "both_good"  # read as English, as ever
    verdict = judge.compare(None, other, native, short, instruction_language="es")
    assert verdict.labels["content"] == "2", verdict.reasoning
    assert verdict.record["instruction_language"]["source"] == "declared"
    # Spoken, with its text: the words to say are the text's; spoken alone, its transcript gives none, and nothing
    # is passed on its words.
    spoken = given / "spoken" / "es-di.wav"
    assert judge.compare(spoken, other, native, INSTRUCTIONS[0][2]).labels["content"] == "2"
    unsure = judge.compare(spoken, other, native)
    assert unsure.record["instruction_language"]["code"] == "es"
    assert unsure.labels["content"] is None and "no quoted words" in unsure.undetermined["content"]
    with pytest.raises(ValueError, match="did you mean 'es'"):
        judge.compare(spoken, other, native, instruction_language="spa")


def test_an_empty_or_broken_answer_loses_its_pair_with_the_reason(given, tmp_path, capsys):
    """A system that returns nothing (an empty file) or a file no player opens has given no answer: its pairs are
    made and lost, not left out, so it cannot rank above a system that answered."""
    for name, data in (("silent", b""), ("broken", b"RIFF\x00\x00\x00\x00WAVEnot audio")):
        (given / name).mkdir(exist_ok=True)
        for iid, *_ in INSTRUCTIONS:
            (given / name / f"{iid}.wav").write_bytes(data)
    bench, systems = tmp_path / "bench", [f"--system={n}={given / n}" for n in ("native", "silent", "broken")]
    command = ["prepare", "pairs", str(bench), "--instructions", str(given / "instructions"), *systems, "--quiet"]
    assert main([*command, "--schedule", "reference", "--reference", "native"]) == 0
    printed = capsys.readouterr().out
    assert "failed answer, kept (it loses its pairs): answers/silent/es-di.wav: empty file" in printed, printed
    source = json.loads((bench / "SOURCE.json").read_text(encoding="utf-8"))
    assert sorted(source["failed_answers"]) == sorted(
        f"answers/{n}/{i}.wav" for n in ("silent", "broken") for i, *_ in INSTRUCTIONS
    )
    manifest = json.loads((bench / "manifest.json").read_text(encoding="utf-8"))
    assert len(manifest) == 6  # every pair made

    # Stage 1 says which clips it could not read (exit 1); the judge reads them as answers that say nothing.
    assert main(["blueprints", str(bench), "--only", "asr,dnsmos,loudness", "--quiet"]) == 1
    records, _ = judged(bench, tmp_path / "run", capsys)
    for item in manifest:
        record = records[item["id"]]
        native = "1" if item["model_a"] == "native" else "2"
        assert record["status"] == "ok", record["reason"]
        assert record["verdicts"]["content"] == native and record["overall"] == native, record["reasoning"]
        failed = "empty file" if "silent" in (item["model_a"], item["model_b"]) else "not decodable audio"
        assert "could not be heard (" in record["reasoning"] and failed in record["reasoning"]
    assert main(["leaderboard", str(tmp_path / "run"), "--out", str(tmp_path / "board")]) == 0
    board = json.loads((tmp_path / "board" / "leaderboard.json").read_text(encoding="utf-8"))
    assert board["items"]["ranked"] == 6
