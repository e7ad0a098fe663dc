"""What ``best_site`` is ranked by, and what is known about that ranking.

* :data:`RANK_BY_SCORES` -- the scores ``dc.saturation(rank_by=...)`` can rank the sites by (every one is
  in a site's record).
* :func:`default_ranking` -- the rule that fixes the default ranking (``RANKED_BY``) from a table of
  rank tests over stored studies (``docs/predicted/pooled.json``). **Choice** (fixed before reading the
  table): at the horizon users act on, the largest horizon of the table (a user inserts a block and
  then trains it; of a pooled table that names its ``networks``, the largest pooled over all of
  them), among the scores a scan can rank by whose one-sided permutation p is at most ``level``
  (0.05), the one with the largest rho (ties: the smaller p, then the order of
  :data:`RANK_BY_SCORES`); when none qualifies, the paper's score ``predicted_gain`` (Theorem 1's gain)
  is kept. ``tests/api/test_ranking.py`` checks that the code's default is this rule's pick on the
  stored table.
* :func:`calibration_judgement` -- a user's own ``dc.calibration`` table read for the score a report is
  ranked by: does it predict the trained gains at level 0.05, and if not, the pointer to
  ``dc.trial_insertion`` (the line ``SaturationReport.with_calibration`` carries).
"""
from __future__ import annotations

import json
import math
from pathlib import Path

__all__ = ["PAPER_SCORE", "RANK_BY_SCORES", "RANKING_RULE", "calibration_judgement", "check_rank_by", "default_ranking"]

#: the scores ``dc.saturation(rank_by=...)`` ranks the sites by (``predicted_gain`` needs the curvature;
#: ``P_<family>`` needs the family scanned).
RANK_BY_SCORES = ("predicted_gain", "P_linear", "P_affine", "P_readout", "P_block", "P_all", "AG_max", "G_sq")
#: the score Paper B's Theorem 1 ranks by (the rule's fallback).
PAPER_SCORE = "predicted_gain"
#: the default ranking's rule, in words (**Choice**; :func:`default_ranking` applies it).
RANKING_RULE = ("at the largest horizon of the stored table pooled over all its networks (a user inserts a block and "
                "trains it), among the scores "
                "dc.saturation can rank by whose pooled one-sided permutation p is <= 0.05, the one with the largest "
                "pooled mean rho; if none, predicted_gain (the paper's score)")


def check_rank_by(rank_by, families, curvature: str) -> str:
    """The score ``best_site`` is ranked by: ``rank_by`` checked, or the default (``RANKED_BY``; with
    ``curvature="none"``, where no gain is predicted, ``"G_sq"``: the **Choice** of that mode).

    Raises:
        ValueError: a value outside :data:`RANK_BY_SCORES`, ``"predicted_gain"`` with ``curvature="none"`` or a
            ``P_<family>`` of a family not scanned (one line naming ``rank_by``, the allowed values and the value).
    """
    from numerics.user_network._verdict import RANKED_BY

    if rank_by is None:
        return "G_sq" if curvature == "none" else RANKED_BY
    fams = set(families)
    allowed = [s for s in RANK_BY_SCORES if not (s.startswith("P_") and s != "P_all" and s[2:] not in fams)
               and not (s == "predicted_gain" and curvature == "none")]
    if not isinstance(rank_by, str) or rank_by not in allowed:
        why = (" (predicted_gain needs the curvature: curvature='none' measures none)" if rank_by == "predicted_gain" and
               curvature == "none" else " (P_<family> needs the family scanned: families=...)" if rank_by in RANK_BY_SCORES else "")
        raise ValueError(f"rank_by == {rank_by!r}, must be None (the default ranking) or one of {allowed}{why}.")
    return rank_by


def _rows(table) -> list[dict]:
    """The rows of a rank-test table: a ``dc.calibration`` DataFrame, a dict with ``"calibration"`` (a stored
    ``pooled.json``), a list of row dicts, or the path of such a JSON file."""
    if isinstance(table, (str, Path)):
        table = json.loads(Path(table).read_text())
    if isinstance(table, dict):
        table = table.get("calibration")
    if hasattr(table, "to_dict") and hasattr(table, "columns"):
        table = table.to_dict("records")
    if not isinstance(table, list) or not all(isinstance(r, dict) for r in table):
        raise ValueError(f"table is a {type(table).__name__}, must be a dc.calibration DataFrame, a list of its rows, "
                         "or a dict (or JSON file) with a 'calibration' list (docs/predicted/pooled.json).")
    need = {"horizon", "score", "rho", "p_one_sided"}
    bad = [sorted(need - set(r)) for r in table if need - set(r)]
    if bad or not table:
        raise ValueError(f"table has {len(table)} rows, must have >= 1, each with {sorted(need)} (missing {bad[:1]}).")
    return table


def _finite(v) -> bool:
    return v is not None and isinstance(v, (int, float)) and math.isfinite(v)


def default_ranking(table, level: float = 0.05, horizon=None, target: str = "realised_gain") -> dict:
    """Apply the default ranking's rule (:data:`RANKING_RULE`, the module docstring) to a table of rank tests.

    Args:
        table: ``docs/predicted/pooled.json`` (its path or its dict), or a ``dc.calibration`` DataFrame.
        level: the rank tests' level (one-sided p at most ``level``).
        horizon: None (the rule: the table's largest horizon; of a dict naming ``networks``, the largest whose rows
            pool all of them, ``n_strata``) or a horizon of the table.
        target: the realised column the rows are tested against (rows of another target are ignored).

    Returns:
        ``{"score", "horizon", "rho", "p_one_sided", "level", "rule", "reason", "rows"}``: the pick, its row's
        rho and p (None for the fallback when the table has no row of it) and every candidate's row at that
        horizon (``score``, ``rho``, ``p_one_sided``, ``eligible``).

    Example:
        >>> rows = [{"horizon": 10, "score": "predicted_gain", "rho": 0.3, "p_one_sided": 0.2},
        ...         {"horizon": 10, "score": "P_affine", "rho": 0.9, "p_one_sided": 0.01},
        ...         {"horizon": 0, "score": "AG_max", "rho": 1.0, "p_one_sided": 0.001}]
        >>> default_ranking(rows)["score"], default_ranking(rows[:1])["score"]
        ('P_affine', 'predicted_gain')
    """
    if isinstance(table, (str, Path)):
        table = json.loads(Path(table).read_text())
    rows = [r for r in _rows(table) if r.get("target", target) == target]
    if not rows:
        raise ValueError(f"table has no row with target == {target!r}, must have some (the realised gains).")
    nets = len(table.get("networks") or []) if isinstance(table, dict) else 0
    full = sorted({r["horizon"] for r in rows if not nets or r.get("n_strata", nets) == nets})
    horizons = sorted({r["horizon"] for r in rows})
    h = (full or horizons)[-1] if horizon is None else horizon
    if h not in horizons:
        raise ValueError(f"horizon == {horizon!r}, must be None or one of the table's horizons {horizons}.")
    at = [r for r in rows if r["horizon"] == h and r["score"] in RANK_BY_SCORES]
    cand = [{"score": r["score"], "rho": r["rho"], "p_one_sided": r["p_one_sided"],
             "eligible": bool(_finite(r["rho"]) and _finite(r["p_one_sided"]) and r["p_one_sided"] <= level)} for r in at]
    ok = [c for c in cand if c["eligible"]]
    if ok:
        best = max(ok, key=lambda c: (c["rho"], -c["p_one_sided"], -RANK_BY_SCORES.index(c["score"])))
        reason = (f"{best['score']}: the largest rho ({best['rho']:+.3f}, one-sided p {best['p_one_sided']:.3g} <= {level:g}) "
                  f"among the {len(ok)} scan score(s) that predict at horizon {h}")
    else:
        best = next((c for c in cand if c["score"] == PAPER_SCORE), {"score": PAPER_SCORE, "rho": None, "p_one_sided": None})
        reason = f"no scan score predicts at horizon {h} (one-sided p <= {level:g}): the paper's score {PAPER_SCORE} is kept"
    return {"score": best["score"], "horizon": h, "rho": best["rho"], "p_one_sided": best["p_one_sided"], "level": level,
            "rule": RANKING_RULE, "reason": reason, "rows": cand}


def calibration_judgement(calib, score: str, horizon=None, level: float | None = None, target: str = "realised_gain") -> dict:
    """What a user's ``dc.calibration`` table says about ``score`` (the score a report ranks by).

    The row of ``score`` and ``target`` at ``horizon`` (None: the largest horizon of the table, the one
    users act on); ``predictive``: its one-sided permutation p at most ``level`` (None: the row's own
    ``level``, else 0.05). A rho that is undefined (a constant score) is no evidence either.

    Returns:
        ``{"score", "horizon", "rho", "p_one_sided", "level", "n_units", "predictive", "note"}``; ``note`` is one
        line, which points to ``dc.trial_insertion`` when ``predictive`` is False.

    Raises:
        ValueError: the table has no row of ``score`` and ``target`` (at ``horizon``), or a bad ``level`` (named).
    """
    rows = [r for r in _rows(calib) if r.get("target", target) == target and r["score"] == score]
    if not rows:
        have = sorted({r["score"] for r in _rows(calib)})
        raise ValueError(f"calib has no row of score {score!r} (target {target!r}), must have one: it has the scores {have} "
                         f"(dc.calibration(df, scores=[..., {score!r}]) on dc.predicted_vs_observed's table).")
    horizons = sorted({r["horizon"] for r in rows})
    h = horizons[-1] if horizon is None else horizon
    row = next((r for r in rows if r["horizon"] == h), None)
    if row is None:
        raise ValueError(f"horizon == {horizon!r}, must be None or one of the horizons of {score!r} in calib: {horizons}.")
    lv = level if level is not None else (row["level"] if _finite(row.get("level")) else 0.05)
    if isinstance(lv, bool) or not isinstance(lv, (int, float)) or not 0.0 < float(lv) < 1.0:
        raise ValueError(f"level == {level!r}, must be None or in (0, 1).")
    rho, p = row["rho"], row["p_one_sided"]
    predictive = bool(_finite(rho) and _finite(p) and p <= lv)
    shown = (f"rho={rho:+.2f}" if _finite(rho) else "rho undefined") + (f", p={p:.3g}" if _finite(p) else "")
    head = f"calibration on your network: {score} {shown} at horizon {h}"
    note = (f"{head} — predicts the ranking of the trained gains (one-sided permutation p <= {lv:g})" if predictive else
            f"{head} — no evidence it predicts the trained gains (level {lv:g}); ask dc.trial_insertion for a measured answer")
    return {"score": score, "horizon": h, "rho": rho if _finite(rho) else None, "p_one_sided": p if _finite(p) else None,
            "level": float(lv), "n_units": row.get("n_units"), "predictive": predictive, "note": note}
