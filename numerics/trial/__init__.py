"""Predicted against observed, and trial insertions: the statistics (no torch) and the torch arms.

:mod:`numerics.trial._stats` -- rank tests with exact permutation p-values, calibration slopes,
the first-order ratio check, successive-halving rungs; :mod:`numerics.trial._arms` -- an arm
trained step by step, ShortGPT's block influence; :mod:`numerics.trial._plots` -- the figure.
The public functions (``dc.predicted_vs_observed``, ``dc.calibration``, ``dc.first_order_check``,
``dc.trial_insertion``, ``dc.plot_calibration``) live in :mod:`depthcert.api`.
"""
from numerics.trial._arms import TrainingArm, block_influence
from numerics.trial._stats import (DEFAULT_MC, MAX_EXACT, calibration_slope, halving_rungs, mean_interval, rank_test,
                                   ratio_check, spearman)

__all__ = ["DEFAULT_MC", "MAX_EXACT", "TrainingArm", "block_influence", "calibration_slope", "halving_rungs",
           "mean_interval", "rank_test", "ratio_check", "spearman"]
