"""The test suite's server launcher, loaded by path so the benchmarks share one copy of it.

``tests/`` is not a package (its conftest puts the folder on ``sys.path``), so this module
loads ``tests/servers.py`` under a private name instead of duplicating it.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

_PATH = Path(__file__).resolve().parents[1] / "tests" / "servers.py"
_NAME = "_echomq_bench_servers"


def _load() -> ModuleType:
    cached = sys.modules.get(_NAME)
    if cached is not None:
        return cached
    spec = importlib.util.spec_from_file_location(_NAME, _PATH)
    if spec is None or spec.loader is None:  # pragma: no cover - the file ships with the repo
        raise ImportError(f"cannot load the server launcher from {_PATH}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[_NAME] = module  # dataclasses look the module up while the class is built
    spec.loader.exec_module(module)
    return module


_servers = _load()
start_server = _servers.start_server
RunningServer = _servers.RunningServer
ServerStartError = _servers.ServerStartError

__all__ = ["RunningServer", "ServerStartError", "start_server"]
