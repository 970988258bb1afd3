"""What the audit page shows, as one JSON object: every item of a benchmark with its audio, its cues as
a listener wants them, each run's verdicts, reasons and fused labels, and the human labels.

The page reads it from data.js (`window.TRACE_VIEW = {...}`): a page opened from disk may load a
script beside it, but not fetch a JSON file.

    version      DATA_VERSION
    title, bench, rubric {name, pairwise, dimensions [{name, title, short, kind}], policies, fuses}
    runs         [{name, path, model, judge, rubric, fusion, swap, samples, created, report, counts}]
    cues         [{key, group, label, unit, kind}]: the cues of a clip, in the order shown
    reasons      [text]: why a value is null, each text once (clips refer to them by index)
    clips        [clip]: one per unique audio (see `clip_data`); items refer to them by index
    pairs        [{id, systems, instruction, responses, human, results, differ}] in manifest order; with a label
                 store (BENCH/labels/), `people` too: annotator -> that person's labels (`human` is the majority);
                 `instruction.expect`: the language the answers are held to, as the judges tell it (null: not
                 known, and no answer is marked off it), `instruction.told`: how, where its text or transcript told it
    leaderboard  what `python -m trace_eval leaderboard` computes for the runs and the human labels, ranked
                 on the overall label (a rubric that does not fuse: its first dimension; see `leaderboard_panel`),
                 or null; leaderboard_note says why null
    problems     [text]: what could not be shown (unreadable result lines, labels out of their space, ...)

A value the page cannot stand behind is null, with its reason beside it; nothing is filled in.
"""

from __future__ import annotations

import math
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fusion import UnknownPolicy
from trace_eval.bench import Benchmark, Pair
from trace_eval.evaluation.bootstrap import DEFAULT_BOOTSTRAP
from trace_eval.evaluation.leaderboard import dimensions_of, matchups, systems_section
from trace_eval.evaluation.records import OVERALL, EvaluationError, HumanLabels, JudgeRun, read_record
from trace_eval.judge import prosody
from trace_eval.judge.evidence import unmeasured_reason
from trace_eval.judge.languages import MIN_PROBABILITY, benchmark_language, instruction_language
from trace_eval.languages import language_name, separates_words
from trace_eval.rubrics import Rubric
from trace_eval.stage1.store import BlueprintStore, get_dotted

__all__ = [
    "CUES",
    "DATA_VERSION",
    "CONTOUR_POINTS",
    "AudioLinks",
    "Cue",
    "Reasons",
    "clip_data",
    "leaderboard_of",
    "leaderboard_panel",
    "page_data",
]

DATA_VERSION = 1
CONTOUR_POINTS = 40  # a contour is drawn as a small plot: more points than this add bytes, not detail
TOP_SCORES = 3  # emotions and accents shown per clip
LEADERBOARD_DIGITS = 5  # significant digits of the leaderboard's numbers: a score to 0.1, a rate to 0.001%


@dataclass(frozen=True)
class Cue:
    """One cue as the page shows it, and where it comes from in a blueprint."""

    key: str  # its name in the page data
    group: str  # the heading it is shown under
    label: str
    path: str  # dotted blueprint key
    extractor: str  # the provenance entry that says why it is null
    unit: str = ""
    kind: str = "number"  # number | contour (values over equal stretches of the clip) | scores ({label: score})
    digits: int = 2
    scale: float = 1.0  # shown as value * scale (a fraction as a percentage)
    range: tuple[float, float] | None = None  # the scale's ends, for a number drawn as a bar


_Q, _PROPS, _VOICE = "agent_audio_quality.", "agent_audio_properties.", "agent_voicing."
_DNSMOS, _MOS = "Quality (DNSMOS, 1-5)", (1.0, 5.0)
CUES: tuple[Cue, ...] = (
    Cue("p808", _DNSMOS, "P.808 overall", f"{_Q}P808_Overall_Quality", "dnsmos", range=_MOS),
    Cue("sig", _DNSMOS, "signal", f"{_Q}DNSMOS_Personalized_Signal_Quality", "dnsmos", range=_MOS),
    Cue("bak", _DNSMOS, "background", f"{_Q}DNSMOS_Personalized_Background_Quality", "dnsmos", range=_MOS),
    Cue("ovrl", _DNSMOS, "overall", f"{_Q}DNSMOS_Personalized_Overall_Quality", "dnsmos", range=_MOS),
    Cue("pitch", "Pitch", "mean", f"{_PROPS}Mean_Pitch_Hz", "pitch", "Hz", digits=0),
    Cue("pitch_sd", "Pitch", "spread", f"{_PROPS}Std_Dev_Pitch_Hz", "pitch", "Hz", digits=0),
    Cue("pitch_range", "Pitch", "range", f"{_PROPS}Pitch_Range_Semitones", "pitch", "semitones", digits=1),
    Cue("pitch_contour", "Pitch", "contour", f"{_PROPS}Full_Pitch_Contour_Hz", "pitch", "Hz", "contour", 0),
    Cue("loudness", "Loudness", "integrated", f"{_PROPS}Integrated_Loudness_LUFS", "loudness", "LUFS", digits=1),
    Cue("loudness_sd", "Loudness", "spread", f"{_PROPS}Std_Dev_Loudness_LUFS", "loudness", "LU", digits=1),
    Cue(
        "loudness_contour",
        "Loudness",
        "contour",
        f"{_PROPS}Full_Loudness_Contour_LUFS",
        "loudness",
        "LUFS",
        "contour",
        1,
    ),
    Cue("speech_rate", "Pace", "speech rate", f"{_PROPS}Speech_Rate_WPM", "rate", "words/min", digits=0),
    Cue(
        "articulation_rate",
        "Pace",
        "articulation rate",
        f"{_PROPS}Articulation_Rate_WPM",
        "rate",
        "words/min",
        digits=0,
    ),
    Cue("syllable_rate", "Pace", "syllable rate", f"{_VOICE}Syllable_Rate_Per_S", "voicing", "/s", digits=1),
    Cue("pace_contour", "Pace", "pace", f"{_PROPS}Pace_Contour_WPM", "rate", "words/min", "contour", 0),
    Cue("pauses", "Pauses", "pauses", f"{_VOICE}Pause_Count", "voicing", digits=0),
    Cue("pause_total", "Pauses", "paused", f"{_VOICE}Pause_Total_S", "voicing", "s"),
    Cue("longest_pause", "Pauses", "longest", f"{_VOICE}Longest_Pause_S", "voicing", "s"),
    Cue("voiced", "Pauses", "voiced", f"{_VOICE}Voiced_Fraction", "voicing", "% of the clip", digits=0, scale=100),
    Cue("emotion", "Emotion", "emotion", "agent_emotion", "emotion", kind="scores"),
    Cue("accent", "Accent", "accent", "agent_accent", "accent", kind="scores"),
)
_TRANSCRIPT_QUALITY = ("avg_logprob", "compression_ratio", "no_speech_prob", "temperature")


class Reasons:
    """Why values are null, each text kept once: one missing model explains a cue of every clip."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self._index: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        if text not in self._index:
            self._index[text] = len(self.texts)
            self.texts.append(text)
        return self._index[text]


class AudioLinks:
    """Where the page finds each audio file: a path relative to the page, or a copy beside it.

    A file that does not exist gets no player, only the reason, so every player of the page plays.
    """

    def __init__(self, bench_root: Path, out: Path, copy: bool):
        self.root = bench_root
        self.out = out
        self.copy = copy
        self.copied: set[Path] = set()

    def link(self, relative: str | None) -> dict[str, str] | None:
        """{"src": url relative to the page} or {"missing": why}; None when the item has no such audio."""
        if not relative:
            return None
        source = self.root / relative
        if not source.is_file():
            return {"missing": f"{relative}: file not found in {self.root}"}
        if not self.copy:
            return {"src": _url(os.path.relpath(os.path.abspath(source), os.path.abspath(self.out)))}
        # Kept under its own relative path; a path leaving the benchmark folder stays inside audio/.
        inside = Path(*(part if part != ".." else "_up" for part in Path(relative).parts))
        target = self.out / "audio" / inside
        if target.resolve() != source.resolve():
            if not _same_file(source, target):  # copied before: a page written again copies only what changed
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)
            self.copied.add(target)
        return {"src": _url(os.path.relpath(target, self.out))}


def _same_file(source: Path, copy: Path) -> bool:
    """Whether `copy` is a copy2 of `source` as it is now (same size and modification time)."""
    if not copy.is_file():
        return False
    a, b = source.stat(), copy.stat()
    return a.st_size == b.st_size and a.st_mtime_ns == b.st_mtime_ns


def _url(path: str) -> str:
    """A relative file path as a URL path: each segment escaped ("#", "?", spaces)."""
    return "/".join(quote(part) for part in Path(path).as_posix().split("/"))


def _number(value: Any, digits: int) -> float | int | None:
    """`value` rounded to `digits` places when it is a finite number, else None (it measures nothing)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return round(value) if digits == 0 else round(float(value), digits)


def downsample(values: list[Any], points: int = CONTOUR_POINTS, digits: int = 1) -> list[float | None]:
    """At most `points` values, each the mean of an equal run of the contour (None where a run has no
    measured value: an unvoiced stretch stays a gap)."""
    values = [_number(v, 6) for v in values]
    if len(values) > points:
        runs = [values[len(values) * i // points : len(values) * (i + 1) // points] for i in range(points)]
        values = [None if not (kept := [v for v in run if v is not None]) else sum(kept) / len(kept) for run in runs]
    return [None if v is None else _number(v, digits) for v in values]


def _top(scores: Any, digits: int = 3) -> list[list[Any]] | None:
    if not isinstance(scores, dict) or not scores:
        return None
    ranked = sorted(
        ((str(k), v) for k, v in scores.items() if _number(v, digits) is not None), key=lambda kv: kv[1], reverse=True
    )
    return [[label, _number(score, digits)] for label, score in ranked[:TOP_SCORES]] or None


def clip_data(blueprint: dict, reasons: Reasons, with_cues: bool = True) -> dict[str, Any]:
    """One clip as the page shows it (an instruction's without its cues: the page shows what was said).

    duration     seconds
    words        the recognised words; null when the recogniser gave no word times
    times        their times (see `word_times`)
    transcript   the text when there are no word times (else the words say it), null when not transcribed
    transcript_quality  {reliable, reason, avg_logprob, compression_ratio, no_speech_prob, temperature} or null
    language     {code, name, probability, source} or null (not recorded, or not told: `why` says why)
    spaced       whether the language separates words with spaces (else the words are joined without them)
    cues         {cue key: value} (see CUES): numbers rounded, contours downsampled, scores the top 3;
                 null without `with_cues`
    prosody      how the words were said (see `prosody_data`), null without `with_cues` or without the section
    why          {key: index into `reasons`} for every null cue, and for `words`, `transcript_quality`, `prosody`
    """
    why: dict[str, int] = {}
    cues: dict[str, Any] = {}
    for cue in CUES if with_cues else ():
        raw = get_dotted(blueprint, cue.path)
        value: Any
        if cue.kind == "contour":
            value = downsample(raw, digits=cue.digits) if isinstance(raw, list) and raw else None
            value = value if value and any(v is not None for v in value) else None
        elif cue.kind == "scores":
            value = _top(raw)
        else:
            number = _number(raw, 6)
            value = None if number is None else _number(number * cue.scale, cue.digits)
        cues[cue.key] = value
        if value is None:
            why[cue.key] = reasons(unmeasured_reason(blueprint, cue.path, cue.extractor))
    found = [w for w in blueprint.get("words") or [] if isinstance(w, dict)]
    words, times = ([str(w.get("word", "")).strip() for w in found], word_times(found)) if found else (None, None)
    if not found:
        why["words"] = reasons(
            unmeasured_reason(blueprint, "words", "asr")
            if blueprint.get("agent_response") is None
            else "the recogniser gave no word times"
        )
    quality = blueprint.get("transcript_quality")
    if isinstance(quality, dict):
        quality = {
            "reliable": bool(quality.get("reliable")),
            "reason": quality.get("reason"),
            **{k: _number(quality.get(k), 3) for k in _TRANSCRIPT_QUALITY},
        }
    else:
        quality = None
        why["transcript_quality"] = reasons(unmeasured_reason(blueprint, "transcript_quality", "asr"))
    recorded = blueprint.get("language")
    recorded = recorded if isinstance(recorded, dict) else {}
    code = str(recorded["code"]) if recorded.get("code") else None
    language = None
    if code is not None:
        language = {k: recorded.get(k) for k in ("code", "probability", "source")} | {"name": language_name(code)}
    elif "language" in blueprint:
        why["language"] = reasons(unmeasured_reason(blueprint, "language", "asr"))
    said = None
    if with_cues:
        said, missing = prosody_data(blueprint, len(words or ()))
        if said is None:
            why["prosody"] = reasons(missing or "no prosody")
    return {
        "duration": _number(blueprint.get("duration_s"), 2),
        "words": words,
        "times": times,
        "transcript": None if words else blueprint.get("agent_response"),
        "transcript_quality": quality,
        "cues": cues if with_cues else None,
        "language": language,
        "spaced": separates_words(code) if code else True,
        "prosody": said,
        "why": why,
    }


def prosody_data(blueprint: dict, words: int) -> tuple[dict[str, Any] | None, str | None]:
    """How the clip's words were said, beside `words` (one entry per word, in their order), or (None, why):

    prominence  [per word: how far it stands out, standard deviations above the answer's typical word, or null]
    prominent   [indices of the words the extractor found prominent]
    phrases     [[first word, last word, rising | falling | level | null, final change in semitones or null]]
    pauses      [[after word, seconds]]
    changes     the last third against the first, in words ("louder by 6.1 dB, ..."), or null
    """
    section, why = prosody.section_of(blueprint)
    if section is None:
        return None, why
    entries = section.get("words") or []
    if len(entries) != words:
        return None, f"prosody has {len(entries)} words, the transcript {words}: they cannot be shown together"
    phrases = [
        [p.get("first_word"), p.get("last_word"), p.get("final_contour"), _number(p.get("final_change_st"), 1)]
        for p in section.get("phrases") or []
        if isinstance(p, dict)
    ]
    pauses = [
        [p.get("after_word"), _number(p.get("duration_s"), 2)]
        for p in section.get("pauses") or []
        if isinstance(p, dict)
    ]
    return {
        "prominence": [_number((e or {}).get("prominence"), 2) for e in entries],
        "prominent": sorted(prosody.prominent_indices(section)),
        "phrases": phrases,
        "pauses": pauses,
        "changes": prosody.changes_text(section.get("changes")),
    }, None


def word_times(words: list[dict]) -> list[int | None]:
    """Word times in centiseconds, two numbers a word: from the end of the word before (0 at the start of
    the clip) to its start, then its length. Mostly small numbers: a long answer's times stay short.
    A word without times gets [null, null]."""
    times: list[int | None] = []
    end = 0
    for word in words:
        start, stop = word.get("start"), word.get("end")
        if not isinstance(start, (int, float)) or not isinstance(stop, (int, float)):  # JSON has no NaN
            times += [None, None]
            continue
        start, stop = round(start * 100), round(stop * 100)
        times += [start - end, stop - start]
        end = stop
    return times


def _short_name(title: str) -> str:
    """ "Voice Quality" -> "VQ", "Content" -> "C"."""
    return "".join(word[0] for word in title.split() if word[:1].isalpha()).upper() or title[:2]


def _disagrees(label: Any, human: Any) -> bool:
    """Whether a judge's label differs from the human one; a human score (often a mean of raters) is
    matched by the nearest whole score."""
    if label is None or human is None:
        return False
    if isinstance(human, (int, float)) and isinstance(label, (int, float)):
        return abs(label - human) >= 0.5
    return label != human


def _consistency(raw: dict, verdicts: dict[str, Any], several_samples: bool) -> dict[str, Any] | None:
    """Per dimension: whether both presentation orders agreed (--swap), and how many of the answers gave
    the final label (--samples N)."""
    found: dict[str, Any] = {}
    orders = raw.get("orders") or {}
    if isinstance(orders.get("original"), dict) and isinstance(orders.get("swapped"), dict):
        found["swap"] = {d: orders["original"].get(d) == orders["swapped"].get(d) for d in verdicts}
    answers = [
        s
        for s in raw.get("samples") or []
        if isinstance(s, dict) and s.get("status") == "ok" and isinstance(s.get("verdicts"), dict)
    ]
    if several_samples and answers:
        found["samples"] = {
            d: [sum(a["verdicts"].get(d) == label for a in answers), len(answers)] for d, label in verdicts.items()
        }
    return found or None


def run_result(raw: dict, run: JudgeRun, rubric: Rubric, human: dict[str, Any]) -> dict[str, Any]:
    """One run's result for one item: status, verdicts (null where undetermined, with why), the fused
    label under every policy, the dimensions where it disagrees with people, its reasoning, and how
    consistent the answers were."""
    record = read_record(raw, rubric)
    verdicts = record.verdicts or {}
    fused = rubric.fusion.fuse_all(verdicts) if rubric.fusion and record.verdicts is not None else {}
    policy = run.policy if run.policy in fused else None
    overall = fused[policy] if policy else record.overall
    mine = {**verdicts, **({OVERALL: overall} if rubric.fusion else {})}
    result: dict[str, Any] = {
        "status": record.status,
        "reason": record.reason,
        "verdicts": record.verdicts,
        "undetermined": record.undetermined,
        "overall": overall if rubric.fusion else None,
        "fused": fused,
        "disagree": [d for d, label in mine.items() if _disagrees(label, human.get(d))],
        "reasoning": raw.get("reasoning"),
        "consistency": _consistency(raw, verdicts, int(run.config.get("samples") or 1) > 1),
        "cache_hit": raw.get("cache_hit"),
        "latency_s": _number(raw.get("latency_s"), 2),
        "cost_usd": _number(raw.get("cost_usd"), 6),
        # How sure the verdict is (trace_eval/judge/confidence.py) and, in a cascade, which judge decided it.
        "confidence": {k: _number(v, 3) for k, v in (raw.get("confidence") or {}).items()} or None,
        "confidence_source": raw.get("confidence_source"),
        "decided_by": (raw.get("cascade") or {}).get("decided_by"),
        "cascade": bool(raw.get("cascade")),
    }
    if record.status != "ok" or raw.get("reasoning") is None:
        result["raw"] = raw.get("raw")  # the answer that could not be used is the evidence
    return result


def _differ(results: list[dict | None], keys: list[str]) -> list[str]:
    """Where the runs' results for one item differ: "status", or the labels they gave."""
    present = [r for r in results if r is not None]
    if len(present) < 2:
        return []
    if len({r["status"] for r in present}) > 1:
        return ["status"]
    if present[0]["status"] != "ok":
        return []
    labels = [{**(r["verdicts"] or {}), OVERALL: r["overall"]} for r in present]
    return [k for k in keys if len({repr(item.get(k)) for item in labels}) > 1]


class _Clips:
    """The clips the page holds, one per unique audio, and why an item's clip has no blueprint."""

    def __init__(self, bench: Benchmark, reasons: Reasons):
        self.store = BlueprintStore(bench.root)
        self.failures = self.store.recorded_failures()
        self.reasons = reasons
        self.clips: list[dict] = []
        self.numbers: dict[str, int] = {}  # audio sha256 -> index in `clips`
        self.bench = bench

    def of(self, relative: str | None, audio: dict | None, with_cues: bool = True) -> dict[str, Any] | None:
        """{"audio": link, "clip": index in `clips`} or {"audio": link, "clip": None, "why": reason index}."""
        if not relative:
            return None
        if not (self.bench.root / relative).is_file():
            return {"audio": audio, "clip": None, "why": self.reasons(f"{relative}: file not found")}
        blueprint = self.store.get_by_path(relative)
        if blueprint is None:
            failed = self.failures.get(relative)
            why = (
                f"its blueprint failed: {failed}"
                if failed
                else f"no blueprint stored for it; run: python -m trace_eval blueprints {self.bench.root}"
            )
            return {"audio": audio, "clip": None, "why": self.reasons(why)}
        sha = blueprint["provenance"]["audio_sha256"]
        if sha not in self.numbers:
            self.numbers[sha] = len(self.clips)
            self.clips.append(clip_data(blueprint, self.reasons, with_cues))
        elif with_cues and self.clips[self.numbers[sha]]["cues"] is None:  # an instruction's clip is an answer too
            self.clips[self.numbers[sha]] = clip_data(blueprint, self.reasons)
        return {"audio": audio, "clip": self.numbers[sha]}


def _systems(pair: Pair) -> list[str | None]:
    if pair.pointwise:
        return [pair.extra.get("model")]
    return [pair.model_a, pair.model_b]


def _relative(path: Path, out: Path) -> str:
    """`path` relative to the folder the page is written in."""
    return Path(os.path.relpath(Path(path).resolve(), Path(out).resolve())).as_posix()


def _describe_run(run: JudgeRun, out: Path) -> dict[str, Any]:
    config = run.config
    report = run.path / "evaluation" / "report.html"
    counts: dict[str, int] = {}
    for raw in run.raws.values():
        counts[str(raw.get("status"))] = counts.get(str(raw.get("status")), 0) + 1
    return {
        "name": run.name,
        "path": _relative(run.path, out),  # relative to the page's folder: no path of this machine in the page
        "model": config.get("model"),
        "judge": config.get("judge"),
        "prompt_version": config.get("prompt_version"),
        "rubric": config.get("rubric"),
        "fusion": run.policy,
        "swap": bool(config.get("swap")),
        "samples": int(config.get("samples") or 1),
        "drop": config.get("drop") or [],
        "created": config.get("created"),
        "report": _url(os.path.relpath(report.resolve(), out.resolve())) if report.is_file() else None,
        "counts": counts,
    }


def leaderboard_of(
    runs: list[JudgeRun], human: HumanLabels, rubric: Rubric, bench: Path | None = None
) -> tuple[dict | None, str | None]:
    """The leaderboard panel's object, or None and why there is none.

    It is what `python -m trace_eval leaderboard RUNDIR ...` computes (leaderboard.json, same bootstrap
    settings, each run fused under its own policy), ranked on the first dimension the rubric ranks on
    (TRACE: the overall label), without what the panel does not show (see `leaderboard_panel`).
    """
    try:
        board = systems_section(runs, human, rubric, None, DEFAULT_BOOTSTRAP, bench, by=dimensions_of(rubric)[:1])
    except (EvaluationError, UnknownPolicy) as error:  # a run whose fusion policy is unknown or not named
        return None, str(error)
    if board is not None:
        return leaderboard_panel(board), None
    if not dimensions_of(rubric):
        return None, f"the {rubric.name} rubric has no dimension labelled 1, 2, both_good or both_bad to rank on"
    if matchups(human.pair_systems).same_system:
        return None, "no item names two different systems (model_a, model_b)"
    return None, "the items name no systems (model_a, model_b)"


def _significant(value: Any, digits: int = LEADERBOARD_DIGITS) -> Any:
    """Every float in `value` to `digits` significant digits (a score 1012.3, a rate 0.25974)."""
    if isinstance(value, float):
        return float(f"{value:.{digits}g}")
    if isinstance(value, dict):
        return {k: _significant(v, digits) for k, v in value.items()}
    if isinstance(value, list):
        return [_significant(v, digits) for v in value]
    return value


def leaderboard_panel(board: dict[str, Any]) -> dict[str, Any]:
    """leaderboard.json's object as the panel shows it: without the win matrices, the conventions in words,
    the lists of item ids and what the page holds elsewhere (run paths and problems); left-out counts only
    where not 0; numbers to LEADERBOARD_DIGITS significant digits. A few KB for a few systems and runs."""

    def nonzero(counts: dict[str, int]) -> dict[str, int]:
        return {reason: n for reason, n in counts.items() if n}

    sources = []
    for source in board["sources"]:
        tables = {
            key: {
                "pairs": table["pairs"],
                "left_out": nonzero(table["left_out"]),
                "fit": {k: table["fit"].get(k) for k in ("defined", "reason", "prior")},
                "systems": [{**row, "left_out": nonzero(row["left_out"])} for row in table["systems"]],
            }
            for key, table in source["tables"].items()
        }
        sources.append(
            {
                "name": source["name"],
                "kind": source["kind"],
                **{k: source[k] for k in ("model", "fusion") if k in source},  # a run's
                "acceptability": source["acceptability"],
                "tables": tables,
            }
        )
    return _significant(
        {
            "version": board["version"],
            "rubric": board["rubric"],
            "by": board["by"],
            "dimensions": board["dimensions"],
            "systems": board["systems"],
            "items": {k: board["items"][k] for k in ("in_benchmark", "ranked", "without_systems", "same_system")},
            "human_labels": board["human_labels"],
            "bootstrap": {k: board["bootstrap"][k] for k in ("resamples", "seed", "confidence")},
            "sources": sources,
            "agreement": board["agreement"],
        }
    )


def page_data(
    runs: list[JudgeRun], bench: Benchmark, rubric: Rubric, human: HumanLabels, links: AudioLinks, out: Path
) -> dict[str, Any]:
    """The page's data object (module docstring) for `runs` of `bench` judged with `rubric`."""
    reasons = Reasons()
    clips = _Clips(bench, reasons)
    keys = list(rubric.names) + ([OVERALL] if rubric.fusion else [])
    problems = [f"{run.name}: {p}" for run in runs for p in run.problems] + list(human.problems)
    known = {pair.id for pair in bench.pairs}
    for run in runs:
        strays = [item for item in run.raws if item not in known]
        if strays:
            problems.append(
                f"{run.name}: {len(strays)} result(s) for items not in {bench.manifest_path.name}, not "
                f"shown: {', '.join(strays[:10])}{' ...' if len(strays) > 10 else ''}"
            )
    pairs = []
    spoken_of = {p.id: clips.store.get_by_path(p.instruction_path) if p.instruction_path else None for p in bench.pairs}
    usual = benchmark_language((p.languages, spoken_of[p.id], p.instruction_text) for p in bench.pairs)
    for pair in bench.pairs:
        labels = human.labels.get(pair.id, {})
        # A written instruction's language is the one the manifest declares (else its clip's, on the page).
        instruction: dict[str, Any] = {
            "text": pair.instruction_text,
            "lang": pair.languages.get("instruction_language"),
        }
        instruction.update(clips.of(pair.instruction_path, links.link(pair.instruction_path), False) or {})
        # The language the answers are held to, told as the judges tell it (declared, detected surely, else read
        # from the text or transcript): null where it is not known, and no answer is marked off its language.
        told = instruction_language(pair.languages, spoken_of[pair.id], pair.instruction_text, benchmark=usual)
        instruction["expect"] = told.code if told is not None and told.trusted(MIN_PROBABILITY) else None
        if told is not None and told.code is not None and told.source in ("text", "transcript"):
            instruction["told"] = told.describe()
        results = [run_result(run.raws[pair.id], run, rubric, labels) if pair.id in run.raws else None for run in runs]
        answers = [pair.audio_path] if pair.pointwise else [pair.audio1_path, pair.audio2_path]
        pairs.append(
            {
                "id": pair.id,
                "systems": _systems(pair),
                "instruction": instruction,
                "responses": [clips.of(path, links.link(path)) or {"audio": None, "clip": None} for path in answers],
                "human": labels,
                "results": results,
                "differ": _differ(results, keys),
            }
        )
        if human.annotators:  # a label store: each person's labels beside the majority in `human`
            pairs[-1]["people"] = {who: got[pair.id] for who, got in human.annotators.items() if pair.id in got}
    board, note = leaderboard_of(runs, human, rubric, bench.root)
    return {
        "version": DATA_VERSION,
        "title": f"{bench.root.name}: {', '.join(run.name for run in runs)}",
        "bench": {
            "path": _relative(bench.root, out),
            "manifest": _relative(bench.manifest_path, out),
            "items": len(bench.pairs),
        },
        "rubric": {
            "name": rubric.name,
            "pairwise": rubric.pairwise,
            "dimensions": [
                {"name": d.name, "title": d.title, "short": _short_name(d.title), "kind": d.labels.kind}
                for d in rubric.dimensions
            ],
            "policies": list(rubric.fusion.policies) if rubric.fusion else [],
            "fuses": rubric.fusion is not None,
        },
        "runs": [_describe_run(run, out) for run in runs],
        "cues": [
            {"key": c.key, "group": c.group, "label": c.label, "unit": c.unit, "kind": c.kind, "range": c.range}
            for c in CUES
        ],
        "reasons": reasons.texts,
        "clips": clips.clips,
        "pairs": pairs,
        "leaderboard": board,
        "leaderboard_note": note,
        "problems": problems,
    }
