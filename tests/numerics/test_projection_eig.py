"""The projection scores' and the natural direction's shared eigendecomposition (issue 38: the scan's linear
algebra at wide sites): the same numbers as before, checked against independent computations.

* ``tr(g s^+ g^T)`` is now ``sum_j ||g u_j||^2 / lambda_j`` over the kept eigenpairs (no ``s^+`` formed): it
  must equal the projection form ``(1/N) ||Q^T M||^2`` (``s = Phi^T Phi / N``, ``g = M^T Phi / N``, ``Q`` an
  orthonormal basis of ``Phi``'s columns from its SVD -- no eigendecomposition of ``s``) and the old formula
  ``tr(g psd_pinv(s) g^T)`` (kept here), at a rank-deficient ``s`` where the Cholesky path cannot run;
* ``SiteAccumulator.sigma_eig`` gives ``psd_pinv(Sigma)`` bit for bit, and is recomputed after more samples;
* ``dc.saturation`` with the shared decomposition equals the call without it (every numeric field).
"""
import math

import pytest
import torch
from torch import nn

import depthcert as dc
from numerics._numerics import psd_eig, psd_pinv
from numerics.estimators import SiteAccumulator, site_projection_scores
from numerics.estimators import _site_stats as stats

F64 = torch.float64


def _rank_deficient(N=40, d=6, rank=4, seed=0):
    """``(g, s, reference)`` with ``s = Phi^T Phi / N`` of rank ``rank < d`` (exactly: repeated columns)."""
    gen = torch.Generator().manual_seed(seed)
    base = torch.randn(N, rank, generator=gen, dtype=F64)
    Phi = torch.cat([base, base[:, : d - rank] * 2.0], dim=1)       # the last columns repeat earlier ones
    M = torch.randn(N, 5, generator=gen, dtype=F64)
    s, g = Phi.T @ Phi / N, M.T @ Phi / N
    U, S, _ = torch.linalg.svd(Phi, full_matrices=False)
    Q = U[:, : int((S > 1e-10 * S[0]).sum())]                         # orthonormal basis of Phi's columns
    return g, s, float((Q.T @ M).pow(2).sum()) / N


def test_the_pinv_quadratic_equals_the_projection_form_and_the_old_formula_at_a_rank_deficient_sigma():
    g, s, ref = _rank_deficient()
    tr = float(torch.trace(s))
    assert int(torch.linalg.cholesky_ex(s - 1e-9 * tr * torch.eye(6, dtype=F64))[1]) != 0   # the eigh path runs
    null = torch.zeros(6, dtype=F64)
    null[0], null[4] = 2.0, -1.0                                       # s null = 0 (column 4 = 2 x column 0)
    g = g + 0.3 * torch.outer(torch.linspace(1.0, 2.0, 5, dtype=F64), null)   # s^+ ignores this part of g
    new = stats._pinv_quadratic(g, s)
    old = float(torch.trace(g @ psd_pinv(s) @ g.T))                   # the formula before issue 38
    assert new == pytest.approx(ref, rel=1e-9) and new == pytest.approx(old, rel=1e-9)
    # power: without the cut (1/lambda on every eigenvalue, the rounding-size ones included) the value is far off
    evecs, _ = psd_eig(s)
    evals = torch.linalg.eigvalsh(s)
    wrong = float(((g @ evecs).pow(2) / evals.abs().clamp(min=1e-300)).sum())
    assert not wrong == pytest.approx(ref, rel=1e-3)


def test_a_shared_decomposition_gives_the_same_scores_and_a_wrong_one_is_caught():
    g, s, ref = _rank_deficient(d=7, rank=5, seed=1)
    slices = {"linear": [0, 1, 2], "readout": [3, 4, 5, 6]}
    plain = site_projection_scores(g, s, slices)
    shared = site_projection_scores(g, s, slices, lambda: psd_eig(s))
    assert plain == shared and plain["all"] == pytest.approx(ref, rel=1e-10)
    other = s + torch.diag(torch.arange(7, dtype=F64))                # the decomposition of another matrix
    assert site_projection_scores(g, s, slices, lambda: psd_eig(other))["all"] != pytest.approx(ref, rel=1e-3)


def test_sigma_eig_gives_psd_pinv_bit_for_bit_and_follows_new_samples():
    gen = torch.Generator().manual_seed(2)
    acc = SiteAccumulator(d=3, r=5, n_total=8, n_chunks=2)
    m, phi = torch.randn(8, 2, 3, generator=gen, dtype=F64), torch.randn(8, 2, 5, generator=gen, dtype=F64)
    phi[..., 4] = phi[..., 3]                                          # Sigma singular: the eigh path
    acc.update(m[:4], phi[:4])
    first = acc.sigma_eig()
    assert torch.equal(psd_pinv(acc.Sigma, eig=first), psd_pinv(acc.Sigma))
    assert acc.sigma_eig() is first                                    # computed once
    acc.update(m[4:], phi[4:])
    assert acc.sigma_eig() is not first
    assert torch.equal(psd_pinv(acc.Sigma, eig=acc.sigma_eig()), psd_pinv(acc.Sigma))


def _numbers(rep) -> list:
    out = []
    for r in rep.sites:
        out += [(r["site"], k, v) for k, v in sorted(r.items()) if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return out + [(k, getattr(rep, k)) for k in ("predicted_gain", "certified_gain", "gain_ucb", "best_site", "verdict")]


def test_saturation_with_the_shared_decomposition_equals_the_call_without_it(monkeypatch):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 8), nn.Sequential(nn.Linear(8, 8), nn.ReLU()),
                        nn.Sequential(nn.Linear(8, 8), nn.Tanh()), nn.Linear(8, 2)).double()
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(1024, 3, generator=gen, dtype=F64)
    y = (x[:, 0] > 0).long()
    shared = dc.saturation(net, (x, y), sites=["1", "2"], curvature_n=128)
    monkeypatch.delattr(SiteAccumulator, "sigma_eig")                   # each pass decomposes Sigma itself
    alone = dc.saturation(net, (x, y), sites=["1", "2"], curvature_n=128)
    a, b = _numbers(shared), _numbers(alone)
    assert [k[:2] for k in a] == [k[:2] for k in b]
    for (k, u), (_, v) in zip([(t[:-1], t[-1]) for t in a], [(t[:-1], t[-1]) for t in b]):
        assert (u == v) or (isinstance(u, float) and math.isclose(u, v, rel_tol=1e-12, abs_tol=1e-15)), (k, u, v)
