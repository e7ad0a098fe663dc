"""``examples/own_network.py`` runs through the public API only; the public names exist."""
import ast
import runpy
from pathlib import Path

import pytest

import depthcert as dc

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "own_network.py"


def test_public_names_exist_and_match_all():
    import depthcert.api as api

    for name in api.__all__:
        assert getattr(dc, name) is getattr(api, name)
    assert set(api.__all__) <= set(dc.__all__)
    assert {"saturation", "insert_block", "grow", "certify_insertion", "SaturationReport"} <= set(dc.__all__)
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        dc.nope


def _depthcert_call_lines(tree) -> set:
    """Source lines that call ``dc.*`` or a method of an object returned by ``dc.*``."""
    made = {t.id for node in ast.walk(tree) if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Attribute)
            and getattr(node.value.func.value, "id", None) == "dc" for t in node.targets if isinstance(t, ast.Name)}
    return {node.lineno for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and getattr(node.func.value, "id", None) in made | {"dc"}}


def test_example_uses_no_underscore_import_and_at_most_15_depthcert_calls():
    tree = ast.parse(EXAMPLE.read_text())
    mods = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    mods += [n.module + "." + a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names]
    assert not [m for m in mods if any(p.startswith("_") for p in m.split("."))]
    assert "depthcert" in mods and not [m for m in mods if m.startswith(("numerics", "bounds"))]
    lines = _depthcert_call_lines(tree)
    assert 5 <= len(lines) <= 15


def test_example_runs(tmp_path):
    ns = runpy.run_path(str(EXAMPLE))
    rep, grown, cert = ns["main"](tmp_path, 0.25)
    assert rep.verdict in ("improvable", "saturated", "undetermined")
    assert all(r["layout"] == "NCL" and r["d"] == 16 for r in rep.sites)
    assert (tmp_path / "saturation.json").exists() and (tmp_path / "saturation.png").exists()
    assert len(grown.trajectory) >= 1 and len(cert.table()) >= 2
