"""Size and speed of the audit page (`python -m trace_eval view`) for a run of many pairs.

    python scripts/bench_view.py                          # 1,000 pairs made from examples/mini
    python scripts/bench_view.py --pairs 5000 --words 120 --bench path/to/bench-with-blueprints

Makes a benchmark of --pairs items whose clips are all distinct (cloned from the blueprints of --bench,
answers of --words words), a judge run over it with reasoning per dimension, and its page; then, when
chromium and chromedriver are installed, opens the page in headless Chromium from disk. Reports:
1. seconds to write the page, and its size without the audio (target: a few MB for 1,000 pairs);
2. milliseconds until the page shows its first pair (target: a few seconds);
3. milliseconds to apply a filter and step to the next pair (target: well under a second).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # this checkout, not an installed copy

from view_pages import (  # noqa: E402 (after the sys.path line above: this checkout's tests/)
    browser_problem,
    filter_and_step_ms,
    open_page,
    start_chromium,  # noqa: E402
    write_large_bench,
    write_large_run,
)

from trace_eval.view import write_view  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--words", type=int, default=60, help="words per answer (instructions get a third)")
    parser.add_argument(
        "--bench",
        type=Path,
        default=ROOT / "examples" / "mini",
        help="a benchmark with blueprints to clone clips from (default: %(default)s)",
    )
    args = parser.parse_args()
    if not (args.bench / "blueprints" / "index.json").is_file():
        print(
            f"error: {args.bench} has no blueprints; run: python -m trace_eval blueprints {args.bench}", file=sys.stderr
        )
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        bench = write_large_bench(args.bench, root, pairs=args.pairs, words=args.words)
        run = write_large_run(bench, root / "run")
        start = time.perf_counter()
        files = write_view([run], root / "page")
        print(
            f"{args.pairs} pairs, {args.pairs * 3} distinct clips, answers of {args.words} words: page written in "
            f"{time.perf_counter() - start:.1f} s, {files.page_bytes / 1e6:.2f} MB without the audio"
        )
        problem = browser_problem()
        if problem:
            print(f"no load time: {problem}")
            return 0
        browser = start_chromium(root / "profile")
        try:
            loads = [open_page(browser, root / "page") for _ in range(3)]
            took = filter_and_step_ms(browser, "content")
        finally:
            browser.quit()
        print(
            f"first pair shown after {min(loads):.0f} ms (best of 3: {', '.join(f'{t:.0f}' for t in loads)}); "
            f"a filter and a step: {took:.0f} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
