"""`prepare pairs`: 3 systems x 10 instructions, one answer missing; the schedules, then a judge run and its
leaderboard."""

from __future__ import annotations

import json
import subprocess
from collections import Counter

import pytest

from trace_eval.cli import main
from trace_eval.synth import Voice, speak

SAYINGS = ["The quick brown fox jumps over the lazy dog.", "Open the window please."]
SYSTEMS = ("clear", "noisy", "tone")


@pytest.fixture(scope="module")
def outputs(tmp_path_factory, clips):
    """Instructions q00..q09 that quote words to say; `clear` says them, `noisy` says them under noise, `tone`
    answers with a beep (no speech); `noisy` has no answer for q07."""
    root = tmp_path_factory.mktemp("outputs")
    made = {}
    for k, saying in enumerate(SAYINGS):
        made[("q", k)] = speak(f'Say "{saying}"', root / f"src/q{k}.wav")
        made[("clear", k)] = speak(saying, root / f"src/clear{k}.wav")
        made[("noisy", k)] = speak(saying, root / f"src/noisy{k}.wav", Voice(noise_db=-18))
    tone = root / "src/tone.wav"
    subprocess.run(
        ["sox", "-n", "-r", "16000", "-b", "16", str(tone), "synth", "1.5", "sine", "440", "vol", "0.3"], check=True
    )
    for n in range(10):
        k = n % 2
        for folder, source in (
            ("instructions", made[("q", k)]),
            ("clear", made[("clear", k)]),
            ("noisy", made[("noisy", k)]),
            ("tone", tone),
        ):
            if folder == "noisy" and n == 7:
                continue
            (root / folder).mkdir(exist_ok=True)
            (root / folder / f"q{n:02d}.wav").write_bytes(source.read_bytes())
    # The instructions as a manifest too: the text says which words to say, which the cues backbone reads.
    texts = [
        {
            "id": f"q{n:02d}",
            "instruction_path": f"instructions/q{n:02d}.wav",
            "instruction_text": f'Say "{SAYINGS[n % 2]}"',
        }
        for n in range(10)
    ]
    (root / "instructions.json").write_text(json.dumps(texts))
    for text in texts:
        (root / "instructions" / f"{text['id']}.txt").write_text(text["instruction_text"] + "\n")
    return root


def prepare(out, outputs, *schedule, instructions="instructions") -> int:
    systems = [a for name in SYSTEMS for a in ("--system", f"{name}={outputs / name}")]
    given = str(outputs / instructions)
    return main(["prepare", "pairs", str(out), "--instructions", given, *systems, "--quiet", *schedule])


def seats(items) -> dict[str, tuple[int, int]]:
    first, second = Counter(i["model_a"] for i in items), Counter(i["model_b"] for i in items)
    return {s: (first[s], second[s]) for s in sorted(first | second)}


def test_every_system_against_a_reference_with_the_missing_answer_reported(tmp_path, outputs, capsys):
    out = tmp_path / "bench"
    assert prepare(out, outputs, "--schedule", "reference", "--reference", "clear") == 0
    printed = capsys.readouterr().out
    assert "19 items" in printed and "noisy: no answer for 1 instruction(s): q07" in printed
    items = json.loads((out / "manifest.json").read_text())
    assert len(items) == 19 and all("clear" in (i["model_a"], i["model_b"]) for i in items)
    assert not [i for i in items if i["instruction_id"] == "q07" and "noisy" in (i["model_a"], i["model_b"])]
    assert all(abs(a - b) <= 1 for a, b in seats(items).values()), seats(items)
    first = items[0]
    assert first["instruction_path"] == "instructions/q00.wav"
    assert first["instruction_text"] == f'Say "{SAYINGS[0]}"'  # from q00.txt beside the audio
    assert (out / first["audio1_path"]).read_bytes() == (outputs / first["model_a"] / "q00.wav").read_bytes()
    record = json.loads((out / "SOURCE.json").read_text())
    assert record["missing_answers"] == {"noisy": ["q07"]}
    assert [s.get("system") for s in record["sources"]] == [None, "clear", "noisy", "tone"]


def test_all_pairs_and_a_seeded_sample_balanced_in_positions(tmp_path, outputs):
    assert prepare(tmp_path / "all", outputs, "--schedule", "all") == 0
    items = json.loads((tmp_path / "all" / "manifest.json").read_text())
    assert len(items) == 28  # 3 pairs x 10, less the two with noisy on q07
    assert all(abs(a - b) <= 1 for a, b in seats(items).values()), seats(items)

    drawn = []
    for name, seed in (("s0", "0"), ("s0-again", "0"), ("s1", "1")):
        assert prepare(tmp_path / name, outputs, "--schedule", "sample", "--per-instruction", "2", "--seed", seed) == 0
        drawn.append(json.loads((tmp_path / name / "manifest.json").read_text()))
    assert drawn[0] == drawn[1] and drawn[0] != drawn[2]  # the seed decides the draw
    assert len(drawn[0]) == 19 and all(abs(a - b) <= 1 for a, b in seats(drawn[0]).values()), seats(drawn[0])
    # two pairs per instruction; q07 has answers from two systems only, so one
    assert Counter(i["instruction_id"] for i in drawn[0]) == {f"q{n:02d}": 1 if n == 7 else 2 for n in range(10)}


def test_a_reference_that_is_no_system_is_refused(tmp_path, outputs, capsys):
    assert prepare(tmp_path / "b", outputs, "--reference", "nobody") == 1
    assert "--reference nobody: not one of the systems (clear, noisy, tone)" in capsys.readouterr().err
    assert prepare(tmp_path / "b", outputs, "--reference", "noisey") == 1
    assert "did you mean noisy?" in capsys.readouterr().err


def test_no_schedule_and_no_reference_names_both_ways_out(tmp_path, outputs, capsys):
    assert prepare(tmp_path / "b", outputs) == 1
    error = capsys.readouterr().err
    assert "--reference (one of clear, noisy, tone)" in error and "--schedule all" in error
    assert "None" not in error


def test_the_leaderboard_of_a_judge_run_over_the_pairs_ranks_the_systems(tmp_path, outputs):
    out = tmp_path / "bench"
    assert prepare(out, outputs, "--schedule", "all", instructions="instructions.json") == 0
    assert json.loads((out / "manifest.json").read_text())[0]["instruction_text"] == f'Say "{SAYINGS[0]}"'
    assert main(["blueprints", str(out), "--profile", "cpu", "--workers", "0", "--quiet"]) == 0
    run = tmp_path / "run"
    assert main(["judge", "--bench", str(out), "--model", "cues", "--out", str(run), "--quiet"]) == 0
    assert main(["leaderboard", str(run), "--resamples", "1000"]) == 0
    board = json.loads((run / "leaderboard" / "leaderboard.json").read_text())
    assert board["systems"] == sorted(SYSTEMS)
    table = board["sources"][0]["tables"]["overall"]
    rows = {row["system"]: row for row in table["systems"]}
    # Speech that says the quoted words beats the same under noise, which beats a beep.
    ranked = sorted(rows, key=lambda s: -rows[s]["win_rate"]["value"])
    assert ranked == ["clear", "noisy", "tone"], {s: (r["wins"], r["losses"]) for s, r in rows.items()}
    assert rows["tone"]["wins"] == 0 and rows["clear"]["losses"] == 0
    scores = [rows[s]["score"]["value"] for s in ranked]
    if None not in scores:  # Bradley-Terry scores, where the fit exists, rank them the same way
        assert scores == sorted(scores, reverse=True)


def test_a_system_folder_matching_no_instruction_and_misspelt_paths_are_named(tmp_path, outputs, capsys):
    stray = tmp_path / "stray"
    stray.mkdir()
    (stray / "answer-one.wav").write_bytes((outputs / "clear" / "q00.wav").read_bytes())
    systems = ["--system", f"clear={outputs / 'clear'}", "--system", f"stray={stray}"]
    systems += ["--system", f"tone={outputs / 'tone'}"]
    given = ["--instructions", str(outputs / "instructions"), "--schedule", "all", "--quiet"]
    assert main(["prepare", "pairs", str(tmp_path / "b"), *given, *systems]) == 1
    err = capsys.readouterr().err
    assert "system stray: no answer in" in err and "its 1 file(s): answer-one.wav" in err and "q00" in err
    misspelt = ["--system", f"clear={outputs / 'claer'}", "--system", f"tone={outputs / 'tone'}"]
    assert main(["prepare", "pairs", str(tmp_path / "c"), *given, *misspelt]) == 1
    assert (
        f"--system clear={outputs / 'claer'}: not found; did you mean {outputs / 'clear'}?" in capsys.readouterr().err
    )
    assert (
        main(["prepare", "pairs", str(tmp_path / "d"), "--instructions", str(outputs / "instructoins"), *systems]) == 1
    )
    assert f"--instructions {outputs / 'instructoins'}: not found; did you mean" in capsys.readouterr().err


def test_an_instruction_text_not_in_utf8_stops_with_where_it_breaks_and_the_fix(tmp_path, outputs, capsys):
    """A Latin-1 sidecar ("Diga «canción»" saved by an old editor) once ended prepare with a traceback."""
    copy = tmp_path / "outputs"
    subprocess.run(["cp", "-r", str(outputs), str(copy)], check=True)
    (copy / "instructions" / "q03.txt").write_bytes("Diga «canción»".encode("latin-1"))
    assert prepare(tmp_path / "b", copy, "--schedule", "all") == 1
    error = capsys.readouterr().err
    assert "q03.txt: not UTF-8 text (byte 0xab at offset 5)" in error and "iconv -f latin1 -t utf-8" in error
    assert "Traceback" not in error and not (tmp_path / "b" / "manifest.json").exists()


def test_the_instructions_language_is_declared_by_their_rows_or_the_option_and_checked(tmp_path, outputs, capsys):
    """A lab's instructions in Spanish: the row's instruction_language reaches the manifest, --instruction-language
    declares it for the rows that say nothing, and a code Whisper does not know stops with the one meant."""
    rows = json.loads((outputs / "instructions.json").read_text())
    rows[0]["instruction_language"] = "fr"
    listing = tmp_path / "instructions.jsonl"
    listing.write_text("".join(json.dumps({**r, "instruction_path": str(outputs / r["instruction_path"])}) + "\n"
                               for r in rows))  # fmt: skip
    systems = [a for name in SYSTEMS for a in ("--system", f"{name}={outputs / name}")]
    common = ["prepare", "pairs", "--instructions", str(listing), *systems, "--quiet", "--schedule", "all"]
    assert main([*common[:2], str(tmp_path / "b"), *common[2:], "--instruction-language", "es"]) == 0
    items = json.loads((tmp_path / "b" / "manifest.json").read_text())
    declared = {i["instruction_id"]: i.get("instruction_language") for i in items}
    assert declared["q00"] == "fr" and set(declared.values()) == {"fr", "es"}
    from trace_eval.bench import load_benchmark

    languages = load_benchmark(tmp_path / "b").declared_languages()
    assert languages[items[0]["instruction_path"]] in ("fr", "es") and not any("answers/" in p for p in languages)

    assert main([*common[:2], str(tmp_path / "c"), *common[2:], "--instruction-language", "spanish"]) == 1
    assert "did you mean 'es' (Spanish)?" in capsys.readouterr().err
    rows[1]["instruction_language"] = "castilian"
    listing.write_text("".join(json.dumps({**r, "instruction_path": str(outputs / r["instruction_path"])}) + "\n"
                               for r in rows))  # fmt: skip
    assert main([*common[:2], str(tmp_path / "d"), *common[2:]]) == 1
    assert "row 1, instruction_language: 'castilian' is not a language code" in capsys.readouterr().err
