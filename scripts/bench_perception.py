"""The perception benchmark: how often Stage 1 hears a clip's language right, on speech nobody tuned it to.

    python scripts/bench_perception.py                   # the test half's table (evidence cached after a first run)
    python scripts/bench_perception.py --fit             # fit the rule's constants on the tuning half, then report
    python scripts/bench_perception.py --limit 40        # a quick look: the first 40 clips of each set

The sets:

- `recorded`: the Asterisk telephone prompts in English, Spanish, French, Italian and Russian (Debian's
  asterisk-core-sounds-{en,es,fr,it,ru}-wav, one speaker each, 8 kHz), every prompt of speech (no tones),
  up to `--per-language` per language chosen by a hash of the name, and LibriVox read English
  (pocketsphinx-testdata); the prompts of the subfolders (letters, digits, the spelling alphabet: one word
  each) are reported apart, as `recorded words`;
- `synthetic`: espeak-ng in 10 languages and 6 voices, short answers and sentences.

Each clip is split once, by a hash of its audio bytes, into a tuning half and a test half (`half`). The rule's
constants (trace_eval/language_rule.json) are set on the tuning half only (`--fit`); the figures printed are the
test half's, per language and per length (under 2 s of speech, 2 s or more), with the confusions, beside
Whisper's language token alone and the rule of main c59102a (the token's first sound guess, checked by its
guesses' transcripts below 0.7, re-implemented here from the evidence as it decided).

The evidence of each clip (Whisper's language token over the first window of speech, its first guesses decoded
by beam search in one batch, what their words read as) is what the `asr` extractor computes
(`AsrExtractor.language_evidence`), cached in `--cache` by the clip's audio hash and the recogniser's
fingerprint: a second run costs seconds. The machine's load is printed with the figures.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import math
import os
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from extractors import Clip  # noqa: E402  (pins the numeric class before any library loads)
from trace_eval.audio import load_audio  # noqa: E402

SOUNDS = Path("/usr/share/asterisk/sounds")
# The one speaker of each language's core sounds, by its folder (the packages' alternatives may point elsewhere).
ASTERISK_VOICES = {
    "en": "en_US_f_Allison",
    "es": "es_MX_f_Allison",
    "fr": "fr_CA_f_June",
    "it": "it_IT_m_Carlo",
    "ru": "ru_RU_f_IvrvoiceRU",
}
INSTALL = "apt-get install " + " ".join(
    f"asterisk-core-sounds-{code}-wav asterisk-core-sounds-{code}" for code in ASTERISK_VOICES
)
LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
SHORT_S = 2.0  # clips with less speech than this are reported apart
SENTENCES_PER_VOICE = 5

# espeak-ng's six voice variants, at two speeds: the synthetic set's speakers.
ESPEAK_VOICES = (("m1", 150), ("m3", 175), ("f2", 160), ("f4", 185), ("croak", 150), ("klatt2", 170))
# Short answers and sentences per language, written for this set (everyday words, no names).
SENTENCES: dict[str, tuple[str, ...]] = {
    "en": ("Yes, of course.", "No, thank you.", "The meeting starts at nine tomorrow morning.",
           "Please close the window before you leave.", "I think the train will be late again today.",
           "Could you tell me where the nearest pharmacy is?"),
    "es": ("Sí, claro.", "No hay mensajes.", "La reunión empieza mañana a las nueve.",
           "Por favor, cierra la ventana antes de salir.", "Creo que el tren llegará tarde otra vez hoy.",
           "¿Me puede decir dónde está la farmacia más cercana?"),
    "fr": ("Oui, bien sûr.", "Non, merci.", "La réunion commence demain à neuf heures.",
           "Fermez la fenêtre avant de partir, s'il vous plaît.", "Je pense que le train sera encore en retard.",
           "Pouvez-vous me dire où se trouve la pharmacie la plus proche ?"),
    "de": ("Ja, natürlich.", "Nein, danke.", "Die Besprechung beginnt morgen um neun Uhr.",
           "Bitte schließ das Fenster, bevor du gehst.", "Ich glaube, der Zug hat heute wieder Verspätung.",
           "Können Sie mir sagen, wo die nächste Apotheke ist?"),
    "it": ("Sì, certo.", "No, grazie.", "La riunione comincia domani alle nove.",
           "Per favore, chiudi la finestra prima di uscire.", "Penso che il treno sarà di nuovo in ritardo oggi.",
           "Mi può dire dov'è la farmacia più vicina?"),
    "pt": ("Sim, claro.", "Não, obrigado.", "A reunião começa amanhã às nove horas.",
           "Por favor, feche a janela antes de sair.", "Acho que o comboio vai chegar atrasado outra vez.",
           "Pode dizer-me onde fica a farmácia mais próxima?"),
    "nl": ("Ja, natuurlijk.", "Nee, dank je.", "De vergadering begint morgen om negen uur.",
           "Doe alsjeblieft het raam dicht voordat je weggaat.", "Ik denk dat de trein vandaag weer te laat is.",
           "Kunt u mij zeggen waar de dichtstbijzijnde apotheek is?"),
    "pl": ("Tak, oczywiście.", "Nie, dziękuję.", "Spotkanie zaczyna się jutro o dziewiątej.",
           "Proszę zamknąć okno przed wyjściem.", "Myślę, że pociąg znowu się dzisiaj spóźni.",
           "Czy może mi pan powiedzieć, gdzie jest najbliższa apteka?"),
    "ru": ("Да, конечно.", "Нет, спасибо.", "Собрание начнётся завтра в девять часов.",
           "Пожалуйста, закройте окно перед уходом.", "Я думаю, что поезд сегодня снова опоздает.",
           "Вы не подскажете, где ближайшая аптека?"),
    "sv": ("Ja, självklart.", "Nej, tack.", "Mötet börjar i morgon klockan nio.",
           "Stäng fönstret innan du går, tack.", "Jag tror att tåget blir försenat igen i dag.",
           "Kan du säga var närmaste apotek ligger?"),
}  # fmt: skip


@dataclass(frozen=True)
class Item:
    """One clip of a perception set, and what it is known to be."""

    set: str  # recorded | synthetic
    corpus: str  # asterisk-es, librivox, espeak-f2 ...
    name: str
    language: str  # the language it is spoken in
    clip: Clip
    text: str | None = None  # what it says, where known: an instruction's written text

    @property
    def kind(self) -> str:
        """The Asterisk prompts in subfolders (letters, digits, the spelling alphabet) are single words, reported
        apart as `recorded words`: no answer is one letter, and a letter sounds alike in every language."""
        return "recorded words" if self.set == "recorded" and "/" in self.name else self.set

    @property
    def half(self) -> str:
        """tune or test, fixed by the audio's bytes."""
        return "tune" if int(self.clip.sha256[:8], 16) % 2 == 0 else "test"


def _require(path: Path) -> Path:
    if not path.exists():
        raise SystemExit(f"{path} is missing: recorded speech comes from Debian packages: {INSTALL} "
                         "pocketsphinx-testdata")  # fmt: skip
    return path


def asterisk_prompts(language: str) -> dict[str, str]:
    """Prompt name -> transcript, for the prompts of speech (no tones, no bracketed descriptions)."""
    doc = _require(Path(f"/usr/share/doc/asterisk-core-sounds-{language}/core-sounds-{language}.txt.gz"))
    prompts = {}
    for line in gzip.open(doc, "rt", encoding="utf-8-sig"):
        name, sep, text = line.partition(":")
        if sep and not line.startswith(";") and "[" not in text and text.strip():
            prompts[name.strip()] = text.strip()
    return prompts


def _by_hash(names: Iterable[str]) -> list[str]:
    return sorted(names, key=lambda n: hashlib.sha256(n.encode()).hexdigest())


def _clip(path: Path) -> Clip:
    return Clip(hashlib.sha256(path.read_bytes()).hexdigest(), load_audio(path))


def recorded(per_language: int) -> list[Item]:
    items = []
    for language, voice in ASTERISK_VOICES.items():
        folder = _require(SOUNDS / voice)
        names = [n for n in asterisk_prompts(language) if (folder / f"{n}.wav").is_file()]
        prompts = asterisk_prompts(language)
        for name in _by_hash(names)[:per_language]:
            clip = _clip(folder / f"{name}.wav")
            items.append(Item("recorded", f"asterisk-{language}", name, language, clip, prompts[name]))
    for path in sorted(_require(LIBRIVOX).glob("*.wav")):
        items.append(Item("recorded", "librivox", path.stem, "en", _clip(path)))
    return items


def synthetic(folder: Path) -> list[Item]:
    from trace_eval.synth import Voice, speak

    items = []
    for language, sentences in SENTENCES.items():
        for variant, wpm in ESPEAK_VOICES:
            for n, text in enumerate(sentences[:SENTENCES_PER_VOICE]):
                path = folder / f"{language}-{variant}-{n}.wav"
                if not path.exists():
                    speak(text, path, Voice(voice=f"{language}+{variant}", wpm=wpm))
                clip = _clip(path)
                items.append(Item("synthetic", f"espeak-{variant}", path.stem, language, clip, text))
    return items


# -- evidence, cached -------------------------------------------------------------------------------------------


def collect(items: list[Item], cache: Path, cached_only: bool = False) -> dict[str, dict]:
    """Each item's language evidence with the token's first five guesses decoded, and its own language and
    WRONG_EXPECTED's decoded too (the hypothesis tests of the pairs), by audio hash; items without speech are
    left out. Computed once per audio and recogniser (its fingerprint without the rule's constants)."""
    from extractors.asr import AsrConfig, AsrExtractor
    from extractors.base import Extractor

    asr = AsrExtractor(AsrConfig(model="whisper-base-ct2", english_model="whisper-tiny.en-ct2"))
    path = cache / f"evidence-{Extractor.fingerprint(asr)}.jsonl"
    known: dict[str, dict | None] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            record = json.loads(line)
            known[record["sha256"]] = _with_english_loops(record["evidence"], asr)
    todo = [item for item in items if item.clip.sha256 not in known or _untested(known[item.clip.sha256], item)]
    if cached_only:
        todo = []
    if todo:
        todo.sort(key=lambda item: item.clip.sha256)  # a partial cache is a random sample of every set
        asr.load()
        cache.mkdir(parents=True, exist_ok=True)
        start = time.process_time()
        with path.open("a") as out:
            for n, item in enumerate(todo, 1):
                clip = Clip(item.clip.sha256, item.clip.audio, expects=(item.language, WRONG_EXPECTED[item.language]))
                evidence = asr.language_evidence(clip, everyone=True)
                known[item.clip.sha256] = evidence
                out.write(json.dumps({"sha256": item.clip.sha256, "evidence": evidence}) + "\n")
                out.flush()
                if n % 25 == 0 or n == len(todo):
                    print(f"  evidence {n}/{len(todo)} ({time.process_time() - start:.0f} CPU s)", file=sys.stderr)
    return {item.clip.sha256: e for item in items if (e := known.get(item.clip.sha256)) is not None}


def _with_english_loops(evidence: dict | None, asr) -> dict | None:
    """Evidence cached before asr recorded whether the English-only decode loops, with asr's own check: the
    transcript and its token count are cached, and the token limit follows from the window's seconds."""
    english = (evidence or {}).get("english")
    if english is not None and "loops" not in english:
        english["loops"] = asr.loops(english["text"], english["tokens"], "en", asr.token_limit(evidence["speech_s"]))
    return evidence


# The language a wrong-language answer is tested against: an answer in Spanish to an English instruction ...
WRONG_EXPECTED = {code: "en" for code in SENTENCES} | {"en": "es"}


def _untested(evidence: dict | None, item: Item) -> bool:
    wanted = {item.language, WRONG_EXPECTED[item.language]}
    return evidence is not None and (not wanted <= set(evidence.get("guesses") or {}) or "english" not in evidence)


def as_decoded(evidence: dict, rule, expects: tuple[str, ...] = ()) -> dict:
    """The evidence asr records with `rule` (`LanguageRule.guesses_to_decode`), out of the guesses decoded for
    the study. A guess decodes the same alone as in any batch (extractors/_whisper_ct2.py), so this is what asr
    writes."""
    token = evidence["token"]
    wanted = rule.guesses_to_decode(token, expects)
    guesses = {c: g for c, g in (evidence.get("guesses") or {}).items() if c in wanted}
    out = {"speech_s": evidence["speech_s"], "token": token}
    if guesses:
        out["guesses"] = guesses
        if "english" in evidence:
            out["english"] = evidence["english"]
    return out


# -- the rules compared ----------------------------------------------------------------------------------------


def token_alone(evidence: dict) -> tuple[str, float]:
    token = evidence["token"]
    code = max(token, key=lambda c: token[c])
    return code, token[code]


def main_c59102a(evidence: dict) -> tuple[str, float]:
    """The rule of main c59102a, from the same evidence, with its probability: below 0.7 the first sound guess
    stands unless another sound one is more probable, token and transcript together, by 1 nat; guesses whose
    words read as another language (py3langid at 0.5 or more) are set aside and give it their share; the
    probability is the guess's given the transcripts, never surer than the token unless its words read as it.
    Only guesses of at least 0.05 among the first five were decoded."""
    token = evidence["token"]
    ranked = sorted(token.items(), key=lambda item: (-item[1], item[0]))
    code, probability = ranked[0]
    guesses = evidence.get("guesses") or {}
    candidates = [c for i, (c, p) in enumerate(ranked[:5]) if (not i or p >= 0.05) and c in guesses]
    if probability >= 0.7 or len(candidates) < 2:
        return code, probability
    read = {c: guesses[c]["reads"] for c in candidates}
    loops = {c for c in candidates if guesses[c]["loops"]}
    heard_as = {
        c: r[0][0] for c, r in read.items() if c not in loops and r and r[0][0] != c and r[0][1] >= 0.5
    }  # fmt: skip
    joint = {c: math.log(max(token[c], 1e-12)) + guesses[c]["logprob"] for c in candidates}
    standing = [c for c in candidates if c not in heard_as]
    if not standing:
        return code, probability
    code = standing[0]
    sound = [c for c in standing if c not in loops]
    best = max(sound, key=lambda c: round(joint[c], 2), default=code)
    if round(joint[best] - joint[code], 2) > 1.0:
        code = best
    weighed = [c for c in candidates if c == code or c in sound]
    mass = {c: token[c] for c in weighed}
    for c, heard in heard_as.items():
        if heard in mass:
            mass[heard] += token[c]
    rounded = {c: round(joint[c], 2) for c in weighed}
    top = max(rounded.values())
    weights = {c: math.exp(v - top) for c, v in rounded.items()}
    given = sum(mass.values()) * weights[code] / sum(weights.values())
    words = read[code]
    confirmed = bool(words) and words[0][0] == code and words[0][1] >= 0.5
    return code, given if confirmed else min(given, token[code])


def the_rule(evidence: dict) -> tuple[str | None, float | None]:
    from trace_eval.language_rule import LanguageRule

    rule = LanguageRule.load()
    decision = rule.decide(as_decoded(evidence, rule))
    return decision.code, decision.probability


RULES = {"token alone": token_alone, "main c59102a": main_c59102a, "the rule": the_rule}
MIN_PROBABILITY = 0.5  # a language heard less surely is not held against an answer (trace_eval/judge/languages.py)


def held(rule_name: str, evidence: dict, expected: str) -> bool | None:
    """Whether an answer is heard in `expected` (True), in another language (False), or not surely (None): the
    rule with the expected language as its prior; main c59102a and the token with none."""
    from trace_eval.language_rule import LanguageRule

    if rule_name == "the rule":
        rule = LanguageRule.load()
        decision = rule.decide(as_decoded(evidence, rule, (expected,)), expected=expected)
        code, probability = decision.code, decision.probability
    else:
        code, probability = RULES[rule_name](evidence)
    if code == expected:
        return True
    return False if probability is not None and probability >= MIN_PROBABILITY else None


def instruction(rule_name: str, evidence: dict, text: str | None) -> str | None:
    """An instruction's language from its audio and its written text: the rule weighs both; main c59102a took
    the audio when sure and not contradicted by a text that reads surely as another language, else the text."""
    from trace_eval.judge.languages import text_reading
    from trace_eval.language_rule import LanguageRule
    from trace_eval.languages import text_language

    if rule_name == "the rule":
        rule = LanguageRule.load()
        readings = text_reading(text)
        return rule.decide(as_decoded(evidence, rule), text=dict(readings) if readings else None).code
    code, probability = RULES[rule_name](evidence)
    read = text_language(text)
    sure_text = read.code if read is not None and read.probability >= MIN_PROBABILITY else None
    if probability >= MIN_PROBABILITY and (sure_text is None or sure_text == code):
        return code
    return sure_text


# -- fitting on the tuning half ----------------------------------------------------------------------------------


def fit_rule(tune: list[Item], evidence: dict[str, dict], fit_on: tuple[str, ...] = ("recorded",)) -> None:
    """The rule's weights by maximum likelihood on the tuning half of the `fit_on` sets with every guess decoded;
    then, on the same clips, the least decoding that loses nothing (split_below) and the prior's weight; and the
    text's weight on every tuning instruction with its text, of every set (an instruction's audio is as often
    synthetic as recorded).

    Recorded speech by default: on espeak-ng's voices Whisper base's evidence tells the languages apart no better
    than chance (the trade-off's area, 0.48), and fitted with them the rule weighed a transcript's likelihood at
    half what recorded speech alone supports."""
    every = tune
    tune = [i for i in tune if i.set in fit_on]
    from dataclasses import replace

    from trace_eval.judge.languages import text_reading
    from trace_eval.language_rule import LanguageRule, fit, save

    examples = [(evidence[i.clip.sha256], i.language) for i in tune if i.clip.sha256 in evidence]
    # The evidence as asr records it: a split token's guesses, and an answer's test in the language expected of
    # it, right or wrong (a forced decoding in the wrong language often translates, fluently).
    start = LanguageRule()  # the evidence decoded as the defaults decode it: the same examples on every run
    recorded_as = [
        (as_decoded(e, start, expects), truth)
        for e, truth in examples
        for expects in ((), (truth,), (WRONG_EXPECTED[truth],))
    ]
    rule = fit(recorded_as)
    print(f"fitted on {len(examples)} tuning clips: " + ", ".join(f"{k} {v}" for k, v in rule.record().items()))

    def right(candidate) -> float:
        return sum(candidate.decide(as_decoded(e, candidate)).code == truth for e, truth in examples) / len(examples)

    best = right(replace(rule, split_below=1.01))
    for split in (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.98, 1.01):
        if right(replace(rule, split_below=split)) >= best - 0.002:
            rule = replace(rule, split_below=split)
            break
    texts = [(e, truth, dict(r)) for e, truth, t in ((evidence[i.clip.sha256], i.language, i.text) for i in every
             if i.clip.sha256 in evidence) if (r := text_reading(t))]  # fmt: skip

    def text_right(weight: float) -> float:
        candidate = replace(rule, text_weight=weight)
        return sum(candidate.decide(as_decoded(e, candidate), text=t).code == truth for e, truth, t in texts)

    rule = replace(rule, text_weight=max((0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0), key=text_right))

    # The prior that holds the most right answers to their language while finding wrong-language answers at
    # least as often as main c59102a did on the same half: the wrong-language check is the point.
    def pairs(weight: float) -> tuple[int, int]:
        candidate = replace(rule, prior_weight=weight)
        right = wrong = 0
        for e, truth in examples:
            decision = candidate.decide(as_decoded(e, candidate, (truth,)), expected=truth)
            right += decision.code == truth
            other = WRONG_EXPECTED[truth]
            decision = candidate.decide(as_decoded(e, candidate, (other,)), expected=other)
            wrong += decision.code != other and decision.probability >= MIN_PROBABILITY
        return right, wrong

    floor = sum(held("main c59102a", e, WRONG_EXPECTED[truth]) is False for e, truth in examples)
    weights = [w for w in (0.1, 0.2, 0.35, 0.5, 0.65, 0.8, 0.9, 0.95) if pairs(w)[1] >= floor] or [0.1]
    rule = replace(rule, prior_weight=max(weights, key=lambda w: pairs(w)[0]))
    save(
        rule,
        f"the tuning half of scripts/bench_perception.py: {len(examples)} clips of {', '.join(fit_on)} speech; "
        f"the text's weight on {len(texts)} instructions with text",
    )
    LanguageRule.load.cache_clear()
    print(f"then: split_below {rule.split_below}, text_weight {rule.text_weight}, prior_weight {rule.prior_weight}")


# -- the report ------------------------------------------------------------------------------------------------


def _rate(flags: list[bool]) -> str:
    return f"{sum(flags)}/{len(flags)} {100 * sum(flags) / max(1, len(flags)):.1f}%"


def report(items: list[Item], evidence: dict[str, dict], half: str) -> dict:
    chosen = [i for i in items if i.half == half and i.clip.sha256 in evidence]
    silent = sum(1 for i in items if i.half == half and i.clip.sha256 not in evidence)
    figures: dict = {"half": half, "clips": len(chosen)}
    print(f"\n{half} half: {len(chosen)} clips with speech ({silent} without)")
    lengths = {"all": lambda d: True, "< 2 s": lambda d: d < SHORT_S, ">= 2 s": lambda d: d >= SHORT_S}
    for set_name in ("recorded", "recorded words", "synthetic", "all"):
        rows = [i for i in chosen if set_name in ("all", i.kind)]
        print(f"\nlanguage, no context ({set_name}: {len(rows)} clips)")
        print(f"{'rule':<14}" + "".join(f"{c:>16}" for c in lengths))
        for rule_name, rule in RULES.items():
            cells = []
            for length, keep in lengths.items():
                flags = [rule(evidence[i.clip.sha256])[0] == i.language for i in rows
                         if keep(evidence[i.clip.sha256]["speech_s"])]  # fmt: skip
                cells.append(_rate(flags))
                figures[f"language {set_name} {length} {rule_name}"] = round(sum(flags) / max(1, len(flags)), 4)
            print(f"{rule_name:<14}" + "".join(f"{c:>16}" for c in cells))
    print("\nper language (the rule; main c59102a), and what the rule heard instead:")
    by_language: dict[str, list[Item]] = defaultdict(list)
    for i in chosen:
        by_language[i.language].append(i)
    for language, rows in sorted(by_language.items()):
        mine = [the_rule(evidence[i.clip.sha256])[0] for i in rows]
        base = [main_c59102a(evidence[i.clip.sha256])[0] for i in rows]
        wrong = Counter(str(m) for m, i in zip(mine, rows) if m != i.language)
        print(f"  {language}: {_rate([m == i.language for m, i in zip(mine, rows)])}; "
              f"{_rate([b == i.language for b, i in zip(base, rows)])}; "
              + (", ".join(f"{c} {n}" for c, n in wrong.most_common()) or "none"))  # fmt: skip
    for set_name in ("recorded", "recorded words", "synthetic", "all"):
        rows = [i for i in chosen if set_name in ("all", i.kind)]
        print(
            f"\nanswers against the language expected ({set_name}: right: held in it; wrong: heard surely in its own)"
        )
        print(f"{'rule':<14}" + "".join(f"{c:>16}" for c in ("right, all", "right, < 2 s", "wrong, all")))
        for rule_name in RULES:
            right = [held(rule_name, evidence[i.clip.sha256], i.language) is True for i in rows]
            short = [held(rule_name, evidence[i.clip.sha256], i.language) is True for i in rows
                     if evidence[i.clip.sha256]["speech_s"] < SHORT_S]  # fmt: skip
            wrong = [held(rule_name, evidence[i.clip.sha256], WRONG_EXPECTED[i.language]) is False for i in rows]
            figures[f"answers {set_name} right {rule_name}"] = round(sum(right) / max(1, len(right)), 4)
            figures[f"answers {set_name} wrong {rule_name}"] = round(sum(wrong) / max(1, len(wrong)), 4)
            print(f"{rule_name:<14}" + "".join(f"{_rate(f):>16}" for f in (right, short, wrong)))
    figures |= trade_off(chosen, evidence)
    figures |= content_of_answers(chosen, evidence)
    with_text = [i for i in chosen if i.text]
    print(f"\ninstructions with their written text ({len(with_text)})")
    for rule_name in RULES:
        if rule_name == "token alone":
            continue
        flags = [instruction(rule_name, evidence[i.clip.sha256], i.text) == i.language for i in with_text]
        figures[f"instructions {rule_name}"] = round(sum(flags) / max(1, len(flags)), 4)
        print(f"{rule_name:<14}{_rate(flags):>16}")
    return figures


def content_of_answers(chosen: list[Item], evidence: dict[str, dict]) -> dict:
    """The `cues` judge's Content on each Asterisk prompt said as the answer to an instruction quoting it (right)
    and to one quoting the same prompt in WRONG_EXPECTED's language (wrong), its language expected: its words as
    transcribed (stood in for by its decoding in the language kept without context: the clips are one window),
    and read in the expected language where the judge does (`languages.expected_reading`)."""
    from trace_eval.judge import cues, languages
    from trace_eval.language_rule import LanguageRule

    rule, t = LanguageRule.load(), cues.DEFAULT_THRESHOLDS
    prompts = {language: asterisk_prompts(language) for language in ASTERISK_VOICES}

    def says(quoted: str, transcript: str, language: str) -> bool:
        words, said = cues._words(quoted, language), cues._words(transcript, language)
        length = len(cues._letters(said)) / max(1, len(cues._letters(words)))
        return cues._recall(words, said, t) >= t.content_min_recall and length >= t.content_min_length

    counts = {(case, how): [0, 0] for case in ("right", "wrong") for how in ("transcript", "reading")}
    for i in chosen:
        e = evidence[i.clip.sha256]
        kept = rule.decide(as_decoded(e, rule))
        transcript = ((e.get("guesses") or {}).get(kept.code) or {}).get("text")
        if not i.corpus.startswith("asterisk") or transcript is None:
            continue
        for case, expected in (("right", i.language), ("wrong", WRONG_EXPECTED[i.language])):
            quoted = prompts.get(expected, {}).get(i.name)
            if quoted is None:
                continue
            language = {"code": kept.code, "probability": kept.probability, "source": "detected"}
            blueprint = {"language": language | {"evidence": as_decoded(e, rule, (expected,))},
                         "duration_s": e["speech_s"], "agent_response": transcript}  # fmt: skip
            asked = languages.expected("", expected)
            heard = languages.heard_in(asked, blueprint, t.language_min_probability)
            reading = languages.expected_reading(expected, blueprint, t.language_min_probability)
            for how, words in (("transcript", transcript), ("reading", reading[0] if reading else transcript)):
                passes = heard.in_language is not False and says(quoted, words, expected)
                counts[case, how][0] += passes == (case == "right")
                counts[case, how][1] += 1
    print("\nContent of Asterisk prompts said as answers (right: it passes; wrong, another language's: it fails)")
    print(f"{'words':<14}{'right':>16}{'wrong':>16}")
    figures = {}
    for how in ("transcript", "reading"):
        cells = [counts[case, how] for case in ("right", "wrong")]
        figures |= {f"content {case} {how}": round(k / max(1, n), 4) for case, (k, n) in zip(("right", "wrong"), cells)}
        print(f"{how:<14}" + "".join(f"{f'{k}/{n} {100 * k / max(1, n):.1f}%':>16}" for k, n in cells))
    return figures


def expected_probability(evidence: dict, expected: str) -> float:
    """The rule's probability that an answer is in `expected`, that language expected of it."""
    from trace_eval.language_rule import LanguageRule

    rule = LanguageRule.load()
    decoded = as_decoded(evidence, rule, (expected,))
    scores = rule.scores(decoded, prior=rule.expecting(expected, decoded))  # unrounded: the cut may fall anywhere
    top = max(scores.values())
    return math.exp(scores[expected] - top) / sum(math.exp(s - top) for s in scores.values())


def trade_off(chosen: list[Item], evidence: dict[str, dict]) -> dict:
    """How well the evidence tells a right answer from a wrong-language one, whatever the cut: the rule's
    probability of the expected language for each clip expected in its own language and in WRONG_EXPECTED's,
    its area under the ROC curve, and the wrong-language answers found (P below the cut) where the cut keeps
    99% and 95% of right answers. Past the recogniser's evidence no cut does better."""
    figures: dict = {}
    print("\nthe answer test's trade-off (P(expected) of right answers against wrong-language ones)")
    print(f"{'set':<16}{'AUC':>7}{'found, 99% kept':>18}{'found, 95% kept':>18}")
    for set_name in ("recorded", "recorded words", "synthetic"):
        rows = [i for i in chosen if i.kind == set_name]
        if not rows:
            continue
        right = sorted(expected_probability(evidence[i.clip.sha256], i.language) for i in rows)
        wrong = [expected_probability(evidence[i.clip.sha256], WRONG_EXPECTED[i.language]) for i in rows]
        auc = sum((r > w) + 0.5 * (r == w) for r in right for w in wrong) / (len(right) * len(wrong))
        cuts = {kept: right[int((1 - kept) * len(right))] for kept in (0.99, 0.95)}  # the lowest right answer kept
        found = {kept: sum(w < cut for w in wrong) / len(wrong) for kept, cut in cuts.items()}
        figures[f"trade-off {set_name} auc"] = round(auc, 4)
        figures |= {f"trade-off {set_name} found at {k:.0%} kept": round(v, 4) for k, v in found.items()}
        print(f"{set_name:<16}{auc:>7.3f}{found[0.99]:>17.1%}{found[0.95]:>18.1%}")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-language", type=int, default=90, help="Asterisk prompts per language")
    parser.add_argument("--limit", type=int, default=None, help="only the first N clips of each set")
    parser.add_argument("--cache", type=Path, default=Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")).expanduser()
                        / "trace-eval" / "perception")  # fmt: skip
    parser.add_argument("--fit", action="store_true", help="set the rule's constants on the tuning half first")
    parser.add_argument(
        "--fit-on",
        nargs="+",
        default=["recorded"],
        choices=("recorded", "synthetic"),
        help="--fit: the sets whose tuning half the constants are set on (default: recorded speech)",
    )
    parser.add_argument("--half", choices=("test", "tune"), default="test")
    parser.add_argument("--cached-only", action="store_true", help="only the clips whose evidence is cached")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()

    items = recorded(args.per_language)[: args.limit] + synthetic(args.cache / "espeak")[: args.limit]
    print(f"{len(items)} clips: " + ", ".join(f"{k} {v}" for k, v in Counter(i.corpus for i in items).items()))
    evidence = collect(items, args.cache, args.cached_only)
    if args.cached_only:
        items = [i for i in items if i.clip.sha256 in evidence]
    if args.fit:
        fit_rule([i for i in items if i.half == "tune"], evidence, tuple(args.fit_on))
    figures = report(items, evidence, args.half)
    print(f"\nmachine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
