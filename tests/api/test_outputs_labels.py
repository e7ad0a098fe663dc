"""Issue 26 item 5: ordinary models and data -- tuple / dict outputs (``output=``), float labels, bad site patterns."""
import pytest
import torch
from torch import nn

import depthcert as dc
from plumbing.validation import InputError
from tests.api._nets import ResCNN, synthetic

KW = dict(width=8, batch_size=64, curvature_n=128)


class TupleNet(nn.Module):
    """``forward -> (logits, aux)`` (an auxiliary feature map), or ``{"logits", "features"}`` when ``as_dict``."""

    def __init__(self, as_dict=False):
        super().__init__()
        torch.manual_seed(0)
        base = ResCNN(c=8, depth=2)
        self.stem, self.blocks, self.head, self.as_dict = base.stem, base.blocks, base.head, as_dict

    def forward(self, x):
        h = self.stem(x)
        for b in self.blocks:
            h = b(h)
        logits = self.head(h.mean(dim=2))
        return {"features": h, "logits": logits} if self.as_dict else (logits, h)


@pytest.fixture(scope="module")
def data():
    return synthetic(1800, length=16)


@pytest.mark.parametrize("as_dict, output", [(False, 0), (True, "logits"), (False, lambda out: out[0])])
def test_output_picks_the_logits_through_saturation_insert_block_grow_and_certify(data, as_dict, output):
    x, y = data
    net = TupleNet(as_dict).double().eval()
    plain = ResCNN(c=8, depth=2).double().eval()
    plain.load_state_dict({k: v for k, v in net.state_dict().items()})
    rep = dc.saturation(net, (x[:1024], y[:1024]), output=output, **KW)
    ref = dc.saturation(plain, (x[:1024], y[:1024]), **KW)   # the same network returning its logits only
    assert [r["G_sq"] for r in rep.sites] == pytest.approx([r["G_sq"] for r in ref.sites], rel=1e-9)
    new = dc.insert_block(net, rep.best_site, family="readout", init="jumpboard", scan=rep, force=True)
    out = new(x[:4])
    assert (out["logits"] if as_dict else out[0]).shape == (4, 3)
    g = dc.grow(net, train=(x[1024:1400], y[1024:1400]), probe=(x[:1024], y[:1024]), max_blocks=1, steps=2,
                output=output, **KW)
    assert len(g.trajectory) >= 1
    cert = dc.certify_insertion(net, "blocks.1", (x[:600], y[:600]), (x[600:1200], y[600:1200]), (x[1200:], y[1200:]),
                                output=output, B=5.0, L_top=3.0, erm_steps=2)
    assert isinstance(cert.certified, bool)


@pytest.mark.parametrize("as_dict, match", [
    (False, r"output == None, must be given when the model returns a tuple of 2 elements"),
    (True, r"output == None, must be given when the model returns a dict with keys \['features', 'logits'\]")])
def test_a_tuple_or_dict_output_without_output_names_the_argument(data, as_dict, match):
    x, y = data
    net = TupleNet(as_dict).double().eval()
    with pytest.raises(InputError, match=match):
        dc.saturation(net, (x[:512], y[:512]), **KW)
    with pytest.raises(InputError, match=match):
        dc.certify_insertion(net, "blocks.1", (x[:600], y[:600]), (x[600:1200], y[600:1200]), (x[1200:], y[1200:]))
    with pytest.raises(InputError, match=r"output == 'nope', must be an int index, a key"):
        dc.saturation(net, (x[:512], y[:512]), output="nope", **KW)
    with pytest.raises(InputError, match=r"output == 2.5, must be None, an int index"):
        dc.saturation(net, (x[:512], y[:512]), output=2.5, **KW)


def test_float_class_labels_with_cross_entropy_are_a_clear_error(data):
    x, y = data
    net = ResCNN(c=8, depth=2).double().eval()
    with pytest.raises(InputError, match=r"y == 'float labels of shape \(64,\)', must be integer class labels"):
        dc.saturation(net, (x[:512], y[:512].double()), **KW)
    probs = nn.functional.one_hot(y[:512], 3).double()        # probability rows are still accepted
    assert dc.saturation(net, (x[:512], probs), **KW).verdict in ("improvable", "saturated", "undetermined")


@pytest.mark.parametrize("sites, match", [
    ("blocks", r"sites == 'blocks', must be sites the forward pass goes through; sites='blocks.\*' "
               r"\(a container's blocks\) matches blocks.0, blocks.1"),
    ("block.1", r"sites == 'block.1', must be module paths .*would match: blocks.1"),
    ("stem.*", r"'name.\*' patterns of this model: \['blocks.\*'\]"),
    ("zzz_qqq", r"no module path of the model resembles 'zzz_qqq'; its top-level modules: \['blocks', 'head', 'stem'\]")])
def test_sites_matching_nothing_list_the_paths_that_would_match(data, sites, match):
    x, y = data
    with pytest.raises(InputError, match=match):
        dc.saturation(ResCNN(c=8, depth=2).double().eval(), (x[:512], y[:512]), sites=sites, **KW)
