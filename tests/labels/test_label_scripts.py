"""The labelling page with instructions in other scripts, in headless Chromium: a Mandarin instruction drawn
with Chinese glyphs (not the empty boxes of a missing font) and marked as Chinese, an Arabic one read right to
left, and a reason typed in Arabic read right to left as it is typed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from label_benches import Server, prepare_pairs, tone, wait_for
from test_label_browser import open_label_page
from view_pages import GLYPHS_DRAWN

MANDARIN = "请用开心的语气说「今天天气很好」。"
ARABIC = "قل «صباح الخير» بصوت هادئ."


@pytest.fixture
def scripts_bench(tmp_path, outputs) -> Path:
    """Two instructions, in Mandarin and in Arabic, each answered by two systems; the languages declared."""
    given = tmp_path / "given"
    for n, text in enumerate((MANDARIN, ARABIC)):
        tone(given / "instructions" / f"q{n:02d}.wav", 300 + 11 * n)
        (given / "instructions" / f"q{n:02d}.txt").write_text(text + "\n", encoding="utf-8")
        for s, system in enumerate(("alpha", "bravo")):
            tone(given / system / f"q{n:02d}.wav", 500 + 40 * s + 5 * n)
    bench = tmp_path / "bench"
    prepare_pairs(bench, given, ("alpha", "bravo"))
    manifest = json.loads((bench / "manifest.json").read_text(encoding="utf-8"))
    for item in manifest:
        item["instruction_language"] = "zh" if item["instruction_text"] == MANDARIN else "ar"
    (bench / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False), encoding="utf-8")
    return bench


def test_mandarin_and_arabic_instructions_are_drawn_and_read_in_their_direction(scripts_bench, browser, tmp_path):
    from selenium.webdriver.common.action_chains import ActionChains

    server = Server(scripts_bench, "lin")
    try:
        open_label_page(browser, server.url)
        seen = {}
        for n in range(2):
            text = browser.find_element("id", "instruction-text")
            wait_for(lambda el=text: el.text.strip())
            shown = text.text.strip()
            box = browser.execute_script(
                "const el = arguments[0], r = el.getBoundingClientRect(), range = document.createRange();"
                "range.selectNodeContents(el); const t = range.getBoundingClientRect();"
                "return {dir: getComputedStyle(el).direction, lang: el.lang, left: r.left, right: r.right,"
                " textLeft: t.left, textRight: t.right};",
                text,
            )
            seen[shown] = box
            assert browser.execute_script(GLYPHS_DRAWN, text, shown), (
                f"{shown!r} drawn as missing glyphs: no font here has them (.ci/run installs fonts-wqy-microhei)"
            )
            browser.save_screenshot(str(tmp_path / f"label-page-{box['lang']}.png"))
            if n == 0:
                ActionChains(browser).send_keys("n").perform()
                wait_for(lambda prev=shown: browser.find_element("id", "instruction-text").text.strip() != prev)
        assert set(seen) == {MANDARIN, ARABIC}
        chinese, arabic = seen[MANDARIN], seen[ARABIC]
        assert (chinese["dir"], chinese["lang"]) == ("ltr", "zh")
        assert (arabic["dir"], arabic["lang"]) == ("rtl", "ar")
        # Right to left: the line starts at the right edge of its box.
        assert abs(arabic["textRight"] - arabic["right"]) < 2 and arabic["textLeft"] - arabic["left"] > 20

        # A reason typed in Arabic is shown right to left and stored as typed.
        reason = browser.find_element("css selector", ".reason")
        reason.send_keys("الصوت واضح")
        assert browser.execute_script("return getComputedStyle(arguments[0]).direction", reason) == "rtl"
    finally:
        server.stop()
