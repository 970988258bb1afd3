"""trace-eval: judge pairs of spoken answers by textual reasoning over audio cues (TRACE).

The public API (docs/api.md), loaded on first use so that `import trace_eval` stays light (no torch,
litellm or Ray until something needs them):

    import trace_eval
    verdict = trace_eval.Judge(model="cues").compare("instruction.wav", "a.wav", "b.wav")
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

# name -> the module that defines it
_LAZY = {
    "Judge": "trace_eval.api",
    "Verdict": "trace_eval.api",
    "Run": "trace_eval.api",
    "blueprint": "trace_eval.api",
    "blueprints": "trace_eval.api",
    "judge_bench": "trace_eval.api",
    "evaluate": "trace_eval.api",
    "leaderboard": "trace_eval.api",
    "export_preferences": "trace_eval.export",
    "Preferences": "trace_eval.export",
    "JudgeError": "trace_eval.judge.runner",
    "MissingBlueprintsError": "trace_eval.judge.runner",
    "ManifestError": "trace_eval.bench",
    "RunFolderError": "trace_eval.judge.runfolder",
    "EvaluationError": "trace_eval.evaluation.records",
    "AudioLoadingError": "trace_eval.audio",
}

__all__ = [
    "AudioLoadingError",
    "EvaluationError",
    "Judge",
    "JudgeError",
    "ManifestError",
    "MissingBlueprintsError",
    "Preferences",
    "Run",
    "RunFolderError",
    "Verdict",
    "__version__",
    "blueprint",
    "blueprints",
    "evaluate",
    "export_preferences",
    "judge_bench",
    "leaderboard",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'trace_eval' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
