"""Figure helpers: matplotlib with the Agg backend, imported lazily (headless, no display)."""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["pyplot", "save_figure"]


def pyplot():
    """``matplotlib.pyplot`` with the Agg backend (imported lazily: headless, no display)."""
    try:
        import matplotlib
    except ImportError as exc:  # pragma: no cover - matplotlib is a dependency
        raise ImportError("plots need matplotlib: pip install matplotlib") from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, path: str | os.PathLike, dpi: int = 110) -> Path:
    """``tight_layout``, save ``fig`` as PNG at ``path`` (folders created), close it."""
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)
    fig.clf()
    pyplot().close(fig)
    return path
