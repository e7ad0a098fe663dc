"""The scan's verdict against reality on the GroupNorm digits ResNet, over 20 seeds (issue 26; slow, ~5 min).

Per seed ``s``: a fresh permutation of the images the network was not trained on gives a probe (its first
quarter is the curvature sample: the step half fixes the jumpboard, the gain half its interval) and a
disjoint evaluation sample of ``n_eval`` images. ``dc.insert_block(model, rep.best_site, init="jumpboard",
scan=rep)`` is inserted -- the block Theorem 1's step trains on the step half -- and its held-out gain (mean loss
drop on the evaluation sample) must lie in ``rep.gain_interval(n_eval=n_eval)``, a level-``(1 - level)``
interval for the mean of ``n_eval`` fresh samples.

The check: ``H0``: coverage ``>= 1 - level``; rejected (the test fails) when ``P(X <= hits | 1 - level) <
0.05`` (exact binomial, i.e. the Clopper-Pearson upper bound of the coverage below ``1 - level``): 4 or
more misses of 20. Power: a coverage of 0.74 is detected with probability 0.80 (minimum detectable effect).
A seed whose scan finds no descent direction inserts ``V = 0`` (gain 0, interval ``[0, 0]``: covered
trivially); it is not counted, and seeds are drawn until 20 count (at most 30).
The population is the pool of held-out digits (draws without replacement from 1097 images: nearly i.i.d.).
"""
import inspect

import pytest
import torch

import depthcert as dc
from tests.zoo import nets

SEEDS, N_PROBE, N_EVAL = 20, 400, 400


def _loss(model, x, y):
    with torch.no_grad():
        return torch.nn.functional.cross_entropy(model(x), y, reduction="none").double()


@pytest.mark.slow
def test_gain_interval_covers_the_held_out_gain_at_its_stated_rate():
    from scipy.stats import beta, binom

    torch.set_num_threads(1)
    x, y = nets._digits_arrays()
    model = nets.train(nets.resnet_gn(), (x[:700], y[:700]), steps=100, lr=0.01)
    pool_x, pool_y = x[700:], y[700:]
    force = {"force": True} if "force" in inspect.signature(dc.insert_block).parameters else {}
    hits, records = 0, []
    for s in range(30):
        if len(records) == SEEDS:
            break
        perm = torch.randperm(pool_x.shape[0], generator=torch.Generator().manual_seed(1000 + s))
        probe, ev = perm[:N_PROBE], perm[N_PROBE:N_PROBE + N_EVAL]
        rep = dc.saturation(model, (pool_x[probe], pool_y[probe]), seed=s)
        new = dc.insert_block(model, rep.best_site, init="jumpboard", scan=rep, **force)
        gain = float((_loss(model, pool_x[ev], pool_y[ev]) - _loss(new, pool_x[ev], pool_y[ev])).mean())
        lo, hi = rep.gain_interval(n_eval=N_EVAL)
        if lo == hi:                       # V = 0: nothing inserted, nothing to check
            continue
        hits += lo <= gain <= hi
        records.append((s, rep.best_site, round(gain, 5), round(lo, 5), round(hi, 5)))
    assert len(records) == SEEDS, records
    level = rep.level
    p = binom.cdf(hits, SEEDS, 1 - level)
    cp = (beta.ppf(0.025, hits, SEEDS - hits + 1) if hits else 0.0,
          beta.ppf(0.975, hits + 1, SEEDS - hits) if hits < SEEDS else 1.0)
    print(f"coverage {hits}/{SEEDS}, Clopper-Pearson 95% [{cp[0]:.3f}, {cp[1]:.3f}], P(X <= hits) = {p:.3f}")
    for r in records:
        print(r)
    assert p >= 0.05, (hits, records)
