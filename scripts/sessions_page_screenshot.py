"""The picture of the sessions page in docs/realtime.md: a pair of systems on one user channel, with the verdict,
the second session played from a point for a moment.

    python -c "import sys; sys.path.insert(0, 'tests'); from pathlib import Path; \\
        from planted_sessions import interaction_benchmark; interaction_benchmark(Path('demo'))"
    python -m trace_eval sessions demo --judge cues --words --language en --page demo-page
    python scripts/sessions_page_screenshot.py demo-page docs/realtime.png --pair 0 --at 4.5 --zoom 2 --size 1360x1180

Opens the page in headless Chromium (apt-get install chromium chromium-driver), clicks the second drawing at
`--at` seconds, waits `--play` seconds, pauses, and saves the window as a 256-colour PNG.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from view_pages import browser_problem, start_chromium  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("page", type=Path, help="the folder `sessions --page` wrote")
    parser.add_argument("png", type=Path)
    parser.add_argument("--pair", type=int, default=0, help="the pair shown, by its place in the list (from 0)")
    parser.add_argument("--at", type=float, default=6.0, help="where the second session is clicked, in seconds")
    parser.add_argument("--play", type=float, default=0.4, help="seconds it plays before the picture")
    parser.add_argument("--zoom", default="fit", choices=("fit", "2", "4", "8"))
    parser.add_argument("--size", default="1360x1000", help="window, WIDTHxHEIGHT")
    args = parser.parse_args()
    problem = browser_problem()
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    from PIL import Image
    from selenium.webdriver.common.action_chains import ActionChains

    width, height = (int(n) for n in args.size.split("x"))
    with tempfile.TemporaryDirectory() as profile:
        browser = start_chromium(Path(profile), (width, height))
        try:
            browser.get((args.page.resolve() / "index.html").as_uri() + f"#pair={args.pair}")
            time.sleep(1.0)
            if args.zoom != "fit":
                browser.find_element("css selector", f'.zoom button[data-zoom="{args.zoom}"]').click()
            drawing = browser.find_elements("css selector", "svg.drawing")[-1]
            # A click is placed from the centre of the part of the drawing in view (a zoomed one scrolls sideways).
            offset = browser.execute_script(
                """const s = arguments[0], at = arguments[1], r = s.getBoundingClientRect();
                   const box = s.parentElement.getBoundingClientRect();
                   const centre = (Math.max(r.left, box.left) + Math.min(r.right, box.right)) / 2;
                   return r.left + +s.dataset.x0 + at * +s.dataset.pxPerS - centre;""",
                drawing,
                args.at,
            )
            ActionChains(browser).move_to_element_with_offset(drawing, round(offset), 0).click().perform()
            time.sleep(args.play)
            browser.execute_script("document.querySelectorAll('audio').forEach((a) => a.pause())")
            browser.save_screenshot(str(args.png))
        finally:
            browser.quit()
    Image.open(args.png).convert("RGB").quantize(256).save(args.png, optimize=True)
    print(f"wrote {args.png} ({args.png.stat().st_size // 1024} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
