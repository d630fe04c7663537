"""The package's layers point one way: the protocol core loads no notebook machinery, and no
module grows past the size one reader can hold."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "echomq_lab"
CORE = ("jobs", "snapshot", "keyspace", "branded", "errors", "connection", "transitions", "row",
        "clock", "queues", "scripts")
HEAVY = ("ipywidgets", "IPython", "matplotlib")
MAX_LINES = 450


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


@pytest.mark.parametrize(
    "path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE))
)
def test_no_module_is_longer_than_one_reader_holds(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.name} has {lines} lines (at most {MAX_LINES})"
