"""The seed summaries' sentences the claims test, in English (the papers' seed summaries).

Translated as literally as possible from the seed named with each: ``000`` (Paper A, Dutch;
its Italian, Portuguese and French summaries ``002``/``003``/``004`` say the same in these
places) and ``001`` (Paper B, Dutch). Only these sentences are printed under "the paper
says"; every metric or threshold they do not give is the claim's **Choice**.
"""
from __future__ import annotations

__all__ = ["PAPER_A", "PAPER_B", "SEED_WORDS", "seed_fields"]

PAPER_A = "000_fa3b3d02841b3a6c.txt"
PAPER_B = "001_5b33c3cac680ff24.txt"

#: ``{claim id: (seed file, the sentence in English)}``.
SEED_WORDS: dict[str, tuple[str, str]] = {
    "covariance_near_diagonal": (PAPER_A, "Covariance structure: activation gradients show a nearly diagonal "
                                 "covariance, which supports the assumption of gradient-covariance control (§4.2)."),
    "signal_decay": (PAPER_A, "Signal decay: as depth increases, the magnitude of the first-order activation-gradient "
                     "signal decreases, which supports the interpretation of the 'deepest model' (§4.2)."),
    "joint_scaling_rebound": (PAPER_A, "Combined scaling: the test loss improves under combined scaling of depth and "
                              "width. Increasing depth alone without sufficient width, however, leads to non-monotone "
                              "behaviour (a rebound in the test loss) (§4.2)."),
    "exponent_agreement": (PAPER_A, "In Appendix M the authors show that, under additional assumptions on the decay of "
                           "the first-order signal (Assumptions G and G'), the qualitative mechanism can be converted "
                           "into a power-law scaling relation (§4.3)."),
    "bound_validity": (PAPER_A, "The main theorems give conditions under which L_test(f_new) < L_test(f*_old): "
                       "population route L_test(f_new) <= L_test(f*_old) - Delta_R/2 - Delta_ERM + 2 eps_M; direct "
                       "route L_test(f_new) <= L_test(f*_old) - Delta_test^R - Delta_ERM + 2 (eps_M + eps_K) (§4.1)."),
    "ag_max_plateau": (PAPER_B, "The maximum sample-wise activation-gradient norm (AG_max) decreases quickly with depth "
                       "in the early stages, following the reduction of the task loss. As depth increases, AG_max "
                       "passes into a stable low-signal regime (Experimental results 1)."),
    "ag_max_plateau_level": (PAPER_B, "As depth increases, AG_max passes into a stable low-signal regime (it approaches "
                             "near-zero values, e.g. < 5 x 10^-3) (Experimental results 1)."),
    "ag_max_plateau_test_loss": (PAPER_B, "The appearance of this low-signal plateau coincides with the point at which "
                                 "adding further depth yields little or no measurable improvement in test performance. "
                                 "For example, in CIFAR-10 ResNets the indicator fell to near zero around 16 residual "
                                 "structures, after which the performance gains vanished (Experimental results 1)."),
    "growth_vs_scratch": (PAPER_B, "Models grown by function-preserving insertion (starting from a converged shallower "
                          "network) were compared with models of the same final architecture trained from a random "
                          "initialisation: growth reached training losses comparable to (and often lower than) "
                          "training from scratch; the grown models consistently reached lower test losses (mean "
                          "reduction ~11.8%) (Experimental results 2)."),
    "local_insertion_shrinking": (PAPER_B, "Experiments inserting blocks that corresponded to negative activation "
                                  "gradients confirmed that immediate loss reductions are possible when the gradient "
                                  "signal is non-zero, and that these reductions diminish when the network enters the "
                                  "low-signal regime (Experimental results 3)."),
}
SEED_WORDS["growth_own_block"] = SEED_WORDS["growth_vs_scratch"]   # Paper B ran it with its own blocks


def seed_fields(claim_id: str) -> dict:
    """``{"paper_says", "seed_words", "seed"}`` of a claim (the seed's sentence is what the paper says).

    Raises:
        KeyError: a claim id with no seed sentence (a claim the seeds do not make has no place here).
    """
    seed, words = SEED_WORDS[claim_id]
    return {"paper_says": words, "seed_words": words, "seed": seed}
