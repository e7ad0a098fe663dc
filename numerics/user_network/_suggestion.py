"""What a scan recommends, checked before it is recommended (never a harmful suggestion).

**Choice** (ours), in the order of the samples (every one disjoint from the others):

1. the **probe** fixes the site (``best_site``) and each family's direction ``-G_f``;
2. the **step sample** (the curvature sample's first half) fixes each family's step (Theorem 1,
   ``eta = 1/beta_eff`` with ``beta_eff`` of :func:`nonnegative_beta`) and then *the* candidate:
   the family whose step lowers the step sample's mean loss most (``gain_step``); no family
   lowering it: no suggestion;
3. the **gain sample** (the other half) checks that one candidate: its Student-``t``
   interval of the population gain at ``level`` (:meth:`SaturationReport.gain_interval`).
   It is suggested only when the whole interval lies above zero; otherwise
   ``rep.suggestion`` is None and ``rep.suggestion_reason`` says why, and
   :func:`depthcert.insert_block` refuses the jumpboard unless ``force=True``.

Since the candidate is chosen before the gain sample is looked at, its interval holds at
``level`` without a correction for the choice among families.

**Choice** (a gain a nonnegative loss can have): a plug-in curvature ``beta`` measured on a grid
can miss the curvature between grid points and predict a drop ``slope^2 / (2 beta)`` larger
than the loss itself. For a loss ``>= 0`` that is ``beta``-smooth on the step's segment, Theorem 1
gives ``0 <= R(step) <= R(0) - slope^2 / (2 beta)``, so ``beta >= slope^2 / (2 R(0))``;
every jumpboard and every reported Theorem-1 gain uses ``beta_eff = max(beta, slope^2 / (2
R(0)))`` (``R(0)``: the step sample's mean loss), so that no predicted gain exceeds the loss it
would lower. The uncorrected plug-in is kept, named ``first_order_gain``. (The scan's ``beta``, the
least one whose descent inequality holds at its own step, ``curvature_along(method="descent")``,
starts at that floor, so there ``beta_eff = beta``.)
"""
from __future__ import annotations

import dataclasses

from plumbing.validation import InputError

__all__ = ["RefusedInsertion", "Suggestion", "nonnegative_beta", "suggest"]


class RefusedInsertion(InputError):
    """:func:`depthcert.insert_block` refused a jumpboard the scan did not check, or whose gain
    interval reaches below zero.

    An :class:`~plumbing.validation.InputError` (so a ``ValueError``): the CLI exits with status 2.
    The fix: insert the scan's suggestion (``rep.suggestion``), a function-preserving block
    (``init="zero"``), or pass ``force=True`` to insert the unchecked jumpboard anyway.

    Parameters
    ----------
    reason : str
        Why it was refused (the scan's ``suggestion_reason``); kept as ``.reason``.

    Examples
    --------
        >>> import depthcert as dc
        >>> err = dc.RefusedInsertion("the jumpboard at blocks.1 was not checked on a gain sample")
        >>> isinstance(err, ValueError), err.key, err.reason
        (True, 'init', 'the jumpboard at blocks.1 was not checked on a gain sample')
        >>> print(err)  # doctest: +NORMALIZE_WHITESPACE
        init == 'jumpboard' refused: the jumpboard at blocks.1 was not checked on a gain sample.
        Pass force=True to insert it anyway, or init='zero' for a function-preserving block.
    """

    def __init__(self, reason: str):
        self.key, self.allowed, self.value, self.reason = "init", "a checked jumpboard, init='zero' or force=True", \
            "jumpboard", reason
        ValueError.__init__(self, f"init == 'jumpboard' refused: {reason}. Pass force=True to insert it anyway, "
                            "or init='zero' for a function-preserving block.")


@dataclasses.dataclass(frozen=True)
class Suggestion:
    """The insertion a scan recommends, checked on the scan's gain sample before it is recommended.

    ``rep.suggestion`` of :func:`depthcert.saturation` (None when no candidate's gain interval lies
    above zero; ``rep.suggestion_reason`` says why). Insert it with
    ``dc.insert_block(model, s.site, s.family, s.init, scan=rep)``.

    Attributes
    ----------
    site : str
        Where to insert (the scan's ``best_site``).
    family : str
        Which protocol family: the one whose step lowers the step sample's loss most.
    init : str
        ``"jumpboard"``: Theorem 1's step.
    beta : float or None
        The ``beta_eff`` of the step (``V = -(slope / beta) G_f / ||G_f||``).
    V_norm : float
        ``||V||`` of the step.
    gain_step : float
        The mean loss drop on the step sample (which chose this candidate; in-sample).
    gain : float
        The mean loss drop on the gain sample.
    lo : float
        The lower end of its level-``(1 - level)`` interval for the population gain (``lo > 0``:
        why it is suggested).
    hi : float
        The upper end of that interval.
    n_gain : int
        The gain sample's size.
    level : float
        The interval's level.

    Examples
    --------
        >>> import torch
        >>> from torch import nn
        >>> import depthcert as dc
        >>> _ = torch.manual_seed(0)
        >>> net = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2)).double()
        >>> x = torch.randn(1024, 3, dtype=torch.float64)
        >>> rep = dc.saturation(net, (x, (x[:, 0] > 0).long()), sites=["1"], curvature_n=256)
        >>> s = rep.suggestion
        >>> s.site, s.init, s.lo > 0, s.lo <= s.gain <= s.hi
        ('1', 'jumpboard', True, True)
        >>> deeper = dc.insert_block(net, s.site, s.family, s.init, scan=rep)   # no refusal: it was checked
    """

    site: str
    family: str
    init: str
    beta: float | None
    V_norm: float
    gain_step: float
    gain: float
    lo: float
    hi: float
    n_gain: int
    level: float


def nonnegative_beta(beta: float, slope: float, loss_at_zero: float) -> float:
    """``max(beta, slope^2 / (2 R(0)))``: the least curvature a nonnegative loss allows (module docstring).

    Example:
        >>> nonnegative_beta(0.01, 1.0, 0.5), nonnegative_beta(4.0, 1.0, 0.5)
        (1.0, 4.0)
    """
    if slope > 0 and loss_at_zero > 0:
        return max(beta, slope * slope / (2.0 * loss_at_zero))
    return beta


def _listed(fams: dict, key: str) -> str:
    return ", ".join(f"{f} {r[key]:.3g}" for f, r in fams.items())


def suggest(record: dict | None) -> tuple[Suggestion | None, str]:
    """``(suggestion or None, reason)`` from an insertion record (:func:`numerics.user_network._gain.insertion_record`)."""
    if record is None:
        return None, ("no suggestion: the curvature sample has < 4 samples, so no gain sample checks an insertion "
                      "(give curvature_data or more data)")
    fams = record["families"]
    lowering = {f: r for f, r in fams.items() if r["gain_step"] > 0}
    if not lowering:
        return None, (f"no suggestion at {record['site']}: no family's jumpboard lowers the loss on the step sample "
                      f"(gain_step {_listed(fams, 'gain_step')})")
    family = max(lowering, key=lambda f: lowering[f]["gain_step"])
    r = fams[family]
    if not r["lo"] > 0:
        return None, (f"no suggestion at {record['site']}: the candidate (family {family!r}, jumpboard, chosen on the "
                      f"step sample) has gain interval [{r['lo']:.3g}, {r['hi']:.3g}] on the gain sample "
                      f"(n = {record['n_gain']}, level {record['level']:g}), not above zero: inserting it "
                      "could raise the loss")
    s = Suggestion(record["site"], family, "jumpboard", r["beta"], r["V_norm"], r["gain_step"], r["gain"], r["lo"],
                   r["hi"], record["n_gain"], record["level"])
    return s, (f"suggested: family {family!r} at {s.site} (jumpboard), gain interval [{s.lo:.3g}, {s.hi:.3g}] on the "
               f"gain sample (n = {s.n_gain}, level {s.level:g}), above zero")
