"""The picture of the audit page in docs/view.md: one pair, its first answer caught mid-word.

    python -m trace_eval view runs/demo
    python scripts/view_screenshot.py runs/demo/view docs/view.png --pair mini-02

Opens the page in headless Chromium (apt-get install chromium chromium-driver), plays response 1 for a
moment, pauses, and saves the window as a 256-colour PNG.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from view_pages import browser_problem, open_page, start_chromium  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("page", type=Path, help="the folder `python -m trace_eval view` wrote")
    parser.add_argument("png", type=Path)
    parser.add_argument("--pair", help="the pair shown (default: the first)")
    parser.add_argument("--play", type=float, default=1.2, help="seconds of response 1 played first")
    parser.add_argument("--size", default="1360x900", help="window, WIDTHxHEIGHT")
    parser.add_argument("--at", metavar="SELECTOR", help="scroll this element into view first (e.g. .responses)")
    args = parser.parse_args()
    problem = browser_problem()
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    from PIL import Image

    width, height = (int(n) for n in args.size.split("x"))
    with tempfile.TemporaryDirectory() as profile:
        browser = start_chromium(Path(profile), (width, height))
        try:
            open_page(browser, args.page, f"#pair={args.pair}" if args.pair else "")
            play = "const a = document.querySelector('audio[data-role=\"1\"]'); a.currentTime = 0; return a.play()"
            browser.execute_script(play)
            time.sleep(args.play)
            browser.execute_script("document.querySelector('audio[data-role=\"1\"]').pause()")
            if args.at:
                browser.execute_script("document.querySelector(arguments[0]).scrollIntoView()", args.at)
            browser.save_screenshot(str(args.png))
        finally:
            browser.quit()
    Image.open(args.png).convert("RGB").quantize(256).save(args.png, optimize=True)
    print(f"wrote {args.png} ({args.png.stat().st_size // 1024} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
