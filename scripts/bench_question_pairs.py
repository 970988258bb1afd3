"""Pairs that ask for a question or a statement, judged by the offline `cues` judge from Stage 1's blueprints.

    python scripts/bench_question_pairs.py            # the 6 pairs below
    python scripts/bench_question_pairs.py --all      # every sentence in every voice, asked both ways

Each pair holds one sentence said twice by espeak-ng in one voice: as a question ("You found the key?", a
statement's words with a question mark, so only the voice tells it) and as a statement ("You found the key.").
The instruction asks for one of them ("Say 'you found the key' as a question.", or "... as a statement."), and
the answer asked for is response 1 in half of the pairs and response 2 in the other half. Every clip goes
through Stage 1 (`asr` with the CPU profile, then `prosody`) in a benchmark folder, and the pairs through
`judge --model cues`, as a user runs them. A pair is decided right when the Paralinguistics verdict names the
answer asked for; the overall label (fusion `cap`) is shown beside it.

The sentences and voices are none of the tests' own (tests/judge/test_prosody_speech.py says "Is it raining
outside today?" and "He is arriving tomorrow?" in espeak-ng's default voice).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from trace_eval.synth import Voice, have_tools, speak  # noqa: E402

# A question written as a statement with a question mark: its words do not say it is a question.
SENTENCES = [
    "You found the key?",
    "You are working tomorrow?",
    "She is flying home tomorrow?",
    "Your brother called the doctor?",
    "The bank is closed today?",
    "We are meeting at the museum?",
]
VOICES = [
    Voice(voice="en-gb", wpm=170),
    Voice(voice="en-gb-scotland", wpm=140),
    Voice(voice="en-us", wpm=175, pitch=40),
    Voice(voice="en-us+f2", wpm=160, pitch=55),
    Voice(voice="en-029", wpm=165),
    Voice(voice="en-us+m3", wpm=185, pitch=30),
]


def said(sentence: str) -> str:
    """The words to say, as an instruction quotes them: "You found the key?" -> "you found the key"."""
    return sentence.rstrip("?").lower()


def cases(every: bool) -> list[tuple[str, Voice, str, bool]]:
    """(sentence, voice, asked: "question" or "statement", the asked answer is response 1)."""
    if not every:
        return [
            (sentence, voice, "question" if k % 2 == 0 else "statement", k % 4 < 2)
            for k, (sentence, voice) in enumerate(zip(SENTENCES, VOICES))
        ]
    return [
        (sentence, voice, asked, (i + j) % 2 == 0)
        for i, sentence in enumerate(SENTENCES)
        for j, voice in enumerate(VOICES)
        for asked in ("question", "statement")
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--all", action="store_true", help="every sentence in every voice, asked both ways")
    args = parser.parse_args(argv)
    if not have_tools():
        raise SystemExit("needs espeak-ng and sox: apt-get install espeak-ng sox")
    from trace_eval.api import blueprints, judge_bench

    chosen = cases(args.all)
    with tempfile.TemporaryDirectory(prefix="bench_question_pairs_") as tmp:
        bench = Path(tmp) / "bench"
        items, expected = [], {}
        for k, (sentence, voice, asked, first) in enumerate(chosen):
            clips = {}
            for kind, text in (("question", sentence), ("statement", sentence[:-1] + ".")):
                name = f"audio/{voice.voice}-{voice.wpm}-{voice.pitch}-{said(sentence).replace(' ', '-')}-{kind}.wav"
                if not (bench / name).exists():
                    speak(text, bench / name, voice)
                clips[kind] = name
            other = "statement" if asked == "question" else "question"
            one, two = (clips[asked], clips[other]) if first else (clips[other], clips[asked])
            pair = f"pair-{k:02d}"
            items.append(
                {
                    "id": pair,
                    "instruction_text": f"Say '{said(sentence)}' as a {asked}.",
                    "audio1_path": one,
                    "audio2_path": two,
                }
            )
            expected[pair] = "1" if first else "2"
        (bench / "manifest.json").write_text(json.dumps(items, indent=1), encoding="utf-8")
        summary = blueprints(bench, profile="cpu", only=["asr", "prosody"], progress=False, store="bench")
        if not summary.ok:
            raise SystemExit(f"Stage 1 failed: {summary.failures}")
        run = judge_bench(bench, "cues", out=Path(tmp) / "run", progress=False)
        verdicts = {v.id: v for v in run.verdicts()}
        right = 0
        print("| pair | voice | instruction | asked answer | Paralinguistics | overall | why |")
        print("|---|---|---|---|---|---|---|")
        for item, (_, voice, _, _) in zip(items, chosen):
            v = verdicts[item["id"]]
            label = v.labels.get("paralinguistics")
            right += label == expected[item["id"]]
            said_p = str(v.reasoning).split("Paralinguistics: ", 1)[-1]
            why = v.undetermined.get("paralinguistics") or said_p
            overall = v.overall or f"undetermined ({', '.join(sorted(v.undetermined))})"
            print(
                f"| {item['id']} | {voice.voice} {voice.wpm} wpm, pitch {voice.pitch} | {item['instruction_text']} "
                f"| {expected[item['id']]} | {label} | {overall} | {str(why)[:160]} |"
            )
        print(f"\ndecided right: {right} of {len(items)} pairs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
