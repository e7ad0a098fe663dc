"""Load and validate a ``depthcert bounds`` setup file (TOML; never evaluated as code).

Format (keys may be extended, never renamed)::

    L_test_old = 0.62      # test loss of the reference model
    delta_R = 0.09         # population margin
    delta_erm = 0.004
    delta_test_R = 0.085   # test-level margin of the train-set jumpboard
    M = 200000
    K = 100000
    delta = 0.05           # level of the eps_M event
    delta_prime = 0.05     # level of the eps_K event
    [loss]                 # kind = "cross_entropy" | "squared", or B and L_loss directly
    B = 4.2
    L_loss = 1.4142135623730951
    [block]
    family = "readout"     # readout: d, L_top, rho_phi, nu_V ; full: d, L_top, rho, nu_U, nu_V
    d = 8
    L_top = 2.5
    rho_phi = 3.0
    nu_V = 0.4

Optional top-level keys: ``delta_erm_S`` (Delta_ERM relative to f~_S, direct route),
``eps_M``/``eps_K`` (measured costs overriding the closed forms), ``n_grid`` (cap grid
size), ``delta_R_failure`` (probability that an estimated ``delta_R`` exceeds the true
margin; added to the population route's failure probability), ``R_old`` (population risk
of f_old: the ``population_risk`` route's bound on ``R(f_new)``), ``level``.

``[loss] kind = "cross_entropy"`` takes ``n_classes``, ``head_row_norms``, ``head_bias``,
``rho`` (the bound on the head input ``||z_D||``); ``kind = "squared"`` takes ``F``
(``|f| <= F``) and ``Y`` (``|y| <= Y``). Where the block sits matters: inserted at the
top, the head sees ``u + h(u)``, whose norm can reach ``rho + nu_V rho_phi`` (readout;
``rho + nu_V nu_U sqrt(rho^2 + 1)`` for full, :func:`bounds.loss.block_output_bound`).
Say so with ``block_at_top = true`` (the extra norm is then computed from ``[block]``) or
give it as ``extra_head_norm = <number>``; ``rho`` (cross-entropy) is then enlarged by it,
and ``F`` (squared) by ``head_norm * extra`` with ``head_norm = ||A||_2`` (required then).
Without either key the block is taken to be below the top (a warning says so).

Optional ``[variants]`` table: inputs of this project's tighter variants of THEORY §6
(**Choice**; :mod:`bounds.variant_routes`), every key optional::

    [variants]
    var_S_jump_pop = 0.31    # unbiased sample variance of the losses of f~_pop on S (Bernstein)
    var_T_new = 0.29         # ... of f_new on T
    var_T_old = 0.30         # ... of f_old on T
    var_T_jump_S = 0.29      # ... of f~_S on T
    rad_hat = 0.0021         # Monte-Carlo empirical vector Rademacher (nu_V/M) E_s ||s^T phi||_F on S
    rad_hat_mc_error = 1e-4  # its McDiarmid error at level delta_mc (or give phi_sq_sum and n_draws)
    delta_mc = 0.005         # in (0, delta): carved out of delta
    phi_sq_sum = 1.2e6       # sum_i ||phi_i||^2 on S: Jensen's sure bound, used when below the Monte Carlo
    n_draws = 1000           # sign draws of rad_hat (with phi_sq_sum: the McDiarmid error is computed)
    delta_S_jump_pop = 0.0167  # levels of the one-function tails (default: delta_prime split equally;
    delta_T_new = 0.0167       # delta_S_jump / delta_T_jump, the first names of delta_S_jump_pop /
    delta_T_old = 0.0167       # delta_T_jump_S, are still accepted)
    delta_T_jump_S = 0.025
    use = "direct_tight_hoeffding"  # a route fixed before the data: the certificate is that route's

Variances lie in ``[0, B^2 n/(4(n-1))]`` (``n`` = ``M`` on S, ``K`` on T); ``rad_hat``,
``delta_mc`` and ``rad_hat_mc_error`` (or ``phi_sq_sum`` and ``n_draws``) come together;
``phi_sq_sum <= M rho_phi^2``. A variant whose inputs are absent is skipped and the output
says which key it needs. ``use`` names a variant, ``population_route`` or ``direct_route``.

Optional ``[localised]`` table: the inputs of THEORY §6b's localised certificates (**Choice**;
:class:`bounds.localised_routes.LocalisedSetup`, every key named there, ranges in
:data:`bounds.localised_routes.LOCALISED_PARAMETERS`), self-contained (``M``, ``K``,
``L_test_old``, ``B``, ``L_loss``, ``L_top``, ``d``, ``rho_phi`` and the ball's cap ``nu_V``
are required in it), with ``exact_applies`` (true: readout block at the top, squared loss) and
``use`` (the localised route fixed before the data). ``depthcert run`` writes it into
``bounds_config.toml``; reading it back gives the same localised bounds.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Mapping

from bounds.parameters import BLOCK_PARAMETERS, OPTIONAL, PARAMETERS
from plumbing.config import loads_toml, read_config_text
from plumbing.validation import InputError, Interval, LEVEL, MISSING
from bounds.loss import block_output_bound, cross_entropy_constants, squared_loss_constants
from bounds.routes import Setup

_NUMBER = Interval()
_LOSS_KINDS = ("cross_entropy", "squared")


def read_toml(path: str | Path) -> dict[str, Any]:
    """Parse a TOML file (``tomllib``: data only, nothing is evaluated); a FIFO or a file larger than any
    config (:data:`plumbing.config.MAX_CONFIG_BYTES`) is refused before reading."""
    return loads_toml(read_config_text(path, "--config"), "--config", str(path))


def _number(data: Mapping, key: str, interval: Interval, prefix: str = "") -> float:
    if key not in data:
        raise InputError(prefix + key, interval.describe(), MISSING)
    return interval.check(prefix + key, data[key])


def _head_extra(loss: Mapping, family: str, block: Mapping) -> float:
    """The extra head-input norm of a block at the top (``[loss] block_at_top`` / ``extra_head_norm``)."""
    at_top = loss.get("block_at_top", False)
    if not isinstance(at_top, bool):
        raise InputError("loss.block_at_top", "true or false", at_top)
    if at_top and "extra_head_norm" in loss:
        raise InputError("loss.extra_head_norm", "absent when block_at_top = true (it is computed from [block])",
                         loss["extra_head_norm"])
    if "extra_head_norm" in loss:
        return Interval(0).check("loss.extra_head_norm", loss["extra_head_norm"])
    return block_output_bound(family, block) if at_top else 0.0


def _warn_position(loss: Mapping) -> None:
    if "kind" in loss and not loss.get("block_at_top", False) and "extra_head_norm" not in loss:
        print("depthcert: warning: [loss] kind: the block is taken to be below the top (head input norm <= rho); "
              "set block_at_top = true or extra_head_norm if it is at the top", file=sys.stderr)


def _loss_constants(loss: Mapping, family: str = "readout", block: Mapping | None = None) -> tuple[float, float]:
    kind = loss.get("kind")
    if kind is None:
        return (_number(loss, "B", PARAMETERS["B"], "loss."), _number(loss, "L_loss", PARAMETERS["L_loss"], "loss."))
    if kind not in _LOSS_KINDS:
        raise InputError("loss.kind", f"one of {list(_LOSS_KINDS)}", kind)
    extra = _head_extra(loss, family, block or {})
    if kind == "cross_entropy":
        for key in ("head_row_norms", "head_bias"):
            if not isinstance(loss.get(key), list):
                raise InputError(f"loss.{key}", "a list of numbers, one per class", loss.get(key, MISSING))
            for i, v in enumerate(loss[key]):
                _NUMBER.check(f"loss.{key}[{i}]", v)
        n_classes = _number(loss, "n_classes", Interval(2, integer=True), "loss.")
        for key in ("head_row_norms", "head_bias"):
            if len(loss[key]) != n_classes:
                raise InputError(f"loss.{key}", f"a list of n_classes = {int(n_classes)} numbers",
                                 loss[key])
        rho = _number(loss, "rho", Interval(0), "loss.")
        return cross_entropy_constants(int(n_classes), loss["head_row_norms"], loss["head_bias"], rho + extra)
    F = _number(loss, "F", Interval(0), "loss.")
    if extra > 0:   # |f| <= ||A||_2 (rho + extra) + ||c|| = F + ||A||_2 extra
        F += _number(loss, "head_norm", Interval(0), "loss.") * extra
    return squared_loss_constants(F, _number(loss, "Y", Interval(0), "loss."))


def setup_from_dict(cfg: Mapping[str, Any]) -> tuple[Setup, float | None]:
    """Build a validated :class:`~bounds.routes.Setup` and the optional ``level``.

    The builder of a user's file (every key checked, loss constants from ``[loss]``); a run's measured
    quantities are built by :func:`numerics.studies.run.setup_of_quantities`, whose setups
    :func:`bounds.setup_io.setup_to_dict` writes as such a file.

    Raises:
        InputError: a missing key, an unknown family, a non-number, NaN/inf or a value
            outside its range (the message names the key, the range and the value).
    """
    top = {key: _number(cfg, key, interval) for key, interval in PARAMETERS.items() if key not in ("B", "L_loss")}
    opt = {key: interval.check(key, cfg[key]) for key, interval in OPTIONAL.items() if key in cfg}
    loss = cfg.get("loss")
    if not isinstance(loss, dict):
        raise InputError("loss", "a [loss] table with B and L_loss (or kind)", MISSING if loss is None else loss)
    block = cfg.get("block")
    if not isinstance(block, dict):
        raise InputError("block", "a [block] table with family and its parameters", MISSING if block is None else block)
    family = block.get("family")
    if not isinstance(family, str) or family not in BLOCK_PARAMETERS:
        raise InputError("block.family", f"one of {sorted(BLOCK_PARAMETERS)}", block.get("family", MISSING))
    params = {k: _number(block, k, iv, "block.") for k, iv in BLOCK_PARAMETERS[family].items()}
    B, L_loss = _loss_constants(loss, family, params)
    _warn_unknown(cfg)
    level = LEVEL.check("level", cfg["level"]) if "level" in cfg else None
    setup = Setup(**top, B=B, L_loss=L_loss, family=family, block=params, **opt).validate()
    _warn_position(loss)
    return setup, level


def setup_to_toml(setup: Setup, level: float | None = None) -> str:
    """The ``depthcert bounds`` file of ``setup`` (:func:`bounds.setup_io.setup_to_dict`): reading it
    back with :func:`setup_from_dict` gives the same setup."""
    from bounds.setup_io import setup_to_dict
    from plumbing.io import to_toml

    return to_toml(setup_to_dict(setup, level))


def _warn_unknown(cfg: Mapping) -> None:
    """One line per ignored key, naming its table and where it belongs (:mod:`depthcert._config_keys`)."""
    from depthcert._config_keys import unknown_key_warnings

    for line in unknown_key_warnings(cfg):
        print(line, file=sys.stderr)


def load_setup(path: str | Path) -> tuple[Setup, float | None]:
    """Read and validate a setup file; see the module docstring for the format."""
    return setup_from_dict(read_toml(path))


def variant_inputs_from_dict(cfg: Mapping[str, Any], setup: Setup):
    """The optional ``[variants]`` table as validated :class:`bounds.variant_routes.VariantInputs`.

    Raises:
        InputError: ``variants`` is not a table, a value is not a number in its range, or
            ``use`` is not a route name (the key ``variants.<name>`` is named).
    """
    from bounds.variant_routes import VARIANT_PARAMETERS, VariantInputs

    table = cfg.get("variants", {})
    if not isinstance(table, dict):
        raise InputError("variants", "a [variants] table", table)
    values = {k: iv.check(f"variants.{k}", table[k]) for k, iv in VARIANT_PARAMETERS.items() if k in table}
    if "use" in table and not isinstance(table["use"], str):
        raise InputError("variants.use", "a route name (a string)", table["use"])
    return VariantInputs(**values, use=table.get("use")).validate(setup)


def localised_inputs_from_dict(cfg: Mapping[str, Any]):
    """The optional ``[localised]`` table (THEORY §6b, **Choice**) as ``(LocalisedSetup, use)``, or ``None``.

    The table holds every input of :class:`bounds.localised_routes.LocalisedSetup` (a run writes
    them into ``bounds_config.toml``), ``exact_applies`` (a bool) and ``use`` (a route name).

    Raises:
        InputError: ``localised`` is not a table, a value is not a number in its range, a required
            key is missing, or ``use`` is not a localised route (the key ``localised.<name>`` is named).
    """
    from bounds.localised import LOCALISED_SPECS
    from bounds.localised_routes import LOCALISED_PARAMETERS, LocalisedSetup
    from plumbing.validation import check_values

    table = cfg.get("localised")
    if table is None:
        return None
    if not isinstance(table, dict):
        raise InputError("localised", "a [localised] table", table)
    values = {k: table[k] for k in LOCALISED_PARAMETERS if k in table}
    for k, v in values.items():
        check_values(f"localised.{k}", LOCALISED_PARAMETERS[k], v)
    exact = table.get("exact_applies", False)
    if not isinstance(exact, bool):
        raise InputError("localised.exact_applies", "true or false", exact)
    use = table.get("use")
    if use is not None and use not in LOCALISED_SPECS:
        raise InputError("localised.use", f"one of {list(LOCALISED_SPECS)}", use)
    return LocalisedSetup(**values, exact_applies=exact).validate(), use


def load_bounds_config(path: str | Path):
    """``(setup, level, variant_inputs)`` of a ``depthcert bounds`` file (one read, all validated)."""
    cfg = read_toml(path)
    setup, level = setup_from_dict(cfg)
    return setup, level, variant_inputs_from_dict(cfg, setup)
