"""Importing depthcert (and its integrations' modules) works without Lightning and transformers; making a
callback then names the extra to install."""
import subprocess
import sys

_CHILD = r"""
import sys
for lib in ("lightning", "pytorch_lightning", "transformers", "accelerate"):
    sys.modules[lib] = None          # as if not installed: any import of them fails
import depthcert, depthcert.integrations
import depthcert.integrations.lightning as L, depthcert.integrations.transformers as T
import depthcert as dc
dc.saturation  # the API itself imports
for cls, extra in ((L.SaturationCallback, "lightning"), (T.SaturationCallback, "hf")):
    try:
        cls(probe=None)
    except ImportError as exc:
        assert f"depthcert[{extra}]" in str(exc), exc
    else:
        raise SystemExit("no ImportError")
print("ok")
"""


def test_depthcert_imports_without_the_loop_libraries():
    out = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
