"""A toy residual block family, as a contributor would add one: this one module (+ one ``register_family`` call).

``scaled_readout``: ``h_V(u) = V (SCALE relu(U0 u + b0))``, ``U0, b0`` frozen, ``||V||_F <= nu_V``. Its
mathematics is the readout's in its own ``rho_phi`` (the class is the readout's class, reparametrised),
its features are the readout's times ``SCALE``, and it claims no empirical Rademacher term. The test
(:mod:`tests.test_toy_family`) registers it with one :func:`bounds.families.register_family` call and
follows it through ``insert_block``, ``grow``, ``certify_insertion`` and ``run``.
"""
from __future__ import annotations

import dataclasses

from bounds.families import READOUT, ResidualFamily
from numerics.residual_families import READOUT_TORCH, relu_features, relu_rho_phi
from numerics.studies.run._family import RunFamily, frozen_caps, select_readout

SCALE = 2.0


def features(block, flat):
    """``SCALE relu(U0 u + b0)``."""
    return SCALE * relu_features(block, flat)


def rho_phi(block, rho: float) -> float:
    """``SCALE (||U0||_2 rho + ||b0||)``."""
    return SCALE * relu_rho_phi(block, rho)


def certificate_block(q, c) -> dict:
    """The API's block ``V phi`` (``phi`` the readout features of the tangent space) is ``(V / SCALE)(SCALE phi)``."""
    return {"d": q["d"], "L_top": c["L_top"], "rho_phi": SCALE * q["rho_phi"], "nu_V": q["nu_V"] / SCALE}


SCALED_READOUT = ResidualFamily(
    "scaled_readout", READOUT.parameters, output_formula=READOUT.output_formula,
    rad_vec_formula=READOUT.rad_vec_formula, empirical_rademacher=False, trains_features=False,
    description=f"h_V(u) = V ({SCALE:g} relu(U0 u + b0)), U0, b0 frozen, ||V||_F <= nu_V", tangent="readout",
    torch=dataclasses.replace(READOUT_TORCH, features=features, rho_phi=rho_phi, certificate_block=certificate_block),
    run=RunFamily(None, frozen_caps, select_readout, lambda fixed, group, sel, b, ev: ev, lambda fixed, sel, b: {},
                  "population_tight_bernstein"))
