"""The run study's per-draw stages: ``S``, block training with (C2), ``T`` and Monte Carlo, routes.

Given a :class:`~numerics.studies.run._stages.Fixed` (stage 1), one draw is one ``data_seed``:

2. :func:`draw_samples` -- the training samples ``S`` of ``B`` draws as states
   ``u = f_bot(x)`` (``(B, M, d)``, the only sample held in memory: training needs random
   access), each draw's ``G_S`` and train-set jumpboard ``f~_S``;
3. :func:`select_blocks` -- all ``B`` blocks trained together
   (:func:`numerics.block_training.train_readout_blocks`), then the (C2) selection over
   ``{trained, f~_S, f~_pop}`` by ``R_S``;
4. :func:`evaluate_draw` -- the test sample ``T`` and the Monte-Carlo population sample,
   both streamed in chunks (memory bounded for any ``K`` and population size), with the
   loss variances and the pass over ``S`` the THEORY §6 variants need
   (:mod:`numerics.studies.run._variants`); :func:`certify_draw` -- every quantity, the
   routes through :func:`bounds.routes.evaluate_routes` and the variants through
   :func:`bounds.variant_routes.evaluate_variants` only.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Mapping, Sequence

import torch

from numerics._numerics import MeanVar
from numerics.seeding import Streams
from numerics.studies.run._moments import add_moments as _add_moments
from numerics.studies.run._moments import moment_acc as _moment_acc
from numerics.studies.run._moments import risk as _risk
from numerics.studies.run._moments import sample_moments as _sample_moments  # noqa: F401 (tests, validity)
from numerics.studies.run._selection import Selection
from numerics.studies.run._stages import Fixed, cross_gradient_on_states, jumpboard_step

__all__ = ["DELTA_R_LEVEL", "Certificate", "Evaluation", "SampleGroup", "Selection", "certify_draw",
           "draw_samples", "evaluate_draw", "select_blocks"]

DELTA_R_LEVEL = 5e-4  # failure probability of the lower confidence bound on Delta_R (added to Theorem 2's)
CANDIDATES = ("old", "new", "jump_S", "jump_pop")


@dataclasses.dataclass(frozen=True)
class SampleGroup:
    """Stage 2 input: the training samples of ``B`` draws and their train-set jumpboards."""

    streams: tuple[Streams, ...]
    u: torch.Tensor            # (B, M, *state): f_bot of S
    y: torch.Tensor            # (B, M, ...)
    G_S: torch.Tensor          # (B, d, r)
    eta_S: tuple[float, ...]
    V_S: torch.Tensor          # (B, d, r): f~_S = f_{V = -eta_S G_S}


@dataclasses.dataclass(frozen=True)
class Evaluation:
    """Stage 3 output for one draw: test losses, population estimates, (optional) moments."""

    L_test: Mapping[str, float]
    R: Mapping[str, float]           # R_old, R_new, R_jump_pop and their stderrs (Monte Carlo)
    delta_R_hat: float
    delta_R_stderr: float
    n_population: int
    moments_S: object = None         # ReadoutMoments of S / T (exact class; the validity study's E_S, E_T)
    moments_T: object = None
    variances_T: Mapping[str, float] = dataclasses.field(default_factory=dict)   # var_T_new, var_T_old, var_T_jump_S
    S_stats: object = None           # _run_variants.SStatistics: var_S_jump_pop, the Rademacher stream on S


@dataclasses.dataclass(frozen=True)
class Certificate:
    """Stage 4 output: the quantities, the setup fed to ``bounds`` and its report."""

    quantities: Mapping
    setup: object
    report: object
    variants: object = None          # bounds.variant_routes.VariantsReport (THEORY §6, Choice)
    S_stats: object = None           # the variants' S statistics at the certified cap (_run_variants.SStatistics)


# ------------------------------------------------------------------------------ stage 2: S
def draw_samples(fixed: Fixed, streams: Sequence[Streams]) -> SampleGroup:
    """``S`` of each draw (role ``S`` of its data seed) as states, ``G_S`` and ``f~_S``."""
    M, B = fixed.cfg.sizes.M, len(streams)
    u = y = None
    for b, st in enumerate(streams):   # filled in place: memory holds the B samples once
        start = 0
        for x, yc in fixed.task.sample_chunks(M, st.seed_for("S")):
            uc = states_of(fixed, x)
            if u is None:
                u = torch.empty(B, M, *uc.shape[1:], dtype=uc.dtype)
                y = torch.empty(B, M, *yc.shape[1:], dtype=yc.dtype)
            u[b, start:start + x.shape[0]], y[b, start:start + x.shape[0]] = uc, yc
            start += x.shape[0]
    G_S = torch.stack([cross_gradient_on_states(fixed.expanded, u[b], y[b], fixed.loss) for b in range(len(streams))])
    steps = [jumpboard_step(G_S[b], fixed.signal.beta.beta, fixed.const.nu_V)[0] for b in range(len(streams))]
    V_S = -torch.tensor(steps, dtype=G_S.dtype)[:, None, None] * G_S
    return SampleGroup(tuple(streams), u, y, G_S, tuple(steps), V_S)


@torch.no_grad()
def states_of(fixed: Fixed, x: torch.Tensor) -> torch.Tensor:
    return fixed.net.bottom(x, fixed.at)


# ------------------------------------------------------------------------------ stage 3: training, (C2)
def select_blocks(fixed: Fixed, group: SampleGroup) -> Selection:
    """Train every draw's block together, then (C2): ``f_new`` = best of trained, ``f~_S``, ``f~_pop`` on ``S``.

    The family's own training and selection (:data:`numerics.studies.run._family.RUN_FAMILIES`):
    ``readout`` trains ``V`` of every draw at once, ``full`` trains ``U, b, V``.
    """
    from numerics.studies.run._family import run_family

    return run_family(fixed.expanded.block.family).select(fixed, group)


# ------------------------------------------------------------------------------ stage 4: T, Monte Carlo
def _candidate_V(fixed: Fixed, group: SampleGroup, sel: Selection, b: int) -> torch.Tensor:
    V0 = torch.zeros_like(sel.V_new[b])
    return torch.stack([V0, sel.V_new[b], group.V_S[b], fixed.signal.V_pop])   # CANDIDATES order


@torch.no_grad()
def evaluate_draw(fixed: Fixed, group: SampleGroup, sel: Selection, b: int) -> Evaluation:
    """``L_test`` of every candidate on ``T`` and the Monte-Carlo population risks (streamed).

    In the exact class (readout at the top, squared loss) the risks on ``S`` and ``T`` are
    read from their moments (kept in the result for the validity study's exact events).
    """
    from numerics.block_training import candidate_losses, candidate_outputs
    from numerics.sampled_task import population_risk_chunks

    from numerics.studies.run._variants import T_VARIANCE_KEYS, measure_S

    sizes, st, Vs = fixed.cfg.sizes, group.streams[b], _candidate_V(fixed, group, sel, b)[None]
    exact = sel.moments_S is not None
    acc_T = _moment_acc(fixed) if exact else None
    total, spread = torch.zeros(len(CANDIDATES), dtype=torch.float64), MeanVar()
    for x, y in fixed.task.sample_chunks(sizes.K, st.seed_for("T")):
        u = states_of(fixed, x)
        losses = candidate_losses(fixed.expanded, u[None], y[None], Vs, fixed.loss)[0]   # (candidates, chunk)
        spread.add(losses.T)                  # sample variances of the losses (THEORY §6 Bernstein tails)
        if exact:      # L_test of every V from the moments of T (THEORY §4)
            _add_moments(fixed, acc_T, u, y)
        else:
            total += losses.sum(dim=1)
    var_T = spread.variance()
    variances = {key: float(var_T[CANDIDATES.index(c)]) for c, key in T_VARIANCE_KEYS.items()}
    mom_T = acc_T.result() if exact else None
    L_test = (dict(zip(CANDIDATES, [_risk(fixed, mom_T, V) for V in Vs[0]])) if exact
              else dict(zip(CANDIDATES, (total / sizes.K).tolist())))
    mv = MeanVar()
    for x, risk in population_risk_chunks(fixed.task, sizes.population, st.seed_for("population")):
        out = candidate_outputs(fixed.expanded, states_of(fixed, x)[None], Vs[:, [0, 1, 3]])   # old, new, jump_pop
        risks = torch.stack([risk(o) for o in out.reshape(3, x.shape[0], -1)], dim=1)   # exact over y, or labelled
        mv.add(torch.cat([risks, risks[:, :1] - risks[:, 2:3]], dim=1))      # + the paired difference
    mean, se = mv.result()
    R = {"R_old": mean[0], "R_new": mean[1], "R_jump_pop": mean[2], "R_old_stderr": se[0], "R_new_stderr": se[1],
         "R_jump_pop_stderr": se[2]}
    ev = Evaluation(L_test, {k: float(v) for k, v in R.items()}, float(mean[3]), float(se[3]), sizes.population,
                    sel.moments_S[b] if exact else None, mom_T, variances, measure_S(fixed, group, b))
    from numerics.studies.run._family import run_family

    return run_family(fixed.expanded.block.family).reevaluate(fixed, group, sel, b, ev)   # full: its own features


# ------------------------------------------------------------------------------ stage 4: quantities, routes
def _theorem1(fixed: Fixed, R_old: float) -> dict:
    """Theorem 1 as it applies at the step used (THEORY §3), read from ``bounds``."""
    from bounds import jumpboard_lower_bound, jumpboard_risk_bound

    sig = fixed.signal
    G_sq, beta = float(sig.G.pow(2).sum()), sig.beta.beta
    gain_at_step = -float(jumpboard_risk_bound(0.0, G_sq, beta, sig.eta))   # eta (1 - beta eta / 2) ||G||^2
    return {"eta": sig.eta, "eta_capped": sig.capped, "delta_R_lower": gain_at_step,
            "delta_R_lower_optimal_step": float(jumpboard_lower_bound(G_sq, beta)),
            "jumpboard_risk_bound": float(jumpboard_risk_bound(R_old, G_sq, beta, sig.eta)),
            "G_norm": math.sqrt(G_sq), "beta": beta, "beta_self_consistent": sig.beta.self_consistent}


def _block_of(fixed: Fixed, group: SampleGroup, sel: Selection, b: int) -> tuple[str, dict, dict]:
    """The Setup's family and block: the cap (grid: the smallest holding ``f_new`` and both
    jumpboards, chosen after training and paid by the union bound) and the quantities."""
    from numerics.studies.run._family import chosen_cap, run_family, setup_block

    c, caps = fixed.const, fixed.const.caps
    norms = (float(sel.V_new[b].norm()), float(group.V_S[b].norm()), float(fixed.signal.V_pop.norm()))
    nu_V = chosen_cap(caps, *norms) if caps.n_grid > 1 else c.nu_V
    family, block = setup_block(caps, fixed.expanded.block.d, c.L_top_certified, nu_V)
    q = {"family": family, "nu_V": nu_V, "nu_V_max": c.nu_V, "n_grid": caps.n_grid, "cap_ratio": caps.cap_ratio}
    q.update(run_family(family).cap_quantities(fixed, sel, b))    # full: nu_U and f_new's ||[U b]||_F
    return family, block, q


def certify_draw(fixed: Fixed, group: SampleGroup, sel: Selection, ev: Evaluation, b: int) -> Certificate:
    """Every quantity of draw ``b`` and both routes (plus ``any`` and ``population_risk``)."""
    from bounds.confidence import empirical_bernstein_lower
    from bounds.routes import evaluate_routes
    from numerics.studies.run._family import run_family
    from numerics.studies.run._outputs import setup_of_quantities
    from numerics.studies.run._variants import evaluate_variants_of_draw

    cfg, c, n = fixed.cfg, fixed.const, ev.n_population
    # stderr = std(ddof=1)/sqrt(n): the unbiased sample variance is stderr^2 n; paired differences in [-B, B]
    delta_R = float(empirical_bernstein_lower(ev.delta_R_hat, ev.delta_R_stderr ** 2 * n, n, 2.0 * c.B, DELTA_R_LEVEL))
    R_S, L = {k: float(v[b]) for k, v in sel.R_S.items()}, ev.L_test
    q = {"delta_R": delta_R, "delta_R_hat": ev.delta_R_hat, "delta_R_stderr": ev.delta_R_stderr,
         "delta_R_failure": DELTA_R_LEVEL, **_theorem1(fixed, ev.R["R_old"]), "eta_S": group.eta_S[b],
         "G_S_norm": float(group.G_S[b].norm()),
         "delta_erm_pop": R_S["jump_pop"] - R_S["new"], "delta_erm_S": R_S["jump_S"] - R_S["new"],
         "delta_test_R": L["old"] - L["jump_S"], "V_norm": float(sel.V_new[b].norm()),
         **{k: getattr(c, k) for k in ("rho", "rho_phi", "nu_V", "L_top_certified", "B", "L_loss")},
         "extra_head_input": c.extra_head_input, "d": fixed.expanded.block.d, "r": fixed.expanded.block.r,
         **{k: getattr(cfg.sizes, k) for k in ("M", "K", "delta", "delta_prime")},
         "jumpboard_returned": sel.returned[b] != "trained", "returned": sel.returned[b]}
    family, _, q_caps = _block_of(fixed, group, sel, b)
    q.update(q_caps)
    setup = setup_of_quantities(q, L["old"], ev.R["R_old"])
    report = evaluate_routes(setup, cfg.level)
    q.update(eps_M=float(report.eps_M), eps_K=float(report.eps_K))
    variances = ev.variances_T
    if run_family(family).math.trains_features:   # the measured variances are the readout candidates' losses
        # (the initial features): not those of a block that trains its features
        variances = {k: v for k, v in variances.items() if k == "var_T_old"}
    s_stats = ev.S_stats
    if s_stats.rademacher is not None and s_stats.rademacher.nu_V != q["nu_V"]:   # a grid cap chosen after training
        s_stats = dataclasses.replace(s_stats, rademacher=s_stats.rademacher.at_cap(q["nu_V"]))
    variants = evaluate_variants_of_draw(cfg, setup, variances, s_stats)
    q.update(_variant_quantities(variances, s_stats))
    return Certificate(q, setup, report, variants, s_stats)


def _variant_quantities(variances: Mapping[str, float], s_stats) -> dict:
    """The measured inputs of the variants (``[variants]`` of ``bounds_config.toml``) as quantities."""
    rad = s_stats.rademacher
    out = {"var_S_jump_pop": s_stats.var_S_jump_pop, **variances}
    if rad is not None:
        out.update(rad_hat=rad.value, rad_hat_mc_error=rad.mc_error, delta_mc=rad.delta_mc, n_draws=rad.n_draws,
                   phi_sq_sum=rad.phi_sq_sum, rad_S_jensen=rad.exact_bracket()[1])
    return out
