"""Turns that follow the user, not the silence: sessions built from recorded speech (English and Spanish) with
planted timing, where a user pauses mid-turn (0.6 to 2.5 s) before a patient system (it waits through the pause
and answers 1.2 s after the user's end) and an eager one (it starts 0.25 s into any silence and never yields),
a system that talks through an interruption and then answers, and one whose canned answer happens to end while
the user is still talking over it. Every time comes back within TOLERANCE_S of where it was planted, and the
two systems are told apart on every pause.
"""

from __future__ import annotations

import numpy as np
import pytest
from planted_sessions import Speech, Track, write_sample
from planted_sessions import prompts as recorded_prompts

from trace_eval.sessions import make_timeline
from trace_eval.sessions.full_duplex_bench import score_sample
from trace_eval.sessions.interaction import cues_verdict, events
from trace_eval.sessions.session import RATE, Session

TOLERANCE_S = 0.08
PAUSES_S = (0.6, 1.5, 2.5)


@pytest.fixture(scope="module", params=["en", "es"])
def said(request) -> list[Speech]:
    return recorded_prompts(request.param)


def _session(user: Track, system: Track, pause: tuple[float, float] | None = None) -> Session:
    n = max(len(user.samples), len(system.samples))
    channels = [np.pad(t.samples, (0, n - len(t.samples))) for t in (user, system)]
    annotations = {"pause.json": [{"text": "[PAUSE]", "timestamp": list(pause)}]} if pause else {}
    return Session("planted", *channels, "two-files", {"user": RATE, "system": RATE}, annotations)


class Paused:
    """The user says two sentences with `pause_s` between them; a patient and an eager system hear it."""

    def __init__(self, said: list[Speech], pause_s: float) -> None:
        self.user = Track(30)
        _, self.first_end = self.user.place(said[0], 0.5)
        self.second_start, self.user_end = self.user.place(said[1], self.first_end + pause_s)
        self.patient = Track(30)
        self.patient.place(said[3], self.user_end + 1.2)
        self.eager = Track(30)
        canned = Speech(np.concatenate([s.samples for s in said[4:7]]), "")
        self.eager_start, self.eager_end = self.eager.place(canned, self.first_end + 0.25)

    def timelines(self, annotated: bool = False):
        pause = (self.first_end, self.second_start) if annotated else None
        return (make_timeline(_session(self.user, t, pause)) for t in (self.patient, self.eager))


@pytest.mark.parametrize("pause_s", PAUSES_S)
def test_a_patient_system_waits_through_the_pause_and_an_eager_one_is_told_apart(said, pause_s):
    planted = Paused(said, pause_s)
    patient, eager = planted.timelines()
    (turn,) = patient.turns["user"]  # the system stayed silent: the user's silence was a pause
    assert turn.end == pytest.approx(planted.user_end, abs=TOLERANCE_S)
    (pause,) = patient.pauses["user"]
    assert pause.start == pytest.approx(planted.first_end, abs=TOLERANCE_S)
    assert pause.end == pytest.approx(planted.second_start, abs=TOLERANCE_S)
    (answer,) = patient.answers
    assert answer.latency_s == pytest.approx(1.2, abs=TOLERANCE_S) and not patient.barge_ins
    assert all(e.acceptable for e in events(patient))

    if pause_s < patient.settings.turn_gap_s:
        # Shorter than turn_gap_s, a pause whatever the system did: the eager system jumped in.
        (answer,) = eager.answers
        assert answer.latency_s == pytest.approx(planted.eager_start - planted.user_end, abs=TOLERANCE_S)
        assert answer.latency_s < -1.0
    else:
        # The eager system filled a long silence: the user's turn ended there, it answered at once, and the
        # user's going on is a barge-in it talked through.
        first, second = eager.turns["user"]
        assert first.end == pytest.approx(planted.first_end, abs=TOLERANCE_S)
        assert eager.answers[0].latency_s == pytest.approx(0.25, abs=TOLERANCE_S)
        (barge,) = eager.barge_ins
        assert barge.user_turn.start == pytest.approx(planted.second_start, abs=TOLERANCE_S)
        assert barge.stop_latency_s == pytest.approx(planted.eager_end - planted.second_start, abs=TOLERANCE_S)
        assert not barge.stopped
    verdict = cues_verdict("paused", ("patient", "eager"), patient, eager)
    assert verdict.label == "1", verdict


@pytest.mark.parametrize("pause_s", PAUSES_S)
def test_the_pause_annotation_keeps_the_turn_whatever_the_system_does(said, pause_s):
    planted = Paused(said, pause_s)
    patient, eager = planted.timelines(annotated=True)
    assert len(patient.turns["user"]) == len(eager.turns["user"]) == 1
    assert eager.annotated_pauses and not eager.barge_ins
    (answer,) = eager.answers  # it took over in the pause: a jump-in
    assert answer.system_turn.start == pytest.approx(planted.eager_start, abs=TOLERANCE_S)
    assert answer.latency_s == pytest.approx(planted.eager_start - planted.user_end, abs=TOLERANCE_S)
    (event,) = events(eager)
    assert not event.acceptable and event.why.startswith("jumped in")
    assert cues_verdict("paused", ("patient", "eager"), patient, eager).label == "1"


def test_a_pause_annotation_that_is_no_pause_here_is_noted_not_trusted(said):
    planted = Paused(said, 1.5)
    session = _session(planted.user, planted.patient)
    session.annotations["pause.json"] = [{"timestamp": [40.0, 41.0]}, {"timestamp": [3.0]}, {"text": "[PAUSE]"}]
    timeline = make_timeline(session)
    assert not timeline.annotated_pauses and len(timeline.turns["user"]) == 1  # the system's silence: a pause
    notes = " | ".join(timeline.notes)
    assert "the pause at 40.00 s lies past the audio's end" in notes and notes.count("no [start, end] timestamp") == 2


def test_talking_through_an_interruption_then_answering_is_two_turns(said):
    """The system talks over the user's interruption until 0.23 s after its end, is silent 0.34 s, and answers:
    it went on to that stop, and what follows is its answer, 0.57 s after the user's end."""
    user, system = Track(40), Track(40)
    _, context_end = user.place(said[0], 0.5)
    system_start = context_end + 0.5
    barge = system_start + 1.2
    _, user_end = user.place(said[3], barge)
    talk = np.concatenate([s.samples for s in said[4:7]])
    _, stop = system.place(talk[: int((user_end + 0.23 - system_start) * RATE)], system_start)
    answer_start, _ = system.place(said[2], stop + 0.34)
    timeline = make_timeline(_session(user, system))
    (barge_in,) = timeline.barge_ins
    assert barge_in.user_turn.start == pytest.approx(barge, abs=TOLERANCE_S)
    assert barge_in.stop_latency_s == pytest.approx(stop - barge, abs=TOLERANCE_S) and not barge_in.stopped
    answer = timeline.answers[-1]
    assert answer.system_turn.start == pytest.approx(answer_start, abs=TOLERANCE_S)
    assert answer.latency_s == pytest.approx(0.57, abs=TOLERANCE_S)
    verdicts = {e.kind: e.acceptable for e in events(timeline) if e.at_s > barge - 0.2}
    assert verdicts == {"barge-in": False, "answer": True}


@pytest.mark.parametrize("yields", [True, False])
def test_stopped_and_success_need_the_system_to_yield(said, tmp_path, yields):
    """A system that never yields, whose canned answer ends while the user is still talking over it (1.5 s after
    the user began), has not stopped: it did not stop within stop_within_s, and its run fails; one that stops
    0.3 s after the user began and answers after the user's end succeeds."""
    user, system = Track(30), Track(30)
    _, context_end = user.place(said[0], 0.5)
    system_start = context_end + 0.5
    barge = system_start + 1.0
    _, interrupt_end = user.place(said[5], barge)  # longer than the 1.5 s the system goes on
    went_on = 0.3 if yields else 1.5
    talk = np.concatenate([s.samples for s in said[4:7]])
    system.place(Speech(talk[: int((barge + went_on - system_start) * RATE)], "the canned answer"), system_start)
    if yields:
        system.place(said[2], interrupt_end + 0.6)
    events_ = [{"context": said[0].text, "interrupt": said[5].text, "timestamp": [barge, interrupt_end]}]
    folder = tmp_path / "user_interruption" / "canned"
    write_sample(folder, user, system, ("interrupt.json", events_))
    scored = score_sample(folder)
    assert scored["stop_latency_s"] == pytest.approx(went_on, abs=TOLERANCE_S)
    assert scored["stopped"] is yields and scored["success"] is yields and scored["answered"] is yields
    if yields:
        assert scored["latency_s"] == pytest.approx(0.6, abs=TOLERANCE_S)
