"""`prepare sessions`: a released benchmark's user channels and several systems' outputs (in copies of its tree,
as Full-Duplex-Bench's inference scripts write them) become a benchmark the interaction judges rank; a missing
output is a silent channel that loses, a broken one is refused or left out with its reason."""

from __future__ import annotations

import json
import shutil

from planted_sessions import interaction_benchmark

from trace_eval.cli import main


def test_a_release_and_three_systems_outputs_become_a_judged_benchmark(tmp_path, capsys):
    made = tmp_path / "made"
    interaction_benchmark(made, "en")
    release = tmp_path / "release"
    for session in (made / "prompt").iterdir():
        (release / "v1" / session.name).mkdir(parents=True)
        shutil.copy(session / "input.wav", release / "v1" / session.name / "input.wav")
        (release / "v1" / session.name / "pause.json").write_text('[{"text": "[PAUSE]", "timestamp": [0, 0.1]}]')
    systems = {}
    for system in ("prompt", "slow", "deaf"):
        outputs = tmp_path / "outputs" / system / "v1"
        for session in (made / system).iterdir():
            (outputs / session.name).mkdir(parents=True)
            shutil.copy(session / "output.wav", outputs / session.name / "output.wav")
        systems[system] = outputs.parent
    (systems["prompt"] / "v1" / "session-1" / "output.wav").unlink()  # no answer: it must not win on it
    (systems["slow"] / "v1" / "session-1" / "output.wav").write_bytes(b"not audio")
    bench = tmp_path / "bench"
    given = [f"--system={name}={folder}" for name, folder in systems.items()]
    assert main(["prepare", "sessions", str(bench), "--release", str(release), *given, "--quiet"]) == 1
    assert "output.wav" in capsys.readouterr().err and not (bench / "sessions.jsonl").exists()

    assert main(["prepare", "sessions", str(bench), "--release", str(release), *given, "--quiet", "--skip-bad"]) == 0
    printed = capsys.readouterr().out
    assert "prompt: no output.wav for 1 sample(s), written as silence" in printed and "left out" in printed
    lines = [json.loads(line) for line in (bench / "sessions.jsonl").read_text().splitlines()]
    assert (
        len(lines) == 5
        and {"id": "deaf/v1/session-0", "system": "deaf", "sample": "v1/session-0", "folder": "deaf/v1/session-0"}
        in lines
    )
    assert (bench / "deaf" / "v1" / "session-0" / "pause.json").is_file()
    source = json.loads((bench / "SOURCE.json").read_text())
    assert source["missing"] == {"prompt": ["v1/session-1"]} and source["left_out"][0]["item"] == "slow/v1/session-1"

    out = tmp_path / "judged.json"
    assert main(["sessions", str(bench), "--judge", "cues", "--out", str(out), "--quiet"]) == 0
    verdicts = {(v["sample"], *v["systems"]): v["label"] for v in json.loads(out.read_text())["verdicts"]}
    assert verdicts[("v1/session-0", "deaf", "prompt")] == "2"
    # Silence answers nothing: two unanswered turns, as many faults as the one that talks through a turn.
    assert verdicts[("v1/session-1", "deaf", "prompt")] == "both_bad"
    assert ("v1/session-1", "prompt", "slow") not in verdicts  # the broken output was left out
