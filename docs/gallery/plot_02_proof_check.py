"""
A machine-checked proof chain
=============================

Every theorem of :mod:`bounds` is a symbolic object: premises (each a relation with the
failure event it holds on), side conditions, a conclusion and a failure probability.
:mod:`proofs_check` checks that the conclusion *follows* from the premises, two independent
ways: an exact Farkas certificate (a rational LP whose multipliers are re-verified in exact
arithmetic) and a z3 proof that premises and not(conclusion) have no real solution. It also
checks that every premise is needed and that the failure probability is the union bound of
the premises' events.

A checker is only worth something if it can say no. This example checks Theorem 2 (the
population route), then shows two wrong variants rejected, each with a countermodel: the
same chain with a **premise dropped**, and with a **constant halved** (``2 eps_M`` replaced
by ``eps_M``, from the catalogue :data:`proofs_check.MUTANTS`). ``depthcert prove`` runs all of
this for every built-in statement and mutant (``depthcert prove --chain FILE.toml`` for a
chain of your own).
"""

# %%
# The statement
# -------------
# Theorem 2 as :mod:`bounds` holds it: each premise with its failure event (``None``: an
# identity or a definition, true surely).
import matplotlib.pyplot as plt
import numpy as np
import sympy as sp

import proofs_check
from bounds import THEOREM_2, evaluate

print(THEOREM_2.description)
for p in THEOREM_2.premises:
    print(f"  {p.name:<20} {str(p.relation):<40} event: {p.event}")
print("conclusion:", THEOREM_2.conclusion)
print("failure probability:", THEOREM_2.failure_probability)

# %%
# Checking it
# -----------
# :func:`proofs_check.verify` returns one :class:`~proofs_check.Check` per line of the
# report. ``FINDING`` lines are reported without failing the theorem. Here they say that the
# Hoeffding tails on ``T`` pay no cap grid although ``f_new`` depends on the cap, so the
# theorem is valid only when the cap is chosen before ``T`` is drawn -- as in the demo, whose cap
# is fixed before any data.
result = proofs_check.verify(THEOREM_2)
print("verified:", result.ok, result.engines)
for c in result.checks:
    print(f"  {c.status:<8} {c.name:<28} {c.detail[:70]}")
print("Farkas multipliers (conclusion = sum of multiplier x premise):",
      result.check("entailment/farkas").certificate)

# %%
# All six multipliers are 1: the conclusion is the sum of the six premises, and each
# ``necessity/<premise>`` line says z3 found a countermodel once that premise is left out.
#
# A premise dropped
# -----------------
# Without ``hoeffding_old`` (the Hoeffding step from ``R(f_old)`` to ``L_test(f_old)`` on the
# test sample) the chain no longer reaches ``L_test_old``. The checker must say so and give
# numbers where every remaining premise holds and the conclusion fails.
dropped = THEOREM_2.without("hoeffding_old")
res_dropped = proofs_check.verify(dropped, necessity=False)
z3_dropped = res_dropped.check("entailment/z3")
print("verified:", res_dropped.ok, "|", z3_dropped.status, "-", z3_dropped.detail)
print("Farkas:", res_dropped.check("entailment/farkas").status)
print("countermodel:", z3_dropped.to_dict()["countermodel"])

# %%
# A constant halved
# -----------------
# The catalogue of wrong variants is built by transforming the theorem objects (never
# re-typed); ``t2_single_eps_M`` halves the uniform-deviation cost.
mutant = next(m for m in proofs_check.MUTANTS if m.name == "t2_single_eps_M")
halved = mutant.build()
print(mutant.description, "->", halved.conclusion)
res_halved = proofs_check.verify(halved, necessity=False)
z3_halved = res_halved.check(mutant.target)
print("verified:", res_halved.ok, "|", z3_halved.status, "-", z3_halved.detail)
print("countermodel:", z3_halved.to_dict()["countermodel"])


# %%
# The countermodels, checked by evaluation
# ----------------------------------------
# Each countermodel is a point (exact rationals) where every premise holds and the conclusion
# does not. The figure evaluates both sides of each relation at that point with
# :func:`bounds.evaluate` (circle: the side that must be smaller, bar: the side that must be
# larger), so the rejection can be read off without trusting the checker.
def sides(relation, point):
    """``(small, large)``: the sides of ``relation`` at ``point`` that must satisfy ``small <= large``."""
    small, large = (relation.rhs, relation.lhs) if isinstance(relation, sp.GreaterThan) else (relation.lhs, relation.rhs)
    return float(evaluate(small, point)), float(evaluate(large, point))


fig, axes = plt.subplots(1, 2, figsize=(11, 4.4))
for ax, theorem, check, title in ((axes[0], dropped, z3_dropped, "premise hoeffding_old dropped"),
                                  (axes[1], halved, z3_halved, "2 eps_M halved to eps_M")):
    point = check.to_dict()["countermodel"]
    relations = [p.relation for p in theorem.premises] + [theorem.conclusion]
    labels = [p.name for p in theorem.premises] + ["CONCLUSION"]
    for i, (rel, label) in enumerate(zip(relations, labels)):
        small, large = sides(rel, point)
        equal = isinstance(rel, sp.Equality)
        holds = np.isclose(small, large) if equal else small <= large
        colour = "tab:green" if holds else "tab:red"
        ax.plot([small, large], [i, i], color=colour, lw=2)
        ax.plot(small, i, "o", color=colour)
        ax.plot(large, i, "|", color=colour, ms=14, mew=2)
        ax.annotate(("holds" + (" (=)" if equal else "")) if holds else "FAILS", (1.02, i),
                    xycoords=("axes fraction", "data"), va="center", fontsize=8, color=colour)
        labels[i] = f"{label}\n{rel}"
    ax.set_yticks(range(len(labels)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set(xlabel="value at the z3 countermodel", title=title)
fig.suptitle("Rejected variants of Theorem 2: every premise holds, the conclusion fails")
fig.tight_layout()

# %%
# The whole catalogue
# -------------------
# Every mutant must be rejected *by its target check* with a countermodel: an entailment
# mutant by z3, a probability-bookkeeping mutant by the ledger (a wrong union bound, a
# Hoeffding tail not re-derivable from its deviation, a tail on the wrong sample).
mutants = proofs_check.verify_mutants()
targets = {}
for m in mutants:
    kind = m.target.split("/")[0] + ("/" + m.target.split("/")[1] if m.target.startswith("ledger") else "")
    targets.setdefault(kind, []).append(m.rejected)
print(f"{sum(m.rejected for m in mutants)} of {len(mutants)} mutants rejected")
for kind, flags in sorted(targets.items()):
    print(f"  {kind:<24} {sum(flags)}/{len(flags)}")

# %%
# A rejected mutant is the checker's test of power: a checker that accepted everything would
# also "verify" the real theorems. What the proof check does *not* do is say whether the
# premises hold for a trained network at a given probability -- that is the job of the
# measurements (the demo example) and, over many draws, of ``depthcert validity``.
