"""``study.json``, ``report.md`` and the figures of the pretrained study (drawn from the study's numbers)."""
from __future__ import annotations

from pathlib import Path

from plumbing.figures import pyplot, save_figure
from plumbing.io import atomic_write_json, atomic_write_text, versions

__all__ = ["write_report"]


def _fmt_interval(iv: dict) -> str:
    if iv.get("interval") is None:
        return f"{iv['mean']:+.4f} (one seed: no interval)"
    lo, hi = iv["interval"]
    return f"{iv['mean']:+.4f} [{lo:+.4f}, {hi:+.4f}]"


def _figures(study: dict, out: Path) -> list[str]:
    plt = pyplot()
    sites = [s["site"].rsplit(".", 1)[-1] for s in study["sites"]]
    fig, ax = plt.subplots(1, 3, figsize=(13, 3.8))
    score = "predicted_gain"      # the score best_site maximises
    ax[0].bar(sites, [s[score] for s in study["sites"]], color="tab:blue")
    ax[0].set(title="scan: predicted_gain (mean over seeds)", xlabel="encoder.layer.k", ylabel=score)
    ax[1].scatter([s[score] for s in study["sites"]], [s["realised_gain"] for s in study["sites"]])
    for s, name in zip(study["sites"], sites):
        ax[1].annotate(name, (s[score], s["realised_gain"]))
    rc = next(r for r in study["rank_correlations"] if r["score"] == score)
    ax[1].set(title=f"gain vs predicted_gain: rho {rc['rho']:+.2f}, p = {rc['p_one_sided']:.2f}",
              xlabel=f"{score} (mean over seeds)", ylabel="held-out loss drop (mean over seeds)")
    arms = study["arms"]
    means = [a["paired_interval"]["mean"] for a in arms]
    err = [[m - (a["paired_interval"]["interval"] or [m, m])[0] for m, a in zip(means, arms)],
           [(a["paired_interval"]["interval"] or [m, m])[1] - m for m, a in zip(means, arms)]]
    ax[2].bar([a["name"].split("_")[0] for a in arms], means, yerr=err, capsize=4, color="tab:green")
    ax[2].axhline(0, color="k", lw=0.8)
    ax[2].set(title="the five arms: held-out loss drop vs (e)", ylabel="paired by seed (95% t)")
    save_figure(fig, out / "pretrained.png")
    return ["pretrained.png"]


def _certificate_lines(cert: dict | None) -> list[str]:
    """The certificate of arm (a): every route's row, the constants (sure or not) and the held-out paired test."""
    if not cert:
        return []
    num = lambda v: "—" if v is None else f"{v:.4g}"   # noqa: E731
    lines = ["", f"Certificate of arm (a) (seed 0; `dc.certify_insertion` at `{cert['site']}`, `M` = {cert['M']} sequences): "
             f"route `{cert['route']}`, certified **{cert['certified']}**, `L_test(f_old)` = {num(cert.get('L_test_old'))}.",
             "", "| route | bound | certified | missing |", "|---|---|---|---|"]
    lines += [f"| {r['route']} | {num(r.get('bound'))} | {r.get('certified')} | {', '.join(r.get('missing') or []) or ''} |"
              for r in cert["rows"]]
    lines += ["", "Constants: " + "; ".join(f"`{k}` {v}" for k, v in cert["constants"].items()) + "."]
    held = cert.get("heldout_paired")
    if held and "not_run" in held:
        lines += ["", f"Held-out paired test on `T`: not run ({held['not_run']})."]
    elif held:
        lines += ["", f"Held-out paired test on `T` ({held['K']} sequences, level {held['level']}): mean of "
                  f"`l(f_new) - l(f_old)` = {held['mean_T']:+.4g}; upper bound {held['t']['bound']:+.4g} (Student t, "
                  f"{held['t']['validity']}; certified {held['t']['certified']}), {held['bernstein']['bound']:+.4g} "
                  f"(empirical Bernstein, range {held['bernstein']['range']:.3g}; certified {held['bernstein']['certified']})."]
    return lines


def _calibration_lines(study: dict) -> list[str]:
    """The scan report's calibration line (``scan.calibration_note``), with how it was computed; none without."""
    cal = study.get("calibration")
    if not cal:
        return []
    return [f"Seed 0's scan, read with the study's own calibration: {cal['judgement']['note']} ({cal['how']}).", ""]


def rank_lines(study: dict) -> list[str]:
    """The rank correlations of every score the scan computes, the one ``best_site`` uses first."""
    rcs = study["rank_correlations"]
    first = rcs[0]
    n, k = first["n_seeds"], first["n_sites"]
    pick = study["best_site_realised_rank"]["per_seed"]
    lines = ["", f"Does the scan's ranking of sites predict the realised gains? Spearman's rho over the {k} sites of each score "
             f"the scan computes against the realised gains (both the mean over the {n} seeds; every seed deals the documents "
             f"outside the reference sample anew to signal, probe, S and T and redraws the masks, the scan and the arms; "
             f"`f_old` is the same network in every seed). `best_site` is the site "
             f"with the largest `predicted_gain`. p: exact permutation test over the {first['n_permutations']} pairings "
             f"of the sites; the headline is one-sided (P(rho >= observed)), at level {first['alpha']:g}. Interval: the "
             f"{(1 - first['interval_level']) / 2:.1%} and {(1 + first['interval_level']) / 2:.1%} percentiles of the "
             f"per-seed rho ({n} seeds, each its own scores and gains).", "",
             "| score | rho | one-sided p | two-sided p | per-seed rho, percentile interval | what it says |", "|---|---|---|---|---|---|"]
    for r in rcs:
        if r.get("rho") is None:
            lines.append(f"| {r['score']} | — | — | — | — | {r.get('not_run', '')} |")
            continue
        iv = "—" if r["interval"] is None else f"[{r['interval'][0]:+.2f}, {r['interval'][1]:+.2f}]"
        name, rho = (f"**{r['score']}** (picks `best_site`)", f"**{r['rho']:+.2f}**") if r is first else (r["score"], f"{r['rho']:+.2f}")
        lines.append(f"| {name} | {rho} | {r['p_one_sided']:.3f} | {r['p_two_sided']:.3f} | {iv} | {r['words']} |")
    lines += ["", f"The scan's pick in each seed ranks, by the realised gains of that seed (1 = the largest of {k}): "
              + ", ".join(map(str, pick)) + ".", "",
              f"Per site, the mean over the {n} seeds:", "",
              "| site | predicted_gain | P_affine | P_readout | AG_max | realised gain |", "|---|---|---|---|---|---|"]
    lines += [f"| {s['site']} | {s['predicted_gain']:.4g} | {s['P_affine']:.3g} | {s['P_readout']:.3g} | {s['AG_max']:.3g} | "
              f"{s['realised_gain']:+.4f} |" for s in study["sites"]]
    return lines


def write_report(study: dict, out: Path, rep=None) -> Path:
    """Write ``study.json``, ``report.md``, ``pretrained.png`` (and ``scan.png``: the scan's own plot) to ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    study = dict(study, versions=versions())
    atomic_write_json(out / "study.json", study)
    figs = _figures(study, out)
    if rep is not None:
        rep.plot(out / "scan.png")
        figs.append("scan.png")
    cost = study["scan_cost"]
    lines = ["# Where to insert a block into MiniLM-L6 (post-LN BERT), and LLaMA-Pro's control", "",
             f"Command: `{study.get('command', 'depthcert study pretrained --out DIR')}` (sizes: `study.json: config`).", "",
             f"Seed 0's scan (`dc.saturation`, sites `encoder.layer.*`): **{study['scan']['verdict']}**, best site "
             f"`{study['scan']['best_site']}`; cost {cost['scan_s']:.1f} s = **{cost['ratio']:.2f}x** one forward+backward "
             f"over the same {cost['n_probe']} probe sequences ({cost['forward_backward_s']:.1f} s).", "",
             *_calibration_lines(study),
             "| arm | what | held-out MLM loss | drop vs (e), paired by seed (95% t) | trained parameters |",
             "|---|---|---|---|---|"]
    for a in study["arms"]:
        lines.append(f"| {a['name']} | {a['what']} | {a['heldout_loss']:.4f} | {_fmt_interval(a['paired_interval'])} | "
                     f"{a['trained_parameters']:,} |")
    lines += rank_lines(study)
    lines += _certificate_lines(study.get("certificate"))
    lines += ["", "Roles of seed 0 (by document, no document in two roles; every seed draws its own split, "
              "`study.json: seeds[*].roles`): " +
              ", ".join(f"{r} {v['sequences']} sequences / {v['documents']} documents" for r, v in study["roles"].items()),
              "", f"Wall time: {study['wall_s'] / 60:.1f} min.", ""] + [f"![{f}]({f})" for f in figs]
    return atomic_write_text(out / "report.md", "\n".join(lines) + "\n")
