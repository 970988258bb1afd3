"""Oracle check of the fusion policies: fuse the human dimension labels and
compare with the human overall label. Needs only the manifest."""

from __future__ import annotations

from typing import Any

import numpy as np

from fusion import get_policy
from trace_eval.rubrics import Rubric

from .analysis import FORMAT_VERSION
from .bootstrap import DEFAULT_BOOTSTRAP, BootstrapSettings, PairedBootstrap
from .records import OVERALL


def oracle(
    human: dict[str, dict[str, str]], rubric: Rubric, settings: BootstrapSettings = DEFAULT_BOOTSTRAP
) -> dict[str, Any]:
    """Per fusion policy of the rubric: how often fusing the human dimension labels (TRACE: C, VQ, P)
    reproduces the human overall label.

    Items missing any of the human labels are counted under `skipped`.
    """
    complete = [labels for labels in human.values() if all(k in labels for k in (*rubric.names, OVERALL))]
    boot = PairedBootstrap(len(complete))
    policies: dict[str, dict[str, Any]] = {}
    fusion = rubric.require_fusion()
    for name in fusion.policies:
        correct = np.array([fusion.fuse(name, labels) == labels[OVERALL] for labels in complete], dtype=np.bool_)
        n = len(complete)
        policies[name] = {"description": get_policy(name).description, "correct": int(correct.sum()), "n": n}
        if n:
            boot.add_ratio(name, correct, np.ones(n, dtype=bool))
        else:
            policies[name].update(accuracy=None, ci95=None, reason="no item has all four human labels")
    for key, estimate in boot.estimate(settings).items():
        policies[str(key)]["accuracy"] = estimate.value
        policies[str(key)]["ci95"] = list(estimate.interval) if estimate.interval else None
    return {
        "format_version": FORMAT_VERSION,
        "items": {"in_benchmark": len(human), "complete": len(complete), "skipped": len(human) - len(complete)},
        "bootstrap": settings.describe(),
        "policies": policies,
    }
