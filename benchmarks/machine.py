"""Machine facts for the report header: CPU, Python, NumPy and its BLAS, torch, git."""

from __future__ import annotations

import os
import platform
import subprocess
import time
from importlib import metadata
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def numpy_blas() -> dict[str, Any]:
    """What threadpoolctl reports for the BLAS NumPy links to: library, version, the
    kernel it picked (``architecture``) and its thread count."""
    import numpy  # noqa: F401  (loads the BLAS so threadpoolctl can see it)
    from threadpoolctl import threadpool_info

    blas = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    mine = [i for i in blas if "numpy" in i.get("filepath", "")] or blas
    if not mine:
        return {"library": "unknown"}
    info = mine[0]
    return {
        "library": info.get("internal_api"),
        "version": info.get("version"),
        "kernel": info.get("architecture"),
        "threads": info.get("num_threads"),
        "threading_layer": info.get("threading_layer"),
        "file": os.path.basename(info.get("filepath", "")),
    }


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", *args], cwd=REPO, capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


def load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages: other work on the machine skews timings (on
    2 cores, torch's OpenMP threads suffer most), so the report shows them."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def machine_facts() -> dict[str, Any]:
    """Everything needed to read the numbers later. torch is not imported here: its objects
    would add to the cyclic GC's work in the scalar sections (section 3 adds its threads)."""
    import numpy

    dirty = _git("status", "--porcelain", "--", "src")
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "cores_usable": affinity,
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": platform.platform(),
        "numpy": numpy.__version__,
        "blas": numpy_blas(),
        "env": {k: os.environ.get(k) for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")},
        "torch": _version("torch"),
        "micrograd": _version("micrograd"),
        "modelwright_autograd": _version("modelwright-autograd"),
        "git_commit": _git("rev-parse", "--short", "HEAD"),
        "src_uncommitted_changes": bool(dirty),
        "load_average_start": load_average(),
    }
