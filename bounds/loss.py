"""Loss constants ``B`` (range) and ``L_loss`` (Lipschitz constant), THEORY §1.

Post-normalisation bounds every hidden state, ``||z_j|| <= rho`` with
``rho = ||gamma||_inf sqrt(d) (+ ||beta||)``, so the logits satisfy
``|f_k(x)| <= ||A_k|| rho + |c_k|`` without looking at data.
"""
from __future__ import annotations

import math
from typing import Sequence

import sympy as sp

from plumbing.validation import InputError

C, rho_sym, F, Y = sp.symbols("C rho F Y", positive=True)
logit_bound = sp.Symbol("logit_bound", positive=True)  # max_k ||A_k|| rho + |c_k|

#: Symbolic constants; the numeric functions below evaluate exactly these.
CROSS_ENTROPY_B = sp.log(C) + 2 * logit_bound
CROSS_ENTROPY_L = sp.sqrt(2)
SQUARED_B = (F + Y) ** 2
SQUARED_L = 2 * (F + Y)


def _check_nonneg(name: str, value: float) -> float:
    value = float(value)
    if not math.isfinite(value) or value < 0:
        raise InputError(name, "a finite number >= 0", value)
    return value


def post_norm_radius(gain_inf: float, d: int, bias_norm: float = 0.0) -> float:
    """``rho = ||gamma||_inf sqrt(d) + ||beta||``: bound on ``||z_j||`` after a norm.

    Example:
        >>> post_norm_radius(1.0, 16)
        4.0
    """
    return _check_nonneg("gain_inf", gain_inf) * math.sqrt(d) + _check_nonneg("bias_norm", bias_norm)


def cross_entropy_constants(
    n_classes: int, head_row_norms: Sequence[float], head_bias: Sequence[float], rho: float
) -> tuple[float, float]:
    """``B = log C + 2 max_k (||A_k|| rho + |c_k|)`` and ``L_loss = sqrt(2)`` (THEORY §1).

    Args:
        n_classes: number of classes ``C >= 2``.
        head_row_norms: ``||A_k||`` for each class, shape ``(C,)``.
        head_bias: ``c_k`` for each class, shape ``(C,)``.
        rho: bound on ``||z_D||``.

    Example:
        >>> B, L = cross_entropy_constants(2, [1.0, 0.5], [0.0, 0.1], 2.0)
        >>> round(B, 6), round(L, 6)
        (4.693147, 1.414214)
    """
    if int(n_classes) != n_classes or n_classes < 2:
        raise InputError("n_classes", "an integer >= 2", n_classes)
    if len(head_row_norms) != n_classes or len(head_bias) != n_classes:
        raise ValueError(
            f"expected head_row_norms and head_bias of length n_classes={n_classes}, "
            f"got {len(head_row_norms)} and {len(head_bias)}")
    rho = _check_nonneg("rho", rho)
    for i, c in enumerate(head_bias):
        if not math.isfinite(float(c)):
            raise InputError(f"head_bias[{i}]", "a finite number", c)
    bound = max(_check_nonneg(f"head_row_norms[{i}]", a) * rho + abs(float(c))
                for i, (a, c) in enumerate(zip(head_row_norms, head_bias)))
    B = float(CROSS_ENTROPY_B.subs({C: n_classes, logit_bound: bound}))
    return B, float(CROSS_ENTROPY_L)


def squared_loss_constants(F_bound: float, Y_bound: float) -> tuple[float, float]:
    """``B = (F + Y)^2`` and ``L_loss = 2 (F + Y)`` for ``|f| <= F``, ``|y| <= Y`` (THEORY §1).

    Example:
        >>> squared_loss_constants(1.5, 0.5)
        (4.0, 4.0)
    """
    values = {F: _check_nonneg("F", F_bound), Y: _check_nonneg("Y", Y_bound)}
    if values[F] + values[Y] == 0:
        raise InputError("F + Y", "> 0", 0.0)
    return float(SQUARED_B.subs(values)), float(SQUARED_L.subs(values))


def block_output_bound(family: str, block: dict) -> float:
    """``sup ||h_theta(u)||`` over the capped class and ``||u|| <= rho`` (THEORY §1, §4).

    For a block inserted at the top the head sees ``u + h(u)``, whose norm can reach
    ``rho + sup ||h||``; the loss constants must use that larger radius.

    * readout: ``||V phi(u)|| <= nu_V rho_phi``;
    * full: ``||V relu(U u + b)|| <= nu_V ||[U b]||_F ||[u; 1]|| <= nu_V nu_U sqrt(rho^2 + 1)``.

    Args:
        family: ``"readout"`` or ``"full"``.
        block: the family's ``[block]`` parameters (``nu_V, rho_phi`` or ``nu_V, nu_U, rho``).

    Raises:
        InputError: unknown family or a missing / negative parameter (named).

    Example:
        >>> block_output_bound("readout", {"nu_V": 0.5, "rho_phi": 3.0})
        1.5
        >>> round(block_output_bound("full", {"nu_V": 0.5, "nu_U": 2.0, "rho": 0.0}), 6)
        1.0
    """
    from bounds.families import residual_family

    return residual_family(family).output_bound(block)    # the family's own formula (bounds.families)
