"""The picture of the labelling page in docs/labelling.md: a pair of the bundled example half labelled.

    python scripts/label_screenshot.py docs/labelling.png

Copies examples/mini to a temporary folder (so no label is written into the checkout), starts
`python -m trace_eval label` on it, opens the page in headless Chromium (apt-get install chromium
chromium-driver), labels two fields and types a reason with the keyboard, plays response A for a moment,
and saves the window as a 256-colour PNG.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from view_pages import browser_problem, start_chromium  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("png", type=Path)
    parser.add_argument("--size", default="1280x857", help="window, WIDTHxHEIGHT (default: a laptop's, %(default)s)")
    args = parser.parse_args()
    problem = browser_problem()
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    from PIL import Image
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    width, height = (int(n) for n in args.size.split("x"))
    with tempfile.TemporaryDirectory() as tmp:
        bench = Path(tmp) / "mini"
        shutil.copytree(ROOT / "examples" / "mini", bench, ignore=shutil.ignore_patterns("blueprints"))
        server = subprocess.Popen(
            [sys.executable, "-m", "trace_eval", "label", str(bench), "--annotator", "ana"],
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        browser = start_chromium(Path(tmp) / "profile", (width, height))
        try:
            url = server.stdout.readline().strip() if server.stdout else ""
            browser.get(url)
            WebDriverWait(browser, 30).until(
                lambda b: b.execute_script("return performance.getEntriesByName('trace-label-ready').length")
            )
            ActionChains(browser).send_keys("3", Keys.TAB, "both say every word", Keys.TAB, "1").perform()
            browser.execute_script("document.getElementById('audio-a').play()")
            time.sleep(1.2)
            browser.execute_script("document.getElementById('audio-a').pause()")
            browser.save_screenshot(str(args.png))
        finally:
            browser.quit()
            server.terminate()
            server.wait(10)
    Image.open(args.png).convert("RGB").quantize(256).save(args.png, optimize=True)
    print(f"wrote {args.png}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
