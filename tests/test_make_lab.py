"""``make lab`` and ``make app`` install the lab alone; the test extras come with ``make test``.

What make would run on a clean clone is read with ``make -n`` (nothing runs) against a venv
folder that does not exist yet: the one install it runs must be the package with no extra. The
packages that install pulls in are then followed through the installed metadata (every
``Requires-Dist`` without an extra marker, recursively, from echomq-lab's own): none of them may
be a test-only package (one the test extra names and the runtime does not need).
"""

from __future__ import annotations

import re
import subprocess
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent


def dry_run(target: str, tmp_path: Path) -> list[str]:
    """The commands ``make -n <target>`` prints for a venv that does not exist yet."""
    venv = tmp_path / "fresh-venv"
    done = subprocess.run(
        ["make", "-n", "--no-print-directory", target, f"VENV={venv}"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return done.stdout.splitlines()


def installs(lines: list[str]) -> list[str]:
    """The ``pip install`` / ``uv pip install`` lines among ``lines`` (not pip's own upgrade)."""
    return [
        line for line in lines
        if re.search(r"\bpip install\b", line) and not line.endswith("--upgrade pip")
    ]  # fmt: skip


@pytest.mark.parametrize("target", ["lab", "app"])
def test_the_lab_installs_the_package_alone(target: str, tmp_path: Path) -> None:
    lines = installs(dry_run(target, tmp_path))
    assert len(lines) == 1, f"make {target} runs {len(lines)} installs: {lines}"
    words = lines[0].split()
    assert words[-2:] == ["-e", "."], f"make {target} installs {words[-2:]}, not the bare package"
    assert "[" not in lines[0], f"make {target} asks for an extra: {lines[0]}"


def test_make_test_adds_the_test_extra(tmp_path: Path) -> None:
    lines = installs(dry_run("pytest", tmp_path))
    assert [line.split()[-1] for line in lines] == [".", "'.[test]'"], lines


def runtime_closure() -> set[str]:
    """Every package echomq-lab's runtime dependencies pull in, from the installed metadata.

    A requirement with extras (``fakeredis[lua]``) follows those extras' requirements too.
    """
    env = default_environment()
    seen: set[tuple[str, str]] = set()
    todo = [(canonicalize_name("echomq-lab"), "")]
    while todo:
        name, extra = todo.pop()
        if (name, extra) in seen:
            continue
        seen.add((name, extra))
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue  # a dependency for another platform or Python: not installed here
        for line in requires:
            req = Requirement(line)
            if req.marker is not None and not req.marker.evaluate({**env, "extra": extra}):
                continue  # another extra's requirement, or one for another platform
            dep = canonicalize_name(req.name)
            todo += [(dep, "")] + [(dep, x) for x in sorted(req.extras)]
    return {name for name, _ in seen}


def test_no_test_only_package_comes_with_the_lab() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    test_extra = {canonicalize_name(Requirement(r).name)
                  for r in project["optional-dependencies"]["test"]}
    closure = runtime_closure()
    assert "voila" in closure and "jupyterlab" in closure, sorted(closure)
    test_only = test_extra - {canonicalize_name(Requirement(r).name)
                              for r in project["dependencies"]}
    assert {"pytest", "playwright", "mypy"} <= test_only, test_only
    pulled = test_only & closure
    assert not pulled, f"the lab's install pulls in test-only packages: {sorted(pulled)}"
