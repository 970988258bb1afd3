"""The documentation site says what the code does: its reference pages are written from the argparse definitions
and the schemas (so an option's help changes its page), the README's links lead to pages that exist, and what the
guides state is checked against the code where a sentence can be."""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

from markdown_text import DOCS, README, ROOT, row, section, shell_lines
from script_modules import load_script

reference = load_script("docs_reference")


def _parsers() -> dict[str, argparse.ArgumentParser]:
    from trace_eval import cli

    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {verb: sub.choices[verb] for verb in cli.VERBS}


def test_the_command_page_has_every_option_of_every_command_with_its_help():
    page = reference.commands_page()
    for verb, parser in _parsers().items():
        assert f"\n## {verb}\n" in page
        formatter = parser._get_formatter()
        for action in parser._actions:
            if action.help in (None, argparse.SUPPRESS) or action.dest == "help":
                continue
            for option in action.option_strings:
                assert f"`{option}" in page, (verb, option)
            assert reference._cell(formatter._expand_help(action)) in page, (verb, action.dest)


def test_the_command_page_shows_every_subcommand_of_prepare_with_its_options():
    page = reference.commands_page()
    prepare = _parsers()["prepare"]
    nested = next(a for a in prepare._actions if isinstance(a, argparse._SubParsersAction))
    assert set(nested.choices) == {"speakbench", "s2s-arena", "sagelm", "dataset", "pairs", "sessions"}
    for name, sub in nested.choices.items():
        assert f"\n### prepare {name}\n" in page
        for action in sub._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert f"`{option}" in page.split(f"### prepare {name}")[1], (name, option)


def test_the_site_opens_from_disk_with_its_search_and_wide_code(tmp_path):
    """The offline plugin writes the search index as a script a page loads from file://; the content width is
    not the theme's 61rem, which cut code blocks and the pipeline diagram."""
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "  - offline" in config and "stylesheets/extra.css" in config
    assert "max-width: min(96vw, 120rem)" in (DOCS / "stylesheets" / "extra.css").read_text(encoding="utf-8")


def test_changing_an_option_s_help_changes_the_page(monkeypatch):
    from trace_eval.commands import fuse

    configure = fuse.configure

    def configure_with_new_help(parser):
        configure(parser)
        parser.add_argument("--newly-added", help="an option added to the code a moment ago")

    monkeypatch.setattr(fuse, "configure", configure_with_new_help)
    assert "| `--newly-added NEWLY_ADDED` |  | an option added to the code a moment ago |" in reference.commands_page()


def test_the_schema_page_has_every_field_of_every_schema():
    page = reference.schemas_page()
    for path in sorted((ROOT / "schemas").glob("*.schema.json")):
        schema = json.loads(path.read_text())
        assert f"`schemas/{path.name}`" in page
        for name in schema.get("properties", {}):
            assert f"| `{name}` |" in page, (path.name, name)


def test_the_readme_is_a_front_page_whose_links_lead_somewhere():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    local = [link for link in links if not link.startswith(("http://", "https://"))]
    assert local and all((ROOT / link).exists() for link in local), [x for x in local if not (ROOT / x).exists()]
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for link in local:
        if link.startswith("docs/") and link.endswith(".md"):
            assert link.removeprefix("docs/") in nav, f"{link} is not in the site's navigation"


def test_the_field_table_says_what_an_item_may_leave_out(tmp_path):
    from trace_eval.bench import load_benchmark

    (tmp_path / "a.wav").write_bytes((ROOT / "examples" / "mini" / "audio" / "mini-01_a.wav").read_bytes())
    (tmp_path / "manifest.json").write_text(
        '[{"id": "p", "instruction_text": "Say hello.", "audio1_path": "a.wav", "audio2_path": "a.wav"}]'
    )
    assert load_benchmark(tmp_path).pairs[0].instruction_path is None  # no spoken instruction: it loads
    page = section("Benchmark folder", DOCS / "benchmark.md")
    assert "may be left out when `instruction_text` is given" in row(page, "`instruction_path`")


def test_what_the_judging_page_says_is_cached_is_what_is_cached(tmp_path, monkeypatch):
    from llm_server import write_benchmark

    from trace_eval.cli import main

    monkeypatch.setenv("TRACE_CACHE_DIR", str(tmp_path / "cache"))
    bench = write_benchmark(tmp_path / "bench", 2)
    assert main(["judge", "--bench", str(bench), "--model", "cues", "--out", str(tmp_path / "run"), "--quiet"]) == 0
    assert not list(tmp_path.glob("cache/**/*.json"))  # the cues backbone's answers are not cached
    text = " ".join((DOCS / "judging.md").read_text(encoding="utf-8").split())
    assert "Every answer of a model is cached" in text and "The offline `cues` backbone is not cached" in text


def test_the_audit_page_shows_its_picture_and_its_commands_on_the_demo_run_write_what_it_says(
    example_with_blueprints, tmp_path
):
    text = (DOCS / "view.md").read_text(encoding="utf-8")
    picture = DOCS / re.search(r"!\[[^\]]+\]\(([^)]+)\)", text).group(1)
    assert picture.is_file() and picture.stat().st_size < 200_000  # a small PNG
    commands = shell_lines(text)
    assert commands and all(c.startswith("python -m trace_eval view ") for c in commands)
    shutil.copytree(example_with_blueprints, tmp_path / "examples" / "mini")
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "TRACE_CACHE_DIR": str(tmp_path / "cache"),
        "HF_HUB_OFFLINE": "1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    env.pop("TRACE_JUDGE_MODEL", None)
    demo = [c for c in shell_lines(section("Quick start")) if " judge " in c]
    for command in demo + [c for c in commands if c.split()[4] == "runs/demo"]:
        done = subprocess.run(
            ["bash", "-c", shlex.quote(sys.executable) + command[len("python") :]],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, (command, done.stderr[-2000:])
    assert (tmp_path / "runs" / "demo" / "view" / "index.html").is_file()
    assert len(list((tmp_path / "audit" / "audio").rglob("*.wav"))) == 23


def test_the_python_api_page_s_examples_run_and_its_commands_exist(example_with_blueprints, tmp_path):
    """Every Python block of docs/api.md, run in order in one interpreter, from a folder holding a copy of
    examples/mini with its blueprints, in the store of the machine ($TRACE_STORE)."""
    text = (DOCS / "api.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 5
    shutil.copytree(example_with_blueprints, tmp_path / "examples" / "mini")
    script = tmp_path / "api_examples.py"
    script.write_text("\n\n".join(blocks), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TRACE_CACHE_DIR": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"}
    from trace_eval.stage1.store import BlueprintStore

    # A copy of the store that holds the example's blueprints: this process's environment (HF_HUB_OFFLINE) would
    # make the sections it records as unavailable stale for the rest of the suite.
    shutil.copytree(BlueprintStore(example_with_blueprints).recorded_store() or "", tmp_path / "store")
    env["TRACE_STORE"] = str(tmp_path / "store")
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "prefs" / "api-demo" / "README.md").is_file()
    assert (tmp_path / "runs" / "api-demo" / "evaluation" / "metrics.json").is_file()
    from trace_eval.cli import build_parser

    parser = build_parser(("export",))
    commands = shell_lines((DOCS / "export.md").read_text(encoding="utf-8"))
    assert commands
    for command in commands:  # every command of the export page is one the parser takes
        args = parser.parse_args(shlex.split(command)[3:])
        assert args.verb == "export" and args.kind == "preferences", command


def test_the_api_page_s_figures_are_the_benchmark_script_s():
    text = (DOCS / "api.md").read_text(encoding="utf-8")
    assert "python scripts/bench_api.py" in text and (ROOT / "scripts" / "bench_api.py").is_file()
