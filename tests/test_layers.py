"""The package's layers are its folders, and they point one way.

The protocol core is the top level (with ``scripts/`` and ``browser/``); ``lessons/`` tells the
pages' stories from the core; the labs (``sim/``, ``measure/``, ``cluster/``) use the core and
what their docstrings name; ``widgets/`` may use everything. The core loads no notebook
machinery, the top level holds at most 13 modules (the one server launcher among them), and no
module of the package imports, directly or through others and type-only imports included, a
module that imports it back."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "echomq_lab"
CORE = ("jobs", "snapshot", "keyspace", "branded", "errors", "connection", "transitions", "row",
        "clock", "queues", "drift", "scripts", "browser")
#: Each layer (a folder, or the top level "") and the layers its modules may import.
LAYERS: dict[str, set[str]] = {
    "": {""},
    "lessons": {"", "lessons"},
    "measure": {"", "measure"},
    "sim": {"", "lessons", "sim", "palette"},
    "cluster": {"", "measure", "sim", "cluster"},
    "classroom": {"", "cluster", "sim", "classroom"},
    "widgets": {"", "lessons", "measure", "sim", "cluster", "classroom", "widgets", "widgets.look",
                "palette"},
    "widgets.look": {"", "palette"},
    "palette": set(),
}
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
    assert "ipywidgets" in _loaded_after("from echomq_lab.widgets import RecordView")


def test_the_look_and_the_simulation_load_no_widgets() -> None:
    # Charts use the look without a panel: naming the widgets package imports no panel.
    assert "ipywidgets" not in _loaded_after("import echomq_lab.sim, echomq_lab.widgets.look")


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _layer(module: str) -> str:
    """The layer of a dotted module name: its folder under the package, "" for the protocol
    core (the top level, ``scripts/`` and ``browser/``); ``widgets.look`` is a layer of its own
    (the look, which loads no ipywidgets)."""
    parts = module.split(".")[1:]
    if not parts or parts[0] in ("scripts", "browser"):
        return ""
    if parts[:2] == ["widgets", "look"]:
        return "widgets.look"
    path = PACKAGE.joinpath(*parts)
    return parts[0] if len(parts) > 1 or path.is_dir() else ""


def _runtime_nodes(tree: ast.Module) -> list[ast.AST]:
    """Every node of ``tree`` but those under ``if TYPE_CHECKING:`` (never run)."""
    skipped = {
        id(n) for top in ast.walk(tree) if isinstance(top, ast.If)
        and isinstance(top.test, ast.Name) and top.test.id == "TYPE_CHECKING"
        for stmt in top.body for n in ast.walk(stmt)
    }  # fmt: skip
    return [n for n in ast.walk(tree) if id(n) not in skipped]


def imports_of(path: Path, modules: set[str], *, typing_too: bool = True) -> set[str]:
    """The package modules ``path`` imports: at module level or inside a function (a late
    import hides a cycle, it does not remove it), and under ``if TYPE_CHECKING:`` unless
    ``typing_too`` is False (a reader must untie a type-only circle too)."""
    found: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree) if typing_too else _runtime_nodes(tree):
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


def _graph() -> dict[str, set[str]]:
    paths = sorted(PACKAGE.rglob("*.py"))
    modules = {_module(p) for p in paths}
    return {_module(p): imports_of(p, modules) - {_module(p)} for p in paths}


def test_the_package_has_no_import_cycle() -> None:
    graph = _graph()
    # the reader sees imports at all, type-only ones too
    assert graph["echomq_lab.cluster.failover"] >= {"echomq_lab.jobs"}
    assert "echomq_lab.sim.run" in graph["echomq_lab.sim.charts"]
    assert cycles(graph) == []


def test_every_module_imports_only_the_layers_below_it() -> None:
    graph = _graph()
    assert {_layer(m) for m in graph} == set(LAYERS)
    wrong = [f"{m} ({_layer(m) or 'core'}) imports {i}" for m, found in graph.items()
             for i in sorted(found) if _layer(i) not in LAYERS[_layer(m)]]
    assert wrong == []


def test_the_layer_rule_sees_a_wrong_import() -> None:
    # The check above could pass by reading nothing: a lesson importing a panel is caught.
    assert _layer("echomq_lab.lessons.stories") == "lessons"
    assert _layer("echomq_lab.widgets.record_view") not in LAYERS["lessons"]
    assert _layer("echomq_lab.jobs") == _layer("echomq_lab.scripts") == ""


def test_the_top_level_holds_at_most_thirteen_modules_and_every_folder_says_its_rule() -> None:
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 13, top
    for folder in (p for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()):
        doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text(encoding="utf-8")))
        assert doc and "import" in doc, f"{folder.name}/__init__.py does not say what it may import"


def test_the_protocol_surface_stays_importable() -> None:
    loaded = _loaded_after("from echomq_lab import connect, jobs, branded, keyspace, errors, "
                           "check, queues\nimport echomq_lab.widgets, echomq_lab.sim")
    assert "echomq_lab" in loaded
