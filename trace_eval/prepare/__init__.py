"""Benchmark folders from published releases, local audio datasets and systems' outputs.

One module per source plans the folder (`Plan`: items, clips, the problems its join check found, the
sources); `folder.prepare_folder` writes every plan the same way, whether its files were downloaded
(`hub`) or given as a local copy.
"""

from trace_eval.prepare.dataset import parse_column_map, prepare_dataset
from trace_eval.prepare.folder import SOURCE_FILE, Plan, Prepared, PrepareError, Problem, prepare_folder, print_prepared
from trace_eval.prepare.pairs import SCHEDULES, prepare_pairs
from trace_eval.prepare.s2s_arena import prepare_s2s_arena
from trace_eval.prepare.sagelm import prepare_sagelm
from trace_eval.prepare.speakbench import prepare_speakbench

__all__ = [
    "SCHEDULES",
    "SOURCE_FILE",
    "Plan",
    "PrepareError",
    "Prepared",
    "Problem",
    "parse_column_map",
    "prepare_dataset",
    "prepare_folder",
    "prepare_pairs",
    "prepare_s2s_arena",
    "prepare_sagelm",
    "prepare_speakbench",
    "print_prepared",
]
