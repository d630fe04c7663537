"""Drive the notebooks in a real JupyterLab with headless Chromium (Playwright, system browser).

Nothing is downloaded: Playwright's Python package talks to Debian's ``/usr/bin/chromium``. The
server runs on a free loopback port with a random token, from a temporary copy of the notebooks
(so autosave never touches the repo), with every Jupyter directory pointed at a temp folder.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
QUIET_SETTINGS = '{"fetchNews": "false", "checkForUpdates": false}'


def chromium_path() -> tuple[str | None, str]:
    """The system Chromium and '' , or None and why it is missing."""
    for path in CHROMIUM_CANDIDATES:
        if os.access(path, os.X_OK):
            return path, ""
    found = shutil.which("chromium")
    if found:
        return found, ""
    return None, "no Chromium found: install Debian's chromium (apt-get install chromium)"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Lab:
    """A running JupyterLab: its base URL, token and the folder it serves."""

    url: str
    token: str
    root: Path
    proc: subprocess.Popen[bytes]
    log: Path

    def notebook_url(self, name: str) -> str:
        return f"{self.url}/lab/tree/{name}?token={self.token}"


@contextmanager
def jupyter_lab(notebooks: Path, workdir: Path) -> Iterator[Lab]:
    """Start JupyterLab on a copy of ``notebooks`` inside ``workdir``; stop it afterwards."""
    root = workdir / "notebooks"
    shutil.copytree(notebooks, root, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    env = {k: v for k, v in os.environ.items() if k != "ECHOMQ_REDIS_URL"}
    for var, sub in (
        ("JUPYTER_CONFIG_DIR", "config"),
        ("JUPYTER_DATA_DIR", "data"),
        ("JUPYTER_RUNTIME_DIR", "runtime"),
        ("IPYTHONDIR", "ipython"),
        ("JUPYTERLAB_SETTINGS_DIR", "settings"),
        ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"),
    ):
        env[var] = str(workdir / sub)
        (workdir / sub).mkdir(parents=True, exist_ok=True)
    notify = workdir / "settings" / "@jupyterlab" / "apputils-extension"
    notify.mkdir(parents=True)
    (notify / "notification.jupyterlab-settings").write_text(QUIET_SETTINGS)
    # The kernel must be the interpreter running the tests (it has echomq_lab installed).
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    port, token = free_port(), secrets.token_hex(16)
    log = workdir / "jupyter.log"
    cmd = [
        sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root",
        "--ip=127.0.0.1", f"--port={port}", f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}", "--ServerApp.port_retries=0",
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)
    lab = Lab(f"http://127.0.0.1:{port}", token, root, proc, log)
    try:
        _wait_ready(lab)
        yield lab
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_ready(lab: Lab, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if lab.proc.poll() is not None:
            raise RuntimeError(f"jupyter lab exited early:\n{lab.log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{lab.url}/api/status?token={lab.token}", timeout=2):
                return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"jupyter lab did not answer in {timeout} s:\n{lab.log.read_text()[-2000:]}")


def run_all(page: object, cells: int, timeout_ms: int = 120_000) -> None:
    """Open Run ▸ Run All Cells and wait until every code cell has run and the kernel is idle."""
    from playwright.sync_api import Page

    assert isinstance(page, Page)
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=timeout_ms)
    page.get_by_text("| Idle").first.wait_for(timeout=timeout_ms)
    page.wait_for_function(
        f"document.querySelectorAll('.jp-Notebook .jp-Cell').length >= {cells}",
        timeout=timeout_ms,
    )
    # Stored prompt numbers prove nothing: clear every output first, then run everything.
    menu(page, "Edit", "editmenu:clear-all")
    page.wait_for_function(
        """() => [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')]
                 .every(p => !/\\[\\d+\\]/.test(p.textContent))""",
        timeout=timeout_ms,
    )
    menu(page, "Run", "runmenu:run-all")
    # Every code cell's prompt shows a number once it has run: no empty or busy prompt left.
    page.wait_for_function(
        """() => {
            const prompts = [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')];
            return prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
        }""",
        timeout=timeout_ms,
    )
    page.get_by_text("| Idle").first.wait_for(timeout=timeout_ms)


def menu(page: object, label: str, command: str) -> None:
    """Open the menu-bar menu ``label`` and click its item for ``command``."""
    from playwright.sync_api import Page

    assert isinstance(page, Page)
    page.locator(".lm-MenuBar-itemLabel", has_text=label).first.click()
    page.locator(f".lm-Menu-item[data-command='{command}']").click()
