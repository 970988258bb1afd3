"""The page's fields are the rubric's own: StyleSet's scores on single answers (dimensions asked only of some
items), SageLM's win/lose/tie per aspect; what is stored reads back through the rubric's label spaces."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from trace_eval.evaluation.records import load_human_labels
from trace_eval.labels.server import BadRequest, LabelSession
from trace_eval.rubrics import load_rubric

ROOT = Path(__file__).resolve().parent.parent.parent


def test_style_scores_on_single_answers_with_the_fields_each_item_is_asked(tmp_path):
    bench = tmp_path / "mini-style"
    shutil.copytree(ROOT / "examples" / "mini-style", bench)
    rubric = load_rubric("style")
    session = LabelSession(bench, "ana", rubric)
    state = session.state()
    assert [f["name"] for f in state["fields"]] == ["style_following", "style", "realism"]
    assert [f["digits"] for f in state["fields"]] == [["1", "2", "3", "4", "5"]] * 2 + [["0", "1"]]
    items = json.loads((bench / "manifest.json").read_text())
    plain = next(n for n, i in enumerate(items) if "context" not in i)
    dialogue = next(n for n, i in enumerate(items) if "context" in i)
    assert session.pair(plain)["fields"] == ["style_following"] and session.pair(plain)["responses"] == ["a"]
    assert session.pair(dialogue)["fields"] == ["style", "realism"]
    with pytest.raises(BadRequest, match="not asked of pair"):
        session.answer(plain, {"labels": {"style_following": 4, "realism": 1}})
    with pytest.raises(BadRequest, match="is not an integer from 1 to 5"):
        session.answer(plain, {"labels": {"style_following": 6}})
    with pytest.raises(BadRequest, match="missing label"):
        session.answer(dialogue, {"labels": {"style": 3}})
    assert not (bench / "labels").exists()
    session.answer(plain, {"labels": {"style_following": 2}})
    session.answer(dialogue, {"labels": {"style": 3, "realism": 0}, "reasons": {"realism": "robotic"}})
    human = load_human_labels(bench, rubric)
    given = items[plain]["label"]["style_following"]
    mean = (given + 2) / 2
    assert human.labels[items[plain]["id"]]["style_following"] == (int(mean) if mean.is_integer() else mean)
    assert human.annotators["ana"][items[dialogue]["id"]] == {"style": 3, "realism": 0}


def test_win_lose_tie_aspects_in_the_order_shown(bench):
    rubric = load_rubric("multi-aspect")
    session = LabelSession(bench, "ana", rubric)
    aspects = [f["name"] for f in session.state()["fields"]]
    assert "overall" not in aspects and len(aspects) == 5
    swapped = next(n for n in range(len(session.pairs)) if session.swapped_for(n))
    session.answer(swapped, {"labels": {**dict.fromkeys(aspects, "tie"), "honesty": "1"}})  # "A is more honest"
    got = load_human_labels(bench, rubric).labels[session.pairs[swapped].id]
    assert got["honesty"] == "2" and got["truthfulness"] == "tie"  # A was response 2
    assert session.pair(swapped)["labels"]["honesty"] == "1"  # shown again as given
