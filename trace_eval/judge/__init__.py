"""Stage 2: a backbone reads the instruction and the blueprints (or audio) of an item and
gives one verdict per dimension of a rubric (trace_eval/rubrics; by default TRACE's
typed-tie Content, Voice Quality, Paralinguistics, which fusion policies turn into
an overall label).

    from trace_eval.judge import JudgeOptions, run_judge
    outcome = run_judge(JudgeOptions(bench=Path("examples/mini")))   # offline `cues` backbone
    run_judge(JudgeOptions(bench=Path("examples/mini-style"), rubric="style", model="openai/gpt-4o"))

Modules: prompts (versioned templates -> messages), backbones (the interface and
the registry by name), litellm_backbone and cues (the two built in; cues is
offline, TRACE only), parse (answer -> verdict in the rubric's label spaces), cache
(answers by request key), caller (one call: cache, budget, rate limit, retries),
options (what a run is made with), judging (the loop: repairs, swapped orders,
records), combine (samples, swapped orders), confidence (how sure a verdict is),
runfolder (files of a run), runner (cases, the run), cascade (judges from cheap to
strong, escalating below calibrated thresholds).
"""

from trace_eval.judge.caller import RetryPolicy
from trace_eval.judge.parse import ParsedVerdict, parse_verdict
from trace_eval.judge.prompts import BLUEPRINT_GROUPS, Case, Prompt, available_prompts, load_prompt
from trace_eval.judge.runfolder import RunFolderError, refuse
from trace_eval.judge.runner import JudgeError, JudgeOptions, MissingBlueprintsError, RunOutcome, run_judge

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
