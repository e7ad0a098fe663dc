"""``dc.insert_block``: a copy of the model with ``u -> u + h(u)`` inserted at a site (THEORY §1, §3).

Wrap, never mutate: the caller's model is deep-copied first; the block is inserted into the
copy with :func:`numerics.user_network._attach.attach_unit`, which keeps every original parameter's
name and value (the new block's parameters: :func:`depthcert.new_parameters`). The block is a
:class:`numerics.families.ProtocolBlock` of one family with the scan's features (same seed,
same state layout), so the scan's statistics of that family's columns are its statistics.

* ``init="zero"`` -- ``V = 0``: ``h = 0``, the copy computes exactly the model's function.
* ``init="jumpboard"`` -- Theorem 1's step along ``-G_f`` (``G_f`` the scan's cross-gradient of
  the family's columns): ``V = -(slope / beta_f) G_f / ||G_f||``, ``beta_f`` along ``-G_f`` on the
  scan's step sample (the first half of its curvature sample): the least value, from the least
  curvature a nonnegative loss allows (:func:`numerics.user_network._suggestion.nonnegative_beta`) up,
  whose descent inequality holds at its own step (``BETA``), and ``slope = <G_x, G_f/||G_f||>`` on
  it. The scan's :meth:`SaturationReport.gain_interval` is the confidence interval of this
  insertion's immediate gain, measured on the other half; the jumpboard the scan checked is
  inserted as checked (its stored ``V``).

A jumpboard is inserted only when the scan checked it: the scan's suggestion
(``rep.suggestion``), or a family at the checked site whose gain interval lies above zero.
Otherwise :func:`insert_block` refuses with the reason (``rep.suggestion_reason``) unless
``force=True`` (module :mod:`numerics.user_network._suggestion`).
"""
from __future__ import annotations

import copy

import torch
from torch import nn

from numerics.user_network._attach import attach_unit
from numerics.user_network._report import SaturationReport
from numerics.user_network._scan import eval_mode, site_seed
from numerics.user_network._suggestion import RefusedInsertion
from numerics.estimators import curvature_along
from numerics.families import FAMILIES, ProtocolBlock
from numerics.residual_families import tangent_family

#: **Choice**: how ``beta`` is measured on the step sample (``numerics.estimators.curvature_along``):
#: ``"descent"``, the least ``beta`` whose descent inequality holds at its own step (one backward,
#: then forwards); ``dc.insert_block``'s jumpboard uses the same.
BETA = "descent"

__all__ = ["INITS", "LAYER_INITS", "family_block", "insert_block", "jumpboard_block", "real_layer"]

INITS = ("zero", "jumpboard")
#: the inits of a real decoder layer (Hugging Face decoders, :mod:`numerics.interop.hf_layers`).
LAYER_INITS = ("zero", "copy_zero")


def _check(model, site, family, init, scan) -> None:
    if not isinstance(model, nn.Module):
        raise TypeError(f"model is a {type(model).__name__}, must be a torch.nn.Module.")
    if not isinstance(scan, SaturationReport) or scan._blocks is None:
        raise TypeError(f"scan is a {type(scan).__name__}, must be the SaturationReport of dc.saturation(model, ...) "
                        "(it fixes the block's features and the state layout).")
    scan.site(site)   # raises ValueError naming the scanned sites
    if family not in FAMILIES or family not in scan._blocks[site].slices:
        raise ValueError(f"family == {family!r}, must be one of the scanned families {list(scan._blocks[site].slices)}.")
    if init not in INITS:
        extra = " (\"copy_zero\" only at a decoder layer of a Hugging Face decoder: llama, mistral, qwen2, gpt2, gpt_neox)" \
            if init == "copy_zero" else ""
        raise ValueError(f"init == {init!r}, must be one of {list(INITS)}{extra}.")


def _jumpboard(net, site: str, block: ProtocolBlock, G_f: torch.Tensor, curvature, loss, replay=True,
               info: dict | None = None, known=None):
    """``(V, beta_f)``: Theorem 1's step along ``-G_f`` (zero and None when there is no descent);
    ``info`` (if given) receives the step sample's measured gain at that step (``"gain_step"``);
    ``known``: ``(R(0), G_x)`` on the step sample (the family's columns), so that the slope costs no pass."""
    if not float(G_f.norm()) > 0:
        return torch.zeros_like(block.V), None
    xc, yc = curvature
    kn = None if known is None else (known[0], float((known[1] * G_f.to(known[1].dtype)).sum() / G_f.norm()))
    with eval_mode(net):
        est, slope, _, realised = curvature_along(net, site, block, xc, yc, G_f, G_f, loss, method=BETA, replay=replay,
                                                  known=kn)
    if not slope > 0:
        return torch.zeros_like(block.V), est.beta
    beta = est.beta   # the descent search starts at nonnegative_beta's floor slope^2 / (2 R(0)): beta_eff = beta
    if info is not None:
        info["gain_step"] = realised
    return (-(slope / beta) * G_f / G_f.norm()).to(block.V.dtype), beta


def jumpboard_block(net: nn.Module, site: str, proto: ProtocolBlock, G: torch.Tensor, family: str, init: str,
                    seed: int, curvature, loss, replay=True, info: dict | None = None, known=None):
    """``(block, beta_f)``: one family of the scan's block ``proto`` at ``site`` (features of
    ``site_seed(seed, site)``), ``V`` set by ``init`` from the scan's ``G`` (``(d, r)``, all
    families' columns) and the step sample ``curvature = (x, y)``; ``beta_f`` is None for ``"zero"``.
    ``replay``: as :func:`numerics.estimators.curvature_along` (a shared recording of ``net`` before
    the site); ``info``: receives ``"gain_step"``; ``known``: ``(R(0), G_x)`` on the step sample, all
    families' columns (:func:`_jumpboard`)."""
    block = ProtocolBlock(proto.state_shape, [family], proto.width, site_seed(seed, site), proto.V.dtype,
                          layout=proto.layout).to(proto.V.device)
    block.positions = proto.positions
    beta = None
    if init == "jumpboard":
        cols = torch.as_tensor(proto.slices[family], dtype=torch.long, device=proto.V.device)
        V, beta = _jumpboard(net, site, block, G[:, cols], curvature, loss, replay, info,
                             None if known is None else (known[0], known[1][:, cols]))
        with torch.no_grad():
            block.V.copy_(V)
    return block, beta


def family_block(net: nn.Module, site: str, family: str, init: str, scan: SaturationReport):
    """``(block, beta_f)``: the scan's block of one family at ``site``, ``V`` set by ``init``
    (``beta_f``: the curvature along ``-G_f`` on the scan's step sample; None for ``init="zero"``).
    A jumpboard the scan checked on its gain sample is that very block (its ``V`` and ``beta_f``)."""
    checked = (scan._checked or {}).get((site, family)) if init == "jumpboard" else None
    if checked is not None:
        block, _ = jumpboard_block(net, site, scan._blocks[site], scan._stats[site].G, family, "zero", scan.seed,
                                   scan._curvature, scan._loss)
        with torch.no_grad():
            block.V.copy_(checked[0])
        return block, checked[1]
    return jumpboard_block(net, site, scan._blocks[site], scan._stats[site].G, family, init, scan.seed,
                           scan._curvature, scan._loss)


def _refusal(site: str, family: str, scan: SaturationReport) -> str | None:
    """Why the jumpboard of ``family`` at ``site`` is not inserted without ``force`` (None: it was checked)."""
    sug = scan.suggestion
    if sug is not None and (sug.site, sug.family) == (site, family):
        return None
    rec = (scan.insertion or {}).get("families", {}).get(family) if (scan.insertion or {}).get("site") == site else None
    if rec is not None and rec["lo"] > 0:
        return None
    why = (f"the jumpboard of family {family!r} at {site} has gain interval [{rec['lo']:.3g}, {rec['hi']:.3g}], "
           "not above zero" if rec is not None else f"the jumpboard at {site} (family {family!r}) was not checked "
           f"on a gain sample (only {(scan.insertion or {}).get('site')!r} is)")
    return f"{why}; {scan.suggestion_reason}"


def real_layer(model: nn.Module, site: str, init: str) -> nn.Module:
    """A copy of the Hugging Face decoder ``model`` with a real layer after the decoder layer ``site``
    (:func:`numerics.interop.hf_layers.insert_decoder_layer`); ``copy.depthcert_renamed``: old -> new names."""
    from numerics.interop.hf_layers import insert_decoder_layer

    net = copy.deepcopy(model)
    net.depthcert_renamed = insert_decoder_layer(net, int(site.rpartition(".")[2]), init)
    return net.eval()


def insert_block(model: nn.Module, site: str, family: str | None = None, init: str = "jumpboard",
                 scan=None, *, force: bool = False) -> nn.Module:
    """A copy of ``model`` with one residual block of ``family`` right after ``site``.

    Wrap, never mutate: the model is deep-copied and ``u -> u + h(u)`` is inserted into the copy,
    with the scan's block features (same seed, same state layout). ``init="zero"`` starts at
    ``h = 0`` (the copy computes exactly the model's function); ``init="jumpboard"`` starts at
    Theorem 1's step along the scan's ``-G`` (THEORY §3), whose immediate gain
    :meth:`SaturationReport.gain_interval` estimates.

    Parameters
    ----------
    model : torch.nn.Module
        The network the scan was made on (never changed).
    site : str
        A scanned site, e.g. ``scan.best_site``.
    family : str or None, default None
        One of the scanned families (``"linear"``, ``"affine"``, ``"readout"``, ...); None: the
        suggestion's family when ``scan.suggestion`` is at ``site``, else ``"readout"``. A residual block
        family of :data:`bounds.families.RESIDUAL_FAMILIES` (``"full"``, or one registered later) stands for
        the scanned family of its tangent space (:attr:`~bounds.families.ResidualFamily.tangent`): the block
        inserted is that scanned family's (the same first-order directions at ``theta = 0``).
    init : {"jumpboard", "zero", "copy_zero"}, default "jumpboard"
        The block's starting point. ``"copy_zero"`` only at a decoder layer of a Hugging Face decoder
        (below).
    scan : SaturationReport
        The report of ``dc.saturation(model, ...)``: its ``seed`` and the site fix the features
        (optional for a real decoder layer, below).
    force : bool, keyword-only, default False
        Insert a jumpboard the scan did not check, or whose gain interval reaches below zero.

    Returns
    -------
    torch.nn.Module
        The grown copy, in eval mode; the block is trainable (``V`` and its features). Every
        parameter of ``model`` keeps its name and value; :func:`depthcert.new_parameters` lists the new ones.

    Raises
    ------
    TypeError, ValueError
        A bad model, site, family, init or scan, each named with the allowed values.
    RefusedInsertion
        (an ``InputError``) a jumpboard the scan did not check, or whose gain interval reaches below
        zero, without ``force=True``; the message is the scan's ``suggestion_reason``.

    Notes
    -----
    **Hugging Face decoders.** For a ``PreTrainedModel`` of type ``llama``, ``mistral``, ``qwen2``, ``gpt2`` or ``gpt_neox``
    (``...ForCausalLM`` or the base model), a ``site`` that is a decoder layer (``"model.layers.3"``,
    ``"transformer.h.3"``, ``"gpt_neox.layers.3"``) and ``init`` ``"zero"`` or ``"copy_zero"``, the
    inserted block is a *real layer* of the model's own class right after that layer
    (:mod:`numerics.interop.hf_layers`, LLaMA-Pro's expansion): a copy of the layer (``"copy_zero"``)
    or a freshly initialised one (``"zero"``), its output projections (``o_proj``/``down_proj``,
    GPT-2's ``c_proj``, GPT-NeoX's ``dense``/``dense_4h_to_h``) zero, so the copy computes exactly the
    model's function; ``num_hidden_layers`` is raised and every ``layer_idx`` renumbered. The answer
    is a model of the same class that ``save_pretrained`` / ``from_pretrained`` handle without
    depthcert; the old layers above the site move up one index (``grown.depthcert_renamed``:
    ``{old name: new name}``); :func:`depthcert.new_parameters` lists the new layer's parameters.
    ``family`` is ignored there and ``scan`` is optional. A post-norm encoder (BERT) keeps the hook
    route: its layer ends in ``LayerNorm(u + f(u))``, so a layer with zero projections computes
    ``LayerNorm(u)``, not ``u``.

    **Not** :func:`numerics.insertion.insert_block`: that one builds THEORY §1's class ``H_new`` on the
    project's own residual networks (an integer depth ``at``, the frozen base shared and split into
    ``bottom``/``top``, as the run study's certificate needs), with no scan and no copy; this one copies any
    network and inserts, at a named site, the block whose features a saturation scan fixed.

    Examples
    --------
        >>> import torch
        >>> from torch import nn
        >>> import depthcert as dc
        >>> _ = torch.manual_seed(0)
        >>> net = nn.Sequential(nn.Linear(3, 8), nn.Sequential(nn.Linear(8, 8), nn.Tanh()), nn.Linear(8, 2)).double()
        >>> def draw(n, seed):                      # one independent sample per role
        ...     g = torch.Generator().manual_seed(seed)
        ...     x = torch.randn(n, 3, generator=g, dtype=torch.float64)
        ...     return x, (x[:, 0] > 0).long()
        >>> x, y = draw(512, seed=1)
        >>> rep = dc.saturation(net, (x, y), sites=["1"], curvature_n=64)
        >>> same = dc.insert_block(net, "1", init="zero", scan=rep)
        >>> same is net, bool(torch.equal(same(x), net(x)))      # a copy, with the same function
        (False, True)
        >>> try:                                    # the scan's checked suggestion, or a refusal with its reason
        ...     deeper = dc.insert_block(net, rep.best_site, init="jumpboard", scan=rep)
        ... except dc.RefusedInsertion as refused:
        ...     deeper = dc.insert_block(net, rep.best_site, init="jumpboard", scan=rep, force=True)
        >>> sorted(dc.new_parameters(deeper)) == sorted(set(dict(deeper.named_parameters())) - set(dict(net.named_parameters())))
        True
    """
    from numerics.interop.hf_layers import is_layer_site

    if init in LAYER_INITS and is_layer_site(model, site):
        if scan is not None and not isinstance(scan, SaturationReport):
            raise TypeError(f"scan is a {type(scan).__name__}, must be None or a SaturationReport.")
        return real_layer(model, site, init)
    if family is None:
        sug = getattr(scan, "suggestion", None)
        family = sug.family if sug is not None and sug.site == site else "readout"
    family = tangent_family(family)   # a residual block family: the scanned family of its tangent space
    _check(model, site, family, init, scan)
    why = _refusal(site, family, scan) if init == "jumpboard" and not force else None
    if why:
        raise RefusedInsertion(why)
    net = copy.deepcopy(model)
    block, _ = family_block(net, site, family, init, scan)
    attach_unit(net, site, block)
    return net.eval()
