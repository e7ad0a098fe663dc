"""The numpydoc texts of :func:`depthcert.constants` and :class:`depthcert.Constants` (their module,
``_constants``, has no room for them under STYLE's 400-line rule): :func:`depthcert.api._docstring.doc`
makes each the object's ``__doc__``, where the API reference and the doctests read it."""
from __future__ import annotations

__all__ = ["CONSTANTS", "CONSTANTS_CLASS"]

CONSTANTS = """
The sure constants of the certificate at one site: ``B``, ``L_loss``, ``L_top``/``A_norm``,
``kappa``, ``rho`` and ``rho_phi``, derived from the network's weights.

Nothing is estimated from data: every value is a bound that holds for every input, read off
a float64 copy of the model in eval mode (the derivations: THEORY §10, *Constants for common
heads*; :doc:`/models` lists what is derived for which head).

* ``rho`` -- when the site's output is a per-sample normalisation (``GroupNorm``,
  ``LayerNorm``, ``RMSNorm``) over a state of ``S`` numbers: ``max|gamma| sqrt(S) +
  sqrt(S / n_g) ||beta||``. BatchNorm in eval mode is an affine map of an unbounded input:
  no radius.
* ``L_top = A_norm = ||W||_2`` and ``kappa`` -- when everything above the site is affine,
  ``f_top(u) = W u + c`` (a linear head, average pooling then a linear head, BatchNorm in
  eval mode folded in); ``kappa`` is the largest curvature of the loss through the head
  (squared loss ``2 ||W||_2^2``, cross-entropy ``max_{k,j} ||W_k - W_j||^2 / 4``).
* ``B`` and ``L_loss`` -- cross-entropy: ``L_loss = sqrt(2)`` and ``B = log C + max_{k,y}
  (||W_k - W_y|| R + c_k - c_y)`` on head inputs of radius ``R``; squared loss (given
  ``y_bound``): ``F = ||W||_2 R + ||c||``, ``B = (F + Y)^2``, ``L_loss = 2 (F + Y)``. When
  the block sits right below the head, ``R`` depends on the block (:meth:`Constants.B_with`).
* ``rho_phi`` -- depends on the inserted block's features (:meth:`Constants.rho_phi_for`).

What cannot be derived is ``None``, with its reason in ``why``.

Parameters
----------
model : torch.nn.Module
    The network (never changed).
site : str
    One module path, a site of :func:`depthcert.saturation` (``"blocks.2"``).
data : tuple, Dataset or DataLoader
    ``(x, y)`` tensors or any kind of data :func:`depthcert.saturation` accepts; its first 4 samples run the
    forward passes (the state's shape, the layers called after the site).
loss : {"cross_entropy", "squared"}, default "cross_entropy"
    A user's loss function has no derived constants.
y_bound : float or None, keyword-only, default None
    ``Y >= ||y||`` for the squared loss (``B`` and ``L_loss`` need it).
output : int, str or callable, keyword-only, default None
    The logits in the model's output when it returns a tuple or a dict (a Hugging Face
    ``ModelOutput``: ``output="logits"``), as in :func:`depthcert.saturation`; a dict without it is
    refused naming ``output``. Sequence logits ``(n, T, V)`` under a final normalisation and a
    linear head applied per token (a decoder's ``lm_head``, tied or not): ``B = log V + max_{k,y}
    (||W_k - W_y|| R + c_k - c_y)`` with ``R`` one token's radius (the per-sample loss is the mean over
    positions); ``L_top``, ``A_norm`` and ``kappa`` are not derived there (no whole-state affine head).

Returns
-------
Constants
    The values, ``how`` each was derived and ``why`` the others were not; pass it as
    ``dc.certify_insertion(..., constants=c)``.

Raises
------
TypeError, ValueError
    A bad model (e.g. BatchNorm in train mode), site, loss, ``y_bound`` or data, each named
    with the allowed values.

Examples
--------
    >>> import math
    >>> import torch
    >>> from torch import nn
    >>> import depthcert as dc
    >>> _ = torch.manual_seed(0)
    >>> net = nn.Sequential(nn.Linear(3, 8), nn.LayerNorm(8), nn.Linear(8, 2)).double()
    >>> x = torch.randn(16, 3, dtype=torch.float64)
    >>> c = dc.constants(net, "1", (x, (x[:, 0] > 0).long()))
    >>> math.isclose(c.rho, math.sqrt(8))                  # a LayerNorm output of 8 numbers
    True
    >>> W = net[2].weight.detach()
    >>> math.isclose(c.L_top, float(torch.linalg.matrix_norm(W, ord=2)))   # the linear head
    True
    >>> c.B is None, c.why["B"].startswith("the block sits right below the affine head")
    (True, True)
"""

CONSTANTS_CLASS = """
The sure constants of :func:`depthcert.constants` at one site, each a value or ``None``.

The seven constants (THEORY §1), each a ``float`` or ``None`` where not derived:
``B`` (the loss range), ``L_loss`` (the loss's Lipschitz constant), ``L_top`` (the Lipschitz
constant of the network above the site), ``A_norm`` (its linear part's norm), ``kappa`` (the
curvature of the loss through the head), ``rho`` (the radius of the state at the site) and
``rho_phi`` (the radius of the block's features).

Attributes
----------
site : str
    The module path the constants are for.
loss : str
    ``"cross_entropy"`` or ``"squared"``.
state_shape : tuple of int
    The shape of one sample's state at the site.
why : dict of str
    For each constant that is ``None``: why it is not derived.
how : dict of str
    For each derived constant: how it was derived.
at_top : bool
    Whether the layers above the site are one affine map (an affine head right above).
head : tuple or None
    ``(W, c, y_bound, R)`` of the affine head and its input's radius, used by
    :meth:`B_with` (None without an affine head and ``rho``).

Examples
--------
    >>> import math
    >>> import torch
    >>> from torch import nn
    >>> import depthcert as dc
    >>> _ = torch.manual_seed(0)
    >>> net = nn.Sequential(nn.Linear(3, 8), nn.LayerNorm(8), nn.Linear(8, 2)).double()
    >>> x = torch.randn(16, 3, dtype=torch.float64)
    >>> c = dc.constants(net, "1", (x, (x[:, 0] > 0).long()))
    >>> sorted(c.given())                              # the keywords of certify_insertion
    ['A_norm', 'B', 'L_loss', 'L_top', 'kappa']
    >>> list(c.table().columns)
    ['constant', 'value', 'derivation']
    >>> W, b = net[2].weight.detach(), net[2].bias.detach()   # B on head inputs of radius rho + 0.5
    >>> R = c.rho + 0.5
    >>> B = math.log(2) + max(float((W[k] - W[j]).norm()) * R + float(b[k] - b[j]) for k in range(2) for j in range(2))
    >>> math.isclose(c.B_with(0.5), B)
    True
"""
