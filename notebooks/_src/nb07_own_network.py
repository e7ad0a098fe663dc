"""Cells of notebooks/07_own_network.ipynb (built by notebooks/_build.py; notebooks only call the library)."""

CELLS = [
    ('md', '# depthcert on your own network\nA 1-D residual CNN written here (nothing from depthcert\'s model zoo), on synthetic data: '
           '**scan** every block for first-order saturation (is it deep enough, where would a block help?), look at the '
           'per-site **table**, **grow** it by one block, and attempt Paper A\'s **certificate** at the best site. The '
           'conv state `(N, C, L)` is read channels-first (`d = C`), as the table\'s `layout` column says. Sizes are tiny '
           '(seconds); the same calls take a `DataLoader`, a `Dataset`, numpy arrays or any iterable of batches.'),
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
             "train, probe = make_data(1000, seed=1), make_data(512, seed=2)\n"
             "signal, S, T = make_data(400, seed=3), make_data(400, seed=4), make_data(400, seed=5)"),
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
             "cert.table()[['route', 'certified', 'bound', 'missing']]"),
]
