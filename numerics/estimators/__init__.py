"""Estimators of the quantities in THEORY.md, each citing its section.

* §1/§8 gradients: :func:`activation_gradients`, :func:`cross_gradient`,
  :func:`u_statistic_sq_norm`, :func:`first_order_scan`.
* §2-§3, §6 smoothness and margins: :func:`smoothness_beta`, :func:`smoothness_beta_report`,
  :func:`jumpboard`, :func:`mean_loss`, :func:`delta_r`, :func:`delta_r_lower_bound`,
  :func:`delta_erm`, :func:`delta_test_r`.
* §1-§2 constants: :func:`loss_constants`, :func:`lipschitz_top_certified`,
  :func:`lipschitz_top_empirical`.
* §4 complexity: :func:`rho_phi`, :func:`rademacher_readout_mc`, :func:`rademacher_readout_stream`,
  :func:`rademacher_readout_jensen`, :func:`eps_n_closed_form`, :func:`eps_n_readout_mc`,
  :func:`cap_grid`, :func:`cap_for`.
* §2 diagnostics: :func:`covariance_diagnostics`, :func:`norm_diagnostics`, :func:`c1_test`.
* §4 exact readout-at-top quantities: :class:`ReadoutMoments`, :class:`MomentAccumulator`,
  :func:`risk_from_moments`, :func:`sup_deviation`, :func:`trust_region_max`.
* §8 saturation: :func:`projection_score`, :func:`cross_gradient_score`, :func:`ag_max`,
  :func:`ag_max_per_candidate`, :func:`realisability_ratio`, :func:`saturation_test`.
* §8 on any network (:mod:`numerics.sites`): :func:`accumulate_site_stats` (one backward per
  batch for every site, streaming :class:`SiteAccumulator`), :func:`hoeffding_test`,
  :func:`adaptive_test` (testing by betting), :func:`site_projection_scores`,
  :func:`curvature_along`, :func:`site_loss` (:func:`site_losses`: every site at once), :func:`loss_change`.
"""
from numerics.estimators._diagnostics import covariance_diagnostics, norm_diagnostics
from numerics.estimators._gradients import (
    activation_gradients,
    activation_gradients_on_states,
    cross_gradient,
    first_order_scan,
    u_statistic_sq_norm,
)
from numerics.estimators._lipschitz import (
    lipschitz_top_certified,
    lipschitz_top_empirical,
    loss_constants,
)
from numerics.estimators._quadratic import (
    MomentAccumulator,
    ReadoutMoments,
    risk_from_moments,
    sup_deviation,
    trust_region_max,
)
from numerics.estimators._rademacher import (
    cap_for,
    cap_grid,
    eps_n_closed_form,
    eps_n_readout_mc,
    ReadoutRademacher,
    rademacher_readout_jensen,
    rademacher_readout_mc,
    rademacher_readout_stream,
    rho_phi,
)
from numerics.estimators._saturation import (
    SaturationTest,
    ag_max,
    ag_max_per_candidate,
    c1_test,
    cross_gradient_score,
    projection_score,
    realisability_ratio,
    saturation_test,
)
from numerics.estimators._site_scan import accumulate_site_stats, curvature_along, loss_change, site_loss, site_losses
from numerics.estimators._site_stats import SiteAccumulator, SiteTest, adaptive_test, hoeffding_test, n_needed_improvable
from numerics.estimators._site_stats import projection_scores as site_projection_scores
from numerics.estimators._smoothness import (
    BetaEstimate,
    delta_erm,
    delta_r,
    delta_r_lower_bound,
    delta_test_r,
    jumpboard,
    mean_loss,
    smoothness_beta,
    smoothness_beta_report,
)

__all__ = [
    "ReadoutRademacher",
    "rademacher_readout_stream",
    "BetaEstimate",
    "MomentAccumulator",
    "ReadoutMoments",
    "SiteAccumulator",
    "SiteTest",
    "accumulate_site_stats",
    "adaptive_test",
    "curvature_along",
    "hoeffding_test",
    "loss_change",
    "n_needed_improvable",
    "site_loss",
    "site_losses",
    "site_projection_scores",
    "SaturationTest",
    "activation_gradients",
    "activation_gradients_on_states",
    "ag_max",
    "ag_max_per_candidate",
    "c1_test",
    "cap_for",
    "cap_grid",
    "covariance_diagnostics",
    "cross_gradient",
    "cross_gradient_score",
    "delta_erm",
    "delta_r",
    "delta_r_lower_bound",
    "delta_test_r",
    "eps_n_closed_form",
    "eps_n_readout_mc",
    "first_order_scan",
    "jumpboard",
    "lipschitz_top_certified",
    "lipschitz_top_empirical",
    "loss_constants",
    "mean_loss",
    "norm_diagnostics",
    "projection_score",
    "rademacher_readout_jensen",
    "rademacher_readout_mc",
    "realisability_ratio",
    "rho_phi",
    "risk_from_moments",
    "saturation_test",
    "smoothness_beta",
    "smoothness_beta_report",
    "sup_deviation",
    "trust_region_max",
    "u_statistic_sq_norm",
]
