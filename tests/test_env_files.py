"""pyproject.toml, environment.yml and binder/ name the same packages with the same ranges.

conda-forge spells a few packages differently (redis-py for redis); extras such as
``fakeredis[lua]`` are spelled out as their packages (lupa). Each range is compared as a set of
specifiers, so ``>=2.26,<3`` in one file and ``>=2.26, <3`` in another agree, and a range that
drifts (say ``<4`` in one place) fails.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from echomq_lab.testing.envfiles import CONDA_ONLY, conda_ranges

ROOT = Path(__file__).resolve().parent.parent


def pyproject() -> dict[str, object]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def pypi_ranges(extra: str | None = None) -> dict[str, SpecifierSet]:
    """{package: specifier set} from pyproject's dependencies (or one extra)."""
    project = pyproject()["project"]
    assert isinstance(project, dict)
    lines = project["dependencies"] if extra is None else project["optional-dependencies"][extra]
    return {Requirement(line).name.lower(): Requirement(line).specifier for line in lines}


ENV_FILES = [ROOT / "environment.yml", ROOT / "binder" / "environment.yml"]


@pytest.mark.parametrize("path", ENV_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_runtime_packages_agree(path: Path) -> None:
    conda, _ = conda_ranges(path)
    for name, spec in pypi_ranges().items():
        assert name in conda, f"{path.name} lacks {name} (pyproject has {name}{spec})"
        assert conda[name] == spec, f"{path.name}: {name}{conda[name]} but pyproject {spec}"


@pytest.mark.parametrize("path", ENV_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_package_beyond_pyproject(path: Path) -> None:
    conda, pip = conda_ranges(path)
    known = set(pypi_ranges()) | set(pypi_ranges("test")) | {"python"} | CONDA_ONLY
    extra = set(conda) - known
    assert not extra, f"{path.name} names packages pyproject does not: {extra}"
    test_extra = pypi_ranges("test")
    for line in pip:
        if line.startswith("-e"):
            continue
        req = Requirement(line)
        assert req.name in test_extra and req.specifier == test_extra[req.name], line


def test_python_floor_agrees() -> None:
    project = pyproject()["project"]
    assert isinstance(project, dict)
    floor = SpecifierSet(str(project["requires-python"]))
    for path in ENV_FILES:
        conda, _ = conda_ranges(path)
        assert "3.11" in conda["python"] and "3.11" in floor, path.name
        assert "3.10" not in conda["python"] and "3.10" not in floor, path.name


def test_root_environment_has_the_test_tools() -> None:
    conda, pip = conda_ranges(ROOT / "environment.yml")
    test_extra = pypi_ranges("test")
    for name in ("pytest", "hypothesis", "nbval"):
        assert conda[name] == test_extra[name], name
    assert "-e ." in pip, "environment.yml must install echomq_lab itself"


def test_binder_installs_the_package_and_fails_loudly() -> None:
    post = (ROOT / "binder" / "postBuild").read_text()
    first_command = next(
        line for line in post.splitlines() if line.strip() and not line.startswith("#")
    )
    assert first_command.startswith("set -e"), "postBuild must begin with set -e"
    assert "pip install" in post
    assert (ROOT / "binder" / "postBuild").stat().st_mode & 0o111, "postBuild must be executable"


def test_binder_installs_the_package_as_a_user_would() -> None:
    """Not editable: tests/test_installed.py runs every notebook from an install like this."""
    post = (ROOT / "binder" / "postBuild").read_text()
    installs = [
        line.split()
        for line in post.splitlines()
        if not line.lstrip().startswith("#") and "pip install" in line
    ]
    assert installs == [["python", "-m", "pip", "install", "--no-deps", "."]], installs
