"""Figures over stored results (``depthcert plot --kind ...``): every kind draws from a folder of
stored run records only (a sweep's ``cells/``), never from a live computation.

* :func:`plot_kind` -- the dispatcher the CLI and the sweeps call.
* :mod:`numerics.studies.figures._scaling` -- the kinds (bound-vs-M, region, appendix-m, dstar,
  rebound, data, covariance), fitted with :mod:`numerics.studies.scaling`.
"""
from __future__ import annotations

from pathlib import Path

from plumbing.io import check_writable_dir
from plumbing.validation import InputError
from numerics.studies.figures import _scaling as plots
from numerics.studies import scaling

__all__ = ["KINDS", "plot_kind"]

KINDS = plots.KINDS


def plot_kind(folder: str | Path, kind: str, *, out: str | Path | None = None, **options) -> list[Path]:
    """Draw ``kind`` from the stored results in ``folder``; PNG and PDF (and a JSON of the fits).

    Kinds: ``bound-vs-M``, ``region``, ``appendix-m``, ``dstar``, ``rebound``, ``data``,
    ``covariance`` (see ``depthcert plot --help``). Files go to ``out`` (default
    ``folder/plots``) as ``<kind>.png`` / ``<kind>.pdf``.

    Raises:
        InputError: an unknown kind, or results that cannot support it (names what is missing).
    """
    if kind not in plots.KINDS:
        raise InputError("--kind", f"one of {sorted(plots.KINDS)}", kind)
    records = scaling.load_records(folder)
    n_boot, cell = options.get("n_boot", 1000), options.get("cell", 0)
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or n_boot < 20:
        raise InputError("--n-boot", "an integer >= 20", n_boot)
    from plumbing.machine import check_fits
    from plumbing.sizes import bootstrap_memory

    check_fits(bootstrap_memory(n_boot, len(records)))   # refused before any resample
    if isinstance(cell, bool) or not isinstance(cell, int) or not 0 <= cell < len(records):
        raise InputError("--cell", f"an integer in [0, {len(records) - 1}]", cell)
    target = check_writable_dir(Path(out) if out is not None else Path(folder) / "plots")
    try:
        return plots.KINDS[kind](records, target / kind, **options)
    except InputError:
        raise
    except ValueError as exc:
        raise InputError(f"--kind {kind}", "stored results it can fit", str(exc)) from None
    except (KeyError, TypeError, IndexError) as exc:   # stored results without what this kind draws
        raise InputError(f"--kind {kind}", "stored run results holding the quantities it draws",
                         f"{type(exc).__name__}: {exc}") from None
