"""The `cues` rules for how words are said: a stressed word, a question or a statement, a pause after each
word, and a change along the answer (louder, quieter, higher, lower). Decided from the blueprint's
`agent_prosody` section (extractors/prosody.py), read through trace_eval/judge/prosody.py.

Requests are read from the instruction's English wording (the phrase tables below); a request these rules do
not recognise is left to cues.py (a manner no rule measures stays undetermined):

- **Stress a word**: "emphasise 'fox'", "stress the word fox", "with emphasis on 'never'", "put the stress on
  'I'". The word is quoted, follows "the word", or is one of the quoted words to say; the quoted target is not
  a word to say (`without_stress_targets`). A response is acceptable when the word (matched against its
  recognised words with the `cues` word matching: case, spelling slips) has a prominence (pitch, loudness and
  length together, each as a z-score over the answer's words, weighed) of at least `emphasis_min_prominence` and
  is the answer's focus: no other word more prominent by more than `emphasis_max_behind` (a stressed word is the
  one the answer puts forward, not merely above its typical word). Several occurrences: the most prominent;
  a quoted phrase: its most prominent word. A word the recogniser wrote otherwise ("rent" for a stressed "red")
  is found by its place where the answer says the quoted sentence (`by_place`: at least `place_min_share` of its
  words in order, the words around the asked one heard as themselves). Of two acceptable responses, the one whose
  word stands out more by `emphasis_clear_lead` wins. Unknown: the word neither among the recognised words nor
  at a place the answer's words tell, or its prominence null.
- **Ask it as a question** / **say it as a statement** ("rising intonation", "as a statement, not a question"):
  the final pitch movement of the last phrase, `final_change_st`. A question rises by at least
  `question_min_rise_st` (the extractor's own "rising"); a statement does not. Unknown: the ending unmeasured.
- **Pause after each word** ("word by word", "pause between the words"): at least `pause_each_min_share` of
  the boundaries between words hold a pause (a silence of 0.25 s or more, as the extractor places them).
  Unknown: fewer than two words.
- **Get louder / quieter, higher / lower** ("start quietly and get louder", "louder and louder", "fade
  out", "raise your pitch"): the last third of the answer against the first (`changes`), by at least
  `change_min_db` or `change_min_st`. Such a request replaces the whole-clip loudness or pitch cue its words
  would otherwise ask for ("start quietly" is not "quiet"). Changes of pace ("speed up", "slow down") stay
  with the pace rule of cues.py.

Unknown everywhere: the section null (its recorded reason: an unreliable transcript, no words, a clip too
short), or not shown to the judge (`--drop prosody`).

Each threshold has a margin scale (`MARGIN_SCALES`), as cues.py's: a reading one scale past its threshold is
one unit sure (confidence 0.82).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from trace_eval.judge import prosody

__all__ = [
    "MANNER_WORDS",
    "MARGIN_SCALES",
    "ProsodyCue",
    "ProsodyThresholds",
    "align",
    "by_place",
    "lead_margin",
    "occurrences",
    "prosody_cues",
    "shown_prosody",
    "stress_targets",
    "without_stress_targets",
]


@dataclass(frozen=True)
class ProsodyThresholds:
    """Every number the prosody rules use. Prominence: standard deviations (z); pitch: semitones; level: dB."""

    # The asked word stands out above the answer's typical word and is its focus, within a little of its most
    # prominent word (prominence is a weighted mean of z-scores; its standard deviation over an answer's words
    # is 0.5-0.8 on recorded speech). The three numbers are set on scripts/bench_stress.py's tuning half.
    emphasis_min_prominence: float = 0.4
    emphasis_max_behind: float = 0.4  # prominence below the answer's most prominent other word, at most
    emphasis_clear_lead: float = 0.5  # of two responses that stress it, one whose word stands out this much more
    # A word the recogniser wrote otherwise is found at its place in the quoted sentence where the answer says
    # this share of the quoted words, in order, and the words either side of it as themselves.
    place_min_share: float = 0.6
    question_min_rise_st: float = 1.5  # a final rise this large asks; a smaller one states (the extractor's "rising")
    pause_each_min_share: float = 0.8  # share of the word boundaries with a pause: "after each word"
    change_min_db: float = 3.0  # last third against the first: louder or quieter by this
    change_min_st: float = 2.0  # higher or lower by this


# One unit of margin per rule, in the rule's own unit (cues.py's `MARGIN_SCALES`).
MARGIN_SCALES = {
    "emphasis_min_prominence": 0.5,
    "emphasis_max_behind": 0.5,
    "emphasis_clear_lead": 0.5,
    "question_min_rise_st": 1.0,
    "pause_each_min_share": 0.1,
    "change_min_db": 1.5,
    "change_min_st": 1.0,
}

_PLACE_REACH = 2  # quoted words besides the asked one between its anchors (`by_place`)
Words = Callable[[str], list[str]]  # a text's words, as cues.py splits transcripts
SameWord = Callable[[str, str], bool]  # (heard, asked): the same word, as cues.py matches quoted words
Reading = tuple[float | None, str]  # (the value in the rule's unit, what was read or why nothing was)


@dataclass(frozen=True)
class ProsodyCue:
    """One request and how to decide it, in the shape of cues.py's cues (`name`, `check`) plus its margin and,
    for a stressed word, which of two acceptable responses is better."""

    name: str
    check: Callable[[dict | None], tuple[bool | None, str]]  # (meets it, None when unmeasured; what was read)
    margin: Callable[[dict | None], float | None]  # distance from the threshold in margin units; None: unmeasured
    # (winner "1"/"2" or None, what was read, distance of the lead from the clear lead) of two acceptable responses
    better: Callable[[dict | None, dict | None], tuple[str | None, str, float | None]] | None = None
    replaces: frozenset[str] = field(default_factory=frozenset)  # cues.py's whole-clip cues it stands for
    covers: frozenset[str] = field(default_factory=frozenset)  # cues.py's unmeasured manners it measures


def _distance(value: float, name: str, t: ProsodyThresholds) -> float:
    return abs(value - getattr(t, name)) / MARGIN_SCALES[name]


def _rule(
    name: str,
    read: Callable[[dict], Reading],
    threshold: str,
    t: ProsodyThresholds,
    at_least: bool = True,
    better: Callable[[dict | None, dict | None], tuple[str | None, str, float | None]] | None = None,
    replaces: frozenset[str] = frozenset(),
    covers: frozenset[str] = frozenset(),
) -> ProsodyCue:
    """A cue met when the value read is at least the threshold (`at_least`), or below it."""

    def reading(bp: dict | None) -> Reading:
        section, why = shown_section(bp)
        return (None, why or "prosody unmeasured") if section is None else read(section)

    def check(bp: dict | None) -> tuple[bool | None, str]:
        value, text = reading(bp)
        if value is None:
            return None, text
        limit = getattr(t, threshold)
        return (value >= limit if at_least else value < limit), text

    def margin(bp: dict | None) -> float | None:
        value, _ = reading(bp)
        return None if value is None else _distance(value, threshold, t)

    return ProsodyCue(name, check, margin, better, replaces, covers)


# -- what the judge was shown ---------------------------------------------------------------------

HIDDEN = "prosody not shown to this judge (--drop prosody, or a prompt without agent_prosody)"


def shown_prosody(view: dict | None, stored: dict | None) -> dict:
    """What the rules read beside the judge's view of a blueprint: the stored prosody section and the
    provenance that says why it is null, where the view shows prosody at all (its lines replace the numbers)."""
    if view is None or prosody.SECTION not in view:
        return {}
    return {prosody.SECTION: (stored or {}).get(prosody.SECTION), "provenance": (stored or {}).get("provenance")}


def shown_section(bp: dict | None) -> tuple[dict | None, str | None]:
    """The section the judge may read, or why there is none (not shown, or null with the recorded reason)."""
    if bp is not None and prosody.SECTION not in bp:
        return None, HIDDEN
    return prosody.section_of(bp)


# -- stressing a word --------------------------------------------------------------------------------

_QUOTE = r"\"([^\"]+)\"|“([^”]+)”|‘([^’]+)’|'([^']+)'(?!\w)"
_STRESS_VERB = (
    r"\b(?:emphasi[sz](?:e|es|ing)|stress(?:es|ing)?(?:\s+on)?|emphasis\s+on|"
    r"(?:put|puts|putting|place|places|placing|lay|lays|laying)\s+(?:\w+\s+){0,2}?(?:emphasis|stress)\s+on)"
)
_STRESS_QUOTED = re.compile(_STRESS_VERB + r"\s+(?:the\s+words?\s+)?(?:" + _QUOTE + ")", re.IGNORECASE)
_STRESS_NAMED = re.compile(_STRESS_VERB + r"\s+the\s+word\s+([^\W\d_][\w'-]*)", re.IGNORECASE)
_STRESS_BARE = re.compile(_STRESS_VERB + r"\s+([^\W\d_][\w'-]*)", re.IGNORECASE)
# Words after a stress verb that name no particular word ("with emphasis on a different word each time").
_NOT_A_TARGET = {
    "a", "an", "the", "each", "every", "different", "one", "some", "any", "certain", "key", "important",
    "it", "this", "that", "these", "those", "word", "words", "last", "first", "final", "right", "wrong",
}  # fmt: skip


def stress_targets(text: str, quoted: str, words: Words) -> list[str]:
    """The words an instruction asks to stress: quoted after a stress verb, named as "the word X", or a bare
    word that is one of the quoted words to say; in order, each once."""
    found = [next(g for g in m.groups() if g) for m in _STRESS_QUOTED.finditer(text)]
    found += [m.group(1) for m in _STRESS_NAMED.finditer(text)]
    to_say = set(words(quoted))
    for m in _STRESS_BARE.finditer(text):
        word = m.group(1)
        if word.lower() not in _NOT_A_TARGET and set(words(word)) & to_say:
            found.append(word)
    return list(dict.fromkeys(t.strip() for t in found if words(t)))


def without_stress_targets(text: str) -> str:
    """The instruction with each quoted word to stress taken out: "say 'the quick fox', stressing 'fox'" asks to
    say "the quick fox", not "the quick fox fox"."""
    return _STRESS_QUOTED.sub(lambda m: text[m.start() : m.start(m.lastindex or 0) - 1], text)


def occurrences(entries: list[dict], target: list[str], words: Words, same: SameWord) -> list[list[int]]:
    """Each run of the recognised words (`entries`, {"word": ...} each) that says the target's words in order,
    as word indices."""
    said = [words(str((w or {}).get("word", ""))) for w in entries]
    runs = []
    for start in range(len(said)):
        run, k, i = [], 0, start
        while k < len(target) and i < len(said):
            tokens = said[i]
            if not tokens or not any(same(token, target[k]) for token in tokens):
                break
            run.append(i)
            k += 1
            i += 1
        if k == len(target):
            runs.append(run)
    return runs


def align(quoted: list[str], said: list[str], same: SameWord) -> list[int | None]:
    """For each quoted word, the index of the said word standing in its place (the same word or another one, a
    substitution), or None where the answer left it out: the alignment of fewest edits (a word changed, left out
    or added costs one), with any words said before or after the quoted sentence free."""
    n, m = len(quoted), len(said)
    # cost[i][j]: the first i quoted words against said words up to j (those before the sentence free)
    cost = [[0] * (m + 1)] + [[i] + [0] * m for i in range(1, n + 1)]
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            changed = 0 if same(said[j - 1], quoted[i - 1]) else 1
            cost[i][j] = min(cost[i - 1][j - 1] + changed, cost[i - 1][j] + 1, cost[i][j - 1] + 1)
    j = min(range(m + 1), key=lambda k: (cost[n][k], -k))  # words said after the sentence are free
    placed: list[int | None] = [None] * n
    i = n
    while i > 0 and j > 0:
        changed = 0 if same(said[j - 1], quoted[i - 1]) else 1
        if cost[i][j] == cost[i - 1][j - 1] + changed:
            placed[i - 1] = j - 1
            i, j = i - 1, j - 1
        elif cost[i][j] == cost[i - 1][j] + 1:
            i -= 1
        else:
            j -= 1
    return placed


def by_place(
    entries: list[dict], quoted: list[str], asked: list[str], words: Words, same: SameWord, min_share: float
) -> tuple[list[int], str] | None:
    """Where the recogniser wrote another word for the asked one: the recognised words at the asked word's place
    in the quoted sentence, and what was heard there; None when the place cannot be told.

    The place is known when the answer says at least `min_share` of the quoted words in order (`align`) and the
    nearest quoted words either side of the asked one that were heard as themselves (its anchors, at most
    `_PLACE_REACH` words away) hold between them as many recognised words as quoted ones, one for one ("the
    quick round farts jump" for "the quick brown fox jumps": "fox" is "farts"), or hold only the asked word
    heard as one or two others ("Marston" or "Mars ton" for "Boston"). At the sentence's first or last word
    one anchor does, beside the word the alignment gives it. A word heard for two quoted ones ("the quick
    roundfire jump") places neither: its prominence is of both."""
    tokens, owner = [], []
    for index, entry in enumerate(entries):
        for token in words(str((entry or {}).get("word", ""))):
            tokens.append(token)
            owner.append(index)
    starts = [k for k in range(len(quoted) - len(asked) + 1) if quoted[k : k + len(asked)] == asked]
    if not tokens or not starts:
        return None
    placed = align(quoted, tokens, same)
    heard = [k for k, j in enumerate(placed) if j is not None and same(tokens[j], quoted[k])]
    if len(heard) < min_share * len(quoted):
        return None
    found: list[int] = []
    for start in starts:
        end = start + len(asked)
        left = max((k for k in heard if k < start), default=None)
        right = min((k for k in heard if k >= end), default=None)
        span: list[int] = []
        if left is not None and right is not None and right - left - 1 <= len(asked) + _PLACE_REACH:
            low, high = placed[left], placed[right]
            assert low is not None and high is not None
            if high - low == right - left:  # one recognised word for each quoted word between the anchors
                span = list(range(low + start - left, low + end - left))
            elif right - left - 1 == len(asked) and high - low - 1 <= len(asked) + 1:
                span = list(range(low + 1, high))  # the asked word alone between them
        elif (left == start - 1 and end == len(quoted)) or (right == end and start == 0):
            inside = [placed[k] for k in range(start, end)]
            span = [j for j in inside if j is not None] if None not in inside else []
        for i in sorted({owner[j] for j in span}):
            if i not in found:
                found.append(i)
    if not found:
        return None
    shown = " ".join(str(entries[i].get("word", "")).strip() for i in found)
    return found, f"heard as “{shown}” at its place in the quoted sentence"


Stress = tuple[float | None, float | None, str]  # (prominence, how far behind the answer's focus, what was read)


def _stressed(target: str, quoted: str, words: Words, same: SameWord, t: ProsodyThresholds) -> Callable[[dict], Stress]:
    """The asked word's prominence in an answer, and how far it lies below the answer's most prominent other word
    (negative: it leads them all)."""
    asked = words(target)
    sentence = words(quoted)

    def read(section: dict) -> Stress:
        entries = section.get("words") or []
        runs = occurrences(entries, asked, words, same)
        heard = ""
        if not runs:
            place = by_place(entries, sentence, asked, words, same, t.place_min_share)
            if place is None:
                return None, None, f"“{target}” not among the recognised words"
            runs, heard = [place[0]], f" {place[1]}"
        scored = {i: entries[i]["prominence"] for run in runs for i in run if entries[i].get("prominence") is not None}
        if not scored:
            reasons = sorted({str(entries[i].get("reason") or "no reason recorded") for run in runs for i in run})
            return None, None, f"“{target}”{heard} prominence unmeasured ({'; '.join(reasons)})"
        best = max(scored, key=lambda i: scored[i])
        value = float(scored[best])
        others = [e["prominence"] for i, e in enumerate(entries) if i != best and e.get("prominence") is not None]
        behind = max(others) - value if others else None
        rank = f"rank {1 + sum(p > value for p in others)} of {len(others) + 1} words"
        if behind is not None and behind > 0:
            rank += f", {behind:.2f} below the most prominent"
        return value, behind, f"“{target}”{heard} prominence {value:.2f} ({rank})"

    return read


def _emphasis(target: str, quoted: str, t: ProsodyThresholds, words: Words, same: SameWord) -> ProsodyCue:
    """Met where the asked word's prominence is at least `emphasis_min_prominence` and no more than
    `emphasis_max_behind` below the answer's most prominent other word; its margin is the nearer limit's distance
    when met, the further one's when not."""
    read = _stressed(target, quoted, words, same, t)

    def limits(bp: dict | None) -> tuple[list[tuple[bool, float]] | None, str]:
        """Each limit's (met, distance in margin units), None where unmeasured; and what was read."""
        section, why = shown_section(bp)
        if section is None:
            return None, why or "prosody unmeasured"
        value, behind, text = read(section)
        if value is None:
            return None, text
        met = [(value >= t.emphasis_min_prominence, _distance(value, "emphasis_min_prominence", t))]
        if behind is not None:
            met.append((behind <= t.emphasis_max_behind, _distance(behind, "emphasis_max_behind", t)))
        return met, text

    def check(bp: dict | None) -> tuple[bool | None, str]:
        met, text = limits(bp)
        return (None if met is None else all(ok for ok, _ in met)), text

    def margin(bp: dict | None) -> float | None:
        met, _ = limits(bp)
        if met is None:
            return None
        if all(ok for ok, _ in met):
            return min(distance for _, distance in met)
        return max(distance for ok, distance in met if not ok)

    def better(bp1: dict | None, bp2: dict | None) -> tuple[str | None, str, float | None]:
        (v1, _, _), (v2, _, _) = (read(shown_section(bp)[0] or {}) for bp in (bp1, bp2))
        if v1 is None or v2 is None:
            return None, f"“{target}”: no lead measured", None
        lead = abs(v1 - v2)
        distance = _distance(lead, "emphasis_clear_lead", t)
        if lead >= t.emphasis_clear_lead:
            winner = "1" if v1 > v2 else "2"
            return winner, f"“{target}” stands out {lead:.2f} more in response {winner}", distance
        return None, f"“{target}” stands out alike ({lead:.2f} apart)", distance

    return ProsodyCue(f"stress on “{target}”", check, margin, better, covers=frozenset({"emphasis"}))


# -- how the answer ends ----------------------------------------------------------------------------

_QUESTION = re.compile(
    r"\b(?:as|like)\s+(?:a\s+|if\s+asking\s+a\s+)?question\b|\bquestioning(?:ly)?\b|"
    r"\b(?:rising|upward)\s+(?:intonation|inflection|tone)\b|\bend(?:ing|s)?\s+(?:on|with)\s+a\s+ris(?:e|ing)\b"
)
_STATEMENT = re.compile(
    r"\b(?:as|like)\s+a\s+statement\b|\b(?:falling|downward)\s+(?:intonation|inflection|tone)\b|"
    r"\bdeclarative(?:ly)?\b|\bend(?:ing|s)?\s+(?:on|with)\s+a\s+fall(?:ing)?\b"
)
_NEGATED = re.compile(r"(?:\bnot|n't|\brather\s+than|\binstead\s+of)\s+(?:\w+\s+){0,2}$")


def _asked(pattern: re.Pattern[str], text: str) -> bool:
    """The pattern is asked for, not refused ("a statement, not a question")."""
    return any(not _NEGATED.search(text[: m.start()]) for m in pattern.finditer(text))


def _final_change(section: dict) -> Reading:
    phrases = [p for p in section.get("phrases") or [] if isinstance(p, dict)]
    if not phrases:
        return None, "no phrase"
    last = phrases[-1]
    change = last.get("final_change_st")
    if not isinstance(change, (int, float)):
        return None, f"final contour unmeasured ({last.get('reason') or 'no reason recorded'})"
    return float(change), f"ends {last.get('final_contour')} {change:+.1f} st"


# -- pauses between words -------------------------------------------------------------------------------

_EACH_WORD = re.compile(
    r"\bpaus(?:e|es|ing)\b[^.?!]{0,30}?\b(?:after|between)\s+(?:each|every)\s+(?:single\s+)?word\b|"
    r"\bpaus(?:e|es|ing)\s+between\s+(?:the\s+)?words\b|\bword\s+by\s+word\b|\bone\s+word\s+at\s+a\s+time\b"
)


def _paused_share(section: dict) -> Reading:
    count = len(section.get("words") or [])
    if count < 2:
        return None, f"{count} word(s): no boundary between words"
    paused = {p.get("after_word") for p in section.get("pauses") or [] if isinstance(p, dict)}
    share = len({i for i in paused if isinstance(i, int) and 0 <= i < count - 1}) / (count - 1)
    return share, f"pauses after {share:.0%} of {count - 1} word boundaries"


# -- changes along the answer ----------------------------------------------------------------------------

_LOUDER = re.compile(
    r"\b(?:get|gets|getting|grow|grows|growing|become|becomes|becoming|go|goes|going|end|ends|ending)\s+"
    r"(?:\w+\s+)?louder\b|\blouder\s+and\s+louder\b|\bcrescendo\b|"
    r"\b(?:increas|rais)(?:e|es|ing)\s+(?:the\s+|your\s+)?volume\b|"
    r"\b(?:quiet|quietly|soft|softly|whisper\w*)\b[^.?!]{0,40}?\b(?:then|and|to|into)\b[^.?!]{0,20}?\bloud(?:er|ly)?\b"
)
_QUIETER = re.compile(
    r"\b(?:get|gets|getting|grow|grows|growing|become|becomes|becoming|go|goes|going|end|ends|ending)\s+"
    r"(?:\w+\s+)?(?:quieter|softer)\b|\b(?:quieter\s+and\s+quieter|softer\s+and\s+softer)\b|"
    r"\bfad(?:e|es|ing)\s+(?:out|away)\b|\b(?:decrescendo|diminuendo)\b|"
    r"\b(?:lower|lowers|lowering|decreas(?:e|es|ing))\s+(?:the\s+|your\s+)?volume\b|"
    r"\b(?:loud|loudly)\b[^.?!]{0,40}?\b(?:then|and|to|into)\b[^.?!]{0,20}?\b(?:quiet\w*|soft\w*|whisper\w*)\b"
)
_HIGHER = re.compile(
    r"\b(?:get|gets|getting|go|goes|going|climb|climbs|climbing)\s+(?:\w+\s+)?higher\b|\bhigher\s+and\s+higher\b|"
    r"\b(?:rais|increas)(?:e|es|ing)\s+(?:the\s+|your\s+)?pitch\b|\bpitch\s+(?:rises|rising|goes\s+up)\b"
)
_LOWER = re.compile(
    r"\b(?:get|gets|getting|go|goes|going|drop|drops|dropping|sink|sinks|sinking)\s+(?:\w+\s+)?lower\b|"
    r"\blower\s+and\s+lower\b|\b(?:lower|lowers|lowering|decreas(?:e|es|ing))\s+(?:the\s+|your\s+)?pitch\b|"
    r"\bpitch\s+(?:falls|falling|drops|dropping|goes\s+down)\b"
)
# Words these rules read that cues.py would otherwise take for a manner no rule measures ("say it, slowing down
# gradually"; "say it questioningly").
MANNER_WORDS = frozenset({"gradually", "progressively", "steadily", "increasingly", "questioningly", "declaratively"})


def _change(key: str, sign: float, unit: str) -> Callable[[dict], Reading]:
    def read(section: dict) -> Reading:
        changes = section.get("changes")
        value = changes.get(key) if isinstance(changes, dict) else None
        if not isinstance(value, (int, float)):
            why = (changes or {}).get("reason") if isinstance(changes, dict) else None
            return None, f"change unmeasured ({why or 'no reason recorded'})"
        return sign * float(value), f"last third {value:+.1f} {unit} against the first"

    return read


def prosody_cues(
    text: str, quoted: str, manner: str, t: ProsodyThresholds, words: Words, same: SameWord
) -> list[ProsodyCue]:
    """The prosody requests of an instruction: `text` whole (a word to stress is often quoted), `quoted` its
    words to say and `manner` the rest, as cues.py reads them."""
    manner = manner.lower()
    cues = [_emphasis(target, quoted, t, words, same) for target in stress_targets(text, quoted, words)]
    question, statement = _asked(_QUESTION, manner), _asked(_STATEMENT, manner)
    if question != statement:  # both asked (or neither): nothing to decide on
        name = "question" if question else "statement"
        intonation = frozenset({"intonation"})
        cues.append(_rule(name, _final_change, "question_min_rise_st", t, at_least=question, covers=intonation))
    if _EACH_WORD.search(manner):
        pauses = frozenset({"pauses"})
        cues.append(_rule("pause after each word", _paused_share, "pause_each_min_share", t, covers=pauses))
    level = frozenset({"quiet", "loud"})
    if _LOUDER.search(manner):
        cues.append(_rule("getting louder", _change("loudness_db", 1.0, "dB"), "change_min_db", t, replaces=level))
    elif _QUIETER.search(manner):
        cues.append(_rule("getting quieter", _change("loudness_db", -1.0, "dB"), "change_min_db", t, replaces=level))
    pitch = frozenset({"high pitch", "low pitch"})
    if _HIGHER.search(manner):
        cues.append(_rule("getting higher", _change("pitch_st", 1.0, "st"), "change_min_st", t, replaces=pitch))
    elif _LOWER.search(manner):
        cues.append(_rule("getting lower", _change("pitch_st", -1.0, "st"), "change_min_st", t, replaces=pitch))
    return cues


def lead_margin(cues: list, bp1: dict | None, bp2: dict | None, label: str | None) -> float | None:
    """How far the stressed-word lead sits from the clear lead, where it could decide the label: the winner's
    lead when it named one, the nearest lead from naming one when both are acceptable; else None."""
    if label not in ("1", "2", "both_good"):
        return None
    distances = []
    for cue in cues:
        if isinstance(cue, ProsodyCue) and cue.better is not None:
            winner, _, distance = cue.better(bp1, bp2)
            if distance is not None and (label == "both_good" or winner == label):
                distances.append(distance)
    return min(distances) if distances else None
