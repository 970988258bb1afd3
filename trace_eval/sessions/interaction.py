"""Interaction judged pairwise: two systems' sessions on the same user channel, which handled the turns better.

The dimension is turn-taking and interruption handling, with the typed ties of the other dimensions: `1`, `2`,
`both_good`, `both_bad`. Two judges:

- `cues`, offline and deterministic, decides from the timelines, event by event, with the timeline's own
  turns, answers and barge-ins (timeline.py defines them). Every user turn is an *answer* event: acceptable when
  the system answered, starting no earlier than `jump_in_tolerance_s` before the user's end and no later than
  `answer_within_s` after it. Every user turn begun while the system spoke is a *barge-in* event: acceptable
  when the system stopped (within the timeline's `stop_within_s`; a system that was not speaking had nothing to
  yield). Events are matched across the two sessions by the stretch of the user's speech they are at (one user
  channel), since where a user's turn ends depends on what the system did (a silence it waited through is a
  pause): an answer event in one session only is a silence the other waited through, acceptable there. Per
  event: both acceptable `both_good`, neither `both_bad`, else the acceptable one. Per pair, as the
  acceptability cap does for the other dimensions: a session is acceptable when every event is; one acceptable
  session wins; both, `both_good`; neither, the one with fewer unacceptable events, or `both_bad`.
- an LLM (any litellm model) reads both timelines as text (who spoke when, the latencies, what overlapped) and
  answers with a label and its reasoning.

`rank(verdicts)` gives each system's Bradley-Terry score over the pairs (a tie half a win to each), computed as
the leaderboard computes it.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from trace_eval.evaluation import bradley_terry
from trace_eval.sessions.errors import SessionError
from trace_eval.sessions.timeline import Timeline, setting

__all__ = [
    "LABELS",
    "CallFailed",
    "InteractionSettings",
    "LLMSetupError",
    "PairVerdict",
    "agreement",
    "cues_answer",
    "cues_verdict",
    "describe",
    "events",
    "llm_complete",
    "llm_verdict",
    "rank",
    "read_labels",
]

LABELS = ("1", "2", "both_good", "both_bad")


class LLMSetupError(Exception):
    """Every call would fail the same way (no key, a server that cannot be reached, an unknown model): stop."""


class CallFailed(Exception):
    """One LLM call failed (a timeout, a server error): its pair is undetermined with the reason, the run goes on."""


@dataclass(frozen=True)
class InteractionSettings:
    # People notice an answer slower than about a second and a half; gaps between human turns are mostly
    # under half a second.
    answer_within_s: float = setting(1.5, "an answer later than this after the user's end is unacceptable")
    # Overlap at the turn's edge (a few speech-activity frames), not a jump-in.
    jump_in_tolerance_s: float = setting(0.2, "an answer starting more than this before the user's end jumped in")


@dataclass(frozen=True)
class Event:
    kind: str  # "answer" | "barge-in"
    speech: int  # which stretch of the user's speech it ends (answer) or starts (barge-in): one user channel
    at_s: float  # the user's end (answer) or start (barge-in)
    acceptable: bool
    why: str


@dataclass
class PairVerdict:
    sample: str
    systems: tuple[str, str]
    label: str | None  # None: undetermined, with `why`
    why: str
    events: list[dict[str, Any]]
    judge: str  # "cues" or the LLM's model id
    reasoning: str | None = None
    raw: str | None = None

    def record(self) -> dict[str, Any]:
        return {**asdict(self), "systems": list(self.systems)}


def events(timeline: Timeline, settings: InteractionSettings | None = None) -> list[Event]:
    """The session's answer and barge-in events, each acceptable or not, with why."""
    settings = settings or InteractionSettings()
    speech = timeline.speech["user"]

    def nearest(t: float, edge: int) -> int:
        return min(range(len(speech)), key=lambda k: abs(speech[k].record()[edge] - t))

    found = []
    for answer in timeline.answers:
        end = answer.user_turn.end
        if answer.latency_s is None:
            ok, why = False, "no answer before the user spoke again or the session ended"
        elif answer.latency_s < -settings.jump_in_tolerance_s:
            ok, why = False, f"jumped in {-answer.latency_s:.2f} s before the user's end"
        elif answer.latency_s > settings.answer_within_s:
            ok, why = (
                False,
                f"answered {answer.latency_s:.2f} s after the user's end (over {settings.answer_within_s} s)",
            )
        else:
            ok, why = True, f"answered {answer.latency_s:.2f} s after the user's end"
        found.append(Event("answer", nearest(end, 1), end, ok, why))
    for barge in timeline.barge_ins:
        how = "stopped after" if barge.stopped else "went on"
        why = f"{how} {barge.stop_latency_s:.2f} s once the user began to speak over it"
        start = barge.user_turn.start
        found.append(Event("barge-in", nearest(start, 0), start, barge.stopped, why))
    return sorted(found, key=lambda e: (e.at_s, e.kind))


def cues_verdict(
    sample: str,
    systems: tuple[str, str],
    first: Timeline,
    second: Timeline,
    settings: InteractionSettings | None = None,
) -> PairVerdict:
    """The offline judge: event by event, then the acceptability cap over the session."""
    mismatch = _different_users(first, second)
    if mismatch:
        return PairVerdict(sample, systems, None, mismatch, [], "cues")
    one, two = events(first, settings), events(second, settings)
    keyed: dict[tuple[str, int], list[Event | None]] = {(e.kind, e.speech): [e, None] for e in one}
    for e in two:
        keyed.setdefault((e.kind, e.speech), [None, None])[1] = e
    # An event in one session only: the other had nothing to yield (a barge-in), or waited through the user's
    # silence there, which was a pause in its session (an answer).
    absent = {"barge-in": "was not speaking when the user began", "answer": "waited: the user's silence was a pause"}
    compared = []
    for (kind, _), (a, b) in sorted(keyed.items(), key=lambda kv: (next(e.at_s for e in kv[1] if e), kv[0][0])):
        compared.append(
            {
                "kind": kind,
                "at_s": round(next(e.at_s for e in (a, b) if e), 3),
                "label": _label(a.acceptable if a else True, b.acceptable if b else True),
                "why_1": a.why if a else absent[kind],
                "why_2": b.why if b else absent[kind],
            }
        )
    bad_1 = sum(not (a.acceptable) for a in one)
    bad_2 = sum(not (b.acceptable) for b in two)
    if bad_1 == bad_2:
        label = "both_good" if bad_1 == 0 else "both_bad"
    else:
        label = "1" if bad_1 < bad_2 else "2"
    why = f"unacceptable events: {bad_1} (response 1) against {bad_2} (response 2) of {len(compared)}"
    return PairVerdict(sample, systems, label, why, compared, "cues")


def describe(timeline: Timeline) -> str:
    """The session as lines of text, in time order: who spoke when, answers, overlaps and barge-ins."""
    lines = []
    for who in ("user", "system"):
        for turn in timeline.turns[who]:
            pauses = [p for p in timeline.pauses[who] if turn.start <= p.start < turn.end]
            paused = f" (pauses: {', '.join(f'{p.duration:.2f} s at {p.start:.2f}' for p in pauses)})" if pauses else ""
            said = _words_in(timeline.words.get(who), turn.start, turn.end)
            lines.append((turn.start, f"{turn.start:6.2f}-{turn.end:6.2f} {who} speaks{paused}{said}"))
    for answer in timeline.answers:
        if answer.latency_s is not None:
            lines.append((answer.user_turn.end, f"{answer.user_turn.end:6.2f} user's turn ends; the system's "
                          f"answer starts {answer.latency_s:+.2f} s from here"))  # fmt: skip
        else:
            lines.append((answer.user_turn.end, f"{answer.user_turn.end:6.2f} user's turn ends; no answer follows"))
    for barge in timeline.barge_ins:
        how = "stops after" if barge.stopped else "goes on"
        lines.append((barge.user_turn.start, f"{barge.user_turn.start:6.2f} the user starts speaking over the "
                      f"system, which {how} {barge.stop_latency_s:.2f} s"))  # fmt: skip
    for overlap in timeline.overlaps:
        lines.append((overlap.start, f"{overlap.start:6.2f}-{overlap.end:6.2f} both speak"))
    return "\n".join(text for _, text in sorted(lines, key=lambda x: x[0])) or "no speech on either channel"


def _words_in(words: list[dict[str, Any]] | None, start: float, end: float, most: int = 60) -> str:
    """What was said in a turn, where the channel was transcribed: ': "..."' (its first `most` words)."""
    inside = [w["word"] for w in words or () if start - 0.3 <= w["start"] < end + 0.3]
    if not inside:
        return ""
    text = " ".join(inside[:most]) + (" ..." if len(inside) > most else "")
    return f': "{text}"'


SYSTEM_PROMPT = """You judge full-duplex spoken dialogue systems: systems that listen and speak at once. Two systems \
talked with the same user (the same recording of the user); you see each session as a timeline of who spoke when, \
measured from the audio. Judge Interaction only: turn-taking and the handling of interruptions. A good system \
answers soon after the user ends (within about a second and a half), does not start while the user is still \
speaking or only pausing, stops soon when the user talks over it, and leaves no user turn without an answer. \
What was said is not shown and does not count.

Answer "1" if session 1 handles the interaction clearly better, "2" if session 2 does, "both_good" if both handle \
it acceptably, "both_bad" if neither does. The order of the sessions must not influence you.
Answer with one JSON object and nothing else: {"reasoning": "<one or two sentences>", "interaction": "<label>"}"""


def llm_verdict(
    sample: str,
    systems: tuple[str, str],
    first: Timeline,
    second: Timeline,
    complete: Callable[[list[dict[str, str]]], str],
    model: str,
) -> PairVerdict:
    """Ask an LLM (`complete` sends the messages and returns the answer's text, or raises CallFailed); a failed
    call, or an answer without a valid label, is recorded as undetermined with the reason (and the raw text),
    never guessed."""
    mismatch = _different_users(first, second)
    if mismatch:
        return PairVerdict(sample, systems, None, mismatch, [], model)
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": f"Session 1:\n{describe(first)}\n\nSession 2:\n{describe(second)}"},
    ]
    try:
        raw = complete(messages)
    except CallFailed as e:
        return PairVerdict(sample, systems, None, f"the call failed: {e}", [], model)
    match = re.search(r"\{.*\}", raw, re.DOTALL)
    try:
        answer = json.loads(match.group(0)) if match else None
    except json.JSONDecodeError:
        answer = None
    label = answer.get("interaction") if isinstance(answer, dict) else None
    if label not in LABELS:
        why = "the answer holds no JSON object" if answer is None else f"no valid label (got {label!r})"
        return PairVerdict(sample, systems, None, why, [], model, raw=raw)
    reasoning = answer.get("reasoning") if isinstance(answer, dict) else None
    return PairVerdict(sample, systems, label, "the model's answer", [], model, reasoning=reasoning, raw=raw)


def rank(verdicts: list[PairVerdict]) -> list[dict[str, Any]]:
    """Each system's Bradley-Terry score, wins, ties and losses over the decided pairs, best first: the
    leaderboard's computation (bradley_terry.fit_or_prior: maximum likelihood, or the weak prior where a system
    won or lost every pair), so `leaderboard` gives the same scores for the same verdicts."""
    decided = [(v, v.label) for v in verdicts if v.label is not None]
    systems = sorted({s for v, _ in decided for s in v.systems})
    index = {s: k for k, s in enumerate(systems)}
    n = len(systems)
    points, games = np.zeros((n, n)), np.zeros((n, n))
    tally = {s: {"wins": 0, "both_good": 0, "both_bad": 0, "losses": 0} for s in systems}
    for v, label in decided:
        a, b = (index[s] for s in v.systems)
        games[a, b] += 1
        games[b, a] += 1
        share = {"1": 1.0, "2": 0.0}.get(label, 0.5)
        points[a, b] += share
        points[b, a] += 1 - share
        if label in ("1", "2"):
            winner, loser = v.systems if label == "1" else v.systems[::-1]
            tally[winner]["wins"] += 1
            tally[loser]["losses"] += 1
        else:
            for s in v.systems:
                tally[s][label] += 1
    if not n:
        return []
    theta, defined = bradley_terry.fit_or_prior(points, games)
    score = bradley_terry.scores(theta)
    places = bradley_terry.ranks(score)
    fit = "maximum likelihood" if defined else "with the weak prior (a system won or lost every pair)"
    table = [
        {"system": s, "rank": int(places[k]), "score": round(float(score[k]), 1), **tally[s], "fit": fit}
        for k, s in enumerate(systems)
    ]
    return sorted(table, key=lambda row: (row["rank"], row["system"]))


def pairs_of(systems: dict[str, dict[str, Timeline]]) -> list[tuple[str, tuple[str, str]]]:
    """(sample, (system, system)) for every sample two or more systems have, the systems in sorted order."""
    samples = sorted({s for timelines in systems.values() for s in timelines})
    return [
        (sample, pair)
        for sample in samples
        for pair in itertools.combinations(sorted(s for s in systems if sample in systems[s]), 2)
    ]


def _label(first_ok: bool, second_ok: bool) -> str:
    if first_ok == second_ok:
        return "both_good" if first_ok else "both_bad"
    return "1" if first_ok else "2"


def _different_users(first: Timeline, second: Timeline) -> str | None:
    """Why two sessions are not on the same user channel (the user's speech differs), else None."""
    one, two = first.speech["user"], second.speech["user"]
    if not one or not two:
        return "no speech on the user's channel: no turn to judge"
    same = len(one) == len(two) and all(
        abs(a.start - b.start) < 0.1 and abs(a.end - b.end) < 0.1 for a, b in zip(one, two)
    )
    return (
        None
        if same
        else (
            f"not the same user channel: {len(one)} and {len(two)} stretches of the user's speech, at different times"
        )
    )


def cues_answer(item: str, fields: dict[str, str], settings: InteractionSettings | None = None) -> dict[str, Any]:
    """The offline judge's answer about an item of an interaction benchmark (`sessions --pairs`), whose fields
    `session_1` and `session_2` hold the two timelines' records as JSON, in the order shown (`judge_settings`, the
    thresholds to use, where given): the verdict JSON
    the judge runner reads (a label, or null with the reason under `undetermined`)."""
    try:
        first, second = (Timeline.from_record(json.loads(fields[f"session_{n}"])) for n in (1, 2))
    except (KeyError, ValueError, TypeError) as e:
        why = f"no timeline records of both sessions in the item (session_1, session_2): {e}"
        return {"reasoning": why, "interaction": None, "undetermined": {"interaction": why}}
    if settings is None and "judge_settings" in fields:  # the thresholds `sessions --pairs` was given
        settings = InteractionSettings(**json.loads(fields["judge_settings"]))
    verdict = cues_verdict(item, ("1", "2"), first, second, settings)
    reasons = [f"{e['kind']} at {e['at_s']:.2f} s: 1 {e['why_1']}; 2 {e['why_2']}" for e in verdict.events]
    answer: dict[str, Any] = {"reasoning": "; ".join([verdict.why, *reasons]), "interaction": verdict.label}
    if verdict.label is None:
        answer["undetermined"] = {"interaction": verdict.why}
    return answer


def llm_complete(model: str, api_base: str | None = None) -> Callable[[list[dict[str, str]]], str]:
    """`complete` for llm_verdict (and the benchmark's prompts, checkout_prompts.py): any litellm model, or a local
    OpenAI-compatible server spoken to directly where the judge would (`openai/NAME --api-base URL`:
    judge/openai_http.py, without litellm's seconds of import). The key from the provider's variable or
    TRACE_JUDGE_API_KEY (checked here, before any call); a failed call raises CallFailed, one that every call would
    repeat (a key, a URL, a model name) LLMSetupError."""
    import os

    from trace_eval.judge.openai_http import speaks_directly

    key = os.environ.get("TRACE_JUDGE_API_KEY") or None
    if speaks_directly(model, api_base):
        return _direct_complete(model, str(api_base), key or os.environ.get("OPENAI_API_KEY"))

    import openai

    from trace_eval.judge.litellm_backbone import _connection_failure, import_litellm

    litellm = import_litellm()
    if key is None:
        missing = litellm.validate_environment(model=model).get("missing_keys") or []
        if missing:
            raise LLMSetupError(
                f"{model}: no API key: set {' or '.join(missing)} (for a local server, any value in "
                "TRACE_JUDGE_API_KEY)"
            )

    def complete(messages: list[dict[str, str]]) -> str:
        try:
            response = litellm.completion(
                model=model,
                messages=messages,
                temperature=0.0,
                api_base=api_base,
                api_key=key,
                max_retries=0,
                timeout=120,
            )
        except (litellm.AuthenticationError, litellm.NotFoundError, litellm.BadRequestError) as e:
            raise LLMSetupError(f"{model}: {type(e).__name__}: {e}") from None
        except openai.APIError as e:  # what litellm raises derives from the OpenAI client's errors
            # litellm reports a refused or unresolved connection as a 500: its cause chain tells them apart
            failure = _connection_failure(e)
            if failure is not None:
                kind, _, detail = failure
                raise LLMSetupError(f"{model}: cannot reach {api_base or 'the provider'} ({kind}: {detail})") from None
            raise CallFailed(f"{type(e).__name__}: {e}") from None  # a timeout, a server error: this pair only
        return response.choices[0].message.content or ""

    return complete


def _direct_complete(model: str, api_base: str, key: str | None) -> Callable[[list[dict[str, str]]], str]:
    """`complete` through judge/openai_http.py: the request litellm would send, over httpx."""
    import asyncio

    import httpx

    from trace_eval.judge.openai_http import OpenAIServer, ServerError

    if key is None:
        raise LLMSetupError(f"{model}: no API key: set OPENAI_API_KEY (for a local server, any value in "
                            "TRACE_JUDGE_API_KEY)")  # fmt: skip

    def complete(messages: list[dict[str, str]]) -> str:
        server = OpenAIServer(api_base, key, timeout_s=120)
        body = OpenAIServer.body(model, messages, 0.0, None, None, False)

        async def ask() -> str:
            try:
                return (await server.chat(body)).text
            finally:
                await server.close()

        try:
            return asyncio.run(ask())
        except ServerError as e:
            if e.status in (400, 401, 403, 404):  # a key, a model name, a request every call would repeat
                raise LLMSetupError(f"{model}: the server at {api_base} answered {e.status}: {e}") from None
            raise CallFailed(f"the server answered {e.status}: {e}") from None
        except (httpx.ConnectError, httpx.UnsupportedProtocol) as e:
            raise LLMSetupError(f"{model}: cannot reach {api_base} ({type(e).__name__}: {e})") from None
        except httpx.HTTPError as e:  # a timeout, a connection dropped mid-answer: this call only
            raise CallFailed(f"{type(e).__name__}: {e}") from None

    return complete


def read_labels(path: Path) -> dict[tuple[str, str, str], str]:
    """People's interaction labels (JSON lines {sample, system_1, system_2, interaction}) by (sample, system
    shown first, system shown second), in both orders; a line that is not one is refused with its number."""
    swap = {"1": "2", "2": "1", "both_good": "both_good", "both_bad": "both_bad"}
    labels = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            label = row["interaction"]
            labels[(row["sample"], row["system_1"], row["system_2"])] = label
            labels[(row["sample"], row["system_2"], row["system_1"])] = swap[label]
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            raise SessionError(
                f"{path} line {n}: expected {{sample, system_1, system_2, interaction: 1, 2, both_good or "
                f"both_bad}} ({type(e).__name__}: {e})"
            ) from None
    return labels


def agreement(verdicts: list[PairVerdict], labels: dict[tuple[str, str, str], str]) -> dict[str, Any]:
    """The share of labelled pairs where the judge gave people's label, with its Wilson interval; an
    undetermined verdict counts as a disagreement."""
    from trace_eval.sessions.metrics import rate

    keys = [(v.label, (v.sample, v.systems[0], v.systems[1])) for v in verdicts]
    matched = [(label, labels[key]) for label, key in keys if key in labels]
    return rate(sum(a == b for a, b in matched if a is not None), len(matched))
