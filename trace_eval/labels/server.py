"""The labelling page: a local Starlette app, served by uvicorn, that runs the HCoT protocol over a benchmark.

Like Jupyter's server it listens on 127.0.0.1 by default and wants its token on every request (the `token`
query parameter, or the `X-Trace-Token` header). It serves the page and the benchmark's own audio, each clip
by its item and role (`/audio/<n>/<instruction|a|b>`), never by a path: the labeller does not see the file
names (which name the systems), and nothing outside the manifest's clips can be asked for. A path that
climbs (`..`, encoded or not) or is absolute is refused before routing.

An answer is appended to `labels/<annotator>.jsonl` and fsynced before the reply says it was saved
(store.py). Labels arrive in the order shown (A, B) and are stored in the manifest's numbering, with the
order shown. Each annotator sees each pair in its own order (a hash of annotator and pair), the same on
every restart.

The page's token and port are kept beside the labels, in `labels/<annotator>.page.json` (readable by its
owner alone), so a server started again after a crash serves the same URL: a page left open saves its
labels there once the server is back.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import shlex
import socket
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from trace_eval.io import read_json, write_json
from trace_eval.labels.store import (
    LabelError,
    LabelRecord,
    LabelStore,
    PairContent,
    content_keys,
    label_spaces,
    now,
    swapped,
)

__all__ = ["BadRequest", "Busy", "LabelSession", "MAX_BODY", "make_app", "page_file", "serve", "serve_sessions"]

MAX_BODY = 64 * 1024  # bytes of one answer: labels and short reasons
MAX_REASON = 2000  # characters of one reason
SKIP_REASONS = ("no sound", "cannot decide", "broken audio", "other")
TYPED_TIE_NAMES = {"1": "A better", "2": "B better", "both_good": "both good", "both_bad": "both bad"}
WIN_LOSE_NAMES = {"1": "A better", "2": "B better", "tie": "tie"}
_TOKEN = re.compile(r"[A-Za-z0-9._~-]{8,}")  # URL-safe as it is printed


class BadRequest(ValueError):
    """An answer that is not stored; the message is the reply's reason."""


@dataclass
class Field:
    name: str
    title: str
    asks: str
    values: list[Any]
    names: list[str]  # what each value is called on the page, in the order shown
    digits: list[str]  # the key that chooses each value: its number for scores, else its place (1 2 3 4)


class LabelSession:
    """One annotator on one benchmark: the pairs to label, in order, and what is saved of them."""

    def __init__(
        self,
        bench_root: str | Path,
        annotator: str,
        rubric: Any = None,
        ids: list[str] | None = None,
        restart: str | None = None,
        bench: Any = None,
        contents: dict[str, PairContent] | None = None,
    ):
        from trace_eval.bench import load_benchmark
        from trace_eval.rubrics import DEFAULT_RUBRIC, load_rubric

        self.rubric = rubric or load_rubric(DEFAULT_RUBRIC)
        self.bench = bench if bench is not None else load_benchmark(bench_root, rubric=None)
        self.store = LabelStore(self.bench.root)
        self.store.path(annotator)  # checks the name
        self.store.check_new_name(annotator)
        self.annotator = annotator
        # The command that starts this page again, shown on the page when the server stops.
        self.restart = restart or shlex.join(
            ["python", "-m", "trace_eval", "label", str(self.bench.root), "--annotator", annotator]
        )
        chosen = set(ids) if ids is not None else None
        self.pairs = [p for p in self.bench.pairs if chosen is None or p.id in chosen]
        self.contents: dict[str, PairContent] = content_keys(self.bench) if contents is None else contents
        self.spaces = label_spaces(self.rubric)
        titles = {d.name: (d.title, d.asks) for d in self.rubric.dimensions}
        self.fields = [
            Field(
                name,
                *titles.get(name, ("Overall", "Which response is better overall, all things considered?")),
                list(space.values),
                _names(space),
                [str(v) for v in space.values] if space.numeric else [str(i + 1) for i in range(len(space.values))],
            )
            for name, space in self.spaces.items()
        ]
        self.saved: dict[str, LabelRecord] = {}
        self.load_saved()

    def load_saved(self) -> None:
        for record in self.store.records(self.annotator)[0]:
            self.saved[record.content_key or f"id:{record.pair_id}"] = record

    def who(self) -> str:
        """Who labels, beside who else has labelled this benchmark: one line for the terminal."""
        others = [a for a in self.store.annotators() if a != self.annotator]
        given = len(self.saved)
        mine = f"{given} pair(s) answered before" if given else "new on this benchmark"
        return f"annotator {self.annotator} ({mine}); others: {', '.join(others) if others else 'none yet'}"

    def title(self, name: str) -> str:
        """A label field as the page names it ("Voice Quality")."""
        return next((f.title for f in self.fields if f.name == name), name)

    def applicable(self, n: int) -> list[str]:
        """The fields item n is labelled on: the rubric's dimensions that apply to it (a rubric may ask some
        only of items with a field, as StyleSet's style elements), then the overall label."""
        item = self.pairs[n]
        dims = {d.name: d for d in self.rubric.dimensions}
        return [name for name in self.spaces if name not in dims or dims[name].applies_to(item)]

    def key(self, n: int) -> str:
        pair = self.pairs[n]
        content = self.contents.get(pair.id)
        return content.key if content else f"id:{pair.id}"

    def swapped_for(self, n: int) -> bool:
        """Whether this annotator hears response 2 as A on item n: a hash of the two, stable across restarts."""
        if self.pairs[n].pointwise:
            return False
        return hashlib.sha256(f"{self.annotator}\0{self.key(n)}".encode()).digest()[0] & 1 == 1

    def record_of(self, n: int) -> LabelRecord | None:
        """The newest saved answer of item n's content (whatever id the item had when it was given)."""
        return self.saved.get(self.key(n))

    def first_open(self) -> int:
        """The first item without an answer (labels or a skip); len(pairs) when all have one."""
        return next((n for n in range(len(self.pairs)) if self.record_of(n) is None), len(self.pairs))

    def state(self) -> dict[str, Any]:
        return {
            "annotator": self.annotator,
            "rubric": self.rubric.name,
            "total": len(self.pairs),
            "first_open": self.first_open(),
            "done": [self.record_of(n) is not None for n in range(len(self.pairs))],
            "fields": [f.__dict__ for f in self.fields],
            "skip_reasons": list(SKIP_REASONS),
            "restart": self.restart,
        }

    def pair(self, n: int) -> dict[str, Any]:
        """What the page shows of item n: nothing that names a system or a judge."""
        item = self.pairs[self._index(n)]
        swap = self.swapped_for(n)
        roles = ["a"] if item.pointwise else ["a", "b"]
        doc: dict[str, Any] = {  # no id either: ids often name the systems ("q00:alpha-vs-bravo")
            "n": n,
            "instruction": {
                "audio": bool(item.instruction_path),
                "text": item.instruction_text,
                "language": item.languages.get("instruction_language"),  # declared in the manifest, for fonts
            },
            "responses": roles,
            "fields": self.applicable(n),
            "labels": None,
            "reasons": {},
            "skip": None,
        }
        timelines = _timelines(item.extra)
        if timelines is not None:  # an interaction pair (sessions --pairs): both sessions drawn, in the order shown
            doc["timelines"] = timelines[::-1] if swap else timelines
        record = self.record_of(n)
        if record is not None:
            own = list(self.contents[item.id].responses) if item.id in self.contents else record.responses
            flip = swap != (len(record.responses) == 2 and record.responses == own[::-1])
            doc["labels"] = swapped(record.labels) if flip else dict(record.labels)
            doc["reasons"] = record.reasons
            doc["skip"] = record.skip
        return doc

    def _index(self, n: int) -> int:
        if not 0 <= n < len(self.pairs):
            raise BadRequest(f"no pair {n}: pairs are numbered 0 to {len(self.pairs) - 1}")
        return n

    def audio(self, n: int, role: str) -> Path:
        item = self.pairs[self._index(n)]
        if role == "instruction":
            rel = item.instruction_path
        elif item.pointwise:
            rel = item.audio_path if role == "a" else None
        elif role in ("a", "b"):
            first = (role == "a") != self.swapped_for(n)
            rel = item.audio1_path if first else item.audio2_path
        else:
            raise BadRequest(f"no clip {role!r}: instruction, a or b")
        if not rel:
            raise BadRequest(f"pair {n} has no {role} clip")
        path = (self.bench.root / rel).resolve()
        if not path.is_relative_to(self.bench.root) or not path.is_file():
            raise BadRequest(f"pair {n}: its {role} clip is not a file inside the benchmark folder")
        return path

    def answer(self, n: int, body: dict[str, Any]) -> LabelRecord:
        """Check an answer (labels in the order shown) and store it; BadRequest, with nothing written, when
        anything is wrong."""
        item = self.pairs[self._index(n)]
        if not isinstance(body, dict):
            raise BadRequest("the body is not a JSON object")
        unknown = sorted(set(body) - {"labels", "reasons", "skip", "played", "seconds"})
        if unknown:
            raise BadRequest(f"unknown field(s) {', '.join(unknown)}: labels, reasons, skip, played, seconds")
        played, seconds = body.get("played"), body.get("seconds")
        if played is not None and (
            not isinstance(played, list) or not set(played) <= {"a", "b", "instruction"} or len(played) > 3
        ):
            raise BadRequest("played lists what was played before the answer: a, b, instruction")
        if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0):
            raise BadRequest("seconds is the time on the pair, a number of seconds")
        skip = body.get("skip")
        labels = body.get("labels") or {}
        reasons = body.get("reasons") or {}
        if not isinstance(labels, dict) or not isinstance(reasons, dict):
            raise BadRequest("labels and reasons are objects: {dimension: label}, {dimension: reason}")
        if skip is not None and (not isinstance(skip, str) or not skip.strip() or len(skip) > MAX_REASON):
            raise BadRequest("skip is the reason for skipping, a short text")
        checked: dict[str, Any] = {}
        fields = self.applicable(n)
        for key, value in labels.items():
            space = self.spaces.get(key)
            if space is None:
                raise BadRequest(f"{key!r} is not a label of the {self.rubric.name} rubric: {', '.join(self.spaces)}")
            if key not in fields:
                raise BadRequest(f"{key} is not asked of pair {n}: {', '.join(fields)}")
            if value not in space.values or isinstance(value, bool):
                raise BadRequest(f"{key} = {value!r} is not {space.describe()}")
            checked[key] = value
        missing = [k for k in fields if k not in checked]
        if skip is None and missing:
            named = ", ".join(self.title(k) for k in missing)
            raise BadRequest(f"missing label(s): {named} (or skip the pair with a reason)")
        for key, reason in reasons.items():
            if key not in self.spaces or not isinstance(reason, str) or len(reason) > MAX_REASON:
                raise BadRequest(f"reason {key!r}: a text of at most {MAX_REASON} characters for a label field")
        swap = self.swapped_for(n)
        content = self.contents.get(item.id)
        record = LabelRecord(
            pair_id=item.id,
            content_key=content.key if content else None,
            responses=list(content.responses) if content else [],
            labels={} if skip is not None else (swapped(checked) if swap else checked),
            annotator=self.annotator,
            time=now(),
            reasons={k: v.strip() for k, v in reasons.items() if v.strip()},
            order_shown=(["1"] if item.pointwise else (["2", "1"] if swap else ["1", "2"])),
            skip=skip.strip() if skip is not None else None,
            rubric=self.rubric.name,
            seconds=round(float(seconds), 3) if seconds is not None else None,
            played=list(played) if played is not None else None,
        )
        self.keep(n, record)
        return record

    def after_save(self) -> dict[str, Any]:
        """What the page learns with a save's reply: where to go on."""
        return {"first_open": self.first_open()}

    def keep(self, n: int, record: LabelRecord) -> None:
        self.store.append(record)  # on disk (fsync) before the page hears it was saved
        self.saved[self.key(n)] = record


def _names(space: Any) -> list[str]:
    if space.kind == "typed-tie":
        return [TYPED_TIE_NAMES[v] for v in space.values]
    if space.kind == "win-lose-tie":
        return [WIN_LOSE_NAMES[v] for v in space.values]
    return [str(v) for v in space.values]


def page_html() -> str:
    """The page, its style and script in one document (one request, under the token)."""
    files = resources.files("trace_eval.labels")
    html = files.joinpath("label.html").read_text(encoding="utf-8")
    css = files.joinpath("label.css").read_text(encoding="utf-8")
    js = files.joinpath("label.js").read_text(encoding="utf-8")
    return html.replace("/*STYLE*/", css).replace("/*SCRIPT*/", js)


def _climbs(raw_path: str) -> bool:
    """A request path that climbs out or names an absolute path, in any encoding."""
    text = raw_path
    for _ in range(3):  # %252e%252e decodes twice
        text = unquote(text)
    return ".." in text.split("?")[0] or "//" in text or "\\" in text or "\0" in text


class Busy(ValueError):
    """A request refused for now (409): the annotator's link is open in another page."""


def make_app(session: LabelSession, token: str) -> Any:
    """One annotator's page, under its token."""

    def lookup(given: str) -> LabelSession | None:
        return session if secrets.compare_digest(given.encode(), token.encode()) else None

    return serve_sessions(lookup)


def serve_sessions(lookup: Any, lead: Any = None) -> Any:
    """The ASGI app: `lookup(token)` gives the annotator's session (or None: 403); `lead(token)`, when given,
    gives the lead's page and report instead (team.py)."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response
    from starlette.routing import Route

    page = page_html()

    def refuse(status: int, reason: str) -> Response:
        return JSONResponse({"error": reason}, status_code=status)

    def n_of(request: Request) -> int:
        try:
            return int(request.path_params["n"])
        except ValueError as e:
            raise BadRequest(f"pair number {request.path_params['n']!r} is not a number") from e

    def of(request: Request) -> LabelSession:
        return request.scope["trace_session"]

    async def index(request: Request) -> Response:
        return HTMLResponse(page, headers={"Cache-Control": "no-store"})

    async def state(request: Request) -> Response:
        return JSONResponse(of(request).state())

    async def pair(request: Request) -> Response:
        return JSONResponse(of(request).pair(n_of(request)))

    async def answer(request: Request) -> Response:
        n = n_of(request)
        declared = request.headers.get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > MAX_BODY):
            return refuse(400, f"the body is larger than {MAX_BODY} bytes")
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY:
                return refuse(400, f"the body is larger than {MAX_BODY} bytes")
        try:
            data = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError):
            return refuse(400, "the body is not JSON")
        session = of(request)
        record = session.answer(n, data)
        return JSONResponse({"saved": True, "time": record.time, **session.after_save()})

    async def audio(request: Request) -> Response:
        path = of(request).audio(n_of(request), request.path_params["role"])
        return FileResponse(path, headers={"Cache-Control": "no-store"})

    async def ping(request: Request) -> Response:
        return JSONResponse({"ok": True})

    async def bye(request: Request) -> Response:
        release = getattr(of(request), "release", None)
        if release is not None:
            release(request.query_params.get("page") or "")
        return JSONResponse({"ok": True})

    async def lead_page(request: Request) -> Response:
        return HTMLResponse(request.scope["trace_lead"].page(), headers={"Cache-Control": "no-store"})

    async def lead_report(request: Request) -> Response:
        return JSONResponse(request.scope["trace_lead"].report())

    async def guard(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        request = Request(scope)
        raw = scope.get("raw_path", scope["path"].encode()).decode("latin-1")
        if _climbs(raw) or _climbs(scope["path"]):
            response = refuse(400, "the path climbs out of the benchmark folder or is absolute: refused")
        else:
            given = request.query_params.get("token") or request.headers.get("x-trace-token") or ""
            session = lookup(given)
            boss = lead(given) if lead is not None and session is None else None
            on_lead = scope["path"] in ("/lead", "/api/team")
            if boss is not None and on_lead:
                scope["trace_lead"] = boss
                await app(scope, receive, send)
                return
            if session is None or on_lead:
                response = refuse(403, "this page needs its token: open the URL `label` printed")
            else:
                try:  # a team's link serves one page at a time (team.py); the check is the session's
                    check = getattr(session, "check_page", None)
                    if check is not None:
                        check(request.headers.get("x-trace-page") or request.query_params.get("page"))
                except Busy as e:
                    response = refuse(409, str(e))
                else:
                    scope["trace_session"] = session
                    await app(scope, receive, send)
                    return
        await response(scope, receive, send)

    async def bad_request(request: Request, error: Exception) -> Response:
        return refuse(400, str(error))

    app = Starlette(
        routes=[
            Route("/", index),
            Route("/api/state", state),
            Route("/api/ping", ping),
            Route("/api/bye", bye, methods=["GET", "POST"]),
            Route("/api/pair/{n}", pair, methods=["GET"]),
            Route("/api/pair/{n}", answer, methods=["POST"]),
            Route("/audio/{n}/{role}", audio),
            Route("/lead", lead_page),
            Route("/api/team", lead_report),
        ],
        exception_handlers={BadRequest: bad_request},
    )
    return guard


def page_file(store: LabelStore, annotator: str) -> Path:
    """labels/<annotator>.page.json: the page's token and port, kept for the next start (owner-only)."""
    return store.dir / f"{annotator}.page.json"


def _kept(path: Path) -> dict[str, Any]:
    """The token and port an earlier start kept ({} when none, or unreadable)."""
    try:
        kept = read_json(path)
    except (OSError, ValueError):
        return {}
    if not isinstance(kept, dict):
        return {}
    token, port = kept.get("token"), kept.get("port")
    return {
        "token": token if isinstance(token, str) and _TOKEN.fullmatch(token) else None,
        "port": port if isinstance(port, int) and 0 < port < 65536 else None,
    }


def listen(host: str, port: int | None, kept: int | None, kept_is: str, left_open: str) -> tuple[socket.socket, str]:
    """A socket on `port` (asked for), else on `kept` (the last start's, so links keep working), else on a free
    one, said on stderr when the kept one is taken; and the host to show in links. Serving beyond this machine is
    warned of."""
    wanted = port if port is not None else kept or 0
    try:
        sock = _bind(host, wanted)
    except OSError as e:
        if port is not None or not wanted:
            raise
        sock = _bind(host, 0)
        print(
            f"note: port {wanted}, {kept_is}, is taken ({e.strerror}): serving on another, so {left_open} must be "
            "opened again at the new URL",
            file=sys.stderr,
            flush=True,
        )
    if host not in ("127.0.0.1", "localhost", "::1"):
        print(
            f"warning: --host {host} serves the pages (and the benchmark's audio) to other machines on the network; "
            "anyone with a URL and its token can label",
            file=sys.stderr,
            flush=True,
        )
    return sock, "127.0.0.1" if host in ("0.0.0.0", "::") else host


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named: asyncio turns Nagle off (TCP_NODELAY) only on sockets that say they are TCP. With Nagle
    # on, a reply's body waits for the client's delayed ACK of its headers: 40 ms added to every request.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(128)
    return sock


def serve(session: LabelSession, host: str = "127.0.0.1", port: int | None = None, token: str | None = None) -> None:
    """Bind, print the page's URL (one line, starting with http://), and serve until interrupted.

    Without `token` and `port`, those of the annotator's last start are used (labels/<annotator>.page.json),
    so the URL stays the same across restarts; a new token is made the first time, and a free port is taken
    when the kept one is busy (said on stderr). What is used is kept for the next start.
    """
    import uvicorn

    if token is not None and not _TOKEN.fullmatch(token):
        raise LabelError(f"--token {token!r}: 8 or more letters, digits, '.', '_', '~' or '-' (it goes into the URL)")
    path = page_file(session.store, session.annotator)
    kept = _kept(path)
    token = token or kept.get("token") or secrets.token_urlsafe(18)
    sock, shown = listen(host, port, kept.get("port"), "this page's port last time", "a page left open")
    bound = sock.getsockname()[1]
    write_json(path, {"token": token, "port": bound}, private=True)
    print(f"http://{shown}:{bound}/?token={token}", flush=True)
    config = uvicorn.Config(make_app(session, token), log_level="warning", access_log=False, lifespan="off")
    uvicorn.Server(config).run(sockets=[sock])


def _timelines(extra: dict[str, Any]) -> list[dict[str, Any]] | None:
    """What the page draws of an interaction pair's two sessions (their timelines, `session_1` and `session_2`
    as `sessions --pairs` writes them): each channel's speech, the backchannels and barge-ins, on the session's
    clock; None for any other item, or where a timeline does not read."""
    drawn = []
    for key in ("session_1", "session_2"):
        try:
            record = json.loads(extra[key])
            drawn.append({
                "duration_s": float(record["duration_s"]),
                "speech": {who: record["speech"][who] for who in ("user", "system")},
                "backchannels": record.get("backchannels", []),
                "barge_ins": [b["user_turn"][0] for b in record.get("barge_ins", [])],
            })  # fmt: skip
        except (KeyError, TypeError, ValueError):
            return None
    return drawn
