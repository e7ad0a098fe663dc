"""Samples of ``benchmarks/bench_trial_minilm.py``: from one corpus role or a union of roles, optionally at most
``per_doc`` sequences of each document."""
from __future__ import annotations

__all__ = ["_capped", "_from_roles"]


def _from_roles(c, role, n: int, seed: int, per_doc: int | None = None):
    """``n`` sequences (at most all) of one role (``c.sample``) or of the union of a list of roles, order from ``seed``;
    ``per_doc``: first at most that many sequences of each document (drawn from ``seed``), so that a few long
    documents do not make up most of the sample."""
    import torch

    if isinstance(role, str) and per_doc is None:
        return c.sample(role, min(n, c.x[role].shape[0]), seed=seed)
    roles = [role] if isinstance(role, str) else list(role)
    g = torch.Generator().manual_seed(int(seed))
    keep = {r: torch.arange(c.x[r].shape[0]) if per_doc is None else _capped(c.doc_of[r], per_doc, g) for r in roles}
    x, y = torch.cat([c.x[r][keep[r]] for r in roles]), torch.cat([c.y[r][keep[r]] for r in roles])
    idx = torch.randperm(x.shape[0], generator=torch.Generator().manual_seed(int(seed)))[:n]
    return x[idx], y[idx]


def _capped(doc, per_doc: int, g):
    """Indices (sorted) of at most ``per_doc`` sequences of each document (``doc``: each sequence's document), a
    random choice from ``g`` within each document."""
    import torch

    perm = torch.randperm(doc.numel(), generator=g)
    order = torch.argsort(doc[perm], stable=True)
    ds = doc[perm][order]
    rank = torch.arange(ds.numel()) - torch.searchsorted(ds, ds)
    return perm[order[rank < per_doc]].sort().values
