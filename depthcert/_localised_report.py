"""The ``depthcert bounds`` table of the localised certificates (THEORY §6b, **Choice**; ``[localised]``)."""
from __future__ import annotations

__all__ = ["localised_dict", "localised_text"]


def _fmt(v) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def localised_dict(report, use: str | None) -> dict:
    """``localised`` of ``depthcert bounds --json``: the report and the route fixed before the data."""
    out = report.to_dict()
    chosen = report.routes.get(use) if use else None
    out["use"] = None if use is None else {"name": use, "certified": bool(chosen.certified) if chosen else False,
                                           "skipped": None if chosen else report.skipped.get(use)}
    return out


def localised_text(report, use: str | None) -> str:
    """One row per localised route (bound on ``L_test(f_new)``, improvement, failure probability, certified)."""
    w = 38
    head = f"{'route':{w}} {'bound':>10} {'improvement':>12} {'failure p':>10} {'certified*':>10}"
    lines = ["localised certificates (THEORY §6b, Choice: this project's, not Paper A's)", head, "-" * len(head)]
    for name, r in report.routes.items():
        d = r.to_dict()
        lines.append(f"{name:{w}} {_fmt(d['bound']):>10} {_fmt(d['improvement']):>12} "
                     f"{_fmt(d['failure_probability']):>10} {_fmt(d['certified']):>10}")
    lines.append("* each row alone, valid only for a route fixed before seeing the data ([localised] use).")
    if use:
        r = report.routes.get(use)
        lines.append(f"route fixed before the data (use = {use}): " +
                     (("CERTIFIED" if r.certified else "not certified") if r is not None else
                      f"skipped ({report.skipped.get(use)})"))
    lines += [f"skipped: {name}: {why}" for name, why in report.skipped.items()]
    return "\n".join(lines)
