"""What a judge run is made with: the options the runner, the judging loop and a cascade share (below all
three, so none imports another for them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from trace_eval.judge.caller import RetryPolicy
from trace_eval.rubrics import DEFAULT_RUBRIC

__all__ = ["JudgeOptions"]


@dataclass
class JudgeOptions:
    """Everything a judge run is made with. Only some fields change answers (see RESUME_KEYS)."""

    bench: Path
    model: str = "cues"  # a backbone's name (cues: the offline rules), else a litellm model id
    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False)  # never written anywhere
    rubric: str | Path = DEFAULT_RUBRIC  # a bundled rubric's name or a rubric file
    judge: str | None = None  # prompt of the rubric (trace: trace | transcript | audio); None for its first
    fusion: str = "cap"
    drop: tuple[str, ...] = ()  # blueprint groups hidden from the judge: emotion, accent, quality, properties
    samples: int = 1
    swap: bool = False
    temperature: float = 0.0
    max_tokens: int | None = None
    # JSON-schema response_format: on | off | auto (where litellm says the model supports it, and on the server
    # of --api-base; dropped for the rest of the run when the backbone refuses it)
    structured: str = "auto"
    repair_attempts: int = 1
    logprobs: bool = False  # ask for the label tokens' log-probabilities: a confidence from one answer
    concurrency: int = 8
    rpm: float | None = None  # requests per minute, None for no limit
    timeout_s: float = 120.0
    max_cost: float | None = None  # USD; no new calls once spent
    price_in_per_mtok: float | None = None  # USD per million tokens, for models litellm has no price for
    price_out_per_mtok: float | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    use_cache: bool = True  # False: ask again even when cached (fresh answers replace cached ones)
    cache_dir: Path | None = None
    out: Path | None = None
    limit: int | None = None  # judge only the first N pairs
    only: frozenset[str] | None = None  # judge only these items (a cascade's escalated pairs); None: all
    skip_failed: bool = False  # items with a clip without blueprint are recorded "skipped", the rest judged
    progress: bool = True
