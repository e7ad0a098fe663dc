"""The run study's first stage: everything fixed before ``S`` and ``T`` are drawn (THEORY §1-§4).

:func:`prepare_fixed` builds, from the roles of ``seed`` only (:mod:`numerics.seeding`),
the teacher, the trained reference ``f_old``, the inserted block (frozen features), the
data-free constants (``rho``, ``rho_phi``, ``nu_V``, ``L_top``, ``B``, ``L_loss``) and the
population signal (``G``, ``beta``, ``eta``, the population jumpboard ``f~_pop``). None of
it depends on ``S`` or ``T``: Theorem 2 needs ``f~_pop`` and the class ``H_new`` fixed
before them, and a validity study reuses one :class:`Fixed` for all its draws.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Mapping

import torch

from numerics.seeding import Streams
from numerics.studies.run._config import RunConfig, as_run_config
from numerics.studies.run._moments import is_exact_class  # noqa: F401 (re-exported: its home is _moments)

__all__ = ["Constants", "Fixed", "Signal", "is_exact_class", "prepare_fixed", "states", "streams_of"]


@dataclasses.dataclass(frozen=True)
class Constants:
    """Data-free constants of the capped class (THEORY §1-§4); the caps (``nu_V``, ``rho_phi``, ``nu_U``,
    the cap grid) live once, in ``caps``.

    **Not** :class:`depthcert.Constants`: these are the run study's constants of its own post-norm network
    and capped block at depth ``at``, every one determined (from the trained reference's norms, the caps and
    the task's target bound; no sample of ``S`` or ``T``) and fed to the certificate as they are, with the
    caps the certificate's class needs; ``depthcert.Constants`` are the sure constants found at one named
    site of any network from its weights, each a value or ``None`` with the reason, with their derivations
    (``how``, ``why``) and no caps. Different fields, different sources: kept apart."""

    rho: float
    L_top_certified: float
    B: float
    L_loss: float
    extra_head_input: float     # nu_V rho_phi when the block is at the top, else 0
    caps: object                # numerics.studies.run._family.BlockCaps: family, nu_V, rho_phi, nu_U, cap grid

    @property
    def nu_V(self) -> float:
        """The largest ``V`` cap (``caps.nu_V``)."""
        return self.caps.nu_V

    @property
    def rho_phi(self) -> float:
        """The sure bound on ``||phi(u)||`` (``caps.rho_phi``)."""
        return self.caps.rho_phi


@dataclasses.dataclass(frozen=True)
class Signal:
    """Population first-order signal and the jumpboard ``f~_pop`` (THEORY §1-§3).

    ``eta = min(1/beta, nu_V/||G||)``; ``capped`` is ``nu_V/||G|| < 1/beta`` (then
    Theorem 1's guaranteed gain is ``eta (1 - beta eta / 2) ||G||^2``, not
    ``||G||^2 / (2 beta)``).
    """

    G: torch.Tensor
    beta: object               # numerics.estimators.BetaEstimate
    eta: float
    capped: bool
    V_pop: torch.Tensor


@dataclasses.dataclass(frozen=True)
class Fixed:
    """Stage 1 of a run: everything fixed before ``S`` and ``T`` (``cfg``: the typed run config)."""

    cfg: RunConfig
    streams: Streams
    task: object
    net: torch.nn.Module
    at: int
    expanded: torch.nn.Module
    reference: object          # numerics.training.TrainResult of f_old
    const: Constants
    signal: Signal

    @property
    def loss(self) -> str:
        return self.task.loss


def streams_of(cfg: Mapping, data_seed: int | None = None) -> Streams:
    """The role streams of ``cfg`` (``insertion.seed``, when given, feeds the insertion role)."""
    cfg = as_run_config(cfg)
    ins = cfg.insertion.seed
    overrides = (("insertion", int(ins)),) if ins is not None else ()
    return Streams(int(cfg.seed), int(cfg.data_seed if data_seed is None else data_seed), overrides)


@torch.no_grad()
def states(net, at: int, x: torch.Tensor, chunk: int = 1 << 16) -> torch.Tensor:
    """``u = f_bot(x)`` in chunks (cache-friendly: ~2.5x faster than one pass at 4e6 rows)."""
    return torch.cat([net.bottom(x[i:i + chunk], at) for i in range(0, x.shape[0], chunk)])


def cross_gradient_on_states(expanded, u: torch.Tensor, y: torch.Tensor, loss: str, chunk: int = 1 << 16):
    """``G = (1/n) sum_i m_i phi_i^T`` in chunks (THEORY §1) from precomputed states ``u``."""
    from numerics.estimators import activation_gradients_on_states

    G = torch.zeros_like(expanded.block.V)
    for i in range(0, u.shape[0], chunk):
        us, ys = u[i:i + chunk], y[i:i + chunk]
        m = activation_gradients_on_states(expanded, us, ys, loss)
        with torch.no_grad():
            G += m.T @ expanded.block.features(us.reshape(us.shape[0], -1))
    return G / u.shape[0]


def jumpboard_step(G: torch.Tensor, beta: float, nu_V: float) -> tuple[float, bool]:
    """``(eta, capped)``: ``eta = min(1/beta, nu_V/||G||)`` keeps ``-eta G`` inside the cap."""
    norm = float(G.norm())
    cap_step = nu_V / norm if norm > 0 else math.inf
    return min(1.0 / beta, cap_step), cap_step < 1.0 / beta


def _constants(cfg: RunConfig, task, net, at: int, expanded) -> Constants:
    from bounds.loss import block_output_bound
    from numerics.estimators import lipschitz_top_certified, loss_constants
    from numerics.studies.run._family import block_caps

    rho = net.rho(at)
    L_top = lipschitz_top_certified(net, at)   # ||A||_2 at the top, else the eps_n route
    caps = block_caps(cfg, expanded.block, rho, L_top)   # family, nu_V (largest cap), nu_U
    # the head sees u + h(u) when the block is at the top: ||.|| <= rho + sup ||h|| (THEORY §1)
    extra = block_output_bound(caps.family, caps.output_params()) if at == net.depth else 0.0
    B, L_loss = loss_constants(net, task.loss, target_bound=getattr(task, "target_bound", None),
                               extra_head_input=extra)
    return Constants(rho, L_top, B, L_loss, extra, caps)


def _signal(cfg: RunConfig, task, net, at: int, expanded, nu_V: float, seed: int) -> Signal:
    """``G`` and ``beta`` on the signal sample (exact ``y``-expectation, THEORY §1-§3, §8; a sampled
    task's own labels, :func:`numerics.sampled_task.signal_targets`)."""
    from numerics.estimators import smoothness_beta_report
    from numerics.sampled_task import signal_targets

    x, soft = signal_targets(task, cfg.sizes.population, seed)   # exact y-expectation: m_bar and the Hessian of g
    G = cross_gradient_on_states(expanded, states(net, at, x), soft, task.loss)
    if not float(G.norm()) > 0:
        raise ArithmeticError("||G|| == 0: condition (C1) fails, no first-order signal to certify.")
    est = smoothness_beta_report(expanded, x, soft, G, task.loss)
    eta, capped = jumpboard_step(G, est.beta, nu_V)
    return Signal(G, est, eta, capped, -eta * G)


def prepare_fixed(cfg: Mapping, streams: Streams | None = None) -> Fixed:
    """Stage 1 (docstring of ``numerics.studies.run._stages``) from a validated config (a :class:`RunConfig`, or the dict of
    :func:`~numerics.studies.run.validate_config`); every draw from a ``seed`` role."""
    from numerics.builders import make_task, train_reference
    from numerics.insertion import insert_block

    cfg = as_run_config(cfg)
    streams = streams_of(cfg) if streams is None else streams
    task = make_task(cfg.task, streams.seed_for("teacher"))
    net, ref = train_reference(cfg, task, streams=streams)
    ins = cfg.insertion
    at = net.depth if ins.at == -1 else ins.at
    expanded = insert_block(net, at, ins.family, width=ins.width, seed=streams.seed_for("insertion"))
    const = _constants(cfg, task, net, at, expanded)
    signal = _signal(cfg, task, net, at, expanded, const.nu_V, streams.seed_for("signal"))
    return Fixed(cfg, streams, task, net, at, expanded, ref, const, signal)
