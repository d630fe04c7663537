"""Build the static site: the lab's pages in JupyterLite, running in the reader's tab.

    python tools/site/build.py --out site --work build/site --jupyter build/site/venv/bin/jupyter

From a clean state every time (a stale doit database drops settings): the pages that need no
thread and no socket, copied from ``notebooks/``; Pyodide from the npm package, served from the
site's ``static/pyodide/``; every wheel the kernel and the lab import, served beside it, with
the lock's entries pointing at them (sha256 rewritten, entries added for the wheels the lock
lacks); PyPI fallback off. Nothing is fetched at run time from any other origin.

A page opened as ``lab/index.html?path=<page>.ipynb`` runs itself (tools/site/autorun.js, with
the cue of tools/site/cue.html): the kernel's worker starts as the page opens, and once Python
answers every cell runs once, nothing pressed. ``index.html`` lists the pages (title and one
line, from the reading order) and opens each that way.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

import wheels  # noqa: E402  (tools/site/wheels.py)

sys.path.insert(0, str(ROOT))
from echomq_lab.widgets.progress import course_script  # noqa: E402  (each page's questions)
from tools import course  # noqa: E402  (the reading order, tools/pages.toml)

PYODIDE = HERE / "node_modules" / "pyodide"
FENGARI = HERE / "node_modules" / "fengari-web" / "dist" / "fengari-web.js"
#: The reader's self-check answers kept in the browser, and the progress the hub shows from
#: them (both shared with the app).
ANSWERS_JS = ROOT / "echomq_lab" / "widgets" / "answers.js"
PROGRESS_JS = ROOT / "echomq_lab" / "widgets" / "progress.js"
#: The runtime files the site serves from the npm package (no source maps, no console pages).
RUNTIME = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip")
#: The browser's Python's tag for byte-compiled files (``sys.implementation.cache_tag``).
CACHE_TAG = "cpython-314"
#: Where the browser's Python finds its standard library (``python_stdlib.zip``).
STDLIB_AT = "/lib/python314.zip/"
#: The pages in the site, and why each other page is not (tools/pages.toml: offsite).
PAGES, LEFT_OUT = course.site_pages()
#: Lock entries added for wheels the Pyodide lock lacks: name -> (imports, depends).
EXTRA = {
    # the kernel's own three (from its extension's pypi/ folder): loaded with Pyodide itself
    "piplite": (["piplite"], ["micropip"]),
    "pyodide-kernel": (["pyodide_kernel"], ["comm", "ipython"]),
    "ipykernel": (["ipykernel"], ["pyodide-kernel"]),
    "comm": (["comm"], ["traitlets"]),
    # this venv's IPython (tools/site/wheels.py: SHELL), its needs from its own metadata; jedi
    # (for completion) is loaded by the kernel itself
    "ipython": (["IPython"], ["ipython-pygments-lexers", "matplotlib-inline", "prompt-toolkit",
                              "pygments", "stack-data", "traitlets"]),
    "ipython-pygments-lexers": (["ipython_pygments_lexers"], ["pygments"]),
    "jupyterlab-widgets": (["jupyterlab_widgets"], []),
    "widgetsnbextension": (["widgetsnbextension"], []),
    "ipywidgets": (["ipywidgets"], ["comm", "ipython", "traitlets", "widgetsnbextension",
                                    "jupyterlab-widgets"]),
    "redis": (["redis"], []),
    "fakeredis": (["fakeredis"], ["redis", "sortedcontainers"]),
    "matplotlib": (["matplotlib"], []),
    "echomq-lab": (["echomq_lab"], ["fakeredis", "redis", "sortedcontainers", "ipywidgets",
                                    "matplotlib"]),
}
#: Loaded in one batch as Pyodide starts (the kernel then skips installing them one by one).
PRELOAD = ["micropip", "piplite", "ipykernel", "comm", "pyodide-kernel", "jedi", "ipython",
           "echomq-lab"]
#: Left out of Python's start when the kernel's worker starts early (tools/site/autorun.js),
#: loaded once the page has run: jedi (with parso, nearly 2,000 files to unpack) serves only
#: completion, and IPython imports it when first asked for one.
LATER = ["jedi"]
#: Run in the kernel's worker as soon as its modules are imported, while the app still loads:
#: completion without jedi until jedi is loaded (IPython's own completer: names and
#: attributes, no type inference); and what every page's first cell imports (the lab, its
#: server and Lua, the widgets), so that it is already imported when the page runs. Nothing is
#: left in the reader's namespace.
WARM = """
def _emq_warm():
    import importlib.util
    import pyodide_kernel
    if importlib.util.find_spec("jedi") is None:
        pyodide_kernel.ipython_shell.Completer.use_jedi = False
    try:
        import ipywidgets  # noqa: F401
        import echomq_lab  # noqa: F401  (the embedded server: fakeredis, redis)
        import echomq_lab.widgets  # noqa: F401  (the panels)
        from echomq_lab.browser import lua
        lua._fengari()
    except Exception:  # the page imports them itself
        pass
_emq_warm()
del _emq_warm
"""
#: Run once :data:`LATER` is loaded: completion with jedi again, as the kernel sets it.
LATER_LOADED = """
import pyodide_kernel
pyodide_kernel.ipython_shell.Completer.use_jedi = True
del pyodide_kernel
"""
#: JupyterLab's parts that do nothing on this site, not started: it has no language servers,
#: terminals, saved workspaces, files to share, CSV, audio, video, PDF, Vega or Mermaid to show,
#: nothing to edit in cell metadata or tags, and its help links lead to other origins (the log
#: console stays: a panel's error shows there in the full JupyterLab). Starting
#: them cost the tab about a second of processor time before the first panel is live, time the
#: page's Python then waited for on a two-core machine.
NOT_STARTED = (
    "@jupyterlab/lsp-extension", "@jupyterlab/fileeditor-extension:language-server",
    "@jupyterlab/notebook-extension:language-server",
    "@jupyterlite/application-extension:lsp-connection-manager",
    "@jupyterlab/completer-extension:inline-history",
    "@jupyterlab/completer-extension:inline-completer",
    "@jupyterlab/completer-extension:inline-completer-factory",
    "@jupyterlab/help-extension", "@jupyterlab/terminal-extension",
    "@jupyterlab/workspaces-extension", "@jupyterlite/application-extension:share-file",
    "@jupyterlab/mermaid-extension", "@jupyterlab/csvviewer-extension",
    "@jupyterlab/audio-extension", "@jupyterlab/video-extension", "@jupyterlab/pdf-extension",
    "@jupyterlab/vega5-extension", "@jupyterlab/json-lines-extension",
    "@jupyterlab/metadataform-extension", "@jupyterlab/notebook-extension:metadata-editor",
    "@jupyterlab/notebook-extension:update-raw-mimetype",
    "@jupyterlab/celltags-extension", "@jupyterlab/cell-toolbar-extension",
)
#: How long a first visit's kernel waits for the site's service worker to answer its files
#: (so that its compiled runtime is kept for the next page); it starts anyway after that.
CONTROL_WAIT_MS = 1500
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
#: The wheels that come from the kernel extension's own pypi/ folder.
FROM_KERNEL = ("piplite", "pyodide-kernel", "ipykernel")
#: Stands in for matplotlib, which the site does not carry (its charts are on the pages left
#: out); importing it works, drawing says why not.
_STUB_MODULE = (
    '"""Not in the browser version of the lab: charts need matplotlib."""\n\n\n'
    "class _NotHere:\n"
    "    def __init__(self, *args, **kwargs):\n"
    "        raise RuntimeError('charts are not in the browser version of the lab')\n\n\n"
    "def __getattr__(name):\n"
    "    if name.startswith('__'):\n"
    "        raise AttributeError(name)\n"
    "    return _NotHere\n"
)
MATPLOTLIB_STUB = {
    f"matplotlib/{module}.py": _STUB_MODULE
    for module in ("__init__", "figure", "axes", "lines", "patches", "pyplot", "colors", "ticker")
}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_wheel(dest: Path, name: str, version: str, files: dict[str, bytes]) -> Path:
    """A pure-Python wheel holding ``files`` (archive path -> content)."""
    dist = f"{name.replace('-', '_')}-{version}"
    info = f"{dist}.dist-info"
    meta = {
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: echomq-lab site build\n"
        b"Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    everything = {**files, **meta}
    record = []
    for arc, data in everything.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{arc},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    path = dest / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as whl:
        for arc, data in sorted(everything.items()):
            whl.writestr(zipfile.ZipInfo(arc, date_time=(2026, 1, 1, 0, 0, 0)), data,
                         zipfile.ZIP_DEFLATED)
        whl.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return path


def byte_compiled(sources: dict[str, bytes], where: str = "") -> dict[str, bytes]:
    """Each ``.py`` of ``sources`` (archive path -> source) compiled for the browser's Python
    3.14 by Pyodide itself (tools/site/compile_wheels.mjs): archive path + ``c`` -> .pyc. The
    compiled code names its file ``where`` + archive path (what tracebacks show)."""
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "sources.zip"
        with zipfile.ZipFile(archive, "w") as zipped:
            for arc, data in sources.items():
                if arc.endswith(".py"):
                    zipped.writestr(where + arc, data)
        subprocess.run(["node", str(HERE / "compile_wheels.mjs"), str(archive)], check=True)
        with zipfile.ZipFile(archive) as zipped:
            return {n[len(where):]: zipped.read(n) for n in zipped.namelist()
                    if n.endswith(".pyc")}


def lab_wheel(dest: Path) -> Path:
    """echomq_lab as a wheel, with fengari's bundle beside browser/lua.py (tests left out).
    Its sources stay (pages show them), each with its byte-compiled ``__pycache__`` entry
    beside it, which the tab imports without compiling."""
    package = ROOT / "echomq_lab"
    files = {}
    for path in sorted(package.rglob("*")):
        rel = path.relative_to(ROOT).as_posix()
        if path.is_dir() or "__pycache__" in rel:
            continue
        if path.suffix in (".py", ".lua", ".toml", ".md"):
            files[rel] = path.read_bytes()
    for pyc, data in byte_compiled(files).items():
        folder, _, name = pyc.rpartition("/")
        files[f"{folder}/__pycache__/{name[:-len('.pyc')]}.{CACHE_TAG}.pyc"] = data
    files["echomq_lab/browser/fengari-web.js"] = FENGARI.read_bytes()
    return write_wheel(dest, "echomq-lab", "0.1.0", files)


def compile_stdlib(static: Path) -> None:
    """Pyodide's standard library (``python_stdlib.zip``) comes as sources only, which the tab
    would compile at every import (IPython's start imports hundreds of its modules): each
    module gets its .pyc beside its source, which stays for tracebacks."""
    stdlib = static / "python_stdlib.zip"
    with zipfile.ZipFile(stdlib) as zipped:
        entries = [(info, zipped.read(info)) for info in zipped.infolist()]
    compiled = byte_compiled({info.filename: data for info, data in entries}, STDLIB_AT)
    with zipfile.ZipFile(stdlib, "w", zipfile.ZIP_DEFLATED) as zipped:
        for info, data in entries:
            zipped.writestr(info, data)
        for arc, data in sorted(compiled.items()):
            zipped.writestr(zipfile.ZipInfo(arc, (2026, 1, 1, 0, 0, 0)), data,
                            zipfile.ZIP_DEFLATED)


def entry(name: str, wheel: Path, imports: list[str], depends: list[str]) -> dict[str, object]:
    version = wheel.name.split("-")[1]
    return {
        "name": name, "version": version, "file_name": wheel.name, "install_dir": "site",
        "sha256": sha256(wheel), "package_type": "package", "imports": imports,
        "depends": depends, "unvendored_tests": False,
    }


def wheel_named(folder: Path, name: str) -> Path:
    """The one wheel in ``folder`` of distribution ``name`` (-, _ and case ignored)."""
    want = re.sub(r"[-_.]+", "_", name).lower()
    found = [w for w in folder.glob("*.whl") if w.name.split("-")[0].lower() == want]
    if len(found) != 1:
        raise SystemExit(f"expected one {name} wheel in {folder}, found {found}")
    return found[0]


def stage_pyodide(static: Path, fetched: Path, kernel_pypi: Path) -> None:
    """Pyodide's runtime, its lock (pointing at the served wheels) and the wheels."""
    static.mkdir(parents=True)
    for name in RUNTIME:
        shutil.copy2(PYODIDE / name, static / name)
    compile_stdlib(static)
    lock = json.loads((PYODIDE / "pyodide-lock.json").read_text())
    packages = lock["packages"]
    served = {}
    for name in (*wheels.KERNEL, "sortedcontainers"):
        served[name] = wheel_named(fetched, packages[name]["file_name"].split("-")[0])
        packages[name]["file_name"] = served[name].name
        packages[name]["sha256"] = sha256(served[name])
    extra_wheels = {
        name: wheel_named(fetched, name) for name in EXTRA
        if name not in (*FROM_KERNEL, "widgetsnbextension", "matplotlib", "echomq-lab")
    }
    for name in FROM_KERNEL:
        extra_wheels[name] = wheel_named(kernel_pypi, name)
    # the shim for ipywidgets 8 (the folder also holds one for ipywidgets 7)
    extra_wheels["widgetsnbextension"] = next(kernel_pypi.glob("widgetsnbextension-4.*.whl"))
    extra_wheels["matplotlib"] = write_wheel(fetched, "matplotlib", "0+browser",
                                             {k: v.encode() for k, v in MATPLOTLIB_STUB.items()})
    extra_wheels["echomq-lab"] = lab_wheel(fetched)
    for name, wheel in extra_wheels.items():
        imports, depends = EXTRA[name]
        packages[name] = entry(name, wheel, imports, depends)
    for wheel in [*served.values(), *extra_wheels.values()]:
        shutil.copy2(wheel, static / wheel.name)
    (static / "pyodide-lock.json").write_text(json.dumps(lock, separators=(",", ":")))


def compile_wheels(folder: Path) -> None:
    """Byte-compile the third-party wheels in ``folder`` for Python 3.14, in place (with
    Pyodide under Node: tools/site/compile_wheels.mjs), so the tab imports them without
    compiling, as it does Pyodide's own wheels. The lab's own wheel keeps its sources (pages
    show them)."""
    third_party = [w for w in sorted(folder.glob("*.whl"))
                   if not w.name.startswith(("echomq_lab-", "matplotlib-"))]
    subprocess.run(["node", str(HERE / "compile_wheels.mjs"), *map(str, third_party)], check=True)


def left_out_note(text: str) -> str:
    """Markdown with each link to a page left out replaced by its title and why it is out."""
    for page, why in LEFT_OUT.items():
        text = re.sub(
            rf"\[([^\]]+)\]\({re.escape(page)}\)",
            lambda m, why=why: f"{m.group(1)} (not in the browser version: {why})",
            text,
        )
    return text


def _one_string(value: object) -> object:
    """A multi-line text stored as a list of lines, joined (anything else as it is)."""
    return "".join(value) if isinstance(value, list) else value


def stage_pages(files: Path) -> None:
    """The pages, with their links to the pages left out saying why those are not here.

    Every multi-line text is written as one string, as a Jupyter server hands notebooks out:
    JupyterLite serves the file as it is, and the table of contents reads cells' sources and
    markdown outputs as strings (a list of lines stopped it).

    Each page's note on how it comes alive in JupyterLab (tagged ``how-to-run``) is left out:
    the site runs every page by itself.

    No page keeps its stored widget state (0.3 MB on the story's page): the page's own run
    draws every panel anew, and JupyterLab read that state, copied it as a checkpoint and made
    a dead model of each stored widget before it joined the page to Python."""
    files.mkdir(parents=True)
    for page in PAGES:
        nb = json.loads((ROOT / "notebooks" / page).read_text())
        nb["metadata"].pop("widgets", None)
        # the note on how a page comes alive in JupyterLab: here the page runs by itself
        nb["cells"] = [c for c in nb["cells"]
                       if course.RUN_TAG not in c.get("metadata", {}).get("tags", [])]
        for cell in nb["cells"]:
            source = "".join(cell["source"])
            if cell["cell_type"] == "markdown":
                source = left_out_note(source)
            cell["source"] = source
            for output in cell.get("outputs", []):
                if "text" in output:
                    output["text"] = _one_string(output["text"])
                for mime, value in output.get("data", {}).items():
                    output["data"][mime] = _one_string(value)
        (files / page).write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")


#: What a panel shows in the reader's view until Python is up (a stored panel's own text is
#: only its fallback: dead text that looks live).
ASLEEP = ('<div class="emq-asleep" role="note">A panel of the page: it comes alive once Python '
          "has started in this tab.</div>")


def _for_reading(nb: dict[str, object]) -> dict[str, object]:
    """A page as the site stages it (:func:`stage_pages`: no widget state), as the reader's
    view shows it before Python is up: each stored panel (a widget output) stands as a note
    that it wakes up."""
    for cell in nb["cells"]:  # type: ignore[attr-defined]
        outputs = cell.get("outputs", [])
        for i, output in enumerate(outputs):
            if WIDGET_MIME in output.get("data", {}):
                outputs[i] = {"output_type": "display_data", "metadata": {},
                              "data": {"text/html": ASLEEP}}
    return nb


def reader_pages(files: Path, out: Path, jupyter: Path) -> None:
    """``reader/<page>.html``: each page's words as the site stores them (headings, prose,
    code, stored outputs), rendered once here (nbconvert's basic template), which the reader's
    view (tools/site/reader.html) shows at once while Python starts behind it."""
    out.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as tmp:
        for page in PAGES:
            nb = _for_reading(json.loads((files / page).read_text(encoding="utf-8")))
            (Path(tmp) / page).write_text(json.dumps(nb), encoding="utf-8")
        subprocess.run(
            [str(jupyter), "nbconvert", "--to", "html", "--template", "basic", "--log-level",
             "ERROR", "--output-dir", str(out), *(str(Path(tmp) / p) for p in PAGES)],
            check=True)


def lite_config(lite: Path) -> None:
    """PyPI fallback off; no news or update check (both would ask another origin); the app
    reachable from the page's own script (``window.jupyterapp``, for tools/site/autorun.js);
    JupyterLab's parts that serve nothing here not started (:data:`NOT_STARTED`)."""
    config = {
        "jupyter-lite-schema-version": 0,
        "jupyter-config-data": {
            "appName": "echomq lab",
            "exposeAppInBrowser": "true",
            "disabledExtensions": list(NOT_STARTED),
            # a page always opens as the site holds it: the reader's edits and the layout live
            # in the tab's memory only, so a reload never meets an older copy marked modified
            # (what the reader answered, and where, is kept by echomq_lab/widgets/answers.js,
            # in localStorage)
            "enableMemoryStorage": "true",
            "contentsStorageDrivers": ["memoryStorageDriver"],
            "workspacesStorageDrivers": ["memoryStorageDriver"],
            "litePluginSettings": {
                "@jupyterlite/pyodide-kernel-extension:kernel": {
                    "disablePyPIFallback": True,
                    "loadPyodideOptions": {"packages": PRELOAD},
                }
            },
        },
    }
    (lite / "jupyter-lite.json").write_text(json.dumps(config, indent=2))
    overrides = {
        "@jupyterlab/apputils-extension:notification": {
            "fetchNews": "false", "checkForUpdates": False
        },
        # nothing saved behind the reader's back (the tab's memory holds the page anyway)
        "@jupyterlab/docmanager-extension:plugin": {"autosave": False},
        # every cell drawn, not only those in view: the panels are live widgets
        "@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"},
    }
    (lite / "overrides.json").write_text(json.dumps(overrides, indent=2))


def landing_rows() -> list[tuple[str, str, str]]:
    """(file, title, one-line summary) of each page in the site, in reading order (which pages
    the site holds is :data:`PAGES`, from tools/pages.toml)."""
    return [(p.file, p.title, p.summary) for p in course.load() if p.file in PAGES]


def _inline_markdown(text: str) -> str:
    """``code`` and **bold** of a one-line summary as HTML (everything else escaped)."""
    out = html.escape(text, quote=False)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    return re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", out)


def landing_page(out: Path) -> None:
    """``index.html``: every page of the site (title and one line), each opening and running
    by itself in ``lab/``."""
    rows = "\n".join(
        f'    <li><a href="lab/index.html?path={html.escape(file)}">{html.escape(title)}</a>'
        f"<br><span>{_inline_markdown(summary)}</span></li>"
        for file, title, summary in landing_rows()
    )
    text = (HERE / "landing.html").read_text(encoding="utf-8").replace("<!-- PAGES -->", rows)
    (out / "index.html").write_text(text, encoding="utf-8")


def early_kernel(out: Path) -> str:
    """What tools/site/autorun.js needs to start the kernel's worker as the page opens: the
    worker's file and the settings the kernel is given (:func:`lite_config`), as a JSON script
    element (empty if the kernel extension has no such worker)."""
    static = out / "extensions/@jupyterlite/pyodide-kernel-extension/static"
    workers = sorted(static.glob("comlink.worker.*.js"))
    if len(workers) != 1:
        print(f"site: no single kernel worker in {static}: the kernel starts with the app")
        return ""
    settings = json.loads((out / "jupyter-lite.json").read_text())["jupyter-config-data"]
    kernel = settings["litePluginSettings"]["@jupyterlite/pyodide-kernel-extension:kernel"]
    conf = {
        "worker": workers[0].relative_to(out).as_posix(),
        "pyodideUrl": kernel["pyodideUrl"],
        "pipliteUrls": [*kernel.get("pipliteUrls", []),
                        (static / "pypi" / "all.json").relative_to(out).as_posix()],
        "disablePyPIFallback": kernel["disablePyPIFallback"],
        "loadPyodideOptions": kernel["loadPyodideOptions"],
        "startPackages": [p for p in kernel["loadPyodideOptions"]["packages"] if p not in LATER],
        "later": LATER,
        "laterLoaded": LATER_LOADED,
        "warm": WARM,
        # the service worker as JupyterLite registers it (tools/site/autorun.js: controlled())
        "serviceWorker": "service-worker.js?enableCache="
                         + str(settings.get("enableServiceWorkerCache") or "false").lower(),
        "appVersion": settings["appVersion"],
        "controlWaitMs": CONTROL_WAIT_MS,
    }
    return ('<script id="emq-early-kernel" type="application/json">'
            f"{json.dumps(conf)}</script>\n")


def page_runs_itself(out: Path) -> None:
    """``lab/index.html`` with the cue and the script that runs an opened page
    (tools/site/cue.html, tools/site/autorun.js)."""
    index = out / "lab" / "index.html"
    text = index.read_text(encoding="utf-8")
    cue = early_kernel(out) + (HERE / "cue.html").read_text(encoding="utf-8")
    if "</body>" not in text:
        raise SystemExit(f"{index}: no </body> to put the cue before")
    text = text.replace("Loading JupyterLite...", "Opening the page…")
    text = text.replace("<title>JupyterLite</title>", "<title>echomq lab</title>", 1)
    text = text.replace("<html>", '<html lang="en">', 1)
    reader = (HERE / "reader.html").read_text(encoding="utf-8").replace(
        "<!-- COURSE -->", course_script([(p.file, p.title) for p in course.load()
                                          if p.file in PAGES]), 1)
    text = re.sub(r"<body([^>]*)>", lambda m: m.group(0) + "\n" + reader, text, count=1)
    text = text.replace("</body>", cue + "</body>", 1)
    index.write_text(text, encoding="utf-8")
    shutil.copy2(HERE / "autorun.js", out / "lab" / "autorun.js")
    shutil.copy2(ANSWERS_JS, out / "lab" / "answers.js")
    shutil.copy2(PROGRESS_JS, out / "lab" / "progress.js")


#: Not kept for offline reading: what no page asks for.
NOT_KEPT = ("doc/", "rspack.config", "package.json", "jupyterlite.schema", "jupyter-lite.ipynb")


def keep_offline(out: Path) -> None:
    """The service worker JupyterLite registers (``service-worker.js``), with
    tools/site/offline.js before its own code: the site kept in the browser's cache, so every
    page opens and runs offline once one page has been opened. The cache is named after a hash
    of every file kept, so a rebuilt site replaces it."""
    worker = out / "service-worker.js"
    kept = sorted(p.relative_to(out).as_posix() for p in out.rglob("*")
                  if p.is_file() and p != worker
                  and not p.relative_to(out).as_posix().startswith(NOT_KEPT))
    digest = hashlib.sha256()
    for rel in kept:
        digest.update(rel.encode() + b"\0" + hashlib.sha256((out / rel).read_bytes()).digest())
    code = (HERE / "offline.js").read_text(encoding="utf-8")
    code = code.replace("__EMQ_VERSION__", digest.hexdigest()[:16])
    first = ("index.html", "lab/", "reader/", "files/", "api/")  # what opens a page: kept first
    kept.sort(key=lambda rel: (not rel.startswith(first), rel))
    code = code.replace("__EMQ_FILES__", json.dumps(["./", *kept]))
    worker.write_text(code + worker.read_text(encoding="utf-8"), encoding="utf-8")


def build(out: Path, work: Path, jupyter: Path) -> None:
    lite = work / "lite"
    for stale in (lite, out):
        shutil.rmtree(stale, ignore_errors=True)
    fetched = work / "wheels"
    wheels.fetch(fetched, PYODIDE / "pyodide-lock.json")
    kernel_pypi = (jupyter.parents[1] / "share/jupyter/labextensions/@jupyterlite"
                   / "pyodide-kernel-extension/static/pypi")
    for shim in kernel_pypi.glob("*.whl"):
        shutil.copy2(shim, fetched / shim.name)
    compile_wheels(fetched)
    stage_pyodide(lite / "static" / "pyodide", fetched, fetched)
    stage_pages(lite / "files")
    lite_config(lite)
    env = dict(os.environ)
    for var in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR"):  # no extension from a home folder
        env[var] = str(work / "empty-home" / var.lower())
    env.pop("JUPYTER_PATH", None)
    subprocess.run(
        [str(jupyter), "lite", "build", "--lite-dir", str(lite), "--output-dir", str(out.resolve()),
         "--no-sourcemaps", "--no-unused-shared-packages", "--apps", "lab"],
        check=True, cwd=lite, env=env,
    )
    page_runs_itself(out)
    reader_pages(lite / "files", out / "reader", jupyter)
    landing_page(out)
    keep_offline(out)
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    centre = course.file_of("the-state-and-attempts")
    print(f"site: {out} ({size / 1e6:.1f} MB); open index.html, or lab/index.html?path={centre}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "site")
    parser.add_argument("--work", type=Path, default=ROOT / "build" / "site")
    parser.add_argument("--jupyter", type=Path, default=ROOT / "build/site/venv/bin/jupyter")
    args = parser.parse_args()
    build(args.out.resolve(), args.work.resolve(), args.jupyter.absolute())


if __name__ == "__main__":
    main()
