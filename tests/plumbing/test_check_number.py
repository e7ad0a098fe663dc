"""``plumbing.validation.check_number``: any finite real number above 0 (numpy scalars too), one error line otherwise."""
import math
import re
from fractions import Fraction

import numpy as np
import pytest
import torch

from plumbing.validation import check_number


@pytest.mark.parametrize("value", [1, 0.5, np.float32(0.25), np.float64(2.0), np.int64(3), Fraction(1, 4)])
def test_a_positive_real_number_is_accepted_as_a_float(value):
    got = check_number("floor", value)
    assert isinstance(got, float) and got == float(value)


@pytest.mark.parametrize("value", [0, -1.0, math.nan, math.inf, np.float32("nan"), True, np.bool_(True), "1e-8", None,
                                   torch.tensor(1.0)])
def test_anything_else_is_refused_naming_the_argument(value):
    with pytest.raises(ValueError, match=re.escape(f"floor == {value!r}, must be a finite number > 0.")):
        check_number("floor", value)


def test_zero_is_allowed_only_when_asked():
    assert check_number("eps", 0, allow_zero=True) == 0.0
    with pytest.raises(ValueError, match="must be a finite number >= 0"):
        check_number("eps", -1e-9, allow_zero=True)
