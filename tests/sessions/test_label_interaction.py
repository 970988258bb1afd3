"""Interaction pairs (`sessions --pairs`) on the labelling page in headless Chromium: each session's timeline drawn
in the order shown (swapped with its audio), a click on a timeline plays that session from there, and a label is
saved only once both sessions were played. A screenshot of the page is written for a person to look at
(`TRACE_SCREENSHOTS=DIR`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from label_benches import Server
from planted_sessions import interaction_benchmark

from trace_eval.cli import main


@pytest.fixture(scope="module")
def pairs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("label-interaction")
    interaction_benchmark(root / "sessions", "en", samples=1)
    assert main(["sessions", str(root / "sessions"), "--pairs", str(root / "pairs"), "--quiet"]) == 0
    return root / "pairs"


def _open(browser, url: str) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get("about:blank")
    browser.get(url)
    WebDriverWait(browser, 30).until(
        lambda b: b.execute_script("return performance.getEntriesByName('trace-label-ready').length")
    )


def test_both_sessions_drawn_and_played_before_a_label(pairs, browser, tmp_path):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    server = Server(pairs, "ana", "--rubric", "interaction")
    try:
        _open(browser, server.url)
        shown = json.loads(browser.execute_script(
            "return fetch('/api/pair/0?token=' + new URLSearchParams(location.search).get('token'))"
            ".then(r => r.text())"
        ))  # fmt: skip
        timelines = browser.execute_script("return document.querySelectorAll('.timeline').length")
        assert timelines == 2 and len(shown["timelines"]) == 2
        # Drawn as the server sends them: as many user and system stretches as each session's timeline holds.
        for k, role in enumerate("ab"):
            drawn = browser.execute_script(
                f"return [document.querySelectorAll('.timeline[data-role={role}] rect.user').length,"
                f" document.querySelectorAll('.timeline[data-role={role}] rect.system').length"
                f" + document.querySelectorAll('.timeline[data-role={role}] rect.backchannel').length]"
            )
            timeline = shown["timelines"][k]
            assert drawn == [len(timeline["speech"]["user"]),
                             len(timeline["speech"]["system"]) + len(timeline["backchannels"])]  # fmt: skip
        page = browser.execute_script("return document.body.innerText")
        assert "prompt" not in page and "deaf" not in page and "slow" not in page  # blind
        if os.environ.get("TRACE_SCREENSHOTS"):
            Path(os.environ["TRACE_SCREENSHOTS"]).mkdir(parents=True, exist_ok=True)
            browser.save_screenshot(str(Path(os.environ["TRACE_SCREENSHOTS"]) / "label-interaction.png"))

        # A label with nothing played is refused, in the page's words.
        ActionChains(browser).send_keys("1", Keys.ENTER).perform()
        WebDriverWait(browser, 10).until(lambda b: "play both sessions" in b.find_element("id", "status").text)
        assert not (pairs / "labels").exists() or not any((pairs / "labels").rglob("*.jsonl"))
        # Played (a click on each timeline plays that session from there), it is saved.
        for role in "ab":
            browser.find_element("css selector", f".timeline[data-role={role}] svg").click()
            WebDriverWait(browser, 10).until(
                lambda b, r=role: not b.execute_script(f"return document.getElementById('audio-{r}').paused")
            )
        browser.execute_script("document.querySelector('.field:not([hidden]) .choices').focus()")
        ActionChains(browser).send_keys("1", Keys.ENTER).perform()
        WebDriverWait(browser, 10).until(lambda b: any((pairs / "labels").rglob("*.jsonl")))
        (saved,) = [
            json.loads(line) for f in (pairs / "labels").rglob("*.jsonl") for line in f.read_text().splitlines()
        ]
        assert sorted(saved["played"]) == ["a", "b"] and saved["labels"] == {"interaction": "1"}
    finally:
        server.stop()
