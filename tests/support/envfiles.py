"""Reading a conda environment file (environment.yml, binder/environment.yml) for the tests
that keep it in step with pyproject.toml and build a venv from it."""

from __future__ import annotations

import re
from pathlib import Path

from packaging.specifiers import SpecifierSet

#: conda-forge names that PyPI spells otherwise.
CONDA_TO_PYPI = {"redis-py": "redis"}
#: conda-only tooling that has no PyPI twin in pyproject.
CONDA_ONLY = {"pip"}


def conda_ranges(path: Path) -> tuple[dict[str, SpecifierSet], list[str]]:
    """({package: specifier set}, pip lines) from a conda environment file.

    The file is read line by line (no YAML dependency): ``  - name spec`` entries under
    ``dependencies:``, and ``      - ...`` entries under ``pip:``.
    """
    conda: dict[str, SpecifierSet] = {}
    pip: list[str] = []
    section = ""
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].rstrip()
        if not line.strip():
            continue
        if not line.startswith(" "):
            section = line.strip().rstrip(":")
            continue
        item = line.strip()
        if section != "dependencies" or not item.startswith("- "):
            continue
        item = item[2:].strip()
        if item == "pip:":
            continue
        if raw.startswith("      -"):
            pip.append(item)
            continue
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)\s*(.*)", item)
        assert m, f"{path.name}: cannot read {item!r}"
        name, spec = m.group(1).lower(), m.group(2).replace(" ", "")
        conda[CONDA_TO_PYPI.get(name, name)] = SpecifierSet(spec)
    return conda, pip
