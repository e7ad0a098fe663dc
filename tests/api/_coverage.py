"""Coverage of the suggested insertion's gain interval over seeds (issue 16's acceptance), through ``dc``.

Per seed ``s``: the scan's data (probe + curvature sample) and an evaluation sample drawn from two
independent streams; ``new = dc.insert_block(net, rep.best_site, family, init="jumpboard", scan=rep)``;
the realised immediate gain is the mean per-sample loss drop on the evaluation sample, computed here
with torch's own losses (not the package's); it must lie in ``rep.gain_interval(family, n_eval=m)``.
The coverage over seeds is tested by Clopper-Pearson: H0 "coverage >= 1 - level" is rejected at
``alpha`` when the one-sided upper confidence bound on the coverage is below ``1 - level``.
"""
import torch
import torch.nn.functional as F
from scipy.stats import beta as beta_dist

import depthcert as dc


def cp_upper(k: int, n: int, alpha: float) -> float:
    """One-sided level-``(1 - alpha)`` Clopper-Pearson upper bound on a rate, ``k`` of ``n``."""
    return 1.0 if k == n else float(beta_dist.ppf(1 - alpha, k + 1, n - k))


def cp_rejects(k: int, n: int, rate: float, alpha: float) -> bool:
    """True when "coverage >= rate" is rejected at ``alpha`` (``P(X <= k | rate) < alpha``)."""
    return cp_upper(k, n, alpha) < rate


@torch.no_grad()
def realised_gain(old, new, x, y, loss: str) -> torch.Tensor:
    """Per-sample ``l_i(old) - l_i(new)`` (torch's losses, float64)."""
    old.eval(), new.eval()
    if loss == "cross_entropy":
        return (F.cross_entropy(old(x), y, reduction="none") - F.cross_entropy(new(x), y, reduction="none")).double()
    return (((old(x) - y) ** 2).sum(1) - ((new(x) - y) ** 2).sum(1)).double()


def _reverse_inserted_step(new, site: str) -> None:
    """The misaligned variant: the inserted unit's ``V`` negated (the step against ``-G_f``)."""
    grown = new.get_submodule(site)   # the site keeps its module; the inserted units ride on it (names kept)
    with torch.no_grad():
        grown.depthcert_units[-1].block.V.neg_()


def coverage_run(net, draw, seeds, *, n: int, m: int, loss: str, family: str = "readout", shrink: float = 0.25,
                 **scan_kw) -> dict:
    """Coverage counts over ``seeds``: honest interval, the interval shrunk by ``shrink`` around its
    centre, and the honest interval against the gain of the reversed (misaligned) step.

    Args:
        draw: ``draw(n, stream) -> (x, y)``; the scan uses stream ``2 s`` and the evaluation ``2 s + 1``.
    """
    hits = {"honest": 0, "shrunk": 0, "misaligned": 0}
    rows = []
    for s in seeds:
        rep = dc.saturation(net, draw(n, 2 * s), loss=loss, seed=s, **scan_kw)
        xe, ye = draw(m, 2 * s + 1)
        # force: the interval's coverage is over every draw, harmful jumpboards included
        new = dc.insert_block(net, rep.best_site, family=family, init="jumpboard", scan=rep, force=True)
        g = float(realised_gain(net, new, xe, ye, loss).mean())
        lo, hi = rep.gain_interval(family, n_eval=m)
        c, h = (lo + hi) / 2, shrink * (hi - lo) / 2
        _reverse_inserted_step(new, rep.best_site)
        g_mis = float(realised_gain(net, new, xe, ye, loss).mean())
        hits["honest"] += lo <= g <= hi
        hits["shrunk"] += c - h <= g <= c + h
        hits["misaligned"] += lo <= g_mis <= hi
        rows.append({"seed": s, "site": rep.best_site, "gain": g, "lo": lo, "hi": hi, "gain_reversed": g_mis})
    return {"n_seeds": len(seeds), **hits, "rows": rows}
