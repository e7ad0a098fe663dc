"""Cells of notebooks/06_scaling.ipynb (built by notebooks/_build.py; notebooks only call the library)."""

CELLS = [
    ('md', '# Scaling studies: sweeps, Appendix M, predicted vs observed (light sizes)\n'
           'A sweep is a base `run` config plus a grid of dotted keys; every cell is validated before anything '
           'runs, written atomically to `DIR/cells/<key>/result.json`, and collected in `DIR/results.csv`. '
           'Figures are drawn from those stored cells only. The sizes here are tiny (seconds); '
           '`examples/sweeps/teacher_depth.toml` is the real depth sweep '
           '(`depthcert sweep --config examples/sweeps/teacher_depth.toml --out DIR --workers 2`).'),
    ('code', "from numerics.studies.sweeps import make_spec, sweep, results_table, load_cells\n"
             "TINY = {'sizes': {'M': 1000, 'K': 1000, 'population': 2000}, 'reference': {'n': 400, 'steps': 60},\n"
             "        'block_training': {'steps': 10, 'batch_size': 256}}\n"
             "spec = make_spec(TINY, {'model.depth': [1, 2, 3, 4], 'seed': [0, 1]})\n"
             "outcome = sweep(spec, 'sweep_depth', threads=1, progress=False)   # tiny cells: one thread each\n"
             "print(outcome)\n"
             "again = sweep(spec, 'sweep_depth', threads=1, progress=False)     # resumable: nothing left to do\n"
             "print('second call computed', again.computed, 'cells')"),
    ('code', "table = results_table('sweep_depth')\n"
             "table[['model.depth', 'seed', 'R_old', 'diagnostics.sites.s_max', 'quantities.delta_R_hat',\n"
             "       'routes.direct.bound', 'L_test_new']]"),
    ('md', '## Appendix M: predicted vs observed exponent\n'
           '`s(D) = max_l ||G_l||` (per-site signals on the independent probe sample) is fitted by `c D^-alpha`; '
           'the population risk by `R_inf + A D^-a` (log-sum-exp parametrisation, Huber loss on log residuals, '
           'L-BFGS-B from a grid of starts); both are refitted on the same bootstrap resamples of the cells, so '
           'the difference `a - (2 alpha_hat - 1)` has its own interval. With 4 tiny depths and 2 seeds this is '
           'one toy sweep: the verdict printed follows the rule, and says nothing about Appendix M at scale '
           '(the full-size sweeps and their verdicts: `docs/RESULTS.md`).'),
    ('code', "from numerics.studies.figures import plot_kind\nfrom numerics.studies.scaling import appendix_m, exponent_table\n"
             "res = appendix_m(load_cells('sweep_depth'), n_boot=200)\n"
             "print(exponent_table(res))"),
    ('code', "from IPython.display import Image\n"
             "paths = plot_kind('sweep_depth', 'appendix-m', n_boot=200)\n"
             "Image(filename=str(paths[0]))"),
    ('md', 'The fit itself, on a curve with a known exponent (what the tests check over 100 draws):'),
    ('code', "import numpy as np\n"
             "from bounds.fitting import bootstrap_scaling_law\n"
             "x = np.repeat([1.0, 2, 3, 4, 6, 8, 12, 16], 3)\n"
             "y = (0.05 + 0.5 * x**-1.2) * np.exp(np.random.default_rng(0).normal(0, 0.03, x.size))\n"
             "bf = bootstrap_scaling_law(x, y, n_boot=300)\n"
             "lo, hi = bf.alpha_interval\nprint(f'alpha_hat = {bf.fit.alpha:.3f}, 95% interval [{lo:.3f}, {hi:.3f}], E = {bf.fit.E:.4f}')"),
    ('md', '## The (A3) covariance and the certification region\n'
           'The heatmap is `Cov(m)` at the insertion site with its off-diagonal mass ratio; the region shows '
           'where each route certifies in the (`M`, `Delta_R`) plane and the population route\'s '
           'degenerate-regime crossover.'),
    ('code', "Image(filename=str(plot_kind('sweep_depth', 'covariance', cell=3)[0]))"),
    ('code', "Image(filename=str(plot_kind('sweep_depth', 'region')[0]))"),
    ('md', '## Reproducing the papers\' claims\n'
           '`depthcert reproduce --suite quick --out DIR` runs the studies behind every claim of THEORY §8–§9 '
           'and writes `DIR/report.md`. The claims are data; each names its study by import path and a '
           'decision rule fixed before running:'),
    ('code', "from numerics.studies.reproduce import CLAIMS, SUITES\n"
             "for c in CLAIMS:\n"
             "    print(f'{c.id:<26} {c.study:<58} {c.rule.text()[:60]}...')\n"
             "print({name: s.n_cells() for name, s in SUITES.items()}, 'cells')"),
]
