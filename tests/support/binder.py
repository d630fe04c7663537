"""A Binder-like install: the closest this machine comes to mybinder.org (repo2docker).

A fresh venv in a folder of the caller's gets the packages binder/environment.yml lists (conda
names translated to PyPI's, the same ranges; python and pip are the venv's own). Then
``binder/postBuild`` itself runs there with the venv's ``python`` first on PATH, from a copy of
the repository's package files: it installs echomq_lab non-editable (``pip install --no-deps
.``), so the package lives in site-packages, far from the repository, and anything that finds a
repository file from the package's own location breaks. The copy is removed once installed.
Each step has a time limit; a step that fails stops the test with the tail of its output.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.envfiles import CONDA_ONLY, conda_ranges
from tools.browser import jupyter_env

ROOT = Path(__file__).resolve().parents[2]
BINDER = ROOT / "binder"
#: Time limit (s) for making the venv and for each install into it.
INSTALL_TIMEOUT_S = 900


@dataclass(frozen=True)
class Install:
    """A Binder-like venv: its folder, its ``python``, and the environment to run it in (no
    PYTHONPATH, no server URL, Jupyter's folders beside the venv)."""

    venv: Path
    python: str
    env: dict[str, str]


def packages() -> list[str]:
    """binder/environment.yml's packages as PyPI requirements (python and pip left out), then
    its ``pip:`` lines as Binder installs them."""
    conda, pip = conda_ranges(BINDER / "environment.yml")
    python = conda.pop("python")
    assert f"{sys.version_info.major}.{sys.version_info.minor}" in python, (
        f"this Python is not in binder's range {python}")
    named = [f"{name}{spec}" for name, spec in sorted(conda.items()) if name not in CONDA_ONLY]
    return named + pip


def _copy_of_the_package(into: Path) -> Path:
    """pyproject.toml, echomq_lab/ and binder/ copied to ``into``: a tree outside the repository."""
    shutil.copy2(ROOT / "pyproject.toml", into / "pyproject.toml")
    shutil.copytree(BINDER, into / "binder")
    shutil.copytree(
        ROOT / "echomq_lab",
        into / "echomq_lab",
        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"),
    )
    return into


def run(argv: list[str], cwd: Path, env: dict[str, str], timeout: int) -> str:
    """Run ``argv``; fail with the tail of its output when it exits non-zero."""
    done = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-40:])
        pytest.fail(f"{' '.join(argv[:4])} ... exited {done.returncode}:\n{tail}", pytrace=False)
    return done.stdout


def install(tmp: Path) -> Install:
    """Binder's packages, then postBuild from a copy of the package, into a venv in ``tmp``."""
    env = jupyter_env(tmp)
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = str(venv / "bin" / "python")
    run([python, "-m", "pip", "install", "--no-input", *packages()], tmp, env, INSTALL_TIMEOUT_S)
    (tmp / "src").mkdir()
    source = _copy_of_the_package(tmp / "src")
    post = {**env, "PATH": str(venv / "bin") + os.pathsep + env.get("PATH", "")}
    run(["bash", str(source / "binder" / "postBuild")], source, post, INSTALL_TIMEOUT_S)
    shutil.rmtree(source)  # nothing of the copy is needed once it is installed
    return Install(venv, python, env)
