"""Golden blueprints: what Stage 1 must give on every machine of a numeric class: every value bit for bit at stored
precision, DNSMOS's scores within 1e-4 (its NCHWc layout sums by the CPU's blocks: docs/reproducibility.md).

    python scripts/make_goldens.py               # tests/goldens/<class>/<set>.json for the class in force
    TRACE_NUMERIC_CLASS=generic python scripts/make_goldens.py   # the same for the generic class
    python scripts/make_goldens.py --check       # extract afresh and compare (what the test does)
    python scripts/make_goldens.py --audio       # synthesise the committed test clips again (espeak-ng)

Three sets of clips, each run through the blueprint pipeline (`run_blueprints`, local engine, CPU profile,
every section that runs offline):

- `example`: the 23 clips of examples/mini;
- `fallback`: clips of the project's tests that make Whisper fall back to sampled temperatures or sit near a
  rounding boundary, committed as FLAC in tests/goldens/audio/ (espeak-ng's output may change between its
  versions, so the audio is kept, not regenerated): the whispered "tick tock" on which beam search loops,
  "The thunder rolled across the distant hills" (a word probability at 0.27635), the 330 words-per-minute
  fox and the whispered fox;
- `loop-whole`: the "tick tock" clip decoded whole (`asr.vad=false`, as tests/extractors/test_asr.py does):
  beam search loops, and the sampled temperatures decide what is kept.

A golden file holds, per clip, the blueprint less what may differ between runs of the same arithmetic
(seconds spent, the engine's name, the numeric set-up's library versions and CPU): text, flags, every number
at its stored precision, null reasons and fingerprints (which hold the numeric class). Regenerate them after
any change that is meant to change blueprints (an extractor's version, settings or model, a library
upgrade), for each class: run this script once with and once without `TRACE_NUMERIC_CLASS=generic`, and
review `git diff tests/goldens` before committing.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from extractors import REGISTRY  # noqa: E402  (pins the numeric class before any library loads)
from extractors.dnsmos import SCORE_TOLERANCE  # noqa: E402
from extractors.numerics import check, numeric_class  # noqa: E402

GOLDENS = ROOT / "tests" / "goldens"
AUDIO = GOLDENS / "audio"
OFFLINE = ["asr", "dnsmos", "pitch", "loudness", "voicing", "rate", "prosody"]  # every section that needs no download


@dataclass(frozen=True)
class GoldenSet:
    name: str
    clips: tuple[str, ...]  # audio files, relative to ROOT
    only: tuple[str, ...] = tuple(OFFLINE)
    settings: dict[str, dict[str, Any]] = field(default_factory=dict)


# The clips of tests/goldens/audio: file name -> (text, espeak-ng voice), as the tests that found them make them.
TEST_CLIPS: dict[str, tuple[str, dict[str, Any]]] = {
    # tests/extractors/test_asr.py: beam search loops on it; sampled at 1.0 it gave another sentence on each CPU.
    "tick-tock-whispered.flac": (
        "tick tock tick tock tick tock tick tock tick tock",
        {"wpm": 100, "voice": "en+whisper"},
    ),
    # tests/stage1/test_ray_engine.py: a word probability at 0.27635, which flipped at the 4th decimal under load.
    "thunder-slow-low.flac": (
        "The thunder rolled across the distant hills.",
        {"wpm": 90, "pitch": 15, "voice": "en-gb"},
    ),
    # tests/stage1/test_ray_engine.py: both fall back to sampling.
    "fox-330wpm.flac": ("The quick brown fox jumps over the lazy dog.", {"wpm": 330}),
    "fox-whispered.flac": ("The quick brown fox jumps over the lazy dog.", {"wpm": 200, "voice": "en+whisper"}),
}


def golden_sets() -> list[GoldenSet]:
    example = tuple(sorted(str(p.relative_to(ROOT)) for p in (ROOT / "examples" / "mini" / "audio").glob("*.wav")))
    clips = tuple(str((AUDIO / name).relative_to(ROOT)) for name in TEST_CLIPS)
    return [
        GoldenSet("example", example),
        GoldenSet("fallback", clips),
        GoldenSet("loop-whole", (clips[0],), ("asr", "rate"), {"asr": {"vad": False}}),
    ]


def make_audio() -> None:
    """Synthesise the test clips (only to change them: the committed files are the reference)."""
    from trace_eval.synth import Voice, speak

    for name, (text, voice) in TEST_CLIPS.items():
        speak(text, AUDIO / name, Voice(**voice))
        print(f"wrote {AUDIO / name}")


# ---------------------------------------------------------------------------------------


def extract(golden: GoldenSet, workdir: Path) -> dict[str, dict]:
    """Fresh blueprints of a set's clips, by file name, as golden files hold them."""
    from trace_eval.stage1.pipeline import BlueprintOptions, run_blueprints
    from trace_eval.stage1.store import BlueprintStore

    bench = workdir / golden.name
    (bench / "audio").mkdir(parents=True)
    names = []
    for clip in golden.clips:
        shutil.copy(ROOT / clip, bench / "audio" / Path(clip).name)
        names.append(f"audio/{Path(clip).name}")
    items = [{"id": Path(n).stem, "audio_path": n, "instruction_text": "(golden clip)"} for n in names]
    (bench / "manifest.json").write_text(json.dumps(items))
    options = BlueprintOptions(
        only=list(golden.only), device="cpu", profile="cpu", progress=False, settings=golden.settings, store="bench"
    )  # store="bench": computed on this machine, never taken from a shared store
    summary = run_blueprints(bench, options)
    if not summary.ok or summary.unavailable:
        raise RuntimeError(f"set {golden.name}: {summary.failed} failed, unavailable {summary.unavailable}")
    store = BlueprintStore(bench)
    return {Path(n).name: comparable(store.get_by_path(n)) for n in names}


def comparable(blueprint: dict) -> dict:
    """The blueprint less what differs between runs of the same arithmetic."""
    for entry in blueprint["provenance"]["extractors"].values():
        for key in ("seconds", "engine", "numerics"):
            entry.pop(key, None)
    return blueprint


def golden_path(golden: GoldenSet, numerics: str) -> Path:
    return GOLDENS / numerics / f"{golden.name}.json"


def read_golden(golden: GoldenSet, numerics: str) -> dict[str, dict] | None:
    path = golden_path(golden, numerics)
    if not path.exists():
        return None
    return json.loads(path.read_text())["clips"]


def write_golden(golden: GoldenSet, numerics: str, blueprints: dict[str, dict]) -> Path:
    from trace_eval.io import write_json

    path = golden_path(golden, numerics)
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "numeric_class": numerics,
        "set": golden.name,
        "only": list(golden.only),
        "settings": golden.settings,
        "regenerate": "python scripts/make_goldens.py"
        + ("" if numerics == "avx2" else f" (TRACE_NUMERIC_CLASS={numerics})"),
        "clips": blueprints,
    }
    write_json(path, document)
    return path


# ---------------------------------------------------------------------------------------


def differences(golden: dict[str, dict], fresh: dict[str, dict]) -> list[str]:
    """Every value that differs beyond what the promise allows (DNSMOS's scores within SCORE_TOLERANCE, every other
    value exactly), as 'clip: section SECTION, field PATH: golden X, fresh Y'."""
    found = []
    for clip in sorted(golden.keys() | fresh.keys()):
        if clip not in fresh or clip not in golden:
            found.append(f"{clip}: {'missing from the fresh run' if clip not in fresh else 'not in the golden file'}")
            continue
        found += [_line(clip, *d) for d in walk(golden[clip], fresh[clip], ()) if not _tolerated(*d)]
    return found


def tolerated(golden: dict[str, dict], fresh: dict[str, dict]) -> list[str]:
    """The DNSMOS scores that differ within SCORE_TOLERANCE (its NCHWc layout sums by the CPU's blocks)."""
    return [
        _line(clip, *d)
        for clip in sorted(golden.keys() & fresh.keys())
        for d in walk(golden[clip], fresh[clip], ())
        if _tolerated(*d)
    ]


def _tolerated(path: tuple, want: Any, got: Any) -> bool:
    return (
        path[0] == "agent_audio_quality"
        and type(want) is float
        and type(got) is float
        and round(abs(want - got), 9) <= SCORE_TOLERANCE
    )


def _line(clip: str, path: tuple, want: Any, got: Any) -> str:
    return f"{clip}: section {_section_of(path)}, field {dotted(path)}: golden {want!r}, fresh {got!r}"


_MISSING = "<absent>"


def walk(want: Any, got: Any, path: tuple) -> Iterator[tuple[tuple, Any, Any]]:
    """(path, want's value, got's value) for each leaf where two JSON values differ, depth first (lists of other
    lengths as a whole; a key one lacks as `<absent>`)."""
    if isinstance(want, dict) and isinstance(got, dict):
        for key in list(want) + [k for k in got if k not in want]:
            yield from walk(want.get(key, _MISSING), got.get(key, _MISSING), (*path, key))
    elif isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        for i, (a, b) in enumerate(zip(want, got)):
            yield from walk(a, b, (*path, i))
    elif type(want) is not type(got) or want != got:  # 1 and 1.0, or True and 1, differ in a stored file
        yield path, want, got


def dotted(path: tuple) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else str(p)) for i, p in enumerate(path))


def _section_of(path: tuple) -> str:
    """The extractor whose output holds this field (provenance entries name theirs)."""
    if len(path) >= 3 and path[:2] == ("provenance", "extractors"):
        return str(path[2])
    joined = ".".join(str(p) for p in path)
    for name, cls in REGISTRY.items():
        for key in cls.outputs:  # the field is an output, inside one, or holds one
            if joined == key or joined.startswith((key + ".", key + "[")) or key.startswith(joined + "."):
                return name
    return "(blueprint)"


# ---------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="compare a fresh extraction with the golden files")
    parser.add_argument("--sets", help="comma-separated set names (default: all)")
    parser.add_argument("--audio", action="store_true", help="synthesise tests/goldens/audio again, then stop")
    parser.add_argument(
        "--against",
        choices=("avx2", "generic"),
        help="with --check: the class whose files to compare with "
        "(default: the class in force; another one shows how far an arithmetic is from a class)",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME.FIELD=VALUE",
        help="an extractor setting that must not change values (e.g. asr.num_threads=4, dnsmos.num_threads=1)",
    )
    args = parser.parse_args(argv)
    if args.audio:
        make_audio()
        return 0
    numerics = args.against if args.check and args.against else numeric_class()
    if numerics == "unpinned":
        parser.error(
            "this process runs no numeric class (extractors/numerics.py), and golden files hold pinned ones: "
            + "; ".join(check().reasons)
        )
    extra: dict[str, dict[str, Any]] = {}
    for item in args.set:
        key, _, value = item.partition("=")
        name, _, fld = key.partition(".")
        extra.setdefault(name, {})[fld] = json.loads(value)
    sets = [
        GoldenSet(
            s.name, s.clips, s.only, {n: {**s.settings.get(n, {}), **extra.get(n, {})} for n in s.settings | extra}
        )
        for s in golden_sets()
    ]
    if args.sets:
        wanted = {s.strip() for s in args.sets.split(",")}
        sets = [s for s in sets if s.name in wanted]
    failed = 0
    with tempfile.TemporaryDirectory(prefix="goldens_") as tmp:
        for golden in sets:
            fresh = extract(golden, Path(tmp))
            if not args.check:
                print(f"wrote {write_golden(golden, numerics, fresh).relative_to(ROOT)} ({len(fresh)} clips)")
                continue
            stored = read_golden(golden, numerics)
            if stored is None:
                print(f"{golden.name}: no golden file for class {numerics} at {golden_path(golden, numerics)}")
                failed += 1
                continue
            found, near = differences(stored, fresh), tolerated(stored, fresh)
            failed += bool(found)
            verdict = f"{len(found)} differences" if found else "identical"
            if near:
                verdict += f"{', and' if found else ' but for'} {len(near)} DNSMOS score(s) within {SCORE_TOLERANCE:g}"
            print(f"{golden.name} ({numerics}): {verdict}")
            for line in found + near:
                print(f"  {line}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
