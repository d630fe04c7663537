"""A Binder-like install runs every notebook on a real Valkey: binder/environment.yml's packages
plus postBuild, then strict nbval with ``ECHOMQ_REDIS_URL`` naming the session's Valkey.

``make test`` runs nbval once on the embedded default; this is its one other nbval run. It
proves two things at once: the package works installed non-editable, far from the repository,
and every panel and script a reader clicks behaves the same on a real server (the notebooks'
stored outputs match there too, and the EVALSHA calls really reached Valkey).

The install is the closest this machine comes to mybinder.org (repo2docker). A fresh venv in a
temporary folder gets the packages binder/environment.yml lists (conda names translated to
PyPI's, the same ranges; python and pip are the venv's own), plus pytest and nbval at
pyproject's test ranges to run the notebooks. Then ``binder/postBuild`` itself runs there with
the venv's ``python`` first on PATH, from a copy of the repository's package files: it installs
echomq_lab non-editable (``pip install --no-deps .``), so the package lives in site-packages,
far from the repository, and anything that finds a repository file from the package's own
location breaks. The test checks that the kernel imports the package from site-packages, that
postBuild's settings file is in place, and runs every notebook under strict nbval with
``notebooks/`` as the working folder, the way a Binder kernel runs them. It takes a few minutes;
each step has a time limit.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import redis
from packaging.requirements import Requirement

from echomq_lab.measure import commandstats
from tests.support.envfiles import CONDA_ONLY, conda_ranges

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
BINDER = ROOT / "binder"
#: Time limits (s): making the venv and installing into it, then the whole nbval run.
INSTALL_TIMEOUT_S = 900
NBVAL_TIMEOUT_S = 900

pytestmark = pytest.mark.slow


def _test_tools() -> list[str]:
    """pytest and nbval as the test extra pins them."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {"pytest", "nbval"}
    lines = [r for r in project["optional-dependencies"]["test"] if Requirement(r).name in wanted]
    assert {Requirement(r).name for r in lines} == wanted, lines
    return lines


def _binder_packages() -> list[str]:
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


def _env(tmp: Path) -> dict[str, str]:
    """A clean environment: no PYTHONPATH, no server URL, Jupyter's folders in ``tmp``."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ECHOMQ_REDIS_URL")}
    for name in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR"):
        env[name] = str(tmp / name.lower())
    return env


def _run(argv: list[str], cwd: Path, env: dict[str, str], timeout: int) -> str:
    """Run ``argv``; fail with the tail of its output when it exits non-zero."""
    done = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-40:])
        pytest.fail(f"{' '.join(argv[:4])} ... exited {done.returncode}:\n{tail}", pytrace=False)
    return done.stdout


def test_every_notebook_runs_from_a_binder_like_install_on_valkey(
    tmp_path: Path, valkey_url: str
) -> None:
    env = _env(tmp_path)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = str(venv / "bin" / "python")
    packages = _binder_packages()
    assert any(p.startswith("voila") for p in packages), packages  # the app view opens on Binder
    install = [python, "-m", "pip", "install", "--no-input", *packages, *_test_tools()]
    _run(install, tmp_path, env, INSTALL_TIMEOUT_S)
    (tmp_path / "src").mkdir()
    source = _copy_of_the_package(tmp_path / "src")
    post = {**env, "PATH": str(venv / "bin") + os.pathsep + env.get("PATH", "")}
    _run(["bash", str(source / "binder" / "postBuild")], source, post, INSTALL_TIMEOUT_S)
    shutil.rmtree(source)  # nothing of the copy is needed once it is installed
    settings = venv / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    assert settings.exists(), "postBuild wrote no lab settings"

    where = _run(
        [python, "-c", "import echomq_lab; print(echomq_lab.__file__)"], NOTEBOOKS, env, 120
    ).strip()
    assert Path(where).is_relative_to(venv) and "site-packages" in where, where
    listing = _run([python, "-m", "pip", "list", "--editable"], tmp_path, env, 120)
    assert "echomq" not in listing, listing

    notebooks = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
    assert notebooks, "no notebook found"
    nbval = [
        python, "-m", "pytest", "--nbval", "--nbval-current-env",
        "--nbval-sanitize-with", "sanitize.cfg", "-p", "no:cacheprovider", "-q", *notebooks,
    ]  # fmt: skip
    server = redis.Redis.from_url(valkey_url)
    server.flushall()
    server.config_resetstat()
    out = _run(nbval, NOTEBOOKS, {**env, "ECHOMQ_REDIS_URL": valkey_url}, NBVAL_TIMEOUT_S)
    summary = out.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary and "error" not in summary, summary
    # The notebooks really ran their scripts on this server, not on an embedded one.
    stats = commandstats(server)
    calls = stats["evalsha"].calls if "evalsha" in stats else 0
    assert calls > len(notebooks), f"only {calls} EVALSHA reached Valkey"
