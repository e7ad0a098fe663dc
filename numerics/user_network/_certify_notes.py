"""The notes and refusals of :func:`depthcert.certify_insertion`: the class check on ``rho_phi``, the
certificate when there is nothing to certify, and which sample fixed what."""
from __future__ import annotations

from bounds.route_roles import annotate_row
from numerics.user_network._routes import DEFAULT_ROUTE

__all__ = ["cert_notes", "class_check", "nothing_to_certify", "phi_seen"]


def phi_seen(q: dict) -> float:
    """The largest ``||phi||`` on the samples the class must cover beyond the scan's part of the signal sample:
    ``S``, ``T`` and the signal's held third (``Delta_R``'s lower bound uses the class's range there)."""
    return max(q["rho_phi_S"], q["rho_phi_T"], q["rho_phi_held"])


def class_check(rows: list, q: dict) -> list:
    """On the event ``rho_phi_exceeded`` (docstring of ``numerics.user_network._certify``) no row certifies, and each says why."""
    if not q["rho_phi_exceeded"]:
        return rows
    why = (f"not certified: ||phi|| on S, T or the signal's held part (max {phi_seen(q):.6g}) exceeds the plug-in "
           f"rho_phi = {q['rho_phi']:.6g} fixed on the signal sample (the class condition fails)")
    return [{**r, "certified": False, "message": why} for r in rows]


def nothing_to_certify(route: str) -> tuple[list, list]:
    """``(rows, notes)`` of the certificate when the signal sample shows no descent direction."""
    note = "no first-order descent direction at the site on signal (G = 0 or slope <= 0): nothing to certify"
    rows = [annotate_row(route, {"route": route, "certified": False, "bound": None, "improvement": None,
                                 "failure_probability": None, "missing": [], "message": note}, None, None, "signal")]
    return rows, [note]


def cert_notes(route, rho_phi, q) -> list[str]:
    """Which sample fixed what, the route and the class condition (the certificate's first notes)."""
    return [f"route: {'the default, fixed before the data: ' if route is None else ''}{route or DEFAULT_ROUTE}",
            (f"scan: given (dc.saturation's probe and curvature sample, disjoint from signal, S and T: checked) fixed G, "
             f"beta, V_pop and the cap nu_V = 2||V_pop||; signal ({q['n_signal']} samples): Delta_R (empirical-Bernstein "
             "lower bound at level/4)") if q.get("scan_given") else
            (f"signal ({q['n_signal']} samples): first 2/3 fixed G, beta, V_pop and the cap nu_V = 2||V_pop||; "
             "last 1/3 estimated Delta_R (empirical-Bernstein lower bound at level/4)"),
            f"S ({q['M']} samples): G_S, f~_S and f_new (ERM in the cap); T ({q['K']} samples): test losses",
            "rho_phi: " + ("given" if rho_phi is not None else "plug-in maximum of the whole-state ||phi|| on the "
                           f"{_where(q, 'probe', 'sample')}, fixed before S and T (not a sure bound: "
                           "the certificate is conditional on "
                           f"it); checked on S, T and the signal's held part: {'EXCEEDED, nothing certifies' if q['rho_phi_exceeded'] else 'held'}"),
            f"beta is a plug-in (curvature along -G on the {_where(q, 'curvature sample', 'curvature part')})"]


def _where(q: dict, given: str, signal: str) -> str:
    """The sample that fixed a plug-in: the given scan's, or the signal sample's."""
    return f"given scan's {given}" if q.get("scan_given") else f"signal {signal}" if signal == "sample" else f"signal's {signal}"
