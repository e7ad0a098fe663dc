"""The scan of all sites of any network, and curvature along a step at one site (THEORY §1-§3, §8).

* :func:`accumulate_site_stats` -- per probe batch, ONE forward (zero tensors added at
  every site by :class:`~numerics.sites.SiteProbe`) and ONE backward of the summed loss
  give ``m_i`` at every site; the protocol features ``phi`` of each site's block are
  computed from the recorded states and folded into a
  :class:`~numerics.estimators._site_stats.SiteAccumulator`.
* :func:`curvature_along` -- (A-smooth) for a direction ``D`` of ``V``: the curvature of
  ``tau -> R(V = -tau D/||D||)`` on the segment ``[0, slope/beta]`` (self-consistent grid
  iteration as :func:`~numerics.estimators.smoothness_beta_report`, second derivatives by
  double backward), and Theorem 1's gain bound ``slope^2 / (2 beta)``, ``slope = <G, D/||D||>``.
  ``method="descent"``: the least ``beta`` whose descent inequality holds at its own step, by forwards.
* :func:`site_loss` -- ``R(V = 0)`` on a sample by the path of :func:`curvature_along`.
* :func:`loss_change` -- ``R(f) - R(f with h_V inserted at the site)`` on a sample.
"""
from __future__ import annotations

import contextlib
import math
import sys
from typing import Mapping

import torch

from numerics._numerics import per_sample_loss
from numerics._replay import SiteReplay
from numerics.estimators._site_stats import SiteAccumulator
from numerics.estimators._smoothness import BetaEstimate
from numerics.families import from_tokens, to_tokens
from numerics.sites import SiteProbe, add_at_site
from plumbing.validation import check_number

__all__ = ["accumulate_site_stats", "curvature_along", "loss_change", "site_loss", "site_losses"]


def _batches(n: int, lo: int, hi: int, size: int):
    return [(i, min(i + size, hi)) for i in range(lo, hi, size)]


def accumulate_site_stats(model, x: torch.Tensor, y: torch.Tensor, blocks: Mapping, loss: str, *,
                          batch_size: int = 256, soft_y: torch.Tensor | None = None, progress=None,
                          n_chunks: int = 16, b: float | None = None) -> dict[str, SiteAccumulator]:
    """Streaming statistics of every site from one forward + one backward per batch (THEORY §8).

    Args:
        model: any per-sample-safe ``nn.Module`` (put in eval mode here).
        x, y: the probe sample ``(n, ...)``, processed in order.
        blocks: ``{site: ProtocolBlock}`` (their ``phi`` defines each site's features).
        loss: ``"cross_entropy"`` or ``"squared"``.
        batch_size: samples per forward (the results do not depend on it).
        soft_y: conditional targets (``E[y | x]``); if given, ``||m_bar_i||^2`` is also
            accumulated (one more forward/backward per batch) for the realisability ratio.
        progress: an optional callable ``progress(n_done)``.
        n_chunks, b: chunks of the betting test and an a priori bound on ``||X_i||``.

    Returns:
        ``{site: SiteAccumulator}``.
    """
    names, n = list(blocks), x.shape[0]
    if n < 2 * n_chunks or n < 4:
        raise ValueError(f"probe n == {n}, must be >= max(4, 2 n_chunks) == {max(4, 2 * n_chunks)}.")
    accs = {s: SiteAccumulator(blocks[s].d, blocks[s].r, n, n_chunks, b) for s in names}
    model.eval()
    with SiteProbe(model, names) as probe:
        for i, j in _batches(n, 0, n, batch_size):
            probe.reset()
            ms = probe.grads(per_sample_loss(model(x[i:j]), y[i:j], loss).sum())   # one backward, every site
            with torch.no_grad():
                for s, acc in accs.items():
                    acc.update(to_tokens(ms[s], getattr(blocks[s], "layout", None)), blocks[s].phi(probe.states[s]))
            if soft_y is not None:
                probe.reset()
                ms = probe.grads(per_sample_loss(model(x[i:j]), soft_y[i:j], loss).sum())
                for s in names:
                    accs[s].add_m_bar(ms[s])
            if progress is not None:
                progress(j - i)
    return accs


def _math_attention():
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel([SDPBackend.MATH])


def _derivatives(model, site, block, x, y, loss, base_V, direction, order: int):
    """Per-sample losses ``(n,)`` and ``dR/ds`` (``order >= 1``: one backward), ``d2R/ds2`` (``order == 2``:
    double backward) of their sum at ``s = 0`` for ``V = base_V + s direction`` (``order == 0``: the
    losses only, without a graph)."""
    s = torch.zeros((), dtype=base_V.dtype, requires_grad=order > 0)
    V = base_V + s * direction

    def add(u):
        return from_tokens(block.phi(u) @ V.T.to(u.dtype), u, getattr(block, "layout", None))

    with torch.set_grad_enabled(order > 0), add_at_site(model, site, add), _math_attention():
        values = per_sample_loss(model(x), y, loss)   # fused attention kernels lack double backward
        if order == 0:
            return values, 0.0, 0.0
        (d1,) = torch.autograd.grad(values.sum(), s, create_graph=order == 2)
        if order == 1:
            return values.detach(), float(d1), 0.0
        (d2,) = torch.autograd.grad(d1, s) if d1.requires_grad else (torch.zeros(()),)
    return values.detach(), float(d1.detach()), float(d2)


def _mean_loss_derivatives(model, site, block, x, y, loss, base_V, direction, batch_size, replay=None,
                           order: int = 2):
    """``(R, dR/ds, d2R/ds2)`` at ``s = 0`` for ``V = base_V + s direction`` (means over ``x``;
    ``order == 0``: ``R`` only, the derivatives 0). With a :class:`~numerics._replay.SiteReplay` the
    part of the network before the site is run once per batch (recorded, checked, then replayed)."""
    n, totals = x.shape[0], [0.0, 0.0, 0.0]
    for i, j in _batches(n, 0, n, batch_size):
        fresh = replay is not None and not replay.replayed((i, j))
        with replay.forward((i, j)) if replay is not None else contextlib.nullcontext():
            values, d1, d2 = _derivatives(model, site, block, x[i:j], y[i:j], loss, base_V, direction, order)
        if fresh and replay.replayed((i, j)):   # a new recording: a replayed forward must give the same losses
            with replay.forward((i, j)):
                again = _derivatives(model, site, block, x[i:j], y[i:j], loss, base_V, direction, 0)[0]
            replay.confirm((i, j), values, again)
        for k, v in enumerate((float(values.double().sum()), d1, d2)):
            totals[k] += v
    return [t / n for t in totals]


def site_loss(model, site: str, block, x: torch.Tensor, y: torch.Tensor, loss: str, *, batch_size: int = 256,
              replay: SiteReplay | bool = True) -> float:
    """``R(V = 0)`` on ``x`` by exactly the path of :func:`curvature_along`'s ``R(tau)`` (the zero block added at
    ``site``, the replay, the attention kernel, float64 sums): the ``R(0)`` of every direction at ``site``."""
    model.eval()
    zero = torch.zeros_like(block.V)
    rep = SiteReplay(model, site) if replay is True else (replay or None)
    return _mean_loss_derivatives(model, site, block, x, y, loss, zero, zero, batch_size, rep, order=0)[0]


def site_losses(model, blocks: dict, x: torch.Tensor, y: torch.Tensor, loss: str, *, batch_size: int = 256) -> dict:
    """:func:`site_loss` at every site of ``blocks`` (``{site: ProtocolBlock}``) with one recording forward per
    batch for all of them (:func:`numerics._replay.record_together`) instead of one per site:
    ``{site: (its SiteReplay of (model, site, x), R(0))}`` -- the same numbers as ``site_loss`` with a fresh
    replay at each site (its recording forward adds an exact zero at the site; each replay is confirmed by
    a replayed forward at ``V = 0``, as there; a site whose replay fails that check on some batch is measured
    again by ``site_loss`` with a fresh replay, so that its ``R(0)`` is that path's in every case)."""
    from numerics._replay import record_together

    model.eval()
    reps, n, total = {s: SiteReplay(model, s) for s in blocks}, x.shape[0], 0.0
    for i, j in _batches(n, 0, n, batch_size):
        with torch.no_grad(), _math_attention(), record_together(list(reps.values()), (i, j)):
            values = per_sample_loss(model(x[i:j]), y[i:j], loss)
        total += float(values.double().sum())
        for s, rep in reps.items():
            if rep.replayed((i, j)):
                zero = torch.zeros_like(blocks[s].V)
                with rep.forward((i, j)):
                    again = _derivatives(model, s, blocks[s], x[i:j], y[i:j], loss, zero, zero, 0)[0]
                rep.confirm((i, j), values, again)
    out = {s: (rep, total / n) for s, rep in reps.items()}
    for s, rep in reps.items():
        if rep._off:   # e.g. a state that is not finite: the single path's own recording forward (its zero added)
            fresh = SiteReplay(model, s)
            out[s] = (fresh, site_loss(model, s, blocks[s], x, y, loss, batch_size=batch_size, replay=fresh))
    return out


def _evaluator(model, site, block, x, y, loss, D_hat, batch_size, rep):
    """``at(tau, order=2) -> [R, dR/ds, d2R/ds2]`` along ``V = -tau D^ + s D^``, each ``tau`` evaluated once."""
    seen: dict = {}

    def at(tau: float, order: int = 2) -> list:
        if tau not in seen or seen[tau][0] < order:
            seen[tau] = (order, _mean_loss_derivatives(model, site, block, x, y, loss, -tau * D_hat, D_hat,
                                                       batch_size, rep, order))
        return seen[tau][1]
    return at


def _grid_beta(at, slope: float, c0: float, n_grid: int, max_iter: int, rtol: float, floor: float) -> BetaEstimate:
    """The largest second derivative on ``n_grid`` points of ``[0, slope/beta]``, until self-consistent."""
    beta, seen, k, done = max(abs(c0), floor), c0, 0, slope <= 0
    while not done and k < max_iter:
        k += 1
        seen = max(at(i * slope / ((n_grid - 1) * beta))[2] for i in range(n_grid))
        done = seen <= beta * (1 + rtol)
        beta = max(beta, seen)
    return BetaEstimate(beta, c0, seen, k, done)


#: **Choice** (``_descent_beta``'s upward search): the largest factor ``beta`` is raised by per forward
#: (16 before the real-size benchmark: the upward search took 4-6 forwards on GPT-2 small).
UP_JUMP = 256.0


def _usable_square(slope: float) -> bool:
    """``slope^2`` is a normal finite float (neither underflowed, even to a subnormal, nor overflowed)."""
    return sys.float_info.min <= slope * slope < math.inf


def _descent_beta(at, R0: float, slope: float, max_iter: int, rtol: float, floor: float) -> BetaEstimate:
    """The least ``beta`` (from ``slope^2 / (2 R0)`` up) whose descent inequality holds at its own step.

    ``chord(beta) = 2 (R(tau) - R0 + slope tau) / tau^2`` at ``tau = slope / beta`` (one forward); the
    inequality holds at ``beta`` iff ``chord(beta) <= beta``. Up (**Choice**, :data:`UP_JUMP`): while it
    fails, ``beta`` is raised ``UP_JUMP``-fold when the step did not lower the loss at all (``R(tau) >=
    R0``, or not finite, or ``slope^2 / beta`` (twice the promised gain) under the smallest normal float: far
    from the answer the chord says little; there it says nothing, and counts as failing), else to the larger of
    ``chord * (chord / beta)`` (the ratio repeats far from the answer) and ``slope^2 / (2 (R0 - R(tau)))``
    (the ``beta`` whose promised gain is the decrease just seen, at a shorter step), times ``1 + rtol``,
    at most ``UP_JUMP``-fold. Down: from a ``beta`` where it holds, try ``max(chord, floor) (1 + rtol)``,
    or, when that chord is at or below the last failing ``beta``, the geometric mean of that failing
    ``beta`` and the one that held (at least ``floor (1 + rtol)``); after a failing trial, ``chord (1 +
    rtol)``, or, when the chord is over 1.5 times the trial (the step lowered the loss by little: the
    chord says little), the geometric mean of the trial and the smallest ``beta`` that held; while the
    next trial is below that smallest ``beta`` divided by 1.1. Every forward
    counts against ``max_iter``. The result: the smallest ``beta`` at which it held (``R0 - R(tau) >=
    slope^2 / (2 beta)`` on the sample), ``max_curvature`` its chord and ``iterations`` the forwards; or,
    never held, the last ``beta`` evaluated (``self_consistent`` False). No descent direction (``slope``
    not ``> 0``, or ``slope^2`` not a normal finite float: under about ``1.5e-154`` it underflows and the
    chord is rounding, not curvature; or ``R0`` not finite): nothing is evaluated, ``beta = floor``,
    ``self_consistent`` False, 0 iterations (:func:`curvature_along` measures the curvature at 0 instead).
    ``R0 <= 0`` (a loss that takes negative values): the search starts at ``floor``.
    """
    s2 = slope * slope
    if not (slope > 0 and _usable_square(slope) and math.isfinite(R0)):
        return BetaEstimate(floor, math.nan, math.nan, 0, False)
    beta = max(s2 / (2 * R0), floor) if R0 > 0 else floor
    failed, passed, tried, chord, k = 0.0, None, beta, math.nan, 0

    def chord_at(b: float) -> tuple[float, float]:
        R = at(slope / b, order=0)[0]
        if not (math.isfinite(R) and s2 / b >= sys.float_info.min):   # a promised gain that underflows checks nothing
            return math.inf, 0.0
        return 2 * (R - R0 + s2 / b) * b * b / s2, R0 - R

    while k < max_iter:
        k, tried = k + 1, beta
        chord, drop = chord_at(beta)
        lowered = drop > 0
        if chord <= beta:
            passed = (beta, chord)
            trial = max(chord, floor) * (1 + rtol) if chord > failed else max(math.sqrt(failed * beta), floor * (1 + rtol))
        elif passed is None:
            failed = beta
            beta = min(UP_JUMP * beta, max(chord * (chord / beta), s2 / (2 * drop)) * (1 + rtol)) if lowered \
                else UP_JUMP * beta
            continue
        else:
            failed, trial = beta, chord * (1 + rtol) if chord <= 1.5 * beta else math.sqrt(beta * passed[0])
        if trial >= passed[0] / 1.1:
            break
        beta = trial
    if passed is None:
        return BetaEstimate(tried, math.nan, chord, k, False)
    return BetaEstimate(passed[0], math.nan, passed[1], k, True)


def curvature_along(model, site: str, block, x: torch.Tensor, y: torch.Tensor, G: torch.Tensor,
                    D: torch.Tensor, loss: str, *, n_grid: int = 5, max_iter: int = 10, rtol: float = 1e-3,
                    floor: float = 1e-8, batch_size: int = 256, replay: SiteReplay | bool = True,
                    method: str = "grid", known: tuple[float, float] | None = None
                    ) -> tuple[BetaEstimate, float, float, float]:
    """``beta`` along ``-D`` at ``site`` (THEORY §2 A-smooth), the slope, Theorem 1's gain bound and the realised gain.

    With ``D^ = D/||D||`` and ``slope = <G_x, D^>`` (``G_x`` the gradient on ``x`` itself: the bound and
    the realised gain refer to one sample), Theorem 1 with ``eta = 1/beta`` gives
    ``R(0) - R(-tau* D^) >= slope^2 / (2 beta)``, ``tau* = slope / beta``. ``method="grid"``: the
    curvature ``d^2/dtau^2 R(-tau D^)`` maximised on ``n_grid`` points of ``[0, slope/beta]`` until
    self-consistent, from ``max(|c(0)|, floor)`` (double backward; a grid can miss curvature between
    its points). ``method="descent"`` (**Choice** of ``dc.saturation``, ``dc.insert_block``): the least
    ``beta`` whose descent inequality holds at its own step (:func:`_descent_beta`: one backward for the
    slope, then one forward per iterate; when self-consistent its conclusion holds on ``x`` at the step
    taken; the least such ``beta`` is at most the segment's largest curvature; ``curvature_at_zero`` NaN).

    Args:
        model, site, block: the network, a site name and its ``ProtocolBlock`` (features).
        x, y: the sample defining ``R``; G: kept for the signature; D: ``(d, r)`` direction (non-zero).
        replay: True (the part before the site run once per batch, :mod:`numerics._replay`), a shared
            :class:`~numerics._replay.SiteReplay` of ``(model, site, x)``, or False. Same numbers.
        method: ``"grid"`` or ``"descent"``.
        floor: the least ``beta`` tried (a finite number > 0; ``beta`` divides the step ``slope / beta``).
        known: ``(R(0) or None, slope)`` on ``x`` (``"descent"``: the slope from e.g. every site's ``G_x``
            of one backward, ``<G_x, D^>``; ``R(0)`` by the path of every ``R(tau)``: :func:`site_loss`).
            ``"descent"`` with no descent direction (``slope <= 0``, or ``slope^2`` underflows: see
            :func:`_descent_beta`) measures as ``"grid"`` does, from the curvature at 0.

    Returns:
        ``(BetaEstimate, slope, gain_bound, realised_gain)``; both gains 0 when ``slope <= 0``.

    Raises:
        ValueError: a bad ``method``, ``max_iter`` or ``floor`` (``floor == 0, must be a finite number > 0.``),
            or ``D == 0``.
    """
    if method not in ("grid", "descent"):
        raise ValueError(f"method == {method!r}, must be one of ['descent', 'grid'].")
    if not (isinstance(max_iter, int) and max_iter >= 1):
        raise ValueError(f"max_iter == {max_iter!r}, must be an int >= 1.")
    check_number("floor", floor)
    norm = float(D.norm())
    if not norm > 0:
        raise ValueError("||D|| == 0, must be > 0 (no first-order direction).")
    D_hat = (D / norm).to(block.V.dtype)
    model.eval()
    at = _evaluator(model, site, block, x, y, loss, D_hat, batch_size,
                    SiteReplay(model, site) if replay is True else (replay or None))
    R0, slope, c0 = (at(0.0, order=0)[0] if known[0] is None else float(known[0]), float(known[1]), math.nan) \
        if method == "descent" and known is not None else at(0.0, order=2 if method == "grid" else 1)
    descent = method == "descent" and slope > 0 and _usable_square(slope) and math.isfinite(R0)
    if method == "descent" and not descent:
        R0, slope, c0 = at(0.0)        # no usable descent: the curvature at 0 is the only beta there is
    est = _descent_beta(at, R0, slope, max_iter, rtol, floor) if descent else \
        _grid_beta(at, slope, c0, n_grid, max_iter, rtol, floor)
    if slope <= 0:
        return est, slope, 0.0, 0.0
    return est, slope, slope**2 / (2 * est.beta), R0 - at(slope / est.beta, order=0)[0]


@torch.no_grad()
def loss_change(model, site: str, block, V: torch.Tensor, x: torch.Tensor, y: torch.Tensor, loss: str,
                batch_size: int = 1024) -> float:
    """``R_n(f) - R_n(f + h_V at site)``: the loss reduction of inserting ``h_V`` (mean over ``x``)."""
    model.eval()
    n, before, after = x.shape[0], 0.0, 0.0
    for i, j in _batches(n, 0, n, batch_size):
        before += float(per_sample_loss(model(x[i:j]), y[i:j], loss).sum())
        with add_at_site(model, site, lambda u: from_tokens(block.phi(u) @ V.T.to(u.dtype), u,
                                                            getattr(block, "layout", None))):
            after += float(per_sample_loss(model(x[i:j]), y[i:j], loss).sum())
    return (before - after) / n if math.isfinite(before) else math.nan
