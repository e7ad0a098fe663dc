"""The claim registry of ``depthcert reproduce``: claims as data, decision rules fixed in code.

Each :class:`Claim` names the paper's statement, the study that measures it (an import
path ``"module:function"``), the statistic that study returns and the :class:`Rule` that
turns it into a verdict. The rules were written before any suite was run and are never
tuned to agree. A study that does not exist yet (another study module not written, or
not exposing the function) makes its claim ``not run``; wiring it in later is the one
line of its ``study`` path.

Study contract: ``function(ctx) -> Mapping`` with ``ctx`` a
:class:`numerics.studies.reproduce.ReproduceContext` (``suite``, ``out_dir``, ``sweeps``,
``options``), returning ``{"measured": str (numbers with intervals), "estimate": float,
"interval": [lo, hi], "confidence": float, "figures": [paths], "details": {...}}`` (a
composite rule reads ``details["tests"]`` instead of the interval).
"""
from __future__ import annotations

import dataclasses
import importlib
import math
from typing import Mapping

__all__ = ["CLAIMS", "CLAIM_SETS", "MNIST1D_CLAIMS", "Claim", "NotRun", "Rule", "resolve_study"]

VERDICTS = ("reproduced", "not reproduced", "inconclusive", "not run")


class NotRun(Exception):
    """Raised by a study that cannot run on this suite's workload (the reason is the message): ``not run``."""


@dataclasses.dataclass(frozen=True)
class Rule:
    """Interval rule: reproduced if the interval lies on the claimed side of ``threshold``;
    not reproduced if it lies on the other side of ``against`` (default: ``threshold``);
    inconclusive otherwise. ``kind`` is ``"above"``, ``"below"``, ``"agreement"`` (the
    scaling study's exponent rule) or ``"rebound"`` (composite tests)."""

    kind: str
    threshold: float = 0.0
    against: float | None = None

    def decide(self, evidence: Mapping) -> str:
        if self.kind == "agreement":
            from numerics.studies.scaling import Estimate, agreement_verdict

            a = evidence.get("details", {}).get("alpha_interval")
            alpha = Estimate("alpha_hat", float("nan"), tuple(a), evidence["confidence"]) if a else None
            return agreement_verdict(Estimate("difference", evidence["estimate"], tuple(evidence["interval"]),
                                              evidence["confidence"]), alpha)
        if self.kind == "rebound":
            return _rebound_verdict(evidence["details"]["tests"])
        lo, hi = evidence["interval"]
        if not (math.isfinite(lo) and math.isfinite(hi)):
            return "inconclusive"
        against = self.threshold if self.against is None else self.against
        if self.kind == "above":
            return "reproduced" if lo > self.threshold else "not reproduced" if hi < against else "inconclusive"
        return "reproduced" if hi < self.threshold else "not reproduced" if lo > against else "inconclusive"

    def text(self, confidence: float = 0.95) -> str:
        if self.kind == "agreement":
            from numerics.studies.scaling import AGREEMENT_RULE

            return AGREEMENT_RULE.format(conf=confidence)
        if self.kind == "rebound":
            return ("reproduced: the joint path improves (last vs first, paired one-sided t-test at 0.05) AND the "
                    "narrowest width rebounds (some shallower depth significantly below the deepest, one-sided "
                    "paired t-tests, Bonferroni at 0.05); not reproduced: no rebound and depth alone improves "
                    "significantly (deepest below shallowest), or the joint path gets significantly worse; "
                    "inconclusive: otherwise")
        side, other = ("above", "below") if self.kind == "above" else ("below", "above")
        against = self.threshold if self.against is None else self.against
        return (f"reproduced: the {confidence:.0%} interval lies {side} {self.threshold:.4g}; not reproduced: it lies "
                f"{other} {against:.4g}; inconclusive: otherwise")


def _rebound_verdict(t: Mapping) -> str:
    if t["joint_improves"] and t["rebound"]:
        return "reproduced"
    if (t["depth_alone_improves"] and not t["rebound"]) or t["joint_worsens"]:
        return "not reproduced"
    return "inconclusive"


@dataclasses.dataclass(frozen=True)
class Claim:
    """One empirical claim of THEORY §8-§9 and how it is measured and decided."""

    id: str
    source: str
    paper_says: str
    study: str
    statistic: str
    rule: Rule


_S = "numerics.studies.reproduce._studies:"

#: THEORY §8-§9, in the order of the report. Other modules' studies: one line each.
CLAIMS: tuple[Claim, ...] = (
    Claim("covariance_near_diagonal", "Paper A (THEORY §9)", "Activation-gradient covariance is near-diagonal.",
          _S + "covariance_near_diagonal",
          "mean over the depth sweep's cells of the median off-diagonal mass ratio ||offdiag(Sigma_m)||_F / "
          "||Sigma_m||_F over the interior sites l < D (bootstrap over cells); the top site is excluded: with a "
          "scalar output m_i is a multiple of A^T there, so Sigma_m has rank one by construction",
          Rule("below", 1 / math.sqrt(2))),
    Claim("signal_decay", "Paper A (THEORY §9)", "The first-order signal magnitude decays with depth.",
          _S + "signal_decay", "alpha_hat of s(D) = c D^-alpha, s(D) = max_l ||G_l|| (bootstrap over cells)",
          Rule("above", 0.0)),
    Claim("joint_scaling_rebound", "Paper A (THEORY §9)",
          "Test loss improves under joint depth-width scaling; depth alone at insufficient width gives "
          "non-monotone test loss (a rebound).", _S + "joint_scaling_rebound",
          "population risk of the trained model on a depth x width grid: the joint path (i-th depth with i-th "
          "width) and the depth-only curve at the narrowest width, paired by seed", Rule("rebound")),
    Claim("ag_max_plateau", "Paper B (THEORY §8)",
          "AG_max drops to a plateau (< 5e-3 on CIFAR-10 ResNets) around 16 residual blocks.",
          _S + "ag_max_plateau",
          "abs(late slope) / abs(early slope) of log AG_max against log D (interval)", Rule("below", 0.5, 1.0)),
    Claim("growth_vs_scratch", "Paper B (THEORY §8)",
          "Function-preserving growth reaches comparable or lower train loss and lower test loss than training "
          "the same architecture from scratch (~11.8% lower on average in the paper).", _S + "growth_vs_scratch",
          "mean over seeds of the relative population-risk gain (R_scratch - R_grown) / R_scratch "
          "(Student-t interval)", Rule("above", 0.0)),
    Claim("local_insertion_shrinking", "Paper B (THEORY §8)",
          "Local insertions aligned with the negative activation gradient give immediate loss reductions that "
          "shrink as the network enters the low-signal regime.", _S + "local_insertion_shrinking",
          "Kendall's tau between depth and the measured population gain Delta_R of the jumpboard insertion "
          "V = -eta G at the top (bootstrap over cells)", Rule("below", 0.0)),
    Claim("exponent_agreement", "Paper A, Appendix M (THEORY §7)",
          "Under Assumptions G and G', R(D) - R_inf = Theta(D^-(2 alpha - 1)).", _S + "exponent_agreement",
          "a_observed - (2 alpha_hat - 1), both fitted on the same bootstrap resamples of the depth sweep",
          Rule("agreement")),
    Claim("bound_validity", "Paper A, Theorems 2-3 (THEORY §5-§6)",
          "Each route's bound holds with probability at least one minus its stated failure probability.",
          _S + "bound_validity",
          "number of routes and events whose observed failure rate over the validity study's draws is "
          "significantly above its stated probability (one-sided exact test at 0.05), as [n, n]; counted only "
          "when the study shows power (a deliberately weakened guarantee is flagged), else undefined",
          Rule("below", 0.5)),
)


_M = "numerics.studies.reproduce._mnist1d_studies:"
_REF = "THEORY §8-§9 on MNIST-1D"

#: The MNIST-1D suites' claims (``mnist1d-quick``, ``mnist1d``, ``mnist1d-full``): THEORY §8-§9
#: on 1-D residual CNNs trained on MNIST-1D. Fixed before any of these suites was run.
MNIST1D_CLAIMS: tuple[Claim, ...] = (
    Claim("covariance_near_diagonal", "Paper A (THEORY §9)", "Activation-gradient covariance is near-diagonal.",
          _M + "covariance_near_diagonal",
          "mean over the depth sweep's cells (D >= 1) of the median over the interior sites l < D of the per-channel "
          "off-diagonal mass ratio ||offdiag(Sigma_m)||_F / ||Sigma_m||_F, Sigma_m the C x C covariance of the "
          "activation gradient's channel vector m_i[:, p] over probe samples i and positions p (percentile "
          "bootstrap over cells); the top site is reported apart (its m_i is a pooled image of the head's rows)",
          Rule("below", 1 / math.sqrt(2))),
    Claim("signal_decay", "Paper A (THEORY §9)", "The first-order signal magnitude decays with depth.",
          _M + "signal_decay", "alpha_hat of s(D) = c D^-alpha over the depth sweep's cells with D >= 1, "
          "s(D) = max_l ||G_l|| (plug-in on the probe sample, the protocol block's features; bootstrap over cells)",
          Rule("above", 0.0)),
    Claim("joint_scaling_rebound", "Paper A (THEORY §9)",
          "Test loss improves under joint depth-width scaling; depth alone at insufficient width gives "
          "non-monotone test loss (a rebound).", _M + "joint_scaling_rebound",
          "cross-entropy on the population sample of the trained CNN on a depth x width grid: the joint path "
          "(i-th depth with i-th width) and the depth-only curve at the narrowest width, paired by seed",
          Rule("rebound")),
    Claim("ag_max_plateau", "Paper B (THEORY §8)",
          "AG_max drops to a plateau around 16 residual blocks (where further depth stops helping).",
          _M + "ag_max_plateau", "abs(late slope) / abs(early slope) of log AG_max against log D (first and last "
          "three depths >= 1, mean over seeds; percentile bootstrap over seeds), AG_max = max over probe samples "
          "and sites of ||m_i||", Rule("below", 0.5, 1.0)),
    Claim("ag_max_plateau_level", "Paper B (THEORY §8)", "The AG_max plateau lies below 5e-3 (CIFAR-10 ResNets).",
          _M + "ag_max_plateau_level", "geometric mean over seeds of AG_max at the deepest depth (Student-t "
          "interval on log AG_max, exponentiated); the paper's 5e-3 is a CIFAR-10 number on its own loss scale",
          Rule("below", 5e-3)),
    Claim("growth_vs_scratch", "Paper B (THEORY §8)",
          "Function-preserving growth reaches comparable or lower train loss and lower test loss than training "
          "the same architecture from scratch (~11.8% lower on average in the paper).", _M + "growth_vs_scratch",
          "mean over paired seeds of the relative test-loss gain (L_test_scratch - L_test_grown) / L_test_scratch "
          "on T (Student-t interval); the same final architecture (growth runs to growth.max_depth) and step "
          "budget (the growth study's growth_vs_scratch_study)", Rule("above", 0.0)),
    Claim("local_insertion_shrinking", "Paper B (THEORY §8)",
          "Local insertions aligned with the negative activation gradient give immediate loss reductions that "
          "shrink as the network enters the low-signal regime.", _M + "local_insertion_shrinking",
          "Kendall's tau between depth and the best realised loss reduction over the sites of Theorem 1's step "
          "V = -G / beta (population sample, independent of the probe that fixed G; bootstrap over cells)",
          Rule("below", 0.0)),
    Claim("exponent_agreement", "Paper A, Appendix M (THEORY §7)",
          "Under Assumptions G and G', R(D) - R_inf = Theta(D^-(2 alpha - 1)).", _M + "exponent_agreement",
          "a_observed - (2 alpha_hat - 1), both fitted on the same bootstrap resamples of the depth sweep (D >= 1)",
          Rule("agreement")),
    Claim("bound_validity", "Paper A, Theorems 2-3 (THEORY §5-§6)",
          "Each route's bound holds with probability at least one minus its stated failure probability.",
          _M + "bound_validity",
          "the validity study on an MNIST-1D run config (1-D CNN, readout block at the head input): number of "
          "routes and events significantly violated (one-sided exact test at 0.05), counted when the study shows "
          "power; not run while `depthcert run` refuses the config", Rule("below", 0.5)),
    # growth vs scratch as Paper B ran it (issue 25, item 5); seed words: _growth_own_block.SEED_WORDS
    Claim("growth_own_block", "Paper B (THEORY §8), seed 001",
          "Models grown by function-preserving insertion from a converged shallower network reach training "
          "losses comparable to (often lower than) the same final architecture trained from scratch, and "
          "consistently lower test losses (mean reduction ~11.8%).",
          "numerics.studies.reproduce._growth_own_block:growth_own_block",
          "mean over paired seeds of the relative test-loss gain (L_test_scratch - L_test_grown) / L_test_scratch "
          "on T (Student-t 95%); the claim's interval is the hull over two scratch schedules (the grown arm's "
          "phase list; one pooled recipe run), both with the grown arm's counted optimiser steps and "
          "sample-gradients; grown: the recipe-converged ResCNN1d of depth model.depth, one block of its own "
          "type inserted at the top (conv2 = 0, the trained norm handed up, norm eps 1e-12: Choice) before "
          "each recipe run of growth.steps_per_growth steps, to growth.max_depth", Rule("above", 0.0)),
)

#: The claim set a suite decides (``Suite.claims``).
CLAIM_SETS: dict[str, tuple[Claim, ...]] = {"teacher": CLAIMS, "mnist1d": MNIST1D_CLAIMS}


def resolve_study(path: str):
    """The study callable of ``path`` (``"module:function"``), or ``None`` when it does not exist yet."""
    module, _, name = path.partition(":")
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name and module.startswith(exc.name):
            return None
        raise
    return getattr(mod, name, None)
