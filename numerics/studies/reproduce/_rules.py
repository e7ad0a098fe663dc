"""The decision rules of the reproduce registry (:mod:`numerics.studies.reproduce._claims`): interval rules, the
composite rebound / plateau / validity rules, the conventions' own rules and the sweep of a Choice threshold over
the range a reader may hold."""
from __future__ import annotations

import dataclasses
import math
from typing import Mapping

__all__ = ["CONVENTION_RULES", "OTHER_SETUP", "PRESET_VERDICTS", "VERDICTS", "Rule", "convention_rule", "summarise",
           "threshold_sweep", "validity_power_note"]

#: The verdict of a claim measured outside the seed's setup (``Claim.seed_setup`` False): whatever its rule says
#: on this measurement (kept beside it), it is never counted as a reproduction.
OTHER_SETUP = "not the seed's setup"
VERDICTS = ("reproduced", "not reproduced", "inconclusive", "not run", "convention-dependent", OTHER_SETUP)
#: The only verdicts a study may preset on a convention (an estimate that could not be resolved, a statistic
#: not defined on this data): never "reproduced" or "not reproduced", which only a rule gives.
PRESET_VERDICTS = ("inconclusive", "not run")


@dataclasses.dataclass(frozen=True)
class Rule:
    """Interval rule: reproduced if the interval lies on the claimed side of ``threshold``;
    not reproduced if it lies on the other side of ``against`` (default: ``threshold``);
    inconclusive otherwise. ``kind`` is ``"above"``, ``"below"``, ``"within"`` (reproduced if
    the interval lies in ``[-threshold, threshold]``, not reproduced if it lies wholly outside
    it on one side), ``"agreement"`` (the scaling study's exponent rule), ``"rebound"`` or
    ``"plateau"`` (composite tests in ``details["tests"]``). Every ``not reproduced`` needs a
    significant effect against the claim; an effect not detected is ``inconclusive``."""

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
        if self.kind == "plateau":
            return _plateau_verdict(evidence["details"]["tests"], self.threshold)
        if self.kind == "validity":
            return _validity_verdict(Rule("below", self.threshold).decide(evidence), evidence.get("details", {}))
        lo, hi = evidence["interval"]
        if not (math.isfinite(lo) and math.isfinite(hi)):
            return "inconclusive"
        if self.kind == "within":
            t = self.threshold
            return "reproduced" if -t <= lo and hi <= t else "not reproduced" if lo > t or hi < -t else "inconclusive"
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
                    "depth-only curve at this width rebounds (some shallower depth significantly below the deepest, "
                    "one-sided paired t-tests, Bonferroni at 0.05); not reproduced: the joint path gets significantly "
                    "worse, or the depth-only curve is significantly monotone (every depth step significantly lowers "
                    "the loss, Bonferroni at 0.05); inconclusive: otherwise (no rebound detected is not evidence "
                    "against one)")
        if self.kind == "plateau":
            bound = f"{self.threshold:g}" if self.threshold > 0 else "0.5"
            return ("reproduced: log AG_max falls over the first three depths (95% interval of its slope against "
                    f"log D below 0) AND flattens: the 95% interval of |late/early slope| (last vs first three depths) "
                    f"lies below {bound} (**Choice**) on the log scale (a plateau at a level) OR on the linear scale "
                    "(AG_max itself: a plateau approaching zero, e.g. a power-law decay, whose late fall per unit depth "
                    "is a small part of its early fall); under the seed's-level convention instead: the 95% interval "
                    "of AG_max at the deepest depth lies below the seed's 5e-3; not reproduced: it rises significantly "
                    "over the first depths (slope interval above 0), against 'decreases quickly in the early stages' "
                    "(seed's-level convention: or its deepest level lies significantly above 5e-3); inconclusive: "
                    "otherwise (a curve still falling at the deepest depth run is not evidence against a plateau "
                    "further on)")
        if self.kind == "validity":
            return ("reproduced: no route or event significantly violated (one-sided exact test at 0.05) AND power "
                    "shown for every event the routes rest on (a deliberately weakened version of it flagged by the "
                    "same test); not reproduced: some route or event significantly violated; inconclusive: otherwise "
                    "('no power shown': 0 violations of a guarantee the check could not have caught are no evidence)")
        if self.kind == "within":
            return (f"reproduced: the {confidence:.0%} interval lies in [-{self.threshold:g}, {self.threshold:g}]; "
                    f"not reproduced: it lies wholly above {self.threshold:g} or below -{self.threshold:g}; "
                    "inconclusive: otherwise")
        side, other = ("above", "below") if self.kind == "above" else ("below", "above")
        against = self.threshold if self.against is None else self.against
        return (f"reproduced: the {confidence:.0%} interval lies {side} {self.threshold:.4g}; not reproduced: it lies "
                f"{other} {against:.4g}; inconclusive: otherwise")


def _rebound_verdict(t: Mapping) -> str:
    if t["joint_improves"] and t["rebound"]:
        return "reproduced"
    if t["joint_worsens"] or t.get("depth_alone_monotone", False):
        return "not reproduced"
    return "inconclusive"


def _plateau_verdict(t: Mapping, bound: float = 0.0) -> str:
    """``bound > 0`` and ``t["flat_upper"]`` (the smaller upper end of the log- and linear-scale ``|late/early|``
    intervals): flat iff ``flat_upper < bound``; else the stored booleans (``flat`` or ``flat_linear``). The
    seed's-level convention (``"near_zero"`` in ``t``) is decided by its level instead of the slope ratio."""
    if "near_zero" in t:
        if t["early_drop"] and t["near_zero"]:
            return "reproduced"
        return "not reproduced" if t["early_rise"] or t.get("above_level", False) else "inconclusive"
    flat = t["flat_upper"] < bound if bound > 0 and "flat_upper" in t else t["flat"] or t.get("flat_linear", False)
    if t["early_drop"] and flat:
        return "reproduced"
    return "not reproduced" if t["early_rise"] else "inconclusive"


def _validity_verdict(count_verdict: str, details: Mapping) -> str:
    """``count_verdict``: the count rule on the number of significantly violated routes and events (``below``
    the threshold 0.5: none); ``details["significant"]``: their names; ``details["unpowered"]``: the events (and
    the routes resting on them) for which no weakened guarantee was flagged. A significant violation is 'not
    reproduced' whatever the power; 'reproduced' needs ``unpowered`` present and empty: without it (a study or a
    stored report that shows no power per guarantee) nothing is shown, inconclusive."""
    if details.get("significant") or count_verdict == "not reproduced":
        return "not reproduced"
    if count_verdict == "reproduced" and details.get("unpowered") is not None and not details["unpowered"]:
        return "reproduced"
    return "inconclusive"


def validity_power_note(details: Mapping) -> str:
    """The bound-validity claim's power, in words (appended to its measured line)."""
    if details.get("significant"):
        return ""
    unpowered = details.get("unpowered")
    if unpowered is None:
        return ("; no power shown: the evidence names no event whose weakened version was flagged per route "
                "(a flagged weakening of one event shows nothing about the others), so 0 violations are not "
                "evidence: inconclusive")
    if unpowered:
        return "; no power shown for " + ", ".join(unpowered) + ": inconclusive"
    return "; power shown for every event the routes rest on"


def summarise(verdicts) -> str:
    """A claim's verdict from its conventions': the common one, ``convention-dependent`` when they differ
    (the conventions' own verdicts say which), ``not run`` when none was decided."""
    decided = {v for v in verdicts if v != "not run"}
    if not decided:
        return "not run"
    return decided.pop() if len(decided) == 1 else "convention-dependent"


#: The rule kinds a convention may name for itself (``"rule": {"kind": ..., "threshold": ...}``).
CONVENTION_RULES = ("above", "below", "within")


def convention_rule(convention: Mapping, default: Rule | None = None) -> Rule:
    """The rule that decides a convention: its own interval rule (``"rule"``) if it names one, else ``default``.

    Raises:
        ValueError: the named kind is not in :data:`CONVENTION_RULES`, or there is neither rule.
    """
    own = convention.get("rule")
    if own is None:
        if default is None:
            raise ValueError(f"convention {convention['convention']!r} names no rule and the claim gives none")
        return default
    if own.get("kind") not in CONVENTION_RULES:
        raise ValueError(f"convention {convention['convention']!r} names rule kind {own.get('kind')!r}: "
                         f"allowed {', '.join(CONVENTION_RULES)}")
    return Rule(own["kind"], float(own.get("threshold", 0.0)),
                None if own.get("against") is None else float(own["against"]))


def _verdict_at(rule: Rule, evidence: Mapping, threshold: float) -> str:
    return dataclasses.replace(rule, threshold=threshold).decide(evidence)


def threshold_sweep(rule: Rule, evidence: Mapping, lo: float, hi: float) -> list[tuple[float, float, str]]:
    """The rule's verdict on ``evidence`` as its threshold runs over ``[lo, hi]``: ``[(from, to, verdict)]``, one
    piece per verdict (adjacent pieces differ; their common end is the threshold at which the verdict flips).

    The verdict of an interval rule changes only where the threshold crosses an end of the interval (or its
    negative, ``within``), and a plateau rule's only where it crosses ``tests["flat_upper"]``: the pieces are cut
    there and each is decided at its midpoint (and at ``lo``, ``hi``)."""
    cuts = set()
    if "interval" in evidence:
        cuts |= {float(x) for x in evidence["interval"] if math.isfinite(float(x))}
        cuts |= {-c for c in cuts}
    t = evidence.get("details", {}).get("tests", {})
    if isinstance(t, Mapping) and "flat_upper" in t and math.isfinite(float(t["flat_upper"])):
        cuts.add(float(t["flat_upper"]))
    points = [lo, *sorted(c for c in cuts if lo < c < hi), hi]
    pieces: list[tuple[float, float, str]] = []
    for a, b in zip(points[:-1], points[1:]):
        v = _verdict_at(rule, evidence, (a + b) / 2)
        if pieces and pieces[-1][2] == v:
            pieces[-1] = (pieces[-1][0], b, v)
        else:
            pieces.append((a, b, v))
    for end, i in ((lo, 0), (hi, -1)):   # the range's own ends (a closed range: a verdict at an end counts)
        v = _verdict_at(rule, evidence, end)
        if v != pieces[i][2]:
            pieces.insert(0 if i == 0 else len(pieces), (end, end, v))
    return pieces


def _sweep_text(pieces, choice: float) -> str:
    return ("verdict by threshold: " + "; ".join(f"{v} for {a:.4g} to {b:.4g}" if a != b else f"{v} at {a:.4g}"
                                                 for a, b, v in pieces)
            + f" (flips at {', '.join(f'{b:.4g}' for (_, b, _) in pieces[:-1])}; Choice {choice:.4g})")
