"""Model cards and weight resolution.

`models/<card>.json` says which weights an extractor loads: hub id, pinned
revision, license, the files that must be present (and optionally their sha256).
Weights resolve in this order:

1. an explicit local directory (`--set NAME.model_path=DIR`),
2. `$TRACE_MODELS_DIR/<card name>/`,
3. the local Hugging Face hub cache (no network),
4. a download from the hub, unless HF_HUB_OFFLINE / TRACE_OFFLINE is set.

When none works, ExtractorUnavailable names the settings that would fix it.

A folder holding STANDIN_MARKER has random weights in the published layout
(trace_eval/stage1/standins.py): `standin_note` says so, and the extractors record it in
provenance and in their fingerprint.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from trace_eval.resources import data_dir

__all__ = ["ModelCard", "is_complete", "load_card", "resolve_model", "standin_note", "MODELS_DIR", "STANDIN_MARKER"]

MODELS_DIR = data_dir("models")
STANDIN_MARKER = "STANDIN.json"


@dataclass(frozen=True)
class ModelCard:
    name: str  # card file stem, also the folder name under TRACE_MODELS_DIR
    hub_id: str | None  # e.g. "openai/whisper-large-v3"; None for weights shipped in a package
    revision: str | None  # pinned commit on the hub
    license: str = ""
    files: tuple[str, ...] = ()  # files that must exist in a resolved directory
    sha256: dict[str, str] = field(default_factory=dict)  # file -> expected digest, checked before use
    notes: str = ""


def _unavailable(message: str) -> Exception:
    # Imported here: importing the extractors package imports every extractor, and they import this module.
    from extractors.base import ExtractorUnavailable

    return ExtractorUnavailable(message)


def load_card(name: str) -> ModelCard:
    path = MODELS_DIR / f"{name}.json"
    if not path.is_file():
        known = sorted(p.stem for p in MODELS_DIR.glob("*.json"))
        raise KeyError(f"no model card {name!r}; expected one of: {', '.join(known)}")
    data = json.loads(path.read_text())
    data["files"] = tuple(data.get("files", ()))
    return ModelCard(**{k: v for k, v in data.items() if k in ModelCard.__dataclass_fields__})


def is_complete(directory: Path, card: ModelCard) -> bool:
    """Whether `directory` holds every file the card lists."""
    return directory.is_dir() and all((directory / f).exists() for f in card.files)


def verify_sha256(directory: Path, card: ModelCard) -> None:
    for rel, expected in card.sha256.items():
        h = hashlib.sha256()
        with open(directory / rel, "rb") as f:
            while block := f.read(1 << 20):
                h.update(block)
        if h.hexdigest() != expected:
            raise _unavailable(
                f"{directory / rel}: sha256 {h.hexdigest()} does not match model card {card.name} ({expected})"
            )


def _offline() -> bool:
    return any(os.environ.get(v, "").lower() in ("1", "true", "yes") for v in ("HF_HUB_OFFLINE", "TRACE_OFFLINE"))


def resolve_model(card: ModelCard, explicit: str | Path | None = None, setting: str = "") -> Path:
    """Directory holding the card's weights, by the order in the module docstring.

    `setting` is the CLI setting that overrides the path (e.g. "emotion.model_path"),
    quoted in the error so the user knows what to pass.
    """
    tried: list[str] = []
    if explicit:
        path = Path(explicit).expanduser()
        if is_complete(path, card):
            verify_sha256(path, card)
            return path
        missing = [f for f in card.files if not (path / f).exists()] if path.is_dir() else ["the folder itself"]
        raise _unavailable(
            f"{path} does not hold {card.name} (missing: {', '.join(missing)}). To fix: pass "
            f"--set {setting or 'NAME.model_path'}=DIR with a folder holding {', '.join(card.files) or 'the weights'}"
        )
    root = os.environ.get("TRACE_MODELS_DIR")
    if root:
        path = Path(root).expanduser() / card.name
        if is_complete(path, card):
            verify_sha256(path, card)
            return path
        tried.append(f"{path} (incomplete or absent)")
    if card.hub_id:
        try:
            from huggingface_hub import snapshot_download

            try:
                path = Path(snapshot_download(card.hub_id, revision=card.revision, local_files_only=True))
                if is_complete(path, card):
                    return path
                tried.append(f"hub cache {card.hub_id} (incomplete)")
            except Exception:
                tried.append(f"hub cache {card.hub_id} (not cached)")
            if not _offline():
                try:
                    # Only the files the card names (plus small configs): hub repos also hold other formats.
                    patterns = list(card.files) + ["*.json", "*.txt"] if card.files else None
                    path = Path(snapshot_download(card.hub_id, revision=card.revision, allow_patterns=patterns))
                    if is_complete(path, card):
                        return path
                except Exception as e:
                    tried.append(f"download {card.hub_id} ({type(e).__name__}: {str(e).splitlines()[0][:120]})")
        except ImportError:
            tried.append("huggingface_hub not installed")
    fix = f"pass --set {setting}=DIR" if setting else "pass the model directory"
    raise _unavailable(
        f"weights for {card.name} not found; tried {'; '.join(tried) or 'nothing'}. "
        f"To fix: {fix}, or put them in $TRACE_MODELS_DIR/{card.name}/"
        + (f", or download {card.hub_id}@{card.revision} into the hub cache" if card.hub_id else "")
    )


def standin_note(card: ModelCard, explicit: str | Path | None = None, resolved: str | Path | None = None) -> str | None:
    """Why the weights are not the card's, when they are stand-ins; None for real weights.

    Before loading, the folder is the one resolve_model would take first without
    the network (the explicit path, else $TRACE_MODELS_DIR/<card>/); the hub cache
    and downloads hold published weights. After loading, pass the folder it used.
    """
    if resolved is not None:
        folder = Path(resolved)
    elif explicit:
        folder = Path(explicit).expanduser()
    elif os.environ.get("TRACE_MODELS_DIR"):
        folder = Path(os.environ["TRACE_MODELS_DIR"]).expanduser() / card.name
        if not is_complete(folder, card):
            return None
    else:
        return None
    marker = folder / STANDIN_MARKER
    if not marker.is_file():
        return None
    try:
        note = json.loads(marker.read_text(encoding="utf-8")).get("note")
    except (OSError, ValueError, AttributeError):
        note = None
    return f"stand-in weights ({note or 'random'}): the values are not cues"
