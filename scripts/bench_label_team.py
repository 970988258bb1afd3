"""Speed of one labelling server for a team (`python -m trace_eval label BENCH --team ...`).

    python scripts/bench_label_team.py                     # five pages, 100 pairs each; then five clients flat out
    python scripts/bench_label_team.py --per-page 20 --seconds 5

1. Five pages at once: five headless Chromiums (apt-get install chromium chromium-driver), one per annotator,
   each labelling --per-page pairs with the keyboard as fast as keys go (gold pairs mixed in at --gold-rate,
   each pair labelled by two). Reports the pages' saves per second together and each save's time, from the
   Enter keydown to the reply, which comes after the label is appended and fsynced (the page's own timing).
   --think S waits about S seconds between pairs, as a person would (the pages then do not fill the CPUs).
2. What the server holds: five clients over HTTP, each on its own annotator's link, asking for a pair and
   saving it in a loop for --seconds (or until the pairs run out) with nothing between (no browser, no
   person): saves per second and the time of a save (the POST, from sending to the reply), median and 95th
   percentile.
Every save is checked on disk at the end (one line per answer).
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import re
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "labels"), str(ROOT / "scripts")]

from bench_label import write_bench  # noqa: E402
from team_pages import TeamServer, label_one, open_page  # noqa: E402
from view_pages import browser_problem, start_chromium  # noqa: E402

TEAM = ("ana", "ben", "cleo", "dan", "eve")
LABELS = {"content": "1", "voice_quality": "2", "paralinguistics": "both_good", "overall": "1"}


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(share * len(ordered)) - 1)]


def describe(values: list[float]) -> str:
    return f"median {statistics.median(values):.1f} ms, p95 {percentile(values, 0.95):.1f} ms, n={len(values)}"


def on_disk(bench: Path) -> int:
    files = [*(bench / "labels").glob("*.jsonl"), *(bench / "labels" / "team" / "gold" / "labels").glob("*.jsonl")]
    return sum(len(f.read_text().splitlines()) for f in files)


def pages(root: Path, per_page: int, gold_rate: float, think: float) -> None:
    import random

    bench = write_bench(root / "pages", math.ceil(len(TEAM) * per_page / 2) + 20)
    server = TeamServer(bench, TEAM, "--overlap", "2", "--gold-rate", str(gold_rate), "--gold-pairs", "60")
    browsers: list = [None] * len(TEAM)
    try:
        threads = [
            threading.Thread(target=lambda k=k: browsers.__setitem__(k, start_chromium(root / f"profile-{k}")))
            for k in range(len(TEAM))
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        for browser, name in zip(browsers, TEAM, strict=True):
            open_page(browser, server.links[name])
        failures: list[BaseException] = []

        def label(k: int) -> None:
            try:
                rng = random.Random(k)
                for _ in range(per_page):
                    if not label_one(browsers[k], False, set(), rng):
                        break
                    time.sleep(think * rng.uniform(0.5, 1.5))  # a person between two pairs (0: none)
            except BaseException as e:  # noqa: BLE001 - reported below
                failures.append(e)

        start = time.perf_counter()
        workers = [threading.Thread(target=label, args=(k,)) for k in range(len(TEAM))]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        wall = time.perf_counter() - start
        if failures:
            raise failures[0]
        saves = [s for b in browsers for s in b.execute_script("return window.TRACE_LABEL.saves")]
    finally:
        for b in browsers:
            if b is not None:
                b.quit()
        server.stop()
    assert on_disk(bench) == len(saves), (on_disk(bench), len(saves))
    print(
        f"five pages at once, {per_page} pairs each ({len(saves)} saves, gold {gold_rate:.0%}, overlap 2, "
        f"{think:g} s between pairs): "
        f"{len(saves) / wall:.1f} saves/s together in {wall:.1f} s"
    )
    print(f"  a save, Enter keydown to the reply after fsync (the pages' timing): {describe(saves)}")


def flat_out(root: Path, seconds: float) -> None:
    bench = write_bench(root / "flat", 1000)  # 2,000 places at overlap 2: more than the clients fill
    server = TeamServer(bench, TEAM, "--overlap", "2", "--gold-rate", "0.1", "--gold-pairs", "60")
    times: list[float] = []
    counts = dict.fromkeys(TEAM, 0)
    lock = threading.Lock()
    end = time.perf_counter() + seconds

    def client(name: str) -> None:
        host, port, token = re.match(r"http://([^:]+):(\d+)/\?token=(.+)", server.links[name]).groups()
        connection = http.client.HTTPConnection(host, int(port), timeout=30)
        headers = {"X-Trace-Token": token, "X-Trace-Page": f"bench-{name}", "Content-Type": "application/json"}
        body = json.dumps({"labels": LABELS, "played": ["a", "b"], "seconds": 1.0})
        n = 0
        while time.perf_counter() < end:
            connection.request("GET", f"/api/pair/{n}", headers=headers)
            pair = json.loads(connection.getresponse().read())
            if pair.get("done"):
                break
            sent = time.perf_counter()
            connection.request("POST", f"/api/pair/{n}", body=body, headers=headers)
            reply = connection.getresponse()
            reply.read()
            took = 1000 * (time.perf_counter() - sent)
            assert reply.status == 200
            with lock:
                times.append(took)
                counts[name] += 1
            n += 1
        connection.close()

    try:
        start = time.perf_counter()
        threads = [threading.Thread(target=client, args=(name,)) for name in TEAM]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - start
    finally:
        server.stop()
    assert on_disk(bench) == len(times)
    print(
        f"five clients flat out for {wall:.1f} s (a pair asked for, then saved; nothing between): "
        f"{len(times) / wall:.0f} saves/s, {len(times)} saves ({', '.join(f'{k} {v}' for k, v in counts.items())})"
    )
    print(f"  a save, POST sent to the reply after fsync: {describe(times)}")
    print(f"  a day of 500 pairs is {500 / (len(times) / wall):.1f} s of the server's time")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-page", type=int, default=100, help="pairs each of the five pages labels")
    parser.add_argument("--gold-rate", type=float, default=0.1)
    parser.add_argument("--seconds", type=float, default=10.0, help="how long the five clients run flat out")
    parser.add_argument(
        "--think",
        type=float,
        default=0.0,
        help="seconds a page waits between two pairs, on average (default: %(default)s, keys as fast as they go)",
    )
    parser.add_argument("--no-pages", action="store_true", help="only the five clients over HTTP")
    parser.add_argument("--no-flat", action="store_true", help="only the five pages")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if not args.no_pages:
            problem = browser_problem()
            if problem:
                print(f"error: {problem}", file=sys.stderr)
                return 2
            pages(Path(tmp), args.per_page, args.gold_rate, args.think)
        if not args.no_flat:
            flat_out(Path(tmp), args.seconds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
