"""The MNIST-1D suites of `depthcert reproduce`: the claim rules on synthetic data of known truth,
the minimum detectable effect, the bound-validity `not run` path and a tiny end-to-end suite."""
import dataclasses
import math

import numpy as np
import pytest
from scipy import stats

from numerics.studies import reproduce as rp
from numerics.studies.reproduce import _power as pw
from numerics.studies.reproduce import _suites
from numerics.studies.reproduce._claims import CLAIM_SETS, MNIST1D_CLAIMS, VERDICTS, resolve_study

RULES = {c.id: c.rule for c in MNIST1D_CLAIMS}


def _cp(k: int, n: int, conf: float = 0.99) -> tuple[float, float]:
    """Two-sided Clopper-Pearson interval of a rate k/n."""
    lo = stats.beta.ppf((1 - conf) / 2, k, n - k + 1) if k else 0.0
    hi = stats.beta.ppf(1 - (1 - conf) / 2, k + 1, n - k) if k < n else 1.0
    return lo, hi


def _rate_ok(k: int, n: int, *, at_most: float | None = None, at_least: float | None = None) -> bool:
    """The observed rate k/n is not significantly (99% CP) above ``at_most`` / below ``at_least``."""
    lo, hi = _cp(k, n)
    return (at_most is None or lo <= at_most) and (at_least is None or hi >= at_least)


def test_rate_checker_rejects_a_rule_with_the_wrong_rate():
    assert _rate_ok(3, 200, at_most=0.05) and not _rate_ok(40, 200, at_most=0.05)
    assert _rate_ok(150, 200, at_least=0.8) and not _rate_ok(100, 200, at_least=0.8)


def test_mnist1d_registry_covers_theory_8_9_and_resolves():
    ids = [c.id for c in MNIST1D_CLAIMS]
    assert ids == ["covariance_near_diagonal", "signal_decay", "joint_scaling_rebound", "ag_max_plateau",
                   "ag_max_plateau_level", "ag_max_plateau_test_loss", "growth_vs_scratch", "local_insertion_shrinking",
                   "exponent_agreement", "bound_validity", "growth_own_block"]
    assert all(callable(resolve_study(c.study)) for c in MNIST1D_CLAIMS)
    assert CLAIM_SETS["mnist1d"] is MNIST1D_CLAIMS
    for name in ("mnist1d-quick", "mnist1d", "mnist1d-full"):
        s = rp.SUITES[name]
        assert s.claims == "mnist1d" and set(s.power) >= set(ids) - {"bound_validity", "ag_max_plateau_test_loss"}


def test_mde_matches_the_noncentral_t_power():
    """At the MDE, the exact power of the one-sided t-test at 2.5% (a 95% interval clears the threshold) is ~80%."""
    for n, sd in ((5, 1.0), (10, 0.07), (30, 3.0)):
        m = pw.mde(sd, n)
        crit = stats.t.ppf(0.975, n - 1)
        power = stats.nct.sf(crit, n - 1, m * math.sqrt(n) / sd)
        assert 0.78 < power < 0.83, (n, power)
    assert pw.mde(1.0, 1) == math.inf and pw.required_n(1.0, pw.mde(1.0, 12)) == 12
    with pytest.raises(ValueError, match="sd == -1"):
        pw.mde(-1, 3)


def _decide(rule_id: str, est, lo, hi) -> str:
    return RULES[rule_id].decide({"estimate": est, "interval": [lo, hi], "confidence": 0.95, "details": {}})


def _rates(rule_id: str, draw, n_rep: int) -> dict:
    rng = np.random.default_rng(7)
    out = {}
    for _ in range(n_rep):
        v = _decide(rule_id, *draw(rng))
        out[v] = out.get(v, 0) + 1
    return out


def test_growth_rule_reproduces_the_mde_effect_and_rejects_the_null():
    n, sd = 10, 0.08
    m = pw.mde(sd, n)
    true = _rates("growth_vs_scratch", lambda r: pw.t_interval(r.normal(m, sd, n)), 400)
    null = _rates("growth_vs_scratch", lambda r: pw.t_interval(r.normal(0.0, sd, n)), 400)
    assert _rate_ok(true.get("reproduced", 0), 400, at_least=0.8) and true.get("reproduced", 0) > 280
    assert _rate_ok(null.get("reproduced", 0), 400, at_most=0.025)
    worse = _rates("growth_vs_scratch", lambda r: pw.t_interval(r.normal(-m, sd, n)), 200)
    assert worse.get("not reproduced", 0) > 140 and worse.get("reproduced", 0) == 0


def test_level_rule_on_log_agmax():
    n, sd = 8, 0.5                      # log AG_max spread over seeds
    m = pw.mde(sd, n)

    def draw(mu):
        return lambda r: tuple(math.exp(v) for v in pw.t_interval(r.normal(mu, sd, n)))

    true = _rates("ag_max_plateau_level", draw(math.log(5e-3) - m), 400)
    null = _rates("ag_max_plateau_level", draw(math.log(5e-3)), 400)
    assert _rate_ok(true.get("reproduced", 0), 400, at_least=0.8) and true.get("reproduced", 0) > 280
    assert _rate_ok(null.get("reproduced", 0), 400, at_most=0.025)


def test_covariance_rule_bootstrap_rates():
    n, sd, thr = 20, 0.05, 1 / math.sqrt(2)
    m = pw.mde(sd, n)

    def draw(mu):
        return lambda r: pw.bootstrap_interval(r.normal(mu, sd, n), np.mean, 300, int(r.integers(1 << 30)))[:3]

    true = _rates("covariance_near_diagonal", draw(thr - m), 200)
    null = _rates("covariance_near_diagonal", draw(thr), 200)
    assert _rate_ok(true.get("reproduced", 0), 200, at_least=0.8) and true.get("reproduced", 0) > 130
    assert _rate_ok(null.get("reproduced", 0), 200, at_most=0.05)


def test_insertion_tau_rule_on_synthetic_gains():
    D = np.repeat([0, 1, 2, 4, 8], 3).astype(float)

    def draw(slope):
        return lambda r: pw.tau_interval(D, slope * np.log1p(D) + r.normal(0, 1, D.size), 300,
                                         int(r.integers(1 << 30)))[:3]

    true = _rates("local_insertion_shrinking", draw(-2.0), 200)
    null = _rates("local_insertion_shrinking", draw(0.0), 200)
    assert true.get("reproduced", 0) > 160
    assert _rate_ok(null.get("reproduced", 0), 200, at_most=0.05)


def test_vectorised_tau_equals_scipy():
    rng = np.random.default_rng(3)
    x, y = np.repeat([0, 1, 2, 4.0], 3), rng.normal(size=12)
    y[:2] = y[5]                                       # ties in both
    assert pw.kendall_tau_b(x, y)[0] == pytest.approx(stats.kendalltau(x, y).statistic, abs=1e-12)
    assert pw.kendall_tau_b(np.ones(5), np.arange(5.0))[0] == 0.0


def test_plateau_rule_on_synthetic_agmax_curves():
    """A drop then flat curve is reproduced, and so is a power-law decay towards zero (a plateau approaching zero:
    its late fall per unit depth is (D_late/D_early)^-(a+1) of its early one, so the linear-scale ratio is small).
    The rule can still fail: a curve that keeps falling at a constant rate per unit depth (no plateau, linear
    ratio 1, log ratio > 1) is not reproduced, and a curve that rises over the first depths is not reproduced.

    Replaces the earlier assertion that a power-law decay comes out inconclusive: that assertion encoded the
    log-scale-only rule's blind spot (a power law has a constant log-log slope, so |late/early| ~ 1 there
    whatever the depths), the opposite of the seed's 'plateaus near zero'."""
    from numerics.studies.reproduce._power import plateau_tests

    D = np.array([1, 2, 4, 8, 12, 16.0])
    curves = {"plateau": np.log(np.maximum(1 / D, 1 / 6)), "power_law": np.log(1 / D), "rises": np.log(D),
              "linear_fall": np.log(1.2 - 0.06 * D)}

    def draw(curve):
        def one(r):
            rows = curve + r.normal(0, 0.1, (6, D.size))
            return {"details": plateau_tests(D, rows, 200)}
        return one

    rates = {k: {} for k in curves}
    rng = np.random.default_rng(7)
    for k, curve in curves.items():
        for _ in range(40):
            v = RULES["ag_max_plateau"].decide(draw(curve)(rng))
            rates[k][v] = rates[k].get(v, 0) + 1
    assert rates["plateau"].get("reproduced", 0) > 32
    assert rates["power_law"].get("reproduced", 0) > 32, rates["power_law"]
    assert rates["linear_fall"].get("reproduced", 0) <= 2 and rates["linear_fall"].get("not reproduced", 0) == 0
    assert rates["rises"].get("not reproduced", 0) > 36


def test_plateau_linear_ratio_against_hand_computed_slopes():
    """AG = 1/D at D = 1, 2, 4, 8, 12, 16: least-squares slopes by hand, early over (1, 1), (2, 1/2), (4, 1/4) and
    late over (8, 1/8), (12, 1/12), (16, 1/16)."""
    from numerics.studies.reproduce._power import plateau_ratio, plateau_ratio_linear

    D = np.array([1, 2, 4, 8, 12, 16.0])

    def slope(x, y):
        x, y = np.array(x), np.array(y)
        return ((x - x.mean()) * (y - y.mean())).sum() / ((x - x.mean()) ** 2).sum()

    want = abs(slope([8, 12, 16], [1 / 8, 1 / 12, 1 / 16])) / -slope([1, 2, 4], [1, 0.5, 0.25])
    assert plateau_ratio_linear(D, np.log(1 / D)[None]) == pytest.approx(want, rel=1e-12)
    assert want < 0.05 and plateau_ratio(D, np.log(1 / D)[None]) == pytest.approx(1.0, rel=1e-9)


def test_plateau_seed_level_convention():
    """The seed's own level: reproduced when AG_max drops early and its deepest level's interval lies below 5e-3;
    not reproduced when that interval lies above it or AG_max rises; inconclusive when it straddles 5e-3."""
    rule = RULES["ag_max_plateau"]

    def v(drop, rise, near, above):
        return rule.decide({"details": {"tests": {"early_drop": drop, "early_rise": rise, "near_zero": near,
                                                  "above_level": above, "flat": True, "flat_upper": 0.0}}})
    assert v(True, False, True, False) == "reproduced"
    assert v(True, False, False, True) == "not reproduced" and v(False, True, True, False) == "not reproduced"
    assert v(True, False, False, False) == "inconclusive"          # flat, but the level is what decides here


def test_bound_validity_refused_config_is_not_run(tmp_path, monkeypatch):
    """When run's validate_config refuses the MNIST-1D config, the claim is `not run` with that reason."""
    from plumbing.validation import InputError
    import numerics.studies.run as run

    def refuse(cfg):
        raise InputError("task.kind", "one of the run study's tasks", "mnist1d")

    monkeypatch.setattr(run, "validate_config", refuse)
    claim = next(c for c in MNIST1D_CLAIMS if c.id == "bound_validity")
    ctx = rp.ReproduceContext(rp.SUITES["mnist1d-quick"], tmp_path, {}, {})
    res = rp._measure(claim, ctx)
    assert res.verdict == "not run" and "refuses the MNIST-1D run config" in res.measured
    assert "task.kind == 'mnist1d'" in res.measured and not (tmp_path / "validity").exists()


def test_bound_validity_without_draws_is_not_run(tmp_path):
    claim = next(c for c in MNIST1D_CLAIMS if c.id == "bound_validity")
    suite = dataclasses.replace(rp.SUITES["mnist1d-quick"], validity={})
    assert rp._measure(claim, rp.ReproduceContext(suite, tmp_path, {}, {})).verdict == "not run"


TINY_BASE = {**_suites.MNIST1D_BASE, "task": {"kind": "mnist1d", "n_test": 256, "n_population": 256},
             "reference": {**_suites.MNIST1D_BASE["reference"], "n": 256, "steps": 4, "anneal_steps": 0},
             "model": {**_suites.MNIST1D_BASE["model"], "width": 4},
             "saturation": {**_suites.MNIST1D_BASE["saturation"], "probe_n": 64, "beta_n": 32, "width": 4},
             "growth": {**_suites.MNIST1D_BASE["growth"], "max_depth": 2, "steps_per_growth": 3}}


def tiny_suite() -> rp.Suite:
    """The quick suite's claims and pilot spreads on test sizes (seconds)."""
    return rp.Suite("mnist1d-quick", **_suites.mnist1d_suite(
        TINY_BASE, depths=[0, 1, 2, 3, 4], rebound_depths=[1, 2], widths=[4, 8], depth_seeds=[0, 1],
        rebound_seeds=[0, 1], growth_seeds=[0, 1], validity_draws=0, n_boot=50, expected="seconds (test sizes)",
        power=_suites.SUITES["mnist1d-quick"]["power"]))


def test_tiny_mnist1d_suite_end_to_end_and_resumes(tmp_path, monkeypatch):
    monkeypatch.setitem(rp.SUITES, "mnist1d-quick", tiny_suite())
    rep = rp.reproduce("mnist1d-quick", tmp_path, progress=False)
    verdicts = {c.claim.id: c.verdict for c in rep.claims}
    assert list(verdicts) == [c.id for c in MNIST1D_CLAIMS]
    assert verdicts["bound_validity"] == "not run"
    for cid, v in verdicts.items():
        assert v in VERDICTS
        if cid != "bound_validity":
            assert v != "not run", cid
    text = (tmp_path / "report.md").read_text()
    assert "MDE at 80% power" in text and "| growth_vs_scratch (" in text
    own = next(c for c in rep.claims if c.claim.id == "growth_own_block")   # the tiny variant of the own-block claim
    assert own.evidence and len(own.evidence["details"]["conventions"]) == 4, own.measured
    for fig in ("ag-max.png", "ag-max-conventions.png", "growth-vs-scratch.png", "rebound.png", "appendix-m.png"):
        assert (tmp_path / "figures" / fig).is_file(), fig
    assert "![ag_max_plateau](figures/ag-max-conventions.png)" in text
    _check_claims_json(tmp_path / "claims.json")
    again = rp.reproduce("mnist1d-quick", tmp_path, progress=False)
    assert all(s["computed"] == 0 for s in again.sweeps.values())
    assert [c.measured for c in again.claims] == [c.measured for c in rep.claims]


def _check_claims_json(path) -> None:
    """Issue 25's acceptance on a written claims.json: every claim has seed words; every claim with a Choice or
    an open convention has >= 2 conventions; AG_max on the training sample at the top site is one of them."""
    import json

    claims = {c["id"]: c for c in json.loads(path.read_text())["claims"]}
    for cid, c in claims.items():
        assert c["seed_words"] and c["seed"].endswith(".txt"), cid
        if c["verdict"] != "not run" and (c["choice"] or c["open_conventions"]):
            assert len(c["conventions"]) >= 2, cid
            assert all(set(v) >= {"convention", "statistic", "verdict", "mde"} for v in c["conventions"]), cid
    for cid in ("ag_max_plateau", "ag_max_plateau_level", "ag_max_plateau_test_loss"):
        assert any(v["convention"].startswith("training sample, top site") for v in claims[cid]["conventions"]), cid


def test_claims_json_checker_rejects_a_claim_without_seed_words(tmp_path):
    import json

    bad = {"claims": [{"id": "x", "seed_words": "", "seed": "001.txt", "choice": "", "open_conventions": "",
                       "verdict": "inconclusive", "conventions": []}]}
    (tmp_path / "claims.json").write_text(json.dumps(bad))
    with pytest.raises(AssertionError):
        _check_claims_json(tmp_path / "claims.json")
    bad["claims"][0].update(seed_words="w", choice="ours")                # a Choice with one convention or none
    (tmp_path / "claims.json").write_text(json.dumps(bad))
    with pytest.raises(AssertionError):
        _check_claims_json(tmp_path / "claims.json")


def fake_rebound_cell(config):
    """A synthetic risk of known shape: ``rebound`` (depth overfits at narrow width) or ``monotone``."""
    m, seed = config["model"], config["seed"]
    D, W = m["depth"], m["width"]
    noise = np.random.default_rng([seed, D, W]).normal(0, 0.01)
    R = 0.5 / D + (0.1 * D / W if config["truth"] == "rebound" else 0.1 / W) + 0.05 + noise
    return {"config": dict(config), "R_old": R, "R_old_stderr": 0.001}


@pytest.mark.parametrize("truth, verdict", [("rebound", "reproduced"), ("monotone", "not reproduced")])
def test_rebound_rule_on_a_synthetic_grid(tmp_path, truth, verdict):
    """Through the real sweep machinery and the claim's study: a true rebound is found, a monotone grid rejected."""
    from numerics.studies.reproduce import _mnist1d_studies as st
    from numerics.studies.sweeps import make_spec, sweep

    spec = make_spec({"seed": 0, "truth": truth, "model": {"depth": 1, "width": 2}},
                     {"model.depth": [1, 2, 4, 8], "model.width": [2, 4, 8, 16], "seed": [0, 1, 2, 3, 4]},
                     validate=dict)
    sweep(spec, tmp_path / "rebound", runner="tests.numerics.studies.test_reproduce_mnist1d:fake_rebound_cell",
          progress=False)
    ctx = rp.ReproduceContext(tiny_suite(), tmp_path, {"rebound": tmp_path / "rebound"}, {})
    ev = st.joint_scaling_rebound(ctx)
    assert RULES["joint_scaling_rebound"].decide(ev) == verdict
    assert "MDE at 80% power" in ev["measured"] and (tmp_path / "figures" / "rebound.png").is_file()


@pytest.mark.slow
def test_tiny_mnist1d_suite_ray_gives_the_local_numbers(tmp_path, monkeypatch):
    """`--backend ray` (a local Ray instance) and the local backend: the same cells, the same measured claims,
    at the same threads per cell (one, Ray's default and what `--workers 2` gives on 2 cores): the test
    sizes' width-4 cells have activation gradients at rounding level (per-channel group norm), whose
    covariance ratio depends on the summation order a thread count sets."""
    pytest.importorskip("ray")
    monkeypatch.setitem(rp.SUITES, "mnist1d-quick", tiny_suite())
    local = rp.reproduce("mnist1d-quick", tmp_path / "local", threads=1, progress=False)
    remote = rp.reproduce("mnist1d-quick", tmp_path / "ray", backend="ray", threads=1, progress=False)
    assert all(s["backend"] == "ray" and s["computed"] == s["cells"] for s in remote.sweeps.values())
    assert [c.measured for c in remote.claims] == [c.measured for c in local.claims]


def test_plateau_onset_marks_a_drop_then_flat_and_nothing_else():
    from numerics.studies.reproduce._mnist1d_figures import plateau_onset

    d = [1, 2, 4, 8, 16]
    assert plateau_onset(d, [1.0, 0.5, 0.25, 0.24, 0.24]) == 4
    assert plateau_onset(d, [0.4, 3.8, 5.5, 8.8, 8.1]) is None          # rises: no plateau to mark
    assert plateau_onset(d, [1.0, 0.5, 0.25, 0.12, 0.06]) is None       # keeps falling


def test_suite_sizes_follow_the_issue_and_the_pilot_seeds_are_separate():
    pilot = rp.SUITES["mnist1d-pilot"]
    pilot_seeds = {c.config["seed"] for spec in pilot.specs().values() for c in spec.cells}
    for name in ("mnist1d-quick", "mnist1d", "mnist1d-full"):
        seeds = {c.config["seed"] for spec in rp.SUITES[name].specs().values() for c in spec.cells}
        assert not seeds & pilot_seeds, name
    growth = {n: len(rp.SUITES[n].specs()["growth"].cells) for n in ("mnist1d", "mnist1d-full")}
    assert growth["mnist1d"] >= 10
    sd = rp.SUITES["mnist1d-full"].power["growth_vs_scratch"]["sd"]
    assert pw.mde(sd, growth["mnist1d-full"]) <= 0.118 < pw.mde(sd, growth["mnist1d"])   # 80% power for +11.8% in full
    assert "CPU-core-hours" in rp.SUITES["mnist1d-full"].expected and "--backend ray" in rp.SUITES["mnist1d-full"].expected
    depths = {c.config["model"]["depth"] for c in rp.SUITES["mnist1d"].specs()["depth"].cells}
    assert min(depths) == 0 and max(depths) == 16


def test_channel_covariance_against_per_sample_backward_passes():
    """One backward pass per sample (a loop, independent of SiteProbe), the C x C covariance of the
    channel vectors over samples and positions, its off-diagonal mass by hand."""
    import torch

    from numerics.studies.reproduce._mnist1d_cells import channel_covariance
    from numerics.zoo_cnn1d import ResCNN1d

    net = ResCNN1d(1, 8, 2, 10, groups=4, seed=3).eval()   # width 4 with 4 groups: constant output (see docs)
    x, y = torch.randn(6, 1, 40), torch.randint(0, 10, (6,))
    got = channel_covariance(net, ["stem_out", "blocks.0"], x, y, "cross_entropy", batch_size=4)
    for k, site in enumerate(["stem_out", "blocks.0"]):
        rows = []
        for i in range(6):
            store = {}

            def keep(mod, args, out, store=store):
                out.retain_grad()
                store["u"] = out

            h = dict(net.named_modules())[site].register_forward_hook(keep)
            torch.nn.functional.cross_entropy(net(x[i:i + 1]), y[i:i + 1]).backward()
            h.remove()
            rows.append(store["u"].grad[0].T.double().numpy())          # (L, C)
        S = np.cov(np.concatenate(rows).T)
        ratio = np.linalg.norm(S - np.diag(np.diag(S))) / np.linalg.norm(S)
        assert got[k]["offdiag_ratio"] == pytest.approx(ratio, rel=1e-4)
        assert got[k]["trace"] == pytest.approx(np.trace(S), rel=1e-4)


def test_stderr_identity_of_the_site_signal():
    """sqrt(||G||^2 - U) equals the standard error sqrt((sum ||X_i||^2 - n ||G||^2) / (n (n-1)))."""
    X = np.random.default_rng(0).normal(size=(50, 3, 2)) + 0.3
    n = X.shape[0]
    G = X.mean(0)
    sq = (X ** 2).sum()
    U = ((X.sum(0) ** 2).sum() - sq) / (n * (n - 1))
    direct = math.sqrt((sq - n * (G ** 2).sum()) / (n * (n - 1)))
    assert math.sqrt((G ** 2).sum() - U) == pytest.approx(direct, rel=1e-12)


def test_choice_thresholds_show_their_sensitivity():
    """The plateau's |late/early| bound and the coincidence's change-point rule and factor: the verdict at each
    neighbouring threshold, computed by hand for these curves."""
    from numerics.studies.reproduce._mnist1d_conventions import _onset_sensitivity, _plateau_sensitivity

    t = {"tests": {"early_drop": True, "early_rise": False, "flat": True}, "ratio": [0.2, 0.05, 0.4]}
    assert "0.25: inconclusive, 0.5: reproduced, 1: reproduced" in _plateau_sensitivity(t)
    rise = {"tests": {"early_drop": False, "early_rise": True, "flat": True}, "ratio": [0.2, 0.05, 0.4]}
    assert _plateau_sensitivity(rise).count("not reproduced") == 3
    D = np.array([1.0, 2, 4, 8, 16])
    log_ag = np.log([[1.0, 0.5, 0.25, 0.24, 0.24]])
    loss = np.array([[2.0, 1.5, 1.3, 1.2, 1.15]])
    text = _onset_sensitivity(D, log_ag, loss, [-0.9, -0.6])
    assert "5%: 4 vs 8, 10%: 4 vs 8, 20%: 4 vs 4" in text
    assert "factor 1.41: not reproduced, 2: reproduced, 4: reproduced" in text
