"""A fixed subset of the perception sets' test half (scripts/bench_perception.py), heard as Stage 1 and the judges
hear it: each clip's language from its evidence (trace_eval/language_rule.py, the recogniser of the cpu profile),
and each clip as an answer held to a language expected, its own and another. A rate below the one recorded here
fails: no clip's language regresses silently. The figures of the whole test half are in docs/languages.md."""

from __future__ import annotations

import pytest
from script_modules import load_script

from extractors import Clip
from extractors.asr import AsrConfig, AsrExtractor
from trace_eval.language_rule import LanguageRule

bench = load_script("bench_perception")

PER_CORPUS = 4  # clips of each corpus (five recorded languages, six espeak-ng voices), test half, by hash
# Rates on this subset when the rule's constants were fitted (22 recorded clips, 24 synthetic; at least these).
# With the English-only model's evidence, one recorded clip more is right and one wrong-language answer fewer is
# found, as on the whole test half (docs/languages.md); leaving its loops out finds one synthetic answer more.
RECORDED = {"language": 20 / 22, "held in its own": 21 / 22, "heard in its own, another expected": 19 / 22}
SYNTHETIC = {"language": 9 / 24, "held in its own": 15 / 24, "heard in its own, another expected": 10 / 24}


@pytest.fixture(scope="module")
def subset(tmp_path_factory) -> list:
    try:
        items = bench.recorded(per_language=40) + bench.synthetic(tmp_path_factory.mktemp("espeak"))
    except SystemExit as e:  # a package of recorded speech is missing: the message says which
        pytest.fail(str(e))
    chosen: dict[str, list] = {}
    sentences = (i for i in items if i.half == "test" and i.kind != "recorded words")
    for item in sorted(sentences, key=lambda i: i.clip.sha256):
        if len(chosen.setdefault(item.corpus, [])) < PER_CORPUS:
            chosen[item.corpus].append(item)
    return [item for corpus in sorted(chosen) for item in chosen[corpus]]


@pytest.fixture(scope="module")
def heard(subset) -> dict:
    """Each clip's evidence as asr gathers it, tested in its own language and in the wrong one expected."""
    asr = AsrExtractor(AsrConfig(num_threads=2))
    found = {}
    for item in subset:
        expects = (item.language, bench.WRONG_EXPECTED[item.language])
        found[item.clip.sha256] = asr.language_evidence(Clip(item.clip.sha256, item.clip.audio, expects=expects))
    return found


def rates(items: list, heard: dict) -> dict[str, float]:
    rule = LanguageRule.load()
    spoken = [i for i in items if heard[i.clip.sha256] is not None]
    language, own, other = [], [], []
    for item in spoken:
        evidence = heard[item.clip.sha256]
        language.append(rule.decide(bench.as_decoded(evidence, rule)).code == item.language)
        own.append(bench.held("the rule", evidence, item.language) is True)
        other.append(bench.held("the rule", evidence, bench.WRONG_EXPECTED[item.language]) is False)
    return {
        "language": sum(language) / len(spoken),
        "held in its own": sum(own) / len(spoken),
        "heard in its own, another expected": sum(other) / len(spoken),
    }


@pytest.mark.parametrize("set_name, recorded", [("recorded", RECORDED), ("synthetic", SYNTHETIC)])
def test_no_rate_of_the_subset_drops_below_its_recorded_value(subset, heard, set_name, recorded):
    found = rates([i for i in subset if i.set == set_name], heard)
    dropped = {name: (round(found[name], 3), floor) for name, floor in recorded.items() if found[name] < floor - 1e-9}
    assert not dropped, f"{set_name}: rates below their recorded values (found, recorded): {dropped}; all: {found}"


def test_a_silent_clip_and_a_tone_have_no_language_evidence():
    import numpy as np

    from trace_eval.audio import Audio

    rate = 16000
    t = np.arange(rate * 2) / rate
    asr = AsrExtractor(AsrConfig(num_threads=2))
    for samples in (np.zeros(rate * 2, np.float32), (0.3 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)):
        assert asr.language_evidence(Clip("x" * 64, Audio(samples, rate))) is None
