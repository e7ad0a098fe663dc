"""Cells of notebooks/02_proofs.ipynb (built by notebooks/_build.py; notebooks only call the library)."""

CELLS = [
    ('md', '# Proof chains, machine-checked\nEach theorem object of `bounds/` is checked by `proofs_check`: an exact Farkas certificate, a z3 proof, necessity of every premise, the probability ledger.'),
    ('code', "import proofs_check\nfrom bounds import THEOREM_2\nres = proofs_check.verify(THEOREM_2)\nprint(res.ok)\nfor c in res.to_dict()['checks'][:6]:\n    print(c['status'], c['name'], '-', c['detail'][:80])"),
    ('md', '## A mutant must be rejected\nThe margin `Delta_R` instead of `Delta_R/2` does not follow.'),
    ('code', 'from bounds import _symbols as s\nimport sympy as sp\nwrong = THEOREM_2.replace(conclusion=sp.Le(s.L_test_new, s.L_test_old - s.delta_R - s.delta_erm + 2 * s.eps_M))\nbad = proofs_check.verify(wrong, necessity=False)\nprint(bad.ok)\nassert not bad.ok'),
    ('md', '## Your own chain\nFormulas are parsed by a restricted grammar (never `sympify`).'),
    ('code', "chain = proofs_check.parse_chain({'name': 'mine', 'assume': ['epsM >= 0'],\n    'premises': ['Rnew <= RSnew + epsM', 'RSnew <= Rold + epsM'], 'conclusion': 'Rnew <= Rold + 2*epsM'}, 'mine')\nout = proofs_check.check_chain(chain)\nprint(out.entailed, out.engines)"),
    ('md', '## A vacuous chain is not a certificate\nContradictory premises would prove anything: the checker says `vacuous` (exit code 1 on the command line) and names a minimal inconsistent subset.'),
    ('code', "vac = proofs_check.check_chain(proofs_check.parse_chain({'assume': ['dR >= 0'],\n    'premises': ['Lnew <= Lold - dR/2', 'dR = -1/10'], 'conclusion': 'Lnew <= Lold'}))\nprint(vac.status, vac.entailed, vac.inconsistent_premises)\nprint(vac.reason)\nassert vac.vacuous"),
    ('md', '## The domain as written\nsympy would simplify `sqrt(v)^2` to `v`; the parser keeps `v >= 0`, so the conclusion is not entailed without it, and the countermodel is exact.'),
    ('code', "d = proofs_check.check_chain(proofs_check.parse_chain({'premises': [], 'conclusion': 'sqrt(v)^2 <= v'}))\nprint(d.status, d.to_dict()['countermodel_exact'])"),
    ('md', "## exp and log\nMonotonicity, `exp(log y) = y`, the tangent bounds and log of quotients are instantiated for the chain's terms: a Hoeffding-style sample-size step is entailed."),
    ('code', "el = proofs_check.check_chain(proofs_check.parse_chain({'assume': ['0 < delta', 'delta < 1'],\n    'premises': ['X >= log(2/delta)'], 'conclusion': '2*exp(-X) <= delta'}))\nprint(el.status, el.engines)\nassert el.entailed"),
    ('md', "## UNKNOWN, never a fake countermodel\n`exp(x) >= 1 + x + x^2/2` holds for `x >= 0`, but it is beyond the lemmas; z3's models of the abstraction are not real, so the answer is `unknown` (`entailed` is `None`)."),
    ('code', "unk = proofs_check.check_chain(proofs_check.parse_chain({'assume': ['x >= 0'], 'premises': [],\n    'conclusion': 'exp(x) >= 1 + x + x^2/2'}), timeout_s=2)\nprint(unk.status, unk.entailed)\nprint(unk.reason[:160])\nassert unk.entailed is None"),
]
