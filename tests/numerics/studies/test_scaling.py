"""The scaling study on synthetic stored records with known exponents (and on a real tiny sweep)."""
import numpy as np
import pytest

from plumbing.validation import InputError
from numerics.studies import figures, scaling
from numerics.studies.scaling import AGREEMENT_MAX_WIDTH, Estimate, agreement_verdict, appendix_m, optimal_depth

DEPTHS = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32]


def _records(alpha=0.9, excess_exponent=None, noise=0.02, seeds=3, R_inf=0.05, seed=0):
    """Cells of a depth sweep obeying Assumption G (s = 0.5 D^-alpha) and R - R_inf = 0.3 D^-a."""
    a = 2 * alpha - 1 if excess_exponent is None else excess_exponent
    rng = np.random.default_rng(seed)
    out = []
    for D in DEPTHS:
        for s in range(seeds):
            sig = 0.5 * D**-alpha * np.exp(rng.normal(0, noise))
            risk = (R_inf + 0.3 * D**-a) * np.exp(rng.normal(0, noise / 10))
            out.append({"config": {"model": {"depth": D, "width": 8}, "seed": s, "reference": {"n": 1000}},
                        "R_old": risk, "R_old_stderr": 1e-4,
                        "diagnostics": {"sites": {"s_max": sig, "argmax": 0, "G_norm_stderr": [1e-3]}}})
    return out


def test_appendix_m_recovers_known_exponents_and_agrees():
    res = appendix_m(_records(alpha=0.9), n_boot=200)
    lo, hi = res.alpha.interval
    assert lo <= 0.9 <= hi and res.alpha.estimate == pytest.approx(0.9, abs=0.03)
    assert res.excess_observed.interval[0] <= 0.8 <= res.excess_observed.interval[1]
    assert res.excess_predicted.estimate == pytest.approx(2 * res.alpha.estimate - 1)   # read from bounds.appendix_m
    assert res.verdict == "reproduced", scaling.exponent_table(res)
    assert res.risk_fit.fit.E == pytest.approx(0.05, rel=0.05)


def test_appendix_m_rejects_a_wrong_law():
    """Data whose excess decays like D^-(2 alpha), not D^-(2 alpha - 1): the rule must say so."""
    res = appendix_m(_records(alpha=0.9, excess_exponent=1.8), n_boot=200)
    assert res.verdict == "not reproduced", scaling.exponent_table(res)


def test_agreement_rule_cases():
    def verdict(lo, hi):
        return agreement_verdict(Estimate("d", (lo + hi) / 2, (lo, hi), 0.95))

    assert verdict(-0.1, 0.2) == "reproduced"
    assert verdict(0.05, 0.2) == "not reproduced" and verdict(-0.4, -0.01) == "not reproduced"
    assert verdict(-0.3, AGREEMENT_MAX_WIDTH) == "inconclusive"          # contains 0 but too wide
    assert verdict(float("nan"), 0.1) == "inconclusive"
    no_G = Estimate("alpha_hat", 0.2, (0.1, 0.4), 0.95)                  # Assumption G (alpha > 1/2) fails
    assert agreement_verdict(Estimate("d", 1.0, (0.5, 1.5), 0.95), no_G) == "inconclusive"
    G = Estimate("alpha_hat", 0.9, (0.7, 1.1), 0.95)
    assert agreement_verdict(Estimate("d", 1.0, (0.5, 1.5), 0.95), G) == "not reproduced"


def test_appendix_m_needs_three_depths():
    recs = [r for r in _records() if r["config"]["model"]["depth"] <= 2]
    with pytest.raises(InputError, match=r"model.depth == \[1.0, 2.0\], must be varied over at least 3 depths"):
        appendix_m(recs)


def test_exponent_table_is_markdown_with_the_verdict():
    text = scaling.exponent_table(appendix_m(_records(), n_boot=50))
    assert text.startswith("| quantity | fitted") and "verdict: **" in text and "2 alpha_hat - 1" in text


def test_optimal_depth_grows_like_the_closed_form():
    """R(D, M) = D^-1 + sqrt(D / M) (a = 1): D* ∝ M^{1/3}, checked against the prediction."""
    recs = []
    for M in [1e2, 1e3, 1e4, 1e5]:
        for D in range(1, 121):
            recs.append({"config": {"model": {"depth": D}, "reference": {"n": M}}, "R_old": D**-1.0 + np.sqrt(D / M)})
    res = optimal_depth(recs, a=1.0, n_boot=50)
    exact = (2 * np.sqrt(res.sizes)) ** (2 / 3)                      # argmin of D^-1 + sqrt(D/M)
    np.testing.assert_allclose(res.d_star, exact, rtol=0.05, atol=1)
    assert res.predicted.estimate == pytest.approx(1 / 3)
    assert res.exponent.estimate == pytest.approx(1 / 3, abs=0.03)


def test_rebound_curves_and_joint_path():
    recs = [{"config": {"model": {"depth": D, "width": w}, "seed": s}, "R_old": 1.0 / w + 0.01 * D + 0.001 * s}
            for D in (1, 2, 4) for w in (2, 4, 8) for s in (0, 1)]
    res = scaling.rebound(recs)
    assert res["joint"]["depths"] == [1, 2, 4] and res["joint"]["widths"] == [2, 4, 8]
    np.testing.assert_allclose(res["joint"]["means"], [1 / 2 + 0.01 + 0.0005, 1 / 4 + 0.02 + 0.0005,
                                                      1 / 8 + 0.04 + 0.0005])
    np.testing.assert_allclose([m for m, _ in res["curves"][2.0]], [0.5105, 0.5205, 0.5405])


@pytest.mark.parametrize("kind", ["appendix-m", "dstar", "rebound", "data"])
def test_plot_kinds_from_stored_records(tmp_path, kind, monkeypatch):
    recs = _records(seeds=2) if kind in ("appendix-m", "rebound") else [
        {"config": {"model": {"depth": D, "width": 8}, "reference": {"n": M}, "seed": 0},
         "R_old": 0.1 + D**-1.0 + np.sqrt(D / M)} for M in (1e2, 1e3, 1e4) for D in (1, 2, 4, 8, 16)]
    if kind == "rebound":
        for i, r in enumerate(recs):
            r["config"]["model"]["width"] = [2, 4][i % 2]
    monkeypatch.setattr(scaling, "load_records", lambda folder: recs)
    paths = figures.plot_kind(tmp_path, kind, n_boot=50)
    for suffix in (".png", ".pdf", ".json"):
        (p,) = [p for p in paths if p.suffix == suffix]
        assert p.stat().st_size > 500
