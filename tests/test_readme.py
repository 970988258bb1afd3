"""The README's quick start works when pasted into a fresh clone: its commands run as written (with
this interpreter for the activated `python`) on a copy of the example, and its outputs are where it
says. Installing is left out; the copy carries the session's blueprints, so Stage 1 finds them cached."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def section(title: str) -> str:
    """The text of a `## title` section, its subsections included."""
    text = README.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def shell_lines(text: str) -> list[str]:
    """The commands of the ```sh blocks of `text`, comments dropped."""
    blocks = re.findall(r"```sh\n(.*?)```", text, flags=re.S)
    return [re.sub(r"\s+#.*$", "", line).strip() for block in blocks for line in block.splitlines() if line.strip()]


def test_the_quick_start_says_how_to_get_python_before_using_it():
    lines = shell_lines(section("Quick start"))
    first_python = next(i for i, line in enumerate(lines) if line.startswith("python "))
    assert "make install" in lines[:first_python]
    assert ". .venv/bin/activate" in lines[:first_python]


def test_the_quick_start_runs_as_written_and_its_outputs_are_where_it_says(example_with_blueprints, tmp_path):
    commands = [line for line in shell_lines(section("Quick start")) if line.startswith("python ")]
    assert [c.split()[1:4] for c in commands] == [
        ["-m", "trace_eval", task] for task in ("blueprints", "judge", "fuse", "evaluate", "show")
    ]
    shutil.copytree(example_with_blueprints, tmp_path / "examples" / "mini")
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "TRACE_CACHE_DIR": str(tmp_path / "cache"),
        "HF_HUB_OFFLINE": "1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    env.pop("TRACE_JUDGE_MODEL", None)
    for command in commands:
        as_run = shlex.quote(sys.executable) + command[len("python") :]
        done = subprocess.run(
            ["bash", "-c", as_run], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0 and "Traceback" not in done.stderr, (
            command,
            done.stdout[-2000:],
            done.stderr[-2000:],
        )
        if command.startswith("python -m trace_eval evaluate"):
            assert "4-way 100.0%" in done.stdout  # what "What the demo's numbers mean" explains
        if command.startswith("python -m trace_eval show"):
            assert done.stdout.startswith("{") and len(done.stdout.splitlines()) == 40

    rows = [line for line in section("Quick start").splitlines() if line.startswith("| ") and "`:" in line]
    assert len(rows) == 3
    for row in rows:
        folder, *names = re.findall(r"`([^`]+)`", row)
        for name in names:
            pattern = re.sub(r"<[^>]+>", "*", name)
            assert list((tmp_path / folder).glob(pattern)), f"README says {folder}{name} is written"
        figures = "PNG figures" in row
        assert not figures or list((tmp_path / folder).glob("*.png"))


def _row(title: str, first_cell: str) -> str:
    """The table row of section `title` whose first cell is `first_cell`."""
    return next(line for line in section(title).splitlines() if line.startswith(f"| {first_cell} |"))


def test_the_install_table_names_the_extras_make_install_installs():
    made = subprocess.run(
        ["make", "-s", "-n", "install", "-B", "PYTHON=python3"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    extras = re.search(r"-e '\.\[([^\]]*)\]'", made).group(1)
    assert set(extras.split(",")) >= {"models", "dev", "ray"}
    assert f"`pip install -e '.[{extras}]'`" in _row("Quick start", "`make install`")


def test_the_field_table_says_what_an_item_may_leave_out(tmp_path):
    from trace_eval.bench import load_benchmark

    (tmp_path / "a.wav").write_bytes((ROOT / "examples" / "mini" / "audio" / "mini-01_a.wav").read_bytes())
    (tmp_path / "manifest.json").write_text(
        '[{"id": "p", "instruction_text": "Say hello.", "audio1_path": "a.wav", "audio2_path": "a.wav"}]'
    )
    assert load_benchmark(tmp_path).pairs[0].instruction_path is None  # no spoken instruction: it loads
    assert "may be left out when `instruction_text` is given" in _row("Your own benchmark", "`instruction_path`")


def test_what_the_readme_says_is_cached_is_what_is_cached(tmp_path, monkeypatch):
    from llm_server import write_benchmark

    from trace_eval.cli import main

    monkeypatch.setenv("TRACE_CACHE_DIR", str(tmp_path / "cache"))
    bench = write_benchmark(tmp_path / "bench", 2)
    assert main(["judge", "--bench", str(bench), "--model", "cues", "--out", str(tmp_path / "run"), "--quiet"]) == 0
    assert not list(tmp_path.glob("cache/**/*.json"))  # the cues backbone's answers are not cached
    text = " ".join(section("Judging").split())
    assert "Every answer of a model is cached" in text and "The offline `cues` backbone is not cached" in text


def test_the_audit_section_shows_its_picture_and_its_commands_on_the_demo_run_write_what_it_says(
    example_with_blueprints, tmp_path
):
    text = section("Auditing verdicts: view")
    picture = ROOT / re.search(r"!\[[^\]]+\]\(([^)]+)\)", text).group(1)
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
