"""Cells of notebooks/03_numerics.ipynb (built by notebooks/_build.py; notebooks only call the library)."""

CELLS = [
    ('md', '# Theory meets training (light sizes)\nInsert a zero-output block into a trained post-norm residual network, measure every quantity of Theorems 1–3, evaluate both routes through `bounds/`. `depthcert demo` runs the full-size version (it certifies); here the sizes are tiny, so expect the paper\'s routes to miss (their `2 eps_M` is large at small `M`) and the report to say by how much; the localised route of THEORY §6b, which pays for loss differences instead of losses, can still certify.'),
    ('code', "import torch\nfrom numerics import PostNormResMLP, insert_block\nnet = PostNormResMLP(3, 8, 2, 4, seed=0)\nx = torch.randn(64, 3, dtype=torch.float64)\nexpanded = insert_block(net, at=1, family='readout', width=16, seed=1)\nprint('function-preserving at theta = 0:', torch.equal(net(x), expanded(x)))"),
    ('code', "from numerics.studies.run import run_experiment, format_table\nTINY = {'sizes': {'M': 3000, 'K': 3000, 'population': 3000}, 'reference': {'n': 500, 'steps': 15},\n        'block_training': {'steps': 60, 'batch_size': 512}}\nres = run_experiment(TINY, 'run_tiny')\nprint(format_table(res))"),
    ('code', "from IPython.display import Image\nImage(filename='run_tiny/bound_vs_observed.png')"),
    ('md', '## A depth sweep (resumable; each point saved atomically)\nThe first-order signal `||G||` and the measured gain `Delta_R` of one insertion, against the reference depth.'),
    ('code', "from numerics.studies.sweeps import run_sweep, load_points, plot_sweep\npts = run_sweep(TINY, {'model.depth': [1, 2, 3]}, 'sweep_depth', progress=False)\npts = load_points('sweep_depth')\nImage(filename=str(plot_sweep(pts, 'model.depth', ['quantities.G_norm', 'quantities.delta_R'], 'sweep.png')))"),
    ('md', 'Appendix M fits `s(D) ≈ c D^-alpha` from such measurements; with three tiny points (one seed each) the interval describes these three points, not a law of depth.'),
    ('code', "from bounds.appendix_m import fit_power_law\nD = [p['params']['model.depth'] for p in pts]\nG = [p['result']['quantities']['G_norm'] for p in pts]\nfit = fit_power_law(D, G, 0.95)\nlo, hi = fit.exponent_ci\nprint(f'alpha_hat = {fit.exponent:.3f}, 95% CI [{lo:.3f}, {hi:.3f}]')"),
]
