"""The label store: `BENCH/labels/<annotator>.jsonl`, one JSON line per answer, appended and fsynced before
the answer is called saved. A change appends a newer record; the last record of a pair wins.

A record names its pair twice: by id, and by content (the sha256 of the instruction audio and of both
responses, order-free), with the responses' hashes in the numbering the labels use. Reading maps every
record onto the current manifest through the content, so a re-prepared benchmark (new ids, swapped
seats, more systems) keeps every label, "1" and "2" swapped where the seats were.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trace_eval.schemas import validation_errors

if TYPE_CHECKING:
    from trace_eval.bench import Benchmark
    from trace_eval.rubrics import Rubric
    from trace_eval.rubrics.labels import LabelSpace

__all__ = [
    "FORMAT_VERSION",
    "LabelError",
    "LabelRecord",
    "LabelStore",
    "PairContent",
    "PeopleLabels",
    "content_keys",
    "export_labels",
    "import_labels",
    "label_spaces",
    "majority",
    "read_people",
]

FORMAT_VERSION = 1
FOLDER = "labels"
MANIFEST_ANNOTATOR = "manifest"  # the labels a manifest carries, one voter among the annotators
_ANNOTATOR = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_SWAP = {"1": "2", "2": "1"}


class LabelError(ValueError):
    """A label, annotator or file that cannot be stored or read (the message says what to give instead)."""


def check_annotator(name: str) -> str:
    if not _ANNOTATOR.match(name) or name == MANIFEST_ANNOTATOR:
        raise LabelError(
            f"annotator {name!r}: use letters, digits, '.', '_' or '-' (64 at most), starting with a letter or "
            f"digit; {MANIFEST_ANNOTATOR!r} names the manifest's own labels"
        )
    return name


# -- content keys ---------------------------------------------------------------------------------------

_HASHES: dict[tuple[str, int, int], str] = {}  # (path, size, mtime_ns) -> sha256, for this process


def sha256_of(path: Path) -> str:
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if key not in _HASHES:
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            while block := f.read(1 << 20):
                digest.update(block)
        _HASHES[key] = digest.hexdigest()
    return _HASHES[key]


def content_key(instruction: str | None, responses: tuple[str, ...]) -> str:
    """sha256 over the instruction's hash and the responses' hashes sorted: the same for either seating."""
    text = "|".join([instruction or "-", *sorted(responses)])
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class PairContent:
    """What a pair is made of: the audio hashes, responses in the manifest's numbering, and its key."""

    id: str
    instruction: str | None
    responses: tuple[str, ...]
    key: str


def content_keys(bench: Benchmark) -> dict[str, PairContent]:
    """Every item's content, by id; an item whose audio is missing has none (its labels stay by id)."""
    found: dict[str, PairContent] = {}
    for pair in bench.pairs:
        paths = [pair.audio_path] if pair.pointwise else [pair.audio1_path, pair.audio2_path]
        try:
            instruction = sha256_of(bench.resolve(pair.instruction_path)) if pair.instruction_path else None
            responses = tuple(sha256_of(bench.resolve(p)) for p in paths if p)
        except OSError:
            continue
        found[pair.id] = PairContent(pair.id, instruction, responses, content_key(instruction, responses))
    return found


def append_line(path: Path, text: str) -> None:
    """Append one line and fsync it (and the folder, for a new file): when this returns, it survives a crash."""
    line = (text + "\n").encode("utf-8")
    created = not path.exists()
    path.parent.mkdir(parents=True, exist_ok=True)
    # O_APPEND writes of one line each: two processes appending to one file never interleave lines.
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)
    if created:  # the new name must survive too
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


# -- records --------------------------------------------------------------------------------------------


@dataclass
class LabelRecord:
    """One answer of one annotator on one pair (one line of labels/<annotator>.jsonl)."""

    pair_id: str
    content_key: str | None  # None where the audio was missing when the label was given
    responses: list[str]  # sha256 of response 1 (and 2) in the numbering `labels` use
    labels: dict[str, Any]  # dimension (and "overall") -> label, in that numbering
    annotator: str
    time: str  # when it was given, ISO 8601 UTC
    reasons: dict[str, str] = field(default_factory=dict)  # dimension -> the listener's reason (HCoT)
    order_shown: list[str] | None = None  # the manifest response shown as A, B (["2", "1"]: swapped); None: unknown
    skip: str | None = None  # why the pair was skipped ("no sound"); no labels then
    rubric: str | None = None
    source: str = "page"  # page | import
    format_version: int = FORMAT_VERSION
    seconds: float | None = None  # time on the pair, from shown to saved (team pages); None: not measured
    played: list[str] | None = None  # what was played before the answer ("a", "b", "instruction"), as shown

    def to_json(self) -> str:
        raw = asdict(self)
        for key in ("seconds", "played"):  # measured by team pages only: older readers never see them empty
            if raw[key] is None:
                del raw[key]
        return json.dumps(raw, ensure_ascii=False, sort_keys=True, allow_nan=False)

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> LabelRecord:
        names = cls.__dataclass_fields__
        missing = [k for k in ("pair_id", "labels", "annotator", "time") if k not in raw]
        if missing:
            raise LabelError(f"missing {', '.join(missing)}")
        if not isinstance(raw["labels"], dict):
            raise LabelError("labels is not an object")
        return cls(**{k: v for k, v in raw.items() if k in names})


def now() -> str:
    """UTC, to the millisecond."""
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1000):03d}Z"


class LabelStore:
    """The label files of one benchmark folder."""

    _lock = threading.Lock()  # one append at a time in this process; other processes append whole lines

    def __init__(self, bench_root: str | Path, folder: str | Path = FOLDER):
        self.root = Path(bench_root)
        self.dir = self.root / folder  # gold answers live apart (labels/team/gold-labels): never the benchmark's

    def path(self, annotator: str) -> Path:
        return self.dir / f"{check_annotator(annotator)}.jsonl"

    def annotators(self) -> list[str]:
        if not self.dir.is_dir():
            return []
        return sorted(p.stem for p in self.dir.glob("*.jsonl") if _ANNOTATOR.match(p.stem))

    def check_new_name(self, annotator: str, others: set[str] | frozenset[str] = frozenset()) -> None:
        """LabelError when `annotator` differs only in case from an annotator of this benchmark (or of `others`):
        on macOS and Windows the two are one file, and as two names they would split one person in two in the
        agreement figures."""
        known = set(self.annotators()) | set(others)
        twins = sorted(a for a in known if a != annotator and a.casefold() == annotator.casefold())
        if twins:
            raise LabelError(
                f"annotator {annotator!r}: this benchmark already has {twins[0]!r}, a name that differs only in case "
                f"(one file on macOS and Windows, and two people in the agreement figures): give --annotator "
                f"{twins[0]} to go on as that person, or a name of its own. Annotators here: {', '.join(sorted(known))}"
            )

    def append(self, record: LabelRecord) -> None:
        """Append one record and fsync it: when this returns, the label survives a crash."""
        with self._lock:
            append_line(self.path(record.annotator), record.to_json())

    def records(self, annotator: str) -> tuple[list[LabelRecord], list[str]]:
        """Every record in file order, and the lines that could not be read (a torn last line after a crash)."""
        path = self.path(annotator)
        records: list[LabelRecord] = []
        problems: list[str] = []
        if not path.is_file():
            return records, problems
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
                wrong = validation_errors("label", raw)  # schemas/label.schema.json
                if wrong:
                    raise LabelError("; ".join(wrong[:3]))
                records.append(LabelRecord.from_json(raw))
            except (json.JSONDecodeError, LabelError, TypeError) as e:
                problems.append(f"{path.name} line {n}: not a label record ({e}); left out")
        return records, problems

    def latest(self, annotator: str) -> dict[str, LabelRecord]:
        """The newest record of each pair (by content key, else by id)."""
        newest: dict[str, LabelRecord] = {}
        for record in self.records(annotator)[0]:
            newest[record.content_key or f"id:{record.pair_id}"] = record
        return newest


# -- reading records onto the current manifest ----------------------------------------------------------


def label_spaces(rubric: Rubric) -> dict[str, LabelSpace]:
    """What a person labels under `rubric`: its dimensions, then the overall label where it fuses."""
    from trace_eval.rubrics.labels import label_space

    spaces = dict(rubric.spaces())
    if rubric.fusion:
        spaces["overall"] = label_space("typed-tie")
    return spaces


def swapped(labels: dict[str, Any]) -> dict[str, Any]:
    """Labels in the other seating: "1" <-> "2" (pairwise labels are strings; scores never are)."""
    return {k: _SWAP.get(v, v) if isinstance(v, str) else v for k, v in labels.items()}


def place(
    record: LabelRecord, contents: dict[str, PairContent], by_key: dict[str, list[str]], known: set[str]
) -> list[tuple[str, bool]]:
    """The current items (of `known`) a record labels, each with whether its seats are swapped against the
    record's.

    The record's own id when that item still holds the same content; else every item with its content
    (the same comparison, wherever it now sits). Where the content cannot be told (no key in the record,
    or the item's audio missing here), its id if that item exists.
    """
    own = contents.get(record.pair_id)
    if record.content_key is None or (own is None and record.pair_id in known):
        return [(record.pair_id, False)] if record.pair_id in known else []
    ids = [record.pair_id] if own is not None and own.key == record.content_key else by_key.get(record.content_key, [])
    return [(i, len(record.responses) == 2 and list(contents[i].responses) == record.responses[::-1]) for i in ids]


@dataclass
class PeopleLabels:
    """The label store read onto the current manifest."""

    annotators: dict[str, dict[str, dict[str, Any]]]  # annotator -> id -> dimension -> label (manifest numbering)
    reasons: dict[str, dict[str, dict[str, str]]]  # annotator -> id -> dimension -> reason
    skipped: dict[str, dict[str, str]]  # annotator -> id -> why skipped
    shown: dict[str, dict[str, list[str]]]  # annotator -> id -> manifest response shown as A, B
    unmatched: list[str]  # records whose pair is no longer in the benchmark
    problems: list[str]  # unreadable lines, labels outside their space
    remapped: int = 0  # labels that found their pair by content under another id or seating


def read_people(
    bench: Benchmark,
    rubric: Rubric,
    contents: dict[str, PairContent] | None = None,
    leave_out: frozenset[str] | set[str] = frozenset(),
) -> PeopleLabels:
    """Every annotator's newest answer per pair, mapped onto `bench`'s ids and seats; the annotators named in
    `leave_out` are not read (their files are kept)."""
    store = LabelStore(bench.root)
    contents = content_keys(bench) if contents is None else contents
    by_key: dict[str, list[str]] = {}
    for pid, content in contents.items():
        by_key.setdefault(content.key, []).append(pid)
    known = {p.id for p in bench.pairs}
    spaces = label_spaces(rubric)
    people = PeopleLabels({}, {}, {}, {}, [], [])
    missing = sorted(set(leave_out) - set(store.annotators()))
    if missing:
        raise LabelError(
            f"cannot leave out {', '.join(missing)}: no such annotator in {store.dir} "
            f"(annotators: {', '.join(store.annotators()) or 'none'})"
        )
    for annotator in store.annotators():
        if annotator in leave_out:
            continue
        records, problems = store.records(annotator)
        people.problems += problems
        newest: dict[str, LabelRecord] = {}
        for record in records:
            newest[record.content_key or f"id:{record.pair_id}"] = record
        mine: dict[str, dict[str, Any]] = {}
        for record in newest.values():
            targets = [(i, s) for i, s in place(record, contents, by_key, known) if i in known]
            if not targets:
                people.unmatched.append(f"{annotator}: pair {record.pair_id} ({record.time}) is not in the benchmark")
                continue
            for pid, swap in targets:
                people.remapped += int(swap or pid != record.pair_id)
                if record.skip is not None:
                    people.skipped.setdefault(annotator, {})[pid] = record.skip
                    mine.pop(pid, None)
                    continue
                people.skipped.get(annotator, {}).pop(pid, None)
                labels = swapped(record.labels) if swap else dict(record.labels)
                item: dict[str, Any] = {}
                for key, value in labels.items():
                    space = spaces.get(key)
                    label = space.normalise_human(value) if space is not None else None
                    if space is not None and label is None and value is not None:
                        people.problems.append(
                            f"{annotator}: item {pid}: {key} = {value!r} is not {space.describe()}; left out"
                        )
                    elif label is not None:
                        item[key] = label
                mine[pid] = item
                people.reasons.setdefault(annotator, {})[pid] = dict(record.reasons)
                if record.order_shown is not None:
                    order = record.order_shown
                    people.shown.setdefault(annotator, {})[pid] = [_SWAP.get(o, o) for o in order] if swap else order
        if mine:
            people.annotators[annotator] = mine
    return people


def majority(votes: list[Any], space: LabelSpace) -> tuple[Any | None, str | None]:
    """One label from several people's: the label most of them gave; scores are averaged.

    A tie at the top between people (one says "1", one says "2") gives no label, with the reason: the
    pair is listed among the disagreements and left out of agreement with the judge, never decided by a
    rule that would favour one label.
    """
    if not votes:
        return None, "no label"
    if space.numeric:
        mean = sum(votes) / len(votes)
        return (int(mean) if float(mean).is_integer() else round(mean, 4)), None
    counts = Counter(votes).most_common()
    if len(counts) > 1 and counts[0][1] == counts[1][1]:
        top = [label for label, n in counts if n == counts[0][1]]
        return None, f"no majority: {', '.join(map(str, sorted(top)))} given {counts[0][1]} time(s) each"
    return counts[0][0], None


# -- import and export ----------------------------------------------------------------------------------

_ID_FIELDS = ("id", "pair_id", "index")
_PATH_FIELDS = ("instruction_path", "audio1_path", "audio2_path", "audio_path")
# Each annotator's quality rides along on exported rows (quality.py); import reads the labels and leaves these.
QUALITY_COLUMNS = (
    "annotator_gold_accuracy",
    "annotator_gold_pairs",
    "annotator_agreement",
    "annotator_position_first",
    "annotator_median_seconds",
    "annotator_played_both",
    "annotator_flagged",
)
_META = {
    *_ID_FIELDS,
    *_PATH_FIELDS,
    *QUALITY_COLUMNS,
    "annotator",
    "time",
    "order_shown",
    "skip",
    "source",
    "content_key",
    "seconds",
    "played",
}


def _rows(path: Path) -> list[dict[str, Any]]:
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() == ".csv":
        return [
            {k: v for k, v in row.items() if k and v not in (None, "")} for row in csv.DictReader(text.splitlines())
        ]
    if path.suffix.lower() == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    data = json.loads(text)
    if not isinstance(data, list) or not all(isinstance(row, dict) for row in data):
        raise LabelError(f"{path}: expected a JSON list of objects (or CSV, or JSON lines)")
    return data


def import_labels(
    bench: Benchmark, rubric: Rubric, path: str | Path, annotator: str | None = None
) -> tuple[int, list[str]]:
    """Append the labels of a CSV or JSON file to the store: rows name their pair by id or by audio paths
    (labels then in the numbering of the paths given), their annotator (or `annotator`), and a column per
    dimension (`<dimension>_reason` for reasons). Returns how many were stored and every row refused
    (nothing of a file with a refused row is written)."""
    path = Path(path)
    rows = _rows(path)
    contents = content_keys(bench)
    spaces = label_spaces(rubric)
    by_paths = {tuple(getattr(p, f) for f in _PATH_FIELDS): p.id for p in bench.pairs}
    records: list[LabelRecord] = []
    problems: list[str] = []
    store = LabelStore(bench.root)
    for n, row in enumerate(rows, 1):
        where = f"{path.name} row {n}"
        who = str(row.get("annotator") or annotator or "")
        if not who:
            problems.append(f"{where}: no annotator (a column, or --annotator NAME)")
            continue
        try:
            check_annotator(who)
            store.check_new_name(who, {r.annotator for r in records})
        except LabelError as e:
            problems.append(f"{where}: {e}")
            continue
        pid = next((str(row[f]) for f in _ID_FIELDS if row.get(f) not in (None, "")), None)
        swap = False
        if pid is None:
            given = tuple(row.get(f) for f in _PATH_FIELDS)
            pid = by_paths.get(given)
            if pid is None and given[1] and given[2]:  # the same responses, seated the other way
                pid = by_paths.get((given[0], given[2], given[1], given[3]))
                swap = pid is not None
        if pid is None or pid not in {p.id for p in bench.pairs}:
            problems.append(f"{where}: no item of the benchmark has this id or these audio paths")
            continue
        labels: dict[str, Any] = {}
        for key, space in spaces.items():
            if row.get(key) in (None, ""):
                continue
            label = space.normalise_human(row[key])
            if label is None:
                problems.append(f"{where}: {key} = {row[key]!r} is not {space.describe()}")
            else:
                labels[key] = label
        unknown = sorted(k for k in row if k not in _META and k not in spaces and not k.endswith("_reason"))
        if unknown:
            problems.append(
                f"{where}: {', '.join(unknown)}: no label of the {rubric.name} rubric ({', '.join(spaces)})"
            )
        if not labels and not row.get("skip"):
            problems.append(f"{where}: no label")
        content = contents.get(pid)
        reasons = {k[: -len("_reason")]: str(v) for k, v in row.items() if k.endswith("_reason") and v}
        order = row.get("order_shown")
        if isinstance(order, str):
            order = [o for o in re.split(r"[ ,;|]+", order.strip("[]\"' ")) if o] or None
        records.append(
            LabelRecord(
                pair_id=pid,
                content_key=content.key if content else None,
                responses=list(content.responses) if content else [],
                labels=swapped(labels) if swap else labels,
                annotator=who,
                time=str(row.get("time") or now()),
                reasons=reasons,
                order_shown=[o.strip("\"'") for o in order] if isinstance(order, list) else None,
                skip=str(row["skip"]) if row.get("skip") else None,
                rubric=rubric.name,
                source="import",
            )
        )
    if problems:
        return 0, problems
    for record in records:
        store.append(record)
    return len(records), []


EXPORT_FORMATS = ("csv", "json", "jsonl", "datasets")


def export_format(out: str | Path, given: str | None = None) -> str:
    """The format of an export: `given`, else the file's suffix (.csv, .json, .jsonl), else a `datasets` folder."""
    if given is not None:
        if given not in EXPORT_FORMATS:
            raise LabelError(f"--format {given}: expected one of {', '.join(EXPORT_FORMATS)}")
        return given
    suffix = Path(out).suffix.lower().lstrip(".")
    return suffix if suffix in EXPORT_FORMATS else "datasets"


def export_labels(
    bench: Benchmark,
    rubric: Rubric,
    out: str | Path,
    quality: dict[str, dict[str, Any]] | None = None,
    fmt: str | None = None,
) -> int:
    """Every annotator's newest label per item, in the current manifest's ids and numbering, as CSV, a JSON list,
    JSON lines or a `datasets` table saved to a folder (`fmt`, else read from `out`); `import_labels` reads the
    files back. `quality` (annotator -> the columns of QUALITY_COLUMNS) adds each annotator's quality to their
    rows. Returns the number of rows."""
    fmt = export_format(out, fmt)
    people = read_people(bench, rubric)
    spaces = label_spaces(rubric)
    times: dict[tuple[str, str], str] = {}
    store = LabelStore(bench.root)
    contents = content_keys(bench)
    by_key: dict[str, list[str]] = {}
    for pid, content in contents.items():
        by_key.setdefault(content.key, []).append(pid)
    for annotator in store.annotators():
        known = {p.id for p in bench.pairs}
        for record in store.latest(annotator).values():
            for pid, _ in place(record, contents, by_key, known):
                times[(annotator, pid)] = record.time
    rows: list[dict[str, Any]] = []
    for annotator in sorted(set(people.annotators) | set(people.skipped)):
        ids = set(people.annotators.get(annotator, {})) | set(people.skipped.get(annotator, {}))
        for pid in [p.id for p in bench.pairs if p.id in ids]:
            row: dict[str, Any] = {"id": pid, "annotator": annotator, "time": times.get((annotator, pid))}
            row.update(people.annotators.get(annotator, {}).get(pid, {}))
            for key, reason in people.reasons.get(annotator, {}).get(pid, {}).items():
                row[f"{key}_reason"] = reason
            if pid in people.skipped.get(annotator, {}):
                row["skip"] = people.skipped[annotator][pid]
            shown = people.shown.get(annotator, {}).get(pid)
            row["order_shown"] = " ".join(shown) if shown else None
            if quality is not None:
                row.update({k: (quality.get(annotator) or {}).get(k) for k in QUALITY_COLUMNS})
            rows.append(row)
    out = Path(out)
    from trace_eval.io import atomic_write_text, write_json

    columns = ["id", "annotator", "time", *spaces, *[f"{k}_reason" for k in spaces], "skip", "order_shown"]
    if quality is not None:
        columns += QUALITY_COLUMNS
    if fmt == "csv":
        import io

        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
        atomic_write_text(out, buffer.getvalue())
    elif fmt == "jsonl":
        atomic_write_text(out, "".join(json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n" for row in rows))
    elif fmt == "datasets":
        _save_table(out, [{c: row.get(c) for c in columns} for row in rows], columns)
    else:
        write_json(out, rows)
    return len(rows)


def _save_table(out: Path, rows: list[dict[str, Any]], columns: list[str]) -> None:
    """A Hugging Face `datasets` table in `out` (load_from_disk reads it), written beside and renamed into place."""
    try:
        import datasets  # type: ignore[import-untyped]
    except ImportError as e:
        raise LabelError("a datasets table needs the datasets package: pip install datasets") from e
    import shutil
    import tempfile

    table = datasets.Dataset.from_dict({c: [row[c] for row in rows] for c in columns})
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        table.save_to_disk(str(staging / "table"))
        if out.exists():
            shutil.rmtree(out)
        os.replace(staging / "table", out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


@dataclass
class Combined:
    """Manifest labels and the label store as one set of human labels."""

    labels: dict[str, dict[str, Any]]  # id -> dimension -> the majority label
    annotators: dict[str, dict[str, dict[str, Any]]]  # every voter (the manifest's labels as "manifest")
    disagreements: list[dict[str, Any]]  # {"id", "dimension", "votes": {annotator: label}, "majority", "reason"}
    problems: list[str]
    people: PeopleLabels


def combine(
    bench: Benchmark,
    rubric: Rubric,
    manifest_labels: dict[str, dict[str, Any]],
    leave_out: frozenset[str] | set[str] = frozenset(),
) -> Combined | None:
    """The store's labels beside the manifest's, one majority label per item and dimension (see `majority`);
    None when the benchmark has no label store. `leave_out`: annotators whose labels are not counted."""
    if not LabelStore(bench.root).annotators():
        if leave_out:
            raise LabelError(f"cannot leave out {', '.join(sorted(leave_out))}: {bench.root / FOLDER} has no labels")
        return None
    people = read_people(bench, rubric, leave_out=leave_out)
    voters: dict[str, dict[str, dict[str, Any]]] = {}
    if any(manifest_labels.values()):
        voters[MANIFEST_ANNOTATOR] = {i: dict(v) for i, v in manifest_labels.items() if v}
    voters.update(people.annotators)
    spaces = label_spaces(rubric)
    labels: dict[str, dict[str, Any]] = {}
    disagreements: list[dict[str, Any]] = []
    for pair in bench.pairs:
        item: dict[str, Any] = {}
        for key, space in spaces.items():
            votes = {who: got[pair.id][key] for who, got in voters.items() if key in got.get(pair.id, {})}
            if not votes:
                continue
            label, reason = majority(list(votes.values()), space)
            if label is not None:
                item[key] = label
            if len(set(map(str, votes.values()))) > 1:
                disagreements.append(
                    {"id": pair.id, "dimension": key, "votes": votes, "majority": label, "reason": reason}
                )
        labels[pair.id] = item
    problems = people.problems + [f"label store: {line}; left out" for line in people.unmatched]
    return Combined(labels, voters, disagreements, problems, people)
