"""Long chains (issue 7): necessity is incremental (one z3 solver, premises as assumption
literals); the light variant of ``benchmarks/bench_proofs.py`` runs by default."""
from proofs_check import check_chain, parse_chain


def link_chain(n: int, conclusion_slack: int = 0):
    """``x0 <= x1 + 1, ..., x{n-1} <= x{n} + 1`` entail ``x0 <= x{n} + n`` (every link needed)."""
    return parse_chain({"name": f"chain{n}", "premises": [f"x{i} <= x{i + 1} + 1" for i in range(n)],
                        "conclusion": f"x0 <= x{n} + {n - conclusion_slack}"})


def test_hundred_link_chain_entailed_and_every_link_needed():
    r = check_chain(link_chain(100))
    assert r.entailed is True and r.vacuous is False
    needed = [c for c in r.checks if c.name.startswith("necessity/")]
    assert len(needed) == 100 and all(c.status == "PASS" and c.countermodel for c in needed)
    # the countermodel of a dropped link really breaks the chain at that link only
    c = needed[37].countermodel
    assert c["x37"] > c["x38"] + 1 and c["x0"] > c["x100"] + 100


def test_hundred_link_chain_off_by_one_is_rejected():
    r = check_chain(link_chain(100, conclusion_slack=1))
    assert r.entailed is False and r.countermodel is not None
    cm = r.countermodel
    assert all(cm[f"x{i}"] <= cm[f"x{i + 1}"] + 1 for i in range(100)) and cm["x0"] > cm["x100"] + 99
