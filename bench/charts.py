"""The evaluations' PNG charts: a figure on matplotlib's file-only backend, written and
closed, and stored beside the evaluation's JSON figures."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any


def new_chart(size: tuple[float, float]) -> tuple[Any, Any]:
    """A figure and its axes, ``size`` inches, drawn without a display (``Agg``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=size)


def save_chart(fig: Any, path: Path) -> Path:
    """Lay ``fig`` out, write it to ``path`` as a 120 dpi PNG and close it."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def write_figures_and_chart(
    name: str, payload: dict, folder: Path, draw: Callable[[Path], Path]
) -> tuple[Path, Path]:
    """``<folder>/<name>.json`` (via :func:`bench.common.write_results`) and the chart
    ``draw`` writes to ``<folder>/<name>.png``."""
    from bench.common import write_results

    json_path = write_results(name, payload, folder)
    png_path = draw(folder / f"{name}.png")
    return json_path, png_path
