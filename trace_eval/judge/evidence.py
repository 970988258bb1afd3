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
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from trace_eval.judge.cues import transcript_doubt

__all__ = [
    "CUE_GROUPS",
    "CueGroup",
    "WARN_ABOVE",
    "cue_availability",
    "describe",
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


def _record(blueprint: dict, extractor: str) -> Any:
    return ((blueprint.get("provenance") or {}).get("extractors") or {}).get(extractor)


def unmeasured_reason(blueprint: dict, key: str, extractor: str) -> str:
    """Why the value at the dotted `key` of `blueprint`, made by `extractor`, is missing: the extractor's
    `null_reasons` for it, else the reason of its status (unavailable, failed)."""
    record = _record(blueprint, extractor)
    if not isinstance(record, dict):
        return f"{extractor} extractor not run"
    reason = (record.get("null_reasons") or {}).get(key)
    if reason:
        return str(reason)
    if record.get("status") != "ok":
        return str(record.get("reason") or f"{extractor} {record.get('status')}")
    return "not measured (no reason recorded)"


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
        standin = sum(1 for bp in clips if bp and (_record(bp, group.extractor) or {}).get("standin"))
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
