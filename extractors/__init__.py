"""Stage 1 extractors: one module each, registered by name (see extractors.base).

Importing this package imports every module in it, so a new extractor is one new
file and nothing else changes.
"""

from __future__ import annotations

import importlib
import pkgutil

from extractors import numerics

# Before numpy (imported by extractors.base) or any other numeric library loads: they read their code paths from
# the environment once.
numerics.pin()

from extractors.base import REGISTRY, Clip, ClipError, Extractor, ExtractorUnavailable, ModelInfo, Section, register  # noqa: E402

for _module in pkgutil.iter_modules(__path__):
    if _module.name not in ("base", "numerics") and not _module.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["REGISTRY", "Clip", "ClipError", "Extractor", "ExtractorUnavailable", "ModelInfo", "Section", "register"]
