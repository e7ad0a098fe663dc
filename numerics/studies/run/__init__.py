"""The run study: reference model, insertion, block training, measurements, Theorems 2-3.

:func:`run_experiment` (THEORY §1-§6) on a synthetic teacher task, in stages that pass
small typed dataclasses (STYLE: Studies):

1. :func:`prepare_fixed` (:class:`Fixed`) -- everything fixed before ``S`` and ``T`` are
   drawn, from the roles of ``seed`` (:mod:`numerics.seeding`): the teacher; a reference
   post-norm network ``f_old`` trained on its own sample; a zero-output ``readout`` block
   inserted at ``at`` with a Frobenius cap ``nu_V`` fixed before training (no cap grid:
   ``n_grid = 1``); the data-free constants; the population signal ``G`` (exact
   ``y``-expectation), smoothness ``beta`` (§2) and the jumpboard ``f~_pop`` with step
   ``eta = min(1/beta, nu_V/||G||)`` (§3: Theorem 1 holds for every ``0 < eta <= 1/beta``);
2. :func:`draw_samples` (:class:`SampleGroup`) -- ``S`` from the roles of ``data_seed``,
   ``G_S`` and ``f~_S``;
3. :func:`select_blocks` (:class:`Selection`) -- the block trained on ``S`` with the
   (C2) fallback over both jumpboards;
4. :func:`evaluate_draw` (:class:`Evaluation`) and :func:`certify_draw`
   (:class:`Certificate`) -- ``T`` and the Monte-Carlo population sample (streamed), every
   quantity, and both routes evaluated *only* through :func:`bounds.routes.evaluate_routes`
   (with ``routes.any`` and ``routes.population_risk``); this project's THEORY §6 variants
   through :func:`bounds.variant_routes.evaluate_variants` (``routes.<variant>``,
   ``routes.any_with_variants``), with the loss variances and the sign Monte Carlo they
   need measured on the draw's samples and every level fixed in ``[variants]``.

This project's THEORY §6b localised certificates (**Choice**) are measured after stage 4
(:func:`certify_localised`; ``[localised]``: the ball's cap fixed before ``S``, the levels, the
route fixed before the data) and reported as ``routes.localised_<chain>_<uniform>_<tail>``,
``routes.heldout_paired`` (the held-out paired test a user would run) and ``localised``.

``Delta_R`` is a Monte-Carlo estimate over ``x``; the value fed to Theorem 2 is its
finite-sample empirical-Bernstein lower bound at level ``DELTA_R_LEVEL`` (paired
conditional-risk differences lie in ``[-B, B]``), and that level is added to the
population route's failure probability (``Setup.delta_R_failure``, the event ``E_R``):
Theorem 2 stays valid with any ``Delta_R' <= Delta_R``.

The validity study (:mod:`numerics.studies.validity`) repeats stages 2-4 for many data
seeds on one :class:`Fixed`.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Mapping

import torch

from plumbing.deprecation import moved
from plumbing.io import check_writable_dir
from plumbing.validation import InputError
from plumbing.config import merge_config as _merge_config
from plumbing.validation import check_schema
from numerics.builders import check_one_world, own_part
from numerics.studies.run._checks import check_memory
from numerics.studies.run._config import RunConfig, as_run_config
from numerics.studies.run._family import complete_config, on_states, run_family
from numerics.studies.run._schema import CONFIG_SCHEMA
from numerics.zoo_cnn1d_adapter import check_run_model
from numerics.studies.run._draw import (DELTA_R_LEVEL, Certificate, Evaluation, SampleGroup, Selection, certify_draw,
                                        draw_samples, evaluate_draw, select_blocks)
from numerics.studies.run._outputs import (bounds_config, format_table, setup_of_quantities, to_json, to_toml,  # noqa: F401
                                           write_outputs)
from numerics.studies.run._result import RunResult, annotate_routes, assemble, route_dicts
from numerics.studies.run._stages import Fixed, is_exact_class, prepare_fixed, streams_of
from numerics.studies.run._localised import LOCALISED_SCHEMA, LocalisedClass, localised_class, localised_options
from numerics.studies.run._localised_draw import LocalisedCertificate, certify_localised
from numerics.studies.run._plot_localised import plot_localised_terms
from numerics.studies.run._plot_terms import plot_bound_terms

__all__ = ["as_run_config", "bounds_config", "Certificate", "certify_draw", "certify_localised", "check_memory",
           "check_scan_world", "CONFIG_SCHEMA", "DEFAULT_DEMO_CONFIG", "DELTA_R_LEVEL", "draw_samples",
           "evaluate_draw", "Evaluation", "Fixed", "format_table", "is_exact_class", "load", "localised_class",
           "localised_options", "LOCALISED_SCHEMA", "LocalisedCertificate", "LocalisedClass", "merge_checked", "N_PROBE",
           "on_states", "plot_bound_terms", "plot_localised_terms",
           "prepare_fixed", "route_dicts", "run", "run_config", "run_experiment", "RunConfig", "RunResult",
           "SampleGroup", "select_blocks", "Selection", "STAGES", "setup_of_quantities", "setup_report", "streams_of", "to_json", "to_toml",
           "validate_config", "write", "write_outputs"]

#: Former re-exports (plumbing, not the run study's): deprecated aliases naming the new place.
__getattr__ = moved("numerics.studies.run", {"atomic_write_text": "plumbing.io", "versions": "plumbing.io", "merge_config": "plumbing.config",
                                             "available_memory": "plumbing.machine"})

N_PROBE = 200_000  # probe sample of the assumption diagnostics (independent of S, T, population)

#: The demo (``depthcert demo``): a weak (deliberately under-trained, 15 Adam steps)
#: depth-1 width-4 reference against a depth-4 teacher, a readout block at the top (``L_top`` is
#: then exactly ``||A||_2`` and the squared risk is quadratic in ``V``), small ``d``.
#: ``delta = delta' = 0.02`` so that "some route certifies" (the union ``delta + delta' +
#: 2 exp(.) + 5e-4``) fits the level 0.05; ``data_seed`` was never used while choosing
#: this config (the seed-role setup was fixed first).
DEFAULT_DEMO_CONFIG: dict = {
    "seed": 11,
    "data_seed": 2718,
    "level": 0.05,
    "task": {"kind": "regression", "d_in": 3, "depth": 4, "width": 2, "noise_std": 0.05, "noise_clip": 3.0,
             "mean_bound": 1.0, "head_bias": False},
    "model": {"width": 4, "depth": 1, "norm": "rms", "eps_n": 0.0},
    "reference": {"n": 4000, "optimizer": "adam", "lr": 0.01, "steps": 15, "batch_size": 256},
    "insertion": {"at": -1, "family": "readout", "width": 16, "output_cap": 0.5},
    "block_training": {"optimizer": "sgd", "lr": 0.5, "steps": 400, "batch_size": 8192},
    "sizes": {"M": 4_000_000, "K": 4_000_000, "population": 1_000_000, "delta": 0.02, "delta_prime": 0.02},
    "variants": {"delta_mc": 0.001, "n_draws": 4, "use": "population_tight_bernstein"},
}


def check_scan_world(config: Mapping, command: str) -> None:
    """A file that ``saturation``/``grow`` read too (it has their sections) builds one world: every world
    key whose defaults differ from theirs must be given (:func:`numerics.builders.check_one_world`)."""
    if any(k in config for k in ("saturation", "growth")):
        from numerics.workloads import DEFAULT_WORKLOAD

        check_one_world(config, (command, DEFAULT_DEMO_CONFIG), ("saturation", DEFAULT_WORKLOAD))


def validate_config(config: Mapping) -> dict:
    """Merge ``config`` over :data:`DEFAULT_DEMO_CONFIG` and check it against :data:`~numerics.studies.run.CONFIG_SCHEMA`.

    Raises:
        InputError: unknown section/key, or a value outside its range (names the dotted
            key, the allowed values and the value).
    """
    check_scan_world(config, "run")
    config, _ = own_part(config, CONFIG_SCHEMA)   # sections other commands read: set aside (noted in the result)
    check_schema(config, CONFIG_SCHEMA)
    return merge_checked(config)


def merge_checked(config: Mapping) -> dict:
    """:func:`validate_config` of a config whose keys and values were already checked against
    :data:`~numerics.studies.run.CONFIG_SCHEMA` (e.g. within a study's wider schema): the merge over the demo's defaults
    and the checks across keys, without checking each value again.

    Raises:
        InputError: a check across keys fails (``insertion.at``, ``model.eps_n``, ``variants.delta_mc``,
            ``variants.use``, ``[localised]``).
    """
    cfg = complete_config(config, _merge_config(DEFAULT_DEMO_CONFIG, config))   # dimensions fixed by data tasks
    check_run_model(config, cfg)   # cnn1d (mnist1d): a readout block at the head input only
    at = cfg["insertion"]["at"]
    if at > cfg["model"]["depth"]:
        raise InputError("insertion.at", f"an integer in [-1, {cfg['model']['depth']}] (-1: top)", at)
    if at not in (-1, cfg["model"]["depth"]) and cfg["model"]["eps_n"] <= 0:
        # below the top, L_top needs Lip(N) <= gamma/sqrt(eps_n) (THEORY §2, A-Lip): a data
        # r_min does not cover the states u + h(u) of the whole capped class.
        raise InputError("model.eps_n", "> 0 when insertion.at is below the top (certified L_top)",
                         cfg["model"]["eps_n"])
    if not cfg["variants"]["delta_mc"] < cfg["sizes"]["delta"]:
        raise InputError("variants.delta_mc", f"in (0, sizes.delta) = (0, {cfg['sizes']['delta']:g}) (carved out of "
                         "delta)", cfg["variants"]["delta_mc"])
    _family_route(config, cfg)
    localised_options(cfg)   # [localised]: use applies to this block, the levels fit the level
    return cfg


def _family_route(config: Mapping, cfg: dict) -> None:
    """``variants.use`` for the configured family: a route it cannot evaluate
    (:attr:`~numerics.studies.run._family.RunFamily.routes`; ``full``: the measured variances are the
    readout candidates' and the empirical Rademacher term is the readout's, THEORY §4) named by the user
    is an input error; the demo's default becomes the family's own (fixed before the data)."""
    family = run_family(cfg["insertion"]["family"])
    if cfg["variants"].get("use") in family.routes:
        return
    if "use" in (config.get("variants") or {}):
        raise InputError("variants.use", f"one of {list(family.routes)} when insertion.family = '{family.name}'",
                         cfg["variants"]["use"])
    cfg["variants"]["use"] = family.default_use


def run_config(config: Mapping) -> RunConfig:
    """The typed run config of a user's config: :func:`validate_config` once, with the notes naming
    the sections other commands read (a :class:`RunConfig` is returned as it is, not checked again)."""
    if isinstance(config, RunConfig):
        return config
    return RunConfig.from_validated(validate_config(config), notes=tuple(own_part(config, CONFIG_SCHEMA)[1]))


#: The stages of one run, in order, as :func:`run_experiment` names them to its ``progress``.
STAGES = ("teacher, reference network and signal sample (fixed before the data)", "drawing S and T",
          "training the inserted block (projected SGD, the (C2) fallback)",
          "measuring Theorems 1-3 on T and the Monte-Carlo sample; every route", "diagnostics on the probe sample")


def run_experiment(config: Mapping, out_dir: str | Path | None = None, progress=None) -> dict:
    """Run the pipeline of the module docstring; return (and write) the ``result.json`` content.

    Args:
        config: nested dict (see :data:`DEFAULT_DEMO_CONFIG`); missing keys take the demo's. A
            :class:`RunConfig` (:func:`run_config`) is used as it is (validated once, before).
        out_dir: if given, ``result.json``, ``bounds_config.toml`` and
            ``bound_vs_observed.png`` are written there (atomically for the files).
        progress: ``None``, or a callable called with each stage's description (:data:`STAGES`)
            when the stage starts (``depthcert demo`` shows them on stderr).

    Returns:
        dict with ``L_test_old``, ``L_test_new``, ``R_old``, ``R_new``, ``quantities``,
        ``theorem1``, ``routes`` (``population``/``direct``: ``bound``, ``observed``,
        ``failure_probability``, ``certified``, ...; ``any``: ``certified``,
        ``failure_probability``; ``population_risk``: ``bound``, ``observed``,
        ``failure_probability``; each THEORY §6 variant under its name with the same fields;
        ``any_with_variants``; each THEORY §6b route ``localised_*`` and ``heldout_paired``), ``variants``,
        ``localised`` (use, levels, inputs, roles, f_new, skipped, notes, ``gap``: each route's ``M_needed`` beside
        the scan's ``n_needed_improvable``, :mod:`numerics.studies.run._gap`), ``streams``, ``fixed_before_data``, ``timings``,
        ``config``, ``notes``.

    Raises:
        InputError: invalid config, an unwritable ``out_dir``, or sizes that cannot fit
            in memory (checked before any work).
        ArithmeticError: (C1) fails (``G == 0``).
    """
    cfg = run_config(config)
    check_memory(cfg)
    if out_dir is not None:
        check_writable_dir(out_dir)
    streams = streams_of(cfg)
    with torch.random.fork_rng(devices=[]):  # every draw is seeded by role; leave the global RNG alone
        torch.manual_seed(streams.seed_for("torch_global"))
        result = _run(cfg, streams, progress or (lambda stage: None))
    result["notes"] = [*result["notes"], *cfg.notes_]   # what other commands read
    if out_dir is not None:
        write_outputs(result, out_dir)
    return result


def run(config: Mapping) -> RunResult:
    """:func:`run_experiment` as a typed result (:class:`RunResult`; nothing written: :func:`write`)."""
    return RunResult.from_dict(run_experiment(config))


def write(result: RunResult, out_dir: str | Path) -> dict:
    """Write a :class:`RunResult` (:func:`write_outputs`: ``result.json``, ``bounds_config.toml``, figures)."""
    check_writable_dir(out_dir)
    return write_outputs(result.to_dict(), out_dir)


def load(path: str | Path) -> RunResult:
    """The :class:`RunResult` of a stored ``result.json`` (a file, or the folder holding it)."""
    from plumbing.store import load_result

    return RunResult.from_dict(load_result(path))


def setup_report(config: Mapping) -> dict:
    """What a setup promises before any data is drawn (stage 1 only, roles of ``seed``).

    The data-free constants and closed-form ``eps_M``, ``eps_K`` (THEORY §4), Theorem 1's
    guaranteed gain at the step used (§3) and the margins both routes would have if
    ``Delta_R`` (and ``Delta_test^R``) equalled that guaranteed gain and ``Delta_ERM = 0``:
    ``population_margin = gain/2 - 2 eps_M``, ``direct_margin = gain - 2 (eps_M + eps_K)``.
    Nothing here depends on ``S``, ``T`` or ``data_seed``, so choosing a setup by it is a
    choice made before seeing data.
    """
    from bounds import jumpboard_risk_bound
    from bounds.routes import Setup, costs
    from numerics.studies.run._family import setup_block

    cfg = run_config(config)
    check_memory(cfg)
    with torch.random.fork_rng(devices=[]):
        fixed = prepare_fixed(cfg)
    c, sig, sz = fixed.const, fixed.signal, cfg.sizes
    G_sq = float(sig.G.pow(2).sum())
    gain = -float(jumpboard_risk_bound(0.0, G_sq, sig.beta.beta, sig.eta))   # Theorem 1 at the step used
    family, block = setup_block(c.caps, fixed.expanded.block.d, c.L_top_certified, c.nu_V)
    eps_M, eps_K = (float(e) for e in costs(Setup(
        L_test_old=0.0, delta_R=gain, delta_erm=0.0, delta_test_R=0.0, M=sz.M, K=sz.K, delta=sz.delta,
        delta_prime=sz.delta_prime, B=c.B, L_loss=c.L_loss, family=family, block=block,
        n_grid=c.caps.n_grid)))
    return {"seed": cfg.seed, "B": c.B, "L_loss": c.L_loss, "nu_V": c.nu_V, "eps_M": eps_M, "eps_K": eps_K,
            "G_norm": G_sq ** 0.5, "beta": sig.beta.beta, "eta": sig.eta, "eta_capped": sig.capped,
            "guaranteed_gain": gain, "population_margin": gain / 2 - 2 * eps_M,
            "direct_margin": gain - 2 * (eps_M + eps_K)}


def _probe(fixed: Fixed, streams) -> dict:
    """Diagnostics on an independent probe sample (role ``probe``), and the empirical ``L_top``."""
    from numerics.diagnostics import probe_diagnostics
    from numerics.estimators import lipschitz_top_empirical

    from numerics.sampled_task import population_is

    c, seed = fixed.const, streams.seed_for("probe")
    b_data_free = c.L_loss * c.L_top_certified * c.rho_phi   # ||m_i|| ||phi_i|| <= b
    diag = None if population_is(fixed.task) == "estimate" else probe_diagnostics(   # they need p(y | x)
        fixed.net, fixed.expanded, fixed.task, min(fixed.cfg.sizes.population, N_PROBE), seed, fixed.cfg.level,
        b=b_data_free)
    u = fixed.net.bottom(fixed.task.sample_x(min(2048, N_PROBE), seed), fixed.at)
    return {"diagnostics": diag, "L_top_empirical": lipschitz_top_empirical(fixed.net, fixed.at, u)}


def _run(cfg: RunConfig, streams, say) -> dict:
    from numerics.studies.run._localised_result import localised_route_dicts, localised_section

    t0, timings = time.perf_counter(), {}

    def lap(name, next_stage=None):
        timings[name] = time.perf_counter() - t0 - sum(timings.values())
        if next_stage is not None:
            say(STAGES[next_stage])

    say(STAGES[0])
    fixed = prepare_fixed(cfg, streams)
    lap("fixed_stage_s", 1)
    group = draw_samples(fixed, [streams])
    lap("sample_S_s", 2)
    sel = select_blocks(fixed, group)
    lap("block_training_s", 3)
    ev = evaluate_draw(fixed, group, sel, 0)
    cert = certify_draw(fixed, group, sel, ev, 0)
    loc = certify_localised(fixed, group, sel, ev, 0)
    lap("measure_and_bounds_s", 4)
    extras = _probe(fixed, streams)
    lap("diagnostics_s")
    timings["data_and_reference_s"] = timings["fixed_stage_s"] + timings["sample_S_s"]
    timings["total_s"] = time.perf_counter() - t0
    result = assemble(fixed, group, sel, ev, cert, extras, timings)
    result["routes"].update(localised_route_dicts(loc))     # THEORY §6b (Choice): beside the paper's routes
    annotate_routes(result)     # every row: which sample fixed what, and how much it certifies
    result["localised"] = localised_section(loc)
    if loc.gap is not None:     # Paper A's closed-form min_M beside the scan's n_needed_improvable
        from numerics.studies.run._gap import paper_gap

        result["localised"]["gap"]["paper"] = paper_gap(result["routes"], loc.gap["n_needed_improvable"])
    _mark_population(result, fixed)
    return result


def _mark_population(result: dict, fixed: Fixed) -> None:
    """``population_is``: ``"exact"`` (teacher: exact over ``y``) or ``"estimate"`` (sampled task, with notes)."""
    from numerics.sampled_task import ESTIMATE_NOTE, population_is

    result["population_is"] = population_is(fixed.task)
    if result["population_is"] == "estimate":
        t1 = result["theorem1"]
        t1["guaranteed_gain_is"] = t1["guaranteed_gain_is"].replace("exact y-expectation", "its own labels: no exact teacher")
        result["notes"].append(ESTIMATE_NOTE)
        result["notes"].append("no probe diagnostics: they need the exact conditional p(y | x) (m_bar), which a "
                               "sampled task does not have.")
