"""Judge prompts: versioned template files in trace_eval/prompts/, rendered into chat messages.

Each prompt is one YAML document (name, version, system, user or user_parts,
repair): a file here, or a prompt written inside a rubric file (trace_eval/rubrics).
Templates use `string.Template` (`$name`), so the JSON braces in the text need no
escaping. What a backbone sees about one item is a `Case`; `Prompt.render(case)`
turns it into the OpenAI-style message list every litellm backbone accepts.

Variables: $instruction, $instruction_source ("text" or "transcript of the spoken
instruction"), $instruction_language ("Spanish (es), detected with probability 0.93");
pairwise $blueprint_1, $blueprint_2, $transcript_1, $transcript_2, $language_1,
$language_2 (each response's language, and whether it differs from the
instruction's); pointwise $blueprint, $transcript, $language; and whatever the rubric adds
to the case (`Case.variables`): the item's own fields ($character,
$dialogue_history, $style_elements, ...), $dimensions and $answer_format.
"""

from __future__ import annotations

import base64
import io
import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from string import Template
from typing import Any

import yaml

from trace_eval.judge import prosody
from trace_eval.judge.languages import ClipLanguage, describe_clip, expected_reading

__all__ = [
    "BLUEPRINT_GROUPS",
    "Case",
    "Prompt",
    "PromptError",
    "available_prompts",
    "blueprint_view",
    "load_prompt",
    "load_prompt_file",
    "prompt_from_doc",
    "transcript_shown",
]

PROMPTS_DIR = Path(__file__).resolve().parent.parent / "prompts"

# --drop names -> the blueprint keys they remove from what the judge sees.
BLUEPRINT_GROUPS: dict[str, tuple[str, ...]] = {
    "emotion": ("agent_emotion",),
    "accent": ("agent_accent", "accent_probabilities"),
    "quality": ("agent_audio_quality",),
    "properties": ("agent_audio_properties", "agent_voicing"),
    "prosody": (prosody.SECTION,),
}

# What a blueprint prompt shows when its file names no blueprint_keys: every cue the TRACE prompt documents.
DEFAULT_BLUEPRINT_KEYS = (
    "agent_response",
    "agent_emotion",
    "agent_accent",
    "accent_probabilities",
    "agent_audio_quality",
    "agent_audio_properties",
    "agent_voicing",
    "duration_s",
)
# Score dictionaries are shown best first, so the top class is read at a glance.
_SCORE_KEYS = ("agent_emotion", "agent_accent", "accent_probabilities")
AUDIO_CLIPS = ("instruction", "response_1", "response_2")
# A pointwise item's one answer sits where response 1 does.
CLIP_SLOTS = {"instruction": 0, "response_1": 1, "response_2": 2, "response": 1}


class PromptError(ValueError):
    """A prompt file that is missing or malformed, or a case it cannot render."""


@dataclass(frozen=True)
class Case:
    """What the judge is shown about one item, in the order shown.

    `blueprints` and `audio` are already in presentation order: with `swapped`,
    response 1 is the manifest's audio2. Blueprints are views (`blueprint_view`)
    with dropped groups removed. A pointwise item has one blueprint, and its
    answer's audio in the response-1 slot.
    """

    pair_id: str
    instruction_transcript: str | None
    instruction_text: str | None
    blueprints: tuple[dict | None, ...] = (None, None)  # one per answer: two, or one for a pointwise rubric
    audio: tuple[Path | None, Path | None, Path | None] = (None, None, None)  # instruction, response 1, response 2
    swapped: bool = False
    # The responses' blueprints as stored (word timings, transcript quality), in presentation order, for
    # backbones that read cues directly; never rendered into prompts.
    stored: tuple[dict | None, ...] = (None, None)
    # The dimensions the judge is asked about this item (empty: every dimension of the rubric).
    dimensions: tuple[str, ...] = ()
    # Text the rubric adds to the template variables: item fields, $dimensions, $answer_format.
    variables: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    # The instruction's language (declared, or its blueprint's); None when neither records one.
    instruction_language: ClipLanguage | None = None
    # Why the instruction cannot be read (a spoken one heard as no words), and the dimensions that are then not
    # asked (rated against the instruction): they stay undetermined with that reason.
    instruction_unread: str | None = None
    unasked: tuple[str, ...] = ()

    @property
    def instruction(self) -> str | None:
        """The instruction as the judge reads it: its text when the manifest gives one (exact, where a
        recogniser may mishear the spoken instruction), else the transcript of the spoken instruction."""
        text = (self.instruction_text or "").strip()
        return text or (self.instruction_transcript or "").strip() or None

    @property
    def instruction_source(self) -> str:
        """Where `instruction` comes from, in words for the prompt."""
        return "text" if (self.instruction_text or "").strip() else "transcript of the spoken instruction"


def _compact_number(value: float) -> float | int:
    # Three significant digits keep every cue readable and the prompt short.
    if isinstance(value, bool) or isinstance(value, int):
        return value
    return float(f"{value:.3g}")


def _compact(value: Any) -> Any:
    if isinstance(value, float):
        return _compact_number(value)
    if isinstance(value, dict):
        return {k: _compact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_compact(v) for v in value]
    return value


def blueprint_view(blueprint: dict | None, keys: tuple[str, ...], drop: tuple[str, ...] = ()) -> dict | None:
    """The part of a blueprint the judge sees: `keys` in that order, minus dropped groups, numbers rounded;
    prosody as a line per phrase (trace_eval/judge/prosody.py), never its numbers per word."""
    if blueprint is None:
        return None
    dropped = {key for group in drop for key in BLUEPRINT_GROUPS[group]}
    view: dict[str, Any] = {}
    for key in keys:
        if key in dropped or key not in blueprint:
            continue
        value = blueprint[key]
        if key in _SCORE_KEYS and isinstance(value, dict):
            value = dict(sorted(value.items(), key=lambda kv: (-(kv[1] if kv[1] is not None else -1e9), kv[0])))
        elif key == prosody.SECTION and isinstance(value, dict):
            value = prosody.prompt_lines(value)
        view[key] = _compact(value)
    return view


def transcript_shown(blueprint: dict | None) -> str:
    """A response's transcript as the judge reads it, with the recogniser's doubt when it has one."""
    transcript = (blueprint or {}).get("agent_response")
    if not transcript:
        return "(no speech recognised)"
    quality = (blueprint or {}).get("transcript_quality") or {}
    if quality.get("reliable") is False:
        return f"{transcript}\n(unreliable transcript: {quality.get('reason') or 'no reason recorded'})"
    return transcript


def _audio_part(path: Path) -> dict:
    """An input_audio message part; anything but wav/mp3 is converted to 16-bit wav first."""
    suffix = path.suffix.lower().lstrip(".")
    if suffix in ("wav", "mp3"):
        data, fmt = path.read_bytes(), suffix
    else:
        import soundfile as sf

        from trace_eval.audio import load_audio

        audio = load_audio(path)
        buffer = io.BytesIO()
        sf.write(buffer, audio.samples, audio.sample_rate, format="WAV", subtype="PCM_16")
        data, fmt = buffer.getvalue(), "wav"
    return {"type": "input_audio", "input_audio": {"data": base64.b64encode(data).decode("ascii"), "format": fmt}}


@dataclass(frozen=True)
class Prompt:
    """One versioned judge prompt."""

    name: str
    version: int
    description: str
    system: str
    repair_template: str
    user: str | None = None  # text prompts
    user_parts: tuple[dict, ...] = ()  # audio prompt: text and audio parts
    instruction_text_fallback: str = "$instruction"
    needs_blueprints: bool = True
    blueprint_keys: tuple[str, ...] = ()
    path: Path | None = field(default=None, compare=False)

    @property
    def id(self) -> str:
        """What runs and cache keys record, e.g. "trace-v2"."""
        return f"{self.name}-v{self.version}"

    @property
    def needs_audio(self) -> bool:
        return bool(self.user_parts)

    def _variables(self, case: Case) -> dict[str, str]:
        spoken_instruction = self.needs_audio and case.audio[0] is not None
        if case.instruction is None and not spoken_instruction and not case.instruction_unread:
            raise PromptError(f"pair {case.pair_id}: no instruction transcript or instruction_text to show the judge")
        instruction_language = case.instruction_language
        unread = f"(not known: {case.instruction_unread})" if case.instruction_unread else ""
        variables = {
            **case.variables,
            "instruction": case.instruction or unread,
            "instruction_source": case.instruction_source,
            "instruction_language": instruction_language.describe() if instruction_language else "not recorded",
        }
        expected = instruction_language.code if instruction_language else None
        for n, (blueprint, stored) in enumerate(zip(case.blueprints, case.stored), start=1):
            language = describe_clip(stored or blueprint, instruction_language)
            # Heard in the instruction's language but transcribed in another: shown as the `cues` judge reads it.
            reading = expected_reading(expected, stored or blueprint)
            if reading is not None and blueprint is not None and "agent_response" in blueprint:
                blueprint = {**blueprint, "agent_response": reading[0]}
                language += f"; its words {reading[1]}"
            variables[f"blueprint_{n}"] = json.dumps(blueprint, ensure_ascii=False, allow_nan=False)
            variables[f"transcript_{n}"] = transcript_shown(blueprint)
            variables[f"language_{n}"] = language
        if len(case.blueprints) == 1:  # pointwise
            variables["blueprint"], variables["transcript"] = variables["blueprint_1"], variables["transcript_1"]
            variables["language"] = variables["language_1"]
        return variables

    def _substitute(self, template: str, variables: dict[str, str], case: Case) -> str:
        try:
            return Template(template).substitute(variables)
        except KeyError as e:
            raise PromptError(
                f"pair {case.pair_id}: prompt {self.id} shows ${e.args[0]}, which this item does not "
                f"have (add the field `{e.args[0]}` to the manifest item, or a default to the "
                "rubric)"
            ) from None
        except ValueError as e:  # "$" followed by something that is not a name
            raise PromptError(f"prompt {self.id}: {e}; write $$ for a dollar sign") from None

    def render(self, case: Case) -> list[dict]:
        """Chat messages for `case`: a system message and one user message."""
        variables = self._variables(case)
        messages: list[dict] = [{"role": "system", "content": self._substitute(self.system, variables, case).strip()}]
        if not self.user_parts:
            messages.append({"role": "user", "content": self._substitute(self.user or "", variables, case).strip()})
            return messages
        parts: list[dict] = []
        for part in self.user_parts:
            if "text" in part:
                parts.append({"type": "text", "text": self._substitute(part["text"], variables, case)})
                continue
            clip = part["audio"]
            path = case.audio[CLIP_SLOTS[clip]]
            if path is not None:
                parts.append(_audio_part(path))
            elif clip == "instruction":
                parts.append(
                    {"type": "text", "text": self._substitute(self.instruction_text_fallback, variables, case)}
                )
            else:
                raise PromptError(f"pair {case.pair_id}: no audio for {clip}")
        messages.append({"role": "user", "content": parts})
        return messages

    def repair(self, error: str, case: Case | None = None) -> dict:
        """The user message that asks again after an answer that could not be used."""
        variables = {**(case.variables if case else {}), "error": error}
        return {"role": "user", "content": Template(self.repair_template).substitute(variables).strip()}


def prompt_from_doc(doc: Any, where: str, path: Path | None = None) -> Prompt:
    """A Prompt from its YAML document (a prompt file, or a prompt inside a rubric); `where` names it in errors."""
    if not isinstance(doc, dict):
        raise PromptError(f"{where}: expected a mapping with name, version, system, user or user_parts, repair")
    missing = [k for k in ("name", "version", "system", "repair") if k not in doc]
    if not ("user" in doc or "user_parts" in doc):
        missing.append("user or user_parts")
    if missing:
        raise PromptError(f"{where}: missing {', '.join(missing)}")
    parts = tuple(doc.get("user_parts") or ())
    for part in parts:
        if not (isinstance(part, dict) and ("text" in part or part.get("audio") in CLIP_SLOTS)):
            raise PromptError(
                f"{where}: user_parts entry {part!r} must be {{text: ...}} or {{audio: {'|'.join(CLIP_SLOTS)}}}"
            )
    return Prompt(
        name=str(doc["name"]),
        version=int(doc["version"]),
        description=str(doc.get("description", "")),
        system=str(doc["system"]),
        repair_template=str(doc["repair"]),
        user=doc.get("user"),
        user_parts=parts,
        instruction_text_fallback=str(doc.get("instruction_text_fallback", "$instruction")),
        needs_blueprints=bool(doc.get("needs_blueprints", True)),
        blueprint_keys=tuple(doc.get("blueprint_keys") or DEFAULT_BLUEPRINT_KEYS),
        path=path,
    )


def load_prompt_file(path: Path) -> Prompt:
    """The prompt in one YAML file."""
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise PromptError(f"{path}: not valid YAML: {e}") from e
    return prompt_from_doc(doc, str(path), path)


@cache
def available_prompts(directory: Path = PROMPTS_DIR) -> dict[str, Prompt]:
    """Every prompt file in `directory`, by name."""
    prompts = {}
    for path in sorted(directory.glob("*.yaml")):
        prompt = load_prompt_file(path)
        prompts[prompt.name] = prompt
    return prompts


def load_prompt(name: str, directory: Path = PROMPTS_DIR) -> Prompt:
    prompts = available_prompts(directory)
    if name not in prompts:
        raise PromptError(f"unknown judge prompt {name!r}; expected one of: {', '.join(sorted(prompts))}")
    return prompts[name]
