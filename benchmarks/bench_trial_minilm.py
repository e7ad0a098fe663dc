"""Acceptance benchmark of ``dc.trial_insertion`` on MiniLM-L6: does its chosen arm realise (nearly) the best
arm's gain, and at what cost?

    OMP_NUM_THREADS=1 python benchmarks/bench_trial_minilm.py [--seeds 10] [--out docs/trial-minilm]

``f_old``: MiniLM-L6 with BERT's MLM head trained once on the reference documents (the pretrained study's,
:func:`benchmarks.study_predicted.minilm_f_old`). Per seed ``k`` the documents outside the reference sample
are dealt anew (``MaskedCorpus.build(split_seed=k, mask_seed=k)``: new masks too), and three samples are cut
from three roles that share no document: **fit** = ``N["fit"]`` sequences of ``S``, **select** =
``N["select"]`` of ``probe``, **heldout** = ``N["heldout"]`` of ``T``.

* The trial: ``dc.trial_insertion(model, fit, heldout, sites="encoder.layer.*", steps=H, select=select,
  eta=ETA, ...)`` -- its arms trained on fit, chosen on select; its cost ``total_steps / H``.
* The truth: every arm the trial has (a block at each site, the existing layer tuned at the site the trial
  tuned, no change) trained for the full ``H`` steps on the same fit sample with the same minibatches
  (the trial's own arm construction, :mod:`depthcert.api._trial`), its realised gain measured on the same
  heldout sample (mean per-sequence MLM loss drop against ``f_old``; ``no change``: 0).
* The seed passes when the chosen arm's realised gain is at least ``FRACTION`` of the best arm's (the best
  over every arm, ``no change`` included, so the best gain is >= 0). **Choice**: a seed where every trained
  arm's gain is <= 0 has ``no change`` (gain 0) as its best arm, and counts -- in the denominator -- as a pass
  exactly when the chosen arm's realised gain is >= 0 (the same rule at best gain 0).
* Acceptance: passes in >= 80% of the seeds (with the two-sided 95% Clopper-Pearson interval of the rate)
  and a cost ratio <= 3 in every seed.

**Choice** (fixed before the run): ``ETA = 5`` (7 arms: rungs ``[H/5, H]``, ``7/5 + 2 * 4/5 = 3.0`` blocks'
training; ``eta = 3`` would cost 4.33, arithmetic of ``halving_rungs``), ``H = 20`` Adam steps at lr 3e-4 and
minibatch 16 (the lr of the pretrained study's arms), the sample sizes ``N``, the scan's ``curvature_n``.

Options (each recorded in the configuration, and in the command, when set): ``--n-fit``/``--n-select``/``--n-heldout``
the sample sizes; ``--corpus stdlib`` the larger pool of documents (``f_old``'s head trained on its reference
documents; :mod:`numerics.studies.pretrained._corpus`); ``--select-roles``/``--heldout-roles`` the corpus roles a sample is drawn from (a
comma-separated list: their union; the roles of the three samples must differ, so they share no document);
``--per-doc K`` at most ``K`` sequences of each document in the select and held-out samples (so that a few long
documents cannot make up most of a sample);
``--tune-survives`` the trial with ``tune_survives=True`` (the tune arm keeps a place at every elimination,
at the same cost); ``--prefer-earlier R`` the trial with ``prefer_earlier=R`` (each block's place at an elimination
goes to the earliest block with at least ``R`` times the best select gain left; same cost; replayed on stored design
seeds by ``benchmarks/_trial_design.py``).

``--seeds N``: the first ``N`` seeds from ``--first-seed`` on whose corpus roles hold the sizes asked (a seed
whose roles hold fewer sequences is skipped, and ``summary["skipped_seeds"]`` says why; a rule fixed before any
seed's outcome is seen).

Stored in ``--out``: ``seeds/seed_<k>.json`` (each seed at once, atomically: a rerun skips stored seeds),
``results.json`` (config, per-seed rows, the rate with its interval, the cost ratio, PASS/FAIL), ``output.txt``
(the printed text) and ``README.md`` (rendered from ``results.json``). Exit status 0 on PASS, 1 on FAIL.
``--full-budget``: the diagnostic of ``benchmarks/bench_trial_minilm_budget.py`` (every arm trained to ``H``; its
flags ``--seeds``, ``--first-seed``, ``--out``, ``--trial-out``, ``--trial-seeds``).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # run as a script: the repository's packages

#: **Choice**: halving factor, horizon, sample sizes, optimiser and scan settings (fixed before the run).
ETA, H, FRACTION = 5, 20, 0.9
N = {"fit": 128, "select": 64, "heldout": 128}
LR, BATCH, CURVATURE_N = 3e-4, 16, 32
#: the acceptance: the share of seeds that pass, and the largest cost ratio.
ACCEPT_RATE, ACCEPT_COST = 0.8, 3.0
SITES = "encoder.layer.*"
from benchmarks._trial_cli import FREE_ROLES, ROLES, _command, _roles_arg   # noqa: E402  (after the path is set)
from benchmarks._trial_store import f_old_text, store_results, stored_seeds   # noqa: E402, F401  (the budget's imports)


def seed_passes(chosen_gain: float, best_gain: float, fraction: float = FRACTION) -> bool:
    """The per-seed rule: ``chosen_gain >= fraction * max(best_gain, 0)`` (the best arm's gain is never below
    ``no change``'s 0; with every trained arm at <= 0 the chosen arm passes iff its gain is >= 0).

    Example:
        >>> seed_passes(0.91, 1.0), seed_passes(0.89, 1.0), seed_passes(0.0, -0.2), seed_passes(-0.01, -0.2)
        (True, False, True, False)
    """
    return bool(chosen_gain >= fraction * max(float(best_gain), 0.0))


def trained_arms(model, fit, rep, tune_site, steps: int, loss_fn, lr: float, batch_size: int, seed: int, family: str = "readout"):
    """Every arm of the trial (a block at each site of the scan report ``rep``, then the existing layer tuned at
    ``tune_site``) trained ``steps`` steps on ``fit`` with the trial's own construction and minibatch seed; yields
    ``(name, net)`` one arm at a time (the arm is dropped once the caller moves on)."""
    from depthcert.api._trial import _arms, _tune_arm

    arms = _arms(model, rep, "zero", family, fit, loss_fn, lr, batch_size, seed)
    arms[f"tune@{tune_site}"] = _tune_arm(model, tune_site, fit, loss_fn, lr, batch_size, seed)
    for name in list(arms):
        arm = arms.pop(name)["train"]
        arm.advance(steps)
        yield name, arm.net
        del arm


def truth_gains(model, fit, heldout, rep, tune_site, steps: int, loss_fn, lr: float, batch_size: int, seed: int,
                family: str = "readout") -> dict[str, float]:
    """Every arm of the trial trained ``steps`` steps on ``fit`` (the trial's own construction and minibatch seed),
    its mean held-out gain against ``model``; ``{"block@<site>": g, "tune@<site>": g, "no change": 0.0}``."""
    from depthcert.api._gain import per_sample_losses
    from depthcert.api._trial import NO_CHANGE

    old = per_sample_losses(model, heldout[0], heldout[1], loss_fn)
    out = {name: float((old - per_sample_losses(net, heldout[0], heldout[1], loss_fn)).mean())
           for name, net in trained_arms(model, fit, rep, tune_site, steps, loss_fn, lr, batch_size, seed, family)}
    out[NO_CHANGE] = 0.0
    return out


def seed_row(model, fit, select, heldout, *, sites, steps: int, eta: int, loss, lr: float, batch_size: int, seed: int,
             scan_kwargs: dict | None = None, family: str = "readout", trial_kwargs: dict | None = None) -> dict:
    """One seed: the trial on ``(fit, select, heldout)``, the truth of every arm, the pass rule and the cost
    (``trial_kwargs``: further keywords of ``dc.trial_insertion``, e.g. ``{"tune_survives": True}``)."""
    import depthcert as dc
    from unittest import mock

    import depthcert.api._saturation as sat
    from depthcert.api._loss import as_loss

    t0 = time.perf_counter()
    scans, real = [], sat.saturation

    def recording(*args, **kwargs):      # the trial's own scan report, kept for the truth arms (no second scan)
        scans.append(real(*args, **kwargs))
        return scans[-1]
    with mock.patch.object(sat, "saturation", recording):
        r = dc.trial_insertion(model, fit, heldout, sites=sites, steps=steps, select=select, family=family, eta=eta, loss=loss,
                               lr=lr, batch_size=batch_size, seed=seed, scan_kwargs=scan_kwargs, **(trial_kwargs or {}))
    t_trial = time.perf_counter() - t0
    rep = scans[-1]
    tune_site = next(a["site"] for a in r.arms if a["kind"] == "tune")
    truth = truth_gains(model, fit, heldout, rep, tune_site, steps, as_loss(loss, None), lr, batch_size, seed, family)
    best = max(truth, key=truth.get)
    chosen_gain = truth[r.chosen]
    return {"seed": seed, "chosen": r.chosen, "chosen_kind": r.chosen_kind, "chosen_realised_gain": chosen_gain,
            "best_arm": best, "best_realised_gain": truth[best], "ratio_to_best": chosen_gain / truth[best] if truth[best] > 0 else None,
            "passes": seed_passes(chosen_gain, truth[best]), "all_arms_nonpositive": bool(max(v for k, v in truth.items()
                                                                                              if k != "no change") <= 0),
            "trial_heldout_gain": r.gain, "trial_heldout_interval": [r.gain_lo, r.gain_hi],
            "trial_matches_truth": bool(abs(r.gain - chosen_gain) <= 1e-5 * max(1.0, abs(chosen_gain))),
            "truth": truth, "total_steps": r.total_steps, "cost_ratio": r.cost_ratio, "rungs": r.rungs,
            "arms": [{k: a[k] for k in ("arm", "steps_trained", "eliminated_at", "select_gains")} for a in r.arms],
            "scan_best_site": r.scan_best_site, "roles": r.roles, "seconds_trial": t_trial,
            "seconds": time.perf_counter() - t0}


def clopper_pearson(k: int, n: int, level: float = 0.05) -> tuple[float, float]:
    """Two-sided level-``(1 - level)`` Clopper-Pearson interval of a rate ``k / n``."""
    from scipy.stats import beta

    lo = 0.0 if k == 0 else float(beta.ppf(level / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(1 - level / 2, k + 1, n - k))
    return lo, hi


def first_rung(row: dict) -> dict:
    """Why a seed's choice went where it did: Spearman's rho between every arm's select gain at the first rung and
    its realised gain at ``H`` (the truth), and whether the best arm of the truth survived the first rung."""
    from scipy.stats import spearmanr

    first = {a["arm"]: a["select_gains"][0] for a in row["arms"]}
    arms = list(first)
    rho = float(spearmanr([first[a] for a in arms], [row["truth"][a] for a in arms]).statistic)
    survivors = [a["arm"] for a in row["arms"] if len(a["select_gains"]) == len(row["rungs"])]
    return {"rho_first_rung_vs_truth": rho, "best_survived_first_rung": row["best_arm"] in survivors}


def _first_rungs(rows: list[dict]) -> dict:
    """Every seed's :func:`first_rung` and the count of seeds whose best arm survived it (none for rows without arms)."""
    if not all("arms" in r and "truth" in r for r in rows):
        return {}
    fr = [first_rung(r) for r in rows]
    return {"first_rung": fr, "n_best_survived_first_rung": sum(f["best_survived_first_rung"] for f in fr)}


def summary(rows: list[dict]) -> dict:
    """The seed rate with its Clopper-Pearson interval, the cost ratios and the verdict against the acceptance."""
    k, n = sum(r["passes"] for r in rows), len(rows)
    lo, hi = clopper_pearson(k, n)
    cost = max(r["cost_ratio"] for r in rows)
    ok = k / n >= ACCEPT_RATE and cost <= ACCEPT_COST + 1e-12
    return {"n_seeds": n, "n_pass": k, "rate": k / n, "rate_cp95": [lo, hi], "cost_ratio_max": cost,
            "cost_ratio_mean": float(np.mean([r["cost_ratio"] for r in rows])),
            "n_all_arms_nonpositive": sum(r["all_arms_nonpositive"] for r in rows),
            "n_trial_matches_truth": sum(r["trial_matches_truth"] for r in rows),
            **_first_rungs(rows),
            "verdict": "PASS" if ok else "FAIL",
            "rule": f"PASS iff pass rate >= {ACCEPT_RATE} and cost ratio <= {ACCEPT_COST} (chosen arm's realised gain >= "
                    f"{FRACTION} x the best arm's, no change = 0)"}


def _samples(tok, cfg: dict, seed: int, sizes: dict = N, roles: dict = ROLES, per_doc: int | None = None) -> dict | str:
    """``{"fit": (x, y), "select": ..., "heldout": ...}`` of seed ``seed``: ``sizes[part]`` sequences drawn (order from
    ``seed``) from the corpus role ``roles[part]``, or from the union of the roles of a list (documents of distinct
    roles are distinct, so the parts share no document); ``per_doc``: the select and held-out samples take at most
    that many sequences of each document (:func:`benchmarks._trial_samples._from_roles`). A seed whose roles hold
    fewer sequences than asked: a line saying so (the run skips the seed)."""
    from benchmarks.study_predicted import minilm_corpus

    from benchmarks._trial_samples import _from_roles

    c = minilm_corpus(tok, cfg, seed, {})
    out = {part: _from_roles(c, role, sizes[part], seed, None if part == "fit" else per_doc) for part, role in roles.items()}
    short = {part: int(out[part][0].shape[0]) for part in out if out[part][0].shape[0] < sizes[part]}
    return f"the corpus holds fewer sequences than asked: {short} (asked {sizes})" if short else out


def lines(res: dict) -> list[str]:
    """The printed text (rendered from the results)."""
    out = [f"{'seed':>4} {'chosen':24} {'realised':>9} {'best arm':24} {'best':>9} {'ratio':>6} {'pass':>5} {'cost':>5} {'s':>6}"]
    for r in res["rows"]:
        ratio = "n/a" if r["ratio_to_best"] is None else f"{r['ratio_to_best']:.3f}"
        out.append(f"{r['seed']:>4} {r['chosen']:24} {r['chosen_realised_gain']:+9.4f} {r['best_arm']:24} "
                   f"{r['best_realised_gain']:+9.4f} {ratio:>6} {str(r['passes']):>5} {r['cost_ratio']:5.2f} {r['seconds']:6.0f}")
    s = res["summary"]
    out += [f"pass rate {s['n_pass']}/{s['n_seeds']} = {s['rate']:.2f} (95% Clopper-Pearson [{s['rate_cp95'][0]:.3f}, "
            f"{s['rate_cp95'][1]:.3f}]); cost ratio trial total steps / H = {s['cost_ratio_max']:.2f} (max over seeds, "
            f"mean {s['cost_ratio_mean']:.2f}); seeds with every arm <= 0: {s['n_all_arms_nonpositive']}; trial held-out "
            f"gain == truth of its arm in {s['n_trial_matches_truth']}/{s['n_seeds']}",
            *_first_rung_line(s), *(f"seed {k} skipped: {why}" for k, why in s.get("skipped_seeds", {}).items()),
            f"{s['verdict']}: {s['rule']}"]
    return out


def _first_rung_line(s: dict) -> list[str]:
    if "first_rung" not in s:
        return []
    rhos = [f["rho_first_rung_vs_truth"] for f in s["first_rung"]]
    return [f"the truth's best arm survived the first rung in {s['n_best_survived_first_rung']}/{s['n_seeds']} seeds; rho "
            f"between the arms' select gains at the first rung and their realised gains at H: median "
            f"{float(np.median(rhos)):+.2f}, per seed " + " ".join(f"{r:+.2f}" for r in rhos)]


def _markdown(text: str) -> str:
    """The module docstring's reST as markdown: double backticks single, roles dropped."""
    import re

    return re.sub(r":(?:func|mod|class|data):`", "`", text.replace("``", "`"))


def _variant(command: str) -> str:
    """`` (options)`` of a run with options other than the defaults (its command's flags, ``--out`` left out), else ``""``."""
    flags = command.split("bench_trial_minilm.py", 1)[-1].split()
    keep = [f for i, f in enumerate(flags) if f != "--out" and (i == 0 or flags[i - 1] != "--out")]
    return f" (`{' '.join(keep)}`)" if keep else ""


def readme(res: dict) -> str:
    """``README.md`` of the output folder, rendered from ``results.json``."""
    c = res["config"]
    return "\n".join([
        "# trial_insertion on MiniLM-L6: chosen arm vs every arm trained to the horizon" + _variant(res["command"]), "",
        f"Command: `{res['command']}`", "",
        _markdown((__doc__ or "").split("\n\n", 1)[1].split("\n\nStored in")[0]), "",
        f"Configuration: eta {c['eta']}, H {c['H']}, lr {c['lr']}, batch {c['batch_size']}, sizes {c['N']}, "
        f"curvature_n {c['curvature_n']}, sites `{c['sites']}`, roles {c['roles']}"
        f"{', trial keywords ' + str(c['trial_kwargs']) if c.get('trial_kwargs') else ''}; f_old: {res['f_old']}.", "",
        "```", *lines(res), "```", "",
        "Files: `results.json` (every seed's row: every arm's realised gain, the trial's arms and their costs), "
        "`output.txt`, `seeds/`.", ""])


def run(out: Path, seeds: list[int], command: str, sizes: dict = N, roles: dict = ROLES, trial_kwargs: dict | None = None,
        per_doc: int | None = None, corpus: str = "pydoc") -> dict:
    """Every seed (stored ones read back), then ``results.json``, ``output.txt`` and ``README.md``. A seed whose corpus
    roles hold fewer sequences than ``sizes`` asks is skipped (``summary["skipped_seeds"]`` says why) and the next seed
    after the last one is added, so the run has ``len(seeds)`` seeds: the first that the corpus allows."""
    import torch

    from numerics.studies.pretrained._mlm import mlm_loss
    from plumbing.io import atomic_write_json

    (out / "seeds").mkdir(parents=True, exist_ok=True)
    config = {"eta": ETA, "H": H, "fraction": FRACTION, "N": sizes, "lr": LR, "batch_size": BATCH, "curvature_n": CURVATURE_N,
              "sites": SITES, "roles": roles, "threads": torch.get_num_threads(), **({"trial_kwargs": trial_kwargs} if trial_kwargs else {}),
              **({"per_doc": per_doc} if per_doc else {}), **({"corpus": corpus} if corpus != "pydoc" else {})}
    done, net, tok, cfg, h = stored_seeds(out, seeds, config)
    queue, rows, ran, skipped, after = list(seeds), [], [], {}, max(seeds) + 1   # after: the seed a skip adds
    while queue:
        s = queue.pop(0)
        if s not in done and (out / "seeds" / f"seed_{s}.json").exists():    # a seed added after a skip, stored earlier
            done.update(stored_seeds(out, [s], config, (net, tok, cfg, h))[0])
        smp = done[s] if s in done else _samples(tok, cfg, s, sizes, roles, per_doc)
        if isinstance(smp, str) or "skipped" in smp:
            skipped[str(s)] = smp if isinstance(smp, str) else smp["skipped"]
            if s not in done:     # stored, so that a rerun knows without the corpus (nor f_old)
                atomic_write_json(out / "seeds" / f"seed_{s}.json", {"config": config, "f_old_hash": h, "skipped": smp})
            if len(skipped) > len(seeds):
                raise SystemExit(f"{len(skipped)} seeds skipped ({', '.join(skipped)}): the corpus holds fewer sequences than "
                                 f"asked ({sizes}); ask for fewer.")
            queue.append(after)
            after += 1
            print(f"seed {s}: {skipped[str(s)]}; skipped, seed {queue[-1]} added", flush=True)
            continue
        if s in done:
            rows.append(done[s]), ran.append(s)
            print(f"seed {s}: stored, skipped", flush=True)
            continue
        row = seed_row(net, smp["fit"], smp["select"], smp["heldout"], sites=SITES, steps=H, eta=ETA, loss=mlm_loss, lr=LR,
                       batch_size=BATCH, seed=s, scan_kwargs={"curvature_n": CURVATURE_N}, trial_kwargs=trial_kwargs)
        atomic_write_json(out / "seeds" / f"seed_{s}.json", {"config": config, "f_old_hash": h, "row": row})
        rows.append(row), ran.append(s)
        print(f"seed {s}: chose {row['chosen']} ({row['chosen_realised_gain']:+.4f}), best {row['best_arm']} "
              f"({row['best_realised_gain']:+.4f}), pass {row['passes']}, cost {row['cost_ratio']:.2f}, {row['seconds']:.0f} s",
              flush=True)
    from numerics.studies.pretrained._corpus import documents

    summ = {**summary(rows), **({"corpus_documents": len(documents(corpus))} if corpus != "pydoc" else {}),
            **({"skipped_seeds": skipped} if skipped else {})}
    return store_results(out, command, config, h, ran, rows, summ, lines, readme)


def _trial_kwargs(a) -> dict | None:
    """The further keywords of ``dc.trial_insertion`` the command line sets (None: none)."""
    kw = {**({"tune_survives": True} if a.tune_survives else {}),
          **({} if a.prefer_earlier is None else {"prefer_earlier": a.prefer_earlier})}
    return kw or None


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if "--full-budget" in argv:      # the diagnostic of benchmarks/bench_trial_minilm_budget.py, its own flags
        from benchmarks.bench_trial_minilm_budget import main as full_budget

        return full_budget([a for a in argv if a != "--full-budget"])
    from numerics.studies.pretrained._corpus import SOURCES

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full-budget", action="store_true", help="the diagnostic: every arm trained to H, chosen on the select split "
                    "(benchmarks/bench_trial_minilm_budget.py; its flags --seeds, --first-seed, --out, --trial-out, --trial-seeds)")
    ap.add_argument("--seeds", default="10")
    ap.add_argument("--out", default="docs/trial-minilm")
    ap.add_argument("--first-seed", type=int, default=0, help="the seeds are first-seed, first-seed + 1, ... (default 0)")
    ap.add_argument("--n-fit", type=int, default=N["fit"], help=f"fit sequences per seed (default {N['fit']})")
    ap.add_argument("--n-select", type=int, default=N["select"], help=f"select sequences per seed (default {N['select']})")
    ap.add_argument("--n-heldout", type=int, default=N["heldout"], help=f"held-out sequences per seed (default {N['heldout']})")
    for part in ("select", "heldout"):
        ap.add_argument(f"--{part}-roles", default=ROLES[part], help=f"the corpus roles the {part} sample is drawn from, "
                        f"comma-separated (their union; default {ROLES[part]}; allowed {', '.join(FREE_ROLES)})")
    ap.add_argument("--tune-survives", action="store_true", help="dc.trial_insertion(tune_survives=True): the tune arm keeps a "
                    "place at every elimination (same cost)")
    ap.add_argument("--prefer-earlier", type=float, help="dc.trial_insertion(prefer_earlier=R), R in (0, 1]: a block's place at an "
                    "elimination goes to the earliest block with >= R x the best select gain left (same cost)")
    ap.add_argument("--corpus", choices=SOURCES, default="pydoc", help="the corpus's documents (numerics.studies.pretrained."
                    "_corpus.documents; default pydoc)")
    ap.add_argument("--per-doc", type=int, help="the select and held-out samples take at most this many sequences of each "
                    "document (default: no cap)")
    a = ap.parse_args(argv)
    if a.per_doc is not None and a.per_doc < 1:
        ap.error(f"--per-doc == {a.per_doc}, must be >= 1")
    if a.prefer_earlier is not None and not 0 < a.prefer_earlier <= 1:
        ap.error(f"--prefer-earlier == {a.prefer_earlier}, must be in (0, 1]")
    roles = _roles_arg(ap, a.select_roles, a.heldout_roles)
    for flag, v in (("--first-seed", a.first_seed), ("--n-fit", a.n_fit - 2), ("--n-select", a.n_select - 2), ("--n-heldout", a.n_heldout - 2)):
        if v < 0:
            ap.error(f"{flag} == {v if flag == '--first-seed' else v + 2}, must be >= {0 if flag == '--first-seed' else 2}")
    try:
        n = int(a.seeds)
    except ValueError:
        n = 0
    if n < 1:
        ap.error(f"--seeds == {a.seeds!r}, must be an int >= 1")
    sizes = {"fit": a.n_fit, "select": a.n_select, "heldout": a.n_heldout}
    cmd = _command(a, n, sizes, roles, N)
    res = run(Path(a.out), list(range(a.first_seed, a.first_seed + n)), cmd, sizes, roles,
              _trial_kwargs(a), a.per_doc, a.corpus)
    return 0 if res["summary"]["verdict"] == "PASS" else 1


if __name__ == "__main__":
    raise SystemExit(main())
