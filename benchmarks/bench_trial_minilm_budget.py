"""Diagnostic of the MiniLM-L6 trial benchmark: could any procedure that chooses on the select split pass at these
sample sizes? Every arm trained the full horizon, chosen on the select split, judged on the held-out sample.

    OMP_NUM_THREADS=1 python benchmarks/bench_trial_minilm_budget.py [--seeds 10] [--out docs/trial-minilm/full_budget]

(also ``python benchmarks/bench_trial_minilm.py --full-budget [...]``). **Choice**: this is a diagnostic, not a
procedure within the trial's 3x budget: it costs one full training per trained arm (7 arms: ``7 x H`` steps).

Per seed ``k`` the same seeds, samples, ``f_old``, horizon and arms as ``benchmarks/bench_trial_minilm.py``: the same
``_samples(tok, cfg, k)`` (fit, select, heldout from disjoint documents), the trial's own scan of the fit sample
(``dc.saturation`` with the arguments ``dc.trial_insertion`` passes it), a block at each site ``encoder.layer.*``,
the existing layer tuned at the site the stored trial tuned (read from ``--trial-out``'s ``seeds/seed_<k>.json``),
and ``no change`` (gain 0 everywhere). Every trained arm gets the full ``H`` steps exactly as ``truth_gains`` (the
same minibatch seed); each arm's mean per-sequence MLM loss drop against ``f_old`` is measured on the select sample
(the choice's sample), on the held-out sample (the judge) and on each half of the held-out sample (its first and
its second ``N["heldout"] / 2`` sequences, a split fixed before the run).

* Reproducibility: each arm's held-out gain against the stored truth of that seed (relative tolerance 1e-5).
* (a) The full-budget choice: the arm with the largest select gain; it passes with the trial's rule
  ``seed_passes(chosen held-out gain, best held-out gain)`` (the best over every arm, ``no change`` included).
* (b) Spearman's rho between the arms' select gains and their held-out gains (every arm, ``no change`` included).
* (c) The criterion's own noise floor: the arm best on held-out half A judged on half B by the same rule (``A picks,
  B judges``), and the reverse. Each half is half the held-out sample (64 sequences at the default sizes, the size
  of the select sample), so (c) is noisier as a judge than (a)'s.
* Summary: the count of (a) with its two-sided 95% Clopper-Pearson interval, the median of (b), the counts of (c).

The samples are the stored trial run's (``--trial-out``): its sizes, roles, per-document cap and corpus, read from
its seed files; a seed the trial run skipped (its corpus too small) is skipped; ``--trial-seeds``: the trial run's
seeds.

Stored in ``--out``: ``seeds/seed_<k>.json`` (each seed at once, atomically: a rerun skips stored seeds),
``results.json`` (command, config, per-seed rows, summary), ``output.txt`` and ``README.md`` (rendered from
``results.json``). No verdict: exit status 0 once every seed is measured.
"""
from __future__ import annotations

import argparse
import inspect
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # run as a script: the repository's packages

from benchmarks.bench_trial_minilm import (BATCH, CURVATURE_N, FRACTION, LR, ROLES, SITES, H, N, _markdown,  # noqa: E402
                                           _samples, clopper_pearson, seed_passes, store_results, stored_seeds, trained_arms)

NO_CHANGE = "no change"
#: the parts an arm's gain is measured on: the select sample, the held-out sample and its two halves.
PARTS = ("select", "heldout", "heldout_A", "heldout_B")
#: relative tolerance of the reproducibility check against the stored truth.
RTOL = 1e-5


def scan_report(model, fit, loss, seed: int, sites: str = SITES, family: str = "readout", scan_kwargs: dict | None = None):
    """The trial's own scan of ``fit``: ``dc.saturation`` with the arguments ``dc.trial_insertion`` passes it (its
    defaults for ``layout``, ``width`` and ``output`` read from its signature)."""
    import depthcert as dc
    from depthcert.api._predicted import _materialise, merge_scan_kwargs
    from depthcert.api._saturation import saturation

    p = inspect.signature(dc.trial_insertion).parameters
    kw = merge_scan_kwargs({"loss": loss, **{k: p[k].default for k in ("layout", "width", "output")}}, scan_kwargs)
    return saturation(model, _materialise(fit, "train", model, kw.get("batch_size", 256)), sites=sites, seed=seed,
                      families=[family], **kw)


def arm_gains(model, fit, select, heldout, rep, tune_site: str, *, steps: int, loss_fn, lr: float, batch_size: int, seed: int,
              family: str = "readout") -> dict[str, dict[str, float]]:
    """Every arm of :func:`trained_arms` trained ``steps`` steps, its mean per-sequence gain against ``model`` on each
    of :data:`PARTS` (``heldout_A``/``heldout_B``: the first/second half of the held-out sequences); ``no change``: 0."""
    from depthcert.api._gain import per_sample_losses

    old = {"select": per_sample_losses(model, select[0], select[1], loss_fn),
           "heldout": per_sample_losses(model, heldout[0], heldout[1], loss_fn)}
    half = int(heldout[0].shape[0]) // 2
    out = {}
    for name, net in trained_arms(model, fit, rep, tune_site, steps, loss_fn, lr, batch_size, seed, family):
        d = {part: old[part] - per_sample_losses(net, smp[0], smp[1], loss_fn) for part, smp in (("select", select), ("heldout", heldout))}
        out[name] = {"select": float(d["select"].mean()), "heldout": float(d["heldout"].mean()),
                     "heldout_A": float(d["heldout"][:half].mean()), "heldout_B": float(d["heldout"][half:].mean())}
    out[NO_CHANGE] = {part: 0.0 for part in PARTS}
    return out


def _best(gains: dict[str, float]) -> str:
    """The arm with the largest gain (the first in order on a tie)."""
    return max(gains, key=gains.get)


def picks_and_judges(pick: dict[str, float], judge: dict[str, float]) -> dict:
    """The arm best on ``pick``, its gain on ``judge``, the best on ``judge`` and the trial's rule between them."""
    chosen, best = _best(pick), _best(judge)
    return {"chosen": chosen, "chosen_gain": judge[chosen], "best": best, "best_gain": judge[best],
            "passes": seed_passes(judge[chosen], judge[best])}


def decisions(gains: dict[str, dict[str, float]], truth: dict[str, float] | None = None) -> dict:
    """One seed's (a) full-budget choice, (b) rho, (c) noise floor and reproducibility check from :func:`arm_gains`'s
    output; ``truth``: the stored truth of that seed (every arm's held-out gain). ValueError on a malformed input."""
    from scipy.stats import spearmanr

    if NO_CHANGE not in gains or any(gains[NO_CHANGE][p] != 0.0 for p in PARTS) or len(gains) < 3:
        raise ValueError(f"gains has arms {sorted(gains)}, must have 'no change' (0 on every part) and >= 2 trained arms.")
    bad = sorted(a for a, g in gains.items() if set(g) != set(PARTS) or not all(np.isfinite(list(g.values()))))
    if bad:
        raise ValueError(f"gains of {bad} must be finite numbers on exactly {list(PARTS)}.")
    on = {p: {a: g[p] for a, g in gains.items()} for p in PARTS}
    a = picks_and_judges(on["select"], on["heldout"])
    arms = list(gains)
    match = {} if truth is None else {k: bool(k in truth and abs(on["heldout"][k] - truth[k]) <= RTOL * abs(truth[k])) for k in arms}
    n_trained = len(gains) - 1
    return {"chosen": a["chosen"], "chosen_heldout_gain": a["chosen_gain"], "best_arm": a["best"], "best_heldout_gain": a["best_gain"],
            "ratio_to_best": a["chosen_gain"] / a["best_gain"] if a["best_gain"] > 0 else None, "passes": a["passes"],
            "rho_select_vs_heldout": float(spearmanr([on["select"][k] for k in arms], [on["heldout"][k] for k in arms]).statistic),
            "A_picks_B_judges": picks_and_judges(on["heldout_A"], on["heldout_B"]),
            "B_picks_A_judges": picks_and_judges(on["heldout_B"], on["heldout_A"]),
            "truth_match": match, "n_match_truth": sum(match.values()), "n_arms_trained": n_trained, "cost_ratio": float(n_trained)}


def budget_summary(rows: list[dict]) -> dict:
    """The pass count of (a) with its 95% Clopper-Pearson interval, the median rho of (b), the counts of (c), the
    cost ratio and the reproducibility count; the wording of the two headline numbers (no PASS/FAIL)."""
    n, k = len(rows), sum(r["passes"] for r in rows)
    j, j2 = (sum(r[key]["passes"] for r in rows) for key in ("A_picks_B_judges", "B_picks_A_judges"))
    lo, hi = clopper_pearson(k, n)
    cost = float(np.mean([r["cost_ratio"] for r in rows]))
    return {"n_seeds": n, "n_pass": k, "rate": k / n, "rate_cp95": [lo, hi],
            "rho_median": float(np.median([r["rho_select_vs_heldout"] for r in rows])),
            "n_A_picks_B_judges": j, "n_B_picks_A_judges": j2, "cost_ratio_mean": cost,
            "cost_ratio_max": max(r["cost_ratio"] for r in rows),
            "n_arms_match_truth": sum(r["n_match_truth"] for r in rows), "n_arms": sum(len(r["truth_match"]) for r in rows),
            "wording": [f"a procedure that trains every arm to H (cost {cost:.0f}x) and chooses on the select split passes in {k}/{n} seeds",
                        f"the heldout sample judged against its own other half passes in {j}/{n} (A picks, B judges; B picks, A judges: {j2}/{n})"]}


def lines(res: dict) -> list[str]:
    """The printed text (rendered from the results)."""
    out = [f"{'seed':>4} {'chosen on select':24} {'heldout':>8} {'best on heldout':24} {'best':>8} {'ratio':>6} {'pass':>5} "
           f"{'rho':>6} {'A->B':>5} {'B->A':>5} {'truth':>5} {'s':>5}"]
    for r in res["rows"]:
        ratio = "n/a" if r["ratio_to_best"] is None else f"{r['ratio_to_best']:.3f}"
        out.append(f"{r['seed']:>4} {r['chosen']:24} {r['chosen_heldout_gain']:+8.4f} {r['best_arm']:24} {r['best_heldout_gain']:+8.4f} "
                   f"{ratio:>6} {str(r['passes']):>5} {r['rho_select_vs_heldout']:+6.2f} {str(r['A_picks_B_judges']['passes']):>5} "
                   f"{str(r['B_picks_A_judges']['passes']):>5} {r['n_match_truth']:>2}/{len(r['truth_match']):<2} {r['seconds']:5.0f}")
    s = res["summary"]
    return out + [f"(a) full-budget choice passes in {s['n_pass']}/{s['n_seeds']} seeds = {s['rate']:.2f} (95% Clopper-Pearson "
                  f"[{s['rate_cp95'][0]:.3f}, {s['rate_cp95'][1]:.3f}]); cost ratio (arms trained x H) / H = {s['cost_ratio_mean']:.0f}",
                  f"(b) Spearman rho select gains vs heldout gains over the arms: median {s['rho_median']:+.2f}",
                  f"(c) noise floor: A picks, B judges passes in {s['n_A_picks_B_judges']}/{s['n_seeds']}; B picks, A judges in "
                  f"{s['n_B_picks_A_judges']}/{s['n_seeds']}",
                  f"reproducibility: {s['n_arms_match_truth']}/{s['n_arms']} arms' heldout gains equal the stored truth (rel. {RTOL:g})",
                  *s["wording"], *(f"seed {k} skipped by the trial run: {why}" for k, why in s.get("skipped_seeds", {}).items())]


def readme(res: dict) -> str:
    """``README.md`` of the output folder, rendered from ``results.json``."""
    c = res["config"]
    return "\n".join(["# trial_insertion on MiniLM-L6: every arm trained to the horizon, chosen on the select split (diagnostic)", "",
                      f"Command: `{res['command']}`", "", _markdown((__doc__ or "").split("\n\n", 1)[1].split("\n\nStored in")[0]), "",
                      f"Configuration: H {c['H']}, lr {c['lr']}, batch {c['batch_size']}, sizes {c['N']}, curvature_n {c['curvature_n']}, "
                      f"sites `{c['sites']}`, threads {c['threads']}; f_old: {res['f_old']}; tune sites and truths from "
                      f"`{c['trial_out']}`.", "", "```", *lines(res), "```", "",
                      "Columns: A->B = the arm best on held-out half A passes on half B; truth = arms whose held-out gain equals "
                      "the stored truth. Files: `results.json` (every seed's row: every arm's gain on each part), `output.txt`, "
                      "`seeds/`.", ""])


def _trial_seed(trial_out: Path, seed: int) -> dict:
    path = trial_out / "seeds" / f"seed_{seed}.json"
    if not path.exists():
        raise SystemExit(f"{path}: missing; the full-budget mode reads the stored trial's tune site and truth of seed {seed}.")
    return json.loads(path.read_text())


def seed_record(net, tok, cfg, seed: int, trial: dict, sizes: dict = N, roles: dict = ROLES, per_doc: int | None = None) -> dict:
    """One seed's measurement (see the module docstring; ``sizes``, ``roles``, ``per_doc``: the trial run's samples)."""
    from depthcert.api._loss import as_loss
    from numerics.studies.pretrained._mlm import mlm_loss

    t0 = time.perf_counter()
    row = trial["row"]
    tune_site = next(k for k in row["truth"] if k.startswith("tune@")).split("@", 1)[1]
    smp = _samples(tok, cfg, seed, sizes, roles, per_doc)
    if isinstance(smp, str):      # the trial's run stored this seed, so its corpus held enough: a changed corpus
        raise SystemExit(f"seed {seed}: {smp}")
    rep = scan_report(net, smp["fit"], mlm_loss, seed, scan_kwargs={"curvature_n": CURVATURE_N})
    gains = arm_gains(net, smp["fit"], smp["select"], smp["heldout"], rep, tune_site, steps=H, loss_fn=as_loss(mlm_loss, None),
                      lr=LR, batch_size=BATCH, seed=seed)
    return {"seed": seed, "tune_site": tune_site, "gains": gains, **decisions(gains, row["truth"]), "truth_stored": row["truth"],
            "trial_chosen": row["chosen"], "seconds": time.perf_counter() - t0}


def _trial_config(trial_out: Path, seeds: list) -> tuple[dict, list, dict]:
    """``(the stored trial run's sample settings, the seeds it ran, the seeds it skipped)``: its sizes, roles and, where
    set, ``per_doc`` and ``corpus`` (from its first stored seed), so that every seed's samples are the trial's own."""
    res = json.loads((trial_out / "results.json").read_text()) if (trial_out / "results.json").exists() else {}
    skipped = {int(k): v for k, v in res.get("summary", {}).get("skipped_seeds", {}).items()}
    ran = [s for s in seeds if s not in skipped]
    if not ran:
        raise SystemExit(f"{trial_out}: the trial run skipped every seed asked ({', '.join(map(str, seeds))}); nothing to measure.")
    tc = _trial_seed(trial_out, ran[0])["config"]
    keep = {"N": tc["N"], "roles": tc["roles"], **{k: tc[k] for k in ("per_doc", "corpus") if k in tc}}
    return keep, ran, {s: skipped[s] for s in seeds if s in skipped}


def run(out: Path, seeds: list[int], command: str, trial_out: Path) -> dict:
    """Every seed (stored ones read back; one the trial run skipped is skipped), then ``results.json``, ``output.txt``
    and ``README.md``."""
    import torch

    from plumbing.io import atomic_write_json

    (out / "seeds").mkdir(parents=True, exist_ok=True)
    samples, seeds, skipped = _trial_config(trial_out, seeds)
    config = {"H": H, "fraction": FRACTION, "N": N, "lr": LR, "batch_size": BATCH, "curvature_n": CURVATURE_N, "sites": SITES,
              "roles": ROLES, "parts": list(PARTS), "rtol_truth": RTOL, "trial_out": str(trial_out), "threads": torch.get_num_threads(),
              **samples}
    done, net, tok, cfg, h = stored_seeds(out, seeds, config)
    rows = []
    for s in seeds:
        path = out / "seeds" / f"seed_{s}.json"
        if s in done:
            rows.append(done[s])
            print(f"seed {s}: stored, skipped", flush=True)
            continue
        trial = _trial_seed(trial_out, s)
        row = {**seed_record(net, tok, cfg, s, trial, samples["N"], samples["roles"], samples.get("per_doc")),
               "trial_f_old_hash_matches": trial["f_old_hash"] == h}
        atomic_write_json(path, {"config": config, "f_old_hash": h, "row": row})
        rows.append(row)
        print(f"seed {s}: chose {row['chosen']} ({row['chosen_heldout_gain']:+.4f}), best {row['best_arm']} "
              f"({row['best_heldout_gain']:+.4f}), pass {row['passes']}, rho {row['rho_select_vs_heldout']:+.2f}, "
              f"truth {row['n_match_truth']}/{len(row['truth_match'])}, {row['seconds']:.0f} s", flush=True)
    summ = {**budget_summary(rows), **({"skipped_seeds": {str(k): v for k, v in skipped.items()}} if skipped else {})}
    return store_results(out, command, config, h, seeds, rows, summ, lines, readme)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", help="how many seeds (default 10)")
    ap.add_argument("--first-seed", type=int, help="the seeds are first-seed, first-seed + 1, ... (default 0)")
    ap.add_argument("--out", default="docs/trial-minilm/full_budget")
    ap.add_argument("--trial-out", default="docs/trial-minilm", help="the stored trial run (tune sites and truths; default docs/trial-minilm)")
    ap.add_argument("--trial-seeds", action="store_true", help="the seeds of the stored trial run's results.json (instead of "
                    "--seeds/--first-seed)")
    a = ap.parse_args(argv)
    if a.trial_seeds and (a.seeds is not None or a.first_seed is not None):
        ap.error("--trial-seeds takes the stored trial run's seeds: give neither --seeds nor --first-seed with it")
    a.seeds, a.first_seed = "10" if a.seeds is None else a.seeds, a.first_seed or 0
    try:
        n = int(a.seeds)
    except ValueError:
        n = 0
    if n < 1:
        ap.error(f"--seeds == {a.seeds!r}, must be an int >= 1")
    if a.first_seed < 0:
        ap.error(f"--first-seed == {a.first_seed}, must be >= 0")
    seeds = list(range(a.first_seed, a.first_seed + n))
    if a.trial_seeds:
        path = Path(a.trial_out) / "results.json"
        if not path.exists():
            ap.error(f"--trial-seeds: {path} missing (the stored trial run's seeds)")
        seeds, n, a.first_seed = json.loads(path.read_text())["seeds"], 10, 0
    cmd = "OMP_NUM_THREADS=1 python benchmarks/bench_trial_minilm_budget.py" + ("" if n == 10 else f" --seeds {n}") + (
        "" if a.first_seed == 0 else f" --first-seed {a.first_seed}") + (
        " --trial-seeds" if a.trial_seeds else "") + ("" if a.out == "docs/trial-minilm/full_budget" else f" --out {a.out}") + (
        "" if a.trial_out == "docs/trial-minilm" else f" --trial-out {a.trial_out}")
    run(Path(a.out), seeds, cmd, Path(a.trial_out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
