"""One tolerance table keyed by dtype (STYLE.md: Numerics). Only add keys, never change."""
TOL = {"float64": dict(rtol=1e-10, atol=1e-12), "float32": dict(rtol=1e-5, atol=1e-6)}
