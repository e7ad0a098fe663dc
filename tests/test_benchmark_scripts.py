"""Every benchmark script that imports ``benchmarks.*`` runs as documented (``python benchmarks/X.py``) on a machine
where only the package is installed: ``benchmarks`` is not an installed package, so the script must put the
repository on ``sys.path`` itself, before its first ``benchmarks`` import."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETUP = "sys.path.insert(0, str(Path(__file__).resolve().parents[1]))"


def lacks_path_setup(text: str) -> bool:
    """True when ``text`` imports ``benchmarks`` (anywhere) without :data:`SETUP` at module level before the first such
    import."""
    first = re.search(r"^\s*(from benchmarks[. ]|import benchmarks)", text, re.M)
    if first is None:
        return False
    setup = re.search(r"^" + re.escape(SETUP), text, re.M)
    return setup is None or setup.start() > first.start()


def test_a_script_without_the_path_setup_is_flagged():
    assert lacks_path_setup("import sys\n\ndef f():\n    from benchmarks.bench_bounds import x\n")
    assert lacks_path_setup(f"from benchmarks.a import b\n{SETUP}\n")          # set up after the import: too late
    assert not lacks_path_setup(f"import sys\n{SETUP}\nfrom benchmarks.a import b\n")
    assert not lacks_path_setup("import numpy\n")


def test_every_benchmark_script_that_imports_benchmarks_sets_up_its_path():
    bad = [p.name for p in sorted((ROOT / "benchmarks").glob("*.py")) if lacks_path_setup(p.read_text())]
    assert not bad, f"{bad}: add `{SETUP}` before the first `benchmarks` import"
