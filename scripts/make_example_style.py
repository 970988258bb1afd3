"""Generate the bundled style example (examples/mini-style) with espeak-ng and sox.

Pointwise items for the `style` rubric (StyleSet's two tasks): answers to a
voice-style instruction, and acted dialogues. Every answer is synthesised with
chosen settings, so every score follows from how the clip was made:

- style_following (1-5): 1 when the given text is not said; otherwise 2, 3, 4
  or 5 when none, a few, most or all of the requested style elements are done
  (with three elements: 0, 1, 2, 3 of them).
- dialogues: style (1-5) is 5 when every turn has its requested style and 1
  when none has; realism (0/1) is 1 for two distinct voices taking turns with
  pauses, 0 for one voice reading every line without a break.

    python scripts/make_example_style.py               # (re)write examples/mini-style
    python scripts/make_example_style.py --check       # regenerate in a temp dir, compare

Output is byte-identical from run to run on the same espeak-ng and sox versions
(the sox settings and checking are those of make_example.py).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from make_example import (
    AUDIO_DIR,
    FAST,
    HIGH,
    LOW,
    QUIET,
    SLOW,
    Segment,
    finish,
    render,
    reproducible_sox,
    run_cli,
    said,
)

from trace_eval.synth import SynthesisUnavailable, have_tools

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "examples" / "mini-style"
TURN_PAUSE_S = 0.2  # silence before and after each turn of a realistic dialogue

HUSH = "Please keep your voice down."
GATHER = "Everyone gather at the front door now."
LIBRARIAN = "Shh, whisper please."
CHILD = "I found a dinosaur book!"
LIBRARY_SCENE = (
    "In a library, a librarian asks an excited child to calm down. The librarian speaks slowly and "
    "quietly; the child answers quickly in a high voice."
)


@dataclass(frozen=True)
class StyleRecipe:
    """How one pointwise item is made and the scores that follow from it."""

    index: str
    instruction: str
    answer: tuple[Segment, ...]
    model: str  # the system the answer stands for
    style_elements: tuple[str, ...]
    says_the_text: bool = True  # instruction items: the given text is said
    elements_done: int = 0  # instruction items: how many of the style elements the answer does
    context: str | None = None  # dialogue items: the scenario acted out
    turns_in_style: float | None = None  # dialogue items: share of turns with their requested style
    distinct_turns: bool = False  # dialogue items: two voices, pauses between turns

    @property
    def labels(self) -> dict[str, int]:
        if self.context is None:
            return {
                "style_following": style_following(self.says_the_text, self.elements_done, len(self.style_elements))
            }
        assert self.turns_in_style is not None
        return {"style": 1 + round(4 * self.turns_in_style), "realism": int(self.distinct_turns)}


def style_following(says_the_text: bool, done: int, asked: int) -> int:
    """StyleSet's 1-5 score: 1 without the text; with it 2 (none), 3 (a few), 4 (most), 5 (all elements)."""
    if not says_the_text:
        return 1
    if done == 0:
        return 2
    if done == asked:
        return 5
    return 4 if done > asked / 2 else 3


HUSH_ELEMENTS = ("slowly", "quietly", "in a high-pitched voice")
GATHER_ELEMENTS = ("quickly", "quietly", "in a deep voice")
LIBRARY_ELEMENTS = ("librarian: slow and quiet", "child: quick and high-pitched")
LIBRARY_INSTRUCTION = f'Act out this scene. Librarian: "{LIBRARIAN}" Child: "{CHILD}"'


RECIPES: tuple[StyleRecipe, ...] = (
    StyleRecipe(
        index="style-01",
        instruction=f'Say "{HUSH}" slowly, quietly and in a high-pitched voice.',
        answer=said(HUSH, wpm=SLOW, pitch=HIGH, voice="en-us+f3", gain_db=QUIET),
        model="alpha-s2s",
        style_elements=HUSH_ELEMENTS,
        elements_done=3,
    ),
    StyleRecipe(  # slow and quiet, but a low male voice
        index="style-02",
        instruction=f'Say "{HUSH}" slowly, quietly and in a high-pitched voice.',
        answer=said(HUSH, wpm=SLOW, pitch=LOW, voice="en-us", gain_db=QUIET),
        model="bravo-s2s",
        style_elements=HUSH_ELEMENTS,
        elements_done=2,
    ),
    StyleRecipe(  # the text in a plain voice
        index="style-03",
        instruction=f'Say "{HUSH}" slowly, quietly and in a high-pitched voice.',
        answer=said(HUSH, voice="en-gb"),
        model="charlie-s2s",
        style_elements=HUSH_ELEMENTS,
        elements_done=0,
    ),
    StyleRecipe(  # every element, but other words
        index="style-04",
        instruction=f'Say "{HUSH}" slowly, quietly and in a high-pitched voice.',
        answer=said("The weather is sunny today.", wpm=SLOW, pitch=HIGH, voice="en-us+f3", gain_db=QUIET),
        model="delta-s2s",
        style_elements=HUSH_ELEMENTS,
        says_the_text=False,
        elements_done=3,
    ),
    StyleRecipe(  # quick, but at full level in a plain voice
        index="style-05",
        instruction=f'Say "{GATHER}" quickly, quietly and in a deep voice.',
        answer=said(GATHER, wpm=FAST, voice="en-us"),
        model="charlie-s2s",
        style_elements=GATHER_ELEMENTS,
        elements_done=1,
    ),
    StyleRecipe(  # two voices in their styles, with pauses between turns
        index="dialogue-01",
        instruction=LIBRARY_INSTRUCTION,
        answer=(
            said(LIBRARIAN, wpm=SLOW, voice="en-gb", gain_db=QUIET, pad_s=TURN_PAUSE_S)
            + said(CHILD, wpm=FAST, pitch=HIGH, voice="en-us+f3", pad_s=TURN_PAUSE_S)
        ),
        model="alpha-s2s",
        style_elements=LIBRARY_ELEMENTS,
        context=LIBRARY_SCENE,
        turns_in_style=1.0,
        distinct_turns=True,
    ),
    StyleRecipe(  # one plain voice reads every line without a break
        index="dialogue-02",
        instruction=LIBRARY_INSTRUCTION,
        answer=said(LIBRARIAN, voice="en-us") + said(CHILD, voice="en-us"),
        model="delta-s2s",
        style_elements=LIBRARY_ELEMENTS,
        context=LIBRARY_SCENE,
        turns_in_style=0.0,
        distinct_turns=False,
    ),
)


def _item(recipe: StyleRecipe) -> dict:
    item = {
        "id": recipe.index,
        "instruction_text": recipe.instruction,
        "audio_path": f"{AUDIO_DIR}/{recipe.index}.wav",
        "model": recipe.model,
        "style_elements": list(recipe.style_elements),
    }
    if recipe.context is not None:
        item["context"] = recipe.context
    item["label"] = recipe.labels
    return item


def generate(out_dir: Path) -> list[Path]:
    """Write manifest.json and audio/ under `out_dir`; returns the files written (relative to out_dir)."""
    if not have_tools():
        raise SynthesisUnavailable("the example needs espeak-ng and sox: apt-get install espeak-ng sox")
    audio_dir = out_dir / AUDIO_DIR
    audio_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    with reproducible_sox():
        for recipe in RECIPES:
            path = audio_dir / f"{recipe.index}.wav"
            render(recipe.answer, path)
            written.append(path)
    return finish(out_dir, written, [_item(r) for r in RECIPES])


def main(argv: list[str] | None = None) -> int:
    return run_cli(argv, __doc__.splitlines()[0], DEFAULT_OUT, generate, "make_example_style.py")


if __name__ == "__main__":
    sys.exit(main())
