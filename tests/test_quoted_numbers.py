"""Numbers are read, not typed: every number a page quotes from a stored result is checked against the file and
key it comes from.

``QUOTES`` is the table: one :class:`Quote` per quoted passage -- the page, a regular expression whose groups
are the quoted numbers (matched on the page with runs of whitespace, line breaks included, read as one space),
the stored file, one key path per group and how the page renders each stored value. Stored files are read at
test time, so a study re-run and re-stored passes when its page quotes the new numbers, and fails when the page
still quotes the old ones.

To add a row: copy the passage from the page into ``text`` (escape regex metacharacters: ``re.escape`` the
fixed parts, ``([-+\\d.]+)`` for each number), name the file (relative to the repository root) and give one
path per number: a tuple of JSON keys and list indices, :func:`where` to pick a list element by a field, a
callable applied to the value so far, or a compiled regex searched in a stored string (its group 1 is the
value). ``fmt`` is a format string (``"{:.3f}"``) or a callable, one for all groups or one per group.
Planting a wrong number in a copy of the page must make the row fail (``test_a_planted_wrong_number_fails``).
"""
from __future__ import annotations

import dataclasses
import json
import statistics
import re
import shutil
from pathlib import Path
from typing import Any, Callable

import pytest

ROOT = Path(__file__).resolve().parents[1]

PRETRAINED = "docs/reproduce-pretrained/study.json"
SEEDS30 = "docs/validity-mnist1d-seeds30/validity.json"
V200 = "docs/validity-mnist1d-200/validity.json"
QUICK = "docs/reproduce-mnist1d-quick/claims.json"
FULL = "docs/reproduce-mnist1d/claims.json"
DEMO = "depthcert/configs/demo_validity.json"
RUN1D = "docs/run-mnist1d-converged/result.json"
PD_LB = ("per_draw_summary", "routes", "localised_train_linearised_bernstein")
RUN1D_TIME = "docs/run-mnist1d-converged/time.json"


@dataclasses.dataclass(frozen=True)
class Quote:
    page: str
    text: str
    file: str
    paths: tuple
    fmt: Any = "{}"

    def fmts(self) -> list:
        return list(self.fmt) if isinstance(self.fmt, (list, tuple)) else [self.fmt] * len(self.paths)


def where(field: str, prefix: str, exact: bool = False) -> Callable:
    """Path step: the list element whose ``field`` starts with ``prefix`` (equals it: ``exact``); exactly one."""
    def pick(items):
        hits = [x for x in items if (str(x.get(field, "")) == prefix if exact else str(x.get(field, "")).startswith(prefix))]
        if len(hits) != 1:
            raise KeyError(f"{len(hits)} elements with {field} starting {prefix!r}")
        return hits[0]
    pick.__name__ = f"where({field}^={prefix!r})"
    return pick


def claim(cid: str) -> tuple:
    return ("claims", where("id", cid, exact=True))


def conv(cid: str, name: str, exact: bool = False) -> tuple:
    return (*claim(cid), "conventions", where("convention", name, exact))


def count(verdict: str) -> Callable:
    def n(report):
        return sum(c["verdict"] == verdict for c in report["claims"])
    n.__name__ = f"count({verdict!r})"
    return n


def pct1(v: float) -> str:
    return f"{100 * v:.1f}"


def neg_pct1(v: float) -> str:
    return f"{-100 * v:.1f}"


def minutes0(v: float) -> str:
    return f"{v / 60:.0f}"


def minutes1(v: float) -> str:
    return f"{v / 60:.1f}"


def short_e2(v: float) -> str:
    m, e = f"{v:.2e}".split("e")
    return f"{m}e{int(e)}"


def short_e(v: float) -> str:
    m, e = f"{v:.1e}".split("e")
    return f"{m}e{int(e)}"


NUM = r"([-+]?[\d.]+(?:e[-+]?\d+)?)"
NULL = re.compile(r"permutation null \(coordinates permuted independently\) ([\d.]+)")
RATIO_HI = re.compile(r"\|late/early\| [\d.]+ \[[\d.]+, ([\d.]+)\]")


def gm(depth: int) -> re.Pattern:
    return re.compile(rf"geometric mean: (?:D=\d+: [\d.e+-]+, )*?D={depth}: ([\d.e+-]+)")


#: in :func:`_t`, a number that is matched but not checked by that row (another row reads it from its own file)
NUMX = re.compile(r"[-+]?[\d.]+(?:e[-+]?\d+)?")


def _t(*parts) -> str:
    """A regex from fixed text (escaped), ``None`` for a number and :data:`NUMX` for a number checked elsewhere."""
    return "".join(NUM if p is None else p.pattern if p is NUMX else re.escape(p) for p in parts)


CERT = (*(), "localised_comparison", "use_rate")
REAL = "docs/bench-saturation-real-size/real_size.json"
RSCAN = "docs/bench-saturation-real-size/real_size_scan.json"
SCALE = "docs/bench-saturation-scaling/scaling.json"
RGPT = "docs/bench-saturation-real-size/real_size_gpt2.json"        # the reruns after the shared decomposition
RRES = "docs/bench-saturation-real-size/real_size_resnet50.json"
RGPT3 = "docs/bench-saturation-real-size/real_size_gpt2_search.json"   # the third runs, after the curvature step's changes
RRES3 = "docs/bench-saturation-real-size/real_size_resnet50_search.json"
RRES128 = "docs/bench-saturation-real-size/real_size_resnet50_n128.json"
RRES256 = "docs/bench-saturation-real-size/real_size_resnet50_n256_b32.json"     # the fourth run: 256 images, batches of 32
RRES256S = "docs/bench-saturation-real-size/real_size_resnet50_n256_b32_scan.json"   # its rerun of the scan



def rs_(case: str, key: str) -> tuple:
    """Path of one summary value of a stored ``bench_saturation.py --real-size`` run."""
    return ("results", case, "summary", key)


def ms3(v: float) -> str:
    return f"{1e3 * v:.3f}"


TRIAL_MINILM = "docs/trial-minilm/results.json"
FULL_BUDGET = "docs/trial-minilm/full_budget/results.json"
TRIAL_TS = "docs/trial-minilm/tune_survives/results.json"
TRIAL_PD = "docs/trial-minilm/per_doc/results.json"
TRIAL_SL = "docs/trial-minilm/stdlib/results.json"
TRIAL_SL_PROTO = "docs/trial-minilm/stdlib/protocol.json"
TRIAL_SL_FB = "docs/trial-minilm/stdlib_full_budget/results.json"
TRIAL_SE = "docs/trial-minilm/stdlib_earlier/results.json"           # the fifth design
TRIAL_SE_PROTO = "docs/trial-minilm/stdlib_earlier/protocol.json"
TRIAL_SE_DESIGN = "docs/trial-minilm/stdlib_earlier/design.json"


def _plateau(design: dict) -> tuple:
    """The smallest and largest ratio of the stored sweep that pass in as many design seeds as the chosen one."""
    hits = [w["prefer_earlier"] for w in design["sweep"] if w["prefer_earlier"] is not None and w["n_pass"] == design["n_pass"]]
    return min(hits), max(hits)


def _cp(level: float) -> Callable:
    def cp(summary):
        from benchmarks.bench_trial_minilm import clopper_pearson

        return clopper_pearson(summary["n_pass"], summary["n_seeds"], level)
    return cp


def _lost_at_first_rung(rows: list) -> int:
    """Failing seeds of a stored trial run whose best arm the first rung eliminated."""
    return sum(not r["passes"] and any(a["arm"] == r["best_arm"] and a["eliminated_at"] == r["rungs"][0] for a in r["arms"])
               for r in rows)


def _reached_last_rung(row: dict, arm: str) -> bool:
    """``arm`` of a stored trial row trained to the last rung (a select gain at every rung)."""
    return any(a["arm"] == arm and len(a["select_gains"]) == len(row["rungs"]) for a in row["arms"])
PRED_MINILM = "docs/predicted/minilm/calibration.json"


def mcal(h: int, score: str, key: str) -> tuple:
    """Path of one value of a stored calibration (MiniLM-L6's ``calibration.json`` or the pooled ``pooled.json``: the
    row of horizon ``h``, ``score``)."""
    def pick(rows):
        hits = [r for r in rows if r["horizon"] == h and r["score"] == score]
        if len(hits) != 1:
            raise KeyError(f"{len(hits)} calibration rows at horizon {h}, score {score!r}")
        return hits[0]
    pick.__name__ = f"mcal({h}, {score!r})"
    return ("calibration", pick, key)


POOLED = "docs/predicted/pooled.json"


QUOTES: tuple[Quote, ...] = (
    # --- docs/own_network.md: the default ranking's rule read on the stored pooled table
    Quote("docs/own_network.md", _t("the largest horizon pooled over all four is ", None, " steps) no score qualifies: the largest "
                                    "pooled mean rho there, `P_linear`'s and `P_affine`'s, is ", None, " with p ", None,
                                    "; `predicted_gain`'s is ", None, " with p ", None, ". So"), POOLED,
          (("horizons", 2), *(mcal(10, s, k) for s in ("P_linear", "predicted_gain") for k in ("rho", "p_one_sided"))),
          ("{}", "{:+.2f}", "{:.3g}", "{:+.2f}", "{:.3g}")),
    # --- docs/hf_grow.md: the callbacks' overhead (benchmarks/bench_callback_overhead.py)
    Quote("docs/hf_grow.md", _t("one scan took ", None, " training steps (of 16 windows each); at the default interval of 1000 steps "
                                "that is ", None, "% of the training time"), "docs/bench-callback-overhead/result.json",
          (("scan_in_steps",), ("ratio_default",)), ("{:.1f}", pct1)),
    # --- README: the converged MNIST-1D certificate over 30 seeds (docs/validity-mnist1d-seeds30)
    Quote("README.md", _t("over 30 held-out seeds at the full sample, ", None, " of ", None, " (Clopper–Pearson [", None,
                          "%, ", None, "%]), a median certified improvement of ", None, "% of the trained block's realised gain"),
          SEEDS30, ((*CERT, "certified"), ("draws",), (*CERT, "certification_interval", 0), (*CERT, "certification_interval", 1),
                    (*PD_LB, "improvement_over_trained_gain", "median")), ("{}", "{}", pct1, pct1, pct1)),
    # --- README: the demo and held-out rate table (depthcert/configs/demo_validity.json)
    *(Quote("README.md", _t(f"| {row} | 100% [", None, "%, 100%] | ", None, "% [", None, "%, ", None, "%]"), DEMO,
            (("certification", key, "certification_interval", 0),
             ("held_out_setups", "certification", key, "certification_rate"),
             ("held_out_setups", "certification", key, "certification_interval", 0),
             ("held_out_setups", "certification", key, "certification_interval", 1)), pct1)
      for row, key in (("population (Thm 2)", "population"), ("direct (Thm 3)", "direct"),
                       ("population risk", "population_risk"))),
    Quote("README.md", _t("| `population_tight_bernstein` (fixed before the data, **Choice**) | 100% [", None,
                          "%, 100%] | **", None, "% [", None, "%, ", None, "%]**"), DEMO,
          (("certification", "population_tight_bernstein", "certification_interval", 0),
           ("held_out_setups", "certification", "population_tight_bernstein", "certification_rate"),
           ("held_out_setups", "certification", "population_tight_bernstein", "certification_interval", 0),
           ("held_out_setups", "certification", "population_tight_bernstein", "certification_interval", 1)), pct1),
    Quote("README.md", _t("`population_tight_bernstein` (THEORY §6, named in the configs before any held-out draw): ",
                          None, " of the 60 setups against ", None, " for the better of the paper's routes"), DEMO,
          (("held_out_setups", "certification", "population_tight_bernstein", "certified"),
           ("held_out_setups", "certification", "population", "certified"))),
    # --- README: the mnist1d-quick suite (docs/reproduce-mnist1d-quick)
    Quote("README.md", _t("--workers 2 --out DIR` (1-D residual CNNs on MNIST-1D; ", None, " min"), QUICK,
          (("wall_s",),), minutes1),
    Quote("README.md", _t("per channel ", None, " [", None, ", ", None, "] is not reproduced at 1/sqrt(2), reproduced at "
                          "any threshold above ", None, "; position-summed ", None, " flips at ", None, " / ", None,
                          "; whole state ", None, " not reproduced at any threshold in [0.5, 0.9] (permutation nulls ",
                          None, ", ", None, ", ", None, ")"), QUICK,
          ((*conv("covariance_near_diagonal", "per channel"), "estimate"),
           (*conv("covariance_near_diagonal", "per channel"), "interval", 0),
           (*conv("covariance_near_diagonal", "per channel"), "interval", 1),
           (*conv("covariance_near_diagonal", "per channel"), "interval", 1),
           (*conv("covariance_near_diagonal", "position-summed"), "estimate"),
           (*conv("covariance_near_diagonal", "position-summed"), "interval", 0),
           (*conv("covariance_near_diagonal", "position-summed"), "interval", 1),
           (*conv("covariance_near_diagonal", "whole state"), "estimate"),
           (*conv("covariance_near_diagonal", "per channel"), "note", NULL),
           (*conv("covariance_near_diagonal", "position-summed"), "note", NULL),
           (*conv("covariance_near_diagonal", "whole state"), "note", NULL)), "{:.3f}"),
    Quote("README.md", _t("reproduced at the top site with a batch-mean gradient (", None,
                          " on the training sample, batch 128)"), QUICK,
          ((*conv("ag_max_plateau_level", "training sample, top site, batch mean over 128"), "estimate"),), short_e),
    Quote("README.md", _t("held-out top site falls then flattens for a slope-ratio bound above ", None), QUICK,
          ((*conv("ag_max_plateau", "held-out probe, top site", True), "note", RATIO_HI),), "{:.3g}"),
    Quote("README.md", _t("the seed's own level (< 5e-3) is met by no convention (top site ", None, ", ", None, ")"), QUICK,
          ((*conv("ag_max_plateau_level", "training sample, top site, per-sample"), "estimate"),
           (*conv("ag_max_plateau_level", "held-out probe, top site, per-sample"), "estimate")), "{:.2f}"),
    Quote("README.md", _t("not reproduced against one pooled scratch run (test loss ", None, "% [", None, "%, ", None, "%])"),
          QUICK, ((*conv("growth_own_block", "test loss; scratch trained with one recipe run"), "estimate"),
                  (*conv("growth_own_block", "test loss; scratch trained with one recipe run"), "interval", 0),
                  (*conv("growth_own_block", "test loss; scratch trained with one recipe run"), "interval", 1)), pct1),
    Quote("README.md", _t("not counted (its rule: inconclusive, ", None, "% [", None, "%, ", None, "%])"), QUICK,
          ((*claim("growth_vs_scratch"), "evidence", "estimate"), (*claim("growth_vs_scratch"), "evidence", "interval", 0),
           (*claim("growth_vs_scratch"), "evidence", "interval", 1)), lambda v: f"{100 * v:+.1f}".lstrip("+")
          if v < 0 else f"+{100 * v:.1f}"),
    # --- README: the full mnist1d suite (docs/reproduce-mnist1d)
    Quote("README.md", _t("[the stored report](docs/reproduce-mnist1d/report.md)): ", None, " reproduced, ", None,
                          " not reproduced, ", None, " inconclusive, ", None, " convention-dependent, ", None,
                          " not the seed's setup"), FULL,
          ((count("reproduced"),), (count("not reproduced"),), (count("inconclusive"),), (count("convention-dependent"),),
           (count("not the seed's setup"),))),
    Quote("README.md", _t("(per channel ", None, " [", None, ", ", None, "]: not reproduced at 1/sqrt(2), reproduced at any "
                          "threshold above ", None, ", e.g. 0.8; the whole state ", None, " not reproduced"), FULL,
          ((*conv("covariance_near_diagonal", "per channel"), "estimate"),
           (*conv("covariance_near_diagonal", "per channel"), "interval", 0),
           (*conv("covariance_near_diagonal", "per channel"), "interval", 1),
           (*conv("covariance_near_diagonal", "per channel"), "interval", 1),
           (*conv("covariance_near_diagonal", "whole state"), "estimate")), "{:.3f}"),
    Quote("README.md", _t("Bound validity: inconclusive (0/", None, " violations"), FULL,
          ((*claim("bound_validity"), "measured", re.compile(r"^(\d+) draws")),), "{:.0f}"),
    Quote("README.md", _t("(Kendall tau ", None, " [", None, ", ", None, "])"), FULL,
          ((*conv("local_insertion_shrinking", "top site"), "estimate"),
           (*conv("local_insertion_shrinking", "top site"), "interval", 0),
           (*conv("local_insertion_shrinking", "top site"), "interval", 1)), "{:.2f}"),
    Quote("README.md", _t("the grown model's test loss is ", None, "% [", None, "%, ", None, "%] *higher*"), FULL,
          ((*conv("growth_own_block", "test loss; scratch trained with the grown arm"), "estimate"),
           (*conv("growth_own_block", "test loss; scratch trained with the grown arm"), "interval", 1),
           (*conv("growth_own_block", "test loss; scratch trained with the grown arm"), "interval", 0)), neg_pct1),
    Quote("README.md", _t("processes more sample-gradients, gives +", None, "% [+", None, "%, +", None, "%]: not counted"),
          FULL, ((*claim("growth_vs_scratch"), "evidence", "estimate"), (*claim("growth_vs_scratch"), "evidence", "interval", 0),
                 (*claim("growth_vs_scratch"), "evidence", "interval", 1)), pct1),
    # --- RESULTS: the demo setup's 200 draws and the 60 held-out setups (depthcert/configs/demo_validity.json)
    Quote("docs/RESULTS.md", _t("Holm over all ", None, " routes and events: nothing rejected, `validity.json: family_wise`"),
          DEMO, (("family_wise", "tests"),)),
    Quote("docs/RESULTS.md", _t("Monte-Carlo error in ", None, "/", None, " draws against a stated 0.02; Hoeffding tails at "
                                "level 0.05 with `K -> 10^4 K`: ", None, "/200 and ", None, "/200; a plain `mean - 1.645 SE` "
                                "bound on `Delta_R` stated at 5e-4: ", None, "/200"), DEMO,
          (("power", "eps_M x 0.01", "failures"), ("draws",), ("power", "Hoeffding H_new K x 10000", "failures"),
           ("power", "Hoeffding H_old K x 10000", "failures"), ("power", "Delta_R: mean - 1.645 SE", "failures"))),
    Quote("docs/RESULTS.md", _t("stayed below ", None, " of that wrong tail in every draw (`power.*.class_sup_over_tail`)"),
          DEMO, (("power", "population_tight_hoeffding: fixed tail f_new on S (H_S_new)", "class_sup_over_tail", "max"),),
          "{:.3f}"),
    Quote("docs/RESULTS.md", _t("The 200 draws took ", None, " min ", None, " s (one process, one thread, while the held-out "
                                "study ran on the other core; the blocks of 8 draws trained together); the 60 held-out "
                                "setups ", None, " min ", None, " s."), DEMO,
          (("wall_time", re.compile(r"^(\d+) min")), ("wall_time", re.compile(r"^\d+ min (\d+) s")),
           ("held_out_setups", "wall_time", re.compile(r"^(\d+) min")),
           ("held_out_setups", "wall_time", re.compile(r"^\d+ min (\d+) s"))), "{:.0f}"),
    # --- RESULTS: MiniLM (docs/reproduce-pretrained/study.json)
    Quote("docs/RESULTS.md", _t(" seeds) took **", None, " min**"), PRETRAINED, (("wall_s",),), minutes1),
    Quote("docs/RESULTS.md", _t("It cost ", None, " s = **", None, "x** one"), PRETRAINED,
          (("scan_cost", "scan_s"), ("scan_cost", "ratio")), ("{:.1f}", "{:.2f}")),
    Quote("docs/RESULTS.md", _t("`L_test(f_old)` = ", None, " on `T`"), PRETRAINED, (("certificate", "L_test_old"),), "{:.3f}"),
    Quote("docs/RESULTS.md", _t("is sure (", None, " through the head's LayerNorm"), PRETRAINED,
          (("certificate", "constants", "B"),), "{:.1f}"),
    Quote("docs/RESULTS.md", _t("gives a mean `l(f_new) - l(f_old)` of ", None, ":"), PRETRAINED,
          (("certificate", "heldout_paired", "mean_T"),), "{:.4f}"),
    Quote("docs/RESULTS.md", _t("the Student-t upper bound is ", None, ", an improvement"), PRETRAINED,
          (("certificate", "heldout_paired", "t", "bound"),), "{:.4f}"),
    Quote("docs/RESULTS.md", _t("the sure range `2B = ", None, "` is +", None, ": vacuous"), PRETRAINED,
          (("certificate", "heldout_paired", "bernstein", "range"), ("certificate", "heldout_paired", "bernstein", "bound")),
          ("{:.0f}", "{:.2f}")),
    # the arms table: held-out loss on T, the paired drop vs (e) with its 95% t interval, trained parameters
    *(Quote("docs/RESULTS.md", re.escape(f"| ({letter}) ") + r"[^|]*\| " + NUM + r" \| \+" + NUM + r" \[" + NUM + r", \+"
            + NUM + r"\] \| ([\d,]+) \|", PRETRAINED,
            (("arms", where("name", f"{letter}_"), "heldout_loss"),
             ("arms", where("name", f"{letter}_"), "paired_interval", "mean"),
             ("arms", where("name", f"{letter}_"), "paired_interval", "interval", 0),
             ("arms", where("name", f"{letter}_"), "paired_interval", "interval", 1),
             ("arms", where("name", f"{letter}_"), "trained_parameters")), ("{:.4f}", "{:.4f}", "{:+.4f}", "{:.4f}", "{:,}"))
      for letter in "abcd"),
    # --- RESULTS: 200 draws of one MNIST-1D setup (docs/validity-mnist1d-200)
    Quote("docs/RESULTS.md", _t("Stored in [`docs/validity-mnist1d-200/`](validity-mnist1d-200/README.md). It took ", None,
                                " min on 2 shared cores, ", None, " s per draw."), V200,
          (("timing", "this_invocation_s"), ("timing", "draw_seconds_median")), (minutes0, "{:.1f}")),
    Quote("docs/RESULTS.md", _t("Every event had 0 failures in ", None, ", counted at the unpaired tolerance `3.29 (se_1 + se_2)`, "
                                "which was not compared with the terms tested (draws not stored, not re-summarised). Holm over the ",
                                None, " tests rejected none."), V200,
          (("draws",), ("family_wise", "tests"))),
    Quote("docs/RESULTS.md", re.escape("* **") + "(No|One|Two|Three)" + _t(" weakened guarantee is flagged** (power; Holm "
                                                                             "over the ", None, " power tests, "
                                                                             "`power_family_wise.rejected`):"), V200,
          (("power_family_wise", "rejected", len), ("power_family_wise", "tests")),
          (lambda n: ["No", "One", "Two", "Three"][n], "{}")),
    Quote("docs/RESULTS.md", _t("stated at 5·10^-4, failed in ", None, " of 200 draws (p = ", None, "·10^-6)."), V200,
          (("power", "Delta_R: mean - 1.645 SE", "failures"),
           ("power", "Delta_R: mean - 1.645 SE", "p_value", lambda p: p * 1e6)), ("{}", "{:.1f}")),
    Quote("docs/RESULTS.md", _t("`H_old` with `K -> 10^4 K` failed in ", None, " of 200 (p = ", None,
                                ", above Holm's cut-off there, 0.05/", None, " = ", None, ")"), V200,
          (("power", "Hoeffding H_old K x 10000", "failures"), ("power", "Hoeffding H_old K x 10000", "p_value"),
           ("power_family_wise", lambda f: f["tests"] - len(f["rejected"])),
           ("power_family_wise", lambda f: 0.05 / (f["tests"] - len(f["rejected"])))), ("{}", "{:.2g}", "{}", "{:.4f}")),
    Quote("docs/RESULTS.md", _t("`eps_M x 0.01` (", None, " of 200), `eps_K x 0.01` (", None, " of 200) and `H_new` with "
                                "`K -> 10^4 K` (", None, " of 200, p = ", None, ")"), V200,
          (("power", "eps_M x 0.01", "failures"), ("power", "eps_K x 0.01", "failures"),
           ("power", "Hoeffding H_new K x 10000", "failures"), ("power", "Hoeffding H_new K x 10000", "p_value")),
          ("{}", "{}", "{}", "{:.2f}")),
    Quote("docs/validity-mnist1d-200/README.md", _t("It ran on 2 cores shared with another job: ", None, " min wall, ", None,
                                                    " s per draw (median)."), V200,
          (("timing", "this_invocation_s"), ("timing", "draw_seconds_median")), (minutes0, "{:.1f}")),
    # --- RESULTS: 30 held-out MNIST-1D seeds (docs/validity-mnist1d-seeds30)
    Quote("docs/RESULTS.md", _t("It ran in two invocations on 2 cores shared with other jobs, ", None, " s per draw (median)."),
          SEEDS30, (("timing", "draw_seconds_median"),), "{:.1f}"),
    Quote("docs/RESULTS.md", _t("certified **", None, " of ", None, "** held-out seeds, Clopper–Pearson 95% **[", None,
                                "%, ", None, "%]**"), SEEDS30,
          ((*CERT, "certified"), ("draws",), (*CERT, "certification_interval", 0), (*CERT, "certification_interval", 1)),
          ("{}", "{}", pct1, pct1)),
    Quote("docs/RESULTS.md", _t("The certified improvement is a median ", None, "% of the trained block's realised gain on `T` "
                                "(quartiles ", None, "% and ", None, "%)"), SEEDS30,
          tuple((*PD_LB, "improvement_over_trained_gain", k) for k in ("median", "q25", "q75")), pct1),
    Quote("docs/RESULTS.md", _t("`M_needed / n_needed_improvable` has median **", None, "** (min ", None, ", max ", None, ")"),
          SEEDS30, tuple(("localised_comparison", "gap", "ratio", k) for k in ("median", "min", "max")), "{:.1f}"),
    Quote("docs/RESULTS.md", _t("`M_needed` has median ", None, "·10^4 (", None, "·10^4 to ", None, "·10^5)"), SEEDS30,
          tuple(("localised_comparison", "gap", "M_needed", k) for k in ("median", "min", "max")),
          (lambda v: f"{v / 1e4:.1f}", lambda v: f"{v / 1e4:.1f}", lambda v: f"{v / 1e5:.1f}")),
    Quote("docs/RESULTS.md", _t("improvable at a median of ", None, "·10^3 samples (", None, "·10^3 to ", None, "·10^3)"),
          SEEDS30, tuple(("localised_comparison", "gap", "n_needed_improvable", k) for k in ("median", "min", "max")),
          lambda v: f"{v / 1e3:.1f}"),
    Quote("docs/RESULTS.md", _t("A `U_S` of the linearised routes weakened to x ", None, " is flagged (Holm over the power table); "
                                "x 0.1 is not: the realised deviation at the localised `f_new`, plus the truth's tolerance, is "
                                "at most ", None, " of `U_S` over the 30 draws"), SEEDS30,
          (("power_localised", "routes", "localised_train_linearised_bernstein", "U_S", "largest_flagged_factor"),
           ("power_localised", "routes", "localised_train_linearised_bernstein", "U_S", "looseness_upper", "max")), ("{:g}", "{:.3g}")),
    Quote("docs/RESULTS.md", _t("(a truth of about ", None, "·10^6 rows would be needed;"), SEEDS30,
          (("power_localised", "routes", "localised_train_linearised_bernstein", "t_T_d", "truth_size_to_flag", "0"),),
          lambda v: f"{v / 1e6:.1f}"),
    # --- RESULTS: the mnist1d suite
    Quote("docs/RESULTS.md", _t("--suite mnist1d`): ", None, " reproduced, ", None, " not reproduced, ", None, " inconclusive, ",
                                None, " convention-dependent, ", None, " not the seed's setup."), FULL,
          ((count("reproduced"),), (count("not reproduced"),), (count("inconclusive"),), (count("convention-dependent"),),
           (count("not the seed's setup"),))),
    Quote("docs/RESULTS.md", _t("(", None, "/", None, " weakened guarantees flagged, none for most events"), FULL,
          ((*claim("bound_validity"), "measured", re.compile(r"power: (\d+)/\d+")),
           (*claim("bound_validity"), "measured", re.compile(r"power: \d+/(\d+)"))), "{:.0f}"),
    Quote("docs/RESULTS.md", _t("per channel ", None, " [", None, ", ", None, "] is not reproduced at the **Choice** 0.707 but "
                                "reproduced at any threshold above ", None, " (position-summed flips at ", None, " / ", None,
                                "; the whole state, ", None, ", is not reproduced"), FULL,
          ((*conv("covariance_near_diagonal", "per channel"), "estimate"),
           (*conv("covariance_near_diagonal", "per channel"), "interval", 0),
           (*conv("covariance_near_diagonal", "per channel"), "interval", 1),
           (*conv("covariance_near_diagonal", "per channel"), "interval", 1),
           (*conv("covariance_near_diagonal", "position-summed"), "interval", 0),
           (*conv("covariance_near_diagonal", "position-summed"), "interval", 1),
           (*conv("covariance_near_diagonal", "whole state"), "estimate")), "{:.3f}"),
    # --- REPRODUCE_MNIST1D
    Quote("docs/REPRODUCE_MNIST1D.md", _t("per channel (", None, " [", None, ", ", None, "]: not reproduced below ", None,
                                          ", reproduced above ", None, "), position-summed (", None, " [", None, ", ", None,
                                          "]: flips at ", None, " and ", None, "); not reproduced at any threshold in "
                                          "[0.5, 0.9]: whole state (", None, " [", None, ", ", None, "])"), QUICK,
          tuple((*conv("covariance_near_diagonal", c), *k) for c, ks in (
              ("per channel", (("estimate",), ("interval", 0), ("interval", 1), ("interval", 0), ("interval", 1))),
              ("position-summed", (("estimate",), ("interval", 0), ("interval", 1), ("interval", 0), ("interval", 1))),
              ("whole state", (("estimate",), ("interval", 0), ("interval", 1)))) for k in ks), "{:.3f}"),
    Quote("docs/REPRODUCE_MNIST1D.md", _t("far above their permutation nulls (", None, ", ", None, ", ", None, ")"), QUICK,
          tuple((*conv("covariance_near_diagonal", c), "note", NULL) for c in ("per channel", "position-summed", "whole")),
          "{:.3f}"),
    Quote("docs/REPRODUCE_MNIST1D.md", _t("(held-out probe: geometric means ", None, ", ", None, ", ", None, ", ", None,
                                          " at D = 1–4, early slope ", None, " [", None, ", ", None, "]"), QUICK,
          (*((*conv("ag_max_plateau", "held-out probe, top site", True), "note", gm(d)) for d in (1, 2, 3, 4)),
           (*conv("ag_max_plateau", "held-out probe, top site", True), "estimate"),
           (*conv("ag_max_plateau", "held-out probe, top site", True), "interval", 0),
           (*conv("ag_max_plateau", "held-out probe, top site", True), "interval", 1)), "{:.3g}"),
    Quote("docs/REPRODUCE_MNIST1D.md", _t("the same tau ", None, " [", None, ", ", None, "])"), QUICK,
          ((*conv("local_insertion_shrinking", "top site"), "estimate"),
           (*conv("local_insertion_shrinking", "top site"), "interval", 0),
           (*conv("local_insertion_shrinking", "top site"), "interval", 1)), "{:.3f}"),
    Quote("docs/REPRODUCE_MNIST1D.md", _t("every route and event 0/20 violated; ", None, "/", None, " weakened guarantees "
                                          "flagged"), QUICK,
          ((*claim("bound_validity"), "measured", re.compile(r"power: (\d+)/\d+")),
           (*claim("bound_validity"), "measured", re.compile(r"power: \d+/(\d+)"))), "{:.0f}"),
    Quote("docs/REPRODUCE_MNIST1D.md", _t("| per channel ", None, " [", None, ", ", None, "], position-summed ", None, " [",
                                          None, ", ", None, "], whole state ", None, " [", None, ", ", None, "] over 24 cells"),
          FULL, tuple((*conv("covariance_near_diagonal", c), *k) for c in ("per channel", "position-summed", "whole state")
                      for k in (("estimate",), ("interval", 0), ("interval", 1))), "{:.3f}"),
    # --- the converged MNIST-1D run (docs/run-mnist1d-converged): README (e), RESULTS, the stored README
    Quote("README.md", _t("| **certified** (by ", None, ": ", None, "% of the block's realised gain) |"), RUN1D,
          (("routes", "localised_train_linearised_bernstein", "improvement"),
           ("routes", "localised_train_linearised_bernstein", "improvement_over_gain")), (short_e2, pct1)),
    Quote("README.md", _t("| certified (by ", None, ") |"), RUN1D, (("routes", "heldout_paired", "improvement"),), short_e2),
    Quote("README.md", _t("| not certified (`2 eps_M` = ", None, ") |"), RUN1D, (("eps_M", lambda v: 2 * v),), "{:.3g}"),
    Quote("README.md", _t("(**Choice**): bound ", None, " < `L_test_old` ", None, " (a train-and-test route"), RUN1D,
          (("routes", "localised_train_linearised_bernstein", "bound"), ("L_test_old",)), "{:.6g}"),
    Quote("README.md", _t("On seed 0 it certifies an improvement of ", None, " at the cap `nu` = ", None, " (training gain ", None, "), ",
                          None, "% of the ", None, " that the trained block realises on `T`"), RUN1D,
          (("routes", "localised_train_linearised_bernstein", "improvement"), ("localised", "class", "nu"),
           ("localised", "inputs", "delta_train"), ("routes", "localised_train_linearised_bernstein", "improvement_over_gain"),
           ("routes", "localised_train_linearised_bernstein", "realised_gain")), (short_e2, "{:.3g}", short_e2, pct1, short_e2)),
    Quote("README.md", _t("`depthcert run --config examples/mnist1d_converged.toml --out DIR` (", None, " min wall on 2 cores"),
          RUN1D_TIME, (("wall_s",),), minutes1),
    Quote("docs/run-mnist1d-converged/README.md", _t("It ran in ", None, " min wall ("), RUN1D_TIME, (("wall_s",),), minutes1),
    Quote("docs/run-mnist1d-converged/README.md", _t("min wall (", None, " s of the run's own timings"), RUN1D,
          (("timings", "total_s"),), "{:.0f}"),
    Quote("docs/run-mnist1d-converged/README.md", _t("(`/usr/bin/time`: ", None, " s user CPU, ", None, " GB peak memory)"),
          RUN1D_TIME, (("user_cpu_s",), ("max_rss_kb",)), ("{:.0f}", lambda v: f"{v / 1e6:.2f}")),
    Quote("docs/RESULTS.md", _t("(`log W = ", None, "` against `", None, "`), `n_needed_improvable = ", None, "`. The route fixed "
                                "before the data, `localised_train_linearised_bernstein`, certifies at `M = 2e5`: **`M_needed` = ",
                                None, ", ratio ", None, "**"), RUN1D,
          (("localised", "gap", "scan", "log_wealth"), ("localised", "gap", "scan", "threshold"),
           ("localised", "gap", "n_needed_improvable"), ("localised", "use", "M_needed"), ("localised", "use", "M_needed_ratio")),
          ("{:.1f}", "{:.1f}", "{}", "{:.0f}", "{:.1f}")),
    Quote("docs/RESULTS.md", _t("`localised_train_sure_bernstein` would need `M_needed` = ", None, " (ratio ", None,
                                "); the two Hoeffding routes `None` (their `M`-free `t_T(d_new)` = ", None, " and ", None,
                                " on `T` exceed the gains held at their measured values, ", None, ")"), RUN1D,
          (("localised", "gap", "routes", "localised_train_sure_bernstein", "M_needed"),
           ("localised", "gap", "routes", "localised_train_sure_bernstein", "ratio"),
           ("localised", "gap", "routes", "localised_train_sure_hoeffding", "reason", re.compile(r"t_T_d = ([\d.e-]+)")),
           ("localised", "gap", "routes", "localised_train_linearised_hoeffding", "reason", re.compile(r"t_T_d = ([\d.e-]+)")),
           ("localised", "inputs", "delta_train")), ("{:.0f}", "{:.0f}", "{:.3g}", "{:.3g}", "{:.3g}")),
    Quote("docs/RESULTS.md", _t("| cap `nu` (fixed on the signal sample) | ", None, " | | gain `Delta_train = R_S(f_old) - R_S(f_new)` | ",
                                None, " | | `U_S` (`E_U`, on `S` with constants fixed before `S`) | ", None,
                                " | | `t_T(d_new)` (Bernstein on `T`: reads `T`'s variance) | ", None,
                                " | | bound on `L_test(f_new)` vs `L_test(f_old)` = ", None, " | ", None, ": **certified by ", None,
                                "** | | observed `L_test` of the projected `f_new` the route certifies | ", None,
                                " | | realised gain of the trained block on `T` (`L_T_old - L_T_new`) | ", None,
                                " | | certified improvement / realised gain | **", None, "%** | | `heldout_paired` (on `T`, after `T` "
                                "is spent) | certified by ", None, " (", None, "% of the realised gain) | | Paper A's population / "
                                "direct routes | not certified (`2 eps_M` = ", None, ") |"), RUN1D,
          (("localised", "class", "nu"), ("localised", "inputs", "delta_train"),
           ("routes", "localised_train_linearised_bernstein", "values", "U_S"),
           ("routes", "localised_train_linearised_bernstein", "values", "t_T_d"), ("L_test_old",),
           ("routes", "localised_train_linearised_bernstein", "bound"),
           ("routes", "localised_train_linearised_bernstein", "improvement"),
           ("routes", "localised_train_linearised_bernstein", "observed"),
           ("routes", "localised_train_linearised_bernstein", "realised_gain"),
           ("routes", "localised_train_linearised_bernstein", "improvement_over_gain"),
           ("routes", "heldout_paired", "improvement"), ("routes", "heldout_paired", "improvement_over_gain"),
           ("eps_M", lambda v: 2 * v)),
          ("{:.3g}", short_e2, short_e2, short_e2, "{:.6g}", "{:.6g}", short_e2, "{:.6g}", short_e2, pct1, short_e2, pct1,
           "{:.3g}")),
    Quote("docs/RESULTS.md", _t("its Hoeffding twin `localised_train_linearised_hoeffding`, which reads only `T`'s size and the sure "
                                "range, does not certify (bound ", None, ")"), RUN1D,
          (("routes", "localised_train_linearised_hoeffding", "bound"),), "{:.6g}"),
    Quote("docs/RESULTS.md", _t("The certified step is ", None, "% of the loss and ", None, "% of what the trained block realises"),
          RUN1D, (("routes", "localised_train_linearised_bernstein", "improvement_over_loss", lambda v: 100 * v),
                  ("routes", "localised_train_linearised_bernstein", "improvement_over_gain")), ("{:.3g}", pct1)),
    # --- docs/large_models.md and docs/RESULTS.md: the real-size scans and the scaling (issue 38, benchmarks/bench_saturation.py)
    Quote("docs/large_models.md", _t("| GPT-2 small (124M parameters, 8 sequences of 256, batches of 4) | ", None, " MB | ", None,
                                     " MB (", None, "x) |"), RSCAN,
          (rs_("gpt2_small", "plain_peak_mb"), rs_("gpt2_small", "scan_extra_mem_mb"), rs_("gpt2_small", "scan_extra_mem_over_plain")),
          ("{:.0f}", "{:.0f}", "{:.2f}")),
    Quote("docs/large_models.md", _t("| ResNet-50 (25.6M parameters, 16 images 224x224, batches of 8) | ", None, " MB | ", None,
                                     " MB (", None, "x) |"), RSCAN,
          (rs_("resnet50", "plain_peak_mb"), rs_("resnet50", "scan_extra_mem_mb"), rs_("resnet50", "scan_extra_mem_over_plain")),
          ("{:.0f}", "{:.0f}", "{:.2f}")),
    Quote("docs/large_models.md", _t("before the fix and with glibc's default: ", None, "x for GPT-2 and ", None, "x for ResNet-50"),
          REAL, (rs_("gpt2_small", "scan_extra_mem_over_plain"), rs_("resnet50", "scan_extra_mem_over_plain")), "{:.2f}"),
    Quote("docs/large_models.md", _t("the whole call's extra memory ", None, "x for GPT-2, ", None, "x for ResNet-50"),
          REAL, (rs_("gpt2_small", "full_extra_mem_over_plain"), rs_("resnet50", "full_extra_mem_over_plain")), "{:.2f}"),
    Quote("docs/large_models.md", _t("has fitted exponent ", None, " from 256 to 4096 samples (one forward+backward: ", None,
                                     "): affine, ", None, " s fixed and ", None, " ms per sample against ", None,
                                     " ms per sample"), SCALE,
          (("results", "n", "scan_exponent"), ("results", "n", "plain_exponent"), ("results", "n", "scan_affine", 0),
           ("results", "n", "scan_affine", 1), ("results", "n", "plain_affine", 1)), ("{:.2f}", "{:.2f}", "{:.3f}", ms3, ms3)),
    Quote("docs/large_models.md", _t("Against the number of sites (1 to 12) the exponent is ", None, ", ", None,
                                     " ms per site (at most linear); against the width (32 to 256) ", None,
                                     " (a forward+backward: ", None, ")"), SCALE,
          (("results", "sites", "scan_exponent"), ("results", "sites", "scan_affine", 1), ("results", "width", "scan_exponent"),
           ("results", "width", "plain_exponent")), ("{:.2f}", lambda v: f"{1e3 * v:.1f}", "{:.2f}", "{:.2f}")),
    *(Quote("docs/large_models.md", _t(f"| {label}, 12 sites | ", None, " | ", None, f"x {scan} | ", None, "x FAIL | ", None, "x | ",
                                       None, "x |"), REAL,
            (rs_(case, "n"), rs_(case, "scan_over_plain"), rs_(case, "full_over_plain"), rs_(case, "auto_over_plain"),
             rs_(case, "verdict_only_over_plain")), ("{}", "{:.2f}", "{:.2f}", "{:.2f}", "{:.2f}"))
      for label, case, scan in (("GPT-2 small", "gpt2_small", "PASS"), ("ResNet-50", "resnet50", "FAIL"))),
    Quote("docs/large_models.md", _t("on its 6 probe sequences, ", None, "x; the memory rerun"), REAL,
          (rs_("gpt2_small", "verdict_only_over_plain"),), "{:.2f}"),
    Quote("docs/large_models.md", _t("the memory rerun measured the scan again at ", None, "x, and ResNet-50's at ", None, "x)"),
          RSCAN, (rs_("gpt2_small", "scan_over_plain"), rs_("resnet50", "scan_over_plain")), "{:.2f}"),
    Quote("docs/large_models.md", _t("**ResNet-50's scan misses its target** (", None, "x)"), REAL,
          (rs_("resnet50", "scan_over_plain"),), "{:.2f}"),
    Quote("docs/large_models.md", _t("**The whole call misses its target on both** (", None, "x and ", None, "x)"), REAL,
          (rs_("gpt2_small", "full_over_plain"), rs_("resnet50", "full_over_plain")), "{:.2f}"),
    Quote("docs/RESULTS.md", _t("n = ", None, " sequences of 256) and ResNet-50 (rebuilt from `torch.nn`, n = ", None,
                                " images 224x224), 12 sites each, one process per call, in process CPU time against one "
                                "forward+backward over the same samples: the scan ", None, "x (GPT-2, target <= 1.3: PASS) and ",
                                None, "x (ResNet-50: FAIL, the per-site float64 linear algebra of its 2048-channel sites); the "
                                "whole call ", None, "x and ", None, "x (target <= 2: FAIL;"), REAL,
          (rs_("gpt2_small", "n"), rs_("resnet50", "n"), rs_("gpt2_small", "scan_over_plain"), rs_("resnet50", "scan_over_plain"),
           rs_("gpt2_small", "full_over_plain"), rs_("resnet50", "full_over_plain")), ("{}", "{}", "{:.2f}", "{:.2f}", "{:.2f}", "{:.2f}")),
    Quote("docs/RESULTS.md", _t("rerun after the scan frees each batch before the next, ", None, "x and ", None,
                                "x the forward+backward's peak"), RSCAN,
          (rs_("gpt2_small", "scan_extra_mem_over_plain"), rs_("resnet50", "scan_extra_mem_over_plain")), "{:.2f}"),
    # the reruns: one stored file per network, so a passage naming both is checked as one row per number
    *(Quote("docs/large_models.md", _t(f"| {label}, 12 sites, rerun | ", None, " | ", None, f"x {scan} | ", None, "x FAIL | ", None,
                                       "x | ", None, "x |"), stored,
            (rs_(case, "n"), rs_(case, "scan_over_plain"), rs_(case, "full_over_plain"), rs_(case, "auto_over_plain"),
             rs_(case, "verdict_only_over_plain")), ("{}", "{:.2f}", "{:.2f}", "{:.2f}", "{:.2f}"))
      for label, case, scan, stored in (("GPT-2 small", "gpt2_small", "PASS", RGPT), ("ResNet-50", "resnet50", "FAIL", RRES))),
    Quote("docs/large_models.md", _t("(ResNet-50's forward+backward took ", None, " s of CPU in the first run,"), REAL,
          (rs_("resnet50", "plain_fwd_bwd_s"),), "{:.2f}"),
    Quote("docs/large_models.md", _t(" s of CPU in the first run, ", None, " s in its rerun)"), RRES,
          (rs_("resnet50", "plain_fwd_bwd_s"),), "{:.2f}"),
    Quote("docs/large_models.md", _t("(they all rank for `best_site`): ", None, "x and "), RGPT, (rs_("gpt2_small", "auto_over_plain"),),
          "{:.2f}"),
    Quote("docs/large_models.md", _t("(they all rank for `best_site`): ", NUMX, "x and ", None, "x in the rerun"), RRES,
          (rs_("resnet50", "auto_over_plain"),), "{:.2f}"),
    Quote("docs/large_models.md", _t("rerun, against the whole call's ", None, "x and "), RGPT, (rs_("gpt2_small", "full_over_plain"),),
          "{:.2f}"),
    Quote("docs/large_models.md", _t("against the whole call's ", NUMX, "x and ", None, "x, with the same verdict"), RRES,
          (rs_("resnet50", "full_over_plain"),), "{:.2f}"),
    Quote("docs/large_models.md", _t("grows; at these probe sizes it dominates. In the rerun (", None, "x) what remains"), RRES,
          (rs_("resnet50", "scan_over_plain"),), "{:.2f}"),
    Quote("docs/large_models.md", _t("suggest=False`: ", None, "x on GPT-2 small)"), RGPT, (rs_("gpt2_small", "verdict_only_over_plain"),),
          "{:.2f}"),
    Quote("docs/RESULTS.md", _t("`real_size_resnet50.json`): the scan ", None, "x and "), RGPT, (rs_("gpt2_small", "scan_over_plain"),),
          "{:.2f}"),
    Quote("docs/RESULTS.md", _t("`real_size_resnet50.json`): the scan ", NUMX, "x and ", None, "x, the whole call "), RRES,
          (rs_("resnet50", "scan_over_plain"),), "{:.2f}"),
    Quote("docs/RESULTS.md", _t("x, the whole call ", None, "x and ", NUMX, "x (FAIL: 24 descent"), RGPT,
          (rs_("gpt2_small", "full_over_plain"),), "{:.2f}"),
    Quote("docs/RESULTS.md", _t("x, the whole call ", NUMX, "x and ", None, "x (FAIL: 24 descent"), RRES,
          (rs_("resnet50", "full_over_plain"),), "{:.2f}"),
    Quote("docs/RESULTS.md", _t("a quarter or an eighth of these probes), `curvature=\"auto\"` ", None, "x and ", NUMX, "x."), RGPT,
          (rs_("gpt2_small", "auto_over_plain"),), "{:.2f}"),
    Quote("docs/RESULTS.md", _t("a quarter or an eighth of these probes), `curvature=\"auto\"` ", NUMX, "x and ", None, "x."), RRES,
          (rs_("resnet50", "auto_over_plain"),), "{:.2f}"),
    # the third runs (one file per network and probe size): the table, the probe-size bullet, the RESULTS sentence
    *(Quote("docs/large_models.md", _t(f"| {label} | ", None, " | ", None, f"x {scan} | ", None, "x FAIL | ", None, "x | ", None, "x |"),
            stored, (rs_(case, "n"), rs_(case, "scan_over_plain"), rs_(case, "full_over_plain"), rs_(case, "auto_over_plain"),
                     rs_(case, "verdict_only_over_plain")), ("{}", "{:.2f}", "{:.2f}", "{:.2f}", "{:.2f}"))
      for label, case, scan, stored in (("GPT-2 small, 12 sites, third run", "gpt2_small", "PASS", RGPT3),
                                        ("ResNet-50, 12 sites, third run", "resnet50", "FAIL", RRES3),
                                        ("ResNet-50, 12 sites, 128 images", "resnet50", "FAIL", RRES128))),
    Quote("docs/large_models.md", _t("eight times the forward+backward: the scan ", None, "x instead of ", NUMX, "x, the"), RRES128,
          (rs_("resnet50", "scan_over_plain"),), "{:.2f}"),
    Quote("docs/large_models.md", _t("x instead of ", None, "x, the scan alone through"), RRES3, (rs_("resnet50", "scan_over_plain"),),
          "{:.2f}"),
    Quote("docs/large_models.md", _t("scan alone through `dc.saturation` ", None, "x, the whole call ", None, "x and `curvature=\"auto\"` ",
                                     None, "x (third run). The scan's extra memory stays ", None, "x the forward+backward's peak"),
          RRES128, (rs_("resnet50", "verdict_only_over_plain"), rs_("resnet50", "full_over_plain"), rs_("resnet50", "auto_over_plain"),
                    rs_("resnet50", "scan_extra_mem_over_plain")), "{:.2f}"),
    Quote("docs/large_models.md", _t("(32 images here: ", None, "x)"), RRES128, (rs_("resnet50", "full_extra_mem_over_plain"),), "{:.2f}"),
    Quote("docs/RESULTS.md", _t("`real_size_resnet50_search.json`): the scan ", None, "x and ", NUMX, "x, the whole call ", None,
                                "x and ", NUMX, "x (FAIL), `curvature=\"auto\"` ", None, "x and"), RGPT3,
          (rs_("gpt2_small", "scan_over_plain"), rs_("gpt2_small", "full_over_plain"), rs_("gpt2_small", "auto_over_plain")), "{:.2f}"),
    Quote("docs/RESULTS.md", _t("`real_size_resnet50_search.json`): the scan ", NUMX, "x and ", None, "x, the whole call ", NUMX,
                                "x and ", None, "x (FAIL), `curvature=\"auto\"` ", NUMX, "x and ", None, "x; ResNet-50 with 128"),
          RRES3, (rs_("resnet50", "scan_over_plain"), rs_("resnet50", "full_over_plain"), rs_("resnet50", "auto_over_plain")), "{:.2f}"),
    Quote("docs/RESULTS.md", _t("`real_size_resnet50_n128.json`): the scan ", None, "x, the whole call ", None, "x, `curvature=\"auto\"` ",
                                None, "x (all three above their targets;"), RRES128,
          (rs_("resnet50", "scan_over_plain"), rs_("resnet50", "full_over_plain"), rs_("resnet50", "auto_over_plain")), "{:.2f}"),
    # the fourth run: ResNet-50 at 256 images in batches of 32, and its rerun of the scan (its own baseline)
    Quote("docs/large_models.md", _t("`real_size_resnet50_n256_b32_scan.json`): the scan ", None, "x and "), RRES256,
          (rs_("resnet50", "scan_over_plain"),), "{:.2f}"),
    Quote("docs/large_models.md", _t("the scan ", NUMX, "x and ", None, "x in the rerun (FAIL)"), RRES256S,
          (rs_("resnet50", "scan_over_plain"),), "{:.2f}"),
    Quote("docs/large_models.md", _t("x in the rerun (FAIL), the whole call ", None, "x (FAIL), `curvature=\"auto\"` ", None,
                                     "x (FAIL). The scan's extra memory is"), RRES256,
          (rs_("resnet50", "full_over_plain"), rs_("resnet50", "auto_over_plain")), "{:.2f}"),
    Quote("docs/large_models.md", _t("x (", None, "x in the rerun): PASS, at the limit."), RRES256S,
          (rs_("resnet50", "scan_extra_mem_over_plain"),), "{:.4f}"),
    Quote("docs/large_models.md", _t("suggest=False`: ", None, "x, "), RRES256, (rs_("resnet50", "verdict_only_over_plain"),), "{:.2f}"),
    Quote("docs/large_models.md", _t("suggest=False`: ", NUMX, "x, ", None, "x in the rerun) reads only"), RRES256S,
          (rs_("resnet50", "verdict_only_over_plain"),), "{:.2f}"),
    Quote("docs/large_models.md", _t("x in the rerun) reads only ", None, " of the ", None, " images"), RRES256,
          (rs_("resnet50", "n_probe"), rs_("resnet50", "n")), "{}"),
    Quote("docs/large_models.md", _t("The scan's extra memory is ", None, " MB against the forward+backward's peak of ", None, " MB, ",
                                     None, "x"), RRES256,
          (rs_("resnet50", "scan_extra_mem_mb"), rs_("resnet50", "plain_peak_mb"), rs_("resnet50", "scan_extra_mem_over_plain")),
          ("{:.0f}", "{:.0f}", "{:.4f}")),
    Quote("docs/large_models.md", _t("(at ", None, " images in batches of ", None, ": ", None, " MB against ", None, " MB, ", None, "x)"),
          RRES128, (rs_("resnet50", "n"),
                    ("results", "resnet50", "summary", "n", lambda v: __import__("benchmarks._real_size", fromlist=["CASES"]).CASES[
                        "resnet50"]["batch_size"]),   # the n128 run: the case's own batch
                    rs_("resnet50", "scan_extra_mem_mb"), rs_("resnet50", "plain_peak_mb"), rs_("resnet50", "scan_extra_mem_over_plain")),
          ("{}", "{}", "{:.0f}", "{:.0f}", "{:.2f}")),
    Quote("docs/RESULTS.md", _t("`real_size_resnet50_n256_b32.json`): the scan ", None, "x (FAIL), its extra memory ", None,
                                "x the forward+backward's peak (PASS), the whole call ", None, "x (FAIL)."), RRES256,
          (rs_("resnet50", "scan_over_plain"), rs_("resnet50", "scan_extra_mem_over_plain"), rs_("resnet50", "full_over_plain")),
          ("{:.2f}", "{:.4f}", "{:.2f}")),
    # --- docs/RESULTS.md: trial_insertion on MiniLM-L6 (benchmarks/bench_trial_minilm.py) and MiniLM's predicted study
    Quote("docs/RESULTS.md", _t("the best arm of the truth survived it in ", None, " of ", None, " seeds, and the"), TRIAL_MINILM,
          (("summary", "n_best_survived_first_rung"), ("summary", "n_seeds"))),
    Quote("docs/RESULTS.md", _t("realised gains at 20 steps with a median Spearman rho of ", None, " (stored as"), TRIAL_MINILM,
          (("summary", "first_rung", lambda fr: float(statistics.median(f["rho_first_rung_vs_truth"] for f in fr))),), "{:+.2f}"),
    Quote("docs/RESULTS.md", _t("over ", None, " seeds that redraw the documents (the fit, select and held-out samples come from "
                                "disjoint documents), and, as the truth, trains every arm the trial has (a block at each of the 6 "
                                "sites, the existing layer tuned, no change) for the full ", None, " steps"), TRIAL_MINILM,
          (("summary", "n_seeds"), ("config", "H"))),
    Quote("docs/RESULTS.md", _t("The chosen arm realised at least 90% of the best arm's held-out gain in ", None, " of ", None,
                                " seeds (95% Clopper–Pearson [", None, ", ", None, "]), at a cost of ", None,
                                " blocks' training (eta = ", None, ", a **Choice** fixed before the run): ") + "(PASS|FAIL)",
          TRIAL_MINILM, (("summary", "n_pass"), ("summary", "n_seeds"), ("summary", "rate_cp95", 0), ("summary", "rate_cp95", 1),
                         ("summary", "cost_ratio_max"), ("config", "eta"), ("summary", "verdict")),
          ("{}", "{}", "{:.2f}", "{:.2f}", "{:.2f}", "{}", "{}")),
    # --- docs/RESULTS.md: the full-budget diagnostic of the MiniLM trial (benchmarks/bench_trial_minilm_budget.py)
    Quote("docs/RESULTS.md", _t("trains every arm of the same seeds and samples for the full ", None, " steps, as the truth does (its "
                                "held-out gains equal the stored truth in ", None, " of ", None, " arms)"), FULL_BUDGET,
          (("config", "H"), ("summary", "n_arms_match_truth"), ("summary", "n_arms"))),
    Quote("docs/RESULTS.md", _t("A procedure that trains every arm to H (cost ", None, "x) and chooses on the select split passes in ",
                                None, "/", None, " seeds (95% Clopper–Pearson [", None, ", ", None, "]); the arms' select gains rank "
                                "them against their held-out gains with a median Spearman rho of ", None, "."), FULL_BUDGET,
          (("summary", "cost_ratio_mean"), ("summary", "n_pass"), ("summary", "n_seeds"), ("summary", "rate_cp95", 0),
           ("summary", "rate_cp95", 1), ("summary", "rho_median")), ("{:.0f}", "{}", "{}", "{:.2f}", "{:.2f}", "{:+.2f}")),
    Quote("docs/RESULTS.md", _t("judged by the same rule on its second half) passes in ", None, "/", None, "."), FULL_BUDGET,
          (("summary", "n_A_picks_B_judges"), ("summary", "n_seeds"))),
    # the second design (tune_survives, larger samples, fresh seeds)
    Quote("docs/RESULTS.md", _t("--tune-survives`; stored in [`docs/trial-minilm/tune_survives/`](trial-minilm/tune_survives/README.md)). "
                                "The chosen arm realised at least 90% of the best arm's held-out gain in ", None, " of ", None,
                                " seeds (95% Clopper–Pearson [", None, ", ", None, "]) at a cost of ", None, " blocks' training: ")
          + "(PASS|FAIL)", TRIAL_TS,
          (("summary", "n_pass"), ("summary", "n_seeds"), ("summary", "rate_cp95", 0), ("summary", "rate_cp95", 1),
           ("summary", "cost_ratio_max"), ("summary", "verdict")), ("{}", "{}", "{:.2f}", "{:.2f}", "{:.2f}", "{}")),
    Quote("docs/RESULTS.md", _t("In ", None, " of the ", None, " failing seeds the tuned layer decided it: chosen on the select "
                                "sample and below 0 on the held-out one, or the best arm on the held-out sample and not chosen"),
          TRIAL_TS,
          (("rows", lambda rows: sum(not r["passes"] and ((r["chosen_kind"] == "tune" and r["chosen_realised_gain"] < 0)
                                                          or (r["best_arm"].startswith("tune@") and r["chosen"] != r["best_arm"]))
                                     for r in rows)), ("rows", lambda rows: sum(not r["passes"] for r in rows)))),
    Quote("docs/RESULTS.md", _t("so this run uses seeds ", None, " to ", None, ", which nothing"), TRIAL_TS,
          (("seeds", 0), ("seeds", -1))),
    Quote("docs/RESULTS.md", _t("--first-seed 20 --n-select ", None, " --n-heldout ", None, " --select-roles"), TRIAL_TS,
          (("config", "N", "select"), ("config", "N", "heldout"))),
    Quote("docs/RESULTS.md", _t("The truth's best arm was a block in ", None, " of ", None, " seeds, and that block survived the first "
                                "rung in ", None, " of them (the tuned layer survives it by design); the first-rung select gains rank "
                                "the arms against their realised gains with a median Spearman rho of ", None, "."),
          TRIAL_TS, (("rows", lambda rows: sum(r["best_arm"].startswith("block@") for r in rows)), ("summary", "n_seeds"),
                     ("rows", lambda rows: sum(r["best_arm"].startswith("block@") and _reached_last_rung(r, r["best_arm"]) for r in rows)),
                     ("summary", "first_rung", lambda fr: float(statistics.median(f["rho_first_rung_vs_truth"] for f in fr)))),
          ("{}", "{}", "{}", "{:+.2f}")),
    Quote("docs/RESULTS.md", _t("was the tuned layer, which realised less than half of the best arm's held-out gain; in the other ", None,
                                " a block was chosen over a better block."), TRIAL_PD,
          (("rows", lambda rows: sum(not r["passes"] and r["chosen_kind"] == "block" and r["best_arm"].startswith("block@")
                                     for r in rows)),)),
    # the third design (per-document cap, fresh seeds)
    Quote("docs/RESULTS.md", _t("A third design on seeds ", None, " to ", None, " (**Choice**"), TRIAL_PD, (("seeds", 0), ("seeds", -1))),
    Quote("docs/RESULTS.md", _t("with at most ", None, " sequences of each document in the select and held-out samples"), TRIAL_PD,
          (("config", "per_doc"),)),
    Quote("docs/RESULTS.md", _t("make up most of a sample), ", None, " and ", None, " sequences"), TRIAL_PD,
          (("config", "N", "select"), ("config", "N", "heldout"))),
    Quote("docs/RESULTS.md", _t("(trial-minilm/per_doc/README.md)): ", None, " of ", None, " seeds (95% Clopper–Pearson [", None, ", ", None,
                                "]) at ", None, " blocks' training: ") + "(PASS|FAIL)", TRIAL_PD,
          (("summary", "n_pass"), ("summary", "n_seeds"), ("summary", "rate_cp95", 0), ("summary", "rate_cp95", 1),
           ("summary", "cost_ratio_max"), ("summary", "verdict")), ("{}", "{}", "{:.2f}", "{:.2f}", "{:.2f}", "{}")),
    Quote("docs/RESULTS.md", _t("In ", None, " of its ", None, " failing seeds the chosen arm was the tuned layer, which realised less "
                                "than half of the best arm's held-out gain"), TRIAL_PD,
          (("rows", lambda rows: sum(not r["passes"] and r["chosen_kind"] == "tune" and r["chosen_realised_gain"] < 0.5 * r["best_realised_gain"]
                                     for r in rows)), ("rows", lambda rows: sum(not r["passes"] for r in rows)))),
    # the fourth design (the larger corpus, 20 seeds)
    Quote("docs/RESULTS.md", _t("the IDE left out; ", None, " documents), with ", None, " fit sequences (no sequence seen twice in the ",
                                None, " steps), at most ", None, " sequences of each document"), TRIAL_SL,
          (("summary", "corpus_documents"), ("config", "N", "fit"), ("config", "H"), ("config", "per_doc"))),
    Quote("docs/RESULTS.md", _t("held-out samples, ", None, " select sequences of the probe and signal documents and ", None,
                                " held-out of T"), TRIAL_SL, (("config", "N", "select"), ("config", "N", "heldout"))),
    Quote("docs/RESULTS.md", _t("--seeds ", None, " --out docs/trial-minilm/stdlib --first-seed ", None, " --n-fit ", None,
                                " --n-select ", None, " --n-heldout ", None, " --select-roles probe,signal --tune-survives --per-doc ",
                                None, " --corpus stdlib"), TRIAL_SL,
          (("summary", "n_seeds"), ("seeds", 0), ("config", "N", "fit"), ("config", "N", "select"), ("config", "N", "heldout"),
           ("config", "per_doc"))),
    Quote("docs/RESULTS.md", _t("The run was started as ", None, " seeds (", None, " to ", None, "); after the outcomes of seeds ", None,
                                " and ", None, " (both passes) and before any other, it was extended to ", None, ", the first ", None,
                                " seeds from ", None, " on"), TRIAL_SL_PROTO,
          (("planned_seeds",), ("planned_seed_range", 0), ("planned_seed_range", 1),
           ("outcomes_seen_when_extended", lambda o: sorted(map(int, o))[0]),
           ("outcomes_seen_when_extended", lambda o: sorted(map(int, o))[1]), ("extended_to_seeds",), ("extended_to_seeds",),
           ("seed_rule", re.compile(r"from (\d+) on"), int))),
    Quote("docs/RESULTS.md", _t("(a rule fixed before their outcomes; ", None, " seeds were skipped"), TRIAL_SL,
          (("summary", "skipped_seeds", len),)),
    Quote("docs/RESULTS.md", _t("held-out gain in ", None, " of ", None, " seeds (95% Clopper–Pearson [", None, ", ", None,
                                "]) at a cost of ", None, " blocks' training: ") + "(PASS|FAIL)" + _t(". As started, the run would have "
                                "passed: its first ", None, " seeds alone pass in ", None, " of ", None, " (the acceptance's ", None,
                                "%)"), TRIAL_SL,
          (("summary", "n_pass"), ("summary", "n_seeds"), ("summary", "rate_cp95", 0), ("summary", "rate_cp95", 1),
           ("summary", "cost_ratio_max"), ("summary", "verdict"), ("rows", lambda rows: sum(r["seed"] < 50 for r in rows)),
           ("rows", lambda rows: sum(r["passes"] for r in rows if r["seed"] < 50)),
           ("rows", lambda rows: sum(r["seed"] < 50 for r in rows)), ("summary", "rule", re.compile(r"rate >= ([\d.]+)"),
                                                                        lambda v: 100 * float(v))),
          ("{}", "{}", "{:.2f}", "{:.2f}", "{:.2f}", "{}", "{}", "{}", "{}", "{:.0f}")),
    Quote("docs/RESULTS.md", _t("the standard library of the Python that ran it (", None, ", recorded in `results.json`)"),
          TRIAL_SL, (("versions", "python"),)),
    Quote("docs/RESULTS.md", _t("In all ", None, " failing seeds the best arm was a block"), TRIAL_SL,
          (("rows", lambda rows: sum(not r["passes"] for r in rows)),)),
    Quote("docs/RESULTS.md", _t("in ", None, " of them the first rung (after ", None, " of the ", None, " steps, where one block"),
          TRIAL_SL, (("rows", _lost_at_first_rung), ("rows", 0, "rungs", 0), ("config", "H"))),
    Quote("docs/RESULTS.md", _t("realised gains with a median Spearman rho of ", None, " here."), TRIAL_SL,
          (("summary", "first_rung", lambda fr: float(statistics.median(f["rho_first_rung_vs_truth"] for f in fr))),), "{:+.2f}"),
    Quote("docs/RESULTS.md", _t("its held-out gains equal the stored truth in ", None, " of ", None, " arms): training every arm to H (cost ",
                                None, "x) and choosing on the select split passes in ", None, "/", None, " seeds (95% Clopper–Pearson [",
                                None, ", ", None, "]); the arms' select gains rank them against their held-out gains with a median "
                                "Spearman rho of ", None, "; the held-out sample judged against its own other half passes in ", None,
                                "/", None, "."), TRIAL_SL_FB,
          (("summary", "n_arms_match_truth"), ("summary", "n_arms"), ("summary", "cost_ratio_mean"), ("summary", "n_pass"),
           ("summary", "n_seeds"), ("summary", "rate_cp95", 0), ("summary", "rate_cp95", 1), ("summary", "rho_median"),
           ("summary", "n_A_picks_B_judges"), ("summary", "n_seeds")),
          ("{}", "{}", "{:.0f}", "{}", "{}", "{:.2f}", "{:.2f}", "{:+.2f}", "{}", "{}")),
    Quote("docs/RESULTS.md", _t("made early: with ", None, " arms, a cost of at most "), TRIAL_SL,
          (("rows", 0, "arms", lambda arms: sum(a["steps_trained"] > 0 for a in arms)),)),
    # the fifth design (prefer_earlier, fresh seeds)
    Quote("docs/RESULTS.md", _t("`prefer_earlier=", None, "`, fitted to this network) passes in ", None, " of ", None, " seeds at ", None,
                                " blocks' training."), TRIAL_SE,
          (("config", "trial_kwargs", "prefer_earlier"), ("summary", "n_pass"), ("summary", "n_seeds"), ("summary", "cost_ratio_max")),
          ("{}", "{}", "{}", "{:.2f}")),
    Quote("docs/RESULTS.md", _t("the fourth with `prefer_earlier=", None, "`, so that"), TRIAL_SE_DESIGN, (("prefer_earlier",),)),
    Quote("docs/RESULTS.md", _t("python benchmarks/_trial_design.py --prefer-earlier ", None, " --out"), TRIAL_SE_DESIGN, (("prefer_earlier",),)),
    Quote("docs/RESULTS.md", _t("every seed, ", None, " of ", None, " passes). On those ", None, " design seeds it passes in ", None,
                                ", as does every ratio from ", None, " to ", None, " in the stored sweep"), TRIAL_SE_DESIGN,
          (("sweep", 0, "n_pass"), ("n_seeds",), ("n_seeds",), ("n_pass",), (lambda d: _plateau(d)[0],), (lambda d: _plateau(d)[1],))),
    Quote("docs/RESULTS.md", _t("after the first rung was at least ", None, " of the best block's in every seed"), TRIAL_SE_DESIGN,
          (("earliest_over_best_first_rung", "min"),), "{:.3f}"),
    Quote("docs/RESULTS.md", _t("protocol.json`: ", None, " fresh seeds, the first from ", None, " on"), TRIAL_SE_PROTO,
          (("planned_seeds",), ("first_seed",))),
    Quote("docs/RESULTS.md", _t("--seeds ", None, " --out docs/trial-minilm/stdlib_earlier --first-seed ", None, " --n-fit ", None,
                                " --n-select ", None, " --n-heldout ", None, " --select-roles probe,signal --tune-survives --prefer-earlier ",
                                None, " --per-doc ", None, " --corpus stdlib"), TRIAL_SE,
          (("summary", "n_seeds"), ("seeds", 0), ("config", "N", "fit"), ("config", "N", "select"), ("config", "N", "heldout"),
           ("config", "trial_kwargs", "prefer_earlier"), ("config", "per_doc"))),
    Quote("docs/RESULTS.md", _t("README.md); ", None, " seed skipped for too few sequences)"), TRIAL_SE, (("summary", "skipped_seeds", len),)),
    Quote("docs/RESULTS.md", _t("held-out gain in ", None, " of ", None, " seeds (95% Clopper–Pearson [", None, ", ", None,
                                "]) at a cost of ", None, " blocks' training: ") + "(PASS|FAIL)" + _t(". This is the fifth design"), TRIAL_SE,
          (("summary", "n_pass"), ("summary", "n_seeds"), ("summary", "rate_cp95", 0), ("summary", "rate_cp95", 1),
           ("summary", "cost_ratio_max"), ("summary", "verdict")), ("{}", "{}", "{:.2f}", "{:.2f}", "{:.2f}", "{}")),
    Quote("docs/RESULTS.md", _t("level 0.05 split over the five (0.01 each), the interval is [", None, ", ", None, "]"), TRIAL_SE,
          (("summary", _cp(0.01), lambda v: v[0]), ("summary", _cp(0.01), lambda v: v[1])), "{:.2f}"),
    Quote("docs/RESULTS.md", _t("first rung in ", None, " of ", None, " seeds; in the other"), TRIAL_SE,
          (("rows", lambda rows: sum(any(a["arm"] == "block@encoder.layer.0" and a["eliminated_at"] is None for a in r["arms"])
                                     for r in rows)), ("summary", "n_seeds"))),
    Quote("docs/RESULTS.md", _t("On MiniLM-L6 over ", None, " seeds, `predicted_gain` (the score `best_site` is ranked by) has "
                                "Spearman rho ", None, " (one-sided exact p ", None, ") at horizon 0, ", None, " (p ", None,
                                ") at 1, ", None, " (p ", None, ") at 10 and ", None, " (p ", None, ") at 40"), PRED_MINILM,
          (("config", "seeds", len), *(mcal(h, "predicted_gain", k) for h in (0, 1, 10, 40) for k in ("rho", "p_one_sided"))),
          ("{}", *(f for _ in range(4) for f in ("{:+.2f}", "{:.3g}")))),
)


def lookup(data: Any, path: tuple) -> Any:
    """The value at ``path`` (keys, indices, callables, regexes: the module docstring)."""
    v = data
    for step in path:
        if isinstance(step, re.Pattern):
            m = step.search(str(v))
            if m is None:
                raise KeyError(f"{step.pattern!r} not in {str(v)[:80]!r}")
            v = float(m.group(1))
        elif callable(step):
            v = step(v)
        else:
            v = v[step]
    return v


def _render(value: Any, fmt: Any) -> str:
    return fmt(value) if callable(fmt) else fmt.format(value)


def quote_problems(quote: Quote, pages: Path = ROOT, stored: Path = ROOT) -> list[str]:
    """What is wrong with one row: its passage missing from the page, a key missing from the file, or a quoted number
    that is not the stored value as the page renders it."""
    page = " ".join((pages / quote.page).read_text().split())
    m = re.search(quote.text, page)
    if m is None:
        return [f"{quote.page}: passage not found: {quote.text[:100]}"]
    if len(m.groups()) != len(quote.paths):
        return [f"{quote.page}: {len(m.groups())} numbers quoted, {len(quote.paths)} paths given"]
    data = json.loads((stored / quote.file).read_text())
    out = []
    for got, path, fmt in zip(m.groups(), quote.paths, quote.fmts()):
        try:
            want = _render(lookup(data, path), fmt)
        except (KeyError, IndexError, TypeError) as exc:
            out.append(f"{quote.file}: {path}: {exc}")
            continue
        if got != want:
            out.append(f"{quote.page}: quotes {got} where {quote.file} {_path_text(path)} gives {want}")
    return out


def _path_text(path: tuple) -> str:
    return ".".join(getattr(s, "pattern", None) or getattr(s, "__name__", None) or str(s) for s in path)


def _id(q: Quote) -> str:
    return f"{q.page}:" + re.sub(r"\W+", "_", q.text.replace("\\", ""))[:40]


@pytest.mark.parametrize("quote", QUOTES, ids=_id)
def test_every_quoted_number_is_its_stored_value(quote):
    assert quote_problems(quote) == []


def _plant(text: str, quote: Quote) -> str:
    """``text`` with the first quoted number of ``quote``'s passage changed (its last digit + 1, mod 10)."""
    flat = " ".join(text.split())
    m = re.search(quote.text, flat)
    g = next(k for k in range(1, len(m.groups()) + 1) if any(ch.isdigit() for ch in m.group(k)))
    got = m.group(g)
    i = max(k for k, ch in enumerate(got) if ch.isdigit())
    wrong = got[:i] + str((int(got[i]) + 1) % 10) + got[i + 1:]
    return flat[:m.start(g)] + wrong + flat[m.end(g):]


@pytest.mark.parametrize("quote", QUOTES, ids=_id)
def test_a_planted_wrong_number_fails(tmp_path, quote):
    """A copy of the page with one quoted number changed must fail its row; the copy unchanged passes."""
    copy = tmp_path / quote.page
    copy.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(ROOT / quote.page, copy)
    assert quote_problems(quote, pages=tmp_path) == []
    copy.write_text(_plant(copy.read_text(), quote))
    found = quote_problems(quote, pages=tmp_path)
    assert len(found) == 1 and "quotes" in found[0], found


#: The passages as main had them before issue 34 (the five numbers typed wrongly), each with its corrected form.
ISSUE_34 = (
    ("docs/RESULTS.md", "is sure (112.9 through the head's LayerNorm", "is sure (119 through the head's LayerNorm"),
    ("docs/RESULTS.md", "* **One weakened guarantee is flagged** (power; Holm over the 29 power tests, "
                        "`power_family_wise.rejected`):",
     "* **Weakened guarantees are flagged** (power; Holm over the 29 power tests):"),
    ("README.md", "(Clopper–Pearson [47.8%, 100%]: too few draws to resolve a rate); over 30 held-out seeds at the full "
                  "sample, 29 of 30",
     "(Clopper–Pearson [47.8%, 100%]: too few draws to resolve a rate; the 30-seed rate is not yet measured) 29 of 30"),
    ("README.md", "(permutation nulls 0.016, 0.090, 0.534)", "(permutation nulls 0.015, 0.088, 0.534)"),
    # the passage that quoted "82 min" (stored 3680 s) was rewritten when the 30-seed study was re-run; its timing now:
    ("docs/RESULTS.md", "shared with other jobs, 149.3 s per draw (median)", "shared with other jobs, 74.5 s per draw (median)"),
)


@pytest.mark.parametrize("page,now,was", ISSUE_34, ids=[w[:30] for _, _, w in ISSUE_34])
def test_the_mismatches_of_issue_34_are_caught(tmp_path, page, now, was):
    """Each of the issue's five wrong numbers, planted back into a copy of its page: some row of that page fails."""
    text = " ".join((ROOT / page).read_text().split())
    assert now in text
    copy = tmp_path / page
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_text(text.replace(now, was))
    rows = [q for q in QUOTES if q.page == page]
    assert any(quote_problems(q, pages=tmp_path) for q in rows)


def test_lookup_steps():
    data = {"a": [{"id": "x1", "v": 1.5}, {"id": "y", "note": "null 0.25 here"}]}
    assert lookup(data, ("a", where("id", "x"), "v")) == 1.5
    assert lookup(data, ("a", 1, "note", re.compile(r"null ([\d.]+)"))) == 0.25
    assert lookup(data, ("a", len)) == 2
    with pytest.raises(KeyError):
        lookup(data, ("a", where("id", "z")))
