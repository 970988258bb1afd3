"""Interaction pairs as a benchmark folder, for the interaction rubric: `judge`, `label`, `leaderboard`,
`evaluate` and the audit page take it like any other benchmark.

    BENCH/manifest.jsonl                  one item per pair of systems on a session both have
    BENCH/seating.json                    how the two systems of each pair were seated (the seed)
    BENCH/audio/<system>/<session>.flac   each session as one stereo file: the user left, the system right

An item's response 1 and 2 are the two systems' sessions (`model_a`, `model_b`), its instruction says that both
talked with the same user recording, and its fields hold each session's timeline as text for an LLM
(`timeline_1`, `timeline_2`: interaction.describe) and as a JSON record for the offline judge (`session_1`,
`session_2`), with the offline judge's thresholds it is to use (`judge_settings`). People's labels, where given,
are the item's `label.interaction`. Which system is response 1 is drawn for each pair by a random generator
seeded with `seed` (recorded in `seating.json`): a judge's position bias, which `evaluate` checks, is then not
confounded with the systems' names.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from trace_eval.io import atomic_write_bytes, atomic_write_text
from trace_eval.sessions.interaction import InteractionSettings, describe
from trace_eval.sessions.manifest import SessionEntry
from trace_eval.sessions.timeline import Timeline

__all__ = ["INSTRUCTION", "write_pairs"]

INSTRUCTION = (
    "Both sessions are the same recording of the user talking with a different system; each session's audio holds "
    "the user on the left channel and the system on the right."
)


def write_pairs(
    bench: Path,
    pairs: list[tuple[str, tuple[str, str]]],
    timelines: dict[str, dict[str, Timeline]],
    sessions: dict[tuple[str, str], SessionEntry],
    labels: dict[tuple[str, str, str], str] | None = None,
    settings: InteractionSettings | None = None,
    seed: int = 0,
) -> int:
    """Write the benchmark of `pairs` ((session, (system, system))), each pair's systems seated in an order drawn
    with `seed`; returns how many items it holds."""
    import random

    seats = random.Random(seed)
    pairs = [(sample, (a, b) if seats.random() < 0.5 else (b, a)) for sample, (a, b) in pairs]
    written: dict[tuple[str, str], str] = {}

    def audio(system: str, sample: str) -> str:
        if (system, sample) not in written:
            relative = f"audio/{system}/{sample}.flac"
            atomic_write_bytes(bench / relative, sessions[(system, sample)].read().stereo_flac())
            written[(system, sample)] = relative
        return written[(system, sample)]

    lines = []
    for sample, (a, b) in pairs:
        first, second = timelines[a][sample], timelines[b][sample]
        item: dict[str, Any] = {
            "id": f"{sample}|{a}|{b}",
            "instruction_text": INSTRUCTION,
            "audio1_path": audio(a, sample),
            "audio2_path": audio(b, sample),
            "model_a": a,
            "model_b": b,
            "session": sample,
            "timeline_1": describe(first),
            "timeline_2": describe(second),
            "session_1": json.dumps(first.record(), ensure_ascii=False),
            "session_2": json.dumps(second.record(), ensure_ascii=False),
            "judge_settings": json.dumps(asdict(settings or InteractionSettings())),
        }
        label = (labels or {}).get((sample, a, b))
        if label is not None:
            item["label"] = {"interaction": label}
        lines.append(json.dumps(item, ensure_ascii=False))
    atomic_write_text(bench / "manifest.jsonl", "\n".join(lines) + "\n")
    seating = {
        "seed": seed,
        "rule": "each pair's systems in the order a random.Random(seed) drew, pair by pair "
        "in the order of sessions then systems' names: the first drawn below 0.5 keeps the names' order",
    }
    atomic_write_text(bench / "seating.json", json.dumps(seating, indent=1) + "\n")
    return len(lines)
