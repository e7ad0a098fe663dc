"""Saturation scans inside training loops: ``depthcert.integrations.lightning`` and ``depthcert.integrations.transformers``.

Each submodule imports its library (``pip install 'depthcert[lightning]'`` / ``'depthcert[hf]'``)
only when it is imported itself; ``import depthcert`` and this package import neither.
"""
__all__ = ["lightning", "transformers"]
