"""Cells of notebooks/04_validity.ipynb (built by notebooks/_build.py; notebooks only call the library)."""

CELLS = [
    ('md', '# Validity: every guarantee tested over many draws (light sizes)\n'
           'A certificate from one draw of `(S, T)` says little about how often the guarantee holds or certifies. '
           '`run_validity` fixes everything that does not depend on `S` and `T` (teacher, reference, block features, '
           'cap, `f~_pop`), draws many independent pairs `(S, T)` and runs the whole pipeline on each. It reports, '
           'per route and per event of its chain, how often it failed against its stated probability '
           '(Clopper–Pearson intervals, one-sided exact tests), how often each route certified, and the slack of every '
           'premise. Here the sizes are tiny (`M = K = 3000`), so expect nothing to certify and a lot of slack; '
           '`depthcert validity --config depthcert/configs/demo.toml --draws 200 --out DIR` runs the demo setup.'),
    ('code', "from numerics.studies.validity import run_validity\n"
             "LIGHT = {'sizes': {'M': 3000, 'K': 3000, 'population': 3000}, 'reference': {'n': 500},\n"
             "         'block_training': {'steps': 60, 'batch_size': 512}, 'validity': {'group': 6, 'population': 100_000}}\n"
             "summary = run_validity(LIGHT, 12, 'validity_light', progress=False)\n"
             "print(summary['draws'], 'draws; events checked as exact suprema over the class:', summary['truth']['exact_class'])"),
    ('md', '## Violation rates against the stated failure probabilities, and certification rates'),
    ('code', "for name, r in summary['routes'].items():\n"
             "    (lo, hi), (vlo, vhi) = r['certification_interval'], r['violation_interval']\n"
             "    print(f\"{name:16s} certified {r['certification_rate']:.0%} [{lo:.0%}, {hi:.0%}]   violations \"\n"
             "          f\"{r['violations']}/{summary['draws']} [{vlo:.0%}, {vhi:.0%}] vs stated \"\n"
             "          f\"{r['stated_failure_probability']:.3g}   significant: {r['significant']}\")"),
    ('code', "for name, e in summary['events'].items():\n"
             "    if not e['draws']:\n"
             "        print(f\"{name:6s} {e['checked']}\")\n        continue\n"
             "    print(f\"{name:6s} failures {e['failures']}/{e['draws']} vs stated {e['stated']:.3g} \"\n"
             "          f\"(significant: {e['significant']}); checked: {e['checked']}\")"),
    ('md', '## Which step makes the bound loose: the slack of each premise\n'
           'One box per premise (5–95% whiskers); left of the red line a premise failed. The uniform-convergence steps '
           '(`E_S`, `E_T`) have by far the most to spare: `eps_n` is loose, not the Hoeffding steps.'),
    ('code', "from IPython.display import Image\nImage(filename='validity_light/slack.png')"),
    ('md', '## Power: the same draws against deliberately weakened guarantees\n'
           'A validity test that cannot fail proves nothing. Weakened guarantees (`eps_n` scaled down, Hoeffding tails '
           'with `K` replaced by `c K`) are flagged when they are wrong *at this setup*; the true ones are not.'),
    ('code', "for name, v in summary['power'].items():\n"
             "    print(f\"{name:28s} {v['failures']:2d}/{v['draws']} vs stated {v['stated']:.3g}: \"\n"
             "          f\"{'FLAGGED' if v['flagged'] else 'not flagged'}{' (weakened)' if v['weakened'] else ''}\")"),
    ('md', "## This project's tighter variants (THEORY §6, **Choice**, not Paper A's)\n"
           'Each variant (`population_tight_bernstein`, ...) is a route of its own: one-function tails where a premise '
           'is about a function independent of its sample, a supremum only for `f_new` (and `f~_S`) on `S`. The study '
           'checks every variant\'s events at its own levels (`<variant>/E_S` is one-sided over the class for the '
           'population variants) and its chain at its total failure probability. `comparison` sets the route fixed '
           'before the data (`[variants] use`) against the better of the paper\'s two routes on the same draws; '
           '`any_with_variants` is "some route certifies" over all of them, paid as one union of their distinct events.'),
    ('code', "c = summary['comparison']\n"
             "for label, r in (('use: ' + c['use'], c['use_rate']), ('paper best: ' + c['paper_best'], c['paper_best_rate']),\n"
             "                 ('any route with the variants', c['any_with_variants_rate'])):\n"
             "    lo, hi = r['certification_interval']\n"
             "    print(f\"{label:40s} certified {r['certification_rate']:.0%} [{lo:.0%}, {hi:.0%}]\")\n"
             "for name in ('population_tight_bernstein', 'direct_tight_bernstein_empirical'):\n"
             "    r = summary['routes'][name]\n"
             "    print(f\"{name:40s} violations {r['violations']}/{summary['draws']} vs stated \"\n"
             "          f\"{r['stated_failure_probability']:.3g} (significant: {r['significant']})\")"),
    ('md', '### One draw, every bound decomposed into its terms\n'
           'The waterfall starts at `L_test(f_old)` (grey), adds each gain (green) and each cost (red, labelled with '
           'the event that pays it) and ends at the bound (blue when it certifies alone). It is drawn from the '
           "run's stored `result.json` (`depthcert run` writes it as `bound_terms.png`)."),
    ('code', "from numerics.studies.run import run_experiment\n"
             "run = run_experiment({k: v for k, v in LIGHT.items() if k != 'validity'}, 'run_light')\n"
             "Image(filename='run_light/bound_terms.png')"),
    ('md', '### Power against the variants\' typical mistake\n'
           'The mutant "one-function tail for `f_new` on `S`" is wrong because `f_new` is chosen with `S`. On a '
           'network with squared loss the sure loss range `B` sits far above the losses\' spread, so even the supremum '
           'of `R - R_S` over the whole capped class stays below the mutant\'s tail (`class_sup_over_tail` < 1): no '
           'test on such draws can flag it. Where selection on `S` matters (losses spread over their range, `f_new` '
           'the minimiser over many functions) the same statistics flag it: '
           '`tests/numerics/studies/test_validity_variants.py`.'),
    ('code', "for name, v in summary['power'].items():\n"
             "    if 'H_S_new' in name:\n"
             "        print(f\"{name}: {v['failures']}/{v['draws']} vs stated {v['stated']:.3g}; \"\n"
             "              f\"sup over the class / tail: max {v['class_sup_over_tail']['max']:.3g}\")"),
]
