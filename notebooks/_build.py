"""Build the notebooks from these cell lists (run: python notebooks/_build.py).

Notebooks only call the library; they define no math (STYLE.md). CI executes them
(tests/test_notebooks.py).
"""
from pathlib import Path

import nbformat as nbf

HERE = Path(__file__).parent

NOTEBOOKS = {
    "01_bounds.ipynb": [
        ("md", "# Bounds: evaluate, certify, solve\nTheorems 2 and 3 of this project's formalisation "
               "(`docs/THEORY.md` §5–§6), read from the theorem objects in `bounds/`."),
        ("code", "import numpy as np\nfrom bounds import THEOREM_2, THEOREM_3\n"
                 "from bounds.routes import Setup, evaluate_routes\nfrom bounds.regimes import degenerate_regime\n"
                 "print(THEOREM_2.conclusion)\nprint(THEOREM_2.failure_probability)\nprint(THEOREM_3.conclusion)"),
        ("md", "The proof chain of Theorem 2, premise by premise, with its failure event:"),
        ("code", "for p in THEOREM_2.premises:\n    print(f'{p.name:20s} {str(p.relation):45s} event={p.event}')"),
        ("md", "## One setup\nThe README's example: neither route certifies, and the toolkit says by how much."),
        ("code", "setup = Setup(L_test_old=0.62, delta_R=0.09, delta_erm=0.004, delta_test_R=0.085, M=2e5, K=1e5,\n"
                 "              delta=0.05, delta_prime=0.05, B=4.2, L_loss=2**0.5, family='readout',\n"
                 "              block=dict(d=8, L_top=2.5, rho_phi=3.0, nu_V=0.4))\n"
                 "rep = evaluate_routes(setup, level=0.1)\n"
                 "print(rep.population.to_dict()['message'])\nprint(rep.direct.to_dict()['message'])\n"
                 "print('smallest M for the population route:', float(rep.population.min_M))\n"
                 "assert not rep.population.certified"),
        ("md", "## The degenerate regime\nAs `Delta_R -> 0` the population route's failure probability tends to "
               "`delta + 2`: vacuous. The direct route does not depend on `Delta_R`."),
        ("code", "reg = degenerate_regime(Setup(**{**setup.__dict__, 'M': 2e7}), 0.1)\nprint(reg.summary)"),
        ("code", "from depthcert.plots import plot_routes\nfrom IPython.display import Image\n"
                 "Image(filename=str(plot_routes(setup, 0.1, 'routes.png')))"),
        ("md", "## A million setups at once\nEvery field may be an array; evaluation is lambdified."),
        ("code", "rng = np.random.default_rng(0)\nn = 1_000_000\n"
                 "many = Setup(**{**setup.__dict__, 'M': rng.uniform(1e4, 1e8, n), 'delta_R': rng.uniform(0.01, 0.5, n)})\n"
                 "batch = evaluate_routes(many, 0.1, validate=False)\n"
                 "print(f'{batch.population.certified.mean():.1%} of random setups certified by the population route')"),
        ("md", "## Appendix M\nThe power-law conversion, with this project's Assumptions G and G'."),
        ("code", "from bounds import appendix_m as am\nprint('R(D) - R_inf between', am.excess_risk_bounds())\n"
                 "print('exponent:', am.excess_exponent())\nprint('D* =', am.optimal_depth(), ' ~ M^', "
                 "am.growth_exponent(am.optimal_depth()))\nprint('deepest certified depth ~ M^', "
                 "am.growth_exponent(am.deepest_certified_depth()))"),
    ],
    "02_proofs.ipynb": [
        ("md", "# Proof chains, machine-checked\nEach theorem object of `bounds/` is checked by `proofs_check`: "
               "an exact Farkas certificate, a z3 proof, necessity of every premise, the probability ledger."),
        ("code", "import proofs_check\nfrom bounds import THEOREM_2, THEOREM_3\n"
                 "res = proofs_check.verify(THEOREM_2)\nprint(res.ok)\nfor c in res.to_dict()['checks'][:6]:\n"
                 "    print(c['status'], c['name'], '-', c['detail'][:80])"),
        ("md", "## A mutant must be rejected\nThe margin `Delta_R` instead of `Delta_R/2` does not follow."),
        ("code", "from bounds import _symbols as s\nimport sympy as sp\n"
                 "wrong = THEOREM_2.replace(conclusion=sp.Le(s.L_test_new, s.L_test_old - s.delta_R - s.delta_erm + 2 * s.eps_M))\n"
                 "bad = proofs_check.verify(wrong, necessity=False)\nprint(bad.ok)\nassert not bad.ok"),
        ("md", "## Your own chain\nFormulas are parsed by a restricted grammar (never `sympify`)."),
        ("code", "chain = proofs_check.parse_chain({'name': 'mine', 'assume': ['epsM >= 0'],\n"
                 "    'premises': ['Rnew <= RSnew + epsM', 'RSnew <= Rold + epsM'], 'conclusion': 'Rnew <= Rold + 2*epsM'}, 'mine')\n"
                 "out = proofs_check.check_chain(chain)\nprint(out.entailed, out.engines)"),
        ("md", "## A vacuous chain is not a certificate\nContradictory premises would prove anything: the checker says "
               "`vacuous` (exit code 1 on the command line) and names a minimal inconsistent subset."),
        ("code", "vac = proofs_check.check_chain(proofs_check.parse_chain({'assume': ['dR >= 0'],\n"
                 "    'premises': ['Lnew <= Lold - dR/2', 'dR = -1/10'], 'conclusion': 'Lnew <= Lold'}))\n"
                 "print(vac.status, vac.entailed, vac.inconsistent_premises)\nprint(vac.reason)\nassert vac.vacuous"),
        ("md", "## The domain as written\nsympy would simplify `sqrt(v)^2` to `v`; the parser keeps `v >= 0`, so the "
               "conclusion is not entailed without it, and the countermodel is exact."),
        ("code", "d = proofs_check.check_chain(proofs_check.parse_chain({'premises': [], 'conclusion': 'sqrt(v)^2 <= v'}))\n"
                 "print(d.status, d.to_dict()['countermodel_exact'])"),
        ("md", "## exp and log\nMonotonicity, `exp(log y) = y`, the tangent bounds and log of quotients are instantiated "
               "for the chain's terms: a Hoeffding-style sample-size step is entailed."),
        ("code", "el = proofs_check.check_chain(proofs_check.parse_chain({'assume': ['0 < delta', 'delta < 1'],\n"
                 "    'premises': ['X >= log(2/delta)'], 'conclusion': '2*exp(-X) <= delta'}))\nprint(el.status, el.engines)\n"
                 "assert el.entailed"),
        ("md", "## UNKNOWN, never a fake countermodel\n`exp(x) >= 1 + x + x^2/2` holds for `x >= 0`, but it is beyond the "
               "lemmas; z3's models of the abstraction are not real, so the answer is `unknown` (`entailed` is `None`)."),
        ("code", "unk = proofs_check.check_chain(proofs_check.parse_chain({'assume': ['x >= 0'], 'premises': [],\n"
                 "    'conclusion': 'exp(x) >= 1 + x + x^2/2'}), timeout_s=2)\nprint(unk.status, unk.entailed)\n"
                 "print(unk.reason[:160])\nassert unk.entailed is None"),
    ],
    "03_numerics.ipynb": [
        ("md", "# Theory meets training (light sizes)\nInsert a zero-output block into a trained post-norm "
               "residual network, measure every quantity of Theorems 1–3, evaluate both routes through `bounds/`. "
               "`depthcert demo` runs the full-size version (it certifies); here the sizes are tiny, so expect "
               "the routes to miss, and the report to say by how much."),
        ("code", "import torch\nfrom numerics import PostNormResMLP, insert_block\n"
                 "net = PostNormResMLP(3, 8, 2, 4, seed=0)\nx = torch.randn(64, 3, dtype=torch.float64)\n"
                 "expanded = insert_block(net, at=1, family='readout', width=16, seed=1)\n"
                 "print('function-preserving at theta = 0:', torch.equal(net(x), expanded(x)))"),
        ("code", "from numerics.experiment import run_experiment, format_table\n"
                 "TINY = {'sizes': {'M': 3000, 'K': 3000, 'population': 3000}, 'reference': {'n': 500, 'steps': 15},\n"
                 "        'block_training': {'steps': 60, 'batch_size': 512}}\n"
                 "res = run_experiment(TINY, 'run_tiny')\nprint(format_table(res))"),
        ("code", "from IPython.display import Image\nImage(filename='run_tiny/bound_vs_observed.png')"),
        ("md", "## A depth sweep (resumable; each point saved atomically)\nThe first-order signal `||G||` and the "
               "measured gain `Delta_R` of one insertion, against the reference depth."),
        ("code", "from numerics.sweeps import run_sweep, load_points\nfrom numerics.plots import plot_sweep\n"
                 "pts = run_sweep(TINY, {'model.depth': [1, 2, 3]}, 'sweep_depth', progress=False)\n"
                 "pts = load_points('sweep_depth')\n"
                 "Image(filename=str(plot_sweep(pts, 'model.depth', ['quantities.G_norm', 'quantities.delta_R'], 'sweep.png')))"),
        ("md", "Appendix M fits `s(D) ≈ c D^-alpha` from such measurements; with three tiny points the "
               "confidence interval is (rightly) wide."),
        ("code", "from bounds.appendix_m import fit_power_law\n"
                 "D = [p['params']['model.depth'] for p in pts]\nG = [p['result']['quantities']['G_norm'] for p in pts]\n"
                 "fit = fit_power_law(D, G, 0.95)\nprint(f'alpha_hat = {fit.exponent:.3f}, 95% CI {fit.exponent_ci}')"),
    ],
}


def build() -> None:
    for name, cells in NOTEBOOKS.items():
        nb = nbf.v4.new_notebook()
        nb.cells = [nbf.v4.new_markdown_cell(src) if kind == "md" else nbf.v4.new_code_cell(src) for kind, src in cells]
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nbf.write(nb, HERE / name)


if __name__ == "__main__":
    build()
