"""One labelling server for a team: a link per annotator, pairs handed out so that each is labelled by
`overlap` people and no more, gold pairs mixed in, and a page for the lead with each annotator's quality.

Everything the team needs across restarts is kept in `BENCH/labels/team/`: `team.json` (the links' tokens,
the port and the settings; its owner's alone), `claims.jsonl` (each pair handed out, appended and fsynced
before the page sees it: a restart hands out nothing twice), `gold/` (the gold pairs, their audio and the
labels given on them, apart from the benchmark's labels). The labels themselves go where one annotator's
go, `labels/<annotator>.jsonl`.

Handing out: the queue is the random sample (shuffled with the seed, so a day cut short still labelled a
random part), then the pairs the judges are least sure of (least_sure.py). Each annotator gets the first
pair of the queue that has fewer than `overlap` holders and is not theirs already, one open pair at a time;
with probability `gold_rate` a gold pair they have not seen comes instead. All of it runs on the server's
one event loop, so two pages never take the last place on a pair at once.
"""

from __future__ import annotations

import json
import random
import secrets
import sys
import time
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trace_eval.io import read_json, write_json
from trace_eval.labels.gold import TEAM, GoldItem, make_gold, read_gold
from trace_eval.labels.quality import quality, team_agreement
from trace_eval.labels.server import _TOKEN, BadRequest, Busy, LabelSession, listen, serve_sessions
from trace_eval.labels.store import (
    FOLDER,
    LabelError,
    LabelRecord,
    LabelStore,
    PairContent,
    append_line,
    check_annotator,
    content_keys,
    label_spaces,
    now,
)

if TYPE_CHECKING:
    from trace_eval.bench import Benchmark
    from trace_eval.rubrics import Rubric

__all__ = ["PAGE_QUIET_S", "Team", "TeamSession", "serve_team", "team_dir"]

PAGE_QUIET_S = 20.0  # a page unheard of this long has closed: its link may be opened elsewhere (pages ping every 5 s)


def team_dir(root: str | Path) -> Path:
    return Path(root) / FOLDER / TEAM


@dataclass
class Settings:
    overlap: int = 2
    gold_rate: float = 0.1
    gold_pairs: int = 30
    bar: float = 0.7
    seed: int = 0


@dataclass
class _Page:
    id: str
    seen: float = field(default_factory=time.monotonic)


class TeamSession(LabelSession):
    """One annotator of a team: their pairs are those handed to them, in the order handed out."""

    def __init__(self, team: Team, annotator: str):
        self.team = team
        super().__init__(
            team.bench.root, annotator, team.rubric, [], team.restart, bench=team.bench, contents=team.contents
        )
        self.pairs = [team.item(i) for i in team.claims.get(annotator, [])]
        self.page: _Page | None = None
        # The pair handed out and not answered yet (one at a time): kept, not searched for on every save.
        self.open: int | None = next((n for n in range(len(self.pairs)) if self.record_of(n) is None), None)

    def load_saved(self) -> None:
        super().load_saved()
        for record in self.team.gold_store.records(self.annotator)[0]:
            self.saved[f"gold:{record.content_key}"] = record

    def key(self, n: int) -> str:
        item = self.pairs[n]
        base = super().key(n)
        return f"gold:{base}" if item.id in self.team.gold else base

    def open_pair(self) -> int | None:
        return self.open

    def state(self) -> dict[str, Any]:
        state = super().state()
        state["total"] = len(self.pairs) + int(self.team.next_work(self.annotator) is not None)
        state["done"] = [self.record_of(n) is not None for n in range(len(self.pairs))]
        state["first_open"] = self.first_open()
        state["team"] = {"overlap": self.team.settings.overlap, "left": self.team.left()}
        return state

    def after_save(self) -> dict[str, Any]:
        return {
            "first_open": self.first_open(),
            "total": len(self.pairs) + int(self.team.next_work(self.annotator) is not None),
            "left": self.team.left(),
        }

    def pair(self, n: int) -> dict[str, Any]:
        if n == len(self.pairs):
            if not self.team.claim(self):
                return {"n": n, "done": True, "total": len(self.pairs)}
        return super().pair(n)

    def keep(self, n: int, record: LabelRecord) -> None:
        if self.pairs[n].id in self.team.gold:
            self.team.gold_store.append(record)  # apart: never a label of the benchmark
        else:
            self.store.append(record)
        self.saved[self.key(n)] = record
        self.team.saves += 1
        if self.open == n:
            self.open = None

    def check_page(self, page: str | None) -> None:
        """Busy when another page has this link open; pages send their id with every request."""
        if not page:
            return  # the page's audio, a script: not a page that labels
        clock = time.monotonic()
        if self.page is not None and self.page.id != page and clock - self.page.seen < PAGE_QUIET_S:
            raise Busy(
                f"{self.annotator}'s link is open in another page: labels are saved from one page at a time, so "
                f"that none is given twice. Close the other page (this one works {PAGE_QUIET_S:.0f} s after it "
                "closes), or ask the lead for your own link. Nothing typed here is lost."
            )
        self.page = _Page(page, clock)

    def release(self, page: str) -> None:
        if self.page is not None and self.page.id == page:
            self.page = None


class Team:
    """A team labelling one benchmark on one server (see the module's notes)."""

    def __init__(
        self,
        bench: Benchmark,
        rubric: Rubric,
        names: list[str],
        settings: Settings,
        random_ids: list[str] | None = None,
        least_sure: list[str] | None = None,
        restart: str | None = None,
    ):
        self.bench = bench
        self.rubric = rubric
        self.settings = settings
        self.restart = restart
        self.dir = team_dir(bench.root)
        _check(bench, names, settings)
        self.names = list(names)
        self.contents: dict[str, PairContent] = content_keys(bench)
        items = (
            make_gold(bench, rubric, settings.gold_pairs, settings.seed)
            if settings.gold_rate > 0
            else read_gold(bench.root)
        )
        self.gold: dict[str, GoldItem] = {}
        seen: set[str] = set()
        for g in items:
            content = g.content(bench.root)
            if content.key in seen:  # the same audio as another gold pair: one pair, handed out once
                continue
            seen.add(content.key)
            self.gold[g.id] = g
            self.contents[g.id] = content
        self.gold_by_key = {self.contents[g].key: item for g, item in self.gold.items()}
        self.gold_store = LabelStore(bench.root, Path(FOLDER) / TEAM / "gold" / "labels")
        by_id = {p.id: p for p in bench.pairs}
        self.by_id = by_id
        lead_gold = {g.source for g in items if g.kind == "lead"}
        first = [i for i in (random_ids if random_ids is not None else [p.id for p in bench.pairs]) if i in by_id]
        random.Random(f"{settings.seed}:queue").shuffle(first)  # a day cut short has still labelled at random
        rest = [i for i in (least_sure or []) if i in by_id and i not in set(first)]
        self.queue = [i for i in first + rest if i not in lead_gold]
        self.random_part = len([i for i in first if i not in lead_gold])
        self.claims: dict[str, list[str]] = {}
        self.holders: dict[str, set[str]] = {}
        self._read_claims()
        self.sessions = {name: TeamSession(self, name) for name in names}
        for name, session in self.sessions.items():  # labels given before the team started count as held
            for key in session.saved:
                if not key.startswith("gold:"):
                    self.holders.setdefault(key, set()).add(name)
        self.start = 0
        self.places = sum(max(0, settings.overlap - len(self.holders.get(self._key(p), ()))) for p in self.queue)
        self.saves = 0
        self.started = time.time()
        self.links: dict[str, str] = {}
        self.lead_link = ""

    # -- handing out ------------------------------------------------------------------------------------

    @property
    def claims_path(self) -> Path:
        return self.dir / "claims.jsonl"

    def _read_claims(self) -> None:
        if not self.claims_path.is_file():
            return
        for n, line in enumerate(self.claims_path.read_text(encoding="utf-8").splitlines(), 1):
            try:
                claim = json.loads(line)
                who, pid = claim["annotator"], claim["id"]
            except (json.JSONDecodeError, KeyError, TypeError):
                print(f"warning: {self.claims_path} line {n}: not a hand-out; left out", file=sys.stderr)
                continue
            if pid not in self.by_id and pid not in self.gold:
                print(f"warning: {self.claims_path} line {n}: pair {pid} is gone; left out", file=sys.stderr)
                continue
            self.claims.setdefault(who, []).append(pid)
            if pid in self.by_id:
                self.holders.setdefault(self.contents[pid].key if pid in self.contents else f"id:{pid}", set()).add(who)

    def item(self, pid: str) -> Any:
        return self.gold[pid].pair() if pid in self.gold else self.by_id[pid]

    def _key(self, pid: str) -> str:
        return self.contents[pid].key if pid in self.contents else f"id:{pid}"

    def next_work(self, annotator: str) -> str | None:
        """The first pair of the queue with a place left that `annotator` does not hold."""
        while self.start < len(self.queue) and len(self.holders.get(self._key(self.queue[self.start]), ())) >= (
            self.settings.overlap
        ):
            self.start += 1  # full pairs stay full: the scan starts after them
        for pid in self.queue[self.start :]:
            held = self.holders.get(self._key(pid), set())
            if len(held) < self.settings.overlap and annotator not in held:
                return pid
        return None

    def left(self) -> int:
        """Places left on the queue's pairs (a pair labelled once of two has one), kept as pairs are handed out."""
        return self.places

    def claim(self, session: TeamSession) -> bool:
        """Hand `session` its next pair (on disk first); False when the team has covered the queue for them."""
        who = session.annotator
        open_n = session.open_pair()
        if open_n is not None:
            raise BadRequest(
                f"answer or skip pair {open_n + 1} first: each annotator holds one open pair at a time, so no pair "
                "waits on someone who left"
            )
        work = self.next_work(who)
        if work is None:
            return False
        k = len(session.pairs)
        seen = set(self.claims.get(who, []))
        unseen = [g for g in sorted(self.gold) if g not in seen]
        rng = random.Random(f"{self.settings.seed}:{who}:{k}")
        pid = work
        if unseen and rng.random() < self.settings.gold_rate:
            pid = unseen[random.Random(f"{self.settings.seed}:{who}:gold:{k}").randrange(len(unseen))]
        append_line(
            self.claims_path,
            json.dumps({"annotator": who, "id": pid, "key": self._key(pid), "gold": pid in self.gold, "time": now()}),
        )
        self.claims.setdefault(who, []).append(pid)
        if pid in self.by_id:
            self.holders.setdefault(self._key(pid), set()).add(who)
            self.places -= 1  # next_work only hands out a pair with a place left
        session.pairs.append(self.item(pid))
        session.open = len(session.pairs) - 1
        return True

    # -- the lead's report -------------------------------------------------------------------------------

    def quality(self) -> dict[str, dict[str, Any]]:
        records = {
            name: [r for k, r in s.saved.items() if not k.startswith("gold:")] for name, s in self.sessions.items()
        }
        golds = {name: [r for k, r in s.saved.items() if k.startswith("gold:")] for name, s in self.sessions.items()}
        responses = {self.contents[g].key: self.contents[g].responses for g in self.gold}
        space = label_spaces(self.rubric).get("overall")
        return quality(records, golds, self.gold_by_key, responses, space, self.settings.bar)

    def report(self) -> dict[str, Any]:
        figures = self.quality()
        done: dict[str, int] = {}
        for s in self.sessions.values():
            for key in s.saved:
                done[key] = done.get(key, 0) + 1
        keys = [self._key(p) for p in self.queue]
        full = sum(1 for k in keys if done.get(k, 0) >= self.settings.overlap)
        random_keys = keys[: self.random_part]
        rows = []
        for name in self.names:
            s = self.sessions[name]
            open_n = s.open_pair()
            rows.append(
                {
                    "annotator": name,
                    "link": self.links.get(name),
                    "handed": len(s.pairs),
                    "open": open_n + 1 if open_n is not None else None,
                    "page_open": s.page is not None and time.monotonic() - s.page.seen < PAGE_QUIET_S,
                    "last_save": max((r.time for r in s.saved.values()), default=None),
                    **figures.get(name, {}),
                }
            )
        records = {
            name: [r for k, r in s.saved.items() if not k.startswith("gold:")] for name, s in self.sessions.items()
        }
        return {
            "benchmark": str(self.bench.root),
            "rubric": self.rubric.name,
            "settings": self.settings.__dict__,
            "queue": {
                "pairs": len(keys),
                "random": len(random_keys),
                "least_sure": len(keys) - len(random_keys),
                "full": full,
                "random_full": sum(1 for k in random_keys if done.get(k, 0) >= self.settings.overlap),
                "places_left": self.left(),
            },
            "gold_pairs": len(self.gold),
            "agreement": team_agreement(records),
            "annotators": rows,
            "saves": self.saves,
            "time": now(),
        }

    def page(self) -> str:
        return resources.files("trace_eval.labels").joinpath("lead.html").read_text(encoding="utf-8")


def _check(bench: Benchmark, names: list[str], settings: Settings) -> None:
    if not names:
        raise LabelError("--team names no one: give the annotators' names, comma-separated (--team ana,ben,cleo)")
    for name in names:
        check_annotator(name)
        if name == "lead":
            raise LabelError("--team: 'lead' names the lead's page; give the annotator another name")
    folded = [n.casefold() for n in names]
    twins = sorted({n for n in names if folded.count(n.casefold()) > 1})
    if twins:
        raise LabelError(f"--team names {', '.join(twins)} twice (names differing only in case are one person)")
    store = LabelStore(bench.root)
    for name in names:
        store.check_new_name(name)
    if not 1 <= settings.overlap <= len(names):
        raise LabelError(
            f"--overlap {settings.overlap} is larger than the team ({len(names)} annotator(s)): a pair cannot be "
            f"labelled by more different people than there are; give --overlap between 1 and {len(names)}, or name "
            "more annotators"
            if settings.overlap > len(names)
            else f"--overlap {settings.overlap}: each pair needs at least one label"
        )
    if not 0 <= settings.gold_rate < 1:
        raise LabelError(f"--gold-rate {settings.gold_rate}: the share of pairs that are gold, from 0 up to (not) 1")
    if not 0 < settings.bar <= 1:
        raise LabelError(f"--bar {settings.bar}: the gold accuracy an annotator must reach, above 0 and at most 1")


def serve_team(team: Team, host: str = "127.0.0.1", port: int | None = None) -> None:
    """Bind, print the lead's URL and each annotator's (kept in labels/team/team.json across restarts), and
    serve until interrupted."""
    import uvicorn

    path = team.dir / "team.json"
    kept: dict[str, Any] = {}
    if path.is_file():
        try:
            kept = read_json(path)
        except (OSError, ValueError):
            kept = {}
    tokens = {k: v for k, v in (kept.get("tokens") or {}).items() if isinstance(v, str) and _TOKEN.fullmatch(v)}
    for name in ["lead", *team.names]:
        tokens.setdefault(name, secrets.token_urlsafe(18))
    sock, shown = listen(host, port, kept.get("port"), "the team's port last time", "pages left open")
    bound = sock.getsockname()[1]
    write_json(
        path,
        {"tokens": tokens, "port": bound, "annotators": team.names, "settings": team.settings.__dict__},
        private=True,
    )
    base = f"http://{shown}:{bound}"
    by_token = {tokens[name]: team.sessions[name] for name in team.names}
    team.links = {name: f"{base}/?token={tokens[name]}" for name in team.names}
    team.lead_link = f"{base}/lead?token={tokens['lead']}"
    print(f"lead: {team.lead_link}", flush=True)
    for name in team.names:
        print(f"{name}: {team.links[name]}", flush=True)

    def lookup(given: str) -> TeamSession | None:
        for token, session in by_token.items():  # compared in constant time, as one page's token is
            if given and secrets.compare_digest(given.encode(), token.encode()):
                return session
        return None

    def lead(given: str) -> Team | None:
        return team if given and secrets.compare_digest(given.encode(), tokens["lead"].encode()) else None

    config = uvicorn.Config(serve_sessions(lookup, lead), log_level="warning", access_log=False, lifespan="off")
    uvicorn.Server(config).run(sockets=[sock])
