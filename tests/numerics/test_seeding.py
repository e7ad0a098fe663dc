"""Random streams by role: two roles never share a stream; the old ``seed + k`` scheme fails."""
import numpy as np
import pytest
import torch
from hypothesis import given, strategies as st

from numerics.seeding import ROLES, Streams, check_streams, derived_seed, noise_seed, role_seed


def old_scheme_seeds(seed: int, insertion_seed: int = 2) -> dict:
    """The seeds the run study used before role streams (numerics/experiment.py at bb629e4)."""
    return {"teacher": seed, "reference_init": seed + 10, "reference_sample": seed + 11,
            "reference_training": seed + 10, "insertion": insertion_seed, "S": seed + 2, "T": seed + 3,
            "population": seed + 4, "signal": seed + 5, "probe": seed + 6, "block_training": seed}


@pytest.mark.parametrize("seed", [0, 4, 17])
def test_old_scheme_is_rejected(seed):
    with pytest.raises(ValueError, match="share the seed"):
        check_streams(old_scheme_seeds(seed))


def test_old_scheme_regression_insertion_features_were_a_copy_of_S():
    # seed = 0, insertion.seed = 2: the block's frozen U0 and S's inputs came from one stream
    used = old_scheme_seeds(0, 2)
    assert used["insertion"] == used["S"]
    with pytest.raises(ValueError, match=r"\['S', 'insertion'\]"):
        check_streams({k: used[k] for k in ("S", "insertion")})


def test_even_distinct_offsets_are_not_derived_streams():
    # offsets that happen not to collide still fail the derivation check
    st_ = Streams(4, 9)
    used = st_.used()
    used["T"] = used["S"] + 1
    check_streams({k: v for k, v in used.items() if k in ("S", "T")})   # no collision ...
    with pytest.raises(ValueError, match="stream 'T' used the seed"):
        check_streams(used, st_)                                         # ... but not derived for T


@given(st.integers(0, 2**40), st.integers(0, 2**40))
def test_derived_streams_pass_and_never_collide(seed, data_seed):
    st_ = Streams(seed, data_seed)
    used = st_.used()
    check_streams(used, st_)
    assert len(set(used.values())) == len(used)
    assert len({v & 0xFFFFFFFF for v in used.values()}) == len(used)   # torch seeds its CPU generator from 32 bits
    assert set(used) >= set(ROLES)


def test_seeds_equal_in_their_low_32_bits_share_a_torch_stream():
    """Why check_streams compares the low 32 bits: torch's CPU generator reads only those."""
    import torch

    a, b = 12345, 12345 + (7 << 32)
    draw = lambda seed: torch.rand(4, generator=torch.Generator().manual_seed(seed))  # noqa: E731
    assert torch.equal(draw(a), draw(b))
    with pytest.raises(ValueError, match=r"seeds \[12345, 30064783417\] equal in their low 32 bits"):
        check_streams({"S": a, "T": b})
    with pytest.raises(ValueError, match=r"share the seed 1099511627776:"):       # equal seeds: named as they are
        check_streams({"S": 2**40, "T": 2**40})


def test_seed_and_data_seed_split():
    a, b = Streams(3, 10), Streams(3, 11)
    for role in a.fixed_before_data():
        assert a.seed_for(role) == b.seed_for(role)
    for role in a.drawn_with_data():
        assert a.seed_for(role) != b.seed_for(role)
    assert set(a.fixed_before_data()) | set(a.drawn_with_data()) == set(ROLES)
    assert {"teacher", "reference_init", "insertion", "signal"} <= set(a.fixed_before_data())
    assert {"S", "T", "population", "block_training", "probe"} <= set(a.drawn_with_data())


def test_override_feeds_a_role_through_its_own_derivation():
    st_ = Streams(3, 10, overrides=(("insertion", 2),))
    assert st_.seed_for("insertion") == role_seed("insertion", 2) != 2
    assert st_.seed_for("insertion") != Streams(3, 10).seed_for("insertion")


def test_streams_are_statistically_unrelated():
    # first draws of two role streams of the same base seed: correlation within 4 standard errors of 0
    st_ = Streams(0, 0)
    a = torch.randn(20_000, generator=st_.torch("S"), dtype=torch.float64).numpy()
    b = torch.randn(20_000, generator=st_.torch("insertion"), dtype=torch.float64).numpy()
    assert abs(np.corrcoef(a, b)[0, 1]) < 4 / np.sqrt(20_000)


def test_derived_seed_validation_and_noise_substream():
    assert derived_seed(5, "validity/data", 3) != derived_seed(5, "validity/seed", 3)
    assert noise_seed(123) != 123 and noise_seed(123) == noise_seed(123)
    with pytest.raises(ValueError, match="index == -1"):
        derived_seed(5, "x", -1)
    with pytest.raises(ValueError, match="base_seed == -3"):
        role_seed("S", -3)
    with pytest.raises(ValueError, match="role == 'nope'"):
        Streams(1, 2).seed_for("nope")
