"""docs/theory_map.toml and its renderer docs/_ext/theory_table.py (issue 19: the Theory page's table)."""
import copy
import importlib.util
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAP = ROOT / "docs" / "theory_map.toml"


def _load_module():
    spec = importlib.util.spec_from_file_location("theory_table", ROOT / "docs" / "_ext" / "theory_table.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


tt = _load_module()


@pytest.fixture(scope="module")
def entries():
    return tt.load(MAP)


def test_the_real_map_has_no_problem_and_covers_every_section(entries):
    assert tt.check(entries) == []
    sections = {e["section"].rstrip("b") for e in entries}
    assert sections == {f"§{i}" for i in range(1, 11)}
    assert {e["anchor"] for e in entries} <= set(tt.theory_headings(ROOT / "docs" / "THEORY.md"))


def test_a_misspelt_object_a_missing_test_and_a_missing_file_are_one_problem_each(entries):
    bad = copy.deepcopy([e for e in entries if e["section"] == "§3"])
    assert tt.check(bad) == []
    bad[0]["objects"].append("bounds.THEOREM_9")
    bad[0]["tests"] += ["tests/bounds/test_routes.py::test_no_such_function", "tests/bounds/test_no_such_file.py::test_x"]
    problems = tt.check(bad)
    assert len(problems) == 3, problems
    for needle in ("bounds.THEOREM_9", "test_no_such_function", "test_no_such_file.py"):
        assert sum(needle in p for p in problems) == 1, (needle, problems)


def test_other_kinds_of_broken_entries_are_named(tmp_path, entries):
    e = copy.deepcopy(entries[0])
    e.update(anchor="1. Setting", proof_checks=[], tests=["tests/bounds/test_routes.py"], objects=["not a path"])
    del e["note"]
    problems = tt.check([e])
    for needle in ("anchor '1. Setting'", "'proof_checks' is empty and no 'note'", "'not a path'", "not a node id"):
        assert any(needle in p for p in problems), (needle, problems)
    helper = copy.deepcopy(entries[0])
    helper["tests"] = ["tests/bounds/test_routes.py::_inputs"]    # not collected by pytest
    assert any("pytest collects only" in p for p in tt.check([helper]))


def test_a_class_method_node_id_is_found_by_ast_and_a_missing_method_is_not(tmp_path, entries):
    test_file = tmp_path / "tests" / "test_x.py"
    test_file.parent.mkdir()
    test_file.write_text("class TestA:\n    def test_m(self):\n        assert 1\n\ndef test_f():\n    assert 1\n")
    e = copy.deepcopy(entries[0])
    e["tests"] = ["tests/test_x.py::TestA::test_m", "tests/test_x.py::test_f[1-2]"]
    assert tt.check([e], root=tmp_path, theory=ROOT / "docs" / "THEORY.md") == []
    e["tests"] = ["tests/test_x.py::TestA::test_f", "tests/test_x.py::test_m"]
    assert len(tt.check([e], root=tmp_path, theory=ROOT / "docs" / "THEORY.md")) == 2
    page = tt.tests_pages([{**e, "tests": ["tests/test_x.py::TestA::test_m"]}], tmp_path / "docs", tmp_path)
    assert ":pyobject: TestA.test_m" in page["tests/test_x.md"]


def _rows(table: str) -> list[str]:
    return [line for line in table.splitlines() if line.startswith("| ")][1:]       # after the header row


def test_markdown_has_one_row_per_entry_and_a_role_for_every_link(entries):
    table = tt.markdown(entries)
    rows = _rows(table)
    assert len(rows) == len(entries)
    for row, e in zip(rows, entries):
        cells = re.split(r"(?<!\\)\|", row)[1:-1]
        assert len(cells) == len(tt.HEADERS)
        assert f"](THEORY.md#{tt.slug(e['anchor'])})" in cells[0]
        for cell, key in zip(cells[1:4], tt.LINK_KEYS):
            assert re.findall(r"\{py:obj\}`([^`]+)`", cell) == e[key]
            assert (cell.strip() == tt.EMPTY) == (not e[key])
        assert re.findall(r"\{ref\}`([^`]+)`", cells[4]) == [tt.label(t) for t in e["tests"]]
    assert "{py:obj}`bounds.THEOREM_1`" in table
    empty = [e for e in entries if any(not e[k] for k in tt.LIST_KEYS)]
    assert len(tt.notes(entries).splitlines()) == len(empty) and all(e["note"] in tt.notes(entries) for e in empty)


def test_heading_slugs_are_myst_s():
    slugs = pytest.importorskip("myst_parser.slugs")
    for heading in tt.theory_headings(ROOT / "docs" / "THEORY.md"):
        assert tt.slug(heading) == slugs.github_slugify(heading)
    assert tt.slug("6. Theorem 3 — direct route") == "6-theorem-3--direct-route"


def test_label_is_deterministic_and_distinct_ids_of_the_map_get_distinct_labels(entries):
    ids = sorted({t for e in entries for t in e["tests"]})
    labels = [tt.label(t) for t in ids]
    assert labels == [tt.label(t) for t in ids] and len(set(labels)) == len(ids)
    assert all(re.fullmatch(r"test-[a-z0-9-]+", x) for x in labels)
    assert tt.label("tests/a.py::test_b") == "test-tests-a-py--test-b"
    assert tt.label_collisions(ids) == []
    clash = ["tests/a_b.py::test_c", "tests/a-b.py::test_c"]     # the one way two ids can share a label
    assert tt.label_collisions(clash) == [sorted(clash)]


def test_tests_pages_label_every_test_and_include_it_by_a_path_relative_to_the_page(tmp_path, entries):
    out = tmp_path / "build" / "src"
    pages = tt.tests_pages(entries, out, ROOT)
    files = {t.split("::")[0] for e in entries for t in e["tests"]}
    assert set(pages) == {str(Path(f).with_suffix(".md").as_posix()) for f in files}
    for name, text in pages.items():
        for rel in re.findall(r"```\{literalinclude\} (\S+)", text):
            assert (out / name).parent.joinpath(rel).resolve() == (ROOT / name).with_suffix(".py").resolve()
            assert not os.path.isabs(rel)
    for t in {t for e in entries for t in e["tests"]}:
        text = pages[str(Path(t.split("::")[0]).with_suffix(".md").as_posix())]
        assert f"({tt.label(t)})=\n## `{t}`" in text
        assert f":pyobject: {t.split('::', 1)[1].split('[')[0].replace('::', '.')}\n:language: python" in text
    index = tt.tests_index(pages)
    assert all(str(Path(p).with_suffix("").as_posix()) in index for p in pages)


def test_referenced_modules_hold_every_object_and_a_module_is_its_own(entries):
    mods = tt.referenced_modules(entries)
    assert mods == sorted(set(mods))
    assert {"bounds", "bounds.routes", "numerics.estimators", "proofs_check.side_algebra", "numerics.roles"} <= set(mods)
    for path in (p for e in entries for k in tt.LINK_KEYS for p in e[k]):
        assert tt.module_of(path) in mods and (path == tt.module_of(path) or path.startswith(tt.module_of(path) + "."))
    assert tt.module_of("numerics.roles") == "numerics.roles"
    assert tt.module_of("bounds.THEOREM_1") == "bounds"
