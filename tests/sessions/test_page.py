"""The sessions page in a real browser (headless Chromium through Selenium, as tests/view does): sessions built
from recorded speech with planted timing (tests/planted_sessions.py), judged by the offline judge, drawn by
`sessions --page`. The marks stand where the timeline puts them, a click plays the audio from that point, a pair
shows its verdict and its reasons at the events. Screenshots are saved under the pytest base temporary folder
(screenshots/, or $TRACE_SCREENSHOTS): look at them."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import unquote, urlparse

import numpy as np
import pytest
import soundfile as sf
from planted_sessions import Track, interaction_benchmark, prompts

from trace_eval.cli import main
from trace_eval.sessions import read_session
from trace_eval.sessions.page import DATA_PREFIX, PageError, write_page
from trace_eval.sessions.session import RATE

TOLERANCE_S = 0.15  # how near the timeline finds a planted turn (docs/realtime.md, "How well it measures")


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory) -> Path:
    folder = Path(os.environ.get("TRACE_SCREENSHOTS") or tmp_path_factory.getbasetemp() / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def judged(tmp_path_factory) -> SimpleNamespace:
    """Three systems on the same two user channels, judged by cues, and the page `sessions --page` wrote."""
    root = tmp_path_factory.mktemp("judged")
    planted = interaction_benchmark(root / "bench", "en")
    out, page = root / "judged.json", root / "page"
    assert main(["sessions", str(root / "bench"), "--judge", "cues", "--out", str(out), "--page", str(page)]) == 0
    result = json.loads(out.read_text())
    index = {(s["system"], s["sample"]): k for k, s in enumerate(result["sessions"])}
    return SimpleNamespace(root=root, page=page, result=result, planted=planted, index=index)


@pytest.fixture(scope="module")
def jumping(tmp_path_factory) -> SimpleNamespace:
    """Two sessions timed without a judge: in one the system starts 0.6 s before the user's end; the other's
    folder is deleted after the run. Their words, as a recogniser with word times gives them, are kept."""
    root = tmp_path_factory.mktemp("jumping")
    said = prompts("en")
    words = {}
    for name, at in (("jumps-in", -0.6), ("gone", 0.7)):
        user, system = Track(8), Track(8)
        _, user_end = user.place(said[3], 0.5)
        system.place(said[6], user_end + at)
        folder = root / "sessions" / name
        folder.mkdir(parents=True)
        for file, track in (("input.wav", user), ("output.wav", system)):
            sf.write(folder / file, track.samples[: 8 * RATE], RATE)
        words[name] = [
            {"word": f" {w['text']}", "start": w["timestamp"][0], "end": w["timestamp"][1], "probability": 0.9}
            for w in user.words
        ]
    out = root / "timed.json"
    assert main(["sessions", str(root / "sessions"), "--out", str(out)]) == 0
    shutil.rmtree(root / "sessions" / "gone")
    return SimpleNamespace(root=root, out=out, words=words)


def open_page(browser, page: Path, fragment: str = "") -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get("about:blank")  # so that the page loads afresh, even when only its fragment changes
    for log in ("browser", "performance"):
        browser.get_log(log)
    browser.get((page / "index.html").as_uri() + fragment)
    WebDriverWait(browser, 20).until(
        lambda b: b.execute_script("return performance.getEntriesByName('trace-sessions-ready').length")
    )


def assert_quiet_and_offline(browser, page: Path) -> None:
    """Nothing reached the console, and every request was for a file of the page's folder that exists."""
    errors = [entry["message"] for entry in browser.get_log("browser") if entry["level"] in ("SEVERE", "WARNING")]
    assert errors == []
    urls = []
    for entry in browser.get_log("performance"):
        event = json.loads(entry["message"])["message"]
        if event["method"] == "Network.requestWillBeSent":
            urls.append(event["params"]["request"]["url"])
    files = [Path(unquote(urlparse(url).path)) for url in urls if urlparse(url).scheme == "file"]
    assert page / "data.js" in files and all(path.is_file() and page in path.parents for path in files), files
    assert [url for url in urls if urlparse(url).scheme not in ("file", "data", "chrome")] == []


# Everything a drawing shows, read back from the page: its scale and each mark with its place and words.
MARKS = """
const svg = document.querySelectorAll('svg.drawing')[arguments[0]];
const num = (el, name) => el.hasAttribute(name) ? +el.getAttribute(name) : null;
const all = (selector) => [...svg.querySelectorAll(selector)].map((el) => ({
  text: el.tagName === 'text' ? el.textContent : null, x: num(el, 'x'), x1: num(el, 'x1'), width: num(el, 'width'),
  t: num(el, 'data-t'), start: num(el, 'data-start'), end: num(el, 'data-end'), cls: el.getAttribute('class')}));
return {x0: +svg.dataset.x0, scale: +svg.dataset.pxPerS, width: svg.getBoundingClientRect().width,
        speech: all('rect.speech'), overlaps: all('rect.overlap'), ends: all('line.user-end'),
        latencies: all('text.latency'), barge_ins: all('line.barge-in'), stops: all('text.stop-latency'),
        words: all('text.word'), ticks: all('line.word-tick'), reasons: all('text.event-reason')};
"""


def marks(browser, drawing: int = 0) -> dict:
    return browser.execute_script(MARKS, drawing)


def at(m: dict, t: float) -> float:
    """Where the drawing puts the time t (px from its left edge)."""
    return m["x0"] + t * m["scale"]


def test_each_mark_stands_where_the_timeline_puts_it(browser, judged):
    planted = judged.planted["session-0"]
    for system, first_latency in (("prompt", 0.5), ("slow", 2.5), ("deaf", 0.5)):
        k = judged.index[(system, "session-0")]
        timeline = judged.result["sessions"][k]["timeline"]
        open_page(browser, judged.page, f"#session={k}")
        m = marks(browser)
        assert browser.find_element("id", "shown").text == f"{system} · session-0"
        for who in ("user", "system"):
            drawn = [(r["start"], r["end"]) for r in m["speech"] if who in r["cls"].split()]
            assert drawn == [tuple(s) for s in timeline["speech"][who]]
        for r in m["speech"]:
            assert r["x"] == pytest.approx(at(m, r["start"]), abs=0.01)
            assert r["width"] == pytest.approx((r["end"] - r["start"]) * m["scale"], abs=1)
        assert len(m["overlaps"]) == len(timeline["overlaps"])
        # the user's end of each turn, a line where the timeline has it and near where it was planted
        ends = [a["user_turn"][1] for a in timeline["answers"]]
        assert [e["t"] for e in m["ends"]] == ends
        assert all(e["x1"] == pytest.approx(at(m, e["t"]), abs=0.01) for e in m["ends"])
        assert ends[0] == pytest.approx(planted["first_end"], abs=TOLERANCE_S)
        # the latency written between the user's end and the system's start
        first = timeline["answers"][0]
        latency = m["latencies"][0]
        assert latency["text"] == f"{first['latency_s']:.2f} s"
        assert first["latency_s"] == pytest.approx(first_latency, abs=TOLERANCE_S)
        # under its bracket from the user's end to the system's start, or just after it where it does not fit
        assert at(m, first["user_turn"][1]) < latency["x"] <= at(m, first["system_turn"][0]) + 4
        if system == "deaf":  # talks through the second turn: a barge-in it does not yield to, left unanswered
            assert m["latencies"][1]["text"] == "no answer"
            [barge] = timeline["barge_ins"]
            assert [s["text"] for s in m["stops"]] == [f"goes on {barge['stop_latency_s']:.2f} s"]
        if system == "prompt":  # stops 0.3 s after the user begins over it
            [barge] = timeline["barge_ins"]
            assert [s["text"] for s in m["stops"]] == [f"stops after {barge['stop_latency_s']:.2f} s"]
            assert barge["stop_latency_s"] == pytest.approx(0.3, abs=TOLERANCE_S)
        if system != "slow":
            [line] = m["barge_ins"]
            assert line["t"] == barge["user_turn"][0] == pytest.approx(planted["second"][0], abs=TOLERANCE_S)
            assert line["x1"] == pytest.approx(at(m, line["t"]), abs=0.01)
        else:
            assert m["barge_ins"] == [] and m["stops"] == []
        assert m["words"] == [] and m["ticks"] == []  # not transcribed: nothing drawn, said once
        assert browser.find_element("css selector", ".notes").text.count("no words") == 1
    assert_quiet_and_offline(browser, judged.page)


def test_a_click_on_the_drawing_plays_the_session_from_that_point(browser, judged, screenshots):
    from selenium.webdriver.common.action_chains import ActionChains

    k = judged.index[("prompt", "session-0")]
    open_page(browser, judged.page, f"#session={k}")
    audio = browser.find_element("css selector", "audio")
    state = browser.execute_async_script("""
        const done = arguments[arguments.length - 1], a = arguments[0];
        const report = () => done({ready: a.readyState, error: a.error && a.error.code, duration: a.duration,
                                   src: a.src});
        if (a.readyState >= 1 || a.error) report();
        else { a.addEventListener('loadedmetadata', report, {once: true}); a.addEventListener('error', report); }""",
        audio)  # fmt: skip
    assert state["error"] is None and state["duration"] == pytest.approx(
        judged.result["sessions"][k]["timeline"]["duration_s"], abs=0.05
    )
    m = marks(browser)
    drawing = browser.find_element("css selector", "svg.drawing")
    for t in (7.0, 2.0):  # the user's second turn, then the first
        ActionChains(browser).move_to_element_with_offset(
            drawing, round(at(m, t) - m["width"] / 2), 0
        ).click().perform()
        heard = browser.execute_script("return [arguments[0].currentTime, arguments[0].paused]", audio)
        assert heard[0] == pytest.approx(t, abs=0.25) and heard[1] is False
    time.sleep(0.6)
    now, head = browser.execute_script(
        "return [arguments[0].currentTime, +document.querySelector('.playhead').getAttribute('x1')]", audio
    )
    assert now > 2.3 and head == pytest.approx(at(m, now), abs=0.3 * m["scale"])  # the playhead follows
    browser.save_screenshot(str(screenshots / "session-playing.png"))
    browser.execute_script("arguments[0].pause()", audio)
    assert_quiet_and_offline(browser, judged.page)


def test_choosing_a_pair_shows_both_sessions_with_the_verdict_and_each_event_s_reason(browser, judged, screenshots):
    verdicts = judged.result["verdicts"]
    k = next(n for n, v in enumerate(verdicts) if v["sample"] == "session-0" and v["systems"] == ["deaf", "prompt"])
    verdict = verdicts[k]
    open_page(browser, judged.page, "#session=0")
    browser.find_element("css selector", f'.row[data-kind="pair"][data-index="{k}"]').click()
    assert browser.find_element("id", "shown").text == "session-0"
    card = browser.find_element("css selector", ".card.verdict")
    assert card.find_element("css selector", ".verdict-line .chip").text == "2"
    assert card.find_element("css selector", ".verdict-line .why").text == verdict["why"]
    rows = [r.text for r in card.find_elements("css selector", "tbody tr")]
    assert len(rows) == len(verdict["events"]) and all(e["why_1"] in r and e["why_2"] in r for e, r in
                                                       zip(verdict["events"], rows))  # fmt: skip
    names = browser.execute_script("return [...document.querySelectorAll('.card.session .system-name')]"
                                   ".map(e => e.textContent)")  # fmt: skip
    assert names == ["deaf", "prompt"]  # one above the other, in the verdict's order
    for side, system in enumerate(("deaf", "prompt")):
        timeline = judged.result["sessions"][judged.index[(system, "session-0")]]["timeline"]
        m = marks(browser, side)
        reasons = {(r["text"].split(": ", 1)[1], r["t"]) for r in m["reasons"]}
        ends = {t[1] for t in timeline["turns"]["user"]}
        for e in verdict["events"]:
            assert e["kind"] == "barge-in" or e["at_s"] in ends  # at the user's end of a turn in both sessions
            assert (e["why_2" if side else "why_1"], e["at_s"]) in reasons
        assert all(r["cls"].endswith("bad") for r in m["reasons"] if "no answer" in r["text"] or "went on" in r["text"])
    browser.save_screenshot(str(screenshots / "pair.png"))
    assert_quiet_and_offline(browser, judged.page)


def test_the_audio_file_holds_the_user_left_and_the_system_right(judged):
    session = judged.result["sessions"][0]
    data, rate = sf.read(judged.page / "audio" / "000.flac", always_2d=True)
    read = read_session(session["folder"])
    assert rate == RATE and data.shape == (len(read.user), 2)
    assert np.abs(data[:, 0] - read.user).max() < 1e-3 and np.abs(data[:, 1] - read.system).max() < 1e-3


def test_a_jump_in_words_and_a_folder_gone_since_the_run(browser, jumping, tmp_path, screenshots):
    result = json.loads(jumping.out.read_text())
    for entry in result["sessions"]:
        entry["timeline"]["words"] = {"user": jumping.words[entry["sample"]], "system": None}
    page = tmp_path / "page"
    files = write_page(result, page)
    assert files.audio == 1 and len(files.without_audio) == 1 and "no such folder" in files.without_audio[0]
    text = (page / "data.js").read_text()
    assert text.startswith(DATA_PREFIX)
    shown = json.loads(text[len(DATA_PREFIX) : -2])["sessions"]
    k = next(n for n, s in enumerate(shown) if s["sample"] == "jumps-in")

    open_page(browser, page, f"#session={k}")
    m = marks(browser)
    answer = result["sessions"][k]["timeline"]["answers"][0]
    assert answer["latency_s"] == pytest.approx(-0.6, abs=TOLERANCE_S)
    assert m["latencies"][0]["text"] == f"jump-in {-answer['latency_s']:.2f} s early"
    assert "jump" in m["latencies"][0]["cls"]
    words = jumping.words["jumps-in"]
    assert len(m["ticks"]) == len(words) and len(m["words"]) >= 3  # a word that would run into the last: a tick
    for w in m["words"]:
        said = next(x for x in words if x["start"] == w["start"])
        assert w["text"] == said["word"].strip() and w["x"] == pytest.approx(at(m, said["start"]) + 2, abs=0.01)
    assert browser.find_element("css selector", ".notes").text.count("no words") == 1  # the system's, once
    browser.save_screenshot(str(screenshots / "jump-in.png"))

    gone = 1 - k
    row = browser.find_element("css selector", f'.row[data-kind="session"][data-index="{gone}"]')
    assert row.find_element("css selector", ".badge").text == "no audio"
    row.click()
    assert "no such folder" in browser.find_element("css selector", ".problem").text
    assert browser.find_elements("css selector", "audio") == []
    assert len(marks(browser)["speech"]) > 0  # drawn all the same
    assert_quiet_and_offline(browser, page)


def test_a_result_without_timelines_has_no_page(tmp_path):
    with pytest.raises(PageError, match="without --compat"):
        write_page({"mode": "full-duplex-bench", "tasks": {}, "sessions": [], "failed": []}, tmp_path / "page")
