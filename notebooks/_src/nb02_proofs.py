"""Cells of notebooks/02_proofs.ipynb (built by notebooks/_build.py; notebooks only call the library)."""

CELLS = [
    ('md', '# Proof chains, machine-checked\nEach theorem object of `bounds/` is checked by `proofs_check`: an exact Farkas certificate, a z3 proof, necessity of every premise, the probability ledger.'),
    ('code', "import proofs_check\nfrom bounds import THEOREM_2, THEOREM_3\nres = proofs_check.verify(THEOREM_2)\nprint(res.ok)\nfor c in res.to_dict()['checks'][:6]:\n    print(c['status'], c['name'], '-', c['detail'][:80])"),
    ('md', '## A mutant must be rejected\nThe margin `Delta_R` instead of `Delta_R/2` does not follow.'),
    ('code', 'from bounds import _symbols as s\nimport sympy as sp\nwrong = THEOREM_2.replace(conclusion=sp.Le(s.L_test_new, s.L_test_old - s.delta_R - s.delta_erm + 2 * s.eps_M))\nbad = proofs_check.verify(wrong, necessity=False)\nprint(bad.ok)\nassert not bad.ok'),
    ('md', '## Your own chain\nFormulas are parsed by a restricted grammar (never `sympify`).'),
    ('code', "chain = proofs_check.parse_chain({'name': 'mine', 'assume': ['epsM >= 0'],\n    'premises': ['Rnew <= RSnew + epsM', 'RSnew <= Rold + epsM'], 'conclusion': 'Rnew <= Rold + 2*epsM'}, 'mine')\nout = proofs_check.check_chain(chain)\nprint(out.entailed, out.engines)"),
]
