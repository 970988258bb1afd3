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

from markdown_text import ROOT, row, section, shell_lines


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
    for output in rows:
        folder, *names = re.findall(r"`([^`]+)`", output)
        for name in names:
            pattern = re.sub(r"<[^>]+>", "*", name)
            assert list((tmp_path / folder).glob(pattern)), f"README says {folder}{name} is written"
        figures = "PNG figures" in output
        assert not figures or list((tmp_path / folder).glob("*.png"))


def test_the_install_table_names_the_extras_make_install_installs():
    made = subprocess.run(
        ["make", "-s", "-n", "install", "-B", "PYTHON=python3"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    extras = re.search(r"-e '\.\[([^\]]*)\]'", made).group(1)
    assert set(extras.split(",")) >= {"models", "dev", "ray"}
    assert f"`pip install -e '.[{extras}]'`" in row(section("Quick start"), "`make install`")
