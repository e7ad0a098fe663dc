"""The run study: reference model, insertion, block training, measurements, Theorems 2-3.

:func:`run_experiment` (THEORY §1-§6) on a synthetic teacher task:

1. train a reference post-norm network ``f_old`` on its own sample (independent of ``S``
   and ``T``, so ``H_new`` is fixed before ``S`` and ``T`` are drawn);
2. insert a zero-output ``readout`` block at ``at`` with a Frobenius cap ``nu_V`` fixed
   *before* training (no cap grid is needed: ``n_grid = 1``);
3. population signal ``G`` (exact ``y``-expectation: soft targets give ``m_bar``, §8),
   smoothness ``beta`` (§2), jumpboards ``f~_pop``, ``f~_S`` with step
   ``eta = min(1/beta, nu_V/||G||)`` so that they stay in the capped class (§3: Theorem 1
   holds for every ``0 < eta <= 1/beta``);
4. train the block on ``S`` with the (C2) fallback over both jumpboards;
5. measure every quantity and evaluate both routes *only* through
   :func:`bounds.routes.evaluate_routes`.

``Delta_R`` is a Monte-Carlo estimate over ``x``; the value fed to Theorem 2 is its
finite-sample empirical-Bernstein lower bound at level ``DELTA_R_LEVEL`` (paired
conditional-risk differences lie in ``[-B, B]``), and that level is added to the
population route's failure probability (``Setup.delta_R_failure``): Theorem 2 stays valid
with any ``Delta_R' <= Delta_R``, and the event ``Delta_R' > Delta_R`` joins the union bound.
"""
from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any, Mapping

import torch

from bounds._io import atomic_write_text, versions  # noqa: F401  (re-exported)
from bounds._validation import Interval, InputError
from numerics._config import check_schema, merge_config
from numerics.builders import MODEL_SCHEMA, REFERENCE_SCHEMA, TASK_SCHEMA, make_task, train_reference
from numerics.diagnostics import probe_diagnostics
from numerics.studies._run_outputs import bounds_config, format_table, to_json, to_toml, write_outputs  # noqa: F401

__all__ = ["CONFIG_SCHEMA", "DEFAULT_DEMO_CONFIG", "atomic_write_text", "bounds_config", "format_table",
           "merge_config", "run_experiment", "to_json", "to_toml", "validate_config", "write_outputs"]

DELTA_R_LEVEL = 5e-4  # failure probability of the lower confidence bound on Delta_R (added to Theorem 2's)
N_PROBE = 200_000  # probe sample of the assumption diagnostics (independent of S, T, population)

_nonneg = Interval(0)
_int = lambda lo: Interval(lo, integer=True)  # noqa: E731
_unit = Interval(0, 1, closed_low=False, closed_high=False)
_pos = Interval(0, closed_low=False)

#: Allowed values, as data: an :class:`Interval` or a tuple of choices (STYLE: Errors).
CONFIG_SCHEMA: Mapping[str, Mapping[str, Any]] = {
    "": {"seed": _int(0), "level": Interval(0, 1, closed_low=False)},
    "task": TASK_SCHEMA,
    "model": MODEL_SCHEMA,
    "reference": REFERENCE_SCHEMA,
    "insertion": {"at": _int(-1), "family": ("readout",), "width": _int(1), "seed": _int(0),
                  "output_cap": _pos},
    "block_training": {"optimizer": ("sgd", "momentum", "adam"), "lr": _pos, "steps": _int(0),
                       "batch_size": _int(1)},
    "sizes": {"M": _int(2), "K": _int(2), "population": _int(2), "delta": _unit, "delta_prime": _unit},
}

#: The demo (``depthcert demo``): a weak (deliberately under-trained, 15 Adam steps)
#: depth-1 width-4 reference against a depth-4 teacher, a readout block at the top (``L_top`` is
#: then exactly ``||A||_2`` and the squared risk is quadratic in ``V``), small ``d``.
DEFAULT_DEMO_CONFIG: dict = {
    "seed": 4,
    "level": 0.05,
    "task": {"kind": "regression", "d_in": 3, "depth": 4, "width": 2, "noise_std": 0.05, "noise_clip": 3.0,
             "mean_bound": 1.0, "head_bias": False},
    "model": {"width": 4, "depth": 1, "norm": "rms", "eps_n": 0.0},
    "reference": {"n": 4000, "optimizer": "adam", "lr": 0.01, "steps": 15, "batch_size": 256},
    "insertion": {"at": -1, "family": "readout", "width": 16, "seed": 2, "output_cap": 0.5},
    "block_training": {"optimizer": "sgd", "lr": 0.5, "steps": 400, "batch_size": 8192},
    "sizes": {"M": 4_000_000, "K": 4_000_000, "population": 1_000_000, "delta": 0.025, "delta_prime": 0.025},
}




def validate_config(config: Mapping) -> dict:
    """Merge ``config`` over :data:`DEFAULT_DEMO_CONFIG` and check it against :data:`CONFIG_SCHEMA`.

    Raises:
        InputError: unknown section/key, or a value outside its range (names the dotted
            key, the allowed values and the value).
    """
    check_schema(config, CONFIG_SCHEMA)
    cfg = merge_config(DEFAULT_DEMO_CONFIG, config)
    at = cfg["insertion"]["at"]
    if at > cfg["model"]["depth"]:
        raise InputError("insertion.at", f"an integer in [-1, {cfg['model']['depth']}] (-1: top)", at)
    if at not in (-1, cfg["model"]["depth"]) and cfg["model"]["eps_n"] <= 0:
        # below the top, L_top needs Lip(N) <= gamma/sqrt(eps_n) (THEORY §2, A-Lip): a data
        # r_min does not cover the states u + h(u) of the whole capped class.
        raise InputError("model.eps_n", "> 0 when insertion.at is below the top (certified L_top)",
                         cfg["model"]["eps_n"])
    return cfg


# ------------------------------------------------------------------------- building blocks
class _OnStates(torch.nn.Module):
    """``u -> f_top(u + h(u))``: an expanded model on precomputed states ``u = f_bot(x)``.

    ``f_bot`` is frozen, so ``u`` is computed once per sample (THEORY §1); training and
    risks on ``S``/``T`` then never re-run the bottom of the network.
    """

    def __init__(self, expanded):
        super().__init__()
        self.expanded = expanded

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        return self.expanded.top_from_u(u)

    def block_parameters(self):
        return self.expanded.block_parameters()


@torch.no_grad()
def _states(net, at: int, x: torch.Tensor, chunk: int = 1 << 18) -> torch.Tensor:
    return torch.cat([net.bottom(x[i:i + chunk], at) for i in range(0, x.shape[0], chunk)])


def _cross_gradient(expanded, u, y, loss: str, chunk: int = 1 << 18) -> torch.Tensor:
    """``G = (1/n) sum_i m_i phi_i^T`` in chunks (THEORY §1) from precomputed states ``u``."""
    from numerics.estimators import activation_gradients_on_states

    G = torch.zeros_like(expanded.block.V)
    for i in range(0, u.shape[0], chunk):
        us, ys = u[i:i + chunk], y[i:i + chunk]
        m = activation_gradients_on_states(expanded, us, ys, loss)
        with torch.no_grad():
            G += m.T @ expanded.block.features(us)
    return G / u.shape[0]


def _jumpboard(expanded, G: torch.Tensor, beta: float, nu_V: float):
    """``V = -eta G`` with ``eta = min(1/beta, nu_V/||G||)`` (inside the cap), and ``eta``."""
    from numerics.estimators import jumpboard

    eta = min(1.0 / beta, nu_V / float(G.norm()))
    return jumpboard(expanded, G, 1.0 / eta), eta


def _theorem1_lower(G_sq: float, beta: float, eta: float) -> float:
    """``R_old - bound`` of Theorem 1 at step ``eta``: ``eta (1 - beta eta / 2) ||G||^2``."""
    from bounds import jumpboard_risk_bound

    return -float(jumpboard_risk_bound(0.0, G_sq, beta, eta))


# ------------------------------------------------------------------------- measurement
def _signal(ctx: dict) -> dict:
    """Population ``G``, ``beta``, jumpboards (THEORY §1-§3)."""
    from numerics.estimators import smoothness_beta_report

    ex, task, cfg, seed = ctx["expanded"], ctx["task"], ctx["cfg"], ctx["seed"]
    x_g = task.sample_x(cfg["sizes"]["population"], seed + 5)
    soft = task.soft_targets(x_g)  # exact y-expectation: m_bar and the Hessian of g (§8)
    G = _cross_gradient(ex, _states(ctx["net"], ctx["at"], x_g), soft, task.loss)
    if not float(G.norm()) > 0:
        raise ArithmeticError("||G|| == 0: condition (C1) fails, no first-order signal to certify.")
    est = smoothness_beta_report(ex, x_g, soft, G, task.loss)
    G_S = _cross_gradient(ex, *ctx["uS"], task.loss)   # states of S were computed once in _prepare
    jump_pop, eta = _jumpboard(ex, G, est.beta, ctx["nu_V"])
    jump_S, eta_S = _jumpboard(ex, G_S, est.beta, ctx["nu_V"])
    return {"G": G, "G_S": G_S, "beta": est, "eta": eta, "eta_S": eta_S, "jump_pop": jump_pop, "jump_S": jump_S}


def _constants(ctx: dict) -> dict:
    """``rho, rho_phi, nu_V, L_top`` (certified and empirical), ``B, L_loss`` (THEORY §1-§4)."""
    from numerics.estimators import lipschitz_top_certified, lipschitz_top_empirical, loss_constants, rho_phi

    ex, net, at = ctx["expanded"], ctx["net"], ctx["at"]
    rho = net.rho(at)
    r_phi = rho_phi(ex.block, rho)
    L_top = lipschitz_top_certified(net, at)  # ||A||_2 at the top, else the eps_n route
    nu_V = ctx["cfg"]["insertion"]["output_cap"] / (L_top * r_phi)
    extra = nu_V * r_phi if at == net.depth else 0.0  # ||u + h(u)|| <= rho + nu_V rho_phi at the top
    target = getattr(ctx["task"], "target_bound", None)
    B, L_loss = loss_constants(net, ctx["task"].loss, target_bound=target, extra_head_input=extra)
    u = net.bottom(ctx["S"][0][:2048], at)
    L_emp = lipschitz_top_empirical(net, at, u)
    return {"rho": rho, "rho_phi": r_phi, "nu_V": nu_V, "L_top_certified": L_top, "L_top_empirical": L_emp,
            "B": B, "L_loss": L_loss}


def _risks(ctx: dict, sig: dict, new) -> dict:
    """Empirical and population risks of ``f_old``, ``f_new`` and the jumpboards."""
    from numerics.data import population_risk, population_risk_difference
    from numerics.training import empirical_risk

    task, old, seed, n_pop = ctx["task"], ctx["net"], ctx["seed"], ctx["cfg"]["sizes"]["population"]
    (u_S, y_S), (u_T, y_T), loss = ctx["uS"], ctx["uT"], task.loss
    models = {"old": old, "new": new, "jump_pop": sig["jump_pop"], "jump_S": sig["jump_S"]}
    on_u = {k: _OnStates(ctx["expanded"].with_V(torch.zeros_like(new.block.V)) if k == "old" else m)
            for k, m in models.items()}
    out = {f"R_S_{k}": empirical_risk(m, u_S, y_S, loss) for k, m in on_u.items()}
    out.update({f"L_test_{k}": empirical_risk(m, u_T, y_T, loss) for k, m in on_u.items()})
    for k in ("old", "new"):
        out[f"R_{k}"], out[f"R_{k}_stderr"] = population_risk(models[k], task, n_pop, seed + 4)
    out["delta_R_hat"], out["delta_R_stderr"] = population_risk_difference(old, sig["jump_pop"], task, n_pop, seed + 4)
    return out


def _quantities(ctx: dict, sig: dict, const: dict, risks: dict, info: dict) -> dict:
    G_sq = float(sig["G"].pow(2).sum())
    from bounds.confidence import empirical_bernstein_lower

    n_pop = ctx["cfg"]["sizes"]["population"]
    # stderr = std(ddof=1)/sqrt(n): the unbiased sample variance is stderr^2 n; range 2B
    delta_R = float(empirical_bernstein_lower(risks["delta_R_hat"], risks["delta_R_stderr"] ** 2 * n_pop, n_pop,
                                              2.0 * const["B"], DELTA_R_LEVEL))
    sizes = ctx["cfg"]["sizes"]
    return {
        "delta_R": delta_R, "delta_R_hat": risks["delta_R_hat"], "delta_R_stderr": risks["delta_R_stderr"],
        "delta_R_failure": DELTA_R_LEVEL,
        "delta_R_lower": _theorem1_lower(G_sq, sig["beta"].beta, sig["eta"]),
        "beta": sig["beta"].beta, "beta_self_consistent": sig["beta"].self_consistent,
        "eta": sig["eta"], "eta_S": sig["eta_S"], "G_norm": math.sqrt(G_sq), "G_S_norm": float(sig["G_S"].norm()),
        "delta_erm_pop": risks["R_S_jump_pop"] - risks["R_S_new"],
        "delta_erm_S": risks["R_S_jump_S"] - risks["R_S_new"],
        "delta_test_R": risks["L_test_old"] - risks["L_test_jump_S"],
        "V_norm": float(ctx["new"].block.V.detach().norm()),
        **const, "d": ctx["expanded"].block.d, "r": ctx["expanded"].block.r,
        "M": sizes["M"], "K": sizes["K"], "delta": sizes["delta"], "delta_prime": sizes["delta_prime"],
        "jumpboard_returned": info["jumpboard_returned"], "returned": info["returned"],
    }


def _setup(q: Mapping, risks: Mapping):
    from bounds.routes import Setup

    block = {"d": q["d"], "L_top": q["L_top_certified"], "rho_phi": q["rho_phi"], "nu_V": q["nu_V"]}
    return Setup(L_test_old=risks["L_test_old"], delta_R=q["delta_R"], delta_erm=q["delta_erm_pop"],
                 delta_test_R=q["delta_test_R"], M=q["M"], K=q["K"], delta=q["delta"],
                 delta_prime=q["delta_prime"], B=q["B"], L_loss=q["L_loss"], family="readout", block=block,
                 delta_erm_S=q["delta_erm_S"], delta_R_failure=q["delta_R_failure"])


def _prepare(cfg: dict) -> dict:
    seed = cfg["seed"]
    task = make_task(cfg["task"], seed)
    net, ref = train_reference(cfg, task, seed + 10)
    at = net.depth if cfg["insertion"]["at"] == -1 else cfg["insertion"]["at"]
    from numerics.insertion import insert_block

    ins = cfg["insertion"]
    expanded = insert_block(net, at, ins["family"], width=ins["width"], seed=ins["seed"])
    ctx = {"cfg": cfg, "seed": seed, "task": task, "net": net, "at": at, "expanded": expanded, "reference": ref,
           "S": task.sample(cfg["sizes"]["M"], seed + 2), "T": task.sample(cfg["sizes"]["K"], seed + 3)}
    ctx["uS"] = (_states(net, at, ctx["S"][0]), ctx["S"][1])
    ctx["uT"] = (_states(net, at, ctx["T"][0]), ctx["T"][1])
    return ctx


def _train_block(ctx: dict, sig: dict):
    from numerics.training import train_block_with_fallback

    bt = ctx["cfg"]["block_training"]
    model, info = train_block_with_fallback(
        _OnStates(ctx["expanded"]), [_OnStates(sig["jump_S"]), _OnStates(sig["jump_pop"])], ctx["uS"],
        loss=ctx["task"].loss, caps={"0": ctx["nu_V"]}, optimizer=bt["optimizer"], lr=bt["lr"],
        steps=bt["steps"], batch_size=bt["batch_size"], seed=ctx["seed"])
    return model.expanded, info


def run_experiment(config: Mapping, out_dir: str | Path | None = None) -> dict:
    """Run the pipeline of the module docstring; return (and write) the ``result.json`` content.

    Args:
        config: nested dict (see :data:`DEFAULT_DEMO_CONFIG`); missing keys take the demo's.
        out_dir: if given, ``result.json``, ``bounds_config.toml`` and
            ``bound_vs_observed.png`` are written there (atomically for the files).

    Returns:
        dict with ``L_test_old``, ``L_test_new``, ``R_old``, ``R_new``, ``quantities``,
        ``routes`` (``population``/``direct``: ``bound``, ``observed``,
        ``failure_probability``, ``certified``, ...), ``timings``, ``config``, ``notes``.

    Raises:
        InputError: invalid config.
        ArithmeticError: (C1) fails (``G == 0``).
    """
    cfg, t0, timings = validate_config(config), time.perf_counter(), {}
    with torch.random.fork_rng(devices=[]):  # every draw is seeded explicitly; leave the global RNG alone
        torch.manual_seed(cfg["seed"])
        return _run(cfg, out_dir, t0, timings)


def _run(cfg: dict, out_dir, t0: float, timings: dict) -> dict:
    from bounds.routes import evaluate_routes

    ctx = _prepare(cfg)
    timings["data_and_reference_s"] = time.perf_counter() - t0
    const = _constants(ctx)
    ctx["nu_V"] = const["nu_V"]
    sig = _signal(ctx)
    timings["signal_s"] = time.perf_counter() - t0 - sum(timings.values())
    new, info = _train_block(ctx, sig)
    ctx["new"] = new
    timings["block_training_s"] = time.perf_counter() - t0 - sum(timings.values())
    risks = _risks(ctx, sig, new)
    q = _quantities(ctx, sig, const, risks, info)
    report = evaluate_routes(_setup(q, risks), cfg["level"])
    q.update(eps_M=float(report.eps_M), eps_K=float(report.eps_K))
    timings["measure_and_bounds_s"] = time.perf_counter() - t0 - sum(timings.values())
    b_data_free = const["L_loss"] * const["L_top_certified"] * const["rho_phi"]   # ||m_i|| ||phi_i|| <= b
    ctx["diagnostics"] = probe_diagnostics(ctx["net"], ctx["expanded"], ctx["task"],
                                           min(cfg["sizes"]["population"], N_PROBE), cfg["seed"] + 6, cfg["level"],
                                           b=b_data_free)
    timings["diagnostics_s"] = time.perf_counter() - t0 - sum(timings.values())
    timings["total_s"] = time.perf_counter() - t0
    result = _assemble(cfg, ctx, risks, q, report, info, timings)
    if out_dir is not None:
        write_outputs(result, out_dir)
    return result


def _route_dict(route, observed: float) -> dict:
    d = route.to_dict()
    d["observed"] = observed
    d["observed_minus_bound"] = observed - d["bound"]
    return d


def _assemble(cfg, ctx, risks, q, report, info, timings) -> dict:
    observed = risks["L_test_new"]
    notes = list(report.notes) + [
        f"delta_R fed to Theorem 2 is the empirical-Bernstein lower bound on the Monte-Carlo estimate at level "
        f"{DELTA_R_LEVEL:g} (paired differences in [-B, B]); that level is included in the population route's "
        "failure probability.",
        "reference model trained on its own sample, independent of S and T; nu_V fixed before S is drawn "
        "(nu_V = insertion.output_cap / (L_top rho_phi)), so no cap grid (n_grid = 1).",
        "f_new is the (C2) selection over {trained block, f~_S, f~_pop}: Delta_ERM >= 0 for both routes.",
        "f~_pop uses G and beta estimated on an independent population sample (exact y-expectation); "
        "Theorem 2 only needs f~_pop in the capped class and independent of S and T.",
    ]
    if not q["beta_self_consistent"]:
        notes.append("beta iteration did not converge: Theorem 1's lower bound is not certified.")
    ref = ctx["reference"]
    return {
        "L_test_old": risks["L_test_old"], "L_test_new": observed,
        "R_old": risks["R_old"], "R_new": risks["R_new"],
        "R_old_stderr": risks["R_old_stderr"], "R_new_stderr": risks["R_new_stderr"],
        "quantities": q,
        "risks": risks,
        "eps_M": float(report.eps_M), "eps_K": float(report.eps_K), "level": report.level,
        "routes": {"population": _route_dict(report.population, observed),
                   "direct": _route_dict(report.direct, observed)},
        "any_certified": bool(report.population.certified) or bool(report.direct.certified),
        "training": {"block": {k: v for k, v in info.items() if k != "train"}, "jumpboards": ["f~_S", "f~_pop"],
                     "block_final_loss": info["train"].final_loss, "block_projections": info["train"].projections,
                     "reference_final_loss": ref.final_loss},
        "diagnostics": ctx["diagnostics"],
        "timings": timings,
        "notes": notes,
        "config": cfg,
    }
