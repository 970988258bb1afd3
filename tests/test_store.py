"""The shared blueprint store: reuse across benchmark folders, several writers at once, an interrupted writer,
old-layout folders, and the `store` command (info, stale, verify, prune, migrate)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import soundfile as sf

from trace_eval.cli import main as cli
from trace_eval.stage1.store import BlueprintStore, migrate_bench, prune_store, store_info, verify_store

ROOT = Path(__file__).resolve().parent.parent
SR = 16000
CHEAP = "pitch,loudness"  # signal extractors: no model, a fraction of a second a clip


def voiced(seconds: float, f0: float) -> np.ndarray:
    """A vowel-like tone with harmonics and a slow loudness swell: pitch and loudness both measure it."""
    t = np.arange(int(seconds * SR)) / SR
    x = sum(np.sin(2 * np.pi * f0 * k * t) / k for k in (1, 2, 3))
    return (0.15 * x * (1 + 0.3 * np.sin(2 * np.pi * 2 * t))).astype(np.float32)


def make_bench(root: Path, clips: dict[str, np.ndarray]) -> Path:
    """A benchmark whose items pair the clips in order (instruction, answer 1, answer 2)."""
    (root / "audio").mkdir(parents=True, exist_ok=True)
    for name, samples in clips.items():
        sf.write(root / "audio" / name, samples, SR)
    names = list(clips)
    items = [
        {
            "index": f"p{n}",
            "instruction_path": f"audio/{names[i]}",
            "audio1_path": f"audio/{names[(i + 1) % len(names)]}",
            "audio2_path": f"audio/{names[(i + 2) % len(names)]}",
        }
        for n, i in enumerate(range(0, len(names), 3))
    ]
    (root / "manifest.json").write_text(json.dumps(items))
    return root


def clips(count: int, start: int = 0, seconds: float = 1.0) -> dict[str, np.ndarray]:
    return {f"c{i:02}.wav": voiced(seconds, 110 + 15 * i) for i in range(start, start + count)}


def blueprint_files(store: Path) -> list[Path]:
    return sorted(p for p in store.glob("*.json") if len(p.stem) == 64)


def blueprints_process(bench: Path, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "trace_eval", "blueprints", str(bench), "--workers", "0", "--quiet", *extra]
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_the_same_audio_in_a_new_folder_computes_nothing_and_says_so(tmp_path, own_store, capsys, monkeypatch):
    first = make_bench(tmp_path / "first", clips(6))
    assert cli(["blueprints", str(first), "--only", CHEAP, "--workers", "0", "--quiet"]) == 0
    assert len(blueprint_files(own_store)) == 6
    # the benchmark folder keeps its index, summary and failures, and names its store; no blueprint
    kept = sorted(p.name for p in (first / "blueprints").iterdir())
    assert kept == ["failures.jsonl", "index.json", "store.json", "summary.json"]
    assert json.loads((first / "blueprints" / "store.json").read_text()) == {"store": str(own_store), "named": False}
    capsys.readouterr()

    second = tmp_path / "second"
    shutil.copytree(first, second, ignore=shutil.ignore_patterns("blueprints"))
    assert cli(["blueprints", str(second), "--only", CHEAP, "--workers", "0", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "computed 0" in out and f"nothing computed: all 6 blueprint(s) were already in the store {own_store}" in out
    summary = json.loads((second / "blueprints" / "summary.json").read_text())
    assert summary["computed"] == 0 and summary["cached"] == 6 and summary["store"] == str(own_store)
    assert len(blueprint_files(own_store)) == 6
    a, b = BlueprintStore(first), BlueprintStore(second)
    for name in clips(6):
        assert b.get_by_path(f"audio/{name}") == a.get_by_path(f"audio/{name}") is not None

    # A store taken by default follows $TRACE_STORE: what the old one holds is copied over, nothing computed.
    moved = tmp_path / "moved-store"
    monkeypatch.setenv("TRACE_STORE", str(moved))
    assert cli(["blueprints", str(second), "--only", CHEAP, "--workers", "0", "--quiet"]) == 0
    assert "computed 0" in capsys.readouterr().out and len(blueprint_files(moved)) == 6
    assert json.loads((second / "blueprints" / "store.json").read_text())["store"] == str(moved)
    # A store named with --store stays the benchmark's.
    named = tmp_path / "named-store"
    assert cli(["blueprints", str(first), "--only", CHEAP, "--workers", "0", "--quiet", "--store", str(named)]) == 0
    assert cli(["blueprints", str(first), "--only", CHEAP, "--workers", "0", "--quiet"]) == 0
    assert json.loads((first / "blueprints" / "store.json").read_text()) == {"store": str(named), "named": True}


def test_two_processes_on_benchmarks_sharing_audio_write_one_store_at_once(tmp_path, own_store):
    shared = clips(6)
    one = make_bench(tmp_path / "one", {**shared, **clips(3, start=10)})
    two = make_bench(tmp_path / "two", {**shared, **clips(3, start=20)})
    # Different extractors at once: a blueprint both write keeps both processes' sections.
    running = [blueprints_process(one, "--only", "pitch"), blueprints_process(two, "--only", "loudness")]
    for process in running:
        out, err = process.communicate(timeout=600)
        assert process.returncode == 0, (out[-2000:], err[-2000:])
    files = blueprint_files(own_store)
    assert len(files) == 12  # 6 shared + 3 + 3, none doubled
    assert not [p for p in own_store.iterdir() if p.name.endswith(".tmp")]
    assert verify_store(str(own_store), progress=False) == {}
    for name in shared:
        extractors = BlueprintStore(one).get_by_path(f"audio/{name}")["provenance"]["extractors"]
        assert {"pitch", "loudness"} <= set(extractors), name
    # Both at once again with both extractors: everything is current, nothing is rewritten.
    stamps = {p: p.stat().st_mtime_ns for p in files}
    running = [blueprints_process(one, "--only", CHEAP), blueprints_process(two, "--only", CHEAP)]
    for process in running:
        out, err = process.communicate(timeout=600)
        assert process.returncode == 0, (out[-2000:], err[-2000:])
    for bench in (one, two):
        summary = json.loads((bench / "blueprints" / "summary.json").read_text())
        assert summary["failed"] == 0 and summary["unique_audio"] == 9
    changed = [p for p in files if p.stat().st_mtime_ns != stamps[p]]
    assert len(changed) == 6  # each process added its missing section to its 3 own clips, once
    assert len(blueprint_files(own_store)) == 12 and verify_store(str(own_store), progress=False) == {}


def test_a_writer_killed_mid_run_then_resumed_leaves_the_store_verified_clean(tmp_path, own_store):
    bench = make_bench(tmp_path / "bench", clips(12, seconds=3.0))
    process = blueprints_process(bench, "--only", CHEAP)
    deadline = time.monotonic() + 300
    while not blueprint_files(own_store) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.communicate()
    written = blueprint_files(own_store)
    # What a kill between writing and renaming leaves, and a file another writer cut short.
    store = BlueprintStore(bench)
    missing = [
        rel for rel in sorted(store.index()) if not (own_store / f"{store.index()[rel]['sha256']}.json").exists()
    ]
    (own_store / f".{'0' * 64}.json.abcd1234.tmp").write_text('{"format_version": 1, "dur')
    if missing:
        cut = own_store / f"{store.index()[missing[0]]['sha256']}.json"
        cut.write_text('{"format_version": 1, "duration_s": 3.0, "provenance": {"audio_sha')
    assert BlueprintStore(bench).get_by_path(missing[0]) is None if missing else True  # never read as valid

    assert cli(["blueprints", str(bench), "--only", CHEAP, "--workers", "0", "--quiet"]) == 0
    summary = json.loads((bench / "blueprints" / "summary.json").read_text())
    assert summary["failed"] == 0 and summary["cached"] == len(written) and summary["computed"] == 12 - len(written)
    assert verify_store(str(own_store), progress=False) == {}
    assert cli(["store", "verify", "--store", str(own_store), "--quiet"]) == 0
    info = store_info(str(own_store))
    assert info.blueprints == 12 and info.temporary >= 1  # the planted one, and any the kill left
    assert cli(["store", "prune", "--store", str(own_store), "--older-than", "0s"]) == 0
    assert store_info(str(own_store)).temporary == 0 and len(blueprint_files(own_store)) == 12


def test_a_blueprint_made_for_other_audio_or_damaged_is_not_trusted(tmp_path, own_store, capsys):
    bench = make_bench(tmp_path / "bench", clips(3))
    assert cli(["blueprints", str(bench), "--only", CHEAP, "--workers", "0", "--quiet"]) == 0
    first, second, third = blueprint_files(own_store)
    second.write_text(first.read_text())  # the right schema, another audio's hash
    third.write_text("{}")
    assert cli(["store", "verify", "--store", str(own_store), "--quiet"]) == 1
    out = capsys.readouterr().out
    assert "2 of 3 file(s) are not valid blueprints" in out and "not the audio its name says" in out
    summary_before = BlueprintStore(bench)
    assert summary_before.get(second.stem) is None and summary_before.get(third.stem) is None
    assert cli(["blueprints", str(bench), "--only", CHEAP, "--workers", "0", "--quiet"]) == 0
    assert json.loads((bench / "blueprints" / "summary.json").read_text())["computed"] == 2
    assert cli(["store", "verify", "--store", str(own_store), "--quiet"]) == 0


def test_an_old_layout_folder_is_read_and_moved_into_the_store_on_request(tmp_path, own_store, capsys):
    old = make_bench(tmp_path / "old", clips(3))
    assert cli(["blueprints", str(old), "--only", CHEAP, "--workers", "0", "--quiet", "--store", "bench"]) == 0
    (old / "blueprints" / "store.json").unlink()  # as a folder made before the shared store
    local = blueprint_files(old / "blueprints")
    assert len(local) == 3 and blueprint_files(own_store) == []
    capsys.readouterr()
    store = BlueprintStore(old)
    expected = {name: store.get_by_path(f"audio/{name}") for name in clips(3)}
    assert all(expected.values())
    assert cli(["show", str(old / "audio" / "c00.wav")]) == 0
    assert json.loads(capsys.readouterr().out) == expected["c00.wav"]
    run = tmp_path / "run"
    assert cli(
        ["judge", "--bench", str(old), "--model", "cues", "--out", str(run), "--quiet", "--rubric", "trace"]
    ) in (
        0,
        1,
    )
    assert (run / "results.jsonl").read_text().count("\n") == 1
    capsys.readouterr()

    assert cli(["store", "migrate", str(old)]) == 0
    assert "3 blueprint(s) moved into" in capsys.readouterr().out
    assert blueprint_files(old / "blueprints") == [] and len(blueprint_files(own_store)) == 3
    assert json.loads((old / "blueprints" / "store.json").read_text()) == {"store": str(own_store), "named": False}
    moved = BlueprintStore(old)
    assert {name: moved.get_by_path(f"audio/{name}") for name in clips(3)} == expected
    summary = migrate_bench(old, str(own_store))
    assert summary.moved == 0 and summary.already == 0


def test_prune_removes_what_no_benchmark_refers_to(tmp_path, own_store, capsys):
    kept = make_bench(tmp_path / "kept", clips(3))
    gone = make_bench(tmp_path / "gone", clips(2, start=10))
    for bench in (kept, gone):
        assert cli(["blueprints", str(bench), "--only", CHEAP, "--workers", "0", "--quiet"]) == 0
    assert store_info(str(own_store)).benchmarks == 2
    shutil.rmtree(gone)
    before = blueprint_files(own_store)
    assert len(before) == 5
    # Younger than the limit: kept, the record of the removed benchmark included.
    result = prune_store(str(own_store), 30 * 86400)
    assert result.removed == [] and blueprint_files(own_store) == before
    assert cli(["store", "prune", "--store", str(own_store), "--older-than", "0s", "--dry-run"]) == 0
    assert "would remove 2 file(s)" in capsys.readouterr().out and blueprint_files(own_store) == before
    assert cli(["store", "prune", "--store", str(own_store), "--older-than", "0s"]) == 0
    assert "removed 2 file(s)" in capsys.readouterr().out
    after = blueprint_files(own_store)
    assert len(after) == 3 and store_info(str(own_store)).benchmarks == 1
    store = BlueprintStore(kept)
    assert all(store.get_by_path(f"audio/{name}") for name in clips(3))
    assert cli(["store", "prune", "--store", str(own_store), "--older-than", "soon"]) == 2


def test_store_stale_says_what_the_next_run_computes_and_writes_nothing(tmp_path, own_store, capsys):
    """Blueprints made with DNSMOS's reference layout: a run with the default layout makes their DNSMOS sections
    again, and nothing else; `store stale` says so before, reading the store and the fingerprints only."""
    bench = make_bench(tmp_path / "bench", clips(3, seconds=2.0))
    only = ["--only", "dnsmos,loudness"]
    made = cli(["blueprints", str(bench), *only, "--set", "dnsmos.layout=reference", "--workers", "0", "--quiet"])
    assert made == 0
    written = {p: p.read_bytes() for p in [bench / "blueprints" / "index.json", *blueprint_files(own_store)]}
    capsys.readouterr()

    assert cli(["store", "stale", str(bench), *only]) == 0
    out = capsys.readouterr().out
    assert "computes\n  for 3 of 3 unique audio (6.0 s)" in out
    assert re.search(r"\n  dnsmos +3 clip\(s\), +6\.0 s of audio, 3 made again", out), out
    assert "current: loudness" in out and "loudness " not in out.split("current:")[0]
    assert {p: p.read_bytes() for p in written} == written  # nothing computed, nothing written

    assert cli(["store", "stale", str(bench), *only, "--set", "dnsmos.layout=reference"]) == 0
    assert "for 0 of 3 unique audio" in capsys.readouterr().out
    assert cli(["blueprints", str(bench), *only, "--workers", "0", "--quiet"]) == 0
    summary = json.loads((bench / "blueprints" / "summary.json").read_text())
    assert summary["sections"]["dnsmos"]["ok"] == 3 and summary["sections"]["loudness"]["cached"] == 3
    capsys.readouterr()
    assert cli(["store", "stale", str(bench), *only]) == 0
    assert "current: dnsmos, loudness" in capsys.readouterr().out


def test_store_info_names_the_default_store(own_store, capsys):
    assert cli(["store"]) == 0
    out = capsys.readouterr().out
    assert f"store {own_store}" in out and "blueprints 0" in out


def test_a_local_run_imports_nothing_of_object_storage(tmp_path):
    bench = make_bench(tmp_path / "bench", clips(3))
    check = (
        "import sys; from trace_eval.cli import main; code = main(['blueprints', sys.argv[1], '--only', 'loudness', "
        "'--workers', '0', '--quiet']); main(['store', 'verify', '--quiet']); "
        "print(sorted(m for m in ('fsspec', 's3fs', 'botocore') if m in sys.modules)); sys.exit(code)"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", check, str(bench)], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_a_store_that_names_a_file_is_a_clear_error_not_a_traceback(tmp_path, monkeypatch, capsys):
    bench = make_bench(tmp_path / "bench", clips(3))
    a_file = tmp_path / "store.txt"
    a_file.write_text("not a folder")
    monkeypatch.setenv("TRACE_STORE", str(a_file))
    assert cli(["blueprints", str(bench), "--only", "loudness", "--workers", "0", "--quiet"]) == 2
    said = capsys.readouterr().err
    assert f"$TRACE_STORE={a_file} cannot be a folder of blueprints: it is a file" in said, said
    assert "Traceback" not in said and "Errno" not in said
    assert cli(["store", "info"]) == 2
    assert f"$TRACE_STORE={a_file} cannot be a folder of blueprints" in capsys.readouterr().err
    monkeypatch.delenv("TRACE_STORE")
    below = a_file / "blueprints"
    for argv in (["store", "info", "--store", str(below)], ["blueprints", str(bench), "--store", str(a_file)]):
        assert cli([*argv, "--quiet"] if argv[0] == "blueprints" else argv) == 2
        said = capsys.readouterr().err
        assert "cannot be a folder of blueprints" in said and "--store" in said and "Errno" not in said, said
    assert not list(bench.glob("blueprints/*.json"))  # nothing written anywhere
