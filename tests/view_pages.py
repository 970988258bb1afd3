"""For the audit page's tests (tests/view) and scripts/bench_view.py: headless Chromium, reading a page's
data back, and a benchmark of many pairs with judge runs over it, made in seconds from a small benchmark
with blueprints.

Every item gets its own three clips: audio files linked to the small benchmark's, and blueprints cloned
from theirs under their own hash, with other pitch and loudness and as many words as a long answer has.
A run's results are written as `judge` writes them: verdicts that mostly agree with the human labels,
reasoning per dimension, some answers undetermined and some invalid.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import random
import shutil
from pathlib import Path

from trace_eval.io import write_json
from trace_eval.rubrics import load_rubric
from trace_eval.stage1.store import BlueprintStore

LABELS = ("1", "2", "both_good", "both_bad")
DATA_PREFIX = "window.TRACE_VIEW = "
SYSTEMS = ("alpha-s2s", "bravo-s2s", "charlie-s2s", "delta-s2s", "echo-s2s", "foxtrot-s2s")
REASONS = {
    "content": "Response {a} says the requested sentence word for word and adds nothing else. Response {b} "
    "paraphrases it and drops the closing phrase.",
    "voice_quality": "Both recordings are clean: DNSMOS overall quality is {q1} and {q2}, with no audible noise, "
    "clipping or artefacts.",
    "paralinguistics": "The instruction asks for a slow, calm delivery. Response {a} speaks at {r} words per minute "
    "with a neutral tone, while Response {b} rushes.",
}


def browser_problem() -> str | None:
    """Why no browser can be driven here, or None."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed: pip install -c constraints.txt -e '.[dev]'"
    missing = [name for name in ("chromium", "chromedriver") if shutil.which(name) is None]
    if missing:
        return f"{' and '.join(missing)} not found: apt-get install chromium chromium-driver"
    return None


def start_chromium(profile: Path, window: tuple[int, int] = (1440, 1000)):
    """Headless Chromium through the system's chromedriver, logging the console and the network."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    # As root in a container, and without reaching Google's hosts for updates, sync or components.
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-default-apps",
        "--mute-audio",
        "--autoplay-policy=no-user-gesture-required",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        f"--window-size={window[0]},{window[1]}",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    driver.set_script_timeout(20)
    return driver


def open_page(browser, page: Path, fragment: str = "") -> float:
    """Open the page from disk; the milliseconds it took to show its first pair."""
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get("about:blank")  # so that the page loads afresh, even when only its fragment changes
    for log in ("browser", "performance"):  # what came before this page
        browser.get_log(log)
    browser.get((page / "index.html").as_uri() + fragment)
    WebDriverWait(browser, 20).until(
        lambda b: b.execute_script("return performance.getEntriesByName('trace-view-ready').length")
    )
    return browser.execute_script("return performance.getEntriesByName('trace-view-ready')[0].startTime")


def filter_and_step_ms(browser, dimension: str) -> float:
    """Milliseconds the page takes to filter its list to the disagreements on `dimension` and step to a pair."""
    return browser.execute_script(
        """
        const t = performance.now();
        const s = document.getElementById('filter-disagree');
        s.value = arguments[0]; s.dispatchEvent(new Event('change'));
        document.dispatchEvent(new KeyboardEvent('keydown', {key: 'j'}));
        return performance.now() - t;""",
        dimension,
    )


def read_page_data(folder: Path) -> dict:
    """The data object of the page written into `folder` (its data.js)."""
    text = (folder / "data.js").read_text(encoding="utf-8")
    assert text.startswith(DATA_PREFIX) and text.endswith(";\n")
    return json.loads(text[len(DATA_PREFIX) : -2])


def word_starts(clip: dict) -> list[float | None]:
    """A page clip's word start times in seconds (its `times` are centisecond gaps and lengths)."""
    starts, end = [], 0
    for gap, length in zip(clip["times"][::2], clip["times"][1::2]):
        if gap is None:
            starts.append(None)
            continue
        starts.append((end + gap) / 100)
        end += gap + length
    return starts


def write_large_bench(source: Path, root: Path, pairs: int = 1000, words: int = 60, seed: int = 0) -> Path:
    """root/bench: `pairs` items over clips cloned from `source` (a benchmark folder with blueprints)."""
    rng = random.Random(seed)
    items = json.loads((source / "manifest.json").read_text())
    source_store = BlueprintStore(source)
    bench = root / "bench"
    (bench / "audio").mkdir(parents=True)
    (bench / "blueprints").mkdir()
    index = {}
    manifest = []
    for n in range(pairs):
        model = items[n % len(items)]
        item_id = f"pair-{n:04d}"
        paths = {}
        for field in ("instruction_path", "audio1_path", "audio2_path"):
            relative = f"audio/{item_id}_{field.split('_')[0]}.wav"
            os.symlink((source / model[field]).resolve(), bench / relative)
            blueprint = copy.deepcopy(source_store.get_by_path(model[field]))
            sha = hashlib.sha256(relative.encode()).hexdigest()
            _vary(blueprint, sha, words if field != "instruction_path" else words // 3, rng)
            (bench / "blueprints" / f"{sha}.json").write_text(json.dumps(blueprint))  # no fsync: test data
            stat = (bench / relative).stat()
            index[relative] = {"sha256": sha, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
            paths[field] = relative
        a, b = rng.sample(SYSTEMS, 2)
        manifest.append(
            {
                "id": item_id,
                **paths,
                "instruction_text": model["instruction_text"],
                "model_a": a,
                "model_b": b,
                "label": {k: rng.choice(LABELS) for k in model["label"]},
            }
        )
    write_json(bench / "blueprints" / "index.json", index)
    write_json(bench / "manifest.json", manifest)
    return bench


def _vary(blueprint: dict, sha: str, words: int, rng: random.Random) -> None:
    """Another clip's values in the same shape: pitch and loudness moved, `words` words over the clip."""
    blueprint["provenance"]["audio_sha256"] = sha
    properties = blueprint["agent_audio_properties"]
    pitch, gain = rng.uniform(0.7, 1.4), rng.uniform(-6, 6)
    properties["Full_Pitch_Contour_Hz"] = [
        None if v is None else round(v * pitch, 2) for v in properties.get("Full_Pitch_Contour_Hz") or []
    ]
    properties["Full_Loudness_Contour_LUFS"] = [
        None if v is None else round(v + gain, 2) for v in properties.get("Full_Loudness_Contour_LUFS") or []
    ]
    if properties.get("Mean_Pitch_Hz") is not None:
        properties["Mean_Pitch_Hz"] = round(properties["Mean_Pitch_Hz"] * pitch, 2)
    said = [w["word"] for w in blueprint.get("words") or []] or ["word"]
    step = blueprint["duration_s"] / words
    blueprint["words"] = [
        {
            "word": said[i % len(said)],
            "start": round(i * step, 2),
            "end": round((i + 0.9) * step, 2),
            "probability": 0.9,
        }
        for i in range(words)
    ]
    blueprint["agent_response"] = " ".join(w["word"] for w in blueprint["words"])


def write_large_run(
    bench: Path, out: Path, model: str = "gemini/gemini-2.5-flash", agree: float = 0.75, seed: int = 0
) -> Path:
    """A judge run folder over `bench`: a verdict agrees with the human label with probability `agree`;
    about 5% of the items leave voice quality undetermined and 2% are invalid answers."""
    rng = random.Random(seed)
    rubric = load_rubric("trace")
    records = []
    for item in json.loads((bench / "manifest.json").read_text()):
        record = {
            "id": item["id"],
            "tokens": {"prompt": 2900, "completion": 160},
            "cost_usd": 0.0011,
            "latency_s": round(rng.uniform(0.8, 3.0), 2),
            "cache_hit": False,
            "repairs": 0,
        }
        if rng.random() < 0.02:
            records.append(
                {
                    **record,
                    "status": "invalid",
                    "reason": "answer is not JSON after 1 repair",
                    "verdicts": dict.fromkeys(rubric.names),
                    "undetermined": {},
                    "reasoning": None,
                    "raw": "I think response 1 is better because",
                    "fused": {},
                    "overall": None,
                }
            )
            continue
        verdicts = {d: item["label"][d] if rng.random() < agree else rng.choice(LABELS) for d in rubric.names}
        undetermined = {}
        if rng.random() < 0.05:
            verdicts["voice_quality"] = None
            undetermined["voice_quality"] = "response 2 P.808 and BAK unmeasured"
        first = rng.choice("12")
        reasoning = {
            d: text.format(
                a=first,
                b="2" if first == "1" else "1",
                q1=round(rng.uniform(2, 4), 2),
                q2=round(rng.uniform(2, 4), 2),
                r=rng.randint(90, 260),
            )
            for d, text in REASONS.items()
        }
        fused = rubric.fusion.fuse_all(verdicts)
        records.append(
            {
                **record,
                "status": "ok",
                "reason": None,
                "verdicts": verdicts,
                "undetermined": undetermined,
                "reasoning": reasoning,
                "raw": json.dumps({"reasoning": reasoning, **verdicts}),
                "fused": fused,
                "overall": fused["cap"],
            }
        )
    out.mkdir(parents=True)
    write_json(
        out / "config.json",
        {
            "bench": str(bench),
            "model": model,
            "rubric": "trace",
            "judge": "trace",
            "fusion": "cap",
            "samples": 1,
            "swap": False,
        },
    )
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return out
