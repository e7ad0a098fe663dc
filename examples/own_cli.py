"""The CLI on your own network: a model factory and a data function for ``--model``/``--data``.

    depthcert saturation --model examples/own_cli.py:model --data examples/own_cli.py:data --out DIR
    depthcert grow --model examples/own_cli.py:model --data examples/own_cli.py:data --max-blocks 1 --out DIR
    depthcert certify --model examples/own_cli.py:model --data examples/own_cli.py:data --B 10 --L-top 5 --out DIR

``model()`` returns the 1-D residual CNN of ``examples/own_network.py`` (untrained, float64,
seeded); ``data()`` returns every data role a command may read, each its own independent draw
(a command takes the roles it needs: saturation ``probe``; grow ``train`` and ``probe``; certify
``signal``, ``S`` and ``T``).
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from own_network import ResCNN, make_data  # noqa: E402


def model():
    """The network to scan: ``ResCNN`` (2 blocks, 16 channels, group norm), seed 0, float64."""
    torch.manual_seed(0)
    return ResCNN().double()


def data():
    """``{role: (x, y)}``, one seed per role (the roles never share a sample)."""
    sizes = {"train": 2000, "probe": 1024, "signal": 1000, "S": 1000, "T": 1000}
    return {role: make_data(n, seed=seed) for seed, (role, n) in enumerate(sizes.items(), start=1)}
