"""A session manifest of our own (sessions.jsonl): sessions as folders, as two files with an event log, as one
stereo recording; systems named per line, judged against each other; a line that names no session refused with
the file and line."""

from __future__ import annotations

import json

import numpy as np
import pytest
import soundfile as sf
from planted_sessions import interaction_benchmark

from trace_eval.cli import main
from trace_eval.sessions import SessionError
from trace_eval.sessions.manifest import read_manifest_file
from trace_eval.sessions.session import RATE


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    root = tmp_path_factory.mktemp("made")
    interaction_benchmark(root, "en", samples=1)
    return root


def _lines(path, rows):
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def test_each_form_of_session_is_read_and_timed(made, tmp_path, capsys):
    folder = made / "prompt" / "session-0"
    user, _ = sf.read(folder / "input.wav")
    system, _ = sf.read(folder / "output.wav")
    sf.write(tmp_path / "call.wav", np.stack([system, user], axis=1), RATE)  # the system left, the user right
    _lines(tmp_path / "events.jsonl", [{"t": 0.0, "event": "connected"}, {"t": 2.4, "event": "audio_sent"}])
    rows = [
        {"id": "as-folder", "folder": str(folder)},
        {"id": "two-files", "user_path": str(folder / "input.wav"), "system_path": str(folder / "output.wav"),
         "events_path": "events.jsonl"},
        {"id": "stereo", "audio_path": "call.wav", "user_channel": 1, "system_channel": 0},
    ]  # fmt: skip
    _lines(tmp_path / "sessions.jsonl", rows)
    out = tmp_path / "timing.json"
    page = tmp_path.parent / f"{tmp_path.name}-page"
    assert main(["sessions", str(tmp_path), "--out", str(out), "--quiet", "--page", str(page)]) == 0
    assert len(list((page / "audio").glob("*.flac"))) == 3  # each read again as the run read it, for its audio
    sessions = {s["sample"]: s["timeline"] for s in json.loads(out.read_text())["sessions"]}
    assert set(sessions) == {"as-folder", "two-files", "stereo"}
    # One recording, three ways: the same timeline; the event log where it was given.
    assert sessions["as-folder"]["answers"] == sessions["two-files"]["answers"] == sessions["stereo"]["answers"]
    assert sessions["two-files"]["client"] is not None and sessions["stereo"]["client"] is None
    assert "3 sessions" in capsys.readouterr().out


def test_systems_named_in_the_manifest_are_judged_against_each_other(made, tmp_path, capsys):
    rows = [
        {"id": f"{system}-0", "system": system, "sample": "call-0",
         "user_path": str(made / system / "session-0" / "input.wav"),
         "system_path": str(made / system / "session-0" / "output.wav")}
        for system in ("prompt", "slow", "deaf")
    ]  # fmt: skip
    _lines(tmp_path / "sessions.jsonl", rows)
    assert main(["sessions", str(tmp_path), "--judge", "cues", "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "3 of 3 pairs decided" in printed and printed.split("losses\n")[1].split()[1] == "prompt"
    _lines(tmp_path / "sessions.jsonl", [{k: v for k, v in r.items() if k != "system"} for r in rows])
    assert main(["sessions", str(tmp_path), "--judge", "cues", "--quiet"]) == 1
    assert "names no system for prompt-0" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("{not json", "line 2: not JSON"),
        ('{"id": "b", "folder": "x", "speaker": "me"}', "line 2: unknown field\\(s\\) speaker"),
        ('{"id": "b", "user_path": "u.wav"}', "line 2: no session: give folder, or user_path and system_path"),
        ('{"id": "a", "folder": "y"}', "line 2: id 'a' given twice"),
        ('{"folder": "y"}', "line 2: expected an object with an id"),
    ],
)
def test_a_line_that_names_no_session_is_refused_with_file_and_line(tmp_path, line, why):
    (tmp_path / "sessions.jsonl").write_text('{"id": "a", "folder": "x"}\n' + line + "\n")
    with pytest.raises(SessionError, match=why):
        read_manifest_file(tmp_path / "sessions.jsonl")
