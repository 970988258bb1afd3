"""Stage 2: a backbone reads the instruction and the blueprints (or audio) of an item and
gives one verdict per dimension of a rubric (trace_eval/rubrics; by default TRACE's
typed-tie Content, Voice Quality, Paralinguistics, which fusion policies turn into
an overall label).

    from trace_eval.judge import JudgeOptions, run_judge
    outcome = run_judge(JudgeOptions(bench=Path("examples/mini")))   # offline `cues` backbone
    run_judge(JudgeOptions(bench=Path("examples/mini-style"), rubric="style", model="openai/gpt-4o"))

Modules: prompts (versioned templates -> messages), backbones (the interface and
the registry by name), litellm_backbone and cues (the two built in; cues is
offline, TRACE only), openai_http (a local OpenAI-compatible server spoken to
without litellm), parse (answer -> verdict in the rubric's label spaces), cache
(answers by request key), caller (one call: cache, budget, rate limit, retries),
options (what a run is made with), judging (the loop: repairs, swapped orders,
records), combine (samples, swapped orders), confidence (how sure a verdict is),
runfolder (files of a run), runner (cases, the run), cascade (judges from cheap to
strong, escalating below calibrated thresholds).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trace_eval.judge.caller import RetryPolicy
    from trace_eval.judge.parse import ParsedVerdict, parse_verdict
    from trace_eval.judge.prompts import BLUEPRINT_GROUPS, Case, Prompt, available_prompts, load_prompt
    from trace_eval.judge.runfolder import RunFolderError, refuse
    from trace_eval.judge.runner import JudgeError, JudgeOptions, MissingBlueprintsError, RunOutcome, run_judge

# name -> the module that defines it, loaded on first use: `import trace_eval.judge.prompts` (the command
# line's options) does not pay for the run's modules, nor the command for them before its arguments are checked.
_LAZY = {
    "RetryPolicy": "trace_eval.judge.caller",
    "ParsedVerdict": "trace_eval.judge.parse",
    "parse_verdict": "trace_eval.judge.parse",
    "BLUEPRINT_GROUPS": "trace_eval.judge.prompts",
    "Case": "trace_eval.judge.prompts",
    "Prompt": "trace_eval.judge.prompts",
    "available_prompts": "trace_eval.judge.prompts",
    "load_prompt": "trace_eval.judge.prompts",
    "RunFolderError": "trace_eval.judge.runfolder",
    "refuse": "trace_eval.judge.runfolder",
    "JudgeError": "trace_eval.judge.runner",
    "JudgeOptions": "trace_eval.judge.runner",
    "MissingBlueprintsError": "trace_eval.judge.runner",
    "RunOutcome": "trace_eval.judge.runner",
    "run_judge": "trace_eval.judge.runner",
}

__all__ = [
    "BLUEPRINT_GROUPS",
    "Case",
    "JudgeError",
    "JudgeOptions",
    "MissingBlueprintsError",
    "ParsedVerdict",
    "Prompt",
    "RetryPolicy",
    "RunFolderError",
    "RunOutcome",
    "available_prompts",
    "load_prompt",
    "parse_verdict",
    "refuse",
    "run_judge",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name]), name)
        globals()[name] = value  # once loaded, a plain attribute
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
