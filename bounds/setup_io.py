"""A :class:`~bounds.routes.Setup` as the ``depthcert bounds`` config dict (THEORY §5-§6).

:func:`setup_to_dict` is the inverse of :func:`depthcert.config.setup_from_dict` for setups whose
loss constants are given directly (``[loss] B, L_loss``): reading back what it writes gives the
same setup (``tests/bounds/test_setup_io.py``).
"""
from __future__ import annotations

from typing import Any

from bounds.parameters import BLOCK_PARAMETERS, OPTIONAL, PARAMETERS
from bounds.routes import Setup

__all__ = ["setup_to_dict"]


def _plain(v):
    """A numpy scalar as a Python number (TOML writes numbers, not arrays)."""
    return v.item() if hasattr(v, "item") else v


def setup_to_dict(setup: Setup, level: float | None = None) -> dict[str, Any]:
    """The config dict of ``setup`` (top-level keys, ``[loss] B, L_loss``, ``[block]``).

    Optional keys are written when set (``n_grid`` when above 1); ``level`` when given.

    Raises:
        ValueError: a batched setup (arrays): one file holds one setup.
    """
    values = {k: getattr(setup, k) for k in PARAMETERS}
    if any(getattr(v, "ndim", 0) for v in values.values()):
        raise ValueError("setup_to_dict takes one setup, not a batch of arrays.")
    out = {k: _plain(v) for k, v in values.items() if k not in ("B", "L_loss")}
    for key in OPTIONAL:
        value = getattr(setup, key)
        if value is not None and not (key == "n_grid" and value == 1):
            out[key] = _plain(value)
    if level is not None:
        out["level"] = level
    out["loss"] = {"B": _plain(setup.B), "L_loss": _plain(setup.L_loss)}
    out["block"] = {"family": setup.family, **{k: _plain(setup.block[k]) for k in BLOCK_PARAMETERS[setup.family]}}
    return out
