"""A clip's language from all the evidence, in one rule.

The evidence of a clip (`language.evidence` in its blueprint, written by `asr`):

- `token`: Whisper's probability of its most probable languages, read from its language token on the clip's
  first window of speech;
- `guesses`: where the token is split (its surest language below `split_below`), that window decoded by beam
  search in each of the token's first guesses: the transcript's log-probability summed over its tokens, whether
  it loops, and what its words read as (py3langid, over Whisper's languages);
- `english`: where guesses were decoded and the recogniser has an English-only model (the `cpu` profile's tiny.en),
  the window decoded by it: its log-probability per token says how much the speech sounds like English to a model
  that knows nothing else (Whisper base hears many a short Spanish or Dutch clip as English); where that decode
  loops and the English guess does not, its log-probability is the loop's and says nothing: the term is left out;
- and, given by the judge: a written text's reading (an instruction's text) and a prior from the pair's context
  (an answer is expected in its instruction's language; an instruction in its benchmark's).

Each candidate language `c` (the token's languages; where guesses were decoded, the guesses and the languages
their words read as) is scored as a log-linear model, and the scores are turned into probabilities:

    token_weight      * log P_token(c)
  + transcript_weight * (log-probability of c's transcript - the best transcript's)
  + words_weight      * log(floor + how surely a transcript's words read as c)
  - loop_penalty      * (c's transcript loops)
  + english_weight    * (the English-only model's log-probability per token - english_par)   (c English *)
  + text_weight       * log(floor + P_text(c))       (a written text, where there is one)
  + log prior(c)                                        (context, where there is some)

    P(c | evidence) = exp(score(c)) / sum over candidates of exp(score)

(* unless the English-only decode loops on its own: above.)

The decision is the most probable candidate, with its probability. The constants are data
(trace_eval/language_rule.json), fitted on the tuning half of the perception sets by maximum likelihood
(`scripts/bench_perception.py --fit`) and reported on the test half (docs/languages.md).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

__all__ = ["LanguageDecision", "LanguageRule", "fit", "save"]

CONSTANTS = Path(__file__).with_name("language_rule.json")


@dataclass(frozen=True)
class LanguageDecision:
    """What the rule decided, and from what."""

    code: str | None  # the most probable language; None when there is no evidence at all
    probability: float | None  # its probability given the evidence (3 decimals)
    posterior: dict[str, float] = field(default_factory=dict)  # every candidate's, most probable first
    reason: str = ""  # the evidence in words, for the blueprint and the judge's reasons


@dataclass(frozen=True)
class LanguageRule:
    """The rule's constants (docstring of this module); `load()` gives the fitted ones."""

    token_weight: float = 1.0
    transcript_weight: float = 0.5
    words_weight: float = 1.0
    loop_penalty: float = 2.0
    english_weight: float = 1.0  # the English-only model's log-probability per token, for English ...
    english_par: float = -0.5  # ... above or below this
    text_weight: float = 1.0
    floor: float = 0.01  # a reading's smallest weight: a language no text reads as is unlikely, not impossible
    unread: float = 0.1  # the reading of a transcript too short to read: neither for nor against its language
    token_floor: float = 1e-4  # the token's probability of a language it gave less than this
    split_below: float = 0.9  # the token's surest language below this decodes its guesses
    candidates: int = 5  # ... at most this many
    min_candidate_probability: float = 0.02  # ... those the token gives at least this (the first always)
    prior_weight: float = 0.5  # the context prior's probability of the expected language, the rest shared out
    fitted_on: str = ""  # where the constants come from

    @classmethod
    @functools.cache
    def load(cls) -> LanguageRule:
        data = json.loads(CONSTANTS.read_text()) if CONSTANTS.exists() else {}
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    # -- which guesses asr decodes ---------------------------------------------------------------------------

    def guesses_to_decode(self, token: Mapping[str, float], expects: Sequence[str] = ()) -> list[str]:
        """The languages a clip's first window is decoded in: a split token's first guesses (none when its surest
        is sure enough), and each language the context `expects` that is not its surest, with the surest to
        weigh it against (the hypothesis test of an answer)."""
        ranked = sorted(token.items(), key=lambda item: (-item[1], item[0]))
        if not ranked:
            return []
        chosen = [
            c for i, (c, p) in enumerate(ranked[: self.candidates]) if not i or p >= self.min_candidate_probability
        ]
        if ranked[0][1] >= self.split_below or len(chosen) < 2:
            chosen = []
        tested = [c for c in expects if c != ranked[0][0]]
        return list(dict.fromkeys((chosen or [ranked[0][0]]) + tested)) if tested else chosen

    # -- the decision ------------------------------------------------------------------------------------------

    def scores(
        self,
        evidence: Mapping[str, Any],
        text: Mapping[str, float] | None = None,
        prior: Mapping[str, float] | None = None,
    ) -> dict[str, float]:
        """Each candidate language's score (log, up to a constant)."""
        token: Mapping[str, float] = evidence.get("token") or {}
        guesses: Mapping[str, Mapping[str, Any]] = evidence.get("guesses") or {}
        candidates = _candidates(token, guesses)
        if text:
            candidates |= {c for c, p in text.items() if p >= 0.5}
        if prior:
            candidates |= set(prior)
        scores = {}
        best_logprob = max((g["logprob"] for g in guesses.values()), default=0.0)
        english = _english_heard(evidence)
        for c in candidates:
            score = self.token_weight * math.log(max(token.get(c, 0.0), self.token_floor))
            if guesses:
                own = guesses.get(c) or _read_as(guesses, c)
                if own is None:  # nothing was decoded in it, nor read as it: as unlikely as the worst transcript
                    logprob = min(g["logprob"] for g in guesses.values())
                    loops = True
                else:
                    logprob, loops = own["logprob"], own["loops"]
                score += self.transcript_weight * (logprob - best_logprob)
                score += self.words_weight * math.log(self.floor + _reading(guesses, c, self.unread))
                score -= self.loop_penalty * loops
                if c == "en" and english:
                    score += self.english_weight * (english["logprob_per_token"] - self.english_par)
            if text:
                score += self.text_weight * math.log(self.floor + text.get(c, 0.0))
            if prior:
                score += math.log(max(prior.get(c, 0.0), 1e-12))
            scores[c] = score
        return scores

    def decide(
        self,
        evidence: Mapping[str, Any] | None,
        text: Mapping[str, float] | None = None,
        expected: str | None = None,
        prior: Mapping[str, float] | None = None,
    ) -> LanguageDecision:
        """The most probable language given the evidence, a text's reading and a prior; `expected`: a language
        the context expects (the prior gives it `prior_weight` and shares the rest among the others), unless the
        evidence never put it to the test (`untested`)."""
        if not evidence or not evidence.get("token"):
            return LanguageDecision(None, None, {}, "no language evidence")
        if expected is not None and prior is None and not self.untested(evidence, expected):
            prior = self.expecting(expected, evidence, text)
        scores = self.scores(evidence, text, prior)
        top = max(scores.values())
        weights = {c: math.exp(s - top) for c, s in scores.items()}
        total = sum(weights.values())
        posterior = {c: round(w / total, 3) for c, w in sorted(weights.items(), key=lambda item: (-item[1], item[0]))}
        code = next(iter(posterior))
        return LanguageDecision(code, posterior[code], dict(list(posterior.items())[:5]), describe(evidence))

    def untested(self, evidence: Mapping[str, Any], code: str) -> bool:
        """Whether `code` was never put to the test: the token was sure of another language (`split_below` or
        more), so nothing was decoded. A context's prior does not weigh there: alone it would outweigh a token sure
        of another language (a recorded Spanish answer, token es 0.93, heard as English because English was
        expected). Stage 1 decodes an expected language as a guess where the context is known when it runs."""
        token: Mapping[str, float] = evidence.get("token") or {}
        if evidence.get("guesses") or not token:
            return False
        surest = max(token, key=lambda c: token[c])
        return surest != code and token[surest] >= self.split_below

    def expecting(
        self, expected: str, evidence: Mapping[str, Any], text: Mapping[str, float] | None = None
    ) -> dict[str, float]:
        """A prior that expects one language: `prior_weight` for it, the rest shared by the other candidates."""
        others = _candidates(evidence.get("token") or {}, evidence.get("guesses") or {}) - {expected}
        if text:
            others |= {c for c, p in text.items() if p >= 0.5} - {expected}
        if not others:
            return {expected: 1.0}
        rest = (1 - self.prior_weight) / len(others)
        return {expected: self.prior_weight, **dict.fromkeys(others, rest)}

    def record(self) -> dict[str, Any]:
        return asdict(self)

    def stage1_record(self) -> dict[str, Any]:
        """The constants a blueprint's language depends on: Stage 1 decides without a text or a context, so the
        text's and the prior's weights (and where the constants come from) are the judge's alone, and refitting
        them leaves every blueprint current."""
        return {k: v for k, v in self.record().items() if k not in ("text_weight", "prior_weight", "fitted_on")}


def _candidates(token: Mapping[str, float], guesses: Mapping[str, Mapping[str, Any]]) -> set[str]:
    if not guesses:
        return set(token)
    read = {reads[0][0] for g in guesses.values() if (reads := g.get("reads")) and reads[0][1] >= 0.5}
    return set(guesses) | read


def _read_as(guesses: Mapping[str, Mapping[str, Any]], code: str) -> Mapping[str, Any] | None:
    """The guess whose words read most surely as `code` (English speech decoded under the Tagalog token comes out
    as English words: that transcript is English's)."""
    best, surest = None, 0.0
    for guess in guesses.values():
        p = dict((c, q) for c, q in guess.get("reads") or []).get(code, 0.0)
        if p > surest:
            best, surest = guess, p
    return best if surest >= 0.5 else None


def _reading(guesses: Mapping[str, Mapping[str, Any]], code: str, unread: float) -> float:
    """How surely some transcript's words read as `code`: its own guess's reading, or another's (the words
    Whisper wrote under another token), `unread` where its own are too few to read."""
    own = guesses.get(code)
    readings = [dict((c, q) for c, q in g["reads"]).get(code, 0.0) for g in guesses.values() if g.get("reads")]
    if own is not None and not own.get("reads"):
        readings.append(unread)
    return max(readings, default=unread)


def _english_heard(evidence: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The English-only model's decode, where it tells how English the speech sounds: not where it loops on its
    own (a loop's probability is high whatever was said), only where the multilingual model's English words loop
    too (the speech itself repeats: "tick, tock, tock, ...")."""
    english = evidence.get("english")
    if english and english.get("loops"):
        base = (evidence.get("guesses") or {}).get("en")
        if base is None or not base["loops"]:
            return None
    return english


def describe(evidence: Mapping[str, Any]) -> str:
    """The evidence in words: "token en 0.46, es 0.31; transcripts: es -12.3 (9 tokens, reads es 0.92), ..."."""
    token = evidence.get("token") or {}
    ranked = sorted(token.items(), key=lambda item: (-item[1], item[0]))[:4]
    said = "token " + ", ".join(f"{c} {p:.2f}" for c, p in ranked)
    guesses = evidence.get("guesses") or {}
    if guesses:
        parts = []
        for c, g in guesses.items():
            reads = g.get("reads")
            how = f"reads {reads[0][0]} {reads[0][1]:.2f}" if reads else "too short to read"
            parts.append(f"{c} {g['logprob']:.1f} ({g['tokens']} tokens, {how}{', loops' if g['loops'] else ''})")
        said += "; transcripts: " + ", ".join(parts)
    english = evidence.get("english")
    if english:
        how = "per token" if _english_heard(evidence) else "loops, left out"
        said += f"; English-only model {english['logprob_per_token']:.2f} {how}"
    return said


# -- fitting ---------------------------------------------------------------------------------------------------

# The token's weight stays 1: its probabilities are Whisper's own, calibrated where nothing else is heard; the
# other weights say how much a transcript's likelihood and its reading add to them.
FITTED = ("transcript_weight", "words_weight", "loop_penalty", "english_weight", "english_par")


def fit(examples: list[tuple[Mapping[str, Any], str]]) -> LanguageRule:
    """The weights that make the true languages of `examples` (evidence, language) most probable: maximum
    likelihood, by Nelder-Mead from the class's defaults (the same start on every run: a fit is reproducible)."""
    from scipy.optimize import minimize

    start = replace(LanguageRule.load(), **{name: getattr(LanguageRule(), name) for name in FITTED})

    def loss(weights) -> float:
        rule = _with(start, weights)
        total = 0.0
        for evidence, truth in examples:
            scores = rule.scores(evidence)
            top = max(scores.values())
            norm = top + math.log(sum(math.exp(s - top) for s in scores.values()))
            total -= scores.get(truth, norm - 12.0) - norm  # a truth the rule never considers costs e^-12
        return total / len(examples)

    best = minimize(loss, [getattr(start, name) for name in FITTED], method="Nelder-Mead", options={"maxiter": 400})
    return _with(start, best.x)


def save(rule: LanguageRule, fitted_on: str) -> None:
    """Write the constants the rule loads (language_rule.json)."""
    CONSTANTS.write_text(json.dumps(rule.record() | {"fitted_on": fitted_on}, indent=2) + "\n")
    LanguageRule.load.cache_clear()


MAX_WEIGHT = 10.0  # a weight past this says "never" where the tuning half had no counter-example


def _with(rule: LanguageRule, weights) -> LanguageRule:
    """`rule` with the FITTED values: weights within [0, MAX_WEIGHT], a par (a log-probability) within ±MAX_WEIGHT."""
    values = asdict(rule) | {
        name: round(min(max(-MAX_WEIGHT if name.endswith("_par") else 0.0, float(w)), MAX_WEIGHT), 3)
        for name, w in zip(FITTED, weights)
    }
    return LanguageRule(**values)
