"""Speed of the labelling page (`python -m trace_eval label`) on a benchmark of many pairs.

    python scripts/bench_label.py                  # 1,000 pairs, 30 labelled
    python scripts/bench_label.py --pairs 5000 --label 50

Makes a benchmark of --pairs items whose clips are all distinct (short tones written here: the content key
hashes every clip), starts the server as a user does, opens the page in headless Chromium (apt-get install
chromium chromium-driver) and labels --label pairs with the keyboard. Reports:
1. seconds from starting the server to its printed URL (it hashes every clip once);
2. milliseconds from navigation until the page shows its first pair;
3. keypress to label on disk, in milliseconds: from the Enter keydown to the server's reply, which comes
   after the record is appended and fsynced (the page's own timing), and, measured from outside, from
   sending Enter to the new line being readable in labels/<annotator>.jsonl.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import wave
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # this checkout, not an installed copy

from view_pages import browser_problem, start_chromium  # noqa: E402


def write_clip(path: Path, frequency: float, seconds: float = 0.3, rate: int = 16000) -> None:
    frames = b"".join(
        struct.pack("<h", int(8000 * math.sin(2 * math.pi * frequency * n / rate))) for n in range(int(seconds * rate))
    )
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(frames)


def write_bench(root: Path, pairs: int) -> Path:
    bench = root / "bench"
    (bench / "audio").mkdir(parents=True)
    manifest = []
    for n in range(pairs):
        paths = {}
        for k, field in enumerate(("instruction_path", "audio1_path", "audio2_path")):
            relative = f"audio/p{n:05d}_{k}.wav"
            write_clip(bench / relative, 200 + 0.37 * n + 300 * k)
            paths[field] = relative
        manifest.append({"id": f"pair-{n:05d}", **paths, "instruction_text": f"Instruction {n}: say it slowly."})
    (bench / "manifest.json").write_text(json.dumps(manifest))
    return bench


def lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.is_file() else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--label", type=int, default=30, help="pairs labelled with the keyboard")
    args = parser.parse_args()
    problem = browser_problem()
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        bench = write_bench(root, args.pairs)
        start = time.perf_counter()
        server = subprocess.Popen(
            [sys.executable, "-m", "trace_eval", "label", str(bench), "--annotator", "bench"],
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        try:
            url = server.stdout.readline().strip() if server.stdout else ""
            started = time.perf_counter() - start
            print(f"{args.pairs} pairs, {3 * args.pairs} distinct clips: server up in {started:.2f} s", flush=True)
            browser = start_chromium(root / "profile")
            try:
                draws = []
                for _ in range(3):
                    browser.get("about:blank")
                    browser.get(url)
                    WebDriverWait(browser, 60).until(
                        lambda b: b.execute_script("return performance.getEntriesByName('trace-label-ready').length")
                    )
                    draws.append(
                        browser.execute_script("return performance.getEntriesByName('trace-label-ready')[0].startTime")
                    )
                print(f"first pair drawn: {statistics.median(draws):.0f} ms after navigation (median of 3)")
                store = bench / "labels" / "bench.jsonl"
                outside = []
                for n in range(args.label):
                    actions = ActionChains(browser)
                    for k, digit in enumerate("1342"):
                        actions.send_keys(digit)
                        if k < 3:
                            actions.send_keys(Keys.TAB, Keys.TAB)
                    actions.perform()
                    before = lines(store)
                    sent = time.perf_counter()
                    ActionChains(browser).send_keys(Keys.ENTER).perform()
                    while lines(store) == before:
                        if time.perf_counter() - sent > 20:
                            raise RuntimeError(f"pair {n + 1}: no label on disk 20 s after Enter")
                        time.sleep(0.0005)
                    outside.append(1000 * (time.perf_counter() - sent))
                    WebDriverWait(browser, 20).until(  # the next pair is shown: its fields take keys
                        lambda b, n=n: b.execute_script(
                            "return document.getElementById('progress').textContent"
                        ).startswith(f"pair {n + 2} of")
                    )
                page = browser.execute_script("return window.TRACE_LABEL.saves")
            finally:
                browser.quit()
        finally:
            server.terminate()
            server.wait(10)
        assert lines(store) == args.label
        for name, values in (
            ("page: Enter keydown to the saved reply", page),
            ("outside: Enter sent to line on disk", outside),
        ):
            values = sorted(values)
            p95 = values[min(len(values) - 1, math.ceil(0.95 * len(values)) - 1)]
            median = statistics.median(values)
            print(f"keypress to disk ({name}): median {median:.1f} ms, p95 {p95:.1f} ms, n={len(values)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
