import sys

from trace_eval.cli import main

sys.exit(main())
