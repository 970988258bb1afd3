"""The labelling page in headless Chromium (as tests/view drives the audit page): ten pairs labelled with the
keyboard alone, the server killed with SIGKILL and started again, the page resuming at pair 11, and the ten
labels on disk with annotator, time and the order shown; a page left open while the server is down keeps what
was typed and saves it once the server is back; the skip reason and the key help for a keyboard user."""

from __future__ import annotations

import json
import stat

import pytest
from label_benches import Server, wait_for

from trace_eval.evaluation.records import load_human_labels
from trace_eval.rubrics import load_rubric

# What the labeller types per pair: a digit for each field, Tab past its reason to the next field, Enter to save.
TYPED = ("1", "3", "4", "2")  # content, voice quality, paralinguistics, overall, in the order shown
NAMES = {"1": "1", "2": "2", "3": "both_good", "4": "both_bad"}


def open_label_page(browser, url: str) -> float:
    """Open the page; the milliseconds to its first drawn pair."""
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get("about:blank")
    browser.get(url)
    WebDriverWait(browser, 30).until(
        lambda b: b.execute_script("return performance.getEntriesByName('trace-label-ready').length")
    )
    return browser.execute_script("return performance.getEntriesByName('trace-label-ready')[0].startTime")


def progress(browser) -> str:
    return browser.execute_script("return document.getElementById('progress').textContent")


def type_pair(browser, times: int = 1) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    actions = ActionChains(browser)
    for _ in range(times):
        for k, digit in enumerate(TYPED):
            actions.send_keys(digit)
            if k < len(TYPED) - 1:
                actions.send_keys(Keys.TAB, Keys.TAB)  # past the reason, to the next field
        actions.send_keys(Keys.ENTER)
    actions.perform()


def test_ten_pairs_by_keyboard_then_kill_9_and_resume_at_pair_11(bench, browser, tmp_path):
    server = Server(bench, "ana")
    try:
        open_label_page(browser, server.url)
        assert progress(browser).startswith("pair 1 of 18")
        page = browser.execute_script("return document.body.innerText")
        assert "alpha" not in page and "bravo" not in page and "charlie" not in page  # blind
        focused = browser.execute_script("return document.activeElement.dataset.field")
        assert focused == "content"
        type_pair(browser)  # one pair, then nine typed straight on, as fast as keys go: none may be lost
        wait_for(lambda: progress(browser).startswith("pair 2 of 18"))
        type_pair(browser, times=9)
        wait_for(lambda: progress(browser).startswith("pair 11 of 18"))
        # Shown as saved: the reply came after the fsync.
        assert browser.execute_script("return window.TRACE_LABEL.saves.length") == 10
        browser.save_screenshot(str(tmp_path / "label-page.png"))
    finally:
        server.kill()

    lines = (bench / "labels" / "ana.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert len(records) == 10
    items = {i["id"]: i for i in json.loads((bench / "manifest.json").read_text())}
    assert [r["pair_id"] for r in records] == list(items)[:10]
    orders = set()
    for record in records:
        assert record["annotator"] == "ana" and record["time"].endswith("Z") and record["skip"] is None
        order = record["order_shown"]
        orders.add(tuple(order))
        typed = dict(zip(("content", "voice_quality", "paralinguistics", "overall"), (NAMES[d] for d in TYPED)))
        if order == ["2", "1"]:  # B was response 1: "A better" is "2" in the manifest's numbering
            typed = {k: {"1": "2", "2": "1"}.get(v, v) for k, v in typed.items()}
        assert record["labels"] == typed
    assert orders == {("1", "2"), ("2", "1")}  # randomised per pair

    again = Server(bench, "ana")
    try:
        open_label_page(browser, again.url)
        assert progress(browser).startswith("pair 11 of 18 · 10 answered")
    finally:
        again.stop()
    human = load_human_labels(bench, load_rubric("trace"))
    assert len(human.annotators["ana"]) == 10


def test_back_changes_a_label_and_skip_records_the_reason(bench, browser):
    from selenium.webdriver.common.action_chains import ActionChains

    server = Server(bench, "ben")
    try:
        open_label_page(browser, server.url)
        type_pair(browser)
        wait_for(lambda: progress(browser).startswith("pair 2 of 18"))
        ActionChains(browser).send_keys("s", "s").perform()  # skip pair 2 with the first reason
        wait_for(lambda: progress(browser).startswith("pair 3 of 18"))
        ActionChains(browser).send_keys("p").perform()
        wait_for(lambda: progress(browser).startswith("pair 2 of 18"))
        ActionChains(browser).send_keys("p").perform()
        wait_for(lambda: progress(browser).startswith("pair 1 of 18"))
        chosen = browser.execute_script(
            "return [...document.querySelectorAll('.choice.chosen')].map(b => b.textContent)"
        )
        assert chosen == ["1A better", "3both good", "4both bad", "2B better"]  # as typed, in the order shown
        # The clips load, and switching from A to B keeps the position.
        wait_for(
            lambda: browser.execute_script(
                "return ['a', 'b'].every(r => document.getElementById('audio-' + r).duration > 0.5)"
            )
        )
        browser.execute_script("document.getElementById('audio-a').currentTime = 0.4")
        wait_for(lambda: browser.execute_script("return !document.getElementById('audio-a').seeking"))
        ActionChains(browser).send_keys("b").perform()
        position = browser.execute_script("return document.getElementById('audio-b').currentTime")
        assert position == pytest.approx(0.4, abs=0.05)
        assert browser.execute_script("return document.getElementById('audio-a').hidden")
    finally:
        server.stop()
    records = [json.loads(line) for line in (bench / "labels" / "ben.jsonl").read_text().splitlines()]
    assert records[1]["skip"] == "no sound" and records[1]["labels"] == {}


def test_the_audit_page_shows_each_annotator_beside_the_majority(bench, browser, tmp_path):
    from label_benches import label_every_pair, write_run
    from view_pages import open_page

    from trace_eval.view import write_view

    label_every_pair(bench, "ana")
    label_every_pair(bench, "ben")
    run = write_run(bench, tmp_path / "run", agree=0.8)
    write_view([run], tmp_path / "page")
    first = json.loads((bench / "manifest.json").read_text())[0]["id"]
    open_page(browser, tmp_path / "page", f"#pair={first}")
    shown = browser.execute_script("return [...document.querySelectorAll('.annotator')].map(e => e.textContent)")
    assert [text.split()[0] for text in shown] == ["ana", "ben"]
    assert not [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]


def status(browser) -> str:
    return browser.execute_script("return document.getElementById('status').textContent")


def chosen(browser) -> list[str]:
    return browser.execute_script("return [...document.querySelectorAll('.choice.chosen')].map(b => b.textContent)")


def test_a_page_left_open_through_a_crash_keeps_its_labels_and_saves_them_once_the_server_is_back(
    bench, browser, tmp_path
):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    browser.set_window_size(1280, 857)
    server = Server(bench, "ana")
    page = bench / "labels" / "ana.page.json"
    assert stat.S_IMODE(page.stat().st_mode) == 0o600  # the token is its owner's alone
    try:
        open_label_page(browser, server.url)
        type_pair(browser)
        wait_for(lambda: progress(browser).startswith("pair 2 of 18"))
        # Pair 2 typed in full, the reason too; then the server dies before Enter.
        ActionChains(browser).send_keys("2", Keys.TAB, "louder", Keys.TAB, "4", Keys.TAB, Keys.TAB, "3").perform()
        ActionChains(browser).send_keys(Keys.TAB, Keys.TAB, "1").perform()
    finally:
        server.kill()
    ActionChains(browser).send_keys(Keys.ENTER).perform()
    said = wait_for(lambda: "stopped" in status(browser) and status(browser))
    assert "the labelling server has stopped" in said and f"python -m trace_eval label {bench} --annotator ana" in said
    assert "Failed to fetch" not in said
    assert chosen(browser) == ["2B better", "4both bad", "3both good", "1A better"]  # still on the page
    browser.save_screenshot(str(tmp_path / "server-stopped.png"))
    assert len((bench / "labels" / "ana.jsonl").read_text().splitlines()) == 1

    again = Server(bench, "ana")  # the same command: the same token and port, so the open page finds it
    try:
        assert again.url == server.url
        wait_for(lambda: progress(browser).startswith("pair 3 of 18"), timeout=30)  # saved without a key
        browser.save_screenshot(str(tmp_path / "server-back.png"))
    finally:
        again.stop()
    records = [json.loads(line) for line in (bench / "labels" / "ana.jsonl").read_text().splitlines()]
    assert len(records) == 2 and records[1]["reasons"] == {"content": "louder"}
    shown = {"1": "1", "2": "2", "3": "both_good", "4": "both_bad"}
    typed = dict(zip(("content", "voice_quality", "paralinguistics", "overall"), (shown[d] for d in "2431")))
    if records[1]["order_shown"] == ["2", "1"]:
        typed = {k: {"1": "2", "2": "1"}.get(v, v) for k, v in typed.items()}
    assert records[1]["labels"] == typed

    # A token given on the command line is the page's from then on; a wrong one is still refused.
    third = Server(bench, "ana", "--token", "a-token-the-lab-chose")
    try:
        assert third.token == "a-token-the-lab-chose" and third.port == server.port
        open_label_page(browser, third.url)
        assert progress(browser).startswith("pair 3 of 18")
        browser.get(f"{third.base}/?token={server.token}")
        assert "this page needs its token" in browser.find_element("tag name", "body").text
    finally:
        third.stop()


def test_skip_with_a_reason_chosen_by_keyboard_and_messages_in_the_page_s_words(bench, browser, tmp_path):
    from selenium.webdriver.common.action_chains import ActionChains

    browser.set_window_size(1280, 857)
    server = Server(bench, "cleo")
    try:
        open_label_page(browser, server.url)
        # The key help is in view at 1280x857, with the pair's fields and buttons.
        keys = browser.execute_script(
            "const r = document.getElementById('keys').getBoundingClientRect();"
            "return [r.top, r.bottom, window.innerHeight, window.innerWidth]"
        )
        assert 0 <= keys[0] and keys[1] <= keys[2], keys
        browser.save_screenshot(str(tmp_path / "label-1280x857.png"))

        ActionChains(browser).send_keys("1").perform()  # Content only, then Enter
        ActionChains(browser).send_keys("\n").perform()
        said = wait_for(lambda: "first" in status(browser) and status(browser))
        assert said == "label Voice Quality, Paralinguistics, Overall first (or skip the pair: S)", said

        ActionChains(browser).send_keys("s").perform()
        focused = browser.execute_script("return document.activeElement.id")
        assert focused == "skip-reason" and "3 broken audio" in status(browser)
        browser.save_screenshot(str(tmp_path / "label-skip.png"))
        ActionChains(browser).send_keys("3", "\n").perform()
        wait_for(lambda: progress(browser).startswith("pair 2 of 18"))
        # Escape goes back to the labels without skipping; S, S skips with the reason in the list.
        ActionChains(browser).send_keys("s").perform()
        ActionChains(browser).send_keys("\ue00c").perform()  # Escape
        assert browser.execute_script("return document.activeElement.dataset.field") == "content"
        assert progress(browser).startswith("pair 2 of 18")
        ActionChains(browser).send_keys("s", "2", "s").perform()
        wait_for(lambda: progress(browser).startswith("pair 3 of 18"))
    finally:
        server.stop()
    records = [json.loads(line) for line in (bench / "labels" / "cleo.jsonl").read_text().splitlines()]
    assert [r["skip"] for r in records] == ["broken audio", "cannot decide"]
