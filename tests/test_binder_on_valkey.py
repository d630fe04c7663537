"""A Binder-like install (:mod:`tests.support.binder`: binder/environment.yml's packages plus
postBuild) holds the lab non-editable, far from the repository, with the app's packages.

The same install then serves the app of tests/test_app.py on the session's real Valkey, so the
pages that run there run from this install, on a real server (that module checks the EVALSHA
calls reached Valkey). Here: the kernel imports the package from the install's site-packages,
not editable; postBuild's settings file is in place; Voilà came with binder's packages.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.binder import Install, packages, run

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"

pytestmark = pytest.mark.slow


def test_binder_lists_the_apps_packages() -> None:
    assert any(p.startswith("voila") for p in packages()), packages()  # the app opens on Binder


def test_the_install_holds_the_package_far_from_the_repository(binder_install: Install) -> None:
    python, env = binder_install.python, binder_install.env
    where = run([python, "-c", "import echomq_lab; print(echomq_lab.__file__)"], NOTEBOOKS, env,
                120).strip()
    assert Path(where).is_relative_to(binder_install.venv) and "site-packages" in where, where
    listing = run([python, "-m", "pip", "list", "--editable"], NOTEBOOKS, env, 120)
    assert "echomq" not in listing, listing
    settings = binder_install.venv / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    assert settings.exists(), "postBuild wrote no lab settings"
