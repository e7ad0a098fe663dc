"""dc.constants on Hugging Face decoders (sequence logits, issue 37 item 5): output= picks the logits, B of the
per-token cross-entropy through the final norm and the (tied) linear head, every other constant named with its cause."""
from __future__ import annotations

import math

import pytest
import torch

pytest.importorskip("transformers")

import depthcert as dc  # noqa: E402
from plumbing.validation import InputError  # noqa: E402
from tests.numerics import _hf_tiny  # noqa: E402


def _independent_B(W, c, R):
    """log V + max over every pair (k, y) of ||W_k - W_y|| R + c_k - c_y, by a plain double loop over rows."""
    best = -math.inf
    for k in range(W.shape[0]):
        d = (W[k] - W).norm(dim=1) * R + (c[k] - c)
        best = max(best, float(d.max()))
    return math.log(W.shape[0]) + best


@pytest.mark.parametrize("kind,site,norm", [("llama", "model.layers.1", "model.norm"), ("gpt2", "transformer.h.0", "transformer.ln_f")])
def test_B_of_sequence_logits_is_the_per_token_bound_and_holds(kind, site, norm):
    net = _hf_tiny.trained(kind)
    probe = _hf_tiny.corpus().windows("held", 32, 24, seed=3)
    c = dc.constants(net, site, probe, output="logits")
    d = net.config.hidden_size
    mod = net.get_submodule(norm)
    g = float(mod.weight.detach().double().abs().max())
    beta = getattr(mod, "bias", None)
    R = g * math.sqrt(d) + (float(beta.detach().double().norm()) if beta is not None else 0.0)   # one token's radius
    W = net.lm_head.weight.detach().double()
    bias = net.lm_head.bias.detach().double() if net.lm_head.bias is not None else torch.zeros(W.shape[0], dtype=torch.float64)
    want = _independent_B(W, bias, R)
    assert c.B == pytest.approx(want, rel=1e-5) and c.B >= want   # the float32 model's rounding margin only raises it
    assert c.L_loss == pytest.approx(math.sqrt(2))
    # every token's loss under every label stays below B, also with huge states fed into the final norm
    with torch.no_grad():
        for scale in (1.0, 1e3):
            from numerics.sites import add_at_site

            with add_at_site(net, site, lambda s: s * scale):
                z = net(input_ids=probe[0]).logits.double()
            worst = float((torch.logsumexp(z, -1) - z.min(-1).values).max())
            assert worst <= c.B
    # the constants it cannot derive are each named with their cause (none left blank)
    missing = [k for k in ("L_top", "A_norm", "kappa", "rho", "rho_phi") if getattr(c, k) is None]
    assert missing and all(c.why[k] for k in missing)
    assert "sequence logits" in c.why["L_top"] and "BatchNorm" not in c.why.get("B", "")


def test_a_planted_smaller_radius_would_be_violated():
    """Power: the bound with R of the raw (un-normalised) unit ball is below the worst token loss on huge states."""
    net = _hf_tiny.trained("llama")
    probe = _hf_tiny.corpus().windows("held", 32, 24, seed=3)
    W = net.lm_head.weight.detach().double()
    wrong = _independent_B(W, torch.zeros(W.shape[0], dtype=torch.float64), 1.0)   # forgets sqrt(d) max|gamma|
    from numerics.sites import add_at_site

    with torch.no_grad(), add_at_site(net, "model.layers.1", lambda s: s * 1e3):
        z = net(input_ids=probe[0]).logits.double()
    assert float((torch.logsumexp(z, -1) - z.min(-1).values).max()) > wrong


def test_a_model_output_without_output_is_refused_naming_it():
    net = _hf_tiny.trained("llama")
    probe = _hf_tiny.corpus().windows("held", 8, 12, seed=3)
    with pytest.raises(InputError, match="output"):
        dc.constants(net, "model.layers.1", probe)


def _distinct_windows(n_roles: int, n: int, T: int = 32):
    """``n_roles`` samples of ``n`` next-character windows: consecutive chunks of the train split, duplicates dropped
    (source files repeat lines), so that the roles share no row."""
    ids = _hf_tiny.corpus().ids["train"].long()
    w = ids[: (n_roles * n * 2) * (T + 1)].reshape(-1, T + 1)
    seen, keep = set(), []
    for i, r in enumerate(w):
        if (b := r.numpy().tobytes()) not in seen:
            seen.add(b)
            keep.append(i)
    w = w[keep]
    assert len(w) >= n_roles * n
    return [(w[k * n:(k + 1) * n, :-1], w[k * n:(k + 1) * n, 1:]) for k in range(n_roles)]


def test_certify_insertion_on_a_decoder_names_only_the_constant_it_lacks():
    net = _hf_tiny.trained("llama")
    sig, S, T = _distinct_windows(3, 128)
    c = dc.constants(net, "model.layers.1", sig, output="logits")
    cert = dc.certify_insertion(net, "model.layers.1", sig, S, T, constants=c, output="logits", erm_steps=5)
    missing = {tuple(r["missing"]) for r in cert.rows}
    assert missing == {("L_top",)}, missing          # B, L_loss derived; L_top named once per route, its cause in c.why
    assert "sequence logits" in c.why["L_top"]
    bare = dc.certify_insertion(net, "model.layers.1", sig, S, T, output="logits", erm_steps=5)
    assert all("B" in r["missing"] for r in bare.rows)   # without the derived constants B is missing as well
