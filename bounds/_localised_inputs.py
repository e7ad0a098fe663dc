"""What the localised certificates (THEORY §6b) are evaluated from: :class:`LocalisedSetup` and its checks.

Every key has an allowed range (:data:`LOCALISED_PARAMETERS`, an
:class:`~plumbing.validation.Interval` per key, shared with a config loader and property
tests); a bad value raises :class:`~plumbing.validation.InputError` naming
``localised.<key>``, the range and the value.
"""
from __future__ import annotations

import dataclasses
from typing import Mapping

import numpy as np

from plumbing.validation import MISSING, InputError, Interval, check_values

_unit_open = Interval(0, 1, closed_low=False, closed_high=False)
_nonneg, _pos, _real = Interval(0), Interval(0, closed_low=False), Interval()

#: Keys of :class:`LocalisedSetup` and their allowed ranges.
LOCALISED_PARAMETERS: Mapping[str, Interval] = {
    "M": Interval(1), "K": Interval(1), "n_grid": Interval(1, integer=True), "L_test_old": _nonneg,
    "B": _pos, "L_loss": _pos, "L_top": _pos, "d": Interval(1, integer=True), "r": Interval(1, integer=True),
    "rho_phi": _nonneg, "nu_V": _nonneg, "kappa": _nonneg, "b_xi": _nonneg, "A_norm": _nonneg,
    "sigma2_ub": _nonneg, "delta_sigma": _unit_open, "Sigma_ub": _nonneg, "delta_Sn": _unit_open,
    "tr_ub": _nonneg, "delta_tr": _unit_open,
    "delta_train": _real, "delta_R": _real, "delta_R_failure": Interval(0, 1, closed_high=False),
    "delta_erm_pop": _real, "var_T_dnew": _nonneg, "var_S_dpop": _nonneg,
    "delta_U": _unit_open, "delta_T_d": _unit_open, "delta_S_pop": _unit_open,
}
REQUIRED = ("M", "K", "L_test_old", "B", "L_loss", "L_top", "d", "rho_phi", "nu_V")
#: Optional inputs that come with their level: ``(bound, level)``.
PAIRED = (("sigma2_ub", "delta_sigma"), ("Sigma_ub", "delta_Sn"), ("tr_ub", "delta_tr"))
#: Variance key -> the size of the sample it is measured on.
VARIANCES = {"var_T_dnew": "K", "var_S_dpop": "M"}


@dataclasses.dataclass(frozen=True)
class LocalisedSetup:
    """Measured inputs of the THEORY §6b certificates (every field a float or a numpy array).

    Attributes:
        M, K: sizes of ``S`` and ``T``; ``n_grid``: caps in the grid (1: the cap fixed before ``S``).
        L_test_old: ``L_test(f_old)`` (the bound is reported on ``L_test(f_new)``).
        B, L_loss: loss range and Lipschitz constant; ``L_top``: certified on the tube of radius
            ``nu_V rho_phi``; ``d``: block output dimension; ``r``: feature dimension (for (c)).
        rho_phi: sure bound on ``||phi(u)||``; ``nu_V``: the cap (ball ``||V||_F <= nu_V``), fixed before ``S``.
        kappa: Lipschitz constant of the gradient of ``h -> l(f_top(u + h), y)`` ((b); ``2 ||A||_2^2``
            squared loss, ``||A||_2^2 / 2`` cross-entropy); ``b_xi``: sure bound on ``||m phi^T||_F``;
            ``A_norm``: ``||A||_2`` of the readout ((c)).
        sigma2_ub, delta_sigma: upper bound on ``E ||m phi^T||_F^2`` from the signal sample and its
            level (absent: the sure ``b_xi^2``, level 0). ``Sigma_ub, delta_Sn``: the same for
            ``||Sigma_phi||_2`` (absent: ``rho_phi^2``); ``tr_ub, delta_tr``: for ``E||phi||^2`` ((b)'s
            remainder; absent: ``rho_phi^2``, level 0).
        delta_train: ``R_S(f_old) - R_S(f_new)`` (train chain).
        delta_R, delta_R_failure: a lower confidence bound on ``R(f_old) - R(f~_pop)`` and its
            level (paper chain; :func:`bounds.localised_routes.paired_delta_R_lower`); always given
            together: ``delta_R_failure = 0`` only when ``delta_R`` is exact (no default, so a
            forgotten level is an error, never an unpaid ``E_R``).
        delta_erm_pop: ``R_S(f~_pop) - R_S(f_new)`` (paper chain; any sign, never substituted).
        var_T_dnew, var_S_dpop: unbiased sample variances of ``d_new`` on ``T`` and ``d_pop`` on ``S``.
        delta_U, delta_T_d, delta_S_pop: levels of ``E_U`` (without ``delta_sigma``, ``delta_Sn``),
            ``H_T_diff``, ``H_S_pop`` (absent: what the level leaves, split equally).
        exact_applies: the readout block sits at the top and the loss is squared ((c)).
    """

    M: object = None
    K: object = None
    L_test_old: object = None
    B: object = None
    L_loss: object = None
    L_top: object = None
    d: object = None
    rho_phi: object = None
    nu_V: object = None
    r: object = None
    n_grid: object = 1
    kappa: object = None
    b_xi: object = None
    A_norm: object = None
    sigma2_ub: object = None
    delta_sigma: object = None
    Sigma_ub: object = None
    delta_Sn: object = None
    tr_ub: object = None
    delta_tr: object = None
    delta_train: object = None
    delta_R: object = None
    delta_R_failure: object = None
    delta_erm_pop: object = None
    var_T_dnew: object = None
    var_S_dpop: object = None
    delta_U: object = None
    delta_T_d: object = None
    delta_S_pop: object = None
    exact_applies: bool = False

    def validate(self) -> "LocalisedSetup":
        """Check every given value.

        Raises:
            InputError: naming ``localised.<key>``, the allowed range and the value.
        """
        for key in REQUIRED:
            if getattr(self, key) is None:
                raise InputError(f"localised.{key}", LOCALISED_PARAMETERS[key].describe(), MISSING)
        for key, interval in LOCALISED_PARAMETERS.items():
            if getattr(self, key) is not None:
                check_values(f"localised.{key}", interval, getattr(self, key))
        if not isinstance(self.exact_applies, bool):
            raise InputError("localised.exact_applies", "a bool", self.exact_applies)
        for bound, level in PAIRED:
            if (getattr(self, bound) is None) != (getattr(self, level) is None):
                missing, other = (level, bound) if getattr(self, level) is None else (bound, level)
                raise InputError(f"localised.{missing}", f"given together with localised.{other}", MISSING)
        if self.delta_R is not None and self.delta_R_failure is None:     # a forgotten level: E_R unpaid
            raise InputError("localised.delta_R_failure", "given together with localised.delta_R (its level in "
                             "[0, 1); 0 only when delta_R is exact)", MISSING)
        self._check_variances()
        return self

    def _check_variances(self) -> None:
        r_d = self.r_d()
        for key, size in VARIANCES.items():
            if getattr(self, key) is None:
                continue
            n = np.asarray(getattr(self, size), dtype=np.float64)
            with np.errstate(divide="ignore", invalid="ignore"):
                cap = np.where(n > 1, r_d**2 * n / np.maximum(n - 1, 1.0), np.inf)
            arr, cap = np.broadcast_arrays(np.asarray(getattr(self, key), dtype=np.float64), cap)
            bad = ~(arr <= cap * (1 + 1e-12))
            if np.any(bad):
                i = np.flatnonzero(bad)[0]
                raise InputError(f"localised.{key}", f"in [0, {float(cap.flat[i]):.6g}] (= r_d^2 {size}/({size}-1), "
                                 "the largest unbiased sample variance of values in [-r_d, r_d])", float(arr.flat[i]))

    def r_d(self) -> np.ndarray:
        """``min(B, L_loss L_top nu_V rho_phi)``: the differences lie in ``[-r_d, r_d]`` (THEORY §6b)."""
        f = lambda k: np.asarray(getattr(self, k), dtype=np.float64)  # noqa: E731
        return np.minimum(f("B"), f("L_loss") * f("L_top") * f("nu_V") * f("rho_phi"))

    def missing(self, chain: str, uniform: str, tail: str) -> list[str]:
        """What the route ``(chain, uniform, tail)`` needs and is not given (or does not apply)."""
        need = ["delta_train"] if chain == "train" else ["delta_R", "delta_R_failure", "delta_erm_pop"]
        need += {"sure": [], "linearised": ["kappa", "b_xi"], "exact": ["A_norm", "b_xi", "r"]}[uniform]
        if tail == "bernstein":
            need += ["var_T_dnew"] + (["var_S_dpop"] if chain == "paper" else [])
        out = [f"localised.{k}" for k in need if getattr(self, k) is None]
        if uniform == "exact" and not self.exact_applies:
            out.append("localised.exact_applies = true (readout block at the top, squared loss: THEORY §6b (c))")
        return out
