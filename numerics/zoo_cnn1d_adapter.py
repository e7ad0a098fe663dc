"""The 1-D residual CNN (:class:`~numerics.zoo_cnn1d.ResCNN1d`) in the run study: a block at the head input.

The run study inserts a block at a state of a post-norm network ``f = top(·, l) ∘ bottom(·, l)``
(:mod:`numerics.models`). For a ``ResCNN1d`` the one state offered is the **head input**: the
mean pool of the last normalised stream, ``u = mean_L z_D`` with ``d = C`` channels (THEORY §10:
channels-first, ``P = 1`` position after the pool, so no ``sqrt(P)`` factor), and ``f_top`` the
linear head ``u -> A u + c``, so ``L_top = ||A||_2`` exactly.

* :class:`SignalNet` -- the trainable reference: flat float64 signals ``(n, L)`` (the sampled
  task's inputs, :mod:`numerics.sampled_task`) reshaped to ``(n, 1, L)`` and cast to the net's
  dtype (float32 by default); logits float64.
* :class:`HeadInputView` -- the trained net split at the head input. **Choice**: the frozen
  trunk runs in the net's dtype; the pooled state, the head (a float64 copy) and every
  block computation are float64, so the certificate's statistics are accumulated in float64.
* :func:`pooled_norm_bound` -- the sure bound ``rho`` on ``||u||`` (derivation there).
"""
from __future__ import annotations

import math

import torch
from torch import nn

from numerics._numerics import spectral_norm
from numerics.zoo_cnn1d import ChannelNorm, ResCNN1d

#: **Choice**: the trunk runs on sub-chunks of this many rows, so that its ``(rows, C, L)`` activations
#: stay in cache (measured 4x less CPU time than one pass over a 32768-row chunk, width 32, depth 4).
SUB_CHUNK = 512

__all__ = ["SUB_CHUNK", "HeadInputView", "SignalNet", "build_signal_net", "check_run_model", "pooled_norm_bound", "rounding_margin"]


def rounding_margin(channels: int, length: int, dtype: torch.dtype) -> float:
    """``(C L + 8) eps_machine(dtype)``: **Choice**, a relative margin for the rounding of a
    normalisation and a mean over ``C L`` entries (Higham's ``gamma_n ~ n u`` for sums of length ``n``)."""
    return (channels * length + 8) * torch.finfo(dtype).eps


def pooled_norm_bound(norm: nn.Module, length: int) -> float:
    """``rho >= ||mean_l N(x)[:, l]||`` for every input ``x (C, L)``: ``(max|gamma| sqrt(C) + ||beta||) (1 + margin)``.

    Derivation, for the exact code of :mod:`numerics.zoo_cnn1d` (``nn.GroupNorm``; ``ChannelNorm``
    = ``F.layer_norm`` / ``F.rms_norm`` of the channel vector at each position; any ``eps >= 0``):
    write ``N(x)[c, l] = gamma_c xh[c, l] + beta_c``. GroupNorm: ``xh = (x - mu_g) / sqrt(v_g + eps)``
    over the ``|g| L`` entries of group ``g`` (``v_g`` their biased variance), so
    ``sum_{c in g, l} xh^2 = |g| L v_g / (v_g + eps) <= |g| L``; LayerNorm / RMSNorm at one position
    give ``sum_c xh[c, l]^2 = C v_l / (v_l + eps) <= C`` (``v_l`` the variance, or the mean
    square). Either way ``sum_{c, l} xh^2 <= C L``. The pool ``p = gamma ⊙ m + beta`` with
    ``m_c = mean_l xh[c, l]`` and Jensen's ``m_c^2 <= mean_l xh[c, l]^2`` give
    ``||m||^2 <= C`` and ``||p|| <= max|gamma| sqrt(C) + ||beta||``. The bound is attained as
    ``eps / v -> 0`` by ``x[c, l] = ±a`` constant in ``l``, half the channels of each group of
    each sign (``gamma = 1``, ``beta = 0``): ``||p|| -> sqrt(C)``. The factor ``1 + margin``
    (:func:`rounding_margin`) covers the rounding of the net's dtype.

    Args:
        norm: the normalisation producing the last stream (``nn.GroupNorm`` or ``ChannelNorm``).
        length: ``L``, the number of positions pooled.

    Raises:
        TypeError: another module (e.g. BatchNorm: not a per-sample normalisation, no ``rho``).
    """
    if not isinstance(norm, (nn.GroupNorm, ChannelNorm)) or (isinstance(norm, nn.GroupNorm) and not norm.affine):
        raise TypeError(f"norm == {type(norm).__name__}, must be an affine nn.GroupNorm or a ChannelNorm (per-sample).")
    gamma = norm.weight.detach().double()
    bound = float(gamma.abs().max()) * math.sqrt(gamma.numel())
    if norm.bias is not None:
        bound += float(norm.bias.detach().double().norm())
    return bound * (1.0 + rounding_margin(gamma.numel(), length, norm.weight.dtype))


class SignalNet(nn.Module):
    """A :class:`ResCNN1d` on flat signals ``(n, L)`` float64: ``net(x.reshape(n, C_in, L))``, logits float64."""

    def __init__(self, net: ResCNN1d):
        super().__init__()
        self.net = net

    def signal(self, x: torch.Tensor) -> torch.Tensor:
        """``(n, L)`` (or ``(n, C_in, L)``) -> ``(n, C_in, L)`` in the net's dtype."""
        return x.reshape(x.shape[0], self.net.stem.in_channels, -1).to(self.net.head.weight.dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(self.signal(x)).double()


class HeadInputView(nn.Module):
    """A trained :class:`SignalNet` split at the head input (docstring of ``numerics.zoo_cnn1d_adapter``); ``at = depth`` only.

    Args:
        signal_net: the trained reference (frozen here: ``requires_grad=False``).
        length: ``L`` of its input signals (40 for MNIST-1D).

    Example:
        >>> view = HeadInputView(SignalNet(ResCNN1d(1, 8, 2, 10, groups=2)), 40)
        >>> x = torch.randn(3, 40, dtype=torch.float64)
        >>> view.bottom(x, 2).shape, view.rho(2) >= float(view.bottom(x, 2).norm(dim=1).max())
        (torch.Size([3, 8]), True)
    """

    per_sample_safe = True

    def __init__(self, signal_net: SignalNet, length: int):
        super().__init__()
        net = signal_net.net
        for p in signal_net.parameters():
            p.requires_grad_(False)
        self.signal_net, self.length = signal_net.eval(), int(length)
        self.depth, self.width, self.state_shape = net.depth, net.width, (net.width,)
        self.head = nn.Linear(net.width, net.head.out_features, dtype=torch.float64)
        with torch.no_grad():
            self.head.weight.copy_(net.head.weight.double())
            self.head.bias.copy_(net.head.bias.double())
        self.head.requires_grad_(False)

    def _last_norm(self) -> nn.Module:
        net = self.signal_net.net
        return net.blocks[-1].norm if net.depth else net.stem_norm

    def _check_at(self, at: int) -> None:
        if isinstance(at, bool) or not isinstance(at, int) or at != self.depth:
            raise ValueError(f"at == {at!r}, must be {self.depth} (the head input; cnn1d offers no other insertion point).")

    def site_names(self) -> list[str]:
        return ["head_input"]

    @torch.no_grad()
    def bottom(self, x: torch.Tensor, at: int) -> torch.Tensor:
        """``u = mean_L z_D`` ``(n, C)`` float64 of flat signals ``x (n, L)``."""
        self._check_at(at)
        sig = self.signal_net
        return torch.cat([sig.net.features(sig.signal(x[i:i + SUB_CHUNK])).mean(dim=2).double()
                          for i in range(0, x.shape[0], SUB_CHUNK)]) if x.shape[0] else self.head.weight.new_zeros(0, self.width)

    def top(self, u: torch.Tensor, at: int) -> torch.Tensor:
        """``f_top(u) = A u + c`` (float64)."""
        self._check_at(at)
        return self.head(u)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.top(self.bottom(x, self.depth), self.depth)

    def rho(self, at: int) -> float:
        """:func:`pooled_norm_bound` of the last normalisation (data-free)."""
        self._check_at(at)
        return pooled_norm_bound(self._last_norm(), self.length)

    def head_input_bound(self) -> float:
        return self.rho(self.depth)

    def head_lipschitz_bound(self) -> float:
        """``||A||_2`` (the head is linear on ``u``)."""
        return spectral_norm(self.head.weight)

    def norm_at(self, at: int):
        raise ValueError("post-norm insertion at the head input of a cnn1d model is not offered (the head input is a pool).")


def build_signal_net(m, n_out: int, seed: int) -> SignalNet:
    """The untrained reference of a ``[model]`` with ``kind = "cnn1d"`` (keys of the saturation workloads:
    ``width``, ``depth``, ``norm``, ``groups``, ``dtype``; one input channel)."""
    dtype = getattr(torch, m.get("dtype", "float32"))
    net = ResCNN1d(1, m["width"], m["depth"], n_out, norm=m["norm"], groups=m.get("groups", 4), seed=seed, dtype=dtype)
    return SignalNet(net)


def check_run_model(raw, cfg) -> None:
    """The run study's rules for ``[model]`` beyond its schema (``raw``: the user's config, ``cfg``: merged).

    ``cnn1d`` reads MNIST-1D's signals and offers one insertion point, a ``readout`` block at the
    head input (``insertion.at = -1``). **Choice**: its norms use ``eps = 1e-5`` as in the saturation
    workloads (one world for both), so ``model.eps_n`` (a default of the MLP) is not read; ``rho``
    holds for every ``eps >= 0``. ``mlp`` is float64 with ``rms`` / ``layer`` norms.

    Raises:
        InputError: the first key that breaks a rule (named, with the allowed values and why).
    """
    from plumbing.validation import InputError

    m, ins = cfg["model"], cfg["insertion"]
    if m.get("kind", "mlp") == "mlp":
        if m["norm"] not in ("rms", "layer"):
            raise InputError("model.norm", "'rms' or 'layer' for model.kind = 'mlp'", m["norm"])
        if m.get("dtype", "float64") != "float64":
            raise InputError("model.dtype", "'float64' for model.kind = 'mlp' (the run study's MLP)", m["dtype"])
        return
    rules = [("task.kind", cfg["task"]["kind"] == "mnist1d", "'mnist1d' for model.kind = 'cnn1d' (1-D signals)",
              cfg["task"]["kind"]),
             ("insertion.at", ins["at"] == -1, "-1 for model.kind = 'cnn1d' (the head input, after the mean pool: "
              "the only insertion point offered, THEORY §10)", ins["at"]),
             ("insertion.family", ins["family"] == "readout", "'readout' for model.kind = 'cnn1d' (a block on the "
              "pooled head input with frozen features; 'full' would train features the head-input constants do not "
              "cover)", ins["family"]),
             ("model.groups", m["norm"] != "group" or m["width"] % m.get("groups", 4) == 0,
              f"a divisor of model.width = {m['width']} (GroupNorm)", m.get("groups", 4))]
    for key, ok, allowed, value in rules:
        if not ok:
            raise InputError(key, allowed, value)
