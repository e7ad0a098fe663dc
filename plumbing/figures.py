"""Figure helpers: matplotlib with the Agg backend, imported lazily (headless, no display)."""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["figure_path", "pyplot", "save_figure"]


def pyplot():
    """``matplotlib.pyplot`` with the Agg backend (imported lazily: headless, no display)."""
    try:
        import matplotlib
    except ImportError as exc:  # pragma: no cover - matplotlib is a dependency
        raise ImportError("plots need matplotlib: pip install matplotlib") from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def figure_path(path: str | os.PathLike) -> Path:
    """The file a figure saved at ``path`` lands in: ``path``, or ``path.png`` when it has no suffix (matplotlib's rule).

    Example:
        >>> str(figure_path("out/fig")), str(figure_path("out/fig.pdf"))
        ('out/fig.png', 'out/fig.pdf')
    """
    path = Path(path)
    return path if path.suffix else path.with_name(path.name + ".png")


def save_figure(fig, path: str | os.PathLike, dpi: int = 110) -> Path:
    """``tight_layout``, save ``fig`` as PNG at ``path`` (folders created), close it; the path written
    (:func:`figure_path`: ``path.png`` for a ``path`` without suffix)."""
    fig.tight_layout()
    path = figure_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)
    fig.clf()
    pyplot().close(fig)
    return path
