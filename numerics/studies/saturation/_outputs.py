"""Table and figure of a saturation result (read from the stored result, never recomputed)."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

from plumbing.figures import pyplot, save_figure


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    return f"{v:.3g}" if isinstance(v, float) else str(v)


def table(result: Mapping) -> str:
    """A tidy text table: one row per site, then the model's verdict."""
    cols = [("site", "site"), ("P_lin", "P_linear"), ("P_aff", "P_affine"), ("P_all", "P_all"), ("G_sq", "G_sq"),
            ("AG_max", "AG_max"), ("realis", "realisability"), ("beta", "beta"), ("gain_euc", "gain_bound_euclidean"),
            ("gain_nat", "gain_bound_natural"), ("cert", "certified_gain")]
    rows = [[name for name, _ in cols] + ["hoeff", "adapt", "n_adapt", "saturated"]]
    for r in result["sites"]:
        rows.append([_fmt(r[k]) for _, k in cols] + [
            "reject" if r["test_hoeffding"]["reject"] else "-", "reject" if r["test_adaptive"]["reject"] else "-",
            _fmt(r["test_adaptive"]["n_needed"]), _fmt(r["saturated"])])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in rows]
    m = result["model"]
    lines.append(f"model: {m['verdict']} (tests at level {m['level']:g}, {m['level_per_site']:.3g} per site; "
                 f"Hoeffding alone says {'saturated' if m['saturated_hoeffding'] else 'improvable'})")
    return "\n".join(lines)


def plot_sites(result: Mapping, path: str | Path) -> Path:
    """Bars per site: P_affine, both gain bounds, AG_max; rejecting sites starred."""
    plt = pyplot()
    sites = result["sites"]
    names = [s["site"] for s in sites]
    keys = [("P_affine", "P_affine"), ("gain_bound_euclidean", "gain (Euclidean)"),
            ("gain_bound_natural", "gain (natural)"), ("AG_max", "AG_max")]
    fig, ax = plt.subplots(figsize=(max(5.0, 0.9 * len(names) + 2), 3.6))
    width = 0.8 / len(keys)
    for k, (key, label) in enumerate(keys):
        vals = [max(float(s[key] or 0.0), 1e-12) for s in sites]
        ax.bar([i + k * width for i in range(len(names))], vals, width, label=label)
    labels = [n + (" *" if s["test_adaptive"]["reject"] else "") for n, s in zip(names, sites)]
    ax.set_yscale("log")
    ax.set_xticks([i + 0.3 for i in range(len(names))], labels, rotation=30, ha="right", fontsize=8)
    ax.set_title(f"{result['model']['verdict']}\n(* = first-order signal detected at the site)", fontsize=8)
    ax.legend(fontsize=7)
    return save_figure(fig, path)
