"""The labelling server as a user starts it (`python -m trace_eval label`): the token on every request, only the
benchmark's own audio, 400 with the reason and nothing written for a bad answer, two annotators at once."""

from __future__ import annotations

import http.client
import json
import threading

import pytest
from label_benches import Server

from trace_eval.evaluation.records import load_human_labels
from trace_eval.rubrics import load_rubric

LABELS = {"content": "1", "voice_quality": "2", "paralinguistics": "both_good", "overall": "1"}


def request(server: Server, method: str, path: str, body: bytes | None = None, token: bool = True, headers=None):
    """One request with the path sent exactly as given (no client-side clean-up of `..`)."""
    connection = http.client.HTTPConnection(server.host, server.port, timeout=20)
    if token:
        path += ("&" if "?" in path else "?") + f"token={server.token}"
    connection.request(method, path, body=body, headers=headers or {})
    response = connection.getresponse()
    data = response.read()
    connection.close()
    return response.status, data


@pytest.fixture
def server(bench):
    running = Server(bench, "ana")
    yield running
    running.stop()


def test_every_request_needs_the_token(server):
    for path in ("/", "/api/state", "/api/pair/0", "/audio/0/a"):
        status, body = request(server, "GET", path, token=False)
        assert status == 403 and b"token" in body, path
        status, _ = request(server, "GET", path + "?token=wrong", token=False)
        assert status == 403, path
    assert request(server, "GET", "/")[0] == 200
    status, _ = request(server, "GET", "/api/state", token=False, headers={"X-Trace-Token": server.token})
    assert status == 200
    status, _ = request(server, "POST", "/api/pair/0", json.dumps({"labels": LABELS}).encode(), token=False)
    assert status == 403 and not (server.bench / "labels" / "ana.jsonl").exists()


def test_only_the_benchmark_s_own_audio_is_served(bench, server):
    status, body = request(server, "GET", "/audio/0/a")
    assert status == 200 and body[:4] == b"RIFF"
    manifest = (bench / "manifest.json").read_bytes()
    for path in (
        "/audio/../manifest.json",
        "/audio/0/../../manifest.json",
        "/audio/%2e%2e/manifest.json",
        "/audio/%2E%2E%2Fmanifest.json",
        "/audio/%252e%252e/manifest.json",
        "/audio/0/..%2f..%2fmanifest.json",
        "//etc/passwd",
        "/audio//etc/passwd",
        "/audio/0/%2Fetc%2Fpasswd",
        "/labels/ana.page.json",
        "/audio/0/..%2F..%2Flabels%2Fana.page.json",
    ):
        status, body = request(server, "GET", path)
        assert status in (400, 404), (path, status)
        assert body != manifest and b"root:" not in body and server.token.encode() not in body, path
    for path in ("/audio/0/manifest.json", "/audio/99/a", "/audio/x/a"):
        assert request(server, "GET", path)[0] == 400, path
    # Blind: nothing the page is sent names a system or a file.
    pair = request(server, "GET", "/api/pair/0")[1].decode()
    items = json.loads(manifest)
    assert not any(name in pair for name in ("alpha", "bravo", "charlie", ".wav", items[0]["audio1_path"]))


def test_a_bad_answer_gets_400_with_the_reason_and_nothing_written(bench, server):
    bad = [
        ("/api/pair/99", {"labels": LABELS}, "no pair 99"),
        ("/api/pair/x", {"labels": LABELS}, "not a number"),
        ("/api/pair/0", {"labels": {**LABELS, "overall": "3"}}, "overall = '3' is not"),
        ("/api/pair/0", {"labels": {**LABELS, "overal": "1"}}, "'overal' is not a label"),
        ("/api/pair/0", {"labels": {"content": "1"}}, "missing label(s): Voice Quality, Paralinguistics, Overall"),
        ("/api/pair/0", {"labels": LABELS, "verdict": "x"}, "unknown field(s) verdict"),
        ("/api/pair/0", {"labels": LABELS, "reasons": {"content": "x" * 3000}}, "at most 2000"),
        ("/api/pair/0", {"skip": ""}, "skip is the reason"),
    ]
    for path, body, reason in bad:
        status, reply = request(server, "POST", path, json.dumps(body).encode())
        assert status == 400 and reason in json.loads(reply)["error"], (body, reply)
    status, reply = request(server, "POST", "/api/pair/0", b"{not json")
    assert status == 400 and b"not JSON" in reply
    status, reply = request(server, "POST", "/api/pair/0", b" " * 70_000)
    assert status == 400 and b"larger than" in reply
    assert not (bench / "labels" / "ana.jsonl").exists()
    status, reply = request(server, "POST", "/api/pair/0", json.dumps({"labels": LABELS}).encode())
    assert status == 200 and json.loads(reply)["saved"]
    assert len((bench / "labels" / "ana.jsonl").read_text().splitlines()) == 1


def test_two_annotators_at_once_keep_every_label(bench):
    servers = [Server(bench, "ana"), Server(bench, "ben")]
    try:
        total = json.loads(request(servers[0], "GET", "/api/state")[1])["total"]

        def label_all(server: Server) -> None:
            for n in range(total):
                status, _ = request(server, "POST", f"/api/pair/{n}", json.dumps({"labels": LABELS}).encode())
                assert status == 200

        threads = [threading.Thread(target=label_all, args=(s,)) for s in servers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    finally:
        for server in servers:
            server.stop()
    human = load_human_labels(bench, load_rubric("trace"))
    assert sorted(human.annotators) == ["ana", "ben"]
    assert all(len(got) == total for got in human.annotators.values())


def test_serving_to_the_network_warns(bench):
    server = Server(bench, "ana", "--host", "0.0.0.0")
    try:
        assert server.url.startswith("http://")
    finally:
        server.stop()
    assert "warning: --host 0.0.0.0" in server.process.stderr.read()


def test_a_token_that_cannot_go_into_the_url_is_refused(bench, capsys):
    from trace_eval.cli import main

    assert main(["label", str(bench), "--annotator", "ana", "--token", "a&b=c"]) == 2
    assert "--token 'a&b=c': 8 or more letters" in capsys.readouterr().err
    assert not (bench / "labels" / "ana.page.json").exists()
