"""Which llama.cpp build the model process runs: chosen at run time, proven before use.

``make`` installs two builds of the same llama-cpp-python version, neither tuned to the
machine that compiled it (scripts/install-llama-cpp.sh):

* ``portable``: the installed ``llama_cpp`` package, for any x86-64 CPU with AVX2/FMA/F16C;
* ``avx512``: the same package built with AVX-512 (F, CD, VL, DQ, BW, VBMI, VNNI) and no
  AMX, installed beside the venv's packages. On a 2-core Xeon it read prompts 1.44x faster
  (104 against 72 tokens/s; writing the same), and time to first token is mostly reading.

The model process starts on the fastest build this CPU's flags allow; the supervisor only
uses it once it has generated a token (:mod:`agent.model_server.supervisor`). A build that
fails there, or crashes later, is recorded in ``<data folder>/model-kernels.json`` and
skipped from then on, so a CPU whose AVX-512 path crashes (as native AMX builds did) runs the
portable build. AMX kernels are never built: a native AMX build crashed in ``decode``.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

KERNELS_FILE = "model-kernels.json"


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> set[str]:
    """This CPU's feature flags (empty where ``/proc/cpuinfo`` is not readable)."""
    try:
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("flags"):
                return set(line.partition(":")[2].split())
    except OSError:
        pass
    return set()


@dataclass(frozen=True)
class KernelBuild:
    """One llama.cpp build: where its ``llama_cpp`` package lives and what it needs."""

    name: str
    path: Path | None
    """Folder holding its ``llama_cpp`` package (``None``: the one installed in the venv)."""
    cpu_flags: frozenset[str]
    """``/proc/cpuinfo`` flags the build's kernels use."""

    def installed(self) -> bool:
        """Whether this build is present in the environment."""
        return self.path is None or (self.path / "llama_cpp" / "__init__.py").is_file()

    def environment(self) -> dict[str, str]:
        """Environment additions that make a child process import this build."""
        if self.path is None:
            return {}
        return {
            "PYTHONPATH": os.pathsep.join(
                filter(None, [str(self.path), os.environ.get("PYTHONPATH")])
            )
        }


AVX512_DIR = Path(sys.prefix) / "share" / "quire" / "llama-cpp-avx512"

AVX512 = KernelBuild(
    "avx512",
    AVX512_DIR,
    frozenset(
        {"avx2", "fma", "f16c", "avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw"}
        | {"avx512vbmi", "avx512_vnni"}
    ),
)
PORTABLE = KernelBuild("portable", None, frozenset({"avx2", "fma", "f16c"}))
BUILDS = (AVX512, PORTABLE)
"""Fastest first."""


def _record_path(data_dir: Path) -> Path:
    return data_dir / KERNELS_FILE


def failed_builds(data_dir: Path) -> dict[str, str]:
    """Builds that failed on this machine: name -> what happened."""
    try:
        return dict(json.loads(_record_path(data_dir).read_text()))
    except (OSError, ValueError, TypeError):
        return {}


def mark_failed(data_dir: Path, build: KernelBuild, failure: str) -> None:
    """Remember that ``build`` failed here, so it is not tried again."""
    record = failed_builds(data_dir)
    record[build.name] = failure.splitlines()[0] if failure else "failed"
    data_dir.mkdir(parents=True, exist_ok=True)
    tmp = _record_path(data_dir).with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=2))
    os.replace(tmp, _record_path(data_dir))


def candidates(
    choice: str, flags: set[str], failed: dict[str, str], builds: tuple[KernelBuild, ...] = BUILDS
) -> list[KernelBuild]:
    """The builds to try, fastest first: installed, allowed by ``choice`` (``auto`` or a
    build's name) and by this CPU's ``flags`` (empty: unknown, portable only), and not
    failed here before. The portable build always ends the list."""
    usable = [
        b
        for b in builds
        if b is not PORTABLE
        and (choice in ("auto", b.name))
        and b.name not in failed
        and b.installed()
        and b.cpu_flags <= flags
    ]
    return [*usable, PORTABLE]
