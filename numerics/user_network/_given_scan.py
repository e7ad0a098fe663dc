"""``dc.certify_insertion(..., scan=report)``: a certificate that reads a scan it is given instead of running one.

The given scan's samples (its probe and its curvature sample) play the part of the signal sample's first two
thirds: they fix the direction ``G``, ``beta``, ``V_pop``, the cap and the plug-in ``rho_phi``. They must be
disjoint from ``signal``, ``S`` and ``T`` (checked row by row, as the roles are), and the model must be the one
scanned (its parameters unchanged since: checked by a float64 checksum of every parameter). The whole
``signal`` sample then estimates ``Delta_R``'s lower bound.
"""
from __future__ import annotations

import torch

__all__ = ["check_given_scan", "param_checksum"]


def param_checksum(model: torch.nn.Module) -> tuple:
    """Per parameter and buffer (batch-norm statistics included): its name, shape, dtype, sum and (floating) norm,
    each reduced in the tensor's own dtype (no copy of the weights). The architecture itself (which functions run
    between the layers) is not in it."""
    with torch.no_grad():
        params = tuple((name, tuple(p.shape), str(p.dtype), float(p.sum()), float(torch.linalg.vector_norm(p)))
                       for name, p in model.named_parameters())
        buffers = tuple((name, tuple(b.shape), str(b.dtype), float(b.sum()),
                         float(torch.linalg.vector_norm(b)) if b.is_floating_point() else None)
                        for name, b in model.named_buffers())
    return params + buffers


def check_given_scan(scan, model, site: str, family: str, roles: dict, loss, hashes: dict | None = None) -> None:
    """Refuse a ``scan`` that is not a :func:`depthcert.saturation` report of ``model`` as it is now (parameters
    and buffers), that did not scan ``family`` at ``site``, whose loss is another named loss than ``loss``, or
    whose samples share a row with ``signal``, ``S`` or ``T`` (each named); a ``signal`` of fewer than 2 samples.
    The scan's own ``seed``, ``layout`` and ``width`` are the certificate's (its block is the scan's). ``hashes``:
    the roles' row hashes from :func:`~numerics.user_network._roles.check_disjoint` (each role is read once)."""
    from numerics.user_network._data import as_stream
    from numerics.user_network._report import SaturationReport
    from numerics.user_network._roles import check_disjoint

    if not isinstance(scan, SaturationReport):
        raise TypeError(f"scan == {type(scan).__name__}, must be None or a depthcert.SaturationReport (what dc.saturation returns).")
    if scan._data is None or scan._model_sum is None or scan._blocks is None:
        raise ValueError("scan: keeps no record of its samples or its model (not made by dc.saturation in this session), "
                         "must be a report dc.saturation returned here.")
    if site not in scan._blocks:
        raise ValueError(f"site == {site!r}, must be a site the scan holds: {list(scan._blocks)}.")
    if family not in getattr(scan._blocks[site], "slices", {}):
        raise ValueError(f"scan: did not scan the family {family!r} at {site} (its tangent family), must be "
                         f"dc.saturation(..., families=[{family!r}]).")
    if isinstance(loss, str) and scan.loss != loss:
        raise ValueError(f"scan: made with loss {scan.loss!r}, must be made with the certificate's loss {loss!r}.")
    if len(roles["signal"]) < 2:
        raise ValueError(f"signal has {len(roles['signal'])} samples, must have >= 2 (with a given scan the whole "
                         "signal sample estimates Delta_R's lower bound).")
    if param_checksum(model) != scan._model_sum:
        raise ValueError("scan: was made on another model, or the model's parameters or buffers changed since, must "
                         "be a scan of this model as it is now.")
    probe, (xc, yc) = scan._data
    check_disjoint({**roles, "probe": probe}, hashes)
    check_disjoint({**roles, "probe": as_stream((xc, yc), "probe", model)}, hashes)
