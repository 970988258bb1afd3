"""The download path's setup errors stop at once and say what to do. A local HTTP server stands in for the
hub (HF_ENDPOINT) and answers as the hub does for a gated or missing repository; a closed port is no network.
Nothing leaves this machine."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


class Hub(BaseHTTPRequestHandler):
    """Every request answered with the status and error code the hub gives for `server.answer`."""

    def do_GET(self):  # noqa: N802 - the http.server interface
        status, code, message = self.server.answer  # type: ignore[attr-defined]
        self.send_response(status)
        self.send_header("X-Error-Code", code)
        self.send_header("X-Error-Message", message)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"error": "' + message.encode() + b'"}')

    do_HEAD = do_GET

    def log_message(self, *args):
        pass


@pytest.fixture
def hub():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()


def prepare(tmp_path, endpoint: str, labels: Path) -> tuple[subprocess.CompletedProcess, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(HF_ENDPOINT=endpoint, HF_HOME=str(tmp_path / "hf"), PYTHONPATH=str(ROOT), HF_HUB_DISABLE_XET="1")
    start = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "trace_eval",
            "prepare",
            "speakbench",
            str(tmp_path / "out"),
            "--labels",
            str(labels),
            "--quiet",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done, time.perf_counter() - start


@pytest.fixture
def labels(tmp_path):
    path = tmp_path / "speakbench.json"
    path.write_text('[{"index": 1, "instruction_path": "a.wav", "audio1_path": "b.wav", "audio2_path": "c.wav"}]')
    return path


def test_a_gated_repository_says_to_accept_its_conditions_and_set_a_token(tmp_path, hub, labels):
    hub.answer = (403, "GatedRepo", "Access to dataset is restricted. You must have access to it and be authenticated.")
    done, _ = prepare(tmp_path, f"http://127.0.0.1:{hub.server_port}", labels)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "potsawee/speakbench-v1-labelled-508 is gated: accept its conditions at" in done.stderr
    assert "set HF_TOKEN" in done.stderr


def test_a_missing_repository_or_token_says_so(tmp_path, hub, labels):
    hub.answer = (401, "RepoNotFound", "Repository not found")
    done, _ = prepare(tmp_path, f"http://127.0.0.1:{hub.server_port}", labels)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "not found, or private and no token was given (set HF_TOKEN)" in done.stderr


def test_no_network_says_how_to_work_offline(tmp_path, labels):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    done, seconds = prepare(tmp_path, f"http://127.0.0.1:{port}", labels)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "the hub cannot be reached" in done.stderr and "--from PATH" in done.stderr, done.stderr
    assert seconds < 60  # at once, not after a long wait
