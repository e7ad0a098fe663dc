"""`depthcert bounds` with the THEORY §6 variants: JSON shape, table, [variants] bad input -> exit 2, figure."""
import json
from pathlib import Path

import pytest

from depthcert.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PLAIN, VARIANTS = EXAMPLES / "setup.toml", EXAMPLES / "setup_variants.toml"
PAPER_KEYS = {"eps_M", "eps_K", "level", "population_route", "direct_route", "notes", "degenerate_regime", "setup"}


def _json(capsys, path, *extra):
    assert main(["bounds", "--config", str(path), "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_variants_have_the_route_shape_and_existing_keys_are_kept(capsys):
    out = _json(capsys, VARIANTS)
    assert PAPER_KEYS | {"variants", "any_route", "population_risk_route"} == set(out)
    routes = out["variants"]["routes"]
    assert len(routes) == 8 and not out["variants"]["skipped"]
    for name, r in routes.items():
        assert set(out["population_route"]) <= set(r), name          # same shape as the paper's routes
        assert r["origin"].startswith("Choice") and r["theorem"] == name
        assert sum(t["value"] for t in r["terms"]) == pytest.approx(r["bound"], rel=1e-12)
    assert routes["population_tight_bernstein_empirical"]["certified"] is True
    assert out["population_route"]["certified"] is False and out["direct_route"]["certified"] is False
    assert set(out["variants"]["paper_terms"]) == {"population_route", "direct_route"}


def test_without_variant_inputs_only_the_hoeffding_closed_variants_run(capsys):
    out = _json(capsys, PLAIN)
    assert set(out["variants"]["routes"]) == {"population_tight_hoeffding", "direct_tight_hoeffding"}
    assert "variants.var_T_new" in out["variants"]["skipped"]["direct_tight_bernstein"]


def test_table_marks_paper_and_choice(capsys):
    assert main(["bounds", "--config", str(VARIANTS)]) == 0
    out = capsys.readouterr().out
    assert "population (Thm 2)" in out and "direct (Thm 3)" in out          # the existing table is still there
    lines = {line.split()[0]: line.split()[1] for line in out.splitlines()
             if line.startswith(("population_tight", "direct_tight"))}
    assert len(lines) == 8 and set(lines.values()) == {"Choice"}
    assert sum(" paper " in line for line in out.splitlines()) == 2


def _edit(tmp_path, old, new, base=VARIANTS):
    text = base.read_text()
    assert old in text
    p = tmp_path / "bad.toml"
    p.write_text(text.replace(old, new, 1))
    return p


BAD = [
    ("var_T_new = 0.34", "var_T_new = -0.34", "variants.var_T_new == -0.34"),
    ("var_T_new = 0.34", "var_T_new = nan", "variants.var_T_new == nan"),
    ("var_T_new = 0.34", 'var_T_new = "high"', "variants.var_T_new == 'high'"),
    ("var_T_old = 0.36", "var_T_old = 5.0", "variants.var_T_old == 5.0"),
    ("delta_mc = 0.005", "delta_mc = 0.2", "variants.delta_mc == 0.2"),
    ("delta_mc = 0.005", "delta_mc = 1.5", "variants.delta_mc == 1.5"),
    ("rad_hat_mc_error = 1e-4", "", "variants.rad_hat_mc_error is missing"),
    ("rad_hat = 0.0035", "rad_hat = inf", "variants.rad_hat == inf"),
    ("delta_mc = 0.005", "delta_mc = 0.005\ndelta_T_new = 0.0", "variants.delta_T_new == 0.0"),
    ("delta_mc = 0.005", "delta_mc = 0.005\ndelta_S_jump = true", "variants.delta_S_jump == True"),
    ("delta_mc = 0.005", 'delta_mc = 0.005\nuse = "best"', "variants.use == 'best'"),
    ("delta_mc = 0.005", "delta_mc = 0.005\nuse = 3", "variants.use == 3"),
    ("delta_mc = 0.005", "delta_mc = 0.005\nn_draws = 0.5", "variants.n_draws == 0.5"),
    ("delta_mc = 0.005", "delta_mc = 0.005\nphi_sq_sum = 1e9", "variants.phi_sq_sum == 1000000000.0"),
    ("delta_mc = 0.005", "delta_mc = 0.005\ndelta_T_jump = 0.01\ndelta_T_jump_S = 0.02",
     "variants.delta_T_jump == 0.01"),
]


@pytest.mark.parametrize("old,new,message", BAD, ids=[b[2] for b in BAD])
def test_bad_variant_input_exit_2_one_line(tmp_path, capsys, old, new, message):
    assert main(["bounds", "--config", str(_edit(tmp_path, old, new))]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err and "must be" in err and "Traceback" not in err


def test_use_of_a_skipped_variant_is_bad_input(tmp_path, capsys):
    bad = tmp_path / "use.toml"
    bad.write_text(PLAIN.read_text() + '\n[variants]\nuse = "direct_tight_bernstein"\n')
    assert main(["bounds", "--config", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "variants.use == 'direct_tight_bernstein', must be a route whose inputs" in err


def test_text_states_the_choice_and_the_assumption(tmp_path, capsys):
    """The post-hoc pick is the Bonferroni line, not a certificate; `use` gives one; the population assumption shows."""
    assert main(["bounds", "--config", str(VARIANTS)]) == 0
    out = capsys.readouterr().out
    assert "* each row alone, valid only for a route fixed before seeing the data" in out
    assert ("any route, picked after seeing the data (Bonferroni over 10 routes, each at level/10 = 0.01): "
            "not certified") in out
    assert "assumption of the population variants: f_old and f~_pop are fixed before S is drawn" in out
    chosen = _edit(tmp_path, "delta_mc = 0.005", 'delta_mc = 0.005\nuse = "population_tight_bernstein_empirical"')
    assert main(["bounds", "--config", str(chosen)]) == 0
    assert ("certificate of the route fixed before the data (use = population_tight_bernstein_empirical): certified"
            in capsys.readouterr().out)
    out = _json(capsys, chosen)["variants"]
    assert out["use"]["name"] == "population_tight_bernstein_empirical" and out["use"]["certified"] is True
    assert out["any_route"]["certified"] is False and out["any_route"]["method"] == "bonferroni"


def test_old_level_key_names_still_work(tmp_path, capsys):
    new = _edit(tmp_path, "delta_mc = 0.005", "delta_mc = 0.005\ndelta_S_jump_pop = 0.01\ndelta_T_jump_S = 0.02")
    a = _json(capsys, new)
    assert capsys.readouterr().err == ""
    old = _edit(tmp_path, "delta_mc = 0.005", "delta_mc = 0.005\ndelta_S_jump = 0.01\ndelta_T_jump = 0.02")
    b = _json(capsys, old)
    assert "warning" not in capsys.readouterr().err
    assert a["variants"]["routes"] == b["variants"]["routes"]


def test_variants_must_be_a_table(tmp_path, capsys):
    bad = _edit(tmp_path, "L_test_old = 0.62", "variants = 3\nL_test_old = 0.62", base=PLAIN)
    assert main(["bounds", "--config", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "variants == 3, must be a [variants] table" in err


def test_unknown_variant_key_is_a_warning(tmp_path, capsys):
    assert main(["bounds", "--config", str(_edit(tmp_path, "delta_mc = 0.005", "delta_mc = 0.005\nvar_X = 1")),
                 "--json"]) == 0
    assert "variants.var_X" in capsys.readouterr().err


def test_terms_figure_is_written(tmp_path, capsys):
    png = tmp_path / "terms.png"
    out = _json(capsys, VARIANTS, "--plot-terms", str(png))
    assert png.stat().st_size > 20_000 and png.read_bytes()[:4] == b"\x89PNG"
    assert out["plot_terms"] == str(png)


def test_unwritable_terms_figure_is_bad_input(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert main(["bounds", "--config", str(PLAIN), "--plot-terms", str(blocker / "t.png")]) == 2
    assert "--plot-terms ==" in capsys.readouterr().err


def test_terms_figure_reads_a_stored_result(tmp_path, capsys):
    """The figure is made from the stored JSON alone (plots read stored results)."""
    from depthcert.plots import plot_bound_terms

    out = _json(capsys, VARIANTS)
    stored = tmp_path / "result.json"
    stored.write_text(json.dumps(out))
    png = plot_bound_terms(json.loads(stored.read_text()), tmp_path / "again.png")
    assert png.stat().st_size > 20_000
