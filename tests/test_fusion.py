"""Fusion policies checked on all 64 (C, VQ, P) combinations against tables written by hand."""
from __future__ import annotations

import itertools

import pytest

import fusion

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
    assert fusion.DIMENSIONS == ("content", "voice_quality", "paralinguistics")


def test_builtin_policies_are_registered_with_one_line_descriptions() -> None:
    assert set(TABLES) <= set(fusion.POLICIES)
    for name, policy in fusion.POLICIES.items():
        assert policy.name == name
        assert policy.description and "\n" not in policy.description


@pytest.mark.parametrize("name", sorted(TABLES))
def test_policy_matches_hand_table_on_all_64_combinations(name: str) -> None:
    cases = expand(TABLES[name])
    assert len(cases) == 64
    policy = fusion.POLICIES[name]
    wrong = {
        combo: (policy(*combo), want) for combo, want in cases.items() if policy(*combo) != want
    }
    assert not wrong, f"{name}: (C, VQ, P) -> (got, expected): {wrong}"
    for combo, want in cases.items():
        assert fusion.fuse(name, *combo) == want


def test_strict_differs_from_content_first_only_when_content_and_para_are_both_bad() -> None:
    for combo in itertools.product(fusion.LABELS, repeat=3):
        c, _, p = combo
        same = fusion.fuse("content-first", *combo) == fusion.fuse("content-first-strict", *combo)
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
        fusion.fuse("majority", "1", "1", "1")
    assert isinstance(caught.value, fusion.UnknownPolicy)


@pytest.mark.parametrize("name", sorted(fusion.POLICIES))
@pytest.mark.parametrize("position", range(3))
def test_fusion_over_an_undetermined_verdict_is_undetermined(name: str, position: int) -> None:
    for combo in itertools.product(fusion.LABELS, repeat=2):
        verdicts = list(combo)
        verdicts.insert(position, None)
        assert fusion.fuse(name, *verdicts) is None
    assert fusion.fuse(name, None, None, None) is None


def test_an_undetermined_verdict_does_not_excuse_an_invalid_one() -> None:
    with pytest.raises(fusion.InvalidLabel, match="paralinguistics"):
        fusion.fuse("cap", None, "1", "tie")


@pytest.mark.parametrize("bad", ["tie", "both good", 1])
def test_fuse_refuses_values_that_are_not_labels(bad: object) -> None:
    with pytest.raises(fusion.InvalidLabel, match="voice_quality"):
        fusion.fuse("vote", "1", bad, "1")  # type: ignore[arg-type]
    with pytest.raises(fusion.InvalidLabel):
        fusion.rating_min("1", bad)  # type: ignore[arg-type]


def test_register_adds_a_policy_by_name_and_refuses_duplicates() -> None:
    @fusion.register("test-always-content", "Always the Content verdict")
    def always_content(content: str, voice_quality: str, paralinguistics: str) -> str:
        return content

    try:
        assert fusion.fuse("test-always-content", "2", "1", "1") == "2"
        with pytest.raises(ValueError, match="twice"):
            fusion.register("test-always-content", "again")(always_content)
    finally:
        del fusion.POLICIES["test-always-content"]
