"""A zoo of networks the project did not write (issue 26), each through ``saturation``, ``insert_block``, ``grow``,
``constants`` + ``certify_insertion`` and the CLI: the 2-D post-norm ResNet on digits (BatchNorm in eval mode and
GroupNorm(4, 24)), Hugging Face ``BertModel`` (post-LN) and ``GPT2Model`` from tiny configs, and a channels-last
conv net (layout declared). Tiny sizes: seconds per network.

What each needed (reported with the issue): the ResNets nothing beyond the API; BatchNorm a model in eval mode
(the API and the CLI refuse train mode) and it has no sure radius (``constants`` says why); the transformers
``sites=`` naming their layer lists (``bert.encoder.layer.*``, ``gpt.h.*``: the default ``blocks.*`` matches
nothing) and integer token inputs; GPT-2 (pre-LN) no radius at its sites and ``B`` from ``ln_f``; the
channels-last nets a declared layout: ``"NLD"`` for an ``(N, H W, C)`` state, and ``"NHWC"`` for an image
``(N, H, W, C)`` (a layout added for this zoo: before it such a state had none).
"""
import json
import math
from pathlib import Path

import pytest
import torch

import depthcert as dc
from depthcert.cli import main
from tests.zoo import nets

NETS = Path(nets.__file__).resolve()

#: name -> (factory, data function, sites, layout, top site, expected layout, positions P of the top state)
CASES = {
    "resnet_gn": ("resnet_gn", "small_digits", "blocks.*", None, "blocks.2", "NCHW", 64),
    "resnet_bn": ("resnet_bn", "small_digits", "blocks.*", None, "blocks.2", "NCHW", 64),
    "bert": ("bert", "token_roles", "bert.encoder.layer.*", None, "bert.encoder.layer.1", "NLD", 12),
    "gpt2": ("gpt2", "token_roles", "gpt.h.*", None, "gpt.h.1", "NLD", 12),
    "channels_last": ("channels_last", "small_digits", "blocks.*", "NLD", "blocks.1", "NLD", 64),
    "nhwc": ("nhwc", "small_digits", "blocks.*", "NHWC", "blocks.1", "NHWC", 64),
}


@pytest.fixture(scope="module")
def trained():
    """Each network trained briefly on its ``train`` role (cached for the module)."""
    torch.set_num_threads(1)
    cache = {}

    def get(name):
        if name not in cache:
            factory, data_fn = CASES[name][:2]
            roles = getattr(nets, data_fn)()
            cache[name] = (nets.train(getattr(nets, factory)(), roles["train"], steps=15), roles)
        return cache[name]
    return get


@pytest.fixture(scope="module")
def scans(trained):
    cache = {}

    def get(name):
        if name not in cache:
            model, roles = trained(name)
            _, _, sites, layout = CASES[name][:4]
            cache[name] = dc.saturation(model, roles["probe"], sites=sites, layout=layout, seed=0)
        return cache[name]
    return get


@pytest.mark.parametrize("name", list(CASES))
def test_saturation_reads_every_site_in_its_layout(name, scans):
    rep = scans(name)
    depth = 2 if name in ("bert", "gpt2", "channels_last", "nhwc") else 3
    assert [s["site"] for s in rep.sites] == [CASES[name][4].rsplit(".", 1)[0] + f".{i}" for i in range(depth)]
    assert {s["layout"] for s in rep.sites} == {CASES[name][5]} and {s["P"] for s in rep.sites} == {CASES[name][6]}
    assert rep.verdict in ("improvable", "saturated", "undetermined")
    assert all(math.isfinite(s["G_sq"]) for s in rep.sites)


@pytest.mark.parametrize("name", list(CASES))
def test_insert_block_at_zero_keeps_the_function(name, trained, scans):
    model, roles = trained(name)
    rep = scans(name)
    new = dc.insert_block(model, rep.best_site, init="zero", scan=rep)
    x = roles["probe"][0][:32]
    with torch.no_grad():
        assert torch.equal(new(x), model(x))
    assert sum(p.numel() for p in new.parameters()) > sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("name", list(CASES))
def test_grow_inserts_and_trains(name, trained):
    model, roles = trained(name)
    _, _, sites, layout = CASES[name][:4]
    g = dc.grow(model, roles["train"], roles["probe"], sites=sites, layout=layout, max_blocks=1, steps=2, seed=0)
    assert isinstance(g.stop, str) and g.stop and len(g.trajectory) >= 1
    assert len(g.reports) >= 1


def _expected_L_top(name, model):
    if name == "gpt2":
        return None                                       # ln_f above the site: not affine
    head = model.head.weight.detach().double()
    return float(torch.linalg.matrix_norm(head, ord=2)) / math.sqrt(CASES[name][6])   # mean pool over P positions


def _truly_disjoint(*samples) -> bool:
    """Exact row comparison (no hash): no row of one role equals a row of another."""
    rows = [torch.cat([x.reshape(x.shape[0], -1).double(), y.double()[:, None]], 1) for x, y in samples]
    allrows = torch.cat(rows)
    return torch.unique(allrows, dim=0).shape[0] == allrows.shape[0]


@pytest.mark.parametrize("name", list(CASES))
def test_constants_and_certify_insertion(name, trained):
    model, roles = trained(name)
    site = CASES[name][4]
    c = dc.constants(model, site, roles["probe"])
    want = _expected_L_top(name, model)
    assert (c.L_top is None) == (want is None) and (want is None or c.L_top == pytest.approx(want, rel=1e-6))
    if name == "resnet_bn":
        assert c.rho is None and "BatchNorm" in c.why["rho"]
    elif name == "gpt2":
        assert c.rho is None and c.B is not None and "gpt.ln_f" in c.how["B"] and "kappa" in c.why
    else:
        assert c.rho is not None and c.kappa is not None and c.at_top
        states = []
        from numerics.sites import module_at
        h = module_at(model, site).register_forward_hook(lambda m, a, o: states.append(o[0] if isinstance(o, tuple) else o))
        with torch.no_grad():
            model(roles["probe"][0])
        h.remove()
        assert float(states[0].flatten(1).double().norm(dim=1).max()) <= c.rho      # the sure radius holds on data
    assert _truly_disjoint(roles["signal"], roles["S"], roles["T"])   # so a refusal below would be a false overlap
    cert = dc.certify_insertion(model, site, roles["signal"], roles["S"], roles["T"], layout=CASES[name][3],
                                constants=c, erm_steps=2)
    assert cert.route == "direct_route" and cert.constants["L_loss"] == pytest.approx(math.sqrt(2))
    if cert.quantities.get("nu_V") is None:              # no descent direction on the signal sample: said so
        assert len(cert.rows) == 1 and "nothing to certify" in cert.notes[0]
        return
    assert len(cert.rows) >= 10
    assert (cert.constants["B"] is None) == (name == "resnet_bn")   # from the cap (top) or ln_f (GPT-2)
    if c.at_top and c.rho is not None:
        assert cert.constants["B"] == pytest.approx(c.B_with(cert.quantities["nu_V"] * cert.quantities["rho_phi"]))


@pytest.mark.parametrize("name", list(CASES))
def test_cli_saturation_on_the_zoo(name, trained, tmp_path, capsys):
    model, _ = trained(name)
    factory, data_fn, sites, layout = CASES[name][:4]
    weights = tmp_path / "w.pt"
    torch.save(model.state_dict(), weights)
    argv = ["saturation", "--model", f"{NETS}:{factory}", "--weights", str(weights), "--data", f"{NETS}:{data_fn}",
            "--sites", sites, "--json"] + (["--layout", layout] if layout else [])
    assert main(argv) == 0, capsys.readouterr().err
    res = json.loads(capsys.readouterr().out)
    assert res["verdict"] in ("improvable", "saturated", "undetermined") and len(res["sites"]) >= 2


def test_cli_refuses_the_train_mode_batch_norm_resnet(capsys):
    code = main(["saturation", "--model", f"{NETS}:resnet_bn_train_mode", "--data", f"{NETS}:small_digits"])
    err = capsys.readouterr().err
    assert code == 2 and "eval()" in err and "blocks.0.norm" in err and len(err.strip().splitlines()) == 1


def test_nhwc_and_nchw_give_the_same_scores():
    """The same network written channels-first and channels-last scores the same (the NHWC layout reads the
    channel vector at each position, positions in the same order)."""
    torch.manual_seed(1)
    last = nets.NHWCNet(c=8, depth=1).double().eval()

    class First(torch.nn.Module):
        def __init__(self, net):
            super().__init__()
            self.net = net
            self.blocks = torch.nn.ModuleList([torch.nn.Identity()])

        def forward(self, x):
            h = self.net.stem(x)
            conv, norm = self.net.convs[0], self.net.blocks[0]
            h = norm((h + torch.relu(conv(h))).permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
            return self.net.head(self.blocks[0](h).mean(dim=(2, 3)))

    g = torch.Generator().manual_seed(0)
    data = (torch.randn(96, 1, 8, 8, generator=g, dtype=torch.float64), torch.randint(0, 10, (96,), generator=g))
    a = dc.saturation(last, data, sites="blocks.0", layout="NHWC", seed=0)
    b = dc.saturation(First(last), data, sites="blocks.0", layout="NCHW", seed=0)
    assert a.sites[0]["G_sq"] == pytest.approx(b.sites[0]["G_sq"], rel=1e-9)
    assert a.sites[0]["P"] == b.sites[0]["P"] == 64 and a.sites[0]["d"] == b.sites[0]["d"] == 8
    with pytest.raises(ValueError, match="layout"):        # never inferred: a channels-last image must be declared
        dc.saturation(last, data, sites="blocks.0", seed=0)


@pytest.mark.parametrize("name", list(CASES))
def test_cli_certify_with_derived_constants_on_the_zoo(name, trained, tmp_path, capsys):
    model, roles = trained(name)
    factory, data_fn, _, layout, site = CASES[name][:5]
    weights = tmp_path / "w.pt"
    torch.save(model.state_dict(), weights)
    argv = ["certify", "--model", f"{NETS}:{factory}", "--weights", str(weights), "--data", f"{NETS}:{data_fn}",
            "--site", site, "--derive-constants", "--json"] + (["--layout", layout] if layout else [])
    code = main(argv)
    cap = capsys.readouterr()
    assert code == 0, cap.err
    res = json.loads(cap.out)
    assert res["site"] == site and res["constants"]["L_top"] == dc.constants(model, site, roles["signal"]).L_top
