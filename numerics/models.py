"""Post-normalised residual networks ``z_j = N(z_{j-1} + g_j(z_{j-1}))`` (THEORY §1).

Two models share one skeleton (:class:`_PostNormResNet`): ``z_0 = E(x)``,
``z_j = N_j(z_{j-1} + g_j(z_{j-1}))`` for ``j = 1..D`` and ``f = head(z_D)``.

**Choice**: the embedding is ``E = N_0 ∘ (affine map)``, i.e. it ends with a
normalisation, so that ``||u|| <= rho`` (THEORY §2, A-norm) holds at *every* insertion
point ``l = 0..D``, including ``l = 0``.

Every model exposes the split ``f = top(·, l) ∘ bottom(·, l)`` used for insertion, and
the data-independent constants the bounds need: ``rho(l)`` (norm bound on ``z_l``),
``head_input_bound()``, ``branch_lipschitz_bound(j)``, ``head_lipschitz_bound()`` and,
on each normalisation, ``lipschitz_bound(scale_min)``.
"""
from __future__ import annotations

import math
import numbers

import torch
from torch import nn
import torch.nn.functional as F

from numerics._numerics import spectral_norm

MLP_NORMS = ("rms", "layer")
CNN_NORMS = ("group", "layer", "batch")


class PostNorm(nn.Module):
    """``N(x) = gamma * (x - mu) / sqrt(s^2 + eps_n) (+ beta)`` over the feature dims.

    ``kind``: ``"rms"`` (``mu = 0``, ``s^2 = mean(x^2)``), ``"layer"`` (mean-centred),
    ``"group"`` (mean-centred within ``groups`` channel groups of an ``(n, C, H, W)``
    input). ``gamma`` starts at ``gain``; ``beta`` (layer/group only) at 0.
    """

    def __init__(self, features: int, kind: str, eps_n: float, gain: float, groups: int = 1):
        super().__init__()
        self.kind, self.eps_n, self.groups = kind, float(eps_n), groups
        self.gamma = nn.Parameter(torch.full((features,), float(gain)))
        self.beta = None if kind == "rms" else nn.Parameter(torch.zeros(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.kind == "rms":
            return F.rms_norm(x, (x.shape[-1],), self.gamma, self.eps_n)
        if self.kind == "layer" and x.dim() == 2:
            return F.layer_norm(x, (x.shape[-1],), self.gamma, self.beta, self.eps_n)
        groups = 1 if self.kind == "layer" else self.groups
        return F.group_norm(x, groups, self.gamma, self.beta, self.eps_n)

    def pre_norm_scale(self, x: torch.Tensor) -> torch.Tensor:
        """Per-sample scale ``s`` of the input (min over groups), shape ``(n,)``."""
        groups = self.groups if self.kind == "group" else 1
        flat = x.reshape(x.shape[0], groups, -1)
        if self.kind != "rms":
            flat = flat - flat.mean(dim=2, keepdim=True)
        return flat.pow(2).mean(dim=2).sqrt().min(dim=1).values

    def lipschitz_bound(self, scale_min: float | None = None) -> float:
        """``||gamma||_inf / sqrt(scale_min^2 + eps_n)`` (THEORY §2, A-Lip).

        The Jacobian of ``x -> gamma x / sqrt(mean(x^2) + eps)`` is
        ``diag(gamma) (I - x x^T / (d (mean(x^2) + eps))) / sqrt(mean(x^2) + eps)``; the middle
        factor has eigenvalues in ``(0, 1]``, and mean-centring is an orthogonal
        projection (norm 1), so the spectral norm is at most the value returned whenever the
        pre-norm scale is ``>= scale_min``. ``scale_min=None`` is the engineering-eps route
        ``||gamma||_inf / sqrt(eps_n)`` (global).

        Raises:
            ValueError: ``scale_min`` is None and ``eps_n == 0`` (no global bound).
        """
        g_inf = float(self.gamma.detach().abs().max())
        if scale_min is None:
            if self.eps_n <= 0:
                raise ValueError(
                    f"eps_n == {self.eps_n}, must be > 0 for the engineering-eps route; "
                    "pass r_min (the minimum pre-norm RMS) instead.")
            return g_inf / math.sqrt(self.eps_n)
        return g_inf / math.sqrt(float(scale_min) ** 2 + self.eps_n)

    def output_norm_bound(self, shape: tuple[int, ...]) -> float:
        """``||N(x)|| <= ||gamma||_inf sqrt(d) + ||beta||`` for one sample of ``shape``."""
        d = math.prod(shape)
        bound = float(self.gamma.detach().abs().max()) * math.sqrt(d)
        if self.beta is not None:
            spread = d // self.beta.numel()  # beta is broadcast over spatial positions
            bound += float(self.beta.detach().norm()) * math.sqrt(spread)
        return bound

    def is_idempotent(self) -> bool:
        """``N(N(x)) == N(x)`` in exact arithmetic: ``eps_n = 0``, ``|gamma| = 1``, ``beta = 0``."""
        unit = bool(torch.all(self.gamma.detach() == 1.0))
        no_shift = self.beta is None or bool(torch.all(self.beta.detach() == 0.0))
        return self.eps_n == 0.0 and unit and no_shift


def _build(seed: int, build) -> None:
    """Run ``build`` under a forked, seeded global RNG (the caller's RNG state is untouched)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        build()


class _PostNormResNet(nn.Module):
    """Shared skeleton: ``bottom``, ``top``, ``forward``, ``forward_collect``, bounds."""

    per_sample_safe = True

    def _readout(self, z: torch.Tensor) -> torch.Tensor:
        return self.head(z)

    def bottom(self, x: torch.Tensor, at: int) -> torch.Tensor:
        """``u = z_at``: the embedding and the first ``at`` blocks."""
        self._check_at(at)
        z = self.embed_norm(self.embed(x))
        for j in range(at):
            z = self.norms[j](z + self.branches[j](z))
        return z

    def top(self, u: torch.Tensor, at: int) -> torch.Tensor:
        """``f_top(u)``: blocks ``at+1..D`` and the head, logits ``(n, n_out)``."""
        self._check_at(at)
        z = u
        for j in range(at, self.depth):
            z = self.norms[j](z + self.branches[j](z))
        return self._readout(z)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.top(self.bottom(x, 0), 0)

    def forward_collect(self, x: torch.Tensor, points) -> tuple[torch.Tensor, dict]:
        """Logits and the states ``{l: z_l}`` for ``l in points``, from one forward.

        The states are graph nodes (requiring grad) so that one backward pass of the
        summed loss gives every ``m_i`` at every point (THEORY §1).
        """
        points = set(points)
        for at in points:
            self._check_at(at)
        z = self.embed_norm(self.embed(x))
        if not z.requires_grad:
            z = z.detach().requires_grad_(True)
        states = {0: z} if 0 in points else {}
        for j in range(self.depth):
            z = self.norms[j](z + self.branches[j](z))
            if j + 1 in points:
                states[j + 1] = z
        return self._readout(z), states

    def site_names(self) -> list[str]:
        """Module paths whose outputs are ``z_0 .. z_D`` (the block boundaries, ``numerics.sites``)."""
        return ["embed_norm"] + [f"norms.{j}" for j in range(self.depth)]

    def _check_at(self, at: int) -> None:
        if isinstance(at, bool) or not isinstance(at, numbers.Integral) or not 0 <= at <= self.depth:
            raise ValueError(f"at == {at!r}, must be an int in [0, {self.depth}].")

    def norm_at(self, at: int) -> PostNorm:
        """The normalisation that produces ``z_at`` (``N_0`` of the embedding for 0)."""
        self._check_at(at)
        return self.embed_norm if at == 0 else self.norms[at - 1]

    def rho(self, at: int) -> float:
        """``||z_at|| <= ||gamma||_inf sqrt(d) + ||beta||`` (THEORY §1), data-free."""
        return self.norm_at(at).output_norm_bound(self.state_shape)

    def head_lipschitz_bound(self) -> float:
        """``||A||_2`` (times the pooling norm for the CNN)."""
        return spectral_norm(self.head.weight)


class PostNormResMLP(_PostNormResNet):
    """Post-norm residual MLP, branches ``g_j(z) = W2 relu(W1 z + b1) + b2`` (THEORY §1).

    Args:
        d_in, width, depth, n_out: input dim, ``d``, ``D`` and number of outputs.
        hidden: branch hidden width (default ``width``).
        norm: ``"rms"`` or ``"layer"``.
        eps_n: engineering epsilon inside the square root (``>= 0``).
        gain: initial value of every ``gamma``.
        seed: parameter initialisation seed (the global RNG is left untouched).
        dtype: parameter dtype (float64 by default, as bounds are computed in float64).

    Example:
        >>> net = PostNormResMLP(3, 8, 2, 4)
        >>> net(torch.zeros(5, 3, dtype=torch.float64)).shape
        torch.Size([5, 4])
    """

    def __init__(self, d_in: int, width: int, depth: int, n_out: int, *, hidden: int | None = None,
                 norm: str = "rms", eps_n: float = 1e-5, gain: float = 1.0, seed: int = 0,
                 dtype: torch.dtype = torch.float64):
        super().__init__()
        _check_dims(d_in=d_in, width=width, n_out=n_out)
        if not isinstance(depth, int) or depth < 0:
            raise ValueError(f"depth == {depth!r}, must be an int >= 0.")
        if norm not in MLP_NORMS:
            raise ValueError(f"norm == {norm!r}, must be one of {list(MLP_NORMS)}.")
        if eps_n < 0:
            raise ValueError(f"eps_n == {eps_n!r}, must be >= 0.")
        self.depth, self.width, self.norm_kind = depth, width, norm
        self.eps_n, self.state_shape = float(eps_n), (width,)
        hidden = width if hidden is None else hidden

        def build():
            self.embed = nn.Linear(d_in, width)
            self.embed_norm = PostNorm(width, norm, eps_n, gain)
            self.branches = nn.ModuleList(
                nn.Sequential(nn.Linear(width, hidden), nn.ReLU(), nn.Linear(hidden, width))
                for _ in range(depth))
            self.norms = nn.ModuleList(PostNorm(width, norm, eps_n, gain) for _ in range(depth))
            self.head = nn.Linear(width, n_out)

        _build(seed, build)
        self.to(dtype)

    def branch_lipschitz_bound(self, j: int) -> float:
        """``Lip(g_j) <= ||W2||_2 ||W1||_2`` (ReLU is 1-Lipschitz)."""
        first, _, second = self.branches[j]
        return spectral_norm(first.weight) * spectral_norm(second.weight)

    def head_input_bound(self) -> float:
        """Bound on ``||z_D||``, the head input."""
        return self.rho(self.depth)


class PostNormResCNN(_PostNormResNet):
    """Small post-norm convolutional ResNet on ``(n, C_in, H, W)`` images (THEORY §1).

    ``z_0 = N_0(conv3x3(x))``, branches ``conv3x3 -> relu -> conv3x3``, head = global
    average pool + linear. ``norm="group"`` (``groups`` groups) or ``"layer"`` (one
    group) are per-sample; ``"batch"`` couples samples and is accepted for training only:
    per-sample estimators refuse it (``per_sample_safe`` is False).

    Example:
        >>> net = PostNormResCNN(1, 4, 1, 3, image_size=5, groups=2)
        >>> net(torch.zeros(2, 1, 5, 5, dtype=torch.float64)).shape
        torch.Size([2, 3])
    """

    def __init__(self, in_channels: int, channels: int, depth: int, n_out: int, *,
                 image_size: int, norm: str = "group", groups: int = 4, eps_n: float = 1e-5,
                 gain: float = 1.0, seed: int = 0, dtype: torch.dtype = torch.float64):
        super().__init__()
        _check_dims(in_channels=in_channels, channels=channels, n_out=n_out, image_size=image_size)
        if norm not in CNN_NORMS:
            raise ValueError(f"norm == {norm!r}, must be one of {list(CNN_NORMS)}.")
        if norm == "group" and channels % groups:
            raise ValueError(f"groups == {groups!r}, must divide channels == {channels}.")
        self.depth, self.width, self.norm_kind, self.eps_n = depth, channels, norm, float(eps_n)
        self.state_shape = (channels, image_size, image_size)
        self.per_sample_safe = norm != "batch"

        def make_norm():
            if norm == "batch":
                return nn.BatchNorm2d(channels, eps=eps_n)
            return PostNorm(channels, "group", eps_n, gain, groups if norm == "group" else 1)

        def build():
            self.embed = nn.Conv2d(in_channels, channels, 3, padding=1)
            self.embed_norm = make_norm()
            self.branches = nn.ModuleList(nn.Sequential(
                nn.Conv2d(channels, channels, 3, padding=1), nn.ReLU(),
                nn.Conv2d(channels, channels, 3, padding=1)) for _ in range(depth))
            self.norms = nn.ModuleList(make_norm() for _ in range(depth))
            self.head = nn.Linear(channels, n_out)

        _build(seed, build)
        self.to(dtype)

    def _readout(self, z: torch.Tensor) -> torch.Tensor:
        return self.head(z.mean(dim=(2, 3)))

    def branch_lipschitz_bound(self, j: int) -> float:
        """``Lip(conv) <= sum_{offsets} ||W[:, :, a, b]||_2`` (zero-padded shifts have norm <= 1)."""
        first, _, second = self.branches[j]
        return _conv_bound(first.weight) * _conv_bound(second.weight)

    def head_lipschitz_bound(self) -> float:
        """``||A||_2 / sqrt(H W)``: average pooling has operator norm ``1/sqrt(HW)``."""
        hw = self.state_shape[1] * self.state_shape[2]
        return spectral_norm(self.head.weight) / math.sqrt(hw)

    def head_input_bound(self) -> float:
        """Bound on the pooled head input: ``rho(D) / sqrt(H W)``."""
        hw = self.state_shape[1] * self.state_shape[2]
        return self.rho(self.depth) / math.sqrt(hw)


def _conv_bound(weight: torch.Tensor) -> float:
    w = weight.detach()
    return sum(spectral_norm(w[:, :, a, b]) for a in range(w.shape[2]) for b in range(w.shape[3]))


def _check_dims(**dims) -> None:
    for name, value in dims.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} == {value!r}, must be an int >= 1.")


def check_per_sample(model: nn.Module) -> None:
    """Refuse models whose normalisation couples samples (batch-norm), THEORY §1.

    Raises:
        ValueError: the model uses batch-norm.
    """
    base = getattr(model, "base", model)
    if not getattr(base, "per_sample_safe", True):
        raise ValueError(
            "norm == 'batch', must be 'group' or 'layer' for per-sample quantities: "
            "batch-norm couples samples, so per-sample activation gradients m_i are undefined.")
