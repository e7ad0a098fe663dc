"""One validity record per draw: the run's pipeline on fresh ``(S, T)``, plus the truth it is checked against.

The *truth* (:class:`Truth`) is fixed before ``S`` and ``T`` (role ``check_population``):

* exact class (readout block at the top, squared loss, THEORY §4): the population
  moments of the exact teacher (``y``-expectation in closed form, a large streamed
  Monte-Carlo sample over ``x``), so ``R(V)`` of every ``V`` is a quadratic and the events
  ``E_S``/``E_T`` are checked as stated -- ``sup_{||V||_F <= nu_V} |R - R_n| > eps`` -- by the
  exact trust-region supremum. Its Monte-Carlo error is estimated by the disagreement of
  the two half-samples (``sup |R_a - R_b| / 2`` over the class) and recorded;
* otherwise: ``R`` of the functions the chains use (``f_old``, ``f_new``, ``f~_S``,
  ``f~_pop``) on the same large sample; events are then checked at those functions only,
  which is a necessary condition for the event, not the event itself.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Sequence

import torch

from numerics.seeding import Streams
from numerics.sampled_task import estimate_tolerance, population_is
from numerics.studies.run import (Fixed, certify_draw, draw_samples, evaluate_draw, is_exact_class, select_blocks)

__all__ = ["Truth", "measure_group", "population_truth"]


@dataclasses.dataclass(frozen=True)
class Truth:
    """The reference values of population quantities (docstring of ``numerics.studies.validity._draws``)."""

    exact: bool
    n: int
    moments: object = None        # ReadoutMoments of the population (exact class)
    moment_error: float = float("nan")
    halves: tuple = ()            # the two half-sample moments (their disagreement on another ball: E_U_deviation)


@torch.no_grad()
def population_truth(fixed: Fixed, n: int) -> Truth:
    """Population moments from ``n`` streamed samples (exact class), else just the sample size."""
    from numerics.estimators import MomentAccumulator, sup_deviation

    if not is_exact_class(fixed):
        return Truth(False, n)
    k, r = fixed.net.head.weight.shape[0], fixed.expanded.block.r
    halves = [MomentAccumulator(k, r), MomentAccumulator(k, r)]
    seed, noise = fixed.streams.seed_for("check_population"), fixed.task.noise_variance
    for x in fixed.task.sample_x_chunks(n, seed):
        u = fixed.net.bottom(x, fixed.at)
        a = fixed.net.head(u) - fixed.task.mean(x)           # E_{y|x}: the noise adds Var(xi) to ||a||^2
        phi, h = fixed.expanded.block.features(u), x.shape[0] // 2
        halves[0].add(a[:h], phi[:h], noise)                 # two independent halves: their disagreement
        halves[1].add(a[h:], phi[h:], noise)                 # estimates the Monte-Carlo error
    a, b = (h.result() for h in halves)
    pop = _combine(a, b)
    err = sup_deviation(a, b, fixed.net.head.weight, fixed.const.nu_V)["sup"] / 2
    return Truth(True, n, pop, err, (a, b))


def _combine(a, b):
    from numerics.estimators import ReadoutMoments

    n = a.n + b.n
    mix = lambda x, y: (a.n * x + b.n * y) / n   # noqa: E731
    return ReadoutMoments(n, mix(a.m0, b.m0), mix(a.C, b.C), mix(a.Sigma, b.Sigma))


@torch.no_grad()
def _check_risks(fixed: Fixed, truth: Truth, Vs: torch.Tensor, block_new=None,
                 paired: dict | None = None) -> tuple[list[float], list[float]]:
    """``R`` of each candidate ``V`` (old, new, jump_S, jump_pop) by the truth, and the standard
    errors of these Monte-Carlo means over the ``check_population`` sample (0 in the exact class);
    with ``block_new`` (a trained full block, its own ``U, b``) ``R_new`` is that block's, in the
    same pass. A sampled task's truth is the mean loss of its labelled sample (:mod:`numerics.sampled_task`).

    ``paired`` (a dict, filled for a sampled task): the covariance of the per-sample vector
    ``z = (l_old, l_1 - l_old, ..., l_{C-1} - l_old)`` over the ``check_population`` sample
    (``truth_cov``, unbiased, in that basis ``truth_basis``) and its size ``truth_n``: the standard
    error of any linear combination of the truth's risks -- a *paired* difference such as
    ``R(f_new) - R(f_old)`` on one shared truth sample included -- is ``sqrt(c^T cov c / n)``
    (:func:`numerics.studies.validity._testable.truth_se`)."""
    from numerics.block_training import candidate_outputs
    from numerics.estimators import risk_from_moments
    from numerics.sampled_task import population_risk_chunks
    from numerics.studies.run import on_states

    if truth.exact:     # the exact class is the readout at the top: no block of its own
        return [risk_from_moments(truth.moments, fixed.net.head.weight, V) for V in Vs], [0.0] * len(Vs)
    total = torch.zeros(Vs.shape[0], dtype=torch.float64)
    squares = torch.zeros(Vs.shape[0], dtype=torch.float64)
    acc = _PairedMoments(Vs.shape[0])
    own = None if block_new is None else on_states(fixed.expanded, block_new)
    for x, risk in population_risk_chunks(fixed.task, truth.n, fixed.streams.seed_for("check_population")):
        u = fixed.net.bottom(x, fixed.at)
        out = candidate_outputs(fixed.expanded, u[None], Vs[None]).reshape(Vs.shape[0], x.shape[0], -1)
        per = [risk(o) for o in out]
        if own is not None:
            per[1] = risk(own(u))
        total += torch.stack([p.sum() for p in per])
        squares += torch.stack([p.double().pow(2).sum() for p in per])
        acc.add(torch.stack([p.double().reshape(-1) for p in per]))
    mean = total / truth.n
    var = (squares / truth.n - mean**2).clamp_min(0) * truth.n / max(truth.n - 1, 1)
    if paired is not None:
        paired.update(acc.result())
    return mean.tolist(), (var / truth.n).sqrt().tolist()


class _PairedMoments:
    """Mean and co-moment of ``z = (l_0, l_1 - l_0, ...)`` over chunks (Chan's merge, float64: the
    differences are accumulated as such, never as a difference of two large second moments)."""

    def __init__(self, c: int):
        self.n, self.mean, self.m2 = 0, torch.zeros(c, dtype=torch.float64), torch.zeros(c, c, dtype=torch.float64)

    def add(self, losses: torch.Tensor) -> None:
        z = torch.cat([losses[:1], losses[1:] - losses[:1]])        # (C, n_chunk)
        nb = z.shape[1]
        if nb == 0:
            return
        mb = z.mean(dim=1)
        zc = z - mb[:, None]
        m2b = zc @ zc.T
        n = self.n + nb
        d = mb - self.mean
        self.m2 += m2b + torch.outer(d, d) * (self.n * nb / n)
        self.mean += d * (nb / n)
        self.n = n

    def result(self) -> dict:
        cov = self.m2 / max(self.n - 1, 1)
        return {"truth_cov": cov.tolist(), "truth_n": int(self.n)}


#: The basis of a record's ``truth_cov``: ``l_old`` and each candidate's paired difference from it.
TRUTH_BASIS = ("l_old", "d_new", "d_jump_S", "d_jump_pop", "d_localised")


def _deviations(fixed: Fixed, truth: Truth, ev, nu: float) -> dict:
    """``sup |R - R_S|`` and ``sup |R - L_test|`` over the class capped at ``nu`` -- the cap the
    draw certified (a grid cap is chosen after training) -- (exact class only)."""
    from numerics.estimators import sup_deviation

    if not truth.exact or ev.moments_S is None:
        return {}
    A = fixed.net.head.weight
    out = {}
    for event, mom in (("E_S", ev.moments_S), ("E_T", ev.moments_T)):
        s = sup_deviation(truth.moments, mom, A, nu)
        out[event] = {"sup": s["sup"], "upper": s["upper"], "lower": s["lower"]}
    return out


def _record(fixed: Fixed, truth: Truth, group, sel, ev, cert, b: int, seconds: float, loc=None) -> dict:
    from numerics.studies.validity._localised import E_U_deviation, localised_records

    q, rep = cert.quantities, cert.report
    Vs = [torch.zeros_like(sel.V_new[b]), sel.V_new[b], group.V_S[b], fixed.signal.V_pop]
    measured = loc is not None and loc.measure is not None
    Vs = torch.stack(Vs + ([loc.measure.V] if measured else []))     # + the localised f_new (THEORY §6b)
    own = sel.blocks_new[b] if sel.blocks_new is not None else None     # a trained full block: its own U, b
    paired: dict = {}
    (R_old, R_new, R_jS, R_jp, *R_loc), stderrs = _check_risks(fixed, truth, Vs, own, paired)
    R_S, L = {k: float(v[b]) for k, v in sel.R_S.items()}, ev.L_test
    values = {"L_test_old": L["old"], "L_test_new": L["new"], "L_test_jump_S": L["jump_S"],
              "L_test_jump_pop": L["jump_pop"], "R_S_old": R_S["old"], "R_S_new": R_S["new"],
              "R_S_jump_S": R_S["jump_S"], "R_S_jump_pop": R_S["jump_pop"],
              "R_old": R_old, "R_new": R_new, "R_jump_S": R_jS, "R_jump_pop": R_jp, "delta_R_true": R_old - R_jp,
              "R_old_estimate": ev.R["R_old"], "R_new_estimate": ev.R["R_new"], "n_population": ev.n_population,
              **{k: q[k] for k in ("delta_R", "delta_R_hat", "delta_R_stderr", "delta_R_failure", "delta_erm_pop",
                                   "delta_erm_S", "delta_test_R", "eps_M", "eps_K", "B", "M", "K", "delta",
                                   "delta_prime", "eta", "eta_S", "V_norm", "nu_V")},
              **estimate_tolerance(fixed.task, stderrs)}
    if paired:      # a sampled task: the paired truth (docstring of _check_risks); basis names of z
        values.update(paired, truth_basis=list(TRUTH_BASIS[:len(Vs)]))
    routes = {name: {k: r[k] for k in ("bound", "failure_probability", "certified", "improvement")}
              for name, r in (("population", rep.population.to_dict()), ("direct", rep.direct.to_dict()),
                              ("population_risk", rep.population_risk.to_dict()))}
    a = rep.any_route.to_dict()
    routes["any"] = {k: a[k] for k in ("certified", "failure_probability", "routes_included", "events")}
    routes.update(_variant_routes(cert, ev))
    deviations = _deviations(fixed, truth, ev, q["nu_V"])
    if measured:
        routes.update(localised_records(loc, {"R_old": R_old, "R_new": R_loc[0], "R_jump_pop": R_jp}, L["old"]))
        if truth.exact and ev.moments_S is not None:      # E_U exactly: the trust-region supremum over the ball
            deviations["E_U"] = E_U_deviation(truth, ev.moments_S, fixed.net.head.weight, loc.cls.nu)
    st = group.streams[b]
    return {"seed": st.seed, "data_seed": st.data_seed, "population_is": population_is(fixed.task), "values": values,
            "deviations": deviations,
            "routes": routes, "returned": sel.returned[b], "level": rep.level, "seconds": seconds}


#: Risk symbols: a variant's record holds every other symbol of its chain (the risks come from the truth).
_RISKS = frozenset(("L_test_old", "L_test_new", "L_test_jump", "R_old", "R_new", "R_jump", "RS_new", "RS_jump"))


def _chain_symbols(theorem) -> set[str]:
    exprs = [theorem.conclusion, theorem.failure_probability] + [p.relation for p in theorem.premises]
    exprs += [e.probability for e in theorem.events] + [e.tail.deviation for e in theorem.events if e.tail]
    return {x.name for e in exprs for x in e.free_symbols} - _RISKS


def _variant_routes(cert, ev) -> dict:
    """Each THEORY §6 variant of the draw: its verdict and every non-risk value of its chain.

    Empirical variants also get ``eps_*_star`` (the uniform deviation at the sure lower bound of
    the exact ``rad_S``: the validity study checks ``E_S`` against it, conservatively) and
    ``rad_S_lower``/``rad_S_upper``/``rad_S_estimate`` (``E_MC`` fails unless the estimate the
    chain used is at least the sure upper bound, Jensen's).
    """
    from bounds._statement import evaluate
    from bounds.variants import VARIANTS

    if cert.variants is None:
        return {}
    out, rad = {}, (cert.S_stats or ev.S_stats).rademacher
    for name, r in cert.variants.variants.items():
        T, v = VARIANTS[name], r.values
        values = {k: float(v[k]) for k in _chain_symbols(T) if k in v}
        star = next((e.tail for e in T.events if e.tail is not None and e.tail.kind == "uniform_empirical"), None)
        if star is not None and rad is not None:
            lower, upper = rad.exact_bracket()
            values[star.symbol.name] = float(evaluate(star.deviation, {**v, "rad_S": lower}))
            estimate = min(float(v["rad_S_jensen"]), float(v["rad_S_mc"]) + float(v["rad_S_mc_err"]))
            values.update(rad_S_lower=lower, rad_S_upper=upper, rad_S_estimate=estimate)
        d = r.to_dict()
        out[name] = {**{k: d[k] for k in ("bound", "failure_probability", "certified", "improvement")},
                     "values": values}
    a = cert.variants.any_route.to_dict()
    out["any_with_variants"] = {k: a[k] for k in ("certified", "failure_probability", "routes_included", "events",
                                                  "scale")}
    return out


def measure_group(fixed: Fixed, truth: Truth, streams: Sequence[Streams]) -> list[dict]:
    """The records of the draws ``streams`` (their blocks trained together)."""
    from numerics.studies.run import certify_localised

    t0 = time.perf_counter()
    group = draw_samples(fixed, streams)
    sel = select_blocks(fixed, group)
    shared = (time.perf_counter() - t0) / len(streams)
    out = []
    for b in range(len(streams)):
        t1 = time.perf_counter()
        ev = evaluate_draw(fixed, group, sel, b)
        cert = certify_draw(fixed, group, sel, ev, b)
        loc = certify_localised(fixed, group, sel, ev, b, terms=False)   # M_needed without the per-term table
        out.append(_record(fixed, truth, group, sel, ev, cert, b, shared + time.perf_counter() - t1, loc))
    return out
