"""``SaturationReport``: one scan, one report (a table one row per site, JSON, a figure)."""
from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

from numerics.user_network._verdict import t_interval

__all__ = ["SaturationReport", "TABLE_COLUMNS"]

#: the columns of :meth:`SaturationReport.table`, in order.
TABLE_COLUMNS = ("site", "layout", "d", "P", "r", "n", "P_all", "G_sq", "AG_max", "beta", "predicted_gain",
                 "certified_gain", "gain_ucb", "realised_gain", "log_wealth", "threshold", "reject",
                 "n_to_reject", "n_to_saturate")


def _json_safe(v):
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    if isinstance(v, dict):
        return {k: _json_safe(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_json_safe(x) for x in v]
    return v


@dataclasses.dataclass(frozen=True)
class SaturationReport:
    """The verdict of :func:`depthcert.saturation` and every site's scores.

    Attributes
    ----------
    verdict : str
        ``"improvable"`` (a site's test rejects ``G = 0``: ``certified_gain > 0``), ``"saturated"``
        (every site's ``gain_ucb < eps``) or ``"undetermined"`` (``n_needed``: the probe size that
        would decide at the measured effect).
    saturated : bool
        ``verdict == "saturated"``.
    best_site : str
        The suggested insertion site.
    predicted_gain : float
        Its plug-in Theorem 1 gain.
    certified_gain : float
        The largest level-``(1 - level/K)`` lower bound on a rejecting site's gain (0 if none).
    gain_ucb : float
        The largest upper confidence bound on a site's first-order gain.
    n_needed : int or None
        When undetermined: the probe size that would decide at the measured effect (else None).
    n_needed_improvable : int or None
        The probe size that would reject ``G = 0`` at the measured effect.
    n_needed_saturated : int or None
        The probe size that would show the gain below ``eps``.
    level : float
        The verdict's family-wise level.
    eps : float
        The tolerance of "saturated within eps".
    n : int
        The probe size.
    n_curvature : int
        The size of the step sample (the curvature sample's first half) that gave ``beta``.
    curvature_source : str
        Which sample gave ``beta`` (by default a disjoint part of ``data``).
    loss : str
        The loss's name (``"callable"`` for a function).
    seed : int
        The seed of the blocks' features.
    sites : list of dict
        One record per site (layout, ``d``, ``P`` positions, scores, tests).
    notes : list of str
        Which sample fixed what.
    insertion : dict or None
        The suggested insertion (``best_site``, ``init="jumpboard"``): ``n_gain``, ``level``,
        ``source`` and per family ``gain`` (mean per-sample loss drop on the gain sample), ``sd``,
        ``lo``/``hi`` (the level-``(1 - level)`` interval of the population gain), ``beta``,
        ``gain_step`` (the mean drop on the step sample, which chooses the suggestion); None
        without a gain sample.
    suggestion : Suggestion or None
        What the scan recommends, checked on the gain sample before it is recommended
        (:class:`depthcert.Suggestion`: ``site``, ``family``, ``init``, its gain interval with
        ``lo > 0``, ...), or None when no candidate's interval lies above zero.
    suggestion_reason : str
        Why (the candidate's interval, or why there is none); the reason
        :func:`depthcert.insert_block` gives when it refuses the jumpboard.
    ranked_by : str
        The score ``best_site`` is ranked by, among the sites whose test rejects ``G = 0``, else among
        all: ``saturation(rank_by=...)``, by default ``"predicted_gain"`` (``"G_sq"`` with
        ``curvature="none"``; the default is a **Choice** stated in ``saturation``'s ``rank_by``).
        Whether that score predicts the gains realised on the user's own network:
        :func:`depthcert.calibration`, then :meth:`with_calibration`; a measured answer:
        :func:`depthcert.trial_insertion`.
    curvature : str
        Where ``beta`` was asked for (``saturation(curvature=...)``: ``"all"``, ``"auto"``, ``"none"``).
    curvature_sites : list of str
        The sites whose ``beta`` was measured (every site with ``curvature="all"``).
    costs : dict
        Seconds of each part of the call: ``scan_s`` (the probe's forwards and backwards, the
        streamed statistics, each site's projection scores and test), ``curvature_s`` (the step sample's backward, ``beta`` at
        ``curvature_sites``, the verdict), ``suggestion_s`` (the insertion check), ``other_s``
        (sites, blocks, data) and ``total_s``; not compared by ``==`` (timings differ run to run).
    predictive : bool or None
        None until :meth:`with_calibration` reads a calibration of the user's network; then whether
        ``ranked_by`` predicts the trained gains there (one-sided permutation p at most the level).
    calibration_note : str
        The one line :meth:`with_calibration` adds to ``str(report)`` (empty before): ``ranked_by``'s
        rho and p at the horizon read, and, when it does not predict, the pointer to
        :func:`depthcert.trial_insertion`.
    calibration : dict or None
        The calibration row that line is read from (``score``, ``horizon``, ``rho``, ``p_one_sided``,
        ``level``, ``n_units``, ``predictive``, ``note``).

    Examples
    --------
        >>> import torch
        >>> from torch import nn
        >>> import depthcert as dc
        >>> _ = torch.manual_seed(0)
        >>> net = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2)).double()
        >>> x = torch.randn(256, 3, dtype=torch.float64)
        >>> rep = dc.saturation(net, (x, (x[:, 0] > 0).long()), sites=["1"], curvature_n=32)
        >>> rep.verdict in ("improvable", "saturated", "undetermined"), rep.saturated == (rep.verdict == "saturated")
        (True, True)
        >>> rep.best_site, [s["site"] for s in rep.sites], rep.n + rep.n_curvature <= 256
        ('1', ['1'], True)
        >>> rep.ranked_by
        'predicted_gain'
    """

    verdict: str
    saturated: bool
    best_site: str
    predicted_gain: float
    certified_gain: float
    gain_ucb: float
    n_needed: int | None
    n_needed_improvable: int | None
    n_needed_saturated: int | None
    level: float
    eps: float
    n: int
    n_curvature: int
    curvature_source: str
    loss: str
    seed: int
    sites: list
    notes: list
    insertion: dict | None = None
    suggestion: Any = None
    suggestion_reason: str = ""
    #: the score best_site is ranked by (extend-only: the default ranking is unchanged)
    ranked_by: str = "predicted_gain"
    curvature: str = "all"
    curvature_sites: list | None = None
    costs: dict = dataclasses.field(default_factory=dict, compare=False)
    predictive: bool | None = None
    calibration_note: str = ""
    calibration: dict | None = None
    _blocks: Any = dataclasses.field(default=None, repr=False, compare=False)
    _stats: Any = dataclasses.field(default=None, repr=False, compare=False)
    _curvature: Any = dataclasses.field(default=None, repr=False, compare=False)
    _loss: Any = dataclasses.field(default=None, repr=False, compare=False)
    #: ``{(site, family): (V, beta_f)}``: the jumpboard blocks the gain sample checked (insert_block reuses them)
    _checked: Any = dataclasses.field(default=None, repr=False, compare=False)
    #: ``(probe stream, (x, y) curvature sample)`` the scan read, and its model's parameter checksum
    #: (``dc.certify_insertion(scan=...)`` checks both)
    _data: Any = dataclasses.field(default=None, repr=False, compare=False)
    _model_sum: Any = dataclasses.field(default=None, repr=False, compare=False)

    def site(self, name: str) -> dict:
        """The record of one site.

        Raises:
            ValueError: ``name`` is not a scanned site (lists them).
        """
        for rec in self.sites:
            if rec["site"] == name:
                return rec
        raise ValueError(f"site == {name!r}, must be one of the scanned sites {[r['site'] for r in self.sites]}.")

    def gain_interval(self, family: str = "readout", n_eval: int | None = None) -> tuple[float, float]:
        """Level-``(1 - level)`` interval of the immediate gain of
        ``dc.insert_block(model, best_site, family, init="jumpboard", scan=self)``.

        Args:
            family: a scanned family (``insertion["families"]``).
            n_eval: None: the population gain (mean loss drop on the data's distribution); an
                int: the mean loss drop on ``n_eval`` fresh independent samples (wider).

        Raises:
            ValueError: no gain sample, an unscanned family or a bad ``n_eval`` (named).
        """
        if self.insertion is None and self.suggestion_reason.startswith("not asked"):
            raise ValueError("insertion is None: saturation(suggest=False) checked no insertion; call it with suggest=True.")
        if self.insertion is None:
            raise ValueError("insertion is None: the curvature sample had < 4 samples, so no gain sample was kept.")
        fams = self.insertion["families"]
        if family not in fams:
            raise ValueError(f"family == {family!r}, must be one of the families with a gain interval {list(fams)} "
                             "(those of saturation(families=...)).")
        rec = fams[family]
        return t_interval(rec["gain"], rec["sd"], self.insertion["n_gain"], self.level, n_eval)

    def with_calibration(self, calib, horizon=None, level: float | None = None) -> SaturationReport:
        """This report with what a calibration of the user's network says about ``ranked_by``.

        Args:
            calib: :func:`depthcert.calibration`'s table (a DataFrame, or its rows), on the user's network.
            horizon: the training steps read (None: the table's largest horizon, the one users act on).
            level: the one-sided level (None: the table's ``level``).

        Returns:
            A copy with ``predictive``, ``calibration_note`` (one line in ``str(report)``; when ``ranked_by``
            shows no predictive power it points to :func:`depthcert.trial_insertion`) and ``calibration``.

        Raises:
            ValueError: the table has no row of ``ranked_by`` at that horizon, or a bad ``level`` (named).

        Example:
            >>> import pandas as pd
            >>> rows = [{"horizon": 10, "score": "predicted_gain", "rho": 0.2, "p_one_sided": 0.4, "level": 0.05}]
            >>> rep = SaturationReport("undetermined", False, "a", 0.0, 0.0, 1.0, None, None, None, 0.05, 1e-3, 8, 4,
            ...                        "", "squared", 0, [], [])
            >>> rep.with_calibration(pd.DataFrame(rows)).predictive
            False
        """
        from numerics.user_network._ranking import calibration_judgement

        judged = calibration_judgement(calib, self.ranked_by, horizon, level)
        return dataclasses.replace(self, predictive=judged["predictive"], calibration_note=judged["note"],
                                   calibration=judged)

    def to_dict(self) -> dict:
        """JSON-ready: every public field (non-finite floats as strings)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if not f.name.startswith("_")}
        if self.suggestion is not None:
            out["suggestion"] = dataclasses.asdict(self.suggestion)
        return _json_safe(out)

    def table(self):
        """``pandas.DataFrame``, one row per site (``TABLE_COLUMNS``)."""
        import pandas as pd

        return pd.DataFrame([{c: rec.get(c) for c in TABLE_COLUMNS} for rec in self.sites], columns=TABLE_COLUMNS)

    def to_json(self, path) -> Path:
        """Write :meth:`to_dict` to ``path`` (atomically) and return it."""
        from plumbing.io import atomic_write_text

        return atomic_write_text(Path(path), json.dumps(self.to_dict(), indent=1, default=str))

    def cost_text(self) -> str:
        """One line: the seconds of each part of the call (``costs``), e.g. ``cost: scan 1.2 s, ...``."""
        c = self.costs or {}
        if not c:
            return "cost: not measured"
        k = len(self.curvature_sites or [])
        return (f"cost: scan {c['scan_s']:.3g} s, curvature {c['curvature_s']:.3g} s ({self.curvature!r}: beta at {k} of "
                f"{len(self.sites)} sites), suggestion {c['suggestion_s']:.3g} s, other {c['other_s']:.3g} s "
                f"(total {c['total_s']:.3g} s)")

    def plot(self, path) -> Path:
        """Per site: predicted, certified and upper-bound gains (log scale) against ``eps``."""
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt

        names = [r["site"] for r in self.sites]
        fig, ax = plt.subplots(figsize=(max(4.0, 0.8 * len(names) + 2), 3.2))
        for k, (key, mark) in enumerate((("predicted_gain", "o"), ("certified_gain", "^"), ("gain_ucb", "v"))):
            vals = [r[key] if r[key] and math.isfinite(r[key]) and r[key] > 0 else float("nan") for r in self.sites]
            ax.plot(range(len(names)), vals, mark, label=key)
        ax.axhline(self.eps, color="grey", ls="--", label=f"eps = {self.eps:g}")
        ax.set_xticks(range(len(names)), names, rotation=30, ha="right")
        ax.set_yscale("log")
        ax.set_title(f"{self.verdict} (level {self.level:g}, n = {self.n})")
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = Path(path)
        fig.savefig(path, dpi=100)
        plt.close(fig)
        return path

    def __str__(self) -> str:
        line = {"improvable": f"improvable: best site {self.best_site} (ranked by {self.ranked_by}), certified gain >= "
                              f"{self.certified_gain:.3g}",
                "saturated": f"saturated within eps = {self.eps:g} (gain <= {self.gain_ucb:.3g})",
                "undetermined": f"undetermined at n = {self.n}; " + (
                    f"n_needed = {self.n_needed}" if self.n_needed else
                    "no probe size decides at the measured effect (the bets did not grow and the plug-in gain "
                    "is not below eps)")}[self.verdict]
        return f"{line} (level {self.level:g})" + (f"\n{self.calibration_note}" if self.calibration_note else "")
