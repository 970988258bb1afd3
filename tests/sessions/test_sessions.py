"""Sessions built from recorded speech (Asterisk's telephone prompts, English and Spanish) with planted timing:
the timeline finds the answers, their latencies, a jump-in, barge-ins a system stops after and one it talks
through, and a backchannel, within TOLERANCE_S of where they were planted.

Each prompt is first cut to its speech by its own energy (planted_sessions.energy_edges: a reference independent
of the speech detector), then placed: what is checked is that the timeline of a two-channel session puts every
turn and event where it was planted.
TOLERANCE_S: 0.08 s, for every time and latency (scripts/bench_sessions.py --onsets: edges within 0.009 s at the
90th percentile over 309 prompts in three languages).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import soundfile as sf
from planted_sessions import Track
from planted_sessions import prompts as recorded_prompts

from trace_eval.sessions import SessionError, make_timeline, read_session, timing_metrics
from trace_eval.sessions.session import RATE, Session

TOLERANCE_S = 0.08


@pytest.fixture(scope="module", params=["en", "es"])
def prompts(request) -> list[np.ndarray]:
    return [p.samples for p in recorded_prompts(request.param)]


def _session(user: Track, system: Track) -> Session:
    n = max(len(user.samples), len(system.samples))
    channels = [np.pad(t.samples, (0, n - len(t.samples))) for t in (user, system)]
    return Session("planted", *channels, "two-files", {"user": RATE, "system": RATE})


def test_answers_after_set_delays_come_back_within_the_tolerance(prompts):
    user, system = Track(40), Track(40)
    t, planted = 0.5, []
    for k, delay in enumerate((0.4, 0.9, 1.6)):
        _, user_end = user.place(prompts[k], t)
        system_start, system_end = system.place(prompts[k + 3], user_end + delay)
        planted.append((user_end, system_start))
        t = system_end + 1.5
    timeline = make_timeline(_session(user, system))
    assert len(timeline.answers) == 3 and not timeline.barge_ins and not timeline.backchannels
    for answer, (user_end, system_start), delay in zip(timeline.answers, planted, (0.4, 0.9, 1.6)):
        assert answer.user_turn.end == pytest.approx(user_end, abs=TOLERANCE_S)
        assert answer.system_turn.start == pytest.approx(system_start, abs=TOLERANCE_S)
        assert answer.latency_s == pytest.approx(delay, abs=TOLERANCE_S)
    metrics = timing_metrics([timeline])
    assert metrics["response_latency_s"]["n"] == 3
    assert metrics["response_latency_s"]["median"] == pytest.approx(0.9, abs=TOLERANCE_S)
    assert metrics["jump_in_rate"]["k"] == 0 and metrics["no_answer_rate"]["k"] == 0
    assert metrics["overlap_share"] == pytest.approx(0.0, abs=0.01)


def test_a_system_that_takes_over_inside_the_users_pause_jumps_in(prompts):
    """The user pauses 0.7 s between two sentences (one turn: under turn_gap_s); the system starts 0.3 s into
    the pause and talks over the user's second sentence."""
    user, system = Track(30), Track(30)
    _, first_end = user.place(prompts[0], 0.5)
    second_start, second_end = user.place(prompts[1], first_end + 0.7)
    takeover, _ = system.place(np.concatenate([prompts[6], prompts[7]]), first_end + 0.3)  # outlasts the user
    timeline = make_timeline(_session(user, system))
    (turn,) = timeline.turns["user"]
    assert turn.end == pytest.approx(second_end, abs=TOLERANCE_S)
    assert [p.duration for p in timeline.pauses["user"]] == [pytest.approx(0.7, abs=TOLERANCE_S)]
    (answer,) = timeline.answers
    assert answer.latency_s == pytest.approx(takeover - second_end, abs=TOLERANCE_S) and answer.latency_s < 0
    assert timing_metrics([timeline])["jump_in_rate"]["k"] == 1
    assert timeline.overlaps and timing_metrics([timeline])["overlap_share"] > 0.1


@pytest.mark.parametrize("stops_after_s", [0.3, None])
def test_a_barge_in_is_measured_where_the_system_stops_or_does_not(prompts, stops_after_s):
    system_prompt = np.concatenate([prompts[5], prompts[6]])  # long enough to be spoken over
    user, system = Track(30), Track(30)
    _, first_end = user.place(prompts[0], 0.5)
    system_start = first_end + 0.5
    barge = system_start + 1.2
    spoken = system_prompt
    if stops_after_s is not None:
        spoken = system_prompt[: int((barge - system_start + stops_after_s) * RATE)]
    _, system_end = system.place(spoken, system_start)
    user.place(prompts[2], barge)
    timeline = make_timeline(_session(user, system))
    (barge_in,) = timeline.barge_ins
    assert barge_in.user_turn.start == pytest.approx(barge, abs=TOLERANCE_S)
    assert barge_in.stop_latency_s == pytest.approx(system_end - barge, abs=TOLERANCE_S)
    assert barge_in.stopped is (stops_after_s is not None)
    metrics = timing_metrics([timeline])
    assert metrics["stop_latency_s"]["n"] == 1
    assert metrics["stopped_rate"]["k"] == (1 if stops_after_s is not None else 0)


def test_a_short_answer_while_the_user_speaks_is_a_backchannel_not_an_answer(prompts):
    user, system = Track(30), Track(30)
    long_turn = np.concatenate([prompts[0], prompts[1]])
    user_start, user_end = user.place(long_turn, 0.5)
    mm_hm = prompts[7][: int(0.5 * RATE)]
    system.place(mm_hm, (user_start + user_end) / 2)
    answer_start, _ = system.place(prompts[3], user_end + 0.6)
    timeline = make_timeline(_session(user, system))
    assert len(timeline.backchannels) == 1
    (answer,) = timeline.answers
    assert answer.system_turn.start == pytest.approx(answer_start, abs=TOLERANCE_S)
    assert not timeline.barge_ins
    assert timing_metrics([timeline])["backchannels_per_user_minute"] > 0


def test_full_duplex_bench_folders_are_read_as_they_are_and_bad_input_is_named(tmp_path, prompts):
    """The v1 layout at its example's rates (input 48 kHz, output 16 kHz) and lengths, v2's stereo file, and
    what cannot be a session."""
    import soxr

    folder = tmp_path / "pause_handling" / "1"
    folder.mkdir(parents=True)
    user = Track(6)
    user.place(prompts[0], 0.5)
    sf.write(folder / "input.wav", soxr.resample(user.samples, RATE, 48000), 48000)
    system = Track(8)
    system.place(prompts[3], 4.0)
    sf.write(folder / "output.wav", system.samples, RATE)
    (folder / "pause.json").write_text(json.dumps([{"text": "hello", "timestamp": [0.5, 1.0]}]))
    session = read_session(folder)
    assert session.layout == "full-duplex-bench-v1" and session.rates == {"user": 48000, "system": RATE}
    assert session.duration_s == pytest.approx(8.0, abs=0.01)
    assert session.notes == ["the user's channel ends 2.00 s before the other's: silence after it"]
    assert session.annotations["pause.json"][0]["timestamp"] == [0.5, 1.0]
    timeline = make_timeline(session)
    assert timeline.speech["user"][0].start == pytest.approx(0.5, abs=TOLERANCE_S)
    assert timeline.notes == session.notes
    record = timeline.record()
    assert record["clock"].startswith("seconds from the session's first sample")
    assert record["settings"]["turn_gap_s"] == 1.0 and record["leading_silence_s"] == pytest.approx(4.0, abs=0.15)

    v2 = tmp_path / "v2" / "1"
    v2.mkdir(parents=True)
    sf.write(v2 / "combined.wav", np.stack([np.pad(user.samples, (0, 2 * RATE)), system.samples], axis=1), RATE)
    assert read_session(v2).layout == "full-duplex-bench-v2"

    mono = tmp_path / "mono.wav"
    sf.write(mono, user.samples, RATE)
    with pytest.raises(SessionError, match="mono, where a session needs two channels"):
        read_session(mono, user_channel=0, system_channel=1)
    with pytest.raises(SessionError, match="channels named"):
        read_session(mono)
    silent = tmp_path / "silent"
    silent.mkdir()
    sf.write(silent / "input.wav", user.samples, RATE)
    sf.write(silent / "output.wav", np.zeros(RATE, dtype=np.float32), RATE)
    assert "no speech on the system's channel" in make_timeline(read_session(silent)).notes
    (silent / "events.jsonl").write_text('{"t": 0.5, "event": "audio_sent"}\n{"t": 0.2, "event": "audio_sent"}\n')
    with pytest.raises(SessionError, match="events.jsonl.*line 2"):
        read_session(silent)  # an event log beside any layout is checked: out of order, refused
    (silent / "events.jsonl").write_text('{"t": 0.0, "event": "connected"}\n{"t": 0.5, "event": "audio_sent"}\n')
    assert make_timeline(read_session(silent)).client["time_to_first_audio_s"] == [None]  # no audio came back
    (silent / "events.jsonl").unlink()
    (silent / "interrupt.json").write_text("{not json")
    with pytest.raises(SessionError, match="interrupt.json: not JSON"):
        read_session(silent)
    with pytest.raises(SessionError, match="no session here"):
        read_session(tmp_path / "v2")
