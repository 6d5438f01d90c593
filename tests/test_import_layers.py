"""The package's floors: a module imports only from its own floor or the ones below (no import climbs back
up), and no two modules import each other, directly or round a circle, even through an import deferred
into a function (a circle broken only by deferring an import is still a circle)."""

import ast
from pathlib import Path

import networkx as nx

PACKAGE = Path(__file__).resolve().parents[1] / "kernelseek"

# bottom to top; a top-level module or package of kernelseek/ not named here fails the test until it is placed
FLOORS = [
    {"kernelseek", "validation", "settings", "files", "procs", "conversation", "trace_events", "trace", "project",
     "checkpoints"},
    {"harness", "models"},
    {"bank", "preflight", "scaffold", "analysis", "provenance"},
    {"agent"},
    {"toolrich", "forks"},
    {"experiment", "engine"},
    {"commands", "cli", "__main__"},
]


def _modules() -> dict[str, Path]:
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        modules[name.removesuffix(".__init__")] = path
    return modules


def import_graph() -> nx.DiGraph:
    """kernelseek's modules and what each imports, at its top or inside a function. `from pkg import mod`
    is an import of the module mod (not of pkg's __init__ as well)."""
    modules = _modules()
    graph = nx.DiGraph()
    for name, path in modules.items():
        graph.add_node(name)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("kernelseek"):
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                           for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.split(".")[0] == "kernelseek"]
            else:
                continue
            graph.add_edges_from((name, target) for target in targets if target != name)
    return graph


def floor(module: str) -> int:
    part = module.split(".")[1] if "." in module else module
    return next(i for i, names in enumerate(FLOORS) if part in names)


def test_every_part_of_the_package_has_a_floor():
    parts = {m.split(".")[1] if "." in m else m for m in _modules()}
    assert parts <= set().union(*FLOORS), f"place these in FLOORS: {sorted(parts - set().union(*FLOORS))}"


def test_no_import_climbs_back_up():
    graph = import_graph()
    climbs = sorted(f"{a} -> {b}" for a, b in graph.edges if floor(b) > floor(a))
    assert not climbs, climbs


def test_no_import_circle():
    circles = [sorted(c) for c in nx.strongly_connected_components(import_graph()) if len(c) > 1]
    assert not circles, circles


def test_the_checks_see_a_climb_and_a_circle(tmp_path):
    graph = import_graph()  # the graph the tests above read holds the imports they are about
    assert graph.has_edge("kernelseek.harness.judge", "kernelseek.harness.sanitize")
    assert graph.has_edge("kernelseek.agent.trim", "kernelseek.models")  # a deferred import counts as well
    assert floor("kernelseek.agent.trim") > floor("kernelseek.models.scripted")
    graph.add_edge("kernelseek.models.scripted", "kernelseek.agent.trim")
    assert any(len(c) > 1 for c in nx.strongly_connected_components(graph))
