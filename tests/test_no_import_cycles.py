"""No import cycles anywhere in the project, module by module (function-level imports included).

A lazy import that closes a circle (``_ledger`` <-> ``_tails``, ``side_algebra`` <->
``side_algebra_variants`` before phase 1b) hides a dependency; shared helpers live in one
small module instead (``proofs_check._symbolic``, ``proofs_check._algebra``).
"""
from tests.test_layers import PACKAGES, import_graph


def _edges(graph, packages=PACKAGES) -> dict[str, set[str]]:
    out = {}
    for mod, imports in graph.items():
        if mod.split(".")[0] not in packages:
            continue
        targets = set()
        for target, name in imports:
            full = f"{target}.{name}" if name is not None and f"{target}.{name}" in graph else target
            if full.split(".")[0] in packages and full != mod:
                targets.add(full)
        out[mod] = targets
    return out


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """A cycle of the directed graph ``edges`` (depth-first search), or ``None``."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = "done"
        stack.pop()
        return None

    for node in sorted(edges):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_cycle_in_any_package():
    assert find_cycle(_edges(import_graph())) is None


def test_a_deliberate_circle_in_the_real_graph_is_reported():
    """Two real modules made to import each other (one import inside a function): reported."""
    graph = import_graph()
    graph["numerics.studies.run._draw"] = [*graph["numerics.studies.run._draw"],
                                          ("numerics.studies.run", "run_experiment")]
    graph["plumbing.io"] = [*graph["plumbing.io"], ("numerics.studies.run._draw", None)]
    cycle = find_cycle(_edges(graph))
    assert cycle is not None and cycle[0] == cycle[-1]


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
