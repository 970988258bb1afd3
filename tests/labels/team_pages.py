"""A team's labelling server as the lead starts it (`python -m trace_eval label BENCH --team ...`), and an
annotator driving the real page in headless Chromium: a careful one, who plays both responses and prefers the
intact clip of a gold pair, and one who answers at random without listening. Used by the team tests and by
scripts/bench_label_team.py."""

from __future__ import annotations

import hashlib
import json
import random
import re
import subprocess
import sys
import time
from pathlib import Path

LINE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_.-]*): (http://\S+)$")

# The SHA-256 of the two responses on the page, fetched as the page fetches them.
HASHES = """
const done = arguments[arguments.length - 1];
const hex = (buf) => [...new Uint8Array(buf)].map((b) => b.toString(16).padStart(2, '0')).join('');
Promise.all(['audio-a', 'audio-b'].map((id) => fetch(document.getElementById(id).src)
  .then((r) => r.arrayBuffer()).then((b) => crypto.subtle.digest('SHA-256', b)).then(hex)))
  .then(done, (e) => done(`error: ${e}`));
"""


class TeamServer:
    """`python -m trace_eval label BENCH --team NAMES ...` in its own process; its printed URLs by name."""

    def __init__(self, bench: Path, names: tuple[str, ...], *extra: str):
        self.bench = bench
        self.process = subprocess.Popen(
            [sys.executable, "-m", "trace_eval", "label", str(bench), "--team", ",".join(names), *extra],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.links: dict[str, str] = {}
        assert self.process.stdout is not None
        while len(self.links) < len(names) + 1:
            line = self.process.stdout.readline()
            found = LINE.match(line.strip())
            if not found:
                self.process.kill()
                raise AssertionError(
                    f"no URL printed: {line!r} {self.process.stderr.read() if self.process.stderr else ''}"
                )
            self.links[found.group(1)] = found.group(2)
        self.lead = self.links.pop("lead")
        self.base = self.lead.split("/lead?")[0]

    def kill(self) -> None:
        self.process.kill()  # SIGKILL: no chance to flush anything
        self.process.wait(10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()


def benchmark_clips(bench: Path) -> set[str]:
    """The SHA-256 of every clip the manifest names: what a gold pair's intact response is one of."""
    found = set()
    for item in json.loads((bench / "manifest.json").read_text()):
        for key in ("audio1_path", "audio2_path"):
            if item.get(key):
                found.add(hashlib.sha256((bench / item[key]).read_bytes()).hexdigest())
    return found


def page_text(browser, element: str) -> str:
    return browser.execute_script(f"return document.getElementById('{element}').textContent")


def finished(browser) -> bool:
    return browser.execute_script("return !document.getElementById('done').hidden")


def wait_until(condition, timeout: float = 30.0, step: float = 0.02):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = condition()
        if value:
            return value
        time.sleep(step)
    raise AssertionError("timed out")


def open_page(browser, url: str) -> None:
    browser.get("about:blank")
    browser.get(url)
    wait_until(lambda: browser.execute_script("return performance.getEntriesByName('trace-label-ready').length"))


def label_one(browser, careful: bool, clips: set[str], rng: random.Random) -> bool:
    """Label the pair in view with the keyboard; False when the page says every pair is done."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    if finished(browser):
        return False
    before = page_text(browser, "progress")
    actions = ActionChains(browser)
    if careful:
        a, b = browser.execute_async_script(HASHES)
        # Gold: the response that is one of the benchmark's clips is the intact one. Otherwise a taste every
        # careful annotator here shares (the response whose audio hash sorts first), so that they agree.
        if (a in clips) != (b in clips):
            digit = "1" if a in clips else "2"
        else:
            digit = "1" if a < b else "2"
        digits = [digit] * 4
        # Play A, switch to B (it plays on where A still plays), then Space: B plays if A had ended, else pauses.
        ActionChains(browser).send_keys(" ", "b").perform()
        actions.send_keys(" ")
    else:
        digits = [rng.choice("1234") for _ in range(4)]
    for k, digit in enumerate(digits):
        actions.send_keys(digit)
        if k < len(digits) - 1:
            actions.send_keys(Keys.TAB, Keys.TAB)  # past the reason, to the next field
    actions.send_keys(Keys.ENTER)
    actions.perform()
    wait_until(lambda: finished(browser) or page_text(browser, "progress") != before)
    return True
