"""``dc.saturation``: is a user's network deep enough, and where would one block help? (THEORY §8, §10)."""
from __future__ import annotations

from torch import nn

from depthcert.api._data import as_stream
from depthcert.api._gain import insertion_record, split_curvature
from depthcert.api._loss import as_loss
from depthcert.api._report import SaturationReport
from depthcert.api._scan import accumulate, eval_mode, site_blocks
from depthcert.api._verdict import DEFAULT_EPS, gain_ucb, n_to_reject, n_to_saturate, verdict
from numerics.estimators import adaptive_test, curvature_along, site_projection_scores

__all__ = ["DEFAULT_FAMILIES", "saturation"]

#: **Choice**: the protocol families scanned by default (those of ``depthcert saturation``).
DEFAULT_FAMILIES = ("linear", "affine", "readout")


def check_model(model) -> nn.Module:
    """Raises TypeError unless ``model`` is an ``nn.Module`` with parameters."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model is a {type(model).__name__}, must be a torch.nn.Module.")
    if next(model.parameters(), None) is None:
        raise ValueError("model has no parameters, must have at least one (its device and dtype are read from them).")
    return model


def _check(level: float, eps: float, curvature_n: int) -> None:
    if not 0.0 < float(level) < 1.0:
        raise ValueError(f"level == {level!r}, must be in (0, 1).")
    if not float(eps) > 0:
        raise ValueError(f"eps == {eps!r}, must be > 0.")
    if not (isinstance(curvature_n, int) and curvature_n >= 2):
        raise ValueError(f"curvature_n == {curvature_n!r}, must be an int >= 2.")


def _split(data, curvature_data, model, batch_size: int, curvature_n: int, n_chunks: int):
    """``(probe stream, curvature (x, y), statement)``; by default the first samples of ``data``."""
    stream = as_stream(data, "data", model, batch_size)
    if curvature_data is not None:
        curv = as_stream(curvature_data, "curvature_data", model, batch_size)
        xc, yc = curv.take(curvature_n)
        return stream, (xc, yc), f"curvature_data (its first {xc.shape[0]} samples)"
    k = min(curvature_n, len(stream) // 4)   # **Choice**: at most a quarter of data goes to curvature
    if len(stream) - k < max(4, 2 * n_chunks) or k < 2:
        raise ValueError(f"data has {len(stream)} samples, must leave >= {max(4, 2 * n_chunks)} probe samples and "
                         f">= 2 curvature samples (n - min(curvature_n, n // 4) == {len(stream) - k}, n // 4 == {k}) "
                         "when curvature_data is None (a disjoint part of data is the curvature sample).")
    return stream.part(k, len(stream)), stream.take(k), f"a disjoint part of data: its first {k} samples"


def _curvature(model, site, block, acc, curv, loss) -> dict:
    from numerics._numerics import psd_pinv
    from numerics._replay import SiteReplay

    out = {"beta": None, "beta_natural": None, "gain_euclidean": 0.0, "predicted_gain": 0.0,
           "realised_gain": 0.0, "beta_self_consistent": None}
    G = acc.G
    if not float(G.norm()) > 0:
        return out
    xc, yc = curv
    rep = SiteReplay(model, site)   # both directions' passes share one recording of the part before the site
    be, _, gain_e, real_e = curvature_along(model, site, block, xc, yc, G, G, loss, replay=rep)
    bn, _, gain_n, _ = curvature_along(model, site, block, xc, yc, G, G @ psd_pinv(acc.Sigma), loss, replay=rep)
    out.update(beta=be.beta, beta_natural=bn.beta, gain_euclidean=gain_e, predicted_gain=gain_n,
               realised_gain=real_e, beta_self_consistent=bool(be.self_consistent and bn.self_consistent))
    return out


def _record(model, site, block, acc, curv, loss, level_site: float, eps: float) -> dict:
    rec = {"site": site, "layout": block.layout, "d": block.d, "P": block.positions, "r": block.r, "n": acc.n}
    P = site_projection_scores(acc.G, acc.Sigma, block.slices)
    rec.update({f"P_{f}": P.get(f) for f in ("linear", "affine", "readout", "block")}, P_all=P["all"])
    rec.update(G_sq=acc.u_statistic, G_norm=float(acc.G.norm()), AG_max=acc.ag_max, rho_phi=acc.phi_max)
    rec.update(_curvature(model, site, block, acc, curv, loss))
    test = adaptive_test(acc, level_site)
    sigma2 = acc.x_sq / acc.n
    beta = rec["beta"]
    rec.update(log_wealth=test.statistic, threshold=test.threshold, reject=test.reject,
               b_violations=test.b_violations, sigma2=sigma2,
               certified_gain=test.lower_bound**2 / (2 * beta) if beta and test.reject else 0.0,
               gain_ucb=gain_ucb(rec["G_norm"], sigma2, acc.n, level_site, beta),
               n_to_reject=n_to_reject(test.statistic, acc.z.numel(), acc.chunk, level_site),
               n_to_saturate=n_to_saturate(rec["G_norm"], sigma2, level_site, beta, eps))
    return rec


def _scan(model, probe, blocks, loss_fn, n_chunks, samples, level, eps, fams, seed):
    """``(stats, records, model verdict, insertion record)`` of one scan (in eval mode)."""
    step, gain = samples
    with eval_mode(model):
        accs = accumulate(model, probe, blocks, loss_fn, n_chunks=n_chunks)
        records = [_record(model, s, blocks[s], accs[s], step, loss_fn, level / len(blocks), eps) for s in blocks]
        model_v = verdict(records, eps)
        best = model_v["best_site"]
        ins = insertion_record(model, best, blocks[best], accs[best].G, fams, seed, step, gain, loss_fn, level)
    return accs, records, model_v, ins


def saturation(model, data, loss="cross_entropy", sites="blocks.*", layout=None, level: float = 0.05,
               seed: int = 0, curvature_data=None, eps: float = DEFAULT_EPS, *, families=DEFAULT_FAMILIES,
               width: int = 16, batch_size: int = 256, curvature_n: int = 1024, n_chunks: int = 16
               ) -> SaturationReport:
    """Scan every site of ``model`` on ``data``: improvable, saturated within ``eps``, or undetermined.

    Args:
        model: any ``nn.Module`` (batch-norm only in eval mode); scanned on its device, in its dtype.
        data: a DataLoader, a Dataset, a tuple ``(x, y)`` of tensors / numpy arrays, or an
            iterable of ``(x, y)`` batches (the probe; streamed).
        loss: ``"cross_entropy"``, ``"squared"`` (integer labels one-hot) or ``loss(out, y) -> (n,)``.
        sites: module paths or ``"name.*"``; None: the model's block boundaries.
        layout: None (inferred per site; ambiguous states are an error), ``"ND"``, ``"NLD"``,
            ``"NCL"``, ``"NCHW"``, or ``{site: layout}``.
        level: family-wise level of the verdict (each of the ``K`` sites at ``level / K``).
        seed: seed of the protocol features (fixed before any gradient).
        curvature_data: the sample for ``beta`` and the realised gain; None: the first
            ``min(curvature_n, n/4)`` samples of ``data`` (disjoint from the probe; the report says so).
            Its first half fixes ``beta`` and the jumpboard step, its second half measures the
            suggested insertion's gain (:meth:`SaturationReport.gain_interval`).
        eps: the tolerance of "saturated within eps" (first-order gain, mean loss units).

    Returns:
        A :class:`SaturationReport`.

    Raises:
        TypeError, ValueError: bad model, data, loss, site, layout, level or eps (named).

    Example:
        >>> import torch
        >>> from torch import nn
        >>> _ = torch.manual_seed(0)
        >>> net = nn.Sequential(nn.Linear(3, 8), nn.Sequential(nn.Linear(8, 8), nn.Tanh()), nn.Linear(8, 2)).double()
        >>> x = torch.randn(512, 3, dtype=torch.float64)
        >>> rep = saturation(net, (x, (x[:, 0] > 0).long()), sites=["1"], curvature_n=64)
        >>> rep.verdict in ("improvable", "saturated", "undetermined"), rep.sites[0]["layout"], rep.sites[0]["d"]
        (True, 'ND', 8)
    """
    check_model(model)
    _check(level, eps, curvature_n)
    loss_fn = as_loss(loss)
    probe, curv, curv_note = _split(data, curvature_data, model, batch_size, curvature_n, n_chunks)
    step, gain = split_curvature(curv)
    fams = list(dict.fromkeys(["linear", "affine", *families]))
    blocks = site_blocks(model, sites, layout, curv[0][:2], fams, width, seed)   # refuses batch-norm in train mode
    accs, records, model_v, ins = _scan(model, probe, blocks, loss_fn, n_chunks, (step, gain), level, eps, list(families), seed)
    return SaturationReport(**model_v, level=level, eps=eps, n=len(probe), n_curvature=int(step[0].shape[0]),
                            curvature_source=curv_note, seed=seed, loss=loss if isinstance(loss, str) else "callable",
                            sites=records, notes=_notes(curv_note, len(blocks), ins), insertion=ins,
                            _blocks=blocks, _stats=accs, _curvature=step, _loss=loss_fn)


def _notes(curv_note: str, k: int, ins) -> list[str]:
    gain_note = ("suggested insertion (best_site, jumpboard): " + ins["source"] + f"; each family's interval at level "
                 f"{ins['level']:g} (Student t; gain_interval(family, n_eval))") if ins else \
        "no gain sample (the curvature sample has < 4 samples): no interval for the insertion's gain"
    return [f"curvature sample: {curv_note}; its first half (step sample) gives beta and the jumpboard step, "
            "its second half (gain sample) the insertion's measured gain",
            f"each of the {k} sites tested at level/{k} (Bonferroni); 'saturated' = every site's upper "
            "confidence bound on the first-order gain ||G||^2/(2 beta) below eps (Chebyshev, plug-in variance)",
            "beta is measured on the step sample (a plug-in); predicted_gain is Theorem 1's gain along "
            "-G Sigma_phi^+ (plug-in), certified_gain uses the betting test's lower confidence bound on ||G||",
            gain_note, "radii (rho_phi) are norms of the whole state over its P positions (THEORY §10)"]
