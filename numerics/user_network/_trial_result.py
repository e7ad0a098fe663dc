"""``TrialResult``: the answer of :func:`depthcert.trial_insertion` (a table one row per arm, JSON)."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

__all__ = ["NO_CHANGE", "TABLE_COLUMNS", "TrialResult"]

NO_CHANGE = "no change"
#: the columns of :meth:`TrialResult.table`.
TABLE_COLUMNS = ("arm", "kind", "site", "steps_trained", "n_params", "eliminated_at", "select_gain", "scan_predicted_gain",
                 "chosen")


@dataclasses.dataclass(frozen=True)
class TrialResult:
    """The answer of :func:`depthcert.trial_insertion`.

    Attributes
    ----------
    chosen : str
        The chosen arm: ``"block@<site>"``, ``"tune@<site>"`` or ``"no change"``.
    chosen_kind : str
        ``"block"``, ``"tune"`` or ``"none"``.
    site : str or None
        Where (the chosen arm's site; None for no change).
    gain : float
        The chosen arm's held-out gain (mean per-sample loss drop against the model; 0 for no change).
    gain_lo : float
        The lower end of its two-sided level-``(1 - level)`` Student-t interval (0 for no change).
    gain_hi : float
        The upper end of that interval (0 for no change).
    block_worth_it : bool
        A new block is worth it: the chosen arm is a block and its held-out interval lies above 0.
    answer : str
        The answer to "where" and "is a new block worth it at all", in words.
    best_block : dict or None
        When the chosen arm is not a block: the best block arm (by the select sample) and its own
        held-out gain and interval.
    arms : list of dict
        One record per arm (``table()``): its cost ``steps_trained``, parameters, the select gain at
        each rung it reached, the rung it was eliminated at.
    rungs : list of int
        The cumulative training steps of each rung.
    total_steps : int
        The training steps of all arms together.
    cost_ratio : float
        ``total_steps / steps``: the cost in units of one block trained to the same horizon.
    level : float
        The intervals' level.
    roles : dict
        Which sample fixed what, with its size.
    scan_best_site : str
        The site the scan on the fit sample ranks first (by ``ranked_by``).
    notes : list of str
        Choices and caveats.
    model : torch.nn.Module or None
        The chosen arm's trained network (None for no change).

    Examples
    --------
        >>> import depthcert as dc
        >>> r = dc.TrialResult(chosen="no change", chosen_kind="none", site=None, gain=0.0, gain_lo=0.0, gain_hi=0.0,
        ...                    block_worth_it=False, answer="no", best_block=None, arms=[], rungs=[10], total_steps=0,
        ...                    cost_ratio=0.0, level=0.05, roles={}, scan_best_site="1", notes=[])
        >>> r.chosen, list(r.table().columns)[:3]
        ('no change', ['arm', 'kind', 'site'])
    """

    chosen: str
    chosen_kind: str
    site: Any
    gain: float
    gain_lo: float
    gain_hi: float
    block_worth_it: bool
    answer: str
    best_block: Any
    arms: list
    rungs: list
    total_steps: int
    cost_ratio: float
    level: float
    roles: dict
    scan_best_site: Any
    notes: list
    model: Any = dataclasses.field(default=None, repr=False, compare=False)

    def table(self):
        """``pandas.DataFrame``, one row per arm (``TABLE_COLUMNS``; ``select_gain``: at the last rung it reached)."""
        import pandas as pd

        rows = [{**{c: a.get(c) for c in TABLE_COLUMNS}, "select_gain": (a["select_gains"][-1] if a.get("select_gains") else 0.0),
                 "chosen": a["arm"] == self.chosen} for a in self.arms]
        return pd.DataFrame(rows, columns=list(TABLE_COLUMNS))

    def to_dict(self) -> dict:
        """JSON-ready: every field but the model (non-finite floats as strings)."""
        from numerics.user_network._report import _json_safe

        return _json_safe({f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "model"})

    def to_json(self, path) -> Path:
        """Write :meth:`to_dict` to ``path`` (atomically) and return it."""
        from plumbing.io import atomic_write_text

        return atomic_write_text(Path(path), json.dumps(self.to_dict(), indent=1, default=str))

    def __str__(self) -> str:
        return self.answer
