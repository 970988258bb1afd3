"""The audit page: every item of judge runs with its audio, cues, verdicts, reasons and human labels.

`write_view` writes a folder that opens from disk (DIR/index.html, no server) and loads nothing from
the network:

    index.html, view.css, view.js   the page, copied from this package
    data.js                         what it shows (trace_eval.view.data), read as a script
    audio/                          with copy_audio: the audio files, so the folder can be sent as it is;
                                    otherwise the page points at the benchmark's files by relative paths
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from trace_eval.io import atomic_write_text

__all__ = ["PAGE_FILES", "ViewError", "ViewFiles", "write_view"]

PAGE_DIR = Path(__file__).resolve().parent
PAGE_FILES = ("index.html", "view.css", "view.js")
DATA_FILE = "data.js"


class ViewError(ValueError):
    """The runs cannot be shown together (say what to pass instead)."""


@dataclass(frozen=True)
class ViewFiles:
    """What `write_view` wrote."""

    index: Path
    data: Path
    items: int
    page_bytes: int  # the page and its data, without the audio
    audio_copied: int


def write_view(
    run_dirs: list[str | Path],
    out: str | Path,
    bench: str | Path | None = None,
    copy_audio: bool = False,
    trusted_only: bool = False,
    calibration: str | Path | None = None,
) -> ViewFiles:
    """Write the page of `run_dirs` (runs of one rubric, on one benchmark) into `out`.

    `bench` is the benchmark folder with the audio, blueprints and human labels (default: the one the
    runs name). Raises ViewError, RunFolderError, ManifestError or FileNotFoundError with what to do.
    """
    from trace_eval.bench import load_benchmark
    from trace_eval.evaluation.records import EvaluationError, bench_of, load_human_labels, load_runs
    from trace_eval.rubrics import rubric_of_run
    from trace_eval.view.data import AudioLinks, page_data

    runs = load_runs(list(run_dirs))
    if trusted_only:  # verdicts not trusted shown undetermined, with why
        from trace_eval.evaluation.trust import keep_trusted

        try:
            runs = keep_trusted(runs, Path(calibration) if calibration else None)
        except EvaluationError as e:
            raise ViewError(str(e)) from None
    rubrics = {run.name: rubric_of_run(run.config) for run in runs}
    if len({rubric.name for rubric in rubrics.values()}) > 1:
        judged = ", ".join(f"{name} ({rubric.name})" for name, rubric in rubrics.items())
        raise ViewError(f"the runs were judged with different rubrics: {judged}; view runs of one rubric together")
    rubric = rubrics[runs[0].name]
    try:
        bench_path = bench_of(runs, bench)
    except EvaluationError as e:
        raise ViewError(str(e).replace("--labels", "--bench")) from None
    benchmark = load_benchmark(bench_path, check_audio=False)
    human = load_human_labels(bench_path, rubric)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    links = AudioLinks(benchmark.root, out, copy_audio)
    data = page_data(runs, benchmark, rubric, human, links, out)
    text = "window.TRACE_VIEW = " + json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":")) + ";\n"
    atomic_write_text(out / DATA_FILE, text)
    size = len(text.encode("utf-8"))
    for name in PAGE_FILES:
        page = (PAGE_DIR / name).read_text(encoding="utf-8")
        atomic_write_text(out / name, page)
        size += len(page.encode("utf-8"))
    return ViewFiles(out / "index.html", out / DATA_FILE, len(data["pairs"]), size, len(links.copied))
