"""depthcert: when does adding depth to a normalised residual network provably help?

The thin user-facing layer: the ``depthcert`` CLI, config loading and reports. The
mathematics lives in :mod:`bounds` (symbolic statements), :mod:`proofs_check` (machine
checks of their proof chains) and :mod:`numerics` (torch measurements).
"""
__version__ = "0.1.0"
__all__ = ["__version__"]
