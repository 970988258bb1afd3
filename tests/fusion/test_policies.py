"""Fusion policies checked on all 64 (C, VQ, P) combinations of the trace rubric against tables written
by hand, and fusion over other rubrics' own dimensions."""

from __future__ import annotations

import itertools

import pytest

import fusion
from trace_eval.rubrics import load_rubric

TRACE = load_rubric("trace").fusion


def fuse(name: str, content: str | None, voice_quality: str | None, paralinguistics: str | None) -> str | None:
    return TRACE.fuse(name, {"content": content, "voice_quality": voice_quality, "paralinguistics": paralinguistics})


# Short names used in the hand-written tables.
SHORT = {"1": "1", "2": "2", "G": "both_good", "B": "both_bad"}
ORDER = ("1", "2", "G", "B")

# Each table: for every Content label, a 4x4 grid; rows are Voice Quality and
# columns are Paralinguistics, both in the order 1, 2, G, B.
TABLES: dict[str, dict[str, list[str]]] = {
    "content-first": {
        "1": ["1 1 1 1", "1 1 1 1", "1 1 1 1", "1 1 1 1"],
        "2": ["2 2 2 2", "2 2 2 2", "2 2 2 2", "2 2 2 2"],
        "G": ["1 2 1 1", "1 2 2 2", "1 2 G G", "1 2 G G"],
        "B": ["1 2 1 1", "1 2 2 2", "1 2 B B", "1 2 B B"],
    },
    "content-first-strict": {
        "1": ["1 1 1 1", "1 1 1 1", "1 1 1 1", "1 1 1 1"],
        "2": ["2 2 2 2", "2 2 2 2", "2 2 2 2", "2 2 2 2"],
        "G": ["1 2 1 1", "1 2 2 2", "1 2 G G", "1 2 G G"],
        "B": ["1 2 1 B", "1 2 2 B", "1 2 B B", "1 2 B B"],
    },
    "cap": {
        "1": ["1 B 1 B", "1 B 1 B", "1 B 1 B", "1 B 1 B"],
        "2": ["B 2 2 B", "B 2 2 B", "B 2 2 B", "B 2 2 B"],
        "G": ["1 2 1 B", "1 2 2 B", "1 2 G B", "1 2 G B"],
        "B": ["B B B B", "B B B B", "B B B B", "B B B B"],
    },
    "vote": {
        "1": ["1 1 1 1", "1 2 1 1", "1 1 G 1", "1 1 1 B"],
        "2": ["1 2 2 2", "2 2 2 2", "2 2 G 2", "2 2 2 B"],
        "G": ["1 G G G", "G 2 G G", "G G G G", "G G G B"],
        "B": ["1 B B B", "B 2 B B", "B B G B", "B B B B"],
    },
}

RATING_MIN = {  # rows a, columns b, order 1, 2, G, B
    "1": "1 B 1 B",
    "2": "B 2 2 B",
    "G": "1 2 G B",
    "B": "B B B B",
}


def expand(table: dict[str, list[str]]) -> dict[tuple[str, str, str], str]:
    cases = {}
    for c, grid in table.items():
        for vq, row in zip(ORDER, grid):
            for p, out in zip(ORDER, row.split()):
                cases[(SHORT[c], SHORT[vq], SHORT[p])] = SHORT[out]
    return cases


def test_constants() -> None:
    assert fusion.LABELS == ("1", "2", "both_good", "both_bad")
    assert TRACE.order == ("content", "paralinguistics", "voice_quality")
    assert TRACE.acceptability == ("content", "paralinguistics")
    assert TRACE.policies == tuple(fusion.POLICIES)  # the trace rubric fuses under every built-in policy


def test_builtin_policies_are_registered_with_one_line_descriptions() -> None:
    assert set(TABLES) <= set(fusion.POLICIES)
    for name, policy in fusion.POLICIES.items():
        assert policy.name == name
        assert policy.description and "\n" not in policy.description


@pytest.mark.parametrize("name", sorted(TABLES))
def test_policy_matches_hand_table_on_all_64_combinations(name: str) -> None:
    cases = expand(TABLES[name])
    assert len(cases) == 64
    wrong = {combo: (fuse(name, *combo), want) for combo, want in cases.items() if fuse(name, *combo) != want}
    assert not wrong, f"{name}: (C, VQ, P) -> (got, expected): {wrong}"


def test_strict_differs_from_content_first_only_when_content_and_para_are_both_bad() -> None:
    for combo in itertools.product(fusion.LABELS, repeat=3):
        c, _, p = combo
        same = fuse("content-first", *combo) == fuse("content-first-strict", *combo)
        assert same or (c == "both_bad" and p == "both_bad")


def test_rating_min_table() -> None:
    for a, row in RATING_MIN.items():
        for b, out in zip(ORDER, row.split()):
            assert fusion.rating_min(SHORT[a], SHORT[b]) == SHORT[out], (a, b)


def test_rating_min_algebra() -> None:
    rm = fusion.rating_min
    for a, b in itertools.product(fusion.LABELS, repeat=2):
        assert rm(a, b) == rm(b, a)
    for a, b, c in itertools.product(fusion.LABELS, repeat=3):
        assert rm(rm(a, b), c) == rm(a, rm(b, c))
    for a in fusion.LABELS:
        assert rm(a, a) == a
        assert rm(a, "both_bad") == "both_bad"
        assert rm(a, "both_good") == a


def test_unknown_policy_lists_the_choices() -> None:
    with pytest.raises(ValueError, match="content-first-strict") as caught:
        fuse("majority", "1", "1", "1")
    assert isinstance(caught.value, fusion.UnknownPolicy)


@pytest.mark.parametrize("name", sorted(fusion.POLICIES))
@pytest.mark.parametrize("position", range(3))
def test_fusion_over_an_undetermined_verdict_is_undetermined(name: str, position: int) -> None:
    for combo in itertools.product(fusion.LABELS, repeat=2):
        verdicts = list(combo)
        verdicts.insert(position, None)
        assert fuse(name, *verdicts) is None
    assert fuse(name, None, None, None) is None


def test_an_undetermined_verdict_does_not_excuse_an_invalid_one() -> None:
    with pytest.raises(fusion.InvalidLabel, match="paralinguistics"):
        fuse("cap", None, "1", "tie")


@pytest.mark.parametrize("bad", ["tie", "both good", 1])
def test_fuse_refuses_values_that_are_not_labels(bad: object) -> None:
    with pytest.raises(fusion.InvalidLabel, match="voice_quality"):
        fuse("vote", "1", bad, "1")  # type: ignore[arg-type]
    with pytest.raises(fusion.InvalidLabel):
        fusion.rating_min("1", bad)  # type: ignore[arg-type]


def test_register_adds_a_policy_by_name_and_refuses_duplicates() -> None:
    @fusion.register("test-always-first", "Always the verdict of the most important dimension")
    def always_first(ranked, acceptability) -> str:
        return ranked[0]

    try:
        tree = fusion.Fusion(TRACE.order, TRACE.acceptability, policies=("test-always-first",))
        assert tree.fuse("test-always-first", {"content": "2", "voice_quality": "1", "paralinguistics": "1"}) == "2"
        with pytest.raises(ValueError, match="twice"):
            fusion.register("test-always-first", "again")(always_first)
    finally:
        del fusion.POLICIES["test-always-first"]


def test_a_policy_the_rubric_does_not_name_is_refused() -> None:
    tree = fusion.Fusion(TRACE.order, TRACE.acceptability, policies=("cap",))
    with pytest.raises(fusion.UnknownPolicy, match="fuses|does not apply"):
        tree.fuse("vote", {"content": "1", "voice_quality": "1", "paralinguistics": "1"})
    assert tree.fuse_all({"content": "1", "voice_quality": "2", "paralinguistics": "both_good"}) == {"cap": "1"}


@pytest.mark.parametrize(
    "order, acceptability, policies, problem",
    [
        ((), ("a",), ("cap",), "order names no dimension"),
        (("a", "a"), ("a",), ("cap",), "order names a twice"),
        (("a", "b"), ("c",), ("cap",), "acceptability names c, which is not in order"),
        (("a", "b"), ("a",), ("majority",), "unknown fusion policy 'majority'"),
    ],
)
def test_an_impossible_arrangement_is_refused(order, acceptability, policies, problem) -> None:
    with pytest.raises(fusion.FusionError, match=problem):
        fusion.Fusion(order, acceptability, policies)


def test_two_dimensions_fuse_under_the_same_policies() -> None:
    """The policies never see dimension names: over (answer, delivery), with answer the acceptability gate."""
    tree = fusion.Fusion(order=("answer", "delivery"), acceptability=("answer",), policies=tuple(fusion.POLICIES))
    said = {"answer": "both_good", "delivery": "2"}
    assert tree.fuse_all(said) == {"content-first": "2", "content-first-strict": "2", "cap": "2", "vote": "both_good"}
    said = {"answer": "1", "delivery": "2"}
    assert tree.fuse_all(said) == {"content-first": "1", "content-first-strict": "1", "cap": "1", "vote": "1"}
    said = {"answer": "both_bad", "delivery": "1"}  # the winner on delivery is capped by the unacceptable answers
    assert tree.fuse_all(said) == {
        "content-first": "1",
        "content-first-strict": "both_bad",
        "cap": "both_bad",
        "vote": "both_bad",
    }
    assert tree.fuse_all({"answer": "1"}) == dict.fromkeys(fusion.POLICIES)  # delivery undetermined
