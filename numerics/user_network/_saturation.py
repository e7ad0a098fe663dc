"""``dc.saturation``: is a user's network deep enough, and where would one block help? (THEORY §8, §10)."""
from __future__ import annotations

import math
import time

from torch import nn

from numerics.user_network._data import as_stream
from numerics.user_network._given_scan import param_checksum
from numerics.user_network._gain import insertion_record, split_curvature
from numerics.user_network._insert import BETA
from numerics.user_network._loss import as_loss
from numerics.user_network._modes import (CURVATURE_MODES, UNMEASURED, check_modes, mode_note, model_verdict, scores,
                                    ucb_norm, with_curvature)
from numerics.user_network._ranking import check_rank_by
from numerics.user_network._report import SaturationReport
from numerics.user_network._scan import accumulate, eval_mode, site_blocks, step_gradients
from numerics.user_network._suggestion import suggest as suggest_from
from numerics.user_network._verdict import DEFAULT_EPS
from numerics.estimators import curvature_along, site_loss

__all__ = ["CURVATURE_MODES", "DEFAULT_FAMILIES", "saturation"]

#: **Choice**: the protocol families scanned by default (those of ``depthcert saturation``).
DEFAULT_FAMILIES = ("linear", "affine", "readout")



def check_model(model) -> nn.Module:
    """Raises TypeError unless ``model`` is an ``nn.Module`` with parameters, ValueError if one of its floating
    parameters or buffers holds a NaN or an inf (named; one vectorised test per tensor, one sync in all)."""
    import torch

    if not isinstance(model, nn.Module):
        raise TypeError(f"model is a {type(model).__name__}, must be a torch.nn.Module.")
    if next(model.parameters(), None) is None:
        raise ValueError("model has no parameters, must have at least one (its device and dtype are read from them).")
    named = [(n, t) for n, t in [*model.named_parameters(), *model.named_buffers()] if t.is_floating_point() and t.numel()]
    with torch.no_grad():
        finite = torch.stack([torch.isfinite(t).all().to(named[0][1].device) for _, t in named]) if named else None
    if finite is not None and not bool(finite.all()):
        name, t = named[int((~finite).nonzero()[0, 0])]
        bad = ~torch.isfinite(t.detach())
        where = tuple(int(v) for v in bad.nonzero()[0])
        raise ValueError(f"model's {name}{list(where)} == {float(t.detach()[where])}, must be finite: depthcert "
                         f"refuses a network with NaN or inf weights ({int(bad.sum())} of {t.numel()} entries of {name}).")
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
    from numerics.distributed import active
    if active():   # under torch.distributed, data is this rank's shard of the probe (numerics.user_network._sharded)
        from numerics.user_network._sharded import split_sharded
        return split_sharded(data, curvature_data, model, batch_size, curvature_n, n_chunks)
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


def _slope(G_x, D) -> float:
    return float((G_x * D.to(G_x.dtype)).sum() / D.norm())


def _curvature(model, site, block, acc, curv, loss, R0: float, G_x, replays: dict,
               directions=("euclidean", "natural"), out: dict | None = None) -> dict:
    """Theorem 1 along ``-G`` and ``-G Sigma^+`` on the step sample (``R0``: its mean loss; ``G_x``: the
    site's cross-gradient on it, which gives both slopes without a pass; ``replays``: ``{site: (recording of
    the part before the site, R(0) by its path)}``, kept for the insertion check; the gains use ``beta_eff``,
    :func:`numerics.user_network._suggestion.nonnegative_beta`; ``first_order_gain``: the raw plug-in).
    ``directions``: a subset (``curvature="auto"``), added to ``out`` (a partial record of this site)."""
    from numerics._numerics import psd_pinv
    from numerics._replay import SiteReplay

    both = tuple(directions) == ("euclidean", "natural") and out is None
    if both:
        out = {"beta": None, "beta_natural": None, "gain_euclidean": 0.0, "predicted_gain": 0.0, "first_order_gain": 0.0,
               "realised_gain": 0.0, "beta_self_consistent": None, "step_loss": R0}
    else:
        out = dict(out or {**UNMEASURED, "step_loss": R0})
        out.update({"gain_euclidean": 0.0, "realised_gain": 0.0} if "euclidean" in directions else {},
                   **({"predicted_gain": 0.0, "first_order_gain": 0.0} if "natural" in directions else {}))
    G = acc.G
    if not float(G.norm()) > 0:
        return out
    xc, yc = curv
    if site not in replays:
        rep = SiteReplay(model, site)   # both directions' passes (and the insertion check) share one recording
        replays[site] = (rep, site_loss(model, site, block, xc, yc, loss, replay=rep))   # R(0) by the path of every R(tau)
    rep, R0_path = replays[site]
    known = lambda D: (R0_path, _slope(G_x, D))   # noqa: E731
    consistent = [] if both or out.get("beta_self_consistent") is None else [out["beta_self_consistent"]]
    if "euclidean" in directions:
        be, _, gain_e, real_e = curvature_along(model, site, block, xc, yc, G, G, loss, replay=rep, method=BETA,
                                                known=known(G))
        out.update(beta=be.beta, gain_euclidean=min(gain_e, R0), realised_gain=real_e)
        consistent.append(be.self_consistent)
    if "natural" in directions:
        # the eigendecomposition of the "all" projection score, when the scan made one (same numbers as psd_pinv(Sigma))
        D_n = G @ psd_pinv(acc.Sigma, eig=acc.sigma_eig() if hasattr(acc, "sigma_eig") else None)
        bn, _, gain_n, _ = curvature_along(model, site, block, xc, yc, G, D_n, loss, replay=rep, method=BETA,
                                           known=known(D_n))
        out.update(beta_natural=bn.beta, predicted_gain=min(gain_n, R0), first_order_gain=gain_n)
        consistent.append(bn.self_consistent)
    out["beta_self_consistent"] = bool(all(consistent))
    return out   # min(g, R0) == slope^2 / (2 max(beta, slope^2 / (2 R0))): Theorem 1 at beta_eff


def _records(model, blocks, accs, step, loss, level_site: float, eps: float, mode: str, gradients,
             found: dict, rank_by: str = "predicted_gain") -> tuple[list, dict, list]:
    """``(records, replays, sites whose curvature was measured)``. ``mode`` (``dc.saturation(curvature=...)``):

    * ``"all"``: both directions at every site (as before issue 38);
    * ``"auto"`` (**Choice**): only what can change the verdict, ``best_site`` and its
      ``predicted_gain``. Every candidate for ``best_site`` (the rejecting sites, or every site
      when none rejects) gets ``beta_natural`` (which ranks them); ``best_site`` then gets ``beta``;
      then the other sites, in decreasing ``||G|| + radius`` (the beta-free part of ``gain_ucb``), get
      ``beta`` until one has ``gain_ucb >= eps`` (the model is then not saturated, whatever the
      rest). When no site rejects (saturated or undetermined), the sites get ``beta`` in that order
      until one has ``n_to_saturate`` None (``||G_hat|| >= sqrt(2 beta eps)``: its ``gain_ucb >= eps``,
      so not saturated, and ``n_needed_saturated`` None whatever the rest, so ``n_needed`` is the
      smallest ``n_to_reject``, as with ``"all"``), else every site. So the verdict, ``best_site``,
      ``predicted_gain`` (and, when no site rejects, ``n_needed``) equal ``"all"``'s;
      ``certified_gain`` is the largest over the rejecting sites with ``beta`` (still a lower
      confidence bound, possibly smaller than ``"all"``'s); a site without ``beta`` has ``gain_ucb``
      inf (no upper bound), so the model's ``gain_ucb`` and ``n_needed_saturated`` can differ;
    * ``"none"``: nowhere (``gradients`` None).

    ``found``: every site's :func:`~numerics.user_network._modes.scores`; ``rank_by``: the score ``best_site`` is ranked
    by (another than ``predicted_gain``: a scan score, so with ``"auto"`` only ``best_site`` gets ``beta_natural``).
    """
    replays: dict = {}
    if mode == "none":
        return [with_curvature(found[s], UNMEASURED, level_site, eps, None) for s in blocks], replays, []
    G_step, R0 = gradients
    curv: dict = {}

    def measure(s, directions=("euclidean", "natural")):
        curv[s] = _curvature(model, s, blocks[s], accs[s], step, loss, R0, G_step[s], replays, directions,
                             None if mode == "all" else curv.get(s))
        return with_curvature(found[s], curv[s], level_site, eps, R0)

    rejecting = [s for s in blocks if found[s]["reject"]]
    if mode == "all":
        _record(model, blocks, accs, list(blocks), step, loss, replays)
        return [measure(s) for s in blocks], replays, list(blocks)
    if rank_by == "predicted_gain" or not rejecting:   # no site rejects: every site competes for best_site
        _record(model, blocks, accs, rejecting or list(blocks), step, loss, replays)
        for s in rejecting or blocks:
            measure(s, ("natural",))
        best = max(rejecting, key=lambda s: curv[s]["predicted_gain"]) if rejecting else None   # verdict()'s choice
    else:   # a scan score ranks: known without curvature; best_site's predicted_gain is still reported
        best = max(rejecting, key=lambda s: -math.inf if found[s][rank_by] is None else found[s][rank_by])
        measure(best, ("natural",))
    by_ucb = sorted(blocks, key=lambda s: -ucb_norm(found[s], level_site))
    if best is not None:
        by_ucb = [best] + [s for s in by_ucb if s != best]
    for s in by_ucb:
        rec = measure(s, ("euclidean",))
        if rec["gain_ucb"] >= eps if rejecting else rec["n_to_saturate"] is None:
            break
    records = [with_curvature(found[s], curv.get(s, UNMEASURED), level_site, eps, R0) for s in blocks]
    return records, replays, [s for s in blocks if s in curv]


def _record(model, blocks: dict, accs: dict, sites: list, step, loss, replays: dict) -> None:
    """``replays[site] = (SiteReplay, R(0) by its path)`` for every site of ``sites`` with a non-zero ``G`` not yet
    in ``replays``, from one recording forward per batch of the step sample for all of them
    (:func:`numerics.estimators.site_losses`; the same numbers as one recording per site in :func:`_curvature`)."""
    from numerics.estimators import site_losses

    todo = {s: blocks[s] for s in sites if s not in replays and float(accs[s].G.norm()) > 0}
    if len(todo) > 1:
        replays.update(site_losses(model, todo, step[0], step[1], loss))


def _shared(recorded, G_x) -> dict:
    """The insertion check's ``replay`` and ``known`` from the best site's curvature (none if it had no ``G``)."""
    return {} if recorded is None else {"replay": recorded[0], "known": (recorded[1], G_x)}


def _scan(model, probe, blocks, loss_fn, n_chunks, samples, level, eps, fams, seed, curvature="all", suggest=True,
          costs=None, rank_by=None):
    """``(stats, records, model verdict, insertion record)`` of one scan (in eval mode); ``costs``: a dict that
    receives the seconds of each part (``scan_s``, ``curvature_s``, ``suggestion_s``) and ``curvature_sites``."""
    step, gain = samples
    costs = {} if costs is None else costs
    with eval_mode(model):
        t = time.perf_counter()
        accs = accumulate(model, probe, blocks, loss_fn, n_chunks=n_chunks)
        found = {s: scores(s, blocks[s], accs[s], level / len(blocks)) for s in blocks}   # projection scores, tests
        t, costs["scan_s"] = time.perf_counter(), time.perf_counter() - t
        # R0: no gain above the loss it would lower; every site's slopes from one backward over the step sample
        grads = step_gradients(model, step[0], step[1], blocks, loss_fn) if curvature != "none" or suggest else None
        records, replays, measured = _records(model, blocks, accs, step, loss_fn, level / len(blocks), eps, curvature, grads,
                                            found, rank_by or "predicted_gain")
        model_v = model_verdict(records, eps, curvature, rank_by)
        t, costs["curvature_s"] = time.perf_counter(), time.perf_counter() - t
        best = model_v["best_site"]
        ins = insertion_record(model, best, blocks[best], accs[best].G, fams, seed, step, gain, loss_fn, level,
                               **_shared(replays.get(best), grads[0][best])) if suggest else None
        costs["suggestion_s"], costs["curvature_sites"] = time.perf_counter() - t, measured
    return accs, records, model_v, ins


def saturation(model, data, loss="cross_entropy", sites="blocks.*", layout=None, level: float = 0.05,
               seed: int = 0, curvature_data=None, eps: float = DEFAULT_EPS, *, families=DEFAULT_FAMILIES,
               width: int = 16, batch_size: int = 256, curvature_n: int = 1024, n_chunks: int = 16,
               output=None, curvature: str = "all", suggest: bool | None = None, rank_by: str | None = None) -> SaturationReport:
    """Scan every site of ``model`` on ``data``: improvable, saturated within ``eps``, or undetermined.

    Paper B's first-order saturation test (THEORY §8) at each site, in the site's state layout
    (THEORY §10): the cross-gradient ``G`` of a zero-output block of each family, a test of
    ``G = 0`` at the family-wise ``level``, and Theorem 1's predicted gain of one jumpboard step.

    Parameters
    ----------
    model : torch.nn.Module
        Any network (batch-norm only in eval mode); scanned on its device, in its dtype; never changed.
    data : DataLoader, Dataset, tuple or iterable
        The probe: a ``DataLoader``, a ``Dataset``, a tuple ``(x, y)`` of tensors or numpy arrays,
        or a re-iterable of ``(x, y)`` batches (streamed).
    loss : str or callable, default "cross_entropy"
        ``"cross_entropy"``, ``"squared"`` (integer labels one-hot) or ``loss(output, y) -> (n,)``.
    sites : str, list of str or None, default "blocks.*"
        Module paths, or ``"name.*"`` for every block of a ``ModuleList``/``Sequential``; None: the
        model's block boundaries.
    layout : str, dict or None, default None
        None (inferred per site; an ambiguous state is an error), ``"ND"``, ``"NLD"``, ``"NCL"``,
        ``"NCHW"``, ``"NHWC"`` (declared, never inferred), or ``{site: layout}``.
    level : float, default 0.05
        Family-wise level of the verdict (each of the ``K`` sites at ``level / K``).
    seed : int, default 0
        Seed of the blocks' frozen features (fixed before any gradient).
    curvature_data : data or None, default None
        The sample for ``beta`` and the realised gain; None: the first ``min(curvature_n, n/4)``
        samples of ``data``, kept apart from the probe (the report says so). Its first half fixes
        ``beta`` and the jumpboard steps, its second half checks the suggested insertion
        (:meth:`SaturationReport.gain_interval`, ``suggestion``).
    eps : float, default DEFAULT_EPS (1e-3)
        The tolerance of "saturated within eps" (first-order gain, in mean-loss units).
    families : sequence of str, keyword-only
        The block families scanned besides ``"linear"`` and ``"affine"`` (default: ``"readout"``).
    width : int, keyword-only, default 16
        The width ``r`` of the scanned blocks' features.
    batch_size : int, keyword-only, default 256
        Samples per forward and backward pass.
    curvature_n : int, keyword-only, default 1024
        The largest curvature sample taken from ``data`` when ``curvature_data`` is None (>= 2).
    n_chunks : int, keyword-only, default 16
        The probe is cut into this many chunks for the sequential test.
    output : int, str or callable, keyword-only, default None
        For a model returning a tuple or a dict: the index, key or callable that picks the logits
        (e.g. ``0``); None: the model returns the logits.
    curvature : str, keyword-only, default "all"
        Where ``beta`` is measured (forwards on the step sample): ``"all"`` (every site);
        ``"auto"`` (only the sites that can change the verdict, ``best_site`` or ``predicted_gain``:
        these three equal ``"all"``'s; ``certified_gain`` may be smaller (still a lower bound), and
        ``gain_ucb``/``n_needed_saturated`` may differ: the other sites' curvature fields are None);
        ``"none"`` (the scan alone: the verdict from the tests, never ``"saturated"``).
    suggest : bool or None, keyword-only, default None
        Check the suggested insertion on the gain sample (None: True unless ``curvature="none"``);
        False: ``insertion`` and ``suggestion`` None, the verdict and scores unchanged.
    rank_by : str or None, keyword-only, default None
        The score ``best_site`` is ranked by (``ranked_by`` in the report), among the sites whose test
        rejects ``G = 0``, else among all: None, the default ranking ``RANKED_BY`` (``"predicted_gain"``;
        ``"G_sq"`` with ``curvature="none"``), or a score of the site records: ``"predicted_gain"``,
        ``"P_linear"``, ``"P_affine"``, ``"P_readout"``, ``"P_block"`` (a ``P_<family>`` of a scanned
        family), ``"P_all"``, ``"AG_max"``, ``"G_sq"``. **Choice**: the default is the score
        that predicted the trained gains best at the largest horizon of the stored studies
        (``docs/predicted/pooled.json``, made by ``python benchmarks/study_predicted.py --pool
        docs/predicted``; the rule: ``numerics.user_network._ranking.RANKING_RULE``). Whether it predicts on
        your network: :func:`depthcert.calibration`, then :meth:`SaturationReport.with_calibration`.

    Returns
    -------
    SaturationReport
        ``verdict``, ``best_site``, ``predicted_gain``, ``certified_gain``, ``gain_ucb``, ``n_needed``
        and every site's scores (``table()``, ``to_json``, ``plot``); ``suggestion``: the insertion it
        recommends, checked on the gain sample, or None with ``suggestion_reason``; ``costs``: the
        seconds of each part (scan, curvature, suggestion, other, total).

    Raises
    ------
    TypeError, ValueError
        A bad model, data, loss, site, layout, level or eps, each named with the allowed values;
        batch-norm in train mode.

    Examples
    --------
        >>> import torch
        >>> from torch import nn
        >>> import depthcert as dc
        >>> _ = torch.manual_seed(0)
        >>> net = nn.Sequential(nn.Linear(3, 8), nn.Sequential(nn.Linear(8, 8), nn.Tanh()), nn.Linear(8, 2)).double()
        >>> def draw(n, seed):                      # one independent sample per role
        ...     g = torch.Generator().manual_seed(seed)
        ...     x = torch.randn(n, 3, generator=g, dtype=torch.float64)
        ...     return x, (x[:, 0] > 0).long()
        >>> rep = dc.saturation(net, draw(512, seed=1), sites=["1"], curvature_n=64)
        >>> rep.verdict in ("improvable", "saturated", "undetermined"), rep.sites[0]["layout"], rep.sites[0]["d"]
        (True, 'ND', 8)
    """
    start = time.perf_counter()
    check_model(model), _check(level, eps, curvature_n)
    suggest = check_modes(curvature, suggest)
    loss_fn = as_loss(loss, output)
    probe, curv, curv_note = _split(data, curvature_data, model, batch_size, curvature_n, n_chunks)
    step, gain = split_curvature(curv)
    if isinstance(families, str) or not len(list(families)):
        raise ValueError(f"families == {families!r}, must be a non-empty sequence of family names (e.g. "
                         f"{list(DEFAULT_FAMILIES[2:])}): the block families scanned besides linear and affine.")
    fams = list(dict.fromkeys(["linear", "affine", *families]))
    ranked_by = check_rank_by(rank_by, fams, curvature)
    blocks = site_blocks(model, sites, layout, curv[0][:2], fams, width, seed)   # refuses batch-norm in train mode
    costs: dict = {}
    accs, records, model_v, ins = _scan(model, probe, blocks, loss_fn, n_chunks, (step, gain), level, eps, list(families), seed,
                                        curvature, suggest, costs, ranked_by)
    t = time.perf_counter()
    sug, why = suggest_from(ins) if suggest else (None, "not asked (suggest=False): no insertion was checked")
    checked = {(ins["site"], f): (r.pop("_V"), r["beta"]) for f, r in ins["families"].items()} if ins else {}
    costs["suggestion_s"] += time.perf_counter() - t
    measured = costs.pop("curvature_sites")
    costs["total_s"] = time.perf_counter() - start
    costs["other_s"] = max(costs["total_s"] - costs["scan_s"] - costs["curvature_s"] - costs["suggestion_s"], 0.0)
    notes = _notes(curv_note, len(blocks), ins, ranked_by) + _default_note(model, sites, blocks) + mode_note(curvature, suggest, records, ranked_by)
    return SaturationReport(**model_v, level=level, eps=eps, n=len(probe), n_curvature=int(step[0].shape[0]),
                            curvature_source=curv_note, seed=seed, loss=loss if isinstance(loss, str) else "callable",
                            sites=records, notes=notes,
                            insertion=ins, suggestion=sug,
                            suggestion_reason=why, curvature=curvature, curvature_sites=measured, costs=costs,
                            _blocks=blocks, _stats=accs, _curvature=step, _loss=loss_fn,
                            _checked=checked, _data=(probe, curv), _model_sum=param_checksum(model))


def _default_note(model, sites, blocks) -> list[str]:
    """With ``sites=None``: which default sites were scanned, and which were left out (shape-changing)."""
    if sites is not None:
        return []
    from numerics.sites import default_site_names

    try:
        defaults = default_site_names(model)
    except Exception:   # noqa: BLE001 -- a note only; the scan itself resolved the sites
        return []
    dropped = [n for n in defaults if n not in blocks]
    return [f"sites=None: scanned the default sites {list(blocks)} (the blocks of the largest list of blocks and its "
            "sibling lists of the same block class)" + (f"; left out (not shape-keeping): {dropped}" if dropped else "")]


def _notes(curv_note: str, k: int, ins, ranked_by: str = "predicted_gain") -> list[str]:
    gain_note = ("suggested insertion (best_site, jumpboard): " + ins["source"] + f"; each family's interval at level "
                 f"{ins['level']:g} (Student t; gain_interval(family, n_eval))") if ins else \
        "no gain sample (the curvature sample has < 4 samples): no interval for the insertion's gain"
    return [f"curvature sample: {curv_note}; its first half (step sample) gives beta and the jumpboard step, "
            "its second half (gain sample) the insertion's measured gain",
            f"each of the {k} sites tested at level/{k} (Bonferroni); 'saturated' = every site's upper "
            "confidence bound on the first-order gain ||G||^2/(2 beta) below eps (Chebyshev, plug-in variance)",
            "beta is measured on the step sample (a plug-in): the least beta, from the least curvature a "
            "nonnegative loss allows up, whose descent inequality holds at its own step slope/beta (so Theorem 1's "
            "gain holds on that sample at the step taken when beta_self_consistent); predicted_gain is that "
            "gain along -G Sigma_phi^+ (never above the step sample's loss, step_loss); first_order_gain is the raw "
            "plug-in; certified_gain uses the betting test's lower confidence bound on ||G||",
            gain_note, "radii (rho_phi) are norms of the whole state over its P positions (THEORY §10)",
            f"best_site is ranked by {ranked_by} (among the sites whose test rejects G = 0, else all): whether that "
            "ranking predicts the gains realised on this network is measured by dc.predicted_vs_observed and "
            "dc.calibration; a measured answer to where, and whether a new block is worth it: dc.trial_insertion"]
