"""People's labels, kept apart from the manifest in `BENCH/labels/<annotator>.jsonl`.

Modules: store (the records, their content keys and the reader that maps them onto the current manifest,
import and export, the majority of several annotators), agreement (people's agreement with each other: raw
agreement, Cohen's kappa, Krippendorff's alpha with bootstrap intervals, position bias), sample (a seeded
draw of pairs to label, stratified by system pair, and its calibration/evaluation split), server (the
labelling page: `python -m trace_eval label`), team (one server for a team: a link each, pairs handed out to
the overlap, the lead's page), gold (pairs whose answer is known, made from the benchmark's audio or marked by
the lead), quality (each annotator's gold accuracy, agreement, position bias, time, listening), least_sure
(the pairs the judges doubt, offered after the random sample and kept apart from calibration).
"""

from trace_eval.labels.store import (
    LabelError,
    LabelRecord,
    LabelStore,
    PeopleLabels,
    content_keys,
    read_people,
)

__all__ = ["LabelError", "LabelRecord", "LabelStore", "PeopleLabels", "content_keys", "read_people"]
