"""Full-Duplex-Bench's v1 tasks scored on its own sample folders: as its scripts do, or as its definitions mean.

A sample folder holds `input.wav` (the user), `output.wav` (the system), the system's words with times in
`output.json` (`{"text", "chunks": [{"text", "timestamp": [start, end]}]}`, made by the benchmark's recogniser;
compat mode needs it, the default does not: a lab's own outputs before that transcription are samples too)
and the task's annotation: `pause.json` (pause handling), `turn_taking.json` (smooth turn-taking) or
`interrupt.json` (user interruption).

`compat="full-duplex-bench"` gives the numbers the benchmark's own scripts print, quirks included: system speech
anywhere in the output counts as taking the turn, latencies start at the annotation and a negative one counts as 0, the
latency is the first word's start (whatever came before the user's end), and only means are reported.
The default reads the annotations and the session's timeline (both channels' speech activity, with
trace-eval's multilingual words where they were asked for; its turns, answers and barge-ins, defined once in
timeline.py), and computes what the task asks: whether the system took a turn before the user had ended (and
where: before, inside or after the annotated pause), the signed latency from the user's end as heard, how long
the system went on once interrupted and whether it then answered; every figure a distribution or a rate with
its interval. docs/realtime.md lists each difference with a sample where it changes the result.
`compat="flexi"` gives FLEXI's figures on the same folders (flexi.py). The backchannel task, whose samples
hold no annotation but are scored against the benchmark's reference distributions, is backchannel.py's; v1.5's
timing (any folder of two channels, `task="timing"`) is latency_intervals.py's, its behaviour task behaviour.py's.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from trace_eval.sessions import backchannel, behaviour, latency_intervals
from trace_eval.sessions.flexi import flexi_sample, flexi_summary
from trace_eval.sessions.interruption_rating import Rater
from trace_eval.sessions.metrics import distribution, rate
from trace_eval.sessions.samples import (
    TASKS,
    TURN_MAX_WORDS,
    TURN_MIN_S,
    Word,
    read_annotation,
    read_annotations,
    read_json,
    read_words,
    stored_rating,
    task_of,
)
from trace_eval.sessions.segments import Segment
from trace_eval.sessions.session import SessionError, read_session
from trace_eval.sessions.timeline import Timeline, TimelineSettings, make_timeline, words_in

__all__ = [
    "ALL_TASKS",
    "COMPAT",
    "TASKS",
    "Word",
    "read_words",
    "score_sample",
    "score_task",
    "script_pairing",
    "summarise",
    "task_of",
]

COMPAT = ("full-duplex-bench", "flexi")  # whose scripts' figures compat mode gives
# v1's tasks found by their annotation, then those a sample folder does not tell: backchannel (named by a speaker
# of the reference) and v1.5's timing (asked for)
ALL_TASKS = (*TASKS.values(), backchannel.TASK, latency_intervals.TASK, behaviour.TASK)


def score_task(
    root: str | Path,
    task: str | None = None,
    *,
    compat: str | None = None,
    settings: TimelineSettings | None = None,
    latency_s: float = 0.0,
    reference: dict[str, list[float]] | None = None,
    rater: Rater | None = None,
    tagger: behaviour.Tagger | None = None,
) -> dict[str, Any]:
    """Every sample folder under `root` (those holding an `output.wav`), scored and summarised; a folder
    without its task's annotation is refused, named. `reference`: the backchannel task's distributions
    (backchannel.read_reference): the samples are that task's. `rater`: rates the answers after interruptions
    (interruption_rating.py) where compat would read the stored ratings. `tagger`: the behaviour task's model."""
    root = Path(root)
    folders = sorted(p.parent for p in root.rglob("output.wav"))
    if not folders:
        raise SessionError(f"{root}: no sample folder (none holds an output.wav)")
    if reference is not None:
        task = backchannel.TASK
    tasks = {task or task_of(folder) for folder in folders}
    if len(tasks) > 1:
        raise SessionError(f"{root}: samples of several tasks ({', '.join(sorted(tasks))}): score one task's folder")
    (task,) = tasks
    samples = [
        score_sample(
            f,
            task,
            compat=compat,
            settings=settings,
            latency_s=latency_s,
            reference=reference,
            rater=rater,
            tagger=tagger,
        )
        for f in folders
    ]
    summary = summarise(task, samples, compat=compat)
    return {"task": task, "mode": compat or "default", "summary": summary, "samples": samples}


def summarise(task: str, samples: list[dict[str, Any]], *, compat: str | None = None) -> dict[str, Any]:
    """The figures over a task's scored samples: a benchmark's means (compat), or distributions and rates."""
    if task == backchannel.TASK:
        return backchannel.summarise(samples, compat=compat)
    if task == latency_intervals.TASK:
        return latency_intervals.summarise(samples, compat=compat)
    if task == behaviour.TASK:
        return behaviour.summarise(samples, compat=compat)
    if compat == "flexi":
        return flexi_summary(task, samples)
    return _compat_summary(samples) if compat else _summary(task, samples)


def score_sample(
    folder: str | Path,
    task: str | None = None,
    *,
    compat: str | None = None,
    settings: TimelineSettings | None = None,
    timeline: Timeline | None = None,
    latency_s: float = 0.0,
    annotation_from: Path | None = None,
    reference: dict[str, list[float]] | None = None,
    rater: Rater | None = None,
    tagger: behaviour.Tagger | None = None,
) -> dict[str, Any]:
    """One sample scored. The default reads the session's timeline (`timeline` where given, else made): its
    turns, answers and barge-ins as timeline.py defines them, the words of trace-eval's recogniser where the
    timeline holds them (the benchmark's `output.json`, from an English-only recogniser, is read by compat
    only). `latency_s`: FLEXI's pause handling lengthens a pause by the model's turn-taking latency, given by
    hand. `annotation_from`: compat only, the folder whose annotation the benchmark's script pairs with this
    output (script_pairing). `reference`: the backchannel task's distributions, which its samples need.
    `rater`: an LLM's rating of the answer after an interruption (both modes; compat reads `rating.json` without).
    `tagger`: the behaviour task's model, which its samples need."""
    folder = Path(folder)
    task = task or task_of(folder)
    if task not in ALL_TASKS:
        raise SessionError(f"unknown task {task!r}; expected one of {', '.join(ALL_TASKS)}")
    if compat not in (None, *COMPAT):
        raise SessionError(f"compat {compat!r}: expected one of {', '.join(COMPAT)}")
    if task == backchannel.TASK:
        return {"sample": str(folder), **_backchannel(folder, compat, settings, timeline, reference)}
    if task == behaviour.TASK:
        if tagger is None:
            raise SessionError(f"{folder}: the behaviour task asks a model: --model MODEL --checkout FULL_DUPLEX_BENCH")
        if compat == "flexi":
            raise SessionError("FLEXI has no behaviour task: --compat full-duplex-bench, or the default")
        found = tagger.script_sample(folder) if compat else tagger.default_sample(folder)
        return {"sample": str(folder), **found}
    if task == latency_intervals.TASK:
        if compat == "flexi":
            raise SessionError("FLEXI has no v1.5 timing task: --compat full-duplex-bench, or the default")
        if compat:
            return {"sample": str(folder), **latency_intervals.script_sample(folder)}
        timeline = timeline or make_timeline(read_session(folder), settings)
        return {"sample": str(folder), **latency_intervals.default_sample(timeline)}
    if compat and not (folder / "output.json").is_file():
        raise SessionError(
            f"{folder}: no output.json: compat mode reads the benchmark's transcript (its recogniser's words with "
            "times); the default scores this folder from its audio (--words: trace-eval's multilingual words)"
        )
    words = read_words(folder / "output.json") if compat else []
    if compat == "flexi":
        return {"sample": str(folder), **flexi_sample(folder, task, words, latency_s)}
    if compat:
        return {"sample": str(folder), **_compat_sample(folder, task, words, annotation_from or folder, rater)}
    read_annotations(folder, task)  # a bad annotation is named before any audio is read
    timeline = timeline or make_timeline(read_session(folder), settings)
    scored = {"pause_handling": _pause, "smooth_turn_taking": _turn_taking, "user_interruption": _interruption}
    # The words that count, with the durations, in telling an answer from a backchannel (timeline.py).
    words_from = f"trace-eval's recogniser ({timeline.recogniser})" if timeline.recogniser else "none: durations only"
    record = {"sample": str(folder), **scored[task](folder, timeline), "words_from": words_from}
    if task == "user_interruption" and rater is not None:
        record |= _rated(folder, timeline, rater, record)
    return record


def _backchannel(
    folder: Path,
    compat: str | None,
    settings: TimelineSettings | None,
    timeline: Timeline | None,
    reference: dict[str, list[float]] | None,
) -> dict[str, Any]:
    if reference is None:
        raise SessionError(f"{folder}: the backchannel task needs the benchmark's reference (--reference "
                           f"v1_v1.5/evaluation/{backchannel.REFERENCE} of a Full-Duplex-Bench checkout)")  # fmt: skip
    if compat == "flexi":
        raise SessionError("FLEXI has no backchannel task: --compat full-duplex-bench, or the default")
    if compat:
        return backchannel.script_sample(folder, reference)
    timeline = timeline or make_timeline(read_session(folder), settings)
    return backchannel.default_sample(folder, timeline, reference)


# -- as the benchmark's scripts compute --------------------------------------------------------------------------


def script_pairing(task_dir: Path) -> dict[Path, Path]:
    """{output folder: annotation folder} as the benchmark's smooth turn-taking script pairs them in `task_dir`:
    every `output.json` and every `turn_taking.json` in the order os.listdir gives the folders, the i-th output
    with the i-th annotation (zip: an output past the last annotation is left out). A folder without its
    annotation shifts every pair after it."""
    outputs, annotations = [], []
    for name in os.listdir(task_dir):
        folder = task_dir / name
        if name.endswith((".DS_Store", ".md")) or not folder.is_dir():
            continue
        files = os.listdir(folder)
        for found in files:
            if found.endswith("output.json"):
                outputs.append(folder)
                annotations += [folder for other in files if other.endswith("turn_taking.json")]
    return dict(zip(outputs, annotations))


def _compat_sample(
    folder: Path, task: str, words: list[Word], annotation_from: Path, rater: Rater | None = None
) -> dict[str, Any]:
    notes = []
    took_turn = False
    if words:
        last = words[-1].end if words[-1].end is not None else words[-1].start
        if words[-1].end is None and task != "pause_handling":
            notes.append("the last word has no end: the benchmark's script stops with an error on this sample")
        took_turn = last - words[0].start >= TURN_MIN_S or len(words) > TURN_MAX_WORDS
    record: dict[str, Any] = {"took_turn": int(took_turn), "notes": notes}
    if task == "pause_handling":
        return record  # pause.json is not read
    annotated = read_annotation(annotation_from, task)
    if annotation_from != folder:
        notes.append(f"paired with {annotation_from.name}'s annotation, as the benchmark's script pairs the i-th "
                     "output with the i-th annotation (a folder without one shifts the pairs)")  # fmt: skip
    # turn_taking.json: the start of its span; interrupt.json: the end of the interruption.
    clock = annotated["timestamp"][0] if task == "smooth_turn_taking" else annotated["timestamp"][1]
    if took_turn:
        record["latency_s"] = round(max(0.0, words[0].start - clock), 6)  # a negative latency is counted as 0
    if task != "user_interruption":
        return record
    if not took_turn:  # the script rates only an answer that took the turn
        record["rating"] = None
    elif rater is None:
        record["rating"] = stored_rating(folder)
    else:
        text = read_json(folder / "output.json").get("text") or ""
        record["rated"] = rater(str(annotated.get("context", "")), str(annotated.get("interrupt", "")), str(text))
        record["rating"] = record["rated"]["rating"]
    return record


def _compat_summary(samples: list[dict[str, Any]]) -> dict[str, Any]:
    def mean(values: list[float]) -> float | None:
        return sum(values) / len(values) if values else None

    summary: dict[str, Any] = {"average_take_turn": mean([s["took_turn"] for s in samples])}
    if any("latency_s" in s for s in samples):
        summary["average_latency"] = mean([s["latency_s"] for s in samples if "latency_s" in s])
    if any("rating" in s for s in samples):
        ratings = [s["rating"] for s in samples if s.get("rating") is not None]
        summary["average_rating"] = mean(ratings)
        if len(ratings) < sum(s["took_turn"] for s in samples) and any("rated" in s for s in samples):
            summary["rating_note"] = "samples the model gave no rating for are left out (each says why)"
        elif len(ratings) < sum(s["took_turn"] for s in samples):
            summary["rating_note"] = "ratings are read from each sample's rating.json (the benchmark asks GPT-4 " \
                "Turbo for them; --model asks any model); samples without one are left out"  # fmt: skip
    return summary


# -- as the tasks mean -------------------------------------------------------------------------------------------


def _user_end(timeline: Timeline) -> float | None:
    return timeline.turns["user"][-1].end if timeline.turns["user"] else None


def _pause(folder: Path, timeline: Timeline) -> dict[str, Any]:
    pauses = [Segment(*map(float, p["timestamp"])) for p in read_annotations(folder, "pause_handling")]
    user_end = _user_end(timeline)
    if user_end is None:
        return {"took_turn": None, "notes": ["no speech on the user's channel"]}
    # A takeover: the system's answer began inside the user's turn (the annotated pause keeps it one turn).
    early = next((a.system_turn for a in timeline.answers if a.latency_s is not None and a.latency_s < 0), None)
    if early is None:
        where = None
    elif any(p.start <= early.start <= p.end for p in pauses):
        where = "in the pause"
    elif pauses and early.start < pauses[0].start:
        where = "before the pause"
    else:
        where = "after the pause"
    return {
        "took_turn": early is not None,  # before the user had ended: an answer after the end is no takeover
        "where": where,
        "system_start_s": None if early is None else round(early.start, 3),
        "user_end_s": round(user_end, 3),
        "pauses": [p.record() for p in pauses],
        "notes": timeline.notes,
    }


def _turn_taking(folder: Path, timeline: Timeline) -> dict[str, Any]:
    annotated = float(read_annotation(folder, "smooth_turn_taking")["timestamp"][0])
    if not timeline.answers:
        return {"took_turn": None, "latency_s": None, "notes": ["no speech on the user's channel"]}
    answer = timeline.answers[-1]  # to the user's last turn, the one the annotation marks the end of
    start = None if answer.system_turn is None else answer.system_turn.start
    return {
        "took_turn": answer.system_turn is not None,
        # signed: negative is a jump-in; clock: the user's end as heard
        "latency_s": None if answer.latency_s is None else round(answer.latency_s, 3),
        "latency_from_annotation_s": None if start is None else round(start - annotated, 3),
        "user_end_s": round(answer.user_turn.end, 3),
        "notes": timeline.notes,
    }


def _interruption(folder: Path, timeline: Timeline) -> dict[str, Any]:
    start, end = map(float, read_annotation(folder, "user_interruption")["timestamp"])
    near = [a for a in timeline.answers if a.user_turn.end > start - 0.5 and a.user_turn.start < end + 0.5]
    answer = near[0] if near else None
    if answer is None:
        return {"stopped": None, "answered": None, "notes": ["no user speech where the interruption is annotated"]}
    heard = answer.user_turn
    barge = next((b for b in timeline.barge_ins if b.user_turn == heard), None)
    stopped = barge is None or barge.stopped  # a system that was silent had nothing to yield
    return {
        "stopped": stopped,  # within the timeline's stop_within_s of the interruption's start as heard
        "stop_latency_s": 0.0 if barge is None else round(barge.stop_latency_s, 3),
        "answered": answer.system_turn is not None,
        "latency_s": None if answer.latency_s is None else round(answer.latency_s, 3),  # from its end as heard
        "success": stopped and answer.system_turn is not None,
        "interruption_s": heard.record(),
        "notes": timeline.notes,
    }


def _rated(folder: Path, timeline: Timeline, rater: Rater, record: dict[str, Any]) -> dict[str, Any]:
    """The LLM's rating of the answer after the interruption, from the answer turn's words (--words)."""
    heard = record.get("interruption_s")
    answer = next((a.system_turn for a in timeline.answers if a.user_turn.record() == heard and a.system_turn), None)
    if answer is None:
        return {"rating": None}
    words = timeline.words.get("system")
    if words is None:
        return {"rating": None, "rated": {"rating": None, "why": "the answer has no words: rate with --words"}}
    annotated = read_annotation(folder, "user_interruption")
    said = " ".join(w["word"].strip() for w in words_in(words, answer))
    rated = rater(str(annotated.get("context", "")), str(annotated.get("interrupt", "")), said)
    return {"rating": rated["rating"], "rated": rated}


def _summary(task: str, samples: list[dict[str, Any]]) -> dict[str, Any]:
    def share(key: str) -> dict[str, Any]:
        known = [s[key] for s in samples if s.get(key) is not None]
        return rate(sum(bool(v) for v in known), len(known))

    def values(key: str) -> dict[str, Any]:
        return distribution(s[key] for s in samples if s.get(key) is not None)

    if task == "pause_handling":
        return {
            "takeover_rate": share("took_turn"),
            "takeover_in_pause_rate": rate(
                sum(s.get("where") == "in the pause" for s in samples), sum(s["took_turn"] is not None for s in samples)
            ),
        }
    if task == "smooth_turn_taking":
        return {
            "take_turn_rate": share("took_turn"),
            "latency_s": values("latency_s"),
            "jump_in_rate": rate(
                sum(s["latency_s"] < 0 for s in samples if s.get("latency_s") is not None),
                sum(s.get("latency_s") is not None for s in samples),
            ),
        }
    summary = {
        "stopped_rate": share("stopped"),
        "stop_latency_s": values("stop_latency_s"),
        "answered_rate": share("answered"),
        "latency_s": values("latency_s"),
        "success_rate": share("success"),
    }
    if any("rated" in s for s in samples):
        summary["rating"] = values("rating")
    return summary


def _end(word: Word) -> float:
    return word.end if word.end is not None else word.start


def _middle(word: Word) -> float:
    return (word.start + _end(word)) / 2
