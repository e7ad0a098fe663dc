"""Figure helpers: matplotlib with the Agg backend, imported lazily (headless, no display)."""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["check_figure_format", "figure_formats", "figure_path", "pyplot", "save_figure"]


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


def figure_formats() -> list[str]:
    """The file suffixes matplotlib can save a figure as (``png``, ``pdf``, ``svg``, ...), sorted."""
    try:
        from matplotlib.backend_bases import FigureCanvasBase
    except ImportError:  # pragma: no cover - matplotlib is a dependency
        return ["png"]
    return sorted(FigureCanvasBase.get_supported_filetypes())


def check_figure_format(path: str | os.PathLike, key: str) -> Path:
    """:func:`figure_path` of ``path`` if matplotlib can write its suffix.

    Raises:
        InputError: naming ``key``, the formats allowed and the path (e.g. ``x.toml``), before any work.
    """
    from plumbing.validation import InputError

    target = figure_path(path)
    suffix = target.suffix.lstrip(".").lower()
    formats = figure_formats()
    if suffix not in formats:
        raise InputError(key, f"a figure path ending in one of {', '.join('.' + f for f in formats)} (none: .png)", str(path))
    return target


def save_figure(fig, path: str | os.PathLike, dpi: int = 110) -> Path:
    """``tight_layout``, save ``fig`` (atomically) as PNG at ``path`` (folders created), close it; the path written
    (:func:`figure_path`: ``path.png`` for a ``path`` without suffix)."""
    fig.tight_layout()
    from plumbing.io import atomic_write

    path = figure_path(path)
    try:     # atomically: a full disk leaves the previous figure (plumbing.io.WriteFailed)
        atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=dpi, format=path.suffix.lstrip(".").lower() or "png"))
    finally:
        fig.clf()
        pyplot().close(fig)
    return path
