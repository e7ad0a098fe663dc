#!/usr/bin/env bash
# A wheel built from the repository holds every subpackage and works outside the source tree:
# install it (no dependencies: they come from the environment) into a fresh virtual environment
# and run `depthcert demo` and the public API from an empty folder (issue 16, packaging).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
python -m pip wheel --no-deps --no-build-isolation -q -w "$tmp/dist" "$root"
python -m venv --system-site-packages "$tmp/venv"
"$tmp/venv/bin/python" -m pip install -q --no-deps --no-index "$tmp"/dist/*.whl
cd "$tmp"
"$tmp/venv/bin/python" - <<'PY'
import sys

import torch
from torch import nn

import depthcert as dc
import numerics
import numerics.estimators
import numerics.studies.run
import plumbing

for mod in (dc, numerics, numerics.studies.run, numerics.estimators, plumbing):
    assert mod.__file__.startswith(sys.prefix), f"{mod.__name__} imported from {mod.__file__}, not the wheel"


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Linear(4, 8)
        self.blocks = nn.ModuleList(nn.Sequential(nn.Linear(8, 8), nn.LayerNorm(8)) for _ in range(2))
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        x = self.stem(x)
        for b in self.blocks:
            x = x + b(x)
        return self.head(x)


g = torch.Generator().manual_seed(0)
x, y = torch.randn(512, 4, generator=g), torch.randint(0, 3, (512,), generator=g)
rep = dc.saturation(Net(), (x, y), loss="cross_entropy", sites="blocks.*")
assert rep.verdict in ("improvable", "saturated", "undetermined") and len(rep.table()) == 2
print("wheel check: public API ok, verdict", rep.verdict)
PY
"$tmp/venv/bin/depthcert" demo --out "$tmp/demo" > "$tmp/demo.log"
test -s "$tmp/demo/result.json"
echo "wheel check: depthcert demo from the installed wheel ok"
