"""How far Stage 1's word times lie from where the words are, on recorded English speech.

    python scripts/bench_word_times.py              # the test half's table (transcripts cached after a first run)
    python scripts/bench_word_times.py --half tune  # the tuning half's, with the grids of prosody's shifts

The reference is independent of Stage 1: CMU PocketSphinx aligns each clip's known transcript to its audio
(scripts/reference_words.py). The clips: LibriVox's read sentences and every Asterisk English prompt of three
words or more (Debian: pocketsphinx-testdata, asterisk-core-sounds-en-wav, asterisk-core-sounds-en), each heard
as Stage 1 hears it with English declared (the `cpu` profile's recogniser, tiny.en) and then `prosody`. A word is
compared where the recogniser wrote the transcript's word at that place (the two word sequences matched in
order); its start and end are compared, in ms, for the times Whisper gives (`words`) and the times prosody
measures each word on (`agent_prosody.words`, its alignment to syllable nuclei); and at each boundary between two
words heard in a row, whether prosody's `pauses` and the reference's silences of PAUSE_S or more agree. Each
recording is in one half, by a hash of its name. On the tuning half, two grids: where the alignment starts
(`align_start_shift_s`, with its rounds free) and the latest shift its rounds may settle on (`align_max_shift_s`,
started at -0.1 s).
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import math
import statistics
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_perception import asterisk_prompts  # noqa: E402  (first: pins the numeric class)
from bench_stress import ASTERISK, CACHE, LIBRIVOX, PROSODY_VERSIONS, Hearing, librivox_transcripts  # noqa: E402
from reference_words import Word, reference_words, spoken_words  # noqa: E402
from tqdm import tqdm  # noqa: E402

from extractors.prosody import ProsodyConfig  # noqa: E402

MIN_WORDS = 3
SHIPPED = "prosody 5, settled no later than -0.1 s (as shipped)"
VERSIONS = {  # prosody's alignment as each version made it
    "prosody 3, from the recogniser's times": PROSODY_VERSIONS["3"],
    "prosody 4, started 0.1 s early": PROSODY_VERSIONS["4"],
    SHIPPED: PROSODY_VERSIONS["5"],
}
PAUSE_CELLS = ("both", "reference only", "prosody only, the reference's silence shorter", "prosody only", "neither")
GRIDS = {
    **{f"start {s:+.2f} s, rounds free": ProsodyConfig(align_start_shift_s=s, align_max_shift_s=math.inf)
       for s in (0.0, -0.05, -0.1, -0.15, -0.2)},
    **{f"start -0.10 s, settled no later than {m:+.2f} s": ProsodyConfig(align_max_shift_s=m)
       for m in (0.05, 0.0, -0.05, -0.08, -0.1, -0.15)},
}  # fmt: skip
NEAR_S = 0.05
PAUSE_S = 0.25  # prosody's own shortest pause


@dataclass(frozen=True)
class Recording:
    path: Path
    text: str

    @property
    def half(self) -> str:
        return "tune" if int(hashlib.sha256(self.path.stem.encode()).hexdigest()[:8], 16) % 2 == 0 else "test"


def recordings() -> list[Recording]:
    librivox = librivox_transcripts()
    found = [Recording(p, librivox[p.stem]) for p in sorted(LIBRIVOX.glob("*.wav")) if p.stem in librivox]
    for name, text in sorted(asterisk_prompts("en").items()):
        path = ASTERISK / f"{name}.wav"
        if "/" not in name and len(spoken_words(text)[0]) >= MIN_WORDS and path.is_file():
            found.append(Recording(path, text))
    return found


def matched_indices(reference: list[Word], heard: list[dict]) -> list[tuple[int, int]]:
    """(reference word, heard word) index pairs where the recogniser wrote the reference's word, in order."""
    spoken = [w.word for w in reference]
    written = [" ".join(spoken_words(w["word"])[0]) for w in heard]
    blocks = difflib.SequenceMatcher(a=spoken, b=written, autojunk=False).get_matching_blocks()
    return [(block.a + k, block.b + k) for block in blocks for k in range(block.size)]


def matched(reference: list[Word], heard: list[dict]) -> list[tuple[Word, dict]]:
    """The reference's words paired with the heard words the recogniser wrote as them, in order."""
    return [(reference[k], heard[j]) for k, j in matched_indices(reference, heard)]


def pause_agreement(reference: list[Word], section: dict) -> Counter:
    """At each boundary between two words matched in a row, whether the reference holds a silence of PAUSE_S or
    more and whether prosody placed a pause there; a pause prosody alone places is told apart by the reference's
    silence there (at least PAUSE_S / 2, or less)."""
    placed = {p["after_word"] for p in section.get("pauses") or []}
    pairs = matched_indices(reference, section.get("words") or [])
    counts: Counter = Counter()
    for (k, j), (k_next, j_next) in zip(pairs, pairs[1:]):
        if (k_next, j_next) != (k + 1, j + 1):
            continue
        silence = reference[k_next].start - reference[k].end
        if silence >= PAUSE_S:
            counts["both" if j in placed else "reference only"] += 1
        elif j in placed:
            counts["prosody only, the reference's silence shorter" if silence >= PAUSE_S / 2 else "prosody only"] += 1
        else:
            counts["neither"] += 1
    return counts


def errors(pairs: list[tuple[Word, dict]]) -> tuple[list[float], list[float]]:
    """Start and end errors in seconds (heard less reference), where the heard word has times."""
    starts = [w["start"] - r.start for r, w in pairs if w.get("start") is not None]
    ends = [w["end"] - r.end for r, w in pairs if w.get("end") is not None]
    return starts, ends


def cells(values: list[float]) -> str:
    """The median error, the median and 90th percentile of its size (ms), and the share within NEAR_S."""
    if len(values) < 2:
        return "- | - | - | -"
    sizes = [abs(v) * 1000 for v in values]
    p90 = statistics.quantiles(sizes, n=10)[-1]
    near = sum(size <= NEAR_S * 1000 for size in sizes) / len(sizes)
    return f"{statistics.median(values) * 1000:+.0f} | {statistics.median(sizes):.0f} | {p90:.0f} | {near:.0%}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--half", choices=("test", "tune"), default="test")
    parser.add_argument("--cache", type=Path, default=CACHE)
    args = parser.parse_args()
    chosen = [r for r in recordings() if r.half == args.half]
    configs = {**VERSIONS, **(GRIDS if args.half == "tune" else {})}
    hearings = {name: Hearing(args.cache, config) for name, config in configs.items()}
    whisper = "Whisper's times (`words`)"
    rows: dict[str, list[tuple[Word, dict]]] = {whisper: [], **{name: [] for name in configs}}
    unaligned, compared, pauses = [], 0, Counter()
    for recording in tqdm(chosen, desc="recordings", file=sys.stderr):
        reference = reference_words(recording.path, recording.text)
        if isinstance(reference, str):
            unaligned.append(f"{recording.path.name}: {reference}")
            continue
        compared += 1
        for name, hearing in hearings.items():
            blueprint = hearing(recording.path)
            section = blueprint.get("agent_prosody") or {}
            rows[name] += matched(reference, section.get("words") or [])
            if name == SHIPPED:  # the recogniser's own times and the pauses, once
                rows[whisper] += matched(reference, blueprint.get("words") or [])
                pauses += pause_agreement(reference, section)
    words = len(rows[whisper])
    print(f"\n{args.half} half: {compared} recordings aligned ({words} words heard as written), "
          f"{len(unaligned)} left out (below)")  # fmt: skip
    print(
        "| times | start: median error (ms) | median size | p90 size | within 50 ms "
        "| end: median error | median size | p90 size | within 50 ms |\n" + "|---" * 9 + "|"
    )
    for name, pairs in rows.items():
        starts, ends = errors(pairs)
        print(f"| {name} | {cells(starts)} | {cells(ends)} |")
    print(f"\npauses of {PAUSE_S} s or more between two words heard in a row, prosody as shipped, and the reference:")
    print("| boundaries | " + " | ".join(PAUSE_CELLS) + " |\n" + "|---" * (len(PAUSE_CELLS) + 1) + "|")
    print(f"| {sum(pauses.values())} | " + " | ".join(str(pauses[cell]) for cell in PAUSE_CELLS) + " |")
    for line in unaligned:
        print(f"  left out: {line}")


if __name__ == "__main__":
    main()
