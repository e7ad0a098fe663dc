"""The MiniLM numbers that README.md and docs/RESULTS.md quote are read from the stored study.

File: ``docs/reproduce-pretrained/study.json`` (made by ``depthcert study pretrained --out DIR``). Keys:
``rank_correlations`` (every score the scan computes, ``predicted_gain`` -- the one ``best_site`` uses --
first: ``rho``, ``p_one_sided``, ``p_two_sided``, ``interval``, ``n_seeds``), ``best_site_realised_rank``,
``arms`` (``heldout_loss``, ``paired_interval``, ``trained_parameters``), ``scan_cost``, ``certificate``,
``wall_s``. Each quoted number is rendered here from the file in the page's own format and must be on
the page; the wording follows the p-values ("no evidence that the ranking predicts" above the level).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STUDY = ROOT / "docs" / "reproduce-pretrained" / "study.json"
PAGES = {"README.md": ROOT / "README.md", "docs/RESULTS.md": ROOT / "docs" / "RESULTS.md"}
#: where each page's MiniLM text begins
ANCHORS = {"README.md": "all-MiniLM-L6-v2 from the `pretrained` extra", "docs/RESULTS.md": "## A pretrained post-LN transformer: MiniLM-L6"}
NO_EVIDENCE = "no evidence that the ranking predicts"
#: wordings of an association that a p-value above the level does not support
TOO_STRONG = re.compile(r"predicts? (?:the realised gains )?only weakly|weak positive association", re.I)


def _iv(iv) -> str:
    return "—" if iv is None else f"[{iv[0]:+.2f}, {iv[1]:+.2f}]"


def quotes(study: dict) -> dict[str, list[str]]:
    """Per page, the strings it must hold, each rendered from ``study``."""
    rcs = study["rank_correlations"]
    pg = rcs[0]
    assert pg["score"] == "predicted_gain", "the score that picks best_site comes first"
    n, k = pg["n_seeds"], pg["n_sites"]
    head = (f"`predicted_gain`, the score that picks `best_site`: Spearman **{pg['rho']:+.2f}** (one-sided exact "
            f"permutation p = {pg['p_one_sided']:.2f} over the {pg['n_permutations']} pairings of the {k} sites; "
            f"per-seed rho {_iv(pg['interval'])} over {n} seeds)")
    rows = [f"| `{r['score']}`{' (picks `best_site`)' if r is pg else ''} | {r['rho']:+.2f} | {r['p_one_sided']:.3f} | "
            f"{r['p_two_sided']:.3f} | {_iv(r['interval'])} |" for r in rcs if r.get("rho") is not None]
    pick = ", ".join(map(str, study["best_site_realised_rank"]["per_seed"]))
    arms = []
    for a in study["arms"]:
        iv = a["paired_interval"]
        cell = (f"{iv['mean']:+.4f} [{iv['interval'][0]:+.4f}, {iv['interval'][1]:+.4f}]"
                if a["name"] != "e_nothing_trained" else "0")
        arms.append(f"| {a['heldout_loss']:.4f} | {cell} | {a['trained_parameters']:,} |")
    cost, cert = study["scan_cost"], study["certificate"]
    held = cert["heldout_paired"]
    results = [head, *rows, f"ranks {pick}", *arms, f"**{study['wall_s'] / 60:.1f} min**",
               f"{cost['scan_s']:.1f} s = **{cost['ratio']:.2f}x**", f"{n} seeds",
               f"`L_test(f_old)` = {cert['L_test_old']:.3f}", f"({cert['constants']['B']:.1f} through the head's LayerNorm",
               f"of {held['mean_T']:+.4f}", f"upper bound is {held['t']['bound']:+.4f}"]
    return {"README.md": [head, f"{cost['ratio']:.1f}x one forward+backward"], "docs/RESULTS.md": results}


def mismatches(texts: dict[str, str], study: dict) -> list[str]:
    """Every quoted string missing from its page, and every wording the p-value does not support (line breaks
    read as spaces)."""
    texts = {page: " ".join(text.split()) for page, text in texts.items()}
    out = [f"{page}: missing {q!r}" for page, qs in quotes(study).items() for q in qs if q not in texts[page]]
    pg = study["rank_correlations"][0]
    for page, text in texts.items():
        if pg["p_one_sided"] > pg["alpha"] and NO_EVIDENCE not in text:
            out.append(f"{page}: p = {pg['p_one_sided']:.2f} > {pg['alpha']}, but no {NO_EVIDENCE!r}")
        out += [f"{page}: {m.group(0)!r} with p = {pg['p_one_sided']:.2f}" for m in TOO_STRONG.finditer(text)
                if pg["p_one_sided"] > pg["alpha"]]
        start = text.find(ANCHORS[page])
        head = text.find("`predicted_gain`, the score that picks `best_site`", start)
        other = min((i for i in (text.find(f"`{r['score']}`", start) for r in study["rank_correlations"][1:]) if i >= 0),
                    default=len(text))
        if start < 0 or not 0 <= head < other:
            out.append(f"{page}: the score that picks best_site is not quoted first")
    return out


def _texts() -> dict[str, str]:
    return {name: path.read_text(encoding="utf-8") for name, path in PAGES.items()}


def test_the_pages_quote_the_stored_pretrained_study():
    study = json.loads(STUDY.read_text())
    assert mismatches(_texts(), study) == []


def test_a_planted_number_or_a_stronger_word_is_caught():
    study = json.loads(STUDY.read_text())
    texts = _texts()
    pg = study["rank_correlations"][0]
    rho = f"**{pg['rho']:+.2f}**"
    for page in texts:
        wrong = dict(texts, **{page: texts[page].replace(rho, f"**{pg['rho'] + 0.4:+.2f}**")})
        assert any(m.startswith(f"{page}: missing") for m in mismatches(wrong, study)), page
    arm = study["arms"][0]
    wrong = dict(texts, **{"docs/RESULTS.md": texts["docs/RESULTS.md"].replace(f"{arm['heldout_loss']:.4f}", "9.9999")})
    assert mismatches(wrong, study)
    if pg["p_one_sided"] > pg["alpha"]:
        weak = dict(texts, **{"README.md": texts["README.md"].replace(NO_EVIDENCE, "weak evidence that the ranking predicts")
                              + "\nThe ranking predicts the realised gains only weakly.\n"})
        assert any("only weakly" in m or NO_EVIDENCE in m for m in mismatches(weak, study))
    # the same page with P_readout's rho standing first (the old report's reading) is caught too
    anchor = ANCHORS["README.md"]
    swapped = dict(texts, **{"README.md": texts["README.md"].replace(anchor, anchor + " The ranking by `P_readout` gives +0.20.")})
    assert any("not quoted first" in m for m in mismatches(swapped, study))
