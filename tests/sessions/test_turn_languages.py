"""A session in two languages, turn by turn: the user and the system alternate recorded English and Spanish prompts
(Asterisk's, cut to their speech), and `make_timeline` with Stage 1's CPU recogniser hears each turn in its own
language, its words in it; a declared language is every turn's."""

from __future__ import annotations

import numpy as np
import pytest
from planted_sessions import Track, prompts

from trace_eval.sessions.session import RATE, Session
from trace_eval.sessions.timeline import make_timeline
from trace_eval.sessions.words import stage1_recogniser
from trace_eval.text import fold


@pytest.fixture(scope="module")
def mixed():
    """User and system turns in en, es, en, es, each system turn 0.6 s after the user's."""
    said = {code: prompts(code)[-4:] for code in ("en", "es")}  # the longest of the shortest: 2 s or more
    user, system = Track(40), Track(40)
    at, planted = 0.5, []
    for k, code in enumerate(("en", "es", "en", "es")):
        asked = user.place(said[code][k], at)
        answered = system.place(said[code][k + 1 if k < 3 else 0], asked[1] + 0.6)
        planted.append((code, said[code][k].text, said[code][k + 1 if k < 3 else 0].text, asked, answered))
        at = answered[1] + 0.8
    n = max(len(user.samples), len(system.samples))
    channels = [np.pad(track.samples, (0, n - len(track.samples))) for track in (user, system)]
    session = Session("mixed", *channels, "two-files", {"user": RATE, "system": RATE})
    return session, planted


def _words_in(words: list[dict], span: tuple[float, float]) -> str:
    return " ".join(w["word"].strip() for w in words if span[0] - 0.2 <= w["start"] < span[1])


def test_each_turn_is_heard_in_its_own_language(mixed):
    session, planted = mixed
    timeline = make_timeline(session, recogniser=stage1_recogniser("cpu"))
    for who, index in (("user", 3), ("system", 4)):
        turns = timeline.languages[who]["turns"]
        assert [t["code"] for t in turns] == [p[0] for p in planted], (who, turns)
        for (code, *_), span in zip(planted, (p[index] for p in planted)):
            heard = set(fold(_words_in(timeline.words[who], span), code).split())
            written = {p[1 if who == "user" else 2] for p in planted if p[index] == span}.pop()
            # Most of what was said is heard, in its language (a Spanish turn is not English gibberish).
            wanted = set(fold(written, code).replace(".", "").replace(",", "").split())
            assert len(heard & wanted) >= len(wanted) / 2, (who, span, heard, wanted)


def test_a_declared_language_is_every_turns(mixed):
    session, _ = mixed
    timeline = make_timeline(session, recogniser=stage1_recogniser("cpu"), language="en")
    assert "turns" not in timeline.languages["user"]
