"""Write full-size stand-ins of the paper profile's models: the published layouts, random weights.

    python scripts/make_standin_models.py DIR                 # all three, about 4.5 GB
    python scripts/make_standin_models.py DIR --only emotion2vec_plus_large,accent-commonaccent-ecapa
    TRACE_MODELS_DIR=DIR python -m trace_eval blueprints BENCH --profile paper --device cpu

Folders already complete are kept (--force writes them again). What each stand-in
is, and why Whisper's says one fixed sentence, is in trace_eval/stage1/standins.py. The
Whisper tokenizer is built from the openai-whisper package's multilingual
vocabulary (installed by `make install` with --no-deps); nothing is downloaded.
Blueprints made with stand-ins carry `"standin"` in their provenance.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from trace_eval.stage1.standins import build_standins  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path, help="folder to write DIR/<card>/ into (use as TRACE_MODELS_DIR)")
    parser.add_argument("--only", help="comma-separated card names (default: all three)")
    parser.add_argument("--force", action="store_true", help="write folders again even when complete")
    args = parser.parse_args(argv)
    only = [name.strip() for name in args.only.split(",") if name.strip()] if args.only else None
    try:
        build_standins(args.directory, only, args.force)
    except (ValueError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"TRACE_MODELS_DIR={args.directory.resolve()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
