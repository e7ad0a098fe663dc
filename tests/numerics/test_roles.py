"""One vocabulary of data roles (THEORY §10, issue 15): numerics.roles, used by seeding, Workload, the API."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch

from numerics.roles import DATA_ROLES, WORKLOAD_ROLES
from numerics.seeding import ROLES
from numerics.workloads import Workload
from plumbing.validation import InputError

ROOT = Path(__file__).resolve().parents[2]


def test_every_data_role_has_its_stream_and_the_workload_fields_map_to_roles():
    assert set(DATA_ROLES) <= set(ROLES)
    assert {"signal", "S", "T", "probe", "monte_carlo", "population", "reference_sample", "scan_probe"} == set(DATA_ROLES)
    assert set(WORKLOAD_ROLES.values()) <= set(DATA_ROLES)
    assert ROLES["signal"] == ROLES["reference_sample"] == "seed" and ROLES["S"] == ROLES["T"] == "data_seed"


def test_workload_samples_by_role_beside_its_fields():
    xs = {k: (torch.full((2, 1), float(i)), torch.zeros(2)) for i, k in enumerate(("train", "test", "probe", "population"))}
    w = Workload("regression", "squared", xs["train"], xs["test"], xs["probe"], xs["population"], 1, (1,))
    assert w.sample("T") is w.test and w.sample("reference_sample") is w.train and w.sample("population") is w.population
    assert list(w.roles) == ["reference_sample", "T", "probe", "population"]
    with pytest.raises(InputError, match="role == 'S'"):
        w.sample("S")             # a workload has no block-training sample of its own


def _literals_in(source: str) -> list[str]:
    """The literal roles passed to ``seed_for(...)`` / ``seed_of(streams, ...)`` in ``source``."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "attr", getattr(node.func, "id", None))
            args = node.args[:1] if name == "seed_for" else node.args[1:2] if name == "seed_of" else []
            out += [a.value for a in args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    return out


def _unnamed_roles(sources: dict[str, str]) -> list[tuple[str, str]]:
    return [(p, r) for p, src in sources.items() for r in _literals_in(src) if r not in ROLES]


def test_every_role_a_study_draws_from_is_a_named_role():
    sources = {str(p.relative_to(ROOT)): p.read_text() for pkg in ("numerics", "depthcert")
               for p in (ROOT / pkg).rglob("*.py")}
    assert sum(len(_literals_in(s)) for s in sources.values()) > 20     # the scan sees the studies' draws
    assert _unnamed_roles(sources) == []


def test_the_scan_reports_a_misspelt_role():
    src = 'a = streams.seed_for("S")\nb = seed_of(streams, "signals")\nc = st.seed_for(role)'
    assert _unnamed_roles({"x.py": src}) == [("x.py", "signals")]


def test_the_api_refuses_a_sample_without_a_role():
    from depthcert.api._data import as_stream
    from depthcert.api._roles import CERTIFICATE_ROLES, check_disjoint

    m = torch.nn.Linear(1, 1)
    a = as_stream((torch.arange(4.)[:, None], torch.zeros(4)), "S", m)
    assert set(CERTIFICATE_ROLES) <= set(DATA_ROLES)
    with pytest.raises(ValueError, match="role == 'train'"):
        check_disjoint({"S": a, "train": a})
