"""Power of ``dc.saturation``'s test on a network whose insertion gain is known (issue 16, item 7).

World: the regression teacher of known depth 2 (``numerics.data.TeacherRegression``, noise 0.1).
The student is the teacher's own network with its last block's branch scaled by ``1 - t``
(``t = 0``: the Bayes-optimal function, where ``G = 0`` at every site, so every rejection is a
false alarm; ``t = 1``: the teacher with one block removed). What one block can recover is known:
``excess(t) = E(f_t(x) - mu(x))^2``, the student's excess risk over the teacher's (exact
conditional mean, Monte Carlo over ``x`` on ``2^17`` samples); the suggested insertion's
immediate gain at the largest probe (measured on an independent ``2^17`` samples) is printed beside it.

Per cell ``(t, n)``: over ``seeds`` probe draws (each its own stream), the rate at which the
scan's betting test rejects "saturated" (``G = 0`` at some site, each at ``level / K``), with its
two-sided 95% Clopper-Pearson interval, and the counts of the three verdicts.

    OMP_NUM_THREADS=1 python benchmarks/bench_saturation_power.py [--quick]
"""
from __future__ import annotations

import argparse
import copy

import torch
from scipy.stats import beta as beta_dist

__all__ = ["clopper_pearson", "format_table", "run_power", "student"]

SCAN = dict(sites=None, width=8)


def clopper_pearson(k: int, n: int, level: float = 0.05) -> tuple[float, float]:
    """Two-sided level-``(1 - level)`` Clopper-Pearson interval of a rate ``k / n``."""
    lo = 0.0 if k == 0 else float(beta_dist.ppf(level / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(beta_dist.ppf(1 - level / 2, k + 1, n - k))
    return lo, hi


def teacher():
    from numerics.data import TeacherRegression

    return TeacherRegression(8, depth=2, width=16, seed=0, noise_std=0.1, mean_bound=1.0)


def student(task, t: float):
    """The teacher's network with its last branch's output scaled by ``1 - t`` (trainable copy)."""
    net = copy.deepcopy(task.net)
    with torch.no_grad():
        last = net.branches[-1][2]
        last.weight.mul_(1.0 - t)
        last.bias.mul_(1.0 - t)
    for p in net.parameters():
        p.requires_grad_(True)
    return net


@torch.no_grad()
def excess_risk(task, net, n: int = 1 << 17, seed: int = 999) -> float:
    """``E(f(x) - mu(x))^2`` (Monte Carlo over ``x``; ``mu`` exact)."""
    x = task.sample_x(n, seed)
    return float(((net(x) - task.mean(x)) ** 2).mean())


def immediate_gain(task, net, n_probe: int, seed: int = 4242, n_eval: int = 1 << 17) -> dict:
    """The suggested insertion (readout, jumpboard) of one scan at ``n_probe``: its gain on ``n_eval``
    independent samples and the scan's interval for it."""
    import depthcert as dc

    rep = dc.saturation(net, task.sample(n_probe, seed), loss="squared", **SCAN)
    # force: the interval is measured against the gain whatever its sign (a refusal would hide harmful draws)
    new = dc.insert_block(net, rep.best_site, family="readout", init="jumpboard", scan=rep, force=True)
    x, y = task.sample(n_eval, seed + 1)
    with torch.no_grad():
        g = float((((net(x) - y) ** 2).sum(1) - ((new(x) - y) ** 2).sum(1)).mean())
    return {"gain": g, "interval": rep.gain_interval("readout", n_eval=n_eval), "site": rep.best_site}


def _cell(net, task, n: int, seeds: int, level: float, stream: int) -> dict:
    import depthcert as dc

    rejected, verdicts = 0, {"improvable": 0, "saturated": 0, "undetermined": 0}
    for s in range(seeds):
        rep = dc.saturation(net, task.sample(n, stream + s), loss="squared", level=level, seed=s,
                            curvature_n=min(512, n // 4), **SCAN)
        rejected += any(r["reject"] for r in rep.sites)
        verdicts[rep.verdict] += 1
    return {"rejected": rejected, **verdicts}


def run_power(ts=(0.0, 0.1, 0.2, 0.5, 1.0), ns=(512, 2048, 8192, 32768), seeds: int = 20, level: float = 0.05) -> list[dict]:
    """One row per ``(t, n)`` over ``seeds`` probe draws: how often the betting test rejects "saturated"
    (``G = 0`` at some site, at ``level / K``; ``rejected``, ``rate`` and its CP interval) and the
    verdicts (``improvable`` needs a rejection and a gain not provably below ``eps``; ``saturated``
    = every site's gain UCB below ``eps``, which a small true gain legitimately reaches at large ``n``)."""
    task, rows = teacher(), []
    for t in ts:
        net = student(task, t)
        exc = excess_risk(task, net)
        for j, n in enumerate(ns):
            cell = _cell(net, task, n, seeds, level, 10_000 * (1 + j))
            lo, hi = clopper_pearson(cell["rejected"], seeds)
            rows.append({"t": t, "excess_risk": exc, "n": n, "seeds": seeds, "rate": cell["rejected"] / seeds,
                         "cp_lo": lo, "cp_hi": hi, **cell})
    return rows


def format_table(rows: list[dict]) -> str:
    head = f"{'t':>5} {'excess R':>10} {'n':>6} {'reject G=0':>10} {'rate':>5} {'95% CP':>13}  impr/sat/undet"
    lines = [head] + [f"{r['t']:>5g} {r['excess_risk']:>10.3g} {r['n']:>6} {r['rejected']:>6}/{r['seeds']:<3} "
                      f"{r['rate']:>5.2f} [{r['cp_lo']:.2f}, {r['cp_hi']:.2f}]  "
                      f"{r['improvable']}/{r['saturated']}/{r['undetermined']}" for r in rows]
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 seeds, two probe sizes")
    a = ap.parse_args(argv)
    rows = run_power(ns=(512, 2048), seeds=3) if a.quick else run_power()
    print(format_table(rows))
    task = teacher()
    for t in (0.2, 1.0):
        print(f"t = {t:g}: suggested insertion at n = 8192:", immediate_gain(task, student(task, t), 8192))


if __name__ == "__main__":
    main()
