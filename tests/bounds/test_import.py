"""bounds/ must import without torch, and its public names must exist."""
import subprocess
import sys

import bounds


def test_bounds_imports_without_torch():
    # A meta-path finder that makes `import torch` fail: bounds must not need it.
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'torch' or name.startswith('torch.'):\n"
        "            raise ImportError('torch is blocked in this test')\n"
        "sys.meta_path.insert(0, Block())\n"
        "import bounds, bounds.routes, bounds.regimes, bounds.appendix_m, bounds.loss, bounds.generalisation\n"
        "import bounds.variants, bounds.variant_routes, bounds.dependence, bounds.route_choice\n"
        "import depthcert.config, depthcert._cmd_bounds\n"
        "assert 'torch' not in sys.modules\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_public_names_exist():
    for name in bounds.__all__:
        assert hasattr(bounds, name), name
    assert len(bounds.ALL_THEOREMS) == 7
