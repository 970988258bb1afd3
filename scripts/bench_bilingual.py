"""A bilingual benchmark, the whole job: is an answer in the wrong language caught, and the right one kept?

    python scripts/bench_bilingual.py                  # 30 instructions per language (Spanish and French)
    python scripts/bench_bilingual.py --per-language 8 # a quick look

Each instruction asks for one sentence to be said: "Di «La conferencia ha sido extendida.»" (Spanish),
"Dites « ... »" (French), spoken by espeak-ng in one of six voices, its sentence the transcript of an Asterisk
prompt that exists in English, Spanish and French. Two systems answer with recordings of people (Asterisk's
prompts): `native` with the prompt in the instruction's language (the right answer), `other` with the same prompt
in English (the same content, translated: the wrong language). `prepare pairs` pairs them (seating by its seed),
Stage 1 transcribes every clip (`blueprints --only asr`, nothing declared), and the offline judge (`cues`) gives
Content, four ways: with the instruction's written text, from its audio alone (spoken-only: the words to say read
from its transcript), with the instruction's language declared, and from a written instruction in English that
asks for the language ("Translate into Spanish: «...»", the English prompt's words: `native` is a right
translation, `other` says them untranslated). Content is right where it prefers `native`. A second table says
how often the judge heard `native` in the language expected of it and `other` in another (its Content reasoning).

No rule is set here: the figures are of the rules set elsewhere (the language rule on the perception sets'
tuning half, the lead-ins on the spoken instructions'), on speech none of them was set on. Clips are cached by
the blueprint store (`--store`, default a folder under the cache), so a second run costs the judging only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from bench_perception import ESPEAK_VOICES  # noqa: E402  (the perception sets' six speakers; pins the class first)
from recorded_speech import asterisk_transcripts  # noqa: E402

from extractors import Clip  # noqa: E402, F401
from trace_eval.cli import main as cli  # noqa: E402

SOUNDS = Path("/usr/share/asterisk/sounds")
LANGUAGES = ("es", "fr")  # the instructions'; the wrong answer is always the English prompt
LEAD_INS = {"es": ("Di", "«", "»"), "fr": ("Dites", "« ", " »")}
WAYS = ("with its text", "spoken only", "declared", "asked in English")
# declared: spoken only, its language declared; asked in English: a written instruction alone, in English, that
# asks for the sentence in the language ("Translate into Spanish: «...»", the English prompt's transcript)
ASKED = {"es": "Spanish", "fr": "French"}


def prompts(per_language: int) -> list[tuple[str, str, str]]:
    """(instruction language, prompt name, its transcript): prompts of 4 words or more, no digits, in English,
    Spanish and French alike, `per_language` per language chosen by a hash of the name."""
    texts = {code: asterisk_transcripts(code) for code in ("en", *LANGUAGES)}

    def plain(code: str, name: str) -> bool:
        text = texts[code].get(name, "")
        return (len(text.split()) >= 4 and not re.search(r"[\d\[\]]", text)
                and (SOUNDS / code / f"{name}.wav").is_file())  # fmt: skip

    common = [n for n in texts["en"] if all(plain(code, n) for code in ("en", *LANGUAGES))]
    chosen = []
    for code in LANGUAGES:
        ranked = sorted(common, key=lambda n: hashlib.sha256(f"{code}:{n}".encode()).hexdigest())
        chosen += [(code, n, texts[code][n]) for n in ranked[:per_language]]
    return chosen


def build(given: Path, chosen: list[tuple[str, str, str]]) -> None:
    """The lab's files: instructions (audio and text, audio alone), a JSON lines file that declares their
    languages, one of written instructions in English that ask for the language, each system's answers."""
    from trace_eval.synth import Voice, speak

    for folder in ("written", "spoken", "native", "other"):
        (given / folder).mkdir(parents=True, exist_ok=True)
    english = asterisk_transcripts("en")
    rows, asked = [], []
    for k, (code, name, text) in enumerate(chosen):
        iid = f"{code}-{name.replace('/', '_')}"  # a prompt of a subfolder: followme/pls-hold-while-try
        lead, opening, closing = LEAD_INS[code]
        variant, wpm = ESPEAK_VOICES[k % len(ESPEAK_VOICES)]
        audio = given / "written" / f"{iid}.wav"
        if not audio.exists():
            speak(f"{lead}, {text}", audio, Voice(voice=f"{code}+{variant}", wpm=wpm))
        (given / "written" / f"{iid}.txt").write_text(f"{lead} {opening}{text}{closing}\n", encoding="utf-8")
        shutil.copy(audio, given / "spoken" / f"{iid}.wav")
        shutil.copy(SOUNDS / code / f"{name}.wav", given / "native" / f"{iid}.wav")
        shutil.copy(SOUNDS / "en" / f"{name}.wav", given / "other" / f"{iid}.wav")
        rows.append({"id": iid, "instruction_path": f"written/{iid}.wav", "instruction_language": code})
        asked.append({"id": iid, "instruction_text": f"Translate into {ASKED[code]}: «{english[name]}»"})
    (given / "declared.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (given / "asked.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in asked))


def judged(given: Path, way: str, work: Path, store: Path) -> dict[str, dict]:
    """{instruction id: (its pair's manifest item, results record)} for one way of giving the instructions."""
    instructions = {
        "with its text": "written",
        "spoken only": "spoken",
        "declared": "declared.jsonl",
        "asked in English": "asked.jsonl",
    }[way]
    bench = work / way.replace(" ", "-")
    shutil.rmtree(bench, ignore_errors=True)
    systems = [f"--system={name}={given / name}" for name in ("native", "other")]
    os.environ["TRACE_STORE"] = str(store)
    assert cli(["prepare", "pairs", str(bench), "--instructions", str(given / instructions), *systems,
                "--schedule", "all", "--quiet"]) == 0  # fmt: skip
    assert cli(["blueprints", str(bench), "--only", "asr", "--quiet"]) == 0
    run = work / f"run-{bench.name}"
    shutil.rmtree(run, ignore_errors=True)
    assert cli(["judge", "--bench", str(bench), "--model", "cues", "--out", str(run), "--quiet"]) == 0
    manifest = json.loads((bench / "manifest.json").read_text(encoding="utf-8"))
    records = {r["id"]: r for r in map(json.loads, (run / "results.jsonl").read_text().splitlines())}
    return {item["instruction_id"]: {"item": item, "record": records[item["id"]]} for item in manifest}


def right(found: dict) -> bool | None:
    """Whether Content preferred the answer in the instruction's language (None: undetermined)."""
    item, verdict = found["item"], found["record"]["verdicts"].get("content")
    if verdict is None:
        return None
    return verdict == ("1" if item["model_a"] == "native" else "2")


def heard_right(found: dict, system: str) -> bool:
    """Whether the judge heard `system`'s answer as it is: `native` in the language expected of it, `other` (the
    English prompt) in another, as its Content reasoning says ("response 2 in Spanish", "response 1 in English,
    not Spanish expected ...")."""
    item, reasoning = found["item"], found["record"].get("reasoning") or ""
    n = 1 if item["model_a"] == system else 2
    said = re.search(rf"response {n} in \w+(, not)?", reasoning)
    return said is not None and (said.group(1) is None) == (system == "native")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-language", type=int, default=30)
    cache = Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")).expanduser() / "trace-eval" / "bilingual"
    parser.add_argument("--work", type=Path, default=cache, help="where the lab's files, benchmarks and runs go")
    parser.add_argument("--store", type=Path, default=cache / "store", help="the blueprint store (cached clips)")
    parser.add_argument("--show", action="store_true", help="print every pair Content got wrong, with its reasoning")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()

    chosen = prompts(args.per_language)
    given = args.work / "given"
    build(given, chosen)
    start = time.process_time()
    results = {way: judged(given, way, args.work, args.store) for way in WAYS}
    print(f"{len(chosen)} instructions ({', '.join(f'{c} {sum(x[0] == c for x in chosen)}' for c in LANGUAGES)}), "
          f"each a pair of recorded answers: the prompt in its language against the same prompt in English "
          f"({time.process_time() - start:.0f} CPU s)\n")  # fmt: skip
    figures: dict = {}
    print(f"{'Content right':<16}" + "".join(f"{code:>16}" for code in (*LANGUAGES, "all")))
    for way, found in results.items():
        cells = []
        for code in (*LANGUAGES, "all"):
            rows = [f for iid, f in found.items() if code == "all" or iid.startswith(code + "-")]
            verdicts = [right(f) for f in rows]
            good = sum(v is True for v in verdicts)
            undetermined = sum(v is None for v in verdicts)
            figures[f"{way} {code}"] = round(good / max(1, len(rows)), 4)
            cells.append(
                f"{good}/{len(rows)} {100 * good / max(1, len(rows)):.0f}%"
                + (f" ({undetermined}?)" if undetermined else "")
            )
        print(f"{way:<16}" + "".join(f"{c:>16}" for c in cells))
    print("\n(?: Content undetermined)\n")
    print(f"{'language heard':<16}{'native kept':>16}{'other caught':>16}")
    for way, found in results.items():
        cells = []
        for system in ("native", "other"):
            good = sum(heard_right(f, system) for f in found.values())
            figures[f"{way} {system} heard"] = round(good / max(1, len(found)), 4)
            cells.append(f"{good}/{len(found)} {100 * good / max(1, len(found)):.0f}%")
        print(f"{way:<16}" + "".join(f"{c:>16}" for c in cells))
    if args.show:
        for way, found in results.items():
            for iid, f in sorted(found.items()):
                if right(f) is not True:
                    content = (f["record"].get("reasoning") or "").split(" Voice quality:")[0]
                    print(f"\n{way} {iid}: {f['record']['verdicts'].get('content')}\n  {content}")
    print(f"\nmachine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
