"""What the tighter variants need beyond a :class:`~bounds.routes.Setup`: the ``[variants]`` table.

Levels (fixed before any data is seen). By default each variant's failure probability
equals the paper's direct route's, ``delta + delta'``: the uniform term keeps ``delta``
(with the empirical Rademacher value, ``delta - delta_mc`` for the uniform deviation and
``delta_mc`` for the Monte-Carlo error), the one-function tails split ``delta'`` equally
(population: three tails at ``delta'/3``; direct: two at ``delta'/2``), the last share
taking what rounding leaves so that the float sum is at most ``delta + delta'``
(:func:`bounds.variant_routes.variant_values`). Each level may be set instead.

Key names: ``delta_S_jump_pop`` and ``delta_T_jump_S`` (beside ``var_S_jump_pop`` and
``var_T_jump_S``); the first names ``delta_S_jump``/``delta_T_jump`` are still accepted.
"""
from __future__ import annotations

import dataclasses
from typing import Mapping

import numpy as np

import sympy as sp

from bounds._statement import evaluate
from plumbing.validation import check_values, InputError, Interval, MISSING
from bounds.families import RESIDUAL_FAMILIES
from bounds.generalisation import delta_mc, mc_error_expression
from bounds.variants import VARIANT_SPECS

_unit_open = Interval(0, 1, closed_low=False, closed_high=False)
_nonneg = Interval(0)

#: ``[variants]`` keys of the config and their allowed ranges (beyond these, variances are
#: at most ``B^2 n / (4 (n - 1))``, the largest unbiased sample variance of values in
#: ``[0, B]``; ``phi_sq_sum <= M rho_phi^2``; ``delta_mc < delta``).
VARIANT_PARAMETERS: Mapping[str, Interval] = {
    "var_S_jump_pop": _nonneg, "var_T_new": _nonneg, "var_T_old": _nonneg, "var_T_jump_S": _nonneg,
    "rad_hat": _nonneg, "rad_hat_mc_error": _nonneg, "delta_mc": _unit_open,
    "phi_sq_sum": _nonneg, "n_draws": Interval(1, integer=True),
    "delta_S_jump_pop": _unit_open, "delta_T_new": _unit_open, "delta_T_old": _unit_open,
    "delta_T_jump_S": _unit_open, "delta_S_jump": _unit_open, "delta_T_jump": _unit_open,
}
#: Old key -> its current name (both accepted; equal values when both are given).
ALIASES: Mapping[str, str] = {"delta_S_jump": "delta_S_jump_pop", "delta_T_jump": "delta_T_jump_S"}
#: variance key -> (symbol of the theorem objects, sample size it is measured on)
VARIANCE_KEYS: Mapping[str, tuple[str, str]] = {
    "var_S_jump_pop": ("V_S_jump", "M"), "var_T_new": ("V_T_new", "K"), "var_T_old": ("V_T_old", "K"),
    "var_T_jump_S": ("V_T_jump", "K")}
#: level key -> symbol of the theorem objects, per route (in the order of the chain's tails)
LEVEL_KEYS: Mapping[str, Mapping[str, str]] = {
    "population": {"delta_S_jump_pop": "delta_S_jump", "delta_T_new": "delta_T_new", "delta_T_old": "delta_T_old"},
    "direct": {"delta_T_new": "delta_T_new", "delta_T_jump_S": "delta_T_jump"},
}
_MC = ("rad_hat", "delta_mc")
#: Said whenever a direct variant is evaluated without ``delta_erm_S`` (issue 17, item 6: it used to be silent).
ERM_SUBSTITUTION_NOTE = (
    "direct variants: delta_erm_S not given, so Delta_ERM relative to f~_pop (delta_erm) stands in for Delta_ERM "
    "relative to f~_S (THEORY §6); optimistic whenever R_S(f~_S) < R_S(f~_pop): give delta_erm_S when it is measured.")
#: What ``use`` may name: the paper's routes and every variant.
ROUTE_NAMES = ("population_route", "direct_route") + tuple(VARIANT_SPECS)
#: ``mc_error(level) / mc_error(delta_mc)``, read from the one formula of the error.
_ERROR_RATIO = sp.simplify(mc_error_expression(sp.Symbol("level", positive=True)) / mc_error_expression(delta_mc))


@dataclasses.dataclass(frozen=True)
class VariantInputs:
    """What the variants need beyond a :class:`~bounds.routes.Setup` (config table ``[variants]``).

    Attributes:
        var_S_jump_pop: unbiased sample variance (``ddof=1``) of the losses of ``f~_pop`` on ``S``.
        var_T_new, var_T_old, var_T_jump_S: the same for ``f_new``, ``f_old``, ``f~_S`` on ``T``.
        rad_hat: Monte-Carlo value of the empirical vector Rademacher complexity on ``S``,
            ``(nu_V / M) E_s ||s^T phi||_F`` (e.g. ``numerics.estimators.rademacher_readout_mc``).
        rad_hat_mc_error: its McDiarmid error at level ``delta_mc``; may be left out when
            ``phi_sq_sum`` and ``n_draws`` are given (it is then
            :func:`bounds.generalisation.mc_error_expression`; the larger of the two when both).
        delta_mc: the level of the Monte-Carlo error, in ``(0, delta)``.
        phi_sq_sum: ``sum_i ||phi_i||^2`` over ``S``: Jensen's sure bound
            ``(nu_V/M) sqrt(d phi_sq_sum)`` replaces the Monte-Carlo value when smaller.
        n_draws: the number of sign draws of ``rad_hat``.
        delta_S_jump_pop, delta_T_new, delta_T_old, delta_T_jump_S: levels of the
            one-function tails (``f~_pop`` on ``S``; ``f_new``, ``f_old``, ``f~_S`` on ``T``).
        delta_S_jump, delta_T_jump: the first names of ``delta_S_jump_pop``, ``delta_T_jump_S``.
        use: a route fixed before the data (a variant name, ``population_route`` or
            ``direct_route``): the certificate is that route's alone, at the full level.
    """

    var_S_jump_pop: object = None
    var_T_new: object = None
    var_T_old: object = None
    var_T_jump_S: object = None
    rad_hat: object = None
    rad_hat_mc_error: object = None
    delta_mc: object = None
    phi_sq_sum: object = None
    n_draws: object = None
    delta_S_jump_pop: object = None
    delta_T_new: object = None
    delta_T_old: object = None
    delta_T_jump_S: object = None
    delta_S_jump: object = None
    delta_T_jump: object = None
    use: str | None = None

    def get(self, key: str):
        """The value of ``key``, read through its old name (``ALIASES``) when only that is given."""
        value = getattr(self, key)
        old = next((a for a, new in ALIASES.items() if new == key), None)
        return getattr(self, old) if value is None and old is not None else value

    def validate(self, setup) -> "VariantInputs":
        """Check every given value (keys ``variants.<name>``).

        Raises:
            InputError: naming the key, the allowed range and the value.
        """
        for key, interval in VARIANT_PARAMETERS.items():
            if getattr(self, key) is not None:
                check_values(f"variants.{key}", interval, getattr(self, key))
        if self.use is not None and self.use not in ROUTE_NAMES:
            raise InputError("variants.use", f"one of {list(ROUTE_NAMES)}", self.use)
        self._check_aliases()
        self._check_variances(setup)
        self._check_monte_carlo(setup)
        return self

    def _check_aliases(self) -> None:
        for old, new in ALIASES.items():
            a, b = getattr(self, old), getattr(self, new)
            if a is not None and b is not None and not np.array_equal(np.asarray(a), np.asarray(b)):
                raise InputError(f"variants.{old}", f"equal to variants.{new} (its new name) when both are given", a)

    def _check_variances(self, setup) -> None:
        B = np.asarray(setup.B, dtype=np.float64)
        for key, (_, size) in VARIANCE_KEYS.items():
            if getattr(self, key) is None:
                continue
            n = np.asarray(getattr(setup, size), dtype=np.float64)
            with np.errstate(divide="ignore"):
                cap = np.where(n > 1, B**2 * n / (4 * np.maximum(n - 1, 1.0)), np.inf)
            _check_below(f"variants.{key}", getattr(self, key), cap,
                         lambda c: f"in [0, {c:.6g}] (= B^2 {size}/(4({size}-1)), the largest unbiased sample variance "
                         f"of values in [0, B]; B = {float(np.max(B)):.6g}, {size} = {float(np.max(n)):.6g})")

    def _check_monte_carlo(self, setup) -> None:
        error_source = self.rad_hat_mc_error is not None or (self.phi_sq_sum is not None and self.n_draws is not None)
        given = [k for k in _MC + ("rad_hat_mc_error", "n_draws") if getattr(self, k) is not None]
        if given:
            missing = [k for k in _MC if getattr(self, k) is None] + ([] if error_source else ["rad_hat_mc_error"])
            if missing:
                raise InputError(f"variants.{missing[0]}", "given together with variants.rad_hat, delta_mc and "
                                 "rad_hat_mc_error (or phi_sq_sum and n_draws)", MISSING)
        if self.delta_mc is not None:
            _check_below("variants.delta_mc", self.delta_mc, np.nextafter(np.asarray(setup.delta, dtype=np.float64), 0),
                         lambda c: f"in (0, delta) (carved out of delta = {float(np.max(setup.delta)):.6g})")
        if self.phi_sq_sum is not None and _has_empirical_rademacher(setup.family):
            cap = np.asarray(setup.M, dtype=np.float64) * np.asarray(setup.block["rho_phi"], dtype=np.float64) ** 2
            _check_below("variants.phi_sq_sum", self.phi_sq_sum, cap,
                         lambda c: f"in [0, {c:.6g}] (= M rho_phi^2: every ||phi_i|| <= rho_phi)")

    def missing(self, route: str, tail: str, uniform: str, family: str = "readout") -> list[str]:
        """The ``[variants]`` keys a variant needs and that are not given."""
        need = []
        if tail == "bernstein":
            need += ["var_T_new"] + (["var_S_jump_pop", "var_T_old"] if route == "population" else ["var_T_jump_S"])
        if uniform == "empirical":
            need += list(_MC) + ([] if self.mc_error_given() else ["rad_hat_mc_error"])
        return [f"variants.{k}" for k in need if getattr(self, k) is None]

    def levels(self, route: str, setup) -> dict[str, np.ndarray]:
        """Levels of ``route``'s one-function tails (symbol name -> value): given ones, else ``delta'`` split equally.

        When every level is at its default, the last share is ``delta'`` minus the others
        (:func:`bounds.variant_routes.variant_values` then lowers it by what rounding needs).
        """
        given = given_levels(self, route)
        dp = np.asarray(setup.delta_prime, dtype=np.float64)
        share = dp / len(given)
        out = {k: np.asarray(share if x is None else x, dtype=np.float64) for k, x in given.items()}
        if all(x is None for x in given.values()):
            out[list(given)[-1]] = dp - share * (len(given) - 1)
        return out

    def mc_error_given(self) -> bool:
        """The McDiarmid error is given, or computable from ``phi_sq_sum`` and ``n_draws``."""
        return self.rad_hat_mc_error is not None or (self.phi_sq_sum is not None and self.n_draws is not None)

    def mc_error(self, setup, delta_mc) -> np.ndarray:
        """The McDiarmid error of ``rad_hat`` at ``delta_mc``: the given one, the computed one, or the larger."""
        values = []
        if self.rad_hat_mc_error is not None:
            values.append(np.asarray(self.rad_hat_mc_error, dtype=np.float64))
        if self.phi_sq_sum is not None and self.n_draws is not None:
            v = {"nu_V": setup.block["nu_V"], "M": setup.M, "d": setup.block["d"], "phi_sq_sum": self.phi_sq_sum,
                 "n_draws": self.n_draws, "delta_mc": delta_mc}
            values.append(evaluate(mc_error_expression(), v))
        return values[0] if len(values) == 1 else np.maximum(*values)

    def scaled(self, factor: float) -> "VariantInputs":
        """Every level (tail levels and ``delta_mc``) times ``factor`` (``0 < factor <= 1``).

        A given ``rad_hat_mc_error`` is moved to the new ``delta_mc`` by the ratio of
        :func:`~bounds.generalisation.mc_error_expression` at the two levels (it scales as
        ``sqrt(ln(1/level))``).
        """
        levels = {k: None if getattr(self, k) is None else np.asarray(getattr(self, k), dtype=np.float64) * factor
                  for k in VARIANT_PARAMETERS if k.startswith("delta")}
        err = self.rad_hat_mc_error
        if err is not None and self.delta_mc is not None:
            ratio = evaluate(_ERROR_RATIO, {"delta_mc": self.delta_mc, "level": levels["delta_mc"]})
            err = np.asarray(err, dtype=np.float64) * ratio
        return dataclasses.replace(self, rad_hat_mc_error=err, **levels)


def _has_empirical_rademacher(family: str) -> bool:
    """The family's sign Monte Carlo bounds ``phi_sq_sum`` (readout, :mod:`bounds.families`)."""
    return family in RESIDUAL_FAMILIES and RESIDUAL_FAMILIES[family].empirical_rademacher


def _check_below(key: str, value, cap, allowed) -> None:
    """``value <= cap`` everywhere, else :class:`InputError` naming ``key``, the numbers and the first bad value."""
    arr, cap = np.broadcast_arrays(np.asarray(value, dtype=np.float64), np.asarray(cap, dtype=np.float64))
    bad = ~(arr <= cap)
    if np.any(bad):
        i = np.flatnonzero(bad)[0]
        raw = np.asarray(value)
        shown = raw.flat[i].item() if raw.ndim else value
        raise InputError(key, allowed(float(cap.flat[i])), shown)


def given_levels(inputs: VariantInputs, route: str) -> dict[str, object]:
    """Symbol name -> the given level of each of ``route``'s tails (``None`` where not given)."""
    return {sym: inputs.get(key) for key, sym in LEVEL_KEYS[route].items()}
