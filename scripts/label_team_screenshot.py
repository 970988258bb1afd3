"""The picture of the lead's page in docs/labelling.md: a team of five halfway through its day.

    python scripts/label_team_screenshot.py docs/labelling-lead.png

Writes a benchmark of 40 pairs (tones) in a temporary folder, starts `python -m trace_eval label --team` for
five annotators (each pair by two, nearly a third of the pairs gold), and has each annotator label a dozen pairs
over HTTP, as their pages would: four careful ones who play both responses and take 15 to 40 s a pair, and
one who answers at random in 3 to 6 s without listening. Then opens the lead's page in headless Chromium
(apt-get install chromium chromium-driver) and saves the window as a 256-colour PNG.
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import random
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "labels"), str(ROOT / "scripts")]

from bench_label import write_bench  # noqa: E402
from team_pages import TeamServer, benchmark_clips  # noqa: E402
from view_pages import browser_problem, start_chromium  # noqa: E402

TEAM = ("amara", "bruno", "chen", "dilnoza", "eli")  # eli answers at random
FIELDS = ("content", "voice_quality", "paralinguistics", "overall")
NAMES = ("1", "2", "both_good", "both_bad")


def label(server: TeamServer, name: str, pairs: int, clips: set[str], rng: random.Random) -> None:
    host, port, token = re.match(r"http://([^:]+):(\d+)/\?token=(.+)", server.links[name]).groups()
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    headers = {"X-Trace-Token": token, "X-Trace-Page": f"page-{name}", "Content-Type": "application/json"}

    def get(path: str) -> bytes:
        connection.request("GET", path, headers=headers)
        return connection.getresponse().read()

    careful = name != "eli"
    for n in range(pairs):
        if json.loads(get(f"/api/pair/{n}")).get("done"):
            return
        if careful:
            a, b = (hashlib.sha256(get(f"/audio/{n}/{role}")).hexdigest() for role in "ab")
            # Gold: the intact response is one of the benchmark's clips. Otherwise a shared taste (the response
            # whose audio hash sorts first), with a disagreement now and then, as people have.
            taste = ("1" if a < b else "2") if rng.random() < 0.85 else ("2" if a < b else "1")
            pick = ("1" if a in clips else "2") if (a in clips) != (b in clips) else taste
            labels = {f: pick for f in FIELDS}
            body = {"labels": labels, "played": ["a", "b"], "seconds": round(rng.uniform(15, 40), 1)}
        else:
            body = {"labels": {f: rng.choice(NAMES) for f in FIELDS}, "played": [], "seconds": rng.uniform(3, 6)}
        connection.request("POST", f"/api/pair/{n}", body=json.dumps(body), headers=headers)
        reply = connection.getresponse()
        assert reply.status == 200, reply.read()
        reply.read()
    get(f"/api/pair/{pairs}")  # the next pair open on the page


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("png", type=Path)
    parser.add_argument("--size", default="1280x1000", help="window, WIDTHxHEIGHT (default: %(default)s)")
    args = parser.parse_args()
    problem = browser_problem()
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    from PIL import Image
    from selenium.webdriver.support.ui import WebDriverWait

    width, height = (int(n) for n in args.size.split("x"))
    with tempfile.TemporaryDirectory() as tmp:
        bench = write_bench(Path(tmp), 40)
        server = TeamServer(bench, TEAM, "--overlap", "2", "--gold-rate", "0.3", "--gold-pairs", "12", "--bar", "0.8")
        browser = None
        try:
            clips = benchmark_clips(bench)
            for k, name in enumerate(TEAM):
                label(server, name, (16, 14, 15, 13, 18)[k], clips, random.Random(k))
            browser = start_chromium(Path(tmp) / "profile", (width, height))
            # The links shown are this temporary server's; the page shows them so the lead can send them round.
            browser.get(server.lead)
            WebDriverWait(browser, 30).until(lambda b: b.execute_script("return window.TRACE_LEAD || null"))
            time.sleep(0.3)
            browser.execute_script(
                "document.getElementById('bench').textContent = 'bench · trace rubric';"  # no temporary path
                "document.querySelectorAll('.link').forEach((e) => {"
                " e.textContent = e.textContent.replace(/token=.*/, 'token=…'); });"
            )
            browser.save_screenshot(str(args.png))
        finally:
            if browser is not None:
                browser.quit()
            server.stop()
    Image.open(args.png).convert("RGB").quantize(256).save(args.png, optimize=True)
    print(f"wrote {args.png}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
