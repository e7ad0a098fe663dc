"""Write the golden outputs of issue 15 (run once, on the commit before the restructure).

    python tests/golden/make_golden.py      # from the repository root

Writes ``tests/golden/data/``: the demo's ``result.json``, the golden sweep's
``results.csv`` and ``depthcert bounds --json`` on every example setup. The test
``tests/test_golden.py`` recomputes them and compares every number.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BOUNDS_EXAMPLES = ("setup.toml", "setup_variants.toml")


def _cli(*args: str, cwd: Path = ROOT) -> str:
    # one thread: the golden numbers do not depend on the BLAS reduction order
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "depthcert", *args], cwd=cwd, check=True,
                         capture_output=True, text=True, env=env)
    return out.stdout


def produce(dest: Path) -> None:
    """Run the three golden computations and write their outputs into ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        _cli("demo", "--out", str(Path(tmp) / "demo"), "--json")
        shutil.copy(Path(tmp) / "demo" / "result.json", dest / "demo_result.json")
        _cli("sweep", "--config", str(HERE / "sweep.toml"), "--out", str(Path(tmp) / "sweep"),
             "--no-progress", "--workers", "1")
        shutil.copy(Path(tmp) / "sweep" / "results.csv", dest / "sweep_results.csv")
    for name in BOUNDS_EXAMPLES:
        text = _cli("bounds", "--config", str(ROOT / "examples" / name), "--json")
        (dest / f"bounds_{Path(name).stem}.json").write_text(text)


if __name__ == "__main__":
    produce(HERE / "data")
