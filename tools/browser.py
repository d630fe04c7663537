"""Drive the notebooks in a real JupyterLab with headless Chromium (Playwright, system browser);
serve a folder (the static site) from loopback; start a server (the app) and wait until it answers.

Nothing is downloaded: Playwright's Python package talks to Debian's ``/usr/bin/chromium``. The
server runs on a free loopback port with a random token, from a temporary copy of the notebooks
(so autosave never touches the repo), with every Jupyter directory pointed at a temp folder.
Playwright is a test extra: it is imported only when a browser is launched or a page is handed
to one of these helpers. The fixtures built on these live in ``tests/conftest.py``.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from echomq_lab.servers import free_port

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Locator, Page, ViewportSize

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
#: User settings the test server starts with: no news popup; every cell attached to the page
#: (so locators see all of them and a screenshot holds real heights); no blank space after the
#: last cell (so the notebook's scroll height is its content).
LAB_SETTINGS: dict[tuple[str, str], str] = {
    ("apputils-extension", "notification"): '{"fetchNews": "false", "checkForUpdates": false}',
    ("notebook-extension", "tracker"): '{"windowingMode": "none", "scrollPastEnd": false}',
}
#: A cell output on stderr; JupyterLab draws a traceback (an ``error`` output) this way too.
STDERR_OUTPUT = (
    '.jp-Notebook .jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'
)
#: The scrolling area of the notebook on show.
NOTEBOOK_SCROLLER = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-WindowedPanel-outer"
#: Where screenshots go unless ``$ECHOMQ_SCREENSHOTS`` names a folder (relative to the repo).
SCREENSHOTS_ENV = "ECHOMQ_SCREENSHOTS"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
#: On the static site: true once the site is kept for offline reading, every file its service
#: worker lists in its cache (tools/site/offline.js). A promise: see :func:`wait_until_kept`.
SITE_KEPT = """async () => {
    const key = (await caches.keys()).find((k) => k.startsWith('emq-site-'));
    if (!key) return false;
    const cache = await caches.open(key);
    const listed = await (await fetch('../service-worker.js')).text();
    const files = JSON.parse(listed.match(/const EMQ_FILES = (\\[.*?\\]);/s)[1]);
    const root = new URL('../', window.location.href);
    for (const file of files) {
        if (!(await cache.match(new URL(file, root).href))) return false;
    }
    return true;
}"""
#: The size of every test tab.
VIEWPORT: ViewportSize = {"width": 1280, "height": 900}


def wait_until_kept(page: object, timeout_s: float = 120) -> None:
    """Wait until the static site is kept for offline reading (:data:`SITE_KEPT`, asked every
    half second: Playwright's ``wait_for_function`` takes a promise for a true value)."""
    tab = _page(page)
    end = time.monotonic() + timeout_s
    while not tab.evaluate(SITE_KEPT):
        if time.monotonic() > end:
            raise TimeoutError(f"the site was not kept for offline reading in {timeout_s:g} s")
        tab.wait_for_timeout(500)


def screenshots_folder(default: Path) -> Path:
    """``$ECHOMQ_SCREENSHOTS`` (when set and not empty) or ``default``, created if need be."""
    folder = Path(os.environ.get(SCREENSHOTS_ENV) or default)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@contextmanager
def launch_chromium(executable: str) -> Iterator[Browser]:
    """Headless ``executable`` (a system Chromium) driven by Playwright; closed on leaving."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


def _code_outputs(notebook: Path) -> Iterator[dict[str, Any]]:
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    for cell in cells:
        if cell["cell_type"] == "code":
            yield from cell.get("outputs", [])


def cell_count(notebook: Path) -> int:
    """How many cells (of any type) the stored ``notebook`` has."""
    return len(json.loads(notebook.read_text(encoding="utf-8"))["cells"])


def stored_widgets(notebook: Path) -> int:
    """How many outputs of the stored ``notebook`` are widgets (each must come back live)."""
    return sum(WIDGET_MIME in out.get("data", {}) for out in _code_outputs(notebook))


def stored_stderr(notebook: Path) -> int:
    """How many outputs of the stored ``notebook`` are on stderr (tracebacks included)."""
    return sum(
        out.get("name") == "stderr" or out["output_type"] == "error"
        for out in _code_outputs(notebook)
    )


def find_button(scope: Locator, label: str) -> Locator:
    """The buttons (toggle buttons too) in ``scope`` whose text is exactly ``label``.

    Not by accessible name: an icon's glyph (CSS content) is part of that name.
    """
    exact = re.compile(rf"^\s*{re.escape(label)}\s*$")
    return scope.locator(":is(.widget-button, .widget-toggle-button)").filter(has_text=exact)


def only_from(target: Page | BrowserContext, origin: str, refused: list[str]) -> None:
    """Let ``target`` (a page or a browser context) load only from ``origin`` (and ``data:`` or
    ``blob:`` URLs): every other request is aborted and its URL appended to ``refused``."""
    from playwright.sync_api import Route

    def route(request_route: Route) -> None:
        url = request_route.request.url
        if url.startswith((origin + "/", "data:", "blob:")):
            request_route.continue_()
        else:
            refused.append(url)
            request_route.abort()

    target.route("**/*", route)


def chromium_path() -> tuple[str | None, str]:
    """The system Chromium and '' , or None and why it is missing."""
    for path in CHROMIUM_CANDIDATES:
        if os.access(path, os.X_OK):
            return path, ""
    found = shutil.which("chromium")
    if found:
        return found, ""
    return None, "no Chromium found: install Debian's chromium (apt-get install chromium)"


@dataclass
class Lab:
    """A running JupyterLab: its base URL, token and the folder it serves."""

    url: str
    token: str
    root: Path
    proc: subprocess.Popen[bytes]
    log: Path

    def notebook_url(self, name: str, workspace: str | None = None) -> str:
        """The URL opening notebook ``name``; with ``workspace``, alone in a fresh workspace.

        Each browser tab on the default workspace would restore the notebooks other tabs
        opened; a workspace of its own (reset on load) shows this notebook only.
        """
        if workspace is None:
            return f"{self.url}/lab/tree/{name}?token={self.token}"
        return f"{self.url}/lab/workspaces/{workspace}/tree/{name}?token={self.token}&reset"


class _Quiet(http.server.SimpleHTTPRequestHandler):
    """A static file handler that logs nothing and names the site's types (wasm, wheels)."""

    extensions_map = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".mjs": "text/javascript", ".js": "text/javascript", ".wasm": "application/wasm",
        ".json": "application/json", ".whl": "application/zip",
    }

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        return


@contextmanager
def serve_folder(folder: Path) -> Iterator[str]:
    """``folder`` served as static files on a free loopback port; yields its base URL."""
    handler = functools.partial(_Quiet, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def jupyter_env(tmp: Path) -> dict[str, str]:
    """This process's environment, less PYTHONPATH and the server URL, with Jupyter's and
    IPython's folders in ``tmp``: a server started with it reads nothing of the user's."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ECHOMQ_REDIS_URL")}
    for name in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR"):
        env[name] = str(tmp / name.lower())
    return env


@contextmanager
def serving(argv: list[str], cwd: Path, env: Mapping[str, str], port: int, log: Path,
            timeout_s: float = 600) -> Iterator[str]:
    """``argv`` started in a process group of its own (its output to ``log``), yielding
    ``http://localhost:<port>`` once ``/`` answers there; the group is stopped afterwards.
    RuntimeError, with the log's tail, if it exits or does not answer within ``timeout_s``."""
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, cwd=cwd, env=dict(env), stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://localhost:{port}"
    try:
        end = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"{argv[0]} exited {proc.returncode}:\n"
                                   f"{log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(url + "/", timeout=2):
                    break
            except OSError:
                if time.monotonic() > end:
                    raise RuntimeError(f"{argv[0]} did not answer on {url}:\n"
                                       f"{log.read_text()[-3000:]}") from None
                time.sleep(0.3)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


#: Files outside notebooks/ that a notebook reads by a path relative to itself.
REPOSITORY_FILES = ("benchmarks/results.json",)


@contextmanager
def jupyter_lab(
    notebooks: Path, workdir: Path, settings: Mapping[tuple[str, str], str] | None = None
) -> Iterator[Lab]:
    """Start JupyterLab on a copy of ``notebooks`` inside ``workdir``; stop it afterwards.

    ``settings`` adds user settings to :data:`LAB_SETTINGS`, keyed the same way
    (``("apputils-extension", "themes")`` to a JSON text, say).
    """
    root = workdir / "notebooks"
    shutil.copytree(notebooks, root, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    # The repository files the notebooks name relative to themselves (06 reads the benchmark's
    # results) go beside the copy, where ``../`` finds them.
    for name in REPOSITORY_FILES:
        source = notebooks.parent / name
        if source.is_file():
            (workdir / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, workdir / name)
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
    for (extension, plugin), text in {**LAB_SETTINGS, **(settings or {})}.items():
        folder = workdir / "settings" / "@jupyterlab" / extension
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{plugin}.jupyterlab-settings").write_text(text)
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


class NotebookRunError(AssertionError):
    """A cell raised during Run All: the message holds its traceback as the page shows it."""


def _page(page: object) -> Page:
    from playwright.sync_api import Page

    assert isinstance(page, Page), f"expected a Playwright Page, got {type(page).__name__}"
    return page


def run_all(page: object, cells: int, timeout_ms: int = 120_000) -> None:
    """Clear all outputs, Run ▸ Run All Cells, and wait until every code cell has run.

    Waits for the kernel to be idle before and after. A cell that raises stops Run All; that is
    reported at once as :class:`NotebookRunError` with the traceback, not as a timeout.
    """
    page = _page(page)
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
    # Run All marks every code cell queued ([*]) at once; each shows its number once it has run.
    # A cell that raises stops the run: then nothing is queued any more, yet some prompts are
    # blank, and the last numbered cell holds the traceback.
    outcome = page.wait_for_function(
        """() => {
            const prompts = [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')]
                .map(p => p.textContent);
            if (prompts.length === 0 || prompts.some(t => t.includes('*'))) return false;
            const ran = prompts.filter(t => /\\[\\d+\\]/.test(t)).length;
            if (ran === prompts.length) return 'done';
            return ran > 0 ? 'halted' : false;
        }""",
        timeout=timeout_ms,
    ).json_value()
    if outcome == "halted":
        ran = page.locator(".jp-CodeCell").filter(
            has=page.locator(".jp-InputPrompt", has_text=re.compile(r"\[\d+\]"))
        )
        raise NotebookRunError(
            f"Run All stopped at a cell that raised:\n{ran.last.inner_text()[-3000:]}"
        )
    page.get_by_text("| Idle").first.wait_for(timeout=timeout_ms)


#: The static site's button that leaves its reader's view for the full JupyterLab
#: (tools/site/reader.html).
FULL_LAB = "#emq-full-lab"


def full_lab(page: object) -> None:
    """On the static site, opened in its reader's view: press "Full JupyterLab" (menus, file
    browser, code shown) and wait for the menu bar. Anywhere else, nothing."""
    page = _page(page)
    button = page.locator(FULL_LAB)
    if button.count() and button.is_visible() and button.inner_text() == "Full JupyterLab":
        button.click()
        page.locator(".lm-MenuBar").first.wait_for(state="visible", timeout=30_000)


def reader_view(page: object) -> None:
    """On the static site, in its full JupyterLab: press "Reader's view" and wait until the menu
    bar has gone. Anywhere else, nothing."""
    page = _page(page)
    button = page.locator(FULL_LAB)
    if button.count() and button.is_visible() and button.inner_text() == "Reader's view":
        button.click()
        page.locator(".lm-MenuBar").first.wait_for(state="hidden", timeout=30_000)


def menu(page: object, label: str, command: str) -> None:
    """Open the menu-bar menu ``label`` and click its item for ``command`` (on the static site,
    from its full JupyterLab)."""
    page = _page(page)
    full_lab(page)
    page.locator(".lm-MenuBar-itemLabel", has_text=label).first.click()
    page.locator(f".lm-Menu-item[data-command='{command}']").click()


def change_theme(page: object, theme: str, timeout_ms: int = 30_000) -> None:
    """Switch JupyterLab to ``theme`` ("JupyterLab Dark", say) as a reader does, from the
    Settings menu's Theme submenu (``apputils:change-theme``), and wait until the page wears it."""
    page = _page(page)
    full_lab(page)
    page.locator(".lm-MenuBar-itemLabel", has_text="Settings").first.click()
    page.locator(".lm-Menu-item", has=page.get_by_text("Theme", exact=True)).first.click()
    item = page.locator(".lm-Menu-item[data-command='apputils:change-theme']").filter(
        has=page.get_by_text(theme, exact=True))
    item.click()
    page.wait_for_function(
        "theme => document.body.dataset.jpThemeName === theme", arg=theme, timeout=timeout_ms)


def hide_sidebar(page: object) -> None:
    """Collapse the left sidebar (the file browser) if it is open: Ctrl+B, as a reader would."""
    page = _page(page)
    stack = page.locator("#jp-left-stack")
    if stack.is_visible():
        page.keyboard.press("Control+b")
        stack.wait_for(state="hidden", timeout=10_000)


def _scroller_heights(page: Page) -> tuple[int, int]:
    client, scroll = page.evaluate(
        f"""() => {{
            const o = document.querySelector('{NOTEBOOK_SCROLLER}');
            return o ? [o.clientHeight, o.scrollHeight] : [0, 0];
        }}"""
    )
    return int(client), int(scroll)


def notebook_screenshot(page: object, path: Path, max_height: int = 16_000) -> Path:
    """Save the whole notebook on show as one PNG (up to ``max_height`` px tall).

    The notebook scrolls inside the page, so a page screenshot would hold one screenful: the
    window is grown until the notebook fits, shot, and put back to its size.
    """
    page = _page(page)
    size = page.viewport_size
    assert size is not None, "the page has no fixed viewport"
    path.parent.mkdir(parents=True, exist_ok=True)
    height = size["height"]
    try:
        for _ in range(6):  # a taller window can reflow the notebook: grow until it fits
            client, scroll = _scroller_heights(page)
            if scroll <= client or height >= max_height:
                break
            grown = min(max_height, height + scroll - client) - height
            height += grown
            page.set_viewport_size({"width": size["width"], "height": height})
            page.wait_for_function(  # the notebook's area grows with the window
                f"""() => {{
                    const o = document.querySelector('{NOTEBOOK_SCROLLER}');
                    return o && o.clientHeight >= {client + grown - 40};
                }}""",
                timeout=10_000,
            )
        page.evaluate(
            f"() => {{ const o = document.querySelector('{NOTEBOOK_SCROLLER}');"
            " if (o) o.scrollTop = 0; }"
        )
        page.screenshot(path=str(path))
    finally:
        page.set_viewport_size(size)
        page.wait_for_function(
            f"() => {{ const o = document.querySelector('{NOTEBOOK_SCROLLER}');"
            f" return !o || o.clientHeight < {size['height']}; }}",
            timeout=10_000,
        )
    return path
