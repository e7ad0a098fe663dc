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
             "    lo, hi = r['certification_interval']; vlo, vhi = r['violation_interval']\n"
             "    print(f\"{name:16s} certified {r['certification_rate']:.0%} [{lo:.0%}, {hi:.0%}]   violations \"\n"
             "          f\"{r['violations']}/{summary['draws']} [{vlo:.0%}, {vhi:.0%}] vs stated \"\n"
             "          f\"{r['stated_failure_probability']:.3g}   significant: {r['significant']}\")"),
    ('code', "for name, e in summary['events'].items():\n"
             "    if not e['draws']:\n"
             "        print(f\"{name:6s} {e['checked']}\"); continue\n"
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
]
