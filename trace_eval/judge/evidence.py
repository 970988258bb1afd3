"""Which cues a judge run had: per cue group, how many response clips had it measured, and why not.

Computed once per run from the blueprints of the responses judged and written
to summary.json (`cues`); `judge` prints it and the evaluation reports show it.
Reasons come from the blueprint itself: the extractor's `null_reasons` for the
value, else its status reason (e.g. "weights for emotion2vec_plus_large not
found"), a transcript marked unreliable, or the --drop that hid the group.

    {"clips": 14, "groups": {"emotion": {"used": true, "measured": 0, "missing": 14,
        "reasons": {"weights for emotion2vec_plus_large not found; ...": 14}}, ...},
     "warnings": ["emotion: missing for 14 of 14 clips (100%): weights ..."]}

A group is `used` when the prompt shows it and it is not dropped; a used group
missing for more than `WARN_ABOVE` of the clips is warned about, and so is one
made with stand-in weights for any clip (`standin`: how many).

Where the blueprints record languages, `languages` counts the response clips by language and those heard in
another language than their instruction (`language_summary`), each clip once, as `clips` counts them:

    {"responses": {"es": 12, "fr": 11, "not known": 1}, "instructions": {"es": 12, "fr": 12},
     "differ": 3, "of": 24}
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from trace_eval.judge.cues import transcript_doubt
from trace_eval.judge.languages import ClipLanguage
from trace_eval.judge.unmeasured import extractor_record, unmeasured_reason

__all__ = [
    "CUE_GROUPS",
    "CueGroup",
    "WARN_ABOVE",
    "cue_availability",
    "describe",
    "language_summary",
    "rows",
    "summary_lines",
    "unmeasured_reason",
]

WARN_ABOVE = 0.1  # share of clips missing a used cue group beyond which the run is warned about


@dataclass(frozen=True)
class CueGroup:
    """A family of cues read from one blueprint value, made by one extractor."""

    name: str
    path: tuple[str, ...]  # where the deciding value sits in a blueprint
    extractor: str  # provenance entry that explains a missing value
    drop: str | None  # the --drop group that hides it, None when it cannot be dropped


CUE_GROUPS: tuple[CueGroup, ...] = (
    CueGroup("transcript", ("agent_response",), "asr", None),
    CueGroup("emotion", ("agent_emotion",), "emotion", "emotion"),
    CueGroup("accent", ("agent_accent",), "accent", "accent"),
    CueGroup("quality", ("agent_audio_quality", "P808_Overall_Quality"), "dnsmos", "quality"),
    CueGroup("pitch", ("agent_audio_properties", "Mean_Pitch_Hz"), "pitch", "properties"),
    CueGroup("loudness", ("agent_audio_properties", "Integrated_Loudness_LUFS"), "loudness", "properties"),
    CueGroup("speaking rate", ("agent_audio_properties", "Speech_Rate_WPM"), "rate", "properties"),
    CueGroup("prosody", ("agent_prosody",), "prosody", "prosody"),
)


def _value(blueprint: dict, path: tuple[str, ...]) -> Any:
    value: Any = blueprint
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _missing_reason(group: CueGroup, blueprint: dict | None, drop: tuple[str, ...]) -> str | None:
    """Why `group` is missing from `blueprint` for the judge, None when it is measured."""
    if group.drop is not None and group.drop in drop:
        return f"dropped with --drop {group.drop}"
    if blueprint is None:
        return "no blueprint"
    doubt = transcript_doubt(blueprint) if group.name in ("transcript", "speaking rate") else None
    value = _value(blueprint, group.path)
    if value is not None and value != {} and not doubt:
        return None
    if doubt:
        return doubt
    return unmeasured_reason(blueprint, ".".join(group.path), group.extractor)


def cue_availability(
    blueprints: Iterable[dict | None], shown_keys: Iterable[str], drop: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Per cue group: measured / missing counts over the clips and the reasons, with warnings."""
    clips = list(blueprints)
    shown = set(shown_keys)
    groups: dict[str, Any] = {}
    warnings: list[str] = []
    for group in CUE_GROUPS:
        reasons = Counter(r for r in (_missing_reason(group, bp, drop) for bp in clips) if r is not None)
        missing = sum(reasons.values())
        used = group.path[0] in shown and (group.drop is None or group.drop not in drop)
        # Stand-in weights (trace_eval/stage1/standins.py) give values that look like cues and are random.
        standin = sum(1 for bp in clips if bp and (extractor_record(bp, group.extractor) or {}).get("standin"))
        groups[group.name] = {
            "used": used,
            "measured": len(clips) - missing,
            "missing": missing,
            "reasons": dict(reasons.most_common()),
            "standin": standin,
        }
        if used and standin:
            warnings.append(
                f"{group.name}: made with stand-in weights for {standin} of {len(clips)} clips "
                "(random weights from scripts/make_standin_models.py): not cues"
            )
        if used and clips and missing > WARN_ABOVE * len(clips):
            warnings.append(
                f"{group.name}: missing for {missing} of {len(clips)} clips "
                f"({missing / len(clips):.0%}): {_short(reasons.most_common(1)[0][0])}"
            )
    return {"clips": len(clips), "groups": groups, "warnings": warnings}


def _code(language: ClipLanguage | None) -> str:
    if language is None:
        return "not recorded"
    return language.code or "not known"


def language_summary(clips: Iterable[tuple[str, ClipLanguage | None, dict | None]]) -> dict[str, Any] | None:
    """Over (response clip, its instruction's language, its blueprint) per answer judged: the response clips and
    their instructions counted by language, and the response clips heard in another language than their
    instruction. A clip is counted once however many pairs it is in (with the `all` schedule every answer is in
    as many pairs as there are other systems), as `cue_availability` counts clips. None when no clip records a
    language (blueprints made before languages were)."""
    responses: Counter[str] = Counter()
    instructions: Counter[str] = Counter()
    differ = 0
    seen: set[tuple[str, str | None]] = set()
    for clip, instruction, blueprint in clips:
        key = (clip, instruction.code if instruction else None)
        if key in seen:
            continue
        seen.add(key)
        heard = ClipLanguage.of(blueprint)
        responses[_code(heard)] += 1
        instructions[_code(instruction)] += 1
        differ += bool(instruction and heard and instruction.code and heard.code and instruction.code != heard.code)
    if not responses or set(responses) | set(instructions) == {"not recorded"}:
        return None
    return {
        "responses": dict(responses.most_common()),
        "instructions": dict(instructions.most_common()),
        "differ": differ,
        "of": sum(responses.values()),
    }


def _short(reason: str) -> str:
    """The first clause of a reason: what happened, without the long fix that follows it."""
    return reason.split(";")[0].split(". To fix")[0].strip()


def rows(cues: dict[str, Any]) -> list[tuple[str, str]]:
    """(cue group, "0 of 23 clips: weights for emotion2vec_plus_large not found") per group."""
    found = []
    for name, group in cues.get("groups", {}).items():
        text = f"{group['measured']} of {cues['clips']} clips"
        if group["missing"]:
            text += ": " + "; ".join(
                _short(reason) + (f" ({n})" if n != group["missing"] else "") for reason, n in group["reasons"].items()
            )
        if not group.get("used"):
            text += " (not shown to this judge)"
        found.append((name, text))
    languages = cues.get("languages")
    if languages:
        heard = ", ".join(f"{code} {n}" for code, n in languages["responses"].items())
        found.append(
            (
                "language",
                f"response clips {heard}; {languages['differ']} of {languages['of']} in another language than "
                "their instruction's",
            )
        )
    return found


def describe(cues: dict[str, Any]) -> list[str]:
    """One line per cue group: "emotion: 0 of 23 clips: weights for emotion2vec_plus_large not found"."""
    return [f"{name}: {text}" for name, text in rows(cues)]


def summary_lines(summary: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(lines, warnings) that `judge` prints about undetermined verdicts and the cues measured."""
    lines = []
    undetermined = {k: n for k, n in (summary.get("undetermined") or {}).items() if n}
    if undetermined:
        lines.append(
            "  undetermined (a deciding cue missing): " + ", ".join(f"{k} {n}" for k, n in undetermined.items())
        )
    cues = summary.get("cues")
    if cues:
        lines.append(f"  cues measured over {cues['clips']} response clips:")
        lines += [f"    {line}" for line in describe(cues)]
    return lines, [f"warning: {w}" for w in (cues or {}).get("warnings", [])]
