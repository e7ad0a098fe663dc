"""The GPT-2-style model on the stdlib corpus, a local GPT-NeoX (Hugging Face) and the GroMo adapter."""
import warnings

import pytest
import torch

from numerics.corpus import CharCorpus
from numerics.families import ProtocolBlock
from numerics.sites import SiteProbe, insert_unit, resolve_sites
from numerics.training import empirical_risk, train
from numerics.zoo import CharGPT

F64 = torch.float64


@pytest.fixture(scope="module")
def corpus():
    return CharCorpus(300_000)


def test_corpus_splits_are_disjoint_by_file_and_deterministic(corpus):
    from numerics.corpus import _split_of, stdlib_files

    files = stdlib_files()
    assert files == sorted(files) and len(files) > 20
    splits = {_split_of(p) for p in files}
    assert splits == {"train", "test", "held"}
    a = corpus.windows("held", 8, 16, seed=3)
    b = CharCorpus(300_000).windows("held", 8, 16, seed=3)
    assert torch.equal(a[0], b[0]) and not torch.equal(a[0], corpus.windows("held", 8, 16, seed=4)[0])
    with pytest.raises(ValueError, match="split == 'dev'"):
        corpus.windows("dev", 1, 4, 0)


def test_char_gpt_learns_below_the_unigram_baseline(corpus):
    """Light: 150 Adam steps already beat the train-unigram cross-entropy on held-out files."""
    x, y = corpus.windows("train", 4000, 32, 0)
    xt, yt = corpus.windows("test", 256, 32, 1)
    net = CharGPT(corpus.vocab_size, 32, 1, heads=4, seq_len=32, seed=0)
    train(net, dict(net.named_parameters()), x, y, optimizer="adam", lr=3e-3, steps=150, batch_size=32, seed=0,
          loss="cross_entropy")
    assert empirical_risk(net, xt, yt, "cross_entropy") < corpus.unigram_loss() - 0.2


@pytest.mark.slow
def test_char_gpt_few_minute_run_is_clearly_below_unigram():
    """The chars config's reference training (a few CPU minutes): at least 1 nat/char below unigram."""
    from depthcert.config import read_toml
    from numerics.seeding import Streams
    from numerics.studies.saturation import reference_network, validate_config
    from numerics.workloads import make_workload, risk

    cfg = validate_config(read_toml("depthcert/configs/chars_gpt2.toml"))
    st = Streams(0, 0)
    w = make_workload(cfg, st, 64)
    net, _ = reference_network(cfg, w, st)
    assert risk(net, w, "test")[0] < CharCorpus(cfg["task"]["max_chars"]).unigram_loss() - 1.0


@pytest.fixture(scope="module")
def neox_dir(tmp_path_factory):
    transformers = pytest.importorskip("transformers")
    cfg = transformers.GPTNeoXConfig(vocab_size=CharCorpus.vocab_size, hidden_size=16, num_hidden_layers=2,
                                     num_attention_heads=2, intermediate_size=32, max_position_embeddings=64)
    torch.manual_seed(0)
    model = transformers.GPTNeoXForCausalLM(cfg)
    path = tmp_path_factory.mktemp("neox")
    model.save_pretrained(path)
    return path


def test_gpt_neox_from_a_local_directory_sites_gradients_and_insertion(neox_dir, corpus):
    from numerics.interop.hf import HFCausalLM

    net = HFCausalLM(str(neox_dir), dtype=F64)
    x, y = corpus.windows("held", 4, 12, seed=0)
    sites = resolve_sites(net, None, x[:2])
    assert sites == ["model.gpt_neox.emb_dropout", "model.gpt_neox.layers.0", "model.gpt_neox.layers.1"]

    def loss(out, t):
        return torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), t.reshape(-1), reduction="sum")

    with SiteProbe(net, sites) as probe:
        ms = probe.grads(loss(net(x), y))
    for i in range(x.shape[0]):   # per-sample loop, one sequence at a time
        with SiteProbe(net, sites[1:2]) as probe:
            mi = probe.grads(loss(net(x[i:i + 1]), y[i:i + 1]))[sites[1]][0]
        torch.testing.assert_close(ms[sites[1]][i], mi, rtol=1e-9, atol=1e-11)
    with torch.no_grad():
        before = net(x)
        insert_unit(net, sites[1], ProtocolBlock((12, 16), ["linear", "affine", "readout", "block"], 8, 0, F64))
        assert torch.equal(net(x), before)


def test_gpt_neox_saturation_scan_through_the_study(neox_dir, tmp_path):
    from numerics.studies.saturation import run

    res = run({"task": {"kind": "chars", "seq_len": 12, "max_chars": 300_000, "n_test": 16, "n_population": 16},
               "model": {"kind": "hf", "path": str(neox_dir), "dtype": "float64", "depth": 2},
               "reference": {"n": 64, "steps": 0, "batch_size": 16},
               "saturation": {"probe_n": 64, "n_chunks": 4, "batch_size": 32, "beta_n": 8, "width": 8,
                              "families": ["linear", "affine", "block"]}}, tmp_path)
    assert [s["site"] for s in res["sites"]][1:] == ["model.gpt_neox.layers.0", "model.gpt_neox.layers.1"]
    assert all(s["P_block"] is not None and s["P_affine"] >= s["P_linear"] - 1e-12 for s in res["sites"])
    assert (tmp_path / "saturation.json").is_file()


def test_gromo_first_order_improvement_equals_our_projection_score():
    """GroMo (empty LinearGrowingBlock, all singular values kept) and THEORY's P_affine on one model."""
    pytest.importorskip("gromo")
    from gromo.containers.growing_block import LinearGrowingBlock

    from numerics.estimators._site_scan import accumulate_site_stats
    from numerics.estimators._site_stats import projection_scores
    from numerics.interop.gromo import certify_gromo_block, gromo_first_order_improvement, scores_from_gromo

    warnings.filterwarnings("ignore")
    torch.manual_seed(0)
    for bias, fam in ((True, "affine"), (False, "linear")):
        blk = LinearGrowingBlock(6, 6, hidden_features=0, kwargs_layer={"use_bias": bias}, device=torch.device("cpu"))
        model = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), blk, torch.nn.Tanh(),
                                    torch.nn.Linear(6, 3)).double()
        x, y = torch.randn(300, 4, dtype=F64), torch.randint(0, 3, (300,))
        blk.init_computation()
        torch.nn.functional.cross_entropy(model(x), y, reduction="sum").backward()
        blk.update_computation()
        theirs, ours_from_theirs = gromo_first_order_improvement(blk), scores_from_gromo(blk)
        blk.reset_computation()
        pb = ProtocolBlock((6,), ["linear", "affine"], 4, 0, F64)
        acc = accumulate_site_stats(model, x, y, {"2": pb}, "cross_entropy", batch_size=64)["2"]
        ours = projection_scores(acc.G, acc.Sigma, pb.slices)[fam]
        assert ours == pytest.approx(theirs, rel=1e-10)
        assert ours_from_theirs["family"] == fam and ours_from_theirs["P"] == pytest.approx(ours, rel=1e-10)
        cols = pb.slices[fam]
        torch.testing.assert_close(ours_from_theirs["G"], acc.G[:, cols], rtol=1e-10, atol=1e-14)
        torch.testing.assert_close(ours_from_theirs["Sigma_phi"], acc.Sigma[cols][:, cols], rtol=1e-10, atol=1e-14)
    rec = certify_gromo_block(model, "2", x, y, "cross_entropy")
    assert rec["P_affine"] >= rec["P_linear"] and {"test_adaptive", "gain_bound_natural"} <= set(rec)
