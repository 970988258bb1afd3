"""The audit page with clips in other languages and scripts, in headless Chromium: a Mandarin transcript joined
without spaces between its words, each clip's language beside it (marked where an answer is not in its
instruction's language), an Arabic instruction right to left, Chinese drawn with glyphs."""

from __future__ import annotations

import json

from llm_server import PairSpec, blueprint, write_benchmark
from view_pages import GLYPHS_DRAWN, open_page, read_page_data

from trace_eval.cli import main
from trace_eval.view import write_view

CHINESE = "今天天气很好。"
ARABIC_INSTRUCTION = "قل «صباح الخير» بصوت هادئ."


def _in(text: str, code: str, probability: float | None = 0.97, words: list[str] | None = None) -> dict:
    values = blueprint(text)
    values["language"] = {"code": code, "probability": probability, "source": "detected"}
    if words:  # Whisper's words of a language without spaces: characters, no space before them
        values["words"] = [
            {"word": w, "start": 0.1 + 0.2 * i, "end": 0.28 + 0.2 * i, "probability": 0.9} for i, w in enumerate(words)
        ]
    return values


def test_the_page_shows_every_script_in_its_language_and_direction(browser, tmp_path):
    specs = [
        PairSpec(
            id="zh",
            instruction_text="请说「今天天气很好」。",
            instruction=_in("请说今天天气很好。", "zh"),
            response_1=_in(CHINESE, "zh", words=["今天", "天气", "很", "好", "。"]),
            response_2=_in("The weather is nice today.", "en", 0.88),
        ),
        PairSpec(
            id="ar",
            instruction_text=ARABIC_INSTRUCTION,
            instruction=_in("قل صباح الخير بصوت هادئ", "ar"),
            response_1=_in("صباح الخير", "ar"),
            response_2=_in("صباح الخير", "ar"),
        ),
    ]
    bench = write_benchmark(tmp_path / "bench", specs)
    run = tmp_path / "run"
    assert main(["judge", "--bench", str(bench), "--model", "cues", "--out", str(run), "--quiet"]) == 0
    page = tmp_path / "page"
    write_view([run], page)
    data = read_page_data(page)
    clips = data["clips"]
    assert {c["language"]["code"] for c in clips if c["language"]} == {"zh", "en", "ar"}
    assert [c["spaced"] for c in clips if c["language"]["code"] == "zh" and c["words"]] == [False]

    open_page(browser, page, "#pair=zh")
    transcript = browser.find_element("css selector", ".response.r1 .transcript")
    assert transcript.text == CHINESE  # no spaces put between the words of a language written without them
    assert (transcript.get_attribute("lang"), transcript.get_attribute("dir")) == ("zh", "auto")
    assert browser.execute_script(GLYPHS_DRAWN, transcript, CHINESE)
    tags = [e.text for e in browser.find_elements("css selector", ".language")]
    assert tags == ["zh 0.97", "zh 0.97", "en 0.88"]  # instruction, response 1, response 2
    differs = browser.find_element("css selector", ".response.r2 .language.differs")
    assert "not the instruction's language (zh)" in differs.get_attribute("title")
    reasoning = json.loads((run / "results.jsonl").read_text(encoding="utf-8").splitlines()[0])["reasoning"]
    assert "response 2 in English, not Chinese expected" in reasoning
    browser.execute_script("document.querySelector('.responses').scrollIntoView()")
    browser.save_screenshot(str(tmp_path / "view-zh.png"))

    open_page(browser, page, "#pair=ar")
    instruction = browser.find_element("css selector", ".instruction-text")
    assert instruction.text == ARABIC_INSTRUCTION
    assert browser.execute_script("return getComputedStyle(arguments[0]).direction", instruction) == "rtl"
    assert browser.find_element("css selector", ".response.r1 .transcript").get_attribute("lang") == "ar"
    browser.save_screenshot(str(tmp_path / "view-ar.png"))
