import sys

from trace_eval.cli import entry

sys.exit(entry())
