"""``setup_to_toml`` beside ``setup_from_dict``: a setup written and read back is the same setup."""
from __future__ import annotations

import dataclasses
import tomllib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bounds.routes import Setup
from bounds.setup_io import setup_to_dict
from depthcert.config import setup_from_dict, setup_to_toml

_pos = st.floats(1e-6, 1e6, allow_nan=False)
_unit = st.floats(1e-6, 0.999, allow_nan=False)


@st.composite
def setups(draw):
    family = draw(st.sampled_from(["readout", "full"]))
    block = {"d": draw(st.integers(1, 64)), "L_top": draw(_pos), "nu_V": draw(_pos)}
    block.update({"rho_phi": draw(_pos)} if family == "readout" else {"rho": draw(_pos), "nu_U": draw(_pos)})
    optional = draw(st.fixed_dictionaries({}, optional={
        "delta_erm_S": _pos, "n_grid": st.integers(2, 50), "delta_R_failure": _unit, "R_old": _pos,
        "eps_M": _pos, "eps_K": _pos}))
    return Setup(L_test_old=draw(_pos), delta_R=draw(st.floats(-1, 1)), delta_erm=draw(_pos),
                 delta_test_R=draw(st.floats(-1, 1)), M=draw(st.integers(1, 10**9)), K=draw(st.integers(1, 10**9)),
                 delta=draw(_unit), delta_prime=draw(_unit), B=draw(_pos), L_loss=draw(_pos), family=family,
                 block=block, **optional)


def _same(a: Setup, b: Setup) -> bool:
    return all(np.all(getattr(a, f.name) == getattr(b, f.name)) for f in dataclasses.fields(Setup))


@settings(max_examples=60, deadline=None)
@given(setups(), st.one_of(st.none(), _unit))
def test_round_trip(setup, level):
    back, back_level = setup_from_dict(tomllib.loads(setup_to_toml(setup, level)))
    assert _same(back, setup) and back_level == level


def test_the_comparison_sees_a_changed_value_and_a_batch_is_refused():
    s = Setup(L_test_old=0.6, delta_R=0.1, delta_erm=0.0, delta_test_R=0.1, M=100, K=100, delta=0.05,
              delta_prime=0.05, B=1.0, L_loss=1.0, block={"d": 2, "L_top": 1.0, "rho_phi": 1.0, "nu_V": 0.5})
    assert not _same(setup_from_dict(tomllib.loads(setup_to_toml(dataclasses.replace(s, M=101))))[0], s)
    with pytest.raises(ValueError, match="one setup"):
        setup_to_dict(dataclasses.replace(s, M=np.array([100, 200])))
