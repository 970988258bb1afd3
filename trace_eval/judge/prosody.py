"""Prosody as a reader takes it in: a blueprint's `agent_prosody` section (extractors/prosody.py) in a few lines.

One line per phrase: its words, the prominent ones (the extractor's `prominent_words`) between asterisks, how the
phrase ends (the final pitch movement in semitones) and the pause after it; then what changed from the first
third of the answer to the last. Never a number per frame:

    prominent: *fox* 1.9, *dog* 1.2
    phrase 1 “the quick brown *fox*” falling -3.2 st; pause 0.42 s after “fox”
    phrase 2 “jumps over the lazy *dog.*” level +0.3 st
    last third against the first: louder by 6.1 dB, pitch steady (+0.4 st), slower by 20%

The judge prompt (`prompts.blueprint_view`), `show --prosody` and the audit page all read the section through
this module, so the three say the same thing. A section that is missing or null comes with its reason
(`section_of`), as the extractor recorded it.
"""

from __future__ import annotations

import unicodedata
from typing import Any

from trace_eval.judge.unmeasured import unmeasured_reason

__all__ = [
    "EXTRACTOR",
    "SECTION",
    "changes_text",
    "contour_arrow",
    "marked",
    "phrase_lines",
    "prominent_indices",
    "prompt_lines",
    "readable_lines",
    "section_of",
]

SECTION = "agent_prosody"
EXTRACTOR = "prosody"
ARROWS = {"rising": "↗", "falling": "↘", "level": "→"}


def section_of(blueprint: dict | None) -> tuple[dict | None, str | None]:
    """(the prosody section, None), or (None, why there is none): the extractor's recorded reason (an
    unreliable transcript, no words, a clip too short), or that it never ran on this clip."""
    if blueprint is None:
        return None, "no blueprint"
    section = blueprint.get(SECTION)
    if isinstance(section, dict):
        return section, None
    return None, unmeasured_reason(blueprint, SECTION, EXTRACTOR)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def prominent_indices(section: dict) -> set[int]:
    """The words the extractor found prominent (at least one standard deviation above the answer's typical
    word, the few most prominent), by index."""
    found = set()
    for entry in section.get("prominent_words") or []:
        if isinstance(entry, dict) and isinstance(entry.get("index"), int):
            found.add(entry["index"])
    return found


def marked(word: str) -> str:
    """`word` between asterisks, its punctuation outside them: "fox," -> "*fox*,"."""
    word = word.strip()
    start, end = 0, len(word)
    while start < end and unicodedata.category(word[start]).startswith("P"):
        start += 1
    while end > start and unicodedata.category(word[end - 1]).startswith("P"):
        end -= 1
    if start == end:
        return word
    return f"{word[:start]}*{word[start:end]}*{word[end:]}"


def _bare(word: str) -> str:
    """A word without the punctuation around it, as quoted in a pause ("after “fox”")."""
    return "".join(marked(word).split("*")[1:2]) or word.strip()


def contour_arrow(contour: str | None) -> str:
    """↗ rising, ↘ falling, → level; "" when the ending was not measured."""
    return ARROWS.get(contour or "", "")


def _phrase_words(section: dict, phrase: dict, prominent: set[int]) -> str | None:
    words = section.get("words") or []
    first, last = phrase.get("first_word"), phrase.get("last_word")
    if not isinstance(first, int) or not isinstance(last, int) or not 0 <= first <= last < len(words):
        return None
    shown = []
    for index in range(first, last + 1):
        text = str((words[index] or {}).get("word", "")).strip()
        shown.append(marked(text) if index in prominent else text)
    return " ".join(shown)


def phrase_lines(section: dict) -> list[str]:
    """One line per phrase: `phrase 1 “is it *raining*” rising +4.1 st; pause 0.40 s after “raining”`."""
    prominent = prominent_indices(section)
    pauses: dict[int, float] = {}
    for pause in section.get("pauses") or []:
        duration = _number((pause or {}).get("duration_s"))
        if isinstance((pause or {}).get("after_word"), int) and duration is not None:
            pauses[pause["after_word"]] = duration
    words = section.get("words") or []
    lines = []
    for number, phrase in enumerate(section.get("phrases") or [], start=1):
        if not isinstance(phrase, dict):
            continue
        text = _phrase_words(section, phrase, prominent) or str(phrase.get("text", ""))
        change = _number(phrase.get("final_change_st"))
        contour = phrase.get("final_contour")
        if contour and change is not None:
            ending = f"{contour} {change:+.1f} st"
        else:
            ending = f"ending unmeasured ({phrase.get('reason') or 'no reason recorded'})"
        line = f"phrase {number} “{text}” {ending}"
        last = phrase.get("last_word")
        if isinstance(last, int) and last in pauses and last < len(words):
            line += f"; pause {pauses[last]:.2f} s after “{_bare(str(words[last].get('word', '')))}”"
        lines.append(line)
    return lines


def changes_text(changes: dict | None) -> str | None:
    """The change from the first third of the answer to the last, in words: "louder by 6.1 dB, pitch steady
    (+0.4 st), slower by 20%"; None when nothing was measured (with the reason when one was recorded)."""
    if not isinstance(changes, dict):
        return None
    parts = []
    loudness, pitch, rate = (_number(changes.get(k)) for k in ("loudness_db", "pitch_st", "rate_ratio"))
    if loudness is not None:
        way = changes.get("loudness")
        steady = f"loudness steady ({loudness:+.1f} dB)"
        parts.append(f"{way} by {abs(loudness):.1f} dB" if way in ("louder", "quieter") else steady)
    if pitch is not None:
        way = changes.get("pitch")
        steady = f"pitch steady ({pitch:+.1f} st)"
        parts.append(f"{way} by {abs(pitch):.1f} st" if way in ("higher", "lower") else steady)
    if rate is not None and rate > 0:
        way = changes.get("rate")
        steady = f"pace steady ({rate:.2f}x)"
        parts.append(f"{way} by {abs(rate - 1.0) * 100:.0f}%" if way in ("faster", "slower") else steady)
    if changes.get("reason"):
        parts.append(f"unmeasured: {changes['reason']}")
    return ", ".join(parts) or None


def prompt_lines(section: dict) -> list[str]:
    """The section as the judge reads it: the prominent words, a line per phrase, the change over the answer."""
    lines = []
    words = section.get("words") or []
    ranked = [
        f"*{_bare(str(words[entry['index']].get('word', '')))}* {entry['prominence']:.1f}"
        for entry in section.get("prominent_words") or []
        if isinstance(entry, dict)
        and isinstance(entry.get("index"), int)
        and 0 <= entry["index"] < len(words)
        and _number(entry.get("prominence")) is not None
    ]
    lines.append("prominent: " + (", ".join(ranked) if ranked else "no word stands out"))
    lines += phrase_lines(section)
    change = changes_text(section.get("changes"))
    if change:
        lines.append(f"last third against the first: {change}")
    return lines


def readable_lines(section: dict) -> list[str]:
    """The section for a person at a terminal (`show --prosody`): a line per word with its start and a bar as
    long as it stands out (* prominent), then the prompt's lines."""
    prominent = prominent_indices(section)
    median = _number(section.get("speaker_median_pitch_hz"))
    lines = [f"speaker's median pitch {median:.0f} Hz" if median else "speaker's median pitch unmeasured"]
    lines.append(f"  {'word':<16} {'start':>6}  prominence")
    for index, entry in enumerate(section.get("words") or []):
        word, start, score = (
            str(entry.get("word", "")).strip(),
            _number(entry.get("start")),
            _number(entry.get("prominence")),
        )
        at = "" if start is None else f"{start:.2f}"
        if score is None:
            shown = f"  -     {entry.get('reason') or ''}".rstrip()
        else:
            bar = "█" * max(0, min(12, round(score / 0.25)))
            shown = f"{score:6.2f} {bar}{' *' if index in prominent else ''}"
        lines.append(f"  {word:<16} {at:>6} {shown}".rstrip())
    return lines + prompt_lines(section)
