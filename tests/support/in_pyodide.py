"""The browser backend for the tests: the embedded server as the site runs it, served on loopback.

:func:`start_browser` runs ``tools/site/pyodide_server.mjs`` under Node: Pyodide (the browser's
Python, from npm), fakeredis with its Lua on fengari through :mod:`echomq_lab.browser.lua`, and
this checkout's ``echomq_lab``, answering RESP on a free loopback port. A test then reaches it
like any real server. It needs Node and ``tools/site/node_modules`` (``make site-deps``); the
server's wheels are fetched into ``build/site/server-wheels`` the first time.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from echomq_lab.servers import ServerStartError
from tests.support.only import asked, not_asked

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "tools" / "site"
WHEELS = ROOT / "build" / "site" / "server-wheels"
#: Pyodide's start-up plus unpacking three wheels: a few seconds; a busy machine takes longer.
START_TIMEOUT_S = 90.0


@dataclass
class BrowserServer:
    """The Node process serving the in-browser server on ``port``."""

    port: int
    proc: subprocess.Popen[bytes]
    version: str
    kind: str = "browser"
    _stopped: bool = field(default=False, repr=False)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def label(self) -> str:
        return f"browser: {self.version} under Node (port {self.port})"

    def stop(self) -> None:
        """End the Node process; safe to call twice."""
        if self._stopped:
            return
        self._stopped = True
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)


def _ensure_wheels() -> None:
    if any(WHEELS.glob("fakeredis-*.whl")):
        return
    fetched = subprocess.run(
        [sys.executable, str(TOOLS / "wheels.py"), str(WHEELS)],
        capture_output=True, text=True, check=False,
    )
    if fetched.returncode != 0:
        raise ServerStartError(f"could not fetch the server's wheels: {fetched.stderr[-400:]}")


def _node_with_wheels() -> str:
    """Node's path, once the npm packages and the wheels the in-browser server loads are there;
    ServerStartError saying what is missing otherwise."""
    node = shutil.which("node")
    if node is None:
        raise ServerStartError("the browser backend needs Node (20 or newer) on PATH")
    if not (TOOLS / "node_modules" / "pyodide").is_dir():
        raise ServerStartError("the browser backend needs tools/site/node_modules (make site-deps)")
    _ensure_wheels()
    return node


def run_in_pyodide(code: str, timeout: float = START_TIMEOUT_S) -> str:
    """Run the Python ``code`` in Pyodide under Node, set up as :func:`start_browser` sets up its
    server (the wheels, this checkout on ``sys.path``); its output, or AssertionError with it."""
    if not asked("browser"):
        pytest.skip(not_asked("browser"))
    node = _node_with_wheels()
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "code.py"
        script.write_text(code, encoding="utf-8")
        done = subprocess.run(
            [node, str(TOOLS / "pyodide_server.mjs"), "--wheels", str(WHEELS), "--repo",
             str(ROOT), "--exec", str(script)],
            capture_output=True, text=True, timeout=timeout, check=False,
        )
    if done.returncode != 0:
        raise AssertionError(f"the code raised in Pyodide:\n{done.stdout}\n{done.stderr[-3000:]}")
    return done.stdout


#: What :func:`run_each_in_pyodide` prints before its JSON line of every code's output.
_EACH_MARK = "EMQ-EACH-OUTPUT "

_EACH_DRIVER = """
import contextlib, io, json, traceback
outputs = {}
for name, code in CODES.items():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            exec(compile(code, f"<{name}>", "exec"), {"__name__": "__main__"})
            raised = False
        except BaseException:
            traceback.print_exc(file=out)
            raised = True
    outputs[name] = [out.getvalue(), raised]
print(MARK + json.dumps(outputs))
"""


def run_each_in_pyodide(codes: Mapping[str, str], timeout: float = START_TIMEOUT_S) -> dict[
        str, str]:
    """Run each Python code of ``codes`` in Pyodide under Node, one after the other in one
    Pyodide (each starts seconds of Pyodide and wheels), each in a namespace of its own, as
    :func:`run_in_pyodide` would: ``{name: its output}``; a code that raised has its output
    end with the traceback, and :func:`output_of` fails on it."""
    driver = f"CODES = {dict(codes)!r}\nMARK = {_EACH_MARK!r}\n" + _EACH_DRIVER
    printed = run_in_pyodide(driver, timeout * 2)
    line = next(line for line in printed.splitlines() if line.startswith(_EACH_MARK))
    outputs: dict[str, list[object]] = json.loads(line[len(_EACH_MARK):])
    return {name: ("RAISED\n" if raised else "") + str(out)
            for name, (out, raised) in outputs.items()}


def output_of(outputs: Mapping[str, str], name: str) -> str:
    """The output of code ``name`` of :func:`run_each_in_pyodide`; AssertionError with it if
    the code raised."""
    out = outputs[name]
    if out.startswith("RAISED\n"):
        raise AssertionError(f"the code raised in Pyodide:\n{out[len('RAISED'):]}")
    return out


def start_browser(timeout: float = START_TIMEOUT_S) -> BrowserServer:
    """Start the in-browser server under Node and wait for its "READY <port>" line."""
    node = _node_with_wheels()
    log_path = WHEELS.parent / "pyodide-server.log"
    with log_path.open("wb") as log:  # a file, not a pipe: nobody reads it after start-up
        proc = subprocess.Popen(
            [node, str(TOOLS / "pyodide_server.mjs"), "--port", "0", "--wheels", str(WHEELS),
             "--repo", str(ROOT)],
            stdout=log, stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + timeout
    lines: list[str] = []
    while time.monotonic() < deadline and proc.poll() is None:
        lines = log_path.read_text(errors="replace").splitlines()
        ready = [line for line in lines if line.startswith("READY ")]
        if ready:
            version = next((line for line in lines if line.startswith("python ")), "")
            return BrowserServer(int(ready[0].split()[1]), proc, version)
        time.sleep(0.1)
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    lines = log_path.read_text(errors="replace").splitlines()
    raise ServerStartError("the browser backend did not start:\n" + "\n".join(lines[-15:]))
