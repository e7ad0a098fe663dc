"""Cells of notebooks/07_own_network.ipynb (built by notebooks/_build.py; notebooks only call the library)."""

CELLS = [
    ('md', '# depthcert on your own network\nA 1-D residual CNN written here (nothing from depthcert\'s model zoo), on synthetic data: '
           '**scan** every block for first-order saturation (is it deep enough, where would a block help?), look at the '
           'per-site **table**, **grow** it by one block, and attempt Paper A\'s **certificate** at the best site. The '
           'conv state `(N, C, L)` is read channels-first (`d = C`), as the table\'s `layout` column says. Sizes are tiny '
           '(seconds); the same calls take a `DataLoader`, a `Dataset`, numpy arrays or any iterable of batches. The network is '
           'trained first: your own network arrives trained, and an untrained one is no question worth asking.'),
    ('code', "import torch\nfrom torch import nn\nimport depthcert as dc\n\n"
             "class Block(nn.Module):\n    def __init__(self, c):\n        super().__init__()\n"
             "        self.conv1, self.conv2 = nn.Conv1d(c, c, 3, padding=1), nn.Conv1d(c, c, 3, padding=1)\n"
             "        self.norm = nn.GroupNorm(4, c)\n\n    def forward(self, x):\n"
             "        return self.norm(x + self.conv2(torch.relu(self.conv1(x))))\n\n"
             "class ResCNN(nn.Module):\n    def __init__(self, c=16, depth=2, classes=4):\n        super().__init__()\n"
             "        self.stem = nn.Conv1d(1, c, 3, padding=1)\n        self.blocks = nn.ModuleList(Block(c) for _ in range(depth))\n"
             "        self.head = nn.Linear(c, classes)\n\n    def forward(self, x):\n        x = self.stem(x)\n"
             "        for block in self.blocks:\n            x = block(x)\n        return self.head(x.mean(dim=2))\n\n"
             "def make_data(n, seed, length=32, classes=4):\n    g = torch.Generator().manual_seed(seed)\n"
             "    y = torch.randint(0, classes, (n,), generator=g)\n    t = torch.arange(length, dtype=torch.float64)\n"
             "    centre = (y.double() + 0.5) * length / classes\n"
             "    x = torch.exp(-((t - centre[:, None]) ** 2) / 8.0) + 0.7 * torch.randn(n, length, generator=g, dtype=torch.float64)\n"
             "    return x[:, None, :], y\n\n"
             "torch.manual_seed(0)\nnet = ResCNN().double()\n"
             "train, probe = make_data(1000, seed=1), make_data(2048, seed=2)\n"
             "signal, S, T = make_data(1500, seed=3), make_data(2000, seed=4), make_data(2000, seed=5)\n\n"
             "opt = torch.optim.Adam(net.parameters(), lr=1e-2)   # train it on its own sample (role: train)\n"
             "for _ in range(300):\n    opt.zero_grad()\n    nn.functional.cross_entropy(net(train[0]), train[1]).backward()\n"
             "    opt.step()\n"
             "with torch.no_grad():\n"
             "    print('test accuracy', float((net(T[0]).argmax(1) == T[1]).double().mean()))"),
    ('md', '## The scan\nOne backward pass gives every per-sample activation gradient at every site; the verdict is '
           '"improvable" (a certified lower bound on the first-order gain), "saturated" (an upper bound below `eps`) or '
           '"undetermined at this probe size" (with the probe size that would decide).'),
    ('code', "rep = dc.saturation(net, probe, loss='cross_entropy', sites='blocks.*')\nprint(rep)\n"
             "rep.table()[['site', 'layout', 'd', 'P', 'predicted_gain', 'certified_gain', 'gain_ucb']]"),
    ('code', "from IPython.display import Image\nrep.plot('saturation.png')\nImage(filename='saturation.png')"),
    ('md', '## One growth step and a certificate attempt\n`insert_block` and `grow` return copies: the model above is never '
           'changed. The certificate asks for its samples by role (signal, S, T), checks that they do not overlap, and '
           'evaluates every route; the constants that cannot be derived for this network (`B`, `L_top`) are given here, '
           'and a route without them says what it misses.'),
    ('code', "grown = dc.grow(net, train=train, probe=probe, loss='cross_entropy', max_blocks=1, steps=20)\n"
             "grown.trajectory[['step', 'verdict', 'best_site', 'immediate_gain', 'probe_loss', 'stop']]"),
    ('code', "cert = dc.certify_insertion(net, rep.best_site, signal=signal, S=S, T=T, loss='cross_entropy', B=10.0,\n"
             "                            L_top=5.0, erm_steps=5)\n"
             "print(f'certificate ({cert.route}): certified={cert.certified}, bound={cert.bound}')\n"
             "cert.table()[['route', 'certified', 'bound', 'improvement']]"),
    ('md', '## Why the bound is what it is\nA route certifies when its bound falls below `L_test(f_old)`. The default '
           'route (Theorem 3, `direct_route`) gains `Delta_test^R + Delta_ERM` (what the block gains on `T` and `S`) '
           'and pays `2 (eps_M + eps_K)` (the generalisation costs of the capped class on `S` and `T`, [glossary]'
           '(../../glossary.md#eps_m-and-eps_k)); the costs are made of `B`, `L_loss`, `L_top`, `rho_phi` and the cap, '
           'and fall like `1/sqrt(M)` (THEORY §4: each `eps` is a Rademacher term and a confidence term, printed below). So the ratio of the two says how many more samples the same gain needs. Rows that '
           'lack a constant (`kappa`, `A_norm`) say so in `missing`.'),
    ('code', "import math\n\nq, row = cert.quantities, next(r for r in cert.rows if r['route'] == 'direct_route')\n"
             "gain = q['delta_test_R'] + q['delta_erm_S']\ncost = row['bound'] - (q['L_T_old'] - gain)\n"
             "print(f\"L_test on T: {q['L_T_old']:.4f} (old) -> {q['L_T_new']:.4f} (new)\")\n"
             "print(f'direct route: gain {gain:.3g} against costs 2 (eps_M + eps_K) = {cost:.3g}')\n"
             "c, M, delta = cert.constants, q['M'], 0.05 / 4          # the certificate's delta = level / 4\n"
             "rad = 2 * math.sqrt(2) * c['L_loss'] * c['L_top'] * q['nu_V'] * math.sqrt(q['d']) * q['rho_phi'] / math.sqrt(M)\n"
             "conf = c['B'] * math.sqrt(math.log(2 / delta) / (2 * M))\n"
             "print(f'each eps = Rademacher term {rad:.3g} (2 sqrt(2) L_loss L_top nu_V sqrt(d) rho_phi / sqrt(M)) '\n"
             "      f'+ confidence term {conf:.3g} (B sqrt(ln(2/delta) / (2M))); 4 eps = {4 * (rad + conf):.3g}')\n"
             "print(f\"rho_phi = {q['rho_phi']:.3g} is the norm of the whole state over its P = {q['P']} positions\")\n"
             "if gain > 0:\n"
             "    print(f'the same gain certifies with about {(cost / gain) ** 2:.2g} times more samples in S and T')\n"
             "else:\n    print('no gain on T: no sample size certifies this insertion')\n"
             "best = min((r for r in cert.rows if r['bound'] is not None and r['bound'] == r['bound']), key=lambda r: r['bound'])\n"
             "print(f\"closest route: {best['route']} (bound {best['bound']:.4g}): {best['message']}\")"),
    ('md', '**Reading it.** On a trained network one readout block at the best site gains little on `T`, while the '
           'worst-case costs of the uniform bounds (`eps_M`, `eps_K`) do not depend on how small the gain is: the '
           'certificate is honest that these sample sizes cannot show it. The printout says which term dominates: on a '
           'convolutional state the Rademacher term carries `rho_phi`, the norm of the whole state over all `P` positions '
           '(THEORY §10: a factor `sqrt(P)` over one position), and `B`, `L_top`, given here as assumptions. What would certify is a larger gain (a network '
           'further from saturation, as in `depthcert demo`), many more samples, or one of this project\'s routes fixed '
           'before the data that pay less (the localised routes of THEORY §6b, **Choice**; give `A_norm` for a linear '
           'head to evaluate their tighter forms).'),
]
