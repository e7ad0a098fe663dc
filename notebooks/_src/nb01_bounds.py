"""Cells of notebooks/01_bounds.ipynb (built by notebooks/_build.py; notebooks only call the library)."""

CELLS = [
    ('md', "# Bounds: evaluate, certify, solve\nTheorems 2 and 3 of this project's formalisation (`docs/THEORY.md` §5–§6), read from the theorem objects in `bounds/`."),
    ('code', 'import numpy as np\nfrom bounds import THEOREM_2, THEOREM_3\nfrom bounds.routes import Setup, evaluate_routes\nfrom bounds.regimes import degenerate_regime\nprint(THEOREM_2.conclusion)\nprint(THEOREM_2.failure_probability)\nprint(THEOREM_3.conclusion)'),
    ('md', 'The proof chain of Theorem 2, premise by premise, with its failure event:'),
    ('code', "for p in THEOREM_2.premises:\n    print(f'{p.name:20s} {str(p.relation):45s} event={p.event}')"),
    ('md', "## One setup\nThe README's example: neither route certifies, and the toolkit says by how much."),
    ('code', "setup = Setup(L_test_old=0.62, delta_R=0.09, delta_erm=0.004, delta_test_R=0.085, M=2e5, K=1e5,\n              delta=0.05, delta_prime=0.05, B=4.2, L_loss=2**0.5, family='readout',\n              block=dict(d=8, L_top=2.5, rho_phi=3.0, nu_V=0.4))\nrep = evaluate_routes(setup, level=0.1)\nprint(rep.population.to_dict()['message'])\nprint(rep.direct.to_dict()['message'])\nprint('smallest M for the population route:', float(rep.population.min_M))\nassert not rep.population.certified"),
    ('md', "## The degenerate regime\nAs `Delta_R -> 0` the population route's failure probability tends to `delta + 2`: vacuous. The direct route does not depend on `Delta_R`."),
    ('code', "reg = degenerate_regime(Setup(**{**setup.__dict__, 'M': 2e7}), 0.1)\nprint(reg.summary)"),
    ('code', "from depthcert.plots import plot_routes\nfrom IPython.display import Image\nImage(filename=str(plot_routes(setup, 0.1, 'routes.png')))"),
    ('md', '## A million setups at once\nEvery field may be an array; evaluation is lambdified.'),
    ('code', "rng = np.random.default_rng(0)\nn = 1_000_000\nmany = Setup(**{**setup.__dict__, 'M': rng.uniform(1e4, 1e8, n), 'delta_R': rng.uniform(0.01, 0.5, n)})\nbatch = evaluate_routes(many, 0.1, validate=False)\nprint(f'{batch.population.certified.mean():.1%} of random setups certified by the population route')"),
    ('md', "## Appendix M\nThe power-law conversion, with this project's Assumptions G and G'."),
    ('code', "from bounds import appendix_m as am\nprint('R(D) - R_inf between', am.excess_risk_bounds())\nprint('exponent:', am.excess_exponent())\nprint('D* =', am.optimal_depth(), ' ~ M^', am.growth_exponent(am.optimal_depth()))\nprint('deepest certified depth ~ M^', am.growth_exponent(am.deepest_certified_depth()))"),
]
