"""The package's layers point one way: the protocol core loads no notebook machinery, and no
module of the package imports, directly or through others, a module that imports it back."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "echomq_lab"
CORE = ("jobs", "snapshot", "keyspace", "branded", "errors", "connection", "transitions", "row",
        "clock", "queues", "scripts")
HEAVY = ("ipywidgets", "IPython", "matplotlib")


def _loaded_after(statement: str) -> set[str]:
    probe = f"import sys\n{statement}\nprint(sorted(m.split('.')[0] for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, timeout=120).stdout
    return set(eval(out))  # noqa: S307 - our own probe's printed list


def test_the_protocol_core_loads_no_notebook_machinery() -> None:
    imports = "\n".join(f"import echomq_lab.{name}" for name in CORE)
    loaded = _loaded_after(imports)
    assert loaded.isdisjoint(HEAVY), f"the core pulled in {sorted(loaded & set(HEAVY))}"


def test_the_probe_sees_a_heavy_import() -> None:
    # The check above could pass by never seeing anything: the widgets must show up here.
    assert "ipywidgets" in _loaded_after("import echomq_lab.widgets")


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_nodes(tree: ast.Module) -> list[ast.AST]:
    """Every node of ``tree`` but those under ``if TYPE_CHECKING:`` (never run)."""
    skipped = {
        id(n) for top in ast.walk(tree) if isinstance(top, ast.If)
        and isinstance(top.test, ast.Name) and top.test.id == "TYPE_CHECKING"
        for stmt in top.body for n in ast.walk(stmt)
    }  # fmt: skip
    return [n for n in ast.walk(tree) if id(n) not in skipped]


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """The package modules ``path`` imports when it runs: at module level or inside a function
    (a late import hides a cycle, it does not remove it)."""
    found: set[str] = set()
    for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{a.name}" for a in node.names]
            found |= {n for n in names if n in modules} or ({node.module} & modules)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names} & modules
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every module that can reach itself through ``graph``, with one way round."""
    found = []
    for start in sorted(graph):
        way: dict[str, list[str]] = {start: [start]}
        todo = [start]
        while todo:
            at = todo.pop()
            for nxt in sorted(graph.get(at, ())):
                if nxt == start:
                    found.append([*way[at], start])
                    todo = []
                    break
                if nxt not in way:
                    way[nxt] = [*way[at], nxt]
                    todo.append(nxt)
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}})[0] == ["a", "b", "c", "a"]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_package_has_no_import_cycle() -> None:
    paths = sorted(PACKAGE.rglob("*.py"))
    modules = {_module(p) for p in paths}
    graph = {_module(p): imports_of(p, modules) - {_module(p)} for p in paths}
    assert graph["echomq_lab.failover"] >= {"echomq_lab.jobs"}  # the reader sees imports at all
    assert cycles(graph) == []
