"""FLEXI's figures on sample folders in the Full-Duplex-Bench layout, as its scripts compute them, quirks included.

FLEXI (github ChristineCHEN274/FLEXI) keeps Full-Duplex-Bench's folders and turn rule and changes the scoring:

- turn-taking: the mean latency leaves negative latencies out instead of counting them as 0, and their share of
  all samples is the jump-in rate (JIR);
- pause handling: reads `pause.json` and the user's words (`input.json`); a takeover is the system's first word
  inside the pause, the pause lengthened by the model's turn-taking latency where that is longer than the pause
  (`latency_s`, given by hand); a first word after the user's last is no takeover, nor is one before the pause;
  a sample whose output has no word is left out, not counted as waiting;
- user interruption: whether the system yielded (TTR, the share that did) from the words around the
  interruption, the mean rating over those that yielded, and a printed "latency" that is the mean length of
  the system's speech overlapping the interruption.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trace_eval.sessions.samples import TURN_MAX_WORDS, TURN_MIN_S, Word, read_annotation, read_json, stored_rating

__all__ = ["flexi_sample", "flexi_summary"]

INTERRUPTION_EPS_S = 0.15  # words this soon after the interruption's end are not a new response


def flexi_sample(folder: Path, task: str, words: list[Word], latency_s: float = 0.0) -> dict[str, Any]:
    """One sample as FLEXI's scripts score it; where they skip it, the reason under `skipped` (they do not
    record it)."""
    if task == "smooth_turn_taking":
        took_turn = bool(words) and (_span(words) >= TURN_MIN_S or len(words) > TURN_MAX_WORDS)
        record: dict[str, Any] = {"took_turn": int(took_turn)}
        if took_turn:
            record["latency_s"] = round(words[0].start - float(read_annotation(folder, task)["timestamp"][0]), 6)
        return record
    if task == "pause_handling":
        return _pause(folder, words, latency_s)
    return _interruption(folder, words)


def flexi_summary(task: str, samples: list[dict[str, Any]]) -> dict[str, Any]:
    scored = [s for s in samples if "skipped" not in s]
    if task == "smooth_turn_taking":
        latencies = [s["latency_s"] for s in scored if "latency_s" in s]
        kept = [v for v in latencies if v >= 0]
        return {
            "TOR": _mean([s["took_turn"] for s in scored]),
            "latency": sum(kept) / len(kept) if kept else 0,  # FLEXI prints 0 where no latency is left
            "JIR": sum(v < 0 for v in latencies) / len(scored) if scored else None,
        }
    if task == "pause_handling":
        return {
            "TOR": _mean([s["took_turn"] for s in scored]) if scored else 0.0,
            "skipped": len(samples) - len(scored),
        }
    yielded = [s for s in scored if not s["took_turn"]]
    overlaps = [s["overlap_s"] for s in scored if s.get("overlap_s") is not None]
    missing = sum(bool(s.get("rating_missing")) for s in scored)
    return {
        "TTR": 1 - (_mean([s["took_turn"] for s in scored]) or 0) if scored else 0,
        # the scores of every sample (0 where it did not yield or did not answer) over those that yielded
        "LLM Rating": sum(s["score"] for s in scored) / len(yielded) if yielded else None,
        "latency": sum(overlaps) / len(overlaps) if overlaps else None,  # FLEXI divides by zero here
        **({"rating_note": f"{missing} answer(s) without a rating.json scored 0"} if missing else {}),
    }


def _pause(folder: Path, words: list[Word], latency_s: float) -> dict[str, Any]:
    pause = read_json(folder / "pause.json")
    pause = pause[0] if isinstance(pause, list) else pause  # FLEXI reads an object; its data holds one
    heard = read_json(folder / "input.json").get("chunks") if (folder / "input.json").is_file() else None
    if not words:
        return {"skipped": "output.json has no word: FLEXI leaves the sample out"}
    if not heard or heard[-1]["timestamp"][1] is None:
        return {"skipped": "no input.json with the user's words: FLEXI leaves the sample out"}
    start, end = (float(t) for t in pause["timestamp"][:2])
    window_end = end + max(latency_s - (end - start), 0.0)
    first = words[0].start
    took_turn = first <= float(heard[-1]["timestamp"][1]) and start <= first <= window_end
    return {"took_turn": int(took_turn), "first_word_s": first, "window": [start, round(window_end, 6)]}


def _interruption(folder: Path, words: list[Word]) -> dict[str, Any]:
    start, end = (float(t) for t in read_annotation(folder, "user_interruption")["timestamp"])
    speaking, overlap = True, None
    first_over = last_over = 0.0
    for w in words:
        w_end = w.end if w.end is not None else w.start
        if w.start < end and w_end > start:  # overlaps the interruption
            if first_over == 0:  # FLEXI's test: a word starting at 0.0 starts the overlap again
                first_over, last_over = w.start, w_end
            else:
                last_over = w_end
            continue
        if (w.start > end or w_end > end) and w.start - last_over > 1:
            overlap = last_over - first_over
            speaking = overlap >= 3
            break
    after = [w for w in words if w.start >= end + INTERRUPTION_EPS_S]
    answered = bool(after) and (
        _span(after) >= TURN_MIN_S or len(" ".join(w.text for w in after).split()) > TURN_MAX_WORDS
    )
    record: dict[str, Any] = {"took_turn": int(speaking), "overlap_s": overlap, "answered": answered, "score": 0}
    if not speaking and answered:
        record["latency_s"] = round(after[0].start - end, 6)
        rating = stored_rating(folder)
        record["score"] = rating or 0
        if rating is None:
            record["rating_missing"] = True  # FLEXI would ask GPT-4 Turbo; no rating.json here: scored 0
    return record


def _span(words: list[Word]) -> float:
    last = words[-1].end if words[-1].end is not None else words[-1].start
    return last - words[0].start


def _mean(values: list[int]) -> float | None:
    return sum(values) / len(values) if values else None
