"""Test accuracy of the 1-D residual CNN on the published MNIST-1D split, and the sampler's speed.

Run ``OMP_NUM_THREADS=1 python benchmarks/bench_mnist1d_accuracy.py`` (``--quick`` for a
smoke run). Trains :class:`numerics.zoo_cnn1d.ResCNN1d` (depth 4, width 32, GroupNorm,
float32) with Adam (:func:`numerics.training.train`, cross-entropy, mini-batches of 128)
on the published train split (4000) and reports the accuracy on the published test split
(1000). References (Greydanus 2020): logistic 32%, MLP 68%, CNN 94%.

Also times :func:`numerics.mnist1d.sample` (i.i.d. samples per second, one thread).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from numerics.mnist1d import published_split, sample  # noqa: E402
from numerics.training import train  # noqa: E402
from numerics.zoo_cnn1d import ResCNN1d  # noqa: E402

REFERENCES = {"logistic": 0.32, "mlp": 0.68, "cnn": 0.94}


@torch.no_grad()
def accuracy(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """Fraction of ``argmax model(x) == y``."""
    return float((model(x).argmax(dim=1) == y).double().mean())


def train_and_test(depth: int = 4, width: int = 32, steps: int = 3000, lr: float = 3e-3,
                   batch_size: int = 128, seed: int = 0) -> dict:
    """Train on the published train split, evaluate on its test split; a dict of the numbers."""
    (x, y), (x_test, y_test) = published_split()
    net = ResCNN1d(1, width, depth, 10, seed=seed)
    start = time.process_time()
    result = train(net, dict(net.named_parameters()), x, y, optimizer="adam", lr=lr, steps=steps,
                   batch_size=batch_size, seed=seed, loss="cross_entropy")
    cpu_s = time.process_time() - start
    net.eval()
    return {"depth": depth, "width": width, "steps": steps, "lr": lr, "batch_size": batch_size,
            "seed": seed, "train_loss": result.final_loss, "train_accuracy": accuracy(net, x, y),
            "test_accuracy": accuracy(net, x_test, y_test), "train_cpu_s": round(cpu_s, 1),
            "references": REFERENCES}


def sampler_rate(n: int = 1_000_000) -> dict:
    """Samples per second of :func:`sample` for ``n`` samples (after one warm-up call)."""
    sample(10, 0)
    start = time.perf_counter()
    sample(n, 1)
    wall = time.perf_counter() - start
    return {"n": n, "wall_s": round(wall, 2), "samples_per_s": round(n / wall)}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: 50 steps, 10^4 samples")
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    steps = 50 if args.quick else args.steps
    out = {"accuracy": train_and_test(steps=steps, seed=args.seed),
           "sampler": sampler_rate(10_000 if args.quick else 1_000_000)}
    print(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
