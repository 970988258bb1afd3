"""The live client against a real WebSocket system of the tests' own (tests/realtime_server.py): a user's recorded
speech (Asterisk's English prompts, cut to their speech) played in real time; the system answers a set delay
after each of the user's turns, and when spoken over stops a set time later, or talks on; it may hang up. The
recorded session, read back and given a timeline, measures what the system was set to do; the event log is in
order and its client-side latencies agree with the audio's; what cannot be set up fails at once and writes
nothing.

TOLERANCE_S: the timeline's (tests/sessions/test_sessions.py, 0.08 s), which also covers the real-time pace: the
system times its answer from the 20 ms frame in which it heard the user's speech end, and frames arrive a few
milliseconds late on a busy machine.
"""

from __future__ import annotations

import json
import shutil
import socket
import time

import numpy as np
import pytest
import soundfile as sf
from planted_sessions import prompts
from realtime_server import BARGE_IN_FRAMES, RealtimeServer

from trace_eval.cli import main
from trace_eval.sessions import SessionError, make_timeline, read_session, timing_metrics
from trace_eval.sessions.events import client_latencies, read_events
from trace_eval.sessions.live import LiveError, record_session
from trace_eval.sessions.session import RATE

TOLERANCE_S = 0.08
DELAY_S = 0.8
LEAD_S = 0.3  # silence before the user speaks


@pytest.fixture(scope="module")
def said() -> list[np.ndarray]:
    """Eight English prompts cut to their speech, 1.9 to 3.1 s, shortest first."""
    return [p.samples for p in prompts("en")]


def _user_file(folder, *parts: tuple[np.ndarray, float]):
    """A wav of the user's channel: each prompt at its second; it ends where the last prompt's speech ends, so
    the user's last frame sent is the end of the user's speech."""
    end = max(at + len(clip) / RATE for clip, at in parts)
    samples = np.zeros(int(round(end * RATE)), dtype=np.float32)
    for clip, at in parts:
        samples[int(round(at * RATE)) : int(round(at * RATE)) + len(clip)] += clip
    path = folder / "user.wav"
    sf.write(path, samples, RATE)
    return path


@pytest.fixture(scope="module")
def answered(said, tmp_path_factory):
    """A session recorded through the command line: the user speaks once, the system answers DELAY_S after."""
    folder = tmp_path_factory.mktemp("live")
    user = _user_file(folder, (said[0], LEAD_S))
    out = folder / "sessions" / "s1"
    with RealtimeServer(said[3], delay_s=DELAY_S) as server:
        started = time.monotonic()
        code = main(["live", server.url, "--user", str(user), "--out", str(out), "--tail", "3.4"])
        took = time.monotonic() - started
    assert code == 0
    return out, LEAD_S + len(said[0]) / RATE, len(said[3]) / RATE, took


def test_the_recorded_session_gives_the_set_delay_back(answered):
    out, user_end, answer_s, took = answered
    assert sorted(p.name for p in out.iterdir()) == ["events.jsonl", "session.json", "system.wav", "user.wav"]
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]  # no temporary folder left
    manifest = json.loads((out / "session.json").read_text())
    assert manifest["declaration"] == {"sample_rate": 16000, "channels": 1, "frame_ms": 20, "format": "pcm_s16le"}
    assert manifest["settings"]["tail_s"] == 3.4 and manifest["url"].startswith("ws://127.0.0.1:")
    # Real time: the session lasts the user's audio and the tail, and the pace did not drift.
    assert manifest["duration_s"] == pytest.approx(user_end + 3.4, abs=0.05)
    # The command then finds the user's turns (Silero, loaded once) for each turn's time to first audio.
    assert manifest["duration_s"] - 0.1 < took < manifest["duration_s"] + 3.0
    assert manifest["system_audio_s"] == pytest.approx(answer_s, abs=0.02)

    session = read_session(out)
    assert session.layout == "live" and session.rates == {"user": 16000, "system": 16000}
    assert session.annotations["session.json"] == manifest and session.annotations["events.jsonl"]
    timeline = make_timeline(session)
    (answer,) = timeline.answers
    assert answer.user_turn.end == pytest.approx(user_end, abs=TOLERANCE_S)
    assert answer.latency_s == pytest.approx(DELAY_S, abs=TOLERANCE_S)
    assert answer.system_turn.duration == pytest.approx(answer_s, abs=2 * TOLERANCE_S)
    assert not timeline.barge_ins


def test_the_event_log_is_in_order_and_its_latencies_agree_with_the_audio(answered):
    out, user_end, _, _ = answered
    events = read_events(out / "events.jsonl")
    times = [e["t"] for e in events]
    assert times == sorted(times)
    names = [e["event"] for e in events]
    assert names[:4] == ["connected", "ready", "audio_sent", "audio_sent"] and names[-1] == "closed"
    assert names.count("first_audio_received") == 1 and events[-1]["by"] == "client"
    first, last = events[2], events[3]
    assert (first["frame"], last["frame"]) == ("first", "last")
    # Each frame goes out once its 20 ms have played: on the session clock, a few milliseconds late at most.
    assert first["t"] == pytest.approx(0.02, abs=0.02) and last["t"] == pytest.approx(last["end_s"], abs=0.02)
    assert last["end_s"] == pytest.approx(user_end, abs=0.02)

    timeline = make_timeline(read_session(out))
    (answer,) = timeline.answers
    client = client_latencies(events)
    assert set(client["clocks"]) == {"setup_s", "time_to_first_audio_s", "first_audio_s", "stop_latency_s"}
    (first,) = client["time_to_first_audio_s"]  # one user turn, ending with the user's audio
    assert first == pytest.approx(DELAY_S, abs=0.05)  # the client's clock is exact
    assert first == pytest.approx(answer.latency_s, abs=TOLERANCE_S)
    assert client["first_audio_s"] == pytest.approx(answer.system_turn.start, abs=TOLERANCE_S)
    assert 0 <= client["setup_s"] < 0.5 and client["stop_latency_s"] is None
    # The timeline carries them (from its user turns), and the metrics give them beside the audio's latencies.
    assert timeline.client["time_to_first_audio_s"] == [pytest.approx(first, abs=0.021)]
    metrics = timing_metrics([timeline])
    assert metrics["client_time_to_first_audio_s"]["median"] == timeline.client["time_to_first_audio_s"][0]
    assert metrics["client_stop_latency_s"]["n"] == 0


@pytest.mark.parametrize("stops_after_s", [0.3, None], ids=["stops", "talks-on"])
def test_a_barge_in_is_measured_where_the_system_stops_or_does_not(said, tmp_path, stops_after_s):
    talk = np.concatenate([said[4], said[5]])  # 4.7 s: long enough to be spoken over
    first_end = LEAD_S + len(said[1]) / RATE
    barge = first_end + DELAY_S + 1.2
    user = _user_file(tmp_path, (said[1], LEAD_S), (said[2], barge))
    with RealtimeServer(talk, delay_s=DELAY_S, stops_after_s=stops_after_s) as server:
        recorded = record_session(server.url, user, tmp_path / "s", tail_s=2.2)
        stopped = server.stopped_at
    assert (stopped is not None) is (stops_after_s is not None)

    timeline = make_timeline(read_session(tmp_path / "s"))
    (barge_in,) = timeline.barge_ins
    assert barge_in.user_turn.start == pytest.approx(barge, abs=TOLERANCE_S)
    assert timeline.answers[0].latency_s == pytest.approx(DELAY_S, abs=TOLERANCE_S)
    if stops_after_s is not None:
        # It hears BARGE_IN_FRAMES loud frames, then speaks on for stops_after_s.
        expected = stops_after_s + BARGE_IN_FRAMES * 0.02
        assert barge_in.stopped
    else:
        expected = first_end + DELAY_S + len(talk) / RATE - barge
        assert not barge_in.stopped
    assert barge_in.stop_latency_s == pytest.approx(expected, abs=TOLERANCE_S)
    client = client_latencies(recorded.events, barge_in_s=barge_in.user_turn.start)
    assert client["stop_latency_s"] == pytest.approx(barge_in.stop_latency_s, abs=TOLERANCE_S)


def test_each_user_turn_has_its_time_to_first_audio_and_a_system_may_hang_up_at_any_moment(said, tmp_path, capsys):
    """The user speaks twice; the system answers each turn DELAY_S after it, then hangs up while the user speaks a
    third time: the session is written with what was sent and received until then, and who closed it, why."""
    first_end = LEAD_S + len(said[0]) / RATE
    second = first_end + DELAY_S + len(said[3]) / RATE + 0.8
    second_end = second + len(said[1]) / RATE
    third = second_end + DELAY_S + len(said[3]) / RATE + 0.8
    user = _user_file(tmp_path, (said[0], LEAD_S), (said[1], second), (said[2], third))
    out = tmp_path / "s"
    with RealtimeServer(said[3], delay_s=DELAY_S, closes_after_s=third + 1.0) as server:
        assert main(["live", server.url, "--user", str(user), "--out", str(out), "--tail", "2"]) == 0
    printed = capsys.readouterr().out
    assert "the system closed the connection at" in printed and "the session is over" in printed
    manifest = json.loads((out / "session.json").read_text())
    assert manifest["closed"]["by"] == "system" and manifest["closed"]["reason"] == "the session is over"
    assert manifest["user_audio_s"] == pytest.approx(third + 1.0, abs=0.1)  # what was sent before the close
    assert sf.info(str(out / "user.wav")).duration == pytest.approx(manifest["duration_s"], abs=0.01)
    timeline = make_timeline(read_session(out))
    assert len(timeline.turns["user"]) == 3
    firsts = timeline.client["time_to_first_audio_s"]
    assert firsts[:2] == [pytest.approx(DELAY_S, abs=0.05)] * 2 and firsts[2] is None  # hung up before answering
    assert [a.latency_s for a in timeline.answers[:2]] == [pytest.approx(DELAY_S, abs=TOLERANCE_S)] * 2
    metrics = timing_metrics([timeline])["client_time_to_first_audio_s"]
    assert metrics["n"] == 2 and metrics["min"] > 0

    with RealtimeServer(said[3], closes_after_s=-1) as server:  # hangs up on connecting
        with pytest.raises(LiveError, match=f"{server.url}: the system closed the connection instead of accepting"):
            record_session(server.url, user, tmp_path / "t")
        assert main(["live", server.url, "--user", str(user), "--out", str(tmp_path / "t")]) == 2
    assert "closed on connecting" in capsys.readouterr().err and not (tmp_path / "t").exists()


def test_a_pause_aware_system_and_an_eager_one_recorded_live_judged_and_ranked(said, tmp_path, capsys):
    """The user pauses 1.5 s inside a turn, then speaks again 4 s after it. A patient, pause-aware system (told
    where the user's turns end) answers 1.2 s after each; an eager one answers after any 0.25 s of quiet and never
    yields. Recorded live and judged: the patient one wins, every event's verdict as set, and its answers stand
    within TOLERANCE_S of where its own log says it began them."""
    first_end = LEAD_S + len(said[0]) / RATE
    second_start = first_end + 1.5
    turn_end = second_start + len(said[1]) / RATE
    last_start = turn_end + 4.0
    last_end = last_start + len(said[2]) / RATE
    user = _user_file(tmp_path, (said[0], LEAD_S), (said[1], second_start), (said[2], last_start))
    systems = tmp_path / "systems"
    patient = RealtimeServer(said[3], delay_s=1.2, stops_after_s=0.3, turn_ends_s=[turn_end, last_end])
    eager = RealtimeServer(np.concatenate([said[4], said[5]]), delay_s=0.25, hangover_s=0.25)
    for name, system in (("patient", patient), ("eager", eager)):
        with system as server:
            out = systems / name / "s1"
            assert main(["live", server.url, "--user", str(user), "--out", str(out), "--tail", "3.6"]) == 0
    judged = tmp_path / "judged.json"
    assert main(["sessions", str(systems), "--judge", "cues", "--out", str(judged), "--quiet"]) == 0
    result = json.loads(judged.read_text())
    assert [row["system"] for row in result["ranking"]] == ["patient", "eager"]
    (verdict,) = result["verdicts"]
    assert verdict["systems"] == ["eager", "patient"] and verdict["label"] == "2"
    events = [(e["kind"], e["label"], e["why_1"].split(" ")[0]) for e in verdict["events"]]
    assert events == [
        ("answer", "both_good", "answered"),  # the eager one at the pause, which the patient one waited through
        ("barge-in", "2", "went"),  # the user going on over the eager one
        ("answer", "2", "no"),  # the turn it talked through
        ("answer", "both_good", "answered"),
    ]
    timeline = next(s["timeline"] for s in result["sessions"] if s["system"] == "patient")
    began = [t for what, t in patient.log if what == "answer"]
    assert [a["system_turn"][0] for a in timeline["answers"]] == [pytest.approx(t, abs=TOLERANCE_S) for t in began]
    assert [a["latency_s"] for a in timeline["answers"]] == [pytest.approx(1.2, abs=TOLERANCE_S)] * 2
    assert len(timeline["turns"]["user"]) == 2 and len(timeline["pauses"]["user"]) == 1  # it waited: a pause


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_what_cannot_be_set_up_fails_at_once_naming_the_url_and_writes_nothing(said, tmp_path, capsys):
    user = _user_file(tmp_path, (said[0], 0.0))
    out = tmp_path / "sessions" / "s"
    url = f"ws://127.0.0.1:{_free_port()}/talk"
    started = time.monotonic()
    with pytest.raises(LiveError, match=f"{url}: cannot connect"):
        record_session(url, user, out)
    assert time.monotonic() - started < 2
    assert main(["live", url, "--user", str(user), "--out", str(out)]) == 2
    assert capsys.readouterr().err.startswith(f"error: {url}: cannot connect")
    with pytest.raises(LiveError, match="http://127.0.0.1:1/talk: not a WebSocket URL"):
        record_session("http://127.0.0.1:1/talk", user, out)
    with RealtimeServer(said[3]) as server:
        wrong = server.url.replace("/talk", "/nowhere")
        with pytest.raises(LiveError, match=f"{wrong}: the server refused the WebSocket connection .*404"):
            record_session(wrong, user, out)
        with pytest.raises(LiveError, match=f"{server.url}: the system refused the declaration .*8000.*this system"):
            record_session(server.url, user, out, sample_rate=8000)
    assert not out.exists() and not (tmp_path / "sessions").exists()
    with pytest.raises(LiveError, match="sample rate 11025: a 20 ms frame must be a whole number of samples"):
        record_session(url, user, out, sample_rate=11025)
    out.mkdir(parents=True)
    with pytest.raises(LiveError, match="already exists"):
        record_session(url, user, out)


def test_an_event_log_out_of_order_or_broken_is_refused_with_its_file_and_line(answered, tmp_path):
    out, *_ = answered
    copy = tmp_path / "s1"
    shutil.copytree(out, copy)
    log = copy / "events.jsonl"
    lines = log.read_text().splitlines()
    lines[2], lines[3] = lines[3], lines[2]  # the last frame sent before the first
    log.write_text("\n".join(lines) + "\n")
    with pytest.raises(SessionError, match=rf"{log}, line 4: out of order: t 0.0\d+ comes after t 2.\d+ on line 3"):
        read_events(log)
    with pytest.raises(SessionError, match=rf"{log}, line 4: out of order"):
        read_session(copy)
    for broken, why in (
        ('{"t": 0.1, "event": "connected"}\n{"t": 0.2, "event"\n', "line 2: not JSON"),
        ('{"event": "connected"}\n', "line 1: no time"),
        ('{"t": 0.1}\n', "line 1: no event name"),
        ("[0.1]\n", "line 1: an event is a JSON object"),
    ):
        log.write_text(broken)
        with pytest.raises(SessionError, match=f"{log}, {why}"):
            read_events(log)
