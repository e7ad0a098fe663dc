"""The validity study: every guarantee of a setup tested empirically over many draws.

``run_validity(config, draws, out)`` fixes everything that does not depend on ``S`` and
``T`` (teacher, reference, insertion features, caps, ``f~_pop``: the run study's
:func:`~numerics.studies.run.prepare_fixed`), then draws ``draws`` independent pairs
``(S, T)`` (data seed of draw ``i``: ``derived_seed(data_seed, "validity/data", i)``) and
runs the run study's pipeline on each, the blocks of ``group`` draws trained together.
Each draw is one atomic record in ``out/draws/`` (resumable: a re-run computes only the
missing draws, group by group, so an interrupted study ends with the same records as an
uninterrupted one). From the records alone (:func:`summarize`) it reports, at the test
level ``level``:

* per route (``population``, ``direct``, ``any``, ``population_risk``): how often its
  conclusion failed against its stated failure probability (Clopper--Pearson interval,
  one-sided exact test), and how often it certified (with its interval) -- the honest
  headline for a setup;
* per event of the chains (``E_S``, ``E_T``, ``H_new``, ``H_old``, ``E_R``): failures vs
  stated probability; ``E_S``/``E_T`` as the suprema over the class where that is exact
  (readout at the top, squared loss), else at the chains' functions (necessary only);
* the slack of every premise over draws, and the power of the test (weakened variants);
* on a sampled task (no exact teacher) the truth is a Monte-Carlo mean: an event counts as
  violated only beyond ``z se`` of the truth's combination in it, *paired* on the one truth
  sample (``l(f_new) - l(f_old)``, :mod:`numerics.studies.validity._testable`); beside each event
  and power check its tolerance and the smallest bound term it tests, and "not testable at this
  truth size" where the tolerance is not below that term (``events.*.testability``);
* per draw, every route's bound, margin, cap and certified improvement (``per_draw``) and their
  distribution (``per_draw_summary``, :mod:`numerics.studies.validity._per_draw`).

With ``vary="seed"`` each draw also changes ``seed`` (teacher, reference, ...): held-out
setups, ``seed_i = derived_seed(seed, "validity/seed", i)``.
"""
from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path
from typing import Any, Mapping

from plumbing.io import atomic_write_text, check_writable_dir, dumps, versions
from plumbing.results import StudyResult
from plumbing.validation import InputError, Interval
from plumbing.validation import check_schema
from plumbing.sizes import MAX_DRAWS as _MAX_DRAWS
from plumbing.store import ItemStore, StoredFileError, config_hash, load_json
from numerics.seeding import Streams, derived_seed
from numerics.studies.validity._plot import plot_slack
from numerics.studies.validity._summary import summarize
from numerics.builders import own_part
from numerics.studies.run import (CONFIG_SCHEMA, RunConfig, check_scan_world, check_memory, merge_checked, prepare_fixed,
                                  streams_of)

__all__ = ["DEFAULT_VALIDITY", "MAX_DRAWS", "VALIDITY_SCHEMA", "ValidityResult", "load", "load_validity", "plot_slack", "run",
           "run_validity", "ship_summary", "summarize", "validate_validity_config", "write"]

VARY = ("data", "seed")
#: The ``[validity]`` section: ``population`` (size of the check sample of population
#: moments; 0: ``10 max(M, K)``, at most 4e7) and ``group`` (draws trained together).
VALIDITY_SCHEMA: Mapping[str, Mapping[str, Any]] = {
    **CONFIG_SCHEMA, "validity": {"population": Interval(0, integer=True), "group": Interval(1, integer=True)}}
DEFAULT_VALIDITY = {"population": 0, "group": 8}
_AUTO_CAP = 40_000_000


def validate_validity_config(config: Mapping) -> tuple[dict, dict]:
    """``(run config, validity options)``; the run part merged over the demo's defaults.

    Raises:
        InputError: unknown key or a value out of range (named).
    """
    check_scan_world(config, "validity")   # a file `saturation`/`grow` read too: one world
    config, _ = own_part(config, VALIDITY_SCHEMA)
    check_schema(config, VALIDITY_SCHEMA)
    opts = {**DEFAULT_VALIDITY, **config.get("validity", {})}
    cfg = merge_checked({k: v for k, v in config.items() if k != "validity"})   # each value checked once, above
    if opts["population"] == 0:
        opts["population"] = min(_AUTO_CAP, 10 * max(cfg["sizes"]["M"], cfg["sizes"]["K"]))
    return cfg, opts


#: The most draws one study may ask for (**Choice**: 10^5 draws of the demo take about a day; defined, without
#: torch, in :mod:`plumbing.sizes`).
MAX_DRAWS = _MAX_DRAWS


def _check_args(draws, level, vary) -> None:
    if isinstance(draws, bool) or not isinstance(draws, int) or draws < 1:
        raise InputError("--draws", "an integer >= 1", draws)
    if draws > MAX_DRAWS:
        raise InputError("--draws", f"an integer in [1, {MAX_DRAWS}] (the stated maximum)", draws)
    Interval(0, 1, closed_low=False, closed_high=False).check("--level", level)
    if vary not in VARY:
        raise InputError("--vary", f"one of {list(VARY)}", vary)


def _group_size(cfg: RunConfig, wanted: int) -> int:
    """The most draws (<= wanted) whose training samples fit in memory together."""
    for g in range(wanted, 0, -1):
        try:
            check_memory(cfg, draws_at_once=g)
            return g
        except InputError:
            if g == 1:
                raise
    return 1


def _manifest(out: Path, cfg: dict, vary: str, opts: dict) -> dict:
    """The study's identity in ``out/manifest.json``; a folder of another study is refused."""
    want = {"config": cfg, "vary": vary, "check_population": opts["population"], "group": opts["group"]}
    path = out / "manifest.json"
    have = None
    if path.is_file():
        try:
            have = load_json(path)
        except StoredFileError as exc:    # the draws carry their own hash: rewrite the manifest
            _note(f"{exc.key}: {exc.value}; rewriting it")
    if isinstance(have, dict):
        if {k: have.get(k) for k in ("config", "vary", "check_population")} != \
                {k: want[k] for k in ("config", "vary", "check_population")}:
            raise InputError("--out", "a fresh folder or one holding a validity run of the same config and --vary",
                             str(out))
        return have
    atomic_write_text(path, dumps(want, indent=2) + "\n")
    return want


def _draw_streams(cfg: RunConfig, vary: str, i: int) -> Streams:
    base = streams_of(cfg)
    if vary == "data":
        return Streams(base.seed, derived_seed(base.data_seed, "validity/data", i), base.overrides)
    return Streams(derived_seed(base.seed, "validity/seed", i), derived_seed(base.data_seed, "validity/seed-data", i),
                   base.overrides)


def _compute(cfg: RunConfig, vary: str, opts: dict, store: ItemStore, draws: int, progress: bool) -> None:
    """Compute the missing records, whole groups at a time (same groups on every re-run)."""
    import torch
    from tqdm import tqdm   # text bars (tqdm.auto warns in a notebook without ipywidgets)

    from numerics.studies.validity._draws import measure_group, population_truth
    from numerics.training import DivergenceError

    G = opts["group"] if vary == "data" else 1
    groups = [list(range(g, min(g + G, draws))) for g in range(0, draws, G)]
    pending = set(store.pending([_key(i) for i in range(draws)], _note))
    todo = [g for g in groups if any(_key(i) in pending for i in g)]
    if not todo:
        return
    bar = tqdm(total=sum(len(g) for g in todo), desc="validity draws", unit="draw", disable=not progress)
    fixed = truth = None
    for idx in todo:
        streams = [_draw_streams(cfg, vary, i) for i in idx]
        try:
            if fixed is None or vary == "seed":
                fixed = prepare_fixed(cfg.with_seeds(streams[0].seed, streams[0].data_seed), streams[0])
                truth = population_truth(fixed, opts["population"])
            records = measure_group(fixed, truth, streams)
        except (ArithmeticError, DivergenceError) as exc:
            if vary == "data":
                raise
            records = [{"seed": s.seed, "data_seed": s.data_seed, "not_run": str(exc)} for s in streams]
            fixed = truth = None      # never record the previous setup's truth for this one
        for i, rec in zip(idx, records):
            # torch's intra-op threads: float reductions (a convolution's weight gradient) split by thread, so one
            # seed trains another reference network under another thread count -- another draw (provenance)
            rec.update(index=i, torch_threads=torch.get_num_threads(),
                       truth={"exact": truth.exact if truth else None, "n": opts["population"],
                              "moment_error": truth.moment_error if truth else None})
            if _key(i) in pending:
                store.put(_key(i), rec)
        bar.update(len(idx))
    bar.close()


def _note(text: str) -> None:
    print(f"depthcert validity: note: {text}", file=sys.stderr)


def _key(i: int) -> str:
    return f"draw_{i:06d}"


def _own_key(record) -> str | None:
    """The key of the draw a stored record says it is (its ``index``; ``None``: it holds none), so that a draw
    file copied over another is recomputed, never counted twice."""
    index = record.get("index") if isinstance(record, Mapping) else None
    if index is None:
        return None
    return _key(index) if isinstance(index, int) and not isinstance(index, bool) else f"<index {index!r:.40}>"


def run_validity(config: Mapping, draws: int, out: str | Path, *, level: float = 0.05, vary: str = "data",
                 group: int | None = None, progress: bool = True) -> dict:
    """Run (or resume) the study of the module docstring; write and return ``validity.json``.

    Args:
        config: a run config (:data:`~numerics.studies.run.DEFAULT_DEMO_CONFIG` fills the
            gaps) with an optional ``[validity]`` section (:data:`VALIDITY_SCHEMA`).
        draws: number of independent draws (``>= 1``).
        out: folder of the study (``manifest.json``, ``draws/``, ``validity.json``, ``slack.png``).
        level: test level: Clopper--Pearson intervals at ``1 - level``, one-sided tests at ``level``.
        vary: ``"data"`` (fixed setup, new ``(S, T)``) or ``"seed"`` (held-out setups too).
        group: draws trained together (default ``validity.group``; lowered to what fits in memory).

    Returns:
        The ``validity.json`` content (``significant``: some true guarantee failed
        significantly more often than stated).

    Raises:
        InputError: bad argument or config, an unwritable ``out``, sizes that cannot fit.
        ArithmeticError: (C1) fails for the fixed setup (``vary="data"``).
    """
    _check_args(draws, level, vary)
    cfg, opts = validate_validity_config(config)
    if group is not None:
        Interval(1, integer=True).check("--group", group)
        opts["group"] = int(group)
    run_cfg = RunConfig.from_validated(cfg)   # typed once; the manifest keeps the validated dict
    opts["group"] = _group_size(run_cfg, opts["group"])
    out = check_writable_dir(out)
    manifest = _manifest(out, cfg, vary, opts)
    opts["group"] = manifest["group"]        # a resumed study keeps its groups
    identity = {k: manifest.get(k) for k in ("config", "vary", "check_population", "group")}
    store = ItemStore(out / "draws", hashes=config_hash(identity, "validity-draw"), kind="validity-draw", own_key=_own_key)
    t0 = time.perf_counter()
    _compute(run_cfg, vary, opts, store, draws, progress)
    records = store.load([_key(i) for i in range(draws)])
    summary = summarize(records, level, vary=vary, config=cfg)
    summary["timing"]["this_invocation_s"] = time.perf_counter() - t0
    summary["versions"] = versions()
    summary["notes"] = [*summary.get("notes", []), *own_part(config, VALIDITY_SCHEMA)[1]]   # what others read
    _mark_truth(summary, records)
    atomic_write_text(out / "validity.json", dumps(summary, indent=2) + "\n")
    plot_slack(summary, out / "slack.png")
    return summary


def _mark_truth(summary: dict, records) -> None:
    """``truth.population_is``: ``"estimate"`` when the truth is a sampled task's Monte-Carlo mean (with the note)."""
    from numerics.sampled_task import TRUTH_NOTE

    kinds = {r.get("population_is", "exact") for r in records if r is not None and "values" in r}
    summary["truth"]["population_is"] = "estimate" if "estimate" in kinds else "exact"
    if "estimate" in kinds:
        summary["truth"]["note"] = TRUTH_NOTE
        summary["notes"].append(TRUTH_NOTE)


@dataclasses.dataclass(frozen=True)
class ValidityResult(StudyResult):
    """A study's ``validity.json`` as a typed record (:func:`run`).

    Attributes:
        draws: draws summarised; draws_requested; draws_not_run: held-out setups that could not run.
        vary: ``"data"`` or ``"seed"``; test_level: the level of the tests and intervals.
        significant: some true guarantee failed significantly more often than stated.
        data: the whole content (``to_dict()``: what ``validity.json`` holds).
    """

    draws: int = 0
    draws_requested: int = 0
    draws_not_run: int = 0
    vary: str = "data"
    test_level: float = 0.05
    significant: bool = False


def run(config: Mapping, *, draws: int, out: str | Path, **options) -> ValidityResult:
    """:func:`run_validity` (same arguments: ``level``, ``vary``, ``group``, ``progress``) as a typed result."""
    return ValidityResult.from_dict(run_validity(config, draws, out, **options))


def write(result: ValidityResult, path: str | Path) -> Path:
    """Write ``validity.json`` of ``result`` (atomically) to ``path`` (a file, or a folder holding it)."""
    p = Path(path)
    return atomic_write_text(p / "validity.json" if p.is_dir() else p, dumps(result.to_dict(), indent=2) + "\n")


def load(path: str | Path) -> ValidityResult:
    """The :class:`ValidityResult` of a stored study (its folder or its ``validity.json``)."""
    return ValidityResult.from_dict(load_validity(path))


def load_validity(path: str | Path) -> dict:
    """The ``validity.json`` of a study folder (or file)."""
    p = Path(path)
    return load_json(p / "validity.json" if p.is_dir() else p)


def ship_summary(demo: str | Path, held_out: str | Path, path: str | Path, *, wall_time: str, held_out_wall_time: str,
                 machine: str) -> Path:
    """Write the demo's stored validity summary (``depthcert/configs/demo_validity.json``).

    ``demo``: a study of the demo config (``--draws 200``); ``held_out``: its held-out setups
    (``--vary seed``). The file holds the demo study's summary with the command that produced
    it, and the held-out study's certification rates and comparison (what a user should expect).

    Returns:
        The written path.
    """
    s, h = load_validity(demo), load_validity(held_out)
    if s["vary"] != "data" or h["vary"] != "seed":
        raise InputError("held_out", "a study with --vary seed (and demo one with --vary data)", str(held_out))
    out = {"command": f"depthcert validity --config depthcert/configs/demo.toml --draws {s['draws']} --out DIR",
           "wall_time": wall_time, "machine": machine, **s,
           "held_out_setups": {
               "command": f"depthcert validity --config examples/validity_heldout_seeds.toml --vary seed --draws "
                          f"{h['draws_requested']} --out DIR",
               "wall_time": held_out_wall_time, "draws": h["draws"], "draws_not_run": h["draws_not_run"],
               "test_level": h["test_level"], "certification": h["certification"], "comparison": h.get("comparison"),
               "significant": h["significant"], "family_wise": h.get("family_wise")}}
    return atomic_write_text(path, dumps(out, indent=2) + "\n")
