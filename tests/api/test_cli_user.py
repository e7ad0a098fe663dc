"""``depthcert saturation|grow|certify --model FILE.py:factory --data FILE.py:function`` (issue 16 item 5)."""
import json
import pickle

import pytest
import torch

from depthcert.cli import main

USER = '''
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv1d(1, 8, 3, padding=1)
        self.blocks = nn.ModuleList(nn.Sequential(nn.Conv1d(8, 8, 3, padding=1), nn.GroupNorm(4, 8)) for _ in range(2))
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        x = self.stem(x)
        for b in self.blocks:
            x = x + b(x)
        return self.head(x.mean(dim=2))

def factory():
    torch.manual_seed(0)
    return Net().double()

def roles():
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(1400, 1, 12, generator=g, dtype=torch.float64), torch.randint(0, 3, (1400,), generator=g)
    x[:, 0, :4] += y[:, None].double()
    return {"probe": (x[:400], y[:400]), "train": (x[400:600], y[400:600]), "signal": (x[600:1000], y[600:1000]),
            "S": (x[1000:1200], y[1000:1200]), "T": (x[1200:], y[1200:])}
'''


@pytest.fixture()
def user(tmp_path):
    f = tmp_path / "user.py"
    f.write_text(USER)
    return f


def test_saturation_on_a_user_model_writes_json_figure_and_sites_csv(user, tmp_path, capsys):
    ns = {}
    exec(USER, ns)
    torch.save(ns["factory"]().state_dict(), tmp_path / "w.pt")
    out = tmp_path / "out"
    rc = main(["saturation", "--model", f"{user}:factory", "--weights", str(tmp_path / "w.pt"),
               "--data", f"{user}:roles", "--out", str(out), "--json"])
    assert rc == 0
    res = json.loads(capsys.readouterr().out)
    assert res["verdict"] in ("improvable", "saturated", "undetermined")
    assert {r["layout"] for r in res["sites"]} == {"NCL"}
    assert (out / "saturation.json").exists() and (out / "saturation.png").exists()
    assert (out / "sites.csv").read_text().splitlines()[0].startswith("site,layout,d,P")


def test_grow_and_certify_on_a_user_model(user, tmp_path, capsys):
    assert main(["grow", "--model", f"{user}:factory", "--data", f"{user}:roles", "--out", str(tmp_path / "g"),
                 "--max-blocks", "1", "--steps", "2"]) == 0
    assert (tmp_path / "g" / "trajectory.csv").exists() and (tmp_path / "g" / "sites.csv").exists()
    assert main(["certify", "--model", f"{user}:factory", "--data", f"{user}:roles", "--out", str(tmp_path / "c"),
                 "--site", "blocks.1", "--B", "5", "--L-top", "3"]) == 0
    res = json.loads((tmp_path / "c" / "certify.json").read_text())
    assert res["route"] == "direct_route" and isinstance(res["certified"], bool)


class _Evil:
    def __reduce__(self):
        import os

        return (os.system, ("touch PWNED_BY_CHECKPOINT",))


@pytest.mark.parametrize("argv, match", [
    (["--model", "{u}:nope", "--data", "{u}:roles"], "--model == 'nope', must be a name defined in"),
    (["--model", "{u}", "--data", "{u}:roles"], "--model == '.*user.py', must be FILE.py:name"),
    (["--model", "{u}:factory", "--data", "{u}:factory"], "--data == 'Net', must be a function returning a dict"),
    (["--model", "{u}:factory", "--data", "{u}:roles", "--sites", "blocks.7"], "sites == 'blocks.7'"),
    (["--model", "{u}:factory", "--data", "{u}:roles", "--level", "2"], r"level == 2.0, must be in \(0, 1\)"),
    (["--model", "{u}:factory", "--data", "{u}:roles", "--weights", "{evil}"], "--weights == .*weights_only=True"),
    ([], "--model == None, must be FILE.py:factory"),
])
def test_bad_input_exits_2_with_one_line(user, tmp_path, capsys, monkeypatch, argv, match):
    monkeypatch.chdir(tmp_path)
    evil = tmp_path / "evil.pt"
    evil.write_bytes(pickle.dumps(_Evil()))
    argv = [a.format(u=user, evil=evil) for a in argv]
    assert main(["saturation", *argv, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    import re

    assert re.search(match, err), err
    assert not (tmp_path / "PWNED_BY_CHECKPOINT").exists()   # a crafted checkpoint runs no code
