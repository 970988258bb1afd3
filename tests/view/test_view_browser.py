"""The audit page in a real browser: headless Chromium driven through Selenium and the system chromedriver
(Debian: apt-get install chromium chromium-driver; .ci/run installs them).

The pages open from disk as a user opens them. Every test checks that nothing reached the console and
that the page asked for nothing but files. Screenshots are saved under the pytest base temporary folder
(screenshots/, or $TRACE_SCREENSHOTS): look at them.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from decimal import ROUND_HALF_DOWN, ROUND_HALF_UP, Decimal
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from view_pages import (
    filter_and_step_ms,
    open_page,
    read_page_data,
    word_starts,
    write_large_bench,
    write_large_run,
)

from trace_eval.cli import main
from trace_eval.view import write_view


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory) -> Path:
    folder = Path(os.environ.get("TRACE_SCREENSHOTS") or tmp_path_factory.getbasetemp() / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def example_page(example_with_blueprints, tmp_path_factory) -> Path:
    """The bundled example judged by the cues backbone, and its page."""
    root = tmp_path_factory.mktemp("example-page")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TRACE_CACHE_DIR", str(root / "cache"))
        assert (
            main(
                [
                    "judge",
                    "--bench",
                    str(example_with_blueprints),
                    "--model",
                    "cues",
                    "--out",
                    str(root / "run"),
                    "--quiet",
                ]
            )
            == 0
        )
    write_view([root / "run"], root / "page")
    return root / "page"


@pytest.fixture(scope="module")
def large_runs(example_with_blueprints, tmp_path_factory) -> tuple[Path, Path]:
    """Two runs (two backbones) over 1,000 pairs."""
    root = tmp_path_factory.mktemp("large")
    bench = write_large_bench(example_with_blueprints, root, pairs=1000)
    return write_large_run(bench, root / "gemini"), write_large_run(bench, root / "gpt-4o", "openai/gpt-4o", seed=1)


@pytest.fixture(scope="module")
def large_page(large_runs) -> Path:
    page = large_runs[0].parent / "page"
    write_view([large_runs[0]], page)
    return page


def assert_quiet_and_offline(browser, page: Path) -> None:
    """Nothing reached the console, and every request since the page opened was for a file that exists."""
    errors = [entry["message"] for entry in browser.get_log("browser") if entry["level"] in ("SEVERE", "WARNING")]
    assert errors == []
    requested = []
    for entry in browser.get_log("performance"):
        event = json.loads(entry["message"])["message"]
        if event["method"] == "Network.requestWillBeSent":
            requested.append(event["params"]["request"]["url"])
    files = [Path(unquote(urlparse(url).path)) for url in requested if urlparse(url).scheme == "file"]
    assert page / "data.js" in files and all(path.is_file() for path in files)
    # chrome:// are the browser's own pages (its start page), data: what the page draws: neither is the network
    assert [url for url in requested if urlparse(url).scheme not in ("file", "data", "chrome")] == []


def list_ids(browser) -> list[str]:
    return browser.execute_script("return [...document.querySelectorAll('#list .row')].map(r => r.dataset.id)")


def current_id(browser) -> str:
    return browser.execute_script("return document.getElementById('pair-id').textContent")


def count(browser) -> str:
    return browser.execute_script("return document.getElementById('count').firstChild.textContent")


def press(browser, keys: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(browser).send_keys(keys).perform()


def choose(browser, control: str, value: str) -> None:
    from selenium.webdriver.support.ui import Select

    Select(browser.find_element("id", f"filter-{control}")).select_by_value(value)


def audio_of_the_pair(browser) -> list[dict]:
    """Every audio element of the pair shown, once it has read its file's header (or failed to)."""
    return browser.execute_async_script("""
        const done = arguments[arguments.length - 1];
        const audios = [...document.querySelectorAll('#detail audio')];
        Promise.all(audios.map(a => a.readyState >= 1 || a.error ? null : new Promise(ok => {
            a.addEventListener('loadedmetadata', ok, {once: true});
            a.addEventListener('error', ok, {once: true});
        }))).then(() => done(audios.map(a => ({src: a.src, ready: a.readyState, error: a.error && a.error.code,
                                              duration: a.duration}))));""")


def test_the_example_page_shows_every_pair_and_plays_audio_from_existing_files(
    browser, example_page, screenshots, example_with_blueprints
):
    open_page(browser, example_page)
    manifest = json.loads((example_with_blueprints / "manifest.json").read_text())
    ids = [item["index"] for item in manifest]
    assert list_ids(browser) == ids
    for number, item_id in enumerate(ids):
        assert current_id(browser) == item_id
        audio = audio_of_the_pair(browser)
        assert len(audio) == 3
        for element in audio:
            assert element["error"] is None and element["ready"] >= 1 and element["duration"] > 0, element
            assert Path(unquote(urlparse(element["src"]).path)).is_file()
        if item_id == "mini-03":
            browser.save_screenshot(str(screenshots / "pair.png"))
        if number < len(ids) - 1:
            press(browser, "j")
    press(browser, "kk")
    assert current_id(browser) == ids[-3]
    assert_quiet_and_offline(browser, example_page)


def test_the_confidence_sits_right_under_the_verdicts(browser, example_page):
    open_page(browser, example_page, "#pair=mini-01")
    cards = browser.execute_script("return [...document.getElementById('detail').children].map(e => e.className)")
    assert "card consistency" in cards, cards
    assert cards.index("card consistency") == cards.index("card verdicts") + 1, cards
    assert "confidence (stated)" in browser.find_element("css selector", ".card.consistency").text
    assert_quiet_and_offline(browser, example_page)


def test_the_word_being_spoken_is_highlighted_as_the_answer_plays(browser, example_page):
    open_page(browser, example_page, "#pair=mini-01")
    clip = read_page_data(example_page)["clips"][read_page_data(example_page)["pairs"][0]["responses"][0]["clip"]]
    starts = word_starts(clip)
    lit = """const card = document.querySelector('.response.r1');
             return [...card.querySelectorAll('.w')].findIndex(w => w.classList.contains('now'));"""
    assert browser.execute_script(lit) == -1
    press(browser, "1")  # plays response 1, as a listener would
    time.sleep(1.5)
    press(browser, "1")
    at = browser.execute_script("return document.querySelector('audio[data-role=\"1\"]').currentTime")
    assert 0.5 < at < 5.0  # it played
    spoken = max(i for i, start in enumerate(starts) if start <= at)
    assert browser.execute_script(lit) in (spoken, -1 if at > starts[spoken] + 1 else spoken)
    for word in (2, len(starts) - 2):  # seeking lights the word at the new time
        browser.execute_script(
            "document.querySelector('audio[data-role=\"1\"]').currentTime = arguments[0]", starts[word] + 0.02
        )
        time.sleep(0.3)
        assert browser.execute_script(lit) == word
    head = browser.execute_script("return document.querySelector('.response.r1 .playhead').style.left")
    assert float(head.rstrip("%")) > 50  # the plots' playhead follows too
    browser.find_elements("css selector", ".response.r1 .w")[1].click()  # a word plays from its start
    time.sleep(0.4)
    assert browser.execute_script("return document.querySelector('audio[data-role=\"1\"]').paused") is False
    press(browser, "1")
    assert_quiet_and_offline(browser, example_page)


def test_the_words_show_how_far_each_stands_out_and_how_each_phrase_ends(browser, example_page, screenshots):
    open_page(browser, example_page, "#pair=mini-07")
    data = read_page_data(example_page)
    pair = next(p for p in data["pairs"] if p["id"] == "mini-07")
    clip = data["clips"][pair["responses"][0]["clip"]]
    said = clip["prosody"]  # the example's blueprints are made by the real Stage 1, its prosody extractor included
    shown = browser.execute_script("""
        const card = document.querySelector('.response.r1');
        const words = [...card.querySelectorAll('.transcript .w')];
        return {words: words.map(w => w.firstChild.textContent),
                bars: words.map(w => w.querySelector('.pbar').getBoundingClientRect().height),
                bold: words.filter(w => w.classList.contains('prominent')).map(w => w.firstChild.textContent),
                arrows: [...card.querySelectorAll('.transcript .ending')].map(a => a.textContent),
                changes: card.querySelector('.spoken .changes').textContent};""")
    assert shown["words"] == clip["words"]
    assert shown["bold"] == [clip["words"][i] for i in said["prominent"]]
    # A bar as high as its word stands out: the more prominent of two words never has the lower bar.
    scored = [(p, bar) for p, bar in zip(said["prominence"], shown["bars"]) if p is not None]
    assert all(a_bar >= b_bar for a, a_bar in scored for b, b_bar in scored if a > b + 0.01)
    assert max(bar for _, bar in scored) > min(bar for _, bar in scored)
    assert shown["arrows"] == [
        {"rising": "↗", "falling": "↘", "level": "→"}.get(c, "·") for _, _, c, _ in said["phrases"]
    ]
    assert shown["changes"] == f"last third against the first: {said['changes']}"
    browser.execute_script("document.querySelector('.responses').scrollIntoView()")
    browser.save_screenshot(str(screenshots / "view-prosody.png"))
    assert_quiet_and_offline(browser, example_page)


def test_filters_search_and_keys_narrow_and_walk_the_list(browser, large_page, screenshots):
    data = read_page_data(large_page)
    pairs = data["pairs"]
    open_page(browser, large_page)
    assert count(browser) == "1000 pairs"
    choose(browser, "disagree", "content")
    on_content = [p["id"] for p in pairs if "content" in p["results"][0]["disagree"]]
    assert count(browser) == f"{len(on_content)} of 1000 pairs" and list_ids(browser)[0] == on_content[0]
    browser.save_screenshot(str(screenshots / "disagreements.png"))
    choose(browser, "system", "echo-s2s")
    both = [i for i in on_content if "echo-s2s" in next(p for p in pairs if p["id"] == i)["systems"]]
    assert count(browser) == f"{len(both)} of 1000 pairs"
    browser.find_element("css selector", "#count button").click()  # clear filters
    assert count(browser) == "1000 pairs"
    choose(browser, "outcome", "failed")
    failed = [p["id"] for p in pairs if p["results"][0]["status"] != "ok"]
    assert list_ids(browser) == failed[: len(list_ids(browser))] and count(browser) == f"{len(failed)} of 1000 pairs"
    choose(browser, "outcome", "undetermined")
    assert count(browser) == f"{sum(bool(p['results'][0]['undetermined']) for p in pairs)} of 1000 pairs"
    choose(browser, "outcome", "")
    choose(browser, "label", json.dumps(["people", "overall", "both_bad"], separators=(",", ":")))
    assert count(browser) == f"{sum(p['human']['overall'] == 'both_bad' for p in pairs)} of 1000 pairs"
    choose(browser, "label", "")
    choose(browser, "sort", "disagree")
    most = max(len(p["results"][0]["disagree"]) for p in pairs)
    assert len(next(p for p in pairs if p["id"] == list_ids(browser)[0])["results"][0]["disagree"]) == most
    choose(browser, "sort", "manifest")
    press(browser, "/pair-004")  # "/" goes to the search box, even from the list's controls
    assert count(browser) == "10 of 1000 pairs"
    press(browser, "\n")  # the first match, and the keys walk the list again
    press(browser, "jj")
    assert current_id(browser) == "pair-0042"
    assert browser.execute_script("return location.hash") == "#pair=pair-0042"
    press(browser, "jjjjjjjjjj")  # the end of the list stops the walk
    assert current_id(browser) == "pair-0049"
    assert_quiet_and_offline(browser, large_page)


def test_a_run_of_1000_pairs_opens_in_seconds_draws_only_what_is_on_screen_and_reaches_every_id(browser, large_page):
    ready_ms = open_page(browser, large_page, "#pair=pair-0999")
    assert ready_ms < 5000
    assert len(list_ids(browser)) < 40
    audio = audio_of_the_pair(browser)  # the benchmark's files, through links, from the page's folder
    assert len(audio) == 3 and all(a["error"] is None and a["duration"] > 0 for a in audio), audio
    seen = []
    height = browser.execute_script("return document.getElementById('list').clientHeight")
    for top in range(0, 1000 * 60, height):
        browser.execute_script(
            "const l = document.getElementById('list'); l.scrollTop = arguments[0];"
            "l.dispatchEvent(new Event('scroll'))",
            top,
        )
        browser.execute_script("return new Promise(ok => requestAnimationFrame(() => requestAnimationFrame(ok)))")
        seen += list_ids(browser)
    assert sorted(set(seen)) == [f"pair-{n:04d}" for n in range(1000)]
    took = filter_and_step_ms(browser, "paralinguistics")
    assert took < 500
    print(f"\n1,000 pairs: first pair shown after {ready_ms:.0f} ms; a filter and a step took {took:.0f} ms")
    assert_quiet_and_offline(browser, large_page)


def test_two_runs_side_by_side_show_the_pairs_where_they_differ_first(browser, large_runs, screenshots):
    page = large_runs[0].parent / "two"
    write_view(list(large_runs), page)
    pairs = read_page_data(page)["pairs"]
    open_page(browser, page)
    differ = [p["id"] for p in sorted(pairs, key=lambda p: -len(p["differ"])) if p["differ"]]  # the most first
    assert 0 < len(differ) < 1000 and list_ids(browser)[:10] == differ[:10]
    heads = browser.execute_script(
        "return [...document.querySelectorAll('.verdict-table thead th')].map(th => th.firstChild.textContent)"
    )
    assert heads == ["", "People", "gemini", "gpt-4o"]
    browser.find_element("id", "filter-differ").click()
    assert count(browser) == f"{len(differ)} of 1000 pairs"
    choose(browser, "run", "1")  # the filters now read the second run
    choose(browser, "disagree", "any")
    both = sum(bool(p["differ"]) and bool(p["results"][1]["disagree"]) for p in pairs)
    assert count(browser) == f"{both} of 1000 pairs"
    browser.save_screenshot(str(screenshots / "two-runs.png"))
    assert_quiet_and_offline(browser, page)


def fixed(value: float, digits: int) -> str:
    """`value.toFixed(digits)` as JavaScript writes it: of two nearest, the larger (974.5 is 975)."""
    exact = Decimal(value)
    return str(exact.quantize(Decimal(1).scaleb(-digits), ROUND_HALF_UP if value >= 0 else ROUND_HALF_DOWN))


def board_tables(browser) -> tuple[list[list[str]], dict[str, list[list[str]]]]:
    """The leaderboard panel's cells row by row: the rank agreement's, and the scores' per label source."""
    return browser.execute_script("""
        const cells = (rows) => [...rows].map(r => [...r.children].map(c => c.textContent));
        return [cells(document.querySelectorAll('#leaderboard .agreement tbody tr')),
                Object.fromEntries([...document.querySelectorAll('#leaderboard tbody.source')].map(t =>
                  [t.querySelector('.name').textContent, cells(t.querySelectorAll('tr:not(.source-head)'))]))];""")


def test_the_leaderboard_panel_shows_each_sources_scores_and_how_far_the_judge_ranks_as_people_do(
    browser, large_runs, tmp_path, screenshots
):
    page = tmp_path / "page"
    write_view(list(large_runs), page)
    board = read_page_data(page)["leaderboard"]
    open_page(browser, page)
    browser.find_element("id", "tab-leaderboard").click()
    assert browser.find_element("id", "leaderboard").is_displayed()
    assert not browser.find_element("id", "sidebar").is_displayed()
    assert browser.execute_script(
        "return [...document.querySelectorAll('#leaderboard h3')].map(h => h.textContent)"
    ) == ["Leaderboard: Overall", "Judge and people: rank agreement", "Scores"]
    agreement, tables = board_tables(browser)
    assert list(tables) == ["People", "gemini", "gpt-4o"]
    for row, entry in zip(agreement, board["agreement"], strict=True):
        assert row[0] == entry["run"] and row[1] == "6"
        tau = entry["kendall_tau"]
        assert row[2] == f"{fixed(tau['value'], 2)}[{fixed(tau['ci95'][0], 2)}, {fixed(tau['ci95'][1], 2)}]"
        assert row[4:] == [entry["top"]["judge"], entry["top"]["human"]]
    for rows, source in zip(tables.values(), board["sources"], strict=True):
        shown = source["tables"]["overall"]["systems"]
        assert [r[1] for r in rows] == [s["system"] for s in shown] and len(rows) == 6
        for row, s in zip(rows, shown):
            assert row[0].startswith(str(s["rank"]["value"]))
            assert row[2] == fixed(s["score"]["value"], 1)
            assert row[3] == f"{fixed(s['score']['ci95'][0], 0)}–{fixed(s['score']['ci95'][1], 0)}"
            assert row[5:10] == [
                str(n) for n in (s["pairs"], s["wins"], s["ties"]["both_good"], s["ties"]["both_bad"], s["losses"])
            ]
            assert row[10] == fixed(s["win_rate"]["value"] * 100, 0) + "%"
            assert row[11] == fixed(source["acceptability"][s["system"]]["overall"]["value"] * 100, 0) + "%"
    # every score a dot within its interval's bar, all on one scale
    assert browser.execute_script(
        "return [...document.querySelectorAll('#leaderboard .interval')].every(c => {"
        "const p = c.querySelector('.point').getBoundingClientRect(), "
        "r = c.querySelector('.range').getBoundingClientRect(), x = p.left + p.width / 2;"
        "return r.left <= x && x <= r.right})"
    )
    browser.save_screenshot(str(screenshots / "leaderboard.png"))
    browser.find_element("id", "tab-pairs").click()
    assert browser.find_element("id", "detail").is_displayed()
    assert_quiet_and_offline(browser, page)


def test_the_leaderboard_panel_says_why_it_has_no_scores(browser, example_page, example_with_blueprints, tmp_path):
    open_page(browser, example_page, "#leaderboard")  # 8 pairs: scores (with the prior), too few for intervals
    heads = browser.execute_script(
        "return [...document.querySelectorAll('#leaderboard .source-head .facts')].map(p => p.textContent)"
    )
    assert len(heads) == 2 and all(
        "no intervals: too few pairs: the data leave this score unbounded" in h for h in heads
    )
    assert all(row[3] == "–" for rows in board_tables(browser)[1].values() for row in rows)

    bench = tmp_path / "bench"
    shutil.copytree(example_with_blueprints, bench)
    items = json.loads((bench / "manifest.json").read_text())
    (bench / "manifest.json").write_text(
        json.dumps([{k: v for k, v in item.items() if k not in ("model_a", "model_b")} for item in items])
    )
    run = example_page / read_page_data(example_page)["runs"][0]["path"]  # relative to the page's folder
    write_view([run], tmp_path / "page", bench=bench)
    open_page(browser, tmp_path / "page", "#leaderboard")
    assert (
        browser.find_element("id", "leaderboard").text
        == "LEADERBOARD\nNo leaderboard: the items name no systems (model_a, model_b)."
    )
    assert_quiet_and_offline(browser, tmp_path / "page")


def test_the_leaderboard_tab_says_a_tie_at_the_top_is_a_tie(browser, tmp_path):
    """People rank clear > quiet > wrong; the run ties clear and quiet at the top."""
    import numpy as np
    import soundfile as sf

    bench = tmp_path / "bench"
    (bench / "audio").mkdir(parents=True)
    tone = 0.1 * np.sin(2 * np.pi * 220 * np.arange(8000) / 16000)
    for name in ("q", "clear", "quiet", "wrong"):
        sf.write(str(bench / "audio" / f"{name}.wav"), tone, 16000, subtype="PCM_16")
    pairs = [("clear", "quiet", "1", "both_good")] * 2 + [
        ("clear", "wrong", "1", "1"),
        ("quiet", "wrong", "1", "1"),
    ] * 3
    dims = ("content", "voice_quality", "paralinguistics")
    items = [
        {
            "id": f"p{n}",
            "instruction_path": "audio/q.wav",
            "audio1_path": f"audio/{a}.wav",
            "audio2_path": f"audio/{b}.wav",
            "model_a": a,
            "model_b": b,
            "label": dict.fromkeys((*dims, "overall"), human),
        }
        for n, (a, b, human, _) in enumerate(pairs)
    ]
    (bench / "manifest.json").write_text(json.dumps(items))
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"bench": str(bench), "fusion": "cap", "rubric": "trace"}))
    lines = [{"id": f"p{n}", "status": "ok", "verdicts": dict.fromkeys(dims, j)} for n, (*_, j) in enumerate(pairs)]
    (run / "results.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    page = tmp_path / "page"
    write_view([run], page)
    open_page(browser, page)
    browser.find_element("id", "tab-leaderboard").click()
    agreement = browser.find_element("css selector", ".card.board.agreement").text
    assert "clear and quiet (tied)" in agreement
    scores = browser.find_element("css selector", ".card.board:not(.agreement)").text
    assert "no single top system: clear and quiet tie at rank 1" in scores


def test_a_tie_between_people_shows_each_person_s_label_where_the_majority_would_be(browser, tmp_path, screenshots):
    import numpy as np
    import soundfile as sf

    from trace_eval.labels.server import LabelSession
    from trace_eval.rubrics import load_rubric

    bench = tmp_path / "bench"
    (bench / "audio").mkdir(parents=True)
    for name, hz in (("q", 200), ("a", 300), ("b", 400)):
        tone = 0.1 * np.sin(2 * np.pi * hz * np.arange(8000) / 16000)
        sf.write(str(bench / "audio" / f"{name}.wav"), tone, 16000, subtype="PCM_16")
    item = {"id": "p0", "instruction_path": "audio/q.wav", "audio1_path": "audio/a.wav", "audio2_path": "audio/b.wav"}
    (bench / "manifest.json").write_text(json.dumps([item]))
    for who, said in (("ana", "1"), ("ben", "2")):  # one says response 1, the other response 2: no majority
        session = LabelSession(bench, who, load_rubric("trace"))
        shown = {"1": "2", "2": "1"}[said] if session.swapped_for(0) else said
        labels = {"content": shown, "voice_quality": "both_good", "paralinguistics": "both_good", "overall": shown}
        session.answer(0, {"labels": labels})
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"bench": str(bench), "fusion": "cap", "rubric": "trace"}))
    verdicts = {"content": "1", "voice_quality": "both_good", "paralinguistics": "both_good"}
    (run / "results.jsonl").write_text(json.dumps({"id": "p0", "status": "ok", "verdicts": verdicts}) + "\n")
    page = tmp_path / "page"
    write_view([run], page)
    open_page(browser, page, "#pair=p0")
    cells = browser.execute_script(
        "return Object.fromEntries([...document.querySelectorAll('.verdict-table tbody tr')]"
        ".filter(r => r.querySelector('td.people'))"
        ".map(r => [r.querySelector('th').textContent, r.querySelector('td.people').innerText]))"
    )
    browser.save_screenshot(str(screenshots / "view-people-tie.png"))
    overall = next(text for title, text in cells.items() if title.startswith("Overall"))
    assert "no label" not in overall and "tie between people" in overall, cells
    assert "ana 1" in overall.replace("\n", " ") and "ben 2" in overall.replace("\n", " "), overall
    voice = next(text for title, text in cells.items() if title.startswith("Voice"))
    assert voice.strip() == "both good"  # where they agree, the majority alone
    assert_quiet_and_offline(browser, page)
