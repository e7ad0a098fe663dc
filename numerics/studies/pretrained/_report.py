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
    ax[0].bar(sites, [s["P_readout"] for s in study["sites"]], color="tab:blue")
    ax[0].set(title="scan: readout projection score per site", xlabel="encoder.layer.k", ylabel="P_readout")
    ax[1].scatter([s["P_readout"] for s in study["sites"]], [s["realised_gain"] for s in study["sites"]])
    for s, name in zip(study["sites"], sites):
        ax[1].annotate(name, (s["P_readout"], s["realised_gain"]))
    rc = study["rank_correlation"]
    ax[1].set(title=f"realised gain vs scan score (Spearman {rc['value']:+.2f})", xlabel="P_readout",
              ylabel="held-out loss drop (mean over seeds)")
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
    lines = ["", f"Certificate of arm (a) (`dc.certify_insertion` at `{cert['site']}`, `M` = {cert['M']} sequences): "
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
    rc, cost = study["rank_correlation"], study["scan_cost"]
    lines = ["# Where to insert a block into MiniLM-L6 (post-LN BERT), and LLaMA-Pro's control", "",
             "Command: `depthcert study pretrained --out DIR` (sizes: `study.json: config`).", "",
             f"Scan (`dc.saturation`, sites `encoder.layer.*`): **{study['scan']['verdict']}**, best site "
             f"`{study['scan']['best_site']}`; cost {cost['scan_s']:.1f} s = **{cost['ratio']:.2f}x** one forward+backward "
             f"over the same {cost['n_probe']} probe sequences ({cost['forward_backward_s']:.1f} s).", "",
             "| arm | what | held-out MLM loss | drop vs (e), paired by seed (95% t) | trained parameters |",
             "|---|---|---|---|---|"]
    for a in study["arms"]:
        lines.append(f"| {a['name']} | {a['what']} | {a['heldout_loss']:.4f} | {_fmt_interval(a['paired_interval'])} | "
                     f"{a['trained_parameters']:,} |")
    lo, hi = rc["interval"]
    lines += ["", f"Does the scan's ranking of sites predict the realised gains? Spearman's rho over the "
              f"{rc['n_sites']} sites = **{rc['value']:+.2f}** [{lo:+.2f}, {hi:+.2f}] ({rc['method']}, "
              f"{rc['n_seeds']} seeds).", "", "| site | readout score P_readout | realised gain (mean over seeds) |", "|---|---|---|"]
    lines += [f"| {s['site']} | {s['P_readout']:.3g} | {s['realised_gain']:+.4f} |" for s in study["sites"]]
    lines += _certificate_lines(study.get("certificate"))
    lines += ["", "Roles (by document, no document in two roles): " +
              ", ".join(f"{r} {v['sequences']} sequences / {v['documents']} documents" for r, v in study["roles"].items()),
              "", f"Wall time: {study['wall_s'] / 60:.1f} min.", ""] + [f"![{f}]({f})" for f in figs]
    return atomic_write_text(out / "report.md", "\n".join(lines) + "\n")
