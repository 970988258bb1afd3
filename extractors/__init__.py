"""Stage 1 extractors: one module each, registered by name (see extractors.base).

Importing this package imports every module in it, so a new extractor is one new
file and nothing else changes.
"""

from __future__ import annotations

import importlib
import pkgutil

from extractors.base import REGISTRY, Clip, ClipError, Extractor, ExtractorUnavailable, ModelInfo, Section, register

for _module in pkgutil.iter_modules(__path__):
    if _module.name != "base" and not _module.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["REGISTRY", "Clip", "ClipError", "Extractor", "ExtractorUnavailable", "ModelInfo", "Section", "register"]
