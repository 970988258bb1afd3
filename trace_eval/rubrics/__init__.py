"""Rubrics: the dimensions a judge rates, their label spaces, prompts, fusion and metrics, as data.

    from trace_eval.rubrics import load_rubric
    load_rubric("trace")           # the default: TRACE's typed-tie C / VQ / P, fused by policy
    load_rubric("multi-aspect")    # SageLM: win/lose/tie on five aspects
    load_rubric("roleplay")        # RoleJudge: 1-5 per dimension, with character and dialogue history
    load_rubric("style")           # StyleSet: voice-style instruction following, dialogue style and realism
    load_rubric("my-rubric.yaml")  # a rubric file of one's own (schemas/rubric.schema.json)

Modules: labels (label spaces), rubric (the rubric model and its loader).
"""

from trace_eval.rubrics.labels import KINDS, LabelSpace, label_space
from trace_eval.rubrics.rubric import (
    DEFAULT_RUBRIC,
    Dimension,
    Rubric,
    RubricError,
    available_rubrics,
    load_rubric,
    render_field,
    rubric_of_run,
)

__all__ = [
    "DEFAULT_RUBRIC",
    "KINDS",
    "Dimension",
    "LabelSpace",
    "Rubric",
    "RubricError",
    "available_rubrics",
    "label_space",
    "load_rubric",
    "render_field",
    "rubric_of_run",
]
