"""numerics: torch measurements of the quantities in THEORY.md.

* :mod:`numerics.models` -- post-normalised residual networks (THEORY §1).
* :mod:`numerics.insertion` -- zero-output block insertion (THEORY §1).
* :mod:`numerics.estimators` -- ``m``, ``G``, ``beta``, Lipschitz constants,
  Rademacher complexities, saturation scores (THEORY §1-§4, §8).
* :mod:`numerics.data` -- teacher tasks with exact conditionals, digits, CIFAR, splits.
* :mod:`numerics.empirical` -- a labelled dataset (digits) as its empirical distribution.
* :mod:`numerics.training` -- zero-state SGD / momentum / Adam, caps, the (C2) fallback.
* :mod:`numerics.seeding` -- one independent random stream per role.
* :mod:`numerics.builders` -- the ``[task]``/``[model]``/``[reference]`` config sections.
* :mod:`numerics.studies` -- the studies (run, sweeps, growth, ...), each one module above
  the primitives; their entry points are re-exported here lazily.
* :mod:`numerics.sites`, :mod:`numerics.families` -- insertion sites on any ``nn.Module``
  (one backward for every site) and the residual families of Paper B's protocol (THEORY §8).
* :mod:`numerics.zoo`, :mod:`numerics.interop.hf`, :mod:`numerics.corpus`, :mod:`numerics.workloads`
  -- a GPT-2-style model, a GroupNorm ResNet, local Hugging Face models, the stdlib
  character corpus, and data + model + training for the saturation and growth studies.
"""
from numerics.data import (
    TeacherClassification,
    TeacherRegression,
    conditional_risk,
    load_cifar,
    load_digits_split,
    population_risk,
    population_risk_difference,
    split,
)
from numerics.estimators import (
    BetaEstimate,
    SaturationTest,
    activation_gradients,
    ag_max,
    ag_max_per_candidate,
    c1_test,
    cap_for,
    cap_grid,
    covariance_diagnostics,
    cross_gradient,
    cross_gradient_score,
    delta_erm,
    delta_r,
    delta_r_lower_bound,
    delta_test_r,
    eps_n_closed_form,
    eps_n_readout_mc,
    first_order_scan,
    jumpboard,
    lipschitz_top_certified,
    lipschitz_top_empirical,
    loss_constants,
    mean_loss,
    norm_diagnostics,
    projection_score,
    rademacher_readout_jensen,
    rademacher_readout_mc,
    realisability_ratio,
    rho_phi,
    saturation_test,
    smoothness_beta,
    smoothness_beta_report,
    u_statistic_sq_norm,
)
from numerics.diagnostics import probe_diagnostics
from numerics.empirical import EmpiricalClassification
from numerics.insertion import ExpandedModel, insert_block, post_norm_function_preserving, post_norm_report
from numerics.models import PostNormResCNN, PostNormResMLP
from numerics.training import DivergenceError, TrainResult, empirical_risk, train, train_block_with_fallback

__all__ = [
    "BetaEstimate",
    "DEFAULT_DEMO_CONFIG",
    "DivergenceError",
    "EmpiricalClassification",
    "ExpandedModel",
    "PostNormResCNN",
    "PostNormResMLP",
    "SaturationTest",
    "TeacherClassification",
    "TeacherRegression",
    "TrainResult",
    "activation_gradients",
    "ag_max",
    "ag_max_per_candidate",
    "c1_test",
    "cap_for",
    "cap_grid",
    "conditional_risk",
    "covariance_diagnostics",
    "cross_gradient",
    "cross_gradient_score",
    "delta_erm",
    "delta_r",
    "delta_r_lower_bound",
    "delta_test_r",
    "empirical_risk",
    "eps_n_closed_form",
    "eps_n_readout_mc",
    "first_order_scan",
    "format_table",
    "growth_vs_scratch",
    "insert_block",
    "jumpboard",
    "lipschitz_top_certified",
    "lipschitz_top_empirical",
    "load_cifar",
    "load_digits_split",
    "load_points",
    "loss_constants",
    "mean_loss",
    "norm_diagnostics",
    "population_risk",
    "population_risk_difference",
    "post_norm_function_preserving",
    "post_norm_report",
    "probe_diagnostics",
    "projection_score",
    "rademacher_readout_jensen",
    "rademacher_readout_mc",
    "realisability_ratio",
    "rho_phi",
    "run_experiment",
    "run_sweep",
    "run_validity",
    "saturation_scan",
    "grow",
    "saturation_test",
    "smoothness_beta",
    "smoothness_beta_report",
    "split",
    "train",
    "train_block_with_fallback",
    "u_statistic_sq_norm",
    "validate_config",
    "write_outputs",
]

#: Study entry points, imported on first use so that the primitives never import a study.
_LAZY = {
    "DEFAULT_DEMO_CONFIG": "numerics.studies.run", "format_table": "numerics.studies.run",
    "run_experiment": "numerics.studies.run", "validate_config": "numerics.studies.run",
    "write_outputs": "numerics.studies.run", "growth_vs_scratch": "numerics.studies.growth",
    "load_points": "numerics.studies.sweeps", "run_sweep": "numerics.studies.sweeps",
    "run_validity": "numerics.studies.validity",
    "saturation_scan": "numerics.studies.saturation", "grow": "numerics.studies.growth",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        attr = {"saturation_scan": "run"}.get(name, name)
        return getattr(importlib.import_module(_LAZY[name]), attr)
    raise AttributeError(f"module 'numerics' has no attribute {name!r}")


def __dir__():
    # the lazily imported names are listed too (tab completion, documentation tools)
    return sorted(set(globals()) | set(_LAZY))
