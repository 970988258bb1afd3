"""Benchmark folders and the blueprint store in object storage: an S3-compatible server (moto) on 127.0.0.1,
started by these tests, the local engine, and the ray engine on a cluster of two Ray nodes started here."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("s3fs", reason="object storage needs: pip install 'trace-eval[s3]'")
pytest.importorskip("moto.server", reason="the S3 server of these tests is moto's: pip install 'moto[server]'")

from test_store import CHEAP, clips, make_bench  # noqa: E402

from trace_eval.cli import main as cli  # noqa: E402
from trace_eval.stage1.store import BlueprintStore, store_info, verify_store  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SECRET = "never-written-anywhere-9f3c"  # the secret key: must not appear in a blueprint, a record or a log


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(port: int, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port}")


@pytest.fixture(scope="module")
def s3_env(tmp_path_factory):
    """moto's S3 server on 127.0.0.1 and the environment that points boto (and so s3fs) at it."""
    port = free_port()
    log = tmp_path_factory.mktemp("moto") / "server.log"
    with open(log, "w") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)], stdout=out, stderr=out
        )
    env = {
        "AWS_ACCESS_KEY_ID": "trace-test",
        "AWS_SECRET_ACCESS_KEY": SECRET,
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        wait_for(port)
        yield env
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture
def s3(s3_env, tmp_path, monkeypatch):
    """A fresh bucket; returns (filesystem, bucket name). Mirrors of URL folders go under the test's folder."""
    import s3fs

    monkeypatch.setenv("TRACE_CACHE_DIR", str(tmp_path / "cache"))
    s3fs.S3FileSystem.clear_instance_cache()
    fs = s3fs.S3FileSystem()
    bucket = f"trace-{tmp_path.name.lower().replace('_', '-')[-40:]}-{time.monotonic_ns() % 10**6}"
    fs.mkdir(bucket)
    return fs, bucket


def upload(fs, bench: Path, url: str) -> None:
    for path in sorted(bench.rglob("*")):
        if path.is_file() and "blueprints" not in path.parts:
            fs.put_file(str(path), f"{url}/{path.relative_to(bench)}")


def comparable(blueprint: dict) -> dict:
    """A blueprint less what differs between runs: timings and the engine's name."""
    for entry in blueprint["provenance"]["extractors"].values():
        entry.pop("seconds"), entry.pop("engine")
    return blueprint


def local_blueprints(bench: Path) -> dict[str, dict]:
    files = [p for p in (bench / "blueprints").glob("*.json") if len(p.stem) == 64]
    return {p.stem: comparable(json.loads(p.read_text())) for p in files}


def stored_in(fs, store_url: str) -> dict[str, dict]:
    return {
        Path(key).stem: json.loads(fs.cat_file(key))
        for key in fs.ls(store_url, refresh=True)
        if key.endswith(".json") and len(Path(key).stem) == 64
    }


def no_secret_in(fs, url: str) -> None:
    for key in fs.find(url):
        assert SECRET not in fs.cat_file(key).decode("utf-8", "replace"), key


def test_a_benchmark_and_its_store_in_s3_give_the_local_blueprints_and_are_reused(s3, tmp_path, capsys):
    fs, bucket = s3
    local = make_bench(tmp_path / "local", clips(6))
    assert cli(["blueprints", str(local), "--only", CHEAP, "--workers", "0", "--quiet", "--store", "bench"]) == 0
    expected = local_blueprints(local)
    upload(fs, local, f"{bucket}/bench")
    store = f"s3://{bucket}/store"
    capsys.readouterr()

    args = ["--only", CHEAP, "--workers", "0", "--quiet", "--store", store]
    assert cli(["blueprints", f"s3://{bucket}/bench", *args]) == 0
    out, err = capsys.readouterr()
    assert f"blueprints for s3://{bucket}/bench" in out and "computed 6" in out and SECRET not in out + err
    assert {k: comparable(v) for k, v in stored_in(fs, store).items()} == expected
    records = json.loads(fs.cat_file(f"{bucket}/bench/blueprints/store.json"))
    assert records == {"store": store, "named": True}
    summary = json.loads(fs.cat_file(f"{bucket}/bench/blueprints/summary.json"))
    assert summary["computed"] == 6 and summary["bench"] == f"s3://{bucket}/bench" and summary["store"] == store
    assert verify_store(store, progress=False) == {}
    assert store_info(store).blueprints == 6 and store_info(store).benchmarks == 1

    # The same audio in another folder of the bucket: nothing computed.
    upload(fs, local, f"{bucket}/copy")
    assert cli(["blueprints", f"s3://{bucket}/copy", *args]) == 0
    out = capsys.readouterr().out
    assert f"nothing computed: all 6 blueprint(s) were already in the store {store}" in out
    no_secret_in(fs, bucket)

    # A store URL read back by an ordinary local benchmark, as a node would.
    mirror = tmp_path / "mirror"
    shutil.copytree(local, mirror, ignore=shutil.ignore_patterns("blueprints"))
    assert cli(["blueprints", str(mirror), *args]) == 0
    assert "computed 0" in capsys.readouterr().out
    reader = BlueprintStore(mirror)
    assert comparable(reader.get_by_path("audio/c00.wav")) == expected[reader.index()["audio/c00.wav"]["sha256"]]
    assert cli(["store", "verify", "--store", store, "--quiet"]) == 0


def test_a_missing_protocol_package_or_manifest_is_named(s3, tmp_path, capsys):
    fs, bucket = s3
    assert cli(["blueprints", f"s3://{bucket}/nothing-here", "--only", CHEAP, "--quiet"]) == 2
    assert "no manifest.json or manifest.jsonl" in capsys.readouterr().err
    bench = make_bench(tmp_path / "bench", clips(3))
    assert cli(["blueprints", str(bench), "--store", "nosuchproto://x/y", "--only", CHEAP, "--quiet"]) == 2
    assert "nosuchproto" in capsys.readouterr().err


def _ray_start(ray: Path, log: Path, *args: str, env: dict) -> subprocess.Popen:
    with open(log, "w") as out:
        return subprocess.Popen(
            [str(ray), "start", "--block", "--num-cpus", "1", *args],
            env=env,
            stdout=out,
            stderr=out,
            start_new_session=True,  # its own process group: stopped below by that group's id, nothing else
        )


def _alive_nodes(address: str, env: dict) -> int:
    count = "import ray, sys; ray.init(address=sys.argv[1]); print(sum(n['Alive'] for n in ray.nodes()))"
    done = subprocess.run([sys.executable, "-c", count, address], env=env, capture_output=True, text=True)
    return int(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 and done.stdout.strip() else 0


def _wait_nodes(address: str, env: dict, wanted: int, nodes: list[subprocess.Popen], seconds: float = 180) -> int:
    deadline, alive = time.monotonic() + seconds, 0
    while alive < wanted and time.monotonic() < deadline and all(n.poll() is None for n in nodes):
        alive = _alive_nodes(address, env)
        if alive < wanted:
            time.sleep(2)
    return alive


def _stop(nodes: list[subprocess.Popen]) -> None:
    """Stop the nodes this test started and every process they started (Ray's workers leave the group)."""
    import signal

    import psutil

    started = set()
    for node in nodes:
        try:
            started |= {p.pid for p in psutil.Process(node.pid).children(recursive=True)}
        except psutil.NoSuchProcess:
            pass
    for node in nodes:
        if node.poll() is None:
            os.killpg(node.pid, signal.SIGTERM)
    deadline = time.monotonic() + 20
    while any(node.poll() is None for node in nodes) and time.monotonic() < deadline:
        time.sleep(0.5)
    for node in nodes:
        if node.poll() is None:
            os.killpg(node.pid, signal.SIGKILL)
            node.wait(timeout=30)
    for pid in started:
        try:
            psutil.Process(pid).kill()
        except psutil.NoSuchProcess:
            pass


def test_the_ray_engine_on_two_nodes_writes_the_local_blueprints_to_s3(s3, s3_env, tmp_path):
    pytest.importorskip("ray", reason="the ray engine needs: pip install 'trace-eval[ray]'")
    ray = Path(sys.executable).parent / "ray"
    if not ray.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"{ray}: Ray's command line is not installed beside this Python (make install installs it)")
        pytest.skip(f"{ray}: Ray's command line is not installed beside this Python")
    fs, bucket = s3
    local = make_bench(tmp_path / "local", clips(6))
    assert cli(["blueprints", str(local), "--only", CHEAP, "--workers", "0", "--quiet", "--store", "bench"]) == 0
    expected = local_blueprints(local)
    upload(fs, local, f"{bucket}/bench")

    port = free_port()
    # A cluster of this test alone: no token from ~/.ray (Ray enables token authentication when it finds one)
    env = {**os.environ, **s3_env, "PYTHONPATH": str(ROOT), "RAY_AUTH_MODE": "disabled"}
    env.pop("RAY_ADDRESS", None)
    short = Path("/tmp") / f"ray-{port}"  # Ray's socket paths must stay short
    address = f"127.0.0.1:{port}"
    nodes = [
        _ray_start(
            ray,
            tmp_path / "head.log",
            "--head",
            "--port",
            str(port),
            "--temp-dir",
            str(short),
            "--include-dashboard",
            "false",
            env=env,
        )
    ]
    try:
        assert _wait_nodes(address, env, 1, nodes) == 1, (tmp_path / "head.log").read_text()[-3000:]
        nodes.append(_ray_start(ray, tmp_path / "node.log", "--address", address, env=env))
        assert _wait_nodes(address, env, 2, nodes) == 2, (tmp_path / "node.log").read_text()[-3000:]
        store = f"s3://{bucket}/store"
        done = subprocess.run(
            [sys.executable, "-m", "trace_eval", "blueprints", f"s3://{bucket}/bench", "--engine", "ray"]
            + ["--ray-address", address, "--store", store, "--only", CHEAP, "--device", "cpu", "--quiet"],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-3000:])
        assert SECRET not in done.stdout + done.stderr
        assert "engine ray" in done.stdout and "computed 6" in done.stdout
    finally:
        _stop(nodes)
        shutil.rmtree(short, ignore_errors=True)
    stored = {k: comparable(v) for k, v in stored_in(fs, store).items()}
    assert stored == expected
    assert verify_store(store, progress=False) == {}
    no_secret_in(fs, bucket)
