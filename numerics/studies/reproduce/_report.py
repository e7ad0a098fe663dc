"""``report.md`` of ``depthcert reproduce``: a table with one row per claim, then one section each."""
from __future__ import annotations

import datetime
import os
from pathlib import Path

__all__ = ["render_report"]

_MARK = {"reproduced": "✅ reproduced", "not reproduced": "❌ not reproduced", "inconclusive": "❔ inconclusive",
         "not run": "⏸ not run", "convention-dependent": "🔀 convention-dependent",
         "not the seed's setup": "↪ not the seed's setup"}


_SETUP = {False: "Our setups are small synthetic teacher tasks, not the papers' CIFAR/ImageNet/GPT-scale experiments.",
          True: "Here: 1-D residual CNNs (numerics.zoo_cnn1d.ResCNN1d) trained on i.i.d. MNIST-1D samples, a real "
                "benchmark at a size two CPU cores train in minutes, not the papers' CIFAR/ImageNet/GPT-scale "
                "experiments; each measured line ends with the minimum detectable effect (MDE) at its sizes, "
                "from a pilot on separate seeds."}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _rel(path: str, out: Path) -> str:
    return os.path.relpath(path, out)


def _by_convention(c) -> str:
    if not c.conventions:
        return c.measured
    if c.verdict == "not the seed's setup":
        return (c.measured + f" — not the seed's setup ({c.claim.setup}): its rule on this measurement says "
                f"{c.conventions[0]['verdict']}, not counted")
    groups: dict = {}
    for v in c.conventions:
        groups.setdefault(v["verdict"], []).append(v["convention"])
    return c.measured + " — by convention: " + "; ".join(f"{k}: {', '.join(n)}" for k, n in groups.items())


def _num(v) -> str:
    return "—" if v is None or v != v else f"{v:.3g}"


def _conventions_table(c) -> list[str]:
    if not c.conventions:
        return []
    rows = ["", "| convention | statistic | estimate [95% interval] | MDE | verdict | notes |", "|---|---|---|---|---|---|"]
    for v in c.conventions:
        iv = v.get("interval") or [None, None]
        rows.append(f"| {_cell(v['convention'])} | {_cell(v['statistic'])} | {_num(v.get('estimate'))} "
                    f"[{_num(iv[0])}, {_num(iv[1])}] | {_num(v.get('mde'))} | {_MARK[v['verdict']]} | "
                    f"{_cell(v.get('note', ''))} |")
    return rows


def render_report(report, out: Path) -> str:
    """Markdown text of ``report`` (figure links relative to ``out``)."""
    counts = {v: sum(c.verdict == v for c in report.claims) for v in _MARK}
    lines = [f"# depthcert reproduce --suite {report.suite}", "",
             f"Generated {datetime.datetime.now().isoformat(timespec='seconds')}; wall time "
             f"{report.wall_s / 60:.1f} min; expected: {report.expected}.",
             "Versions: " + ", ".join(f"{k} {v}" for k, v in report.versions.items()) + ".", "",
             "Each verdict follows a decision rule fixed in code before the suite was run "
             "(`numerics/studies/reproduce/_claims.py`), never tuned to agree. \"The paper says\" quotes the seed "
             "summary (translated into English), nothing else; what the seeds do not give is marked **Choice**; "
             "where they leave a convention open, each convention gets its own verdict and the claim's verdict "
             "summarises them (`convention-dependent` when they differ). A verdict that changes as a **Choice** threshold "
             "runs over the range a reader may hold is `convention-dependent` too, with the threshold at which it flips; "
             "a measurement that is not the seed's setup is `not the seed's setup`, never counted as reproduced (the "
             "rule's verdict on it is shown beside it). \"Not reproduced\" needs a significant "
             "effect against the seed's statement; an effect not detected is \"inconclusive\", with its MDE. "
             "Paper A's results are "
             "qualitative: nothing here tests specific ratios. " + _SETUP[report.suite.startswith("mnist1d")]
             + " A verdict says what happens *here*.", "",
             "Summary: " + ", ".join(f"{n} {v}" for v, n in counts.items() if n) + ".", "",
             "| claim | the paper says | what we measured | verdict |", "|---|---|---|---|"]
    lines += [f"| {c.claim.id} ({c.claim.source}) | {_cell(c.claim.paper_says)} | {_cell(_by_convention(c))} | "
              f"{_MARK[c.verdict]} |" for c in report.claims]
    for c in report.claims:
        lines += ["", f"## {c.claim.id}", "", f"*{c.claim.source}*, the paper says (seed `{c.claim.seed}`, in "
                  f"English): \"{c.claim.seed_words}\"", ""]
        lines += [f"- **Choice**: {c.claim.choice}"] if c.claim.choice else []
        lines += [f"- open conventions: {c.claim.conventions}"] if c.claim.conventions else []
        lines += [f"- statistic: {c.claim.statistic}", f"- decision rule (each convention): {c.claim.rule.text()}",
                  f"- study: `{c.claim.study}`", f"- measured: {c.measured}", f"- verdict: **{c.verdict}**"]
        lines += _conventions_table(c)
        ev = c.evidence or {}
        if "table" in ev.get("details", {}):
            lines += ["", ev["details"]["table"]]
        lines += [f"\n![{c.claim.id}]({_rel(p, out)})" for p in ev.get("figures", [])]
    lines += ["", "## Sweeps", ""] + [
        f"- `{name}`: {s['cells']} cells ({s['computed']} computed in this call, {s['reused']} reused, "
        f"{s['failed']} failed), {s['workers']} worker(s) x {s['threads']} thread(s), {s['wall_s']:.0f} s; "
        f"table `{_rel(s['table'], out)}`" for name, s in report.sweeps.items()]
    return "\n".join(lines) + "\n"
