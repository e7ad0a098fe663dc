"""Storage of ``benchmarks/bench_trial_minilm.py`` and its budget diagnostic: each seed's file read back (a stored seed
computed with another configuration or ``f_old`` stops the run), the run's ``results.json``, ``output.txt`` and
``README.md`` written atomically."""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # imported by scripts run as such: the repository's packages

__all__ = ["f_old_text", "store_results", "stored_seeds"]


def f_old_text(config: dict) -> dict | None:
    """``minilm_f_old``'s text settings for a run's configuration: ``None`` (the default) unless the run names a corpus."""
    from benchmarks.study_predicted import MINILM_TEXT

    return {**MINILM_TEXT, "source": config["corpus"]} if "corpus" in config else None


def stored_seeds(out: Path, seeds: list, config: dict, model: tuple | None = None) -> tuple:
    """``(rows of the seeds stored in out/seeds (``{"skipped": why}`` for a seed the run skipped), f_old, tokenizer, its
    config, f_old's hash)``: ``f_old`` is trained
    only when a seed is still to be computed (else None, and the stored seeds give its hash), or taken from ``model``
    (an earlier return's last four); a stored seed computed with another configuration or ``f_old`` stops the run (one
    line naming its file)."""
    from benchmarks.study_predicted import _model_hash, minilm_f_old

    stored = {s: json.loads((out / "seeds" / f"seed_{s}.json").read_text()) for s in seeds
              if (out / "seeds" / f"seed_{s}.json").exists()}
    if model is None:
        net, tok, cfg = minilm_f_old(f_old_text(config)) if len(stored) < len(seeds) else (None, None, None)
        model = (net, tok, cfg, _model_hash(net) if net is not None else next(iter(stored.values()))["f_old_hash"])
    for s, rec in stored.items():
        if rec["config"] != json.loads(json.dumps(config)) or rec["f_old_hash"] != model[3]:
            raise SystemExit(f"{out / 'seeds' / f'seed_{s}.json'}: computed with another configuration or f_old; use another --out.")
    return ({s: rec["row"] if "row" in rec else {"skipped": rec["skipped"]} for s, rec in stored.items()}, *model)


def store_results(out: Path, command: str, config: dict, h: str, seeds: list, rows: list, summ: dict, render_lines,
                  render_readme) -> dict:
    """``results.json`` (command, config, ``f_old``'s hash, per-seed rows, ``summ``, versions), ``output.txt``
    (``render_lines``) and ``README.md`` (``render_readme``) in ``out``, written atomically; the printed text."""
    import torch

    from plumbing.io import atomic_write_json, atomic_write_text

    text = f_old_text(config)
    res = {"command": command, "config": config, "f_old": f"benchmarks.study_predicted.minilm_f_old({text or ''}) (state hash {h})",
           "f_old_hash": h, "seeds": seeds, "rows": rows, "summary": summ,
           "versions": {"python": sys.version.split()[0], "torch": torch.__version__}}
    atomic_write_json(out / "results.json", res)
    text = "\n".join(render_lines(res)) + "\n"
    atomic_write_text(out / "output.txt", text)
    atomic_write_text(out / "README.md", render_readme(res))
    print(text, end="")
    return res
