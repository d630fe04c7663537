"""Time from a clean clone to a served lab: ``git clone``, ``make lab``, the server answering.

``python -m benchmarks.setup_time [--installer pip|uv] [--cache warm|cold] [--ref REF]
[--out PATH]`` clones this repository's committed HEAD (or REF) into a temporary folder, runs
``make lab LAB_ARGS="--no-browser --port=N"`` there and stops the clock when JupyterLab answers
``/api/status`` on N. ``--cache cold`` gives the installer an empty cache of its own
(``PIP_NO_CACHE_DIR=1`` for pip, a fresh ``UV_CACHE_DIR`` for uv); ``--installer uv`` puts the
uv found on PATH (or beside this Python) in front of the make run, so the Makefile picks it up;
``--installer pip`` hides it. The installed package list is kept with the figure, so the run also
shows what ``make lab`` installed. Each run appends one record to ``--out`` (JSON list).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from echomq_lab.servers import free_port

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "results" / "setup-time.json"
#: Longest wait for a served lab (s).
TIMEOUT_S = 1800


def _uv() -> str | None:
    """The uv executable: on PATH, or installed beside the running Python."""
    found = shutil.which("uv")
    beside = Path(sys.executable).parent / "uv"
    return found or (str(beside) if beside.exists() else None)


def _env(installer: str, cache: str, tmp: Path) -> dict[str, str]:
    """The make run's environment: PATH with or without uv, the cache as asked."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    path = [p for p in env.get("PATH", "").split(os.pathsep) if not (Path(p) / "uv").exists()]
    if installer == "uv":
        uv = _uv()
        if uv is None:
            raise SystemExit("no uv found: pip install uv")
        (tmp / "bin").mkdir()
        (tmp / "bin" / "uv").symlink_to(uv)
        path.insert(0, str(tmp / "bin"))
    env["PATH"] = os.pathsep.join(path)
    if cache == "cold":
        env["PIP_NO_CACHE_DIR"] = "1"
        env["UV_CACHE_DIR"] = str(tmp / "uv-cache")
    for name in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR"):
        env[name] = str(tmp / name.lower())
    return env


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2):
            return True
    except OSError:
        return False


def measure(installer: str, cache: str, ref: str = "HEAD") -> dict[str, object]:
    """One clean clone to a served lab; returns the record (seconds, packages, settings)."""
    with tempfile.TemporaryDirectory(prefix="emq-setup-") as name:
        tmp = Path(name)
        env = _env(installer, cache, tmp)
        port, token = free_port(), "setup-time"
        args = f"--no-browser --ip=127.0.0.1 --port={port} --IdentityProvider.token={token}"
        start = time.monotonic()
        subprocess.run(["git", "clone", "-q", str(ROOT), str(tmp / "clone")], check=True)
        if ref != "HEAD":
            subprocess.run(["git", "-C", str(tmp / "clone"), "checkout", "-q", ref], check=True)
        log = (tmp / "make.log").open("wb")
        proc = subprocess.Popen(
            ["make", "lab", f"LAB_ARGS={args}"], cwd=tmp / "clone", env=env,
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        try:
            while not _answers(f"http://127.0.0.1:{port}/api/status?token={token}"):
                if proc.poll() is not None or time.monotonic() - start > TIMEOUT_S:
                    raise SystemExit((tmp / "make.log").read_text()[-3000:])
                time.sleep(0.2)
            seconds = time.monotonic() - start
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
        listed = subprocess.run(
            [str(tmp / "clone" / ".venv" / "bin" / "python"), "-m", "pip", "list",
             "--format=freeze"], capture_output=True, text=True, check=False, env=env,
        ).stdout.split()  # fmt: skip
    return {
        "when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "installer": installer,
        "cache": cache,
        "ref": ref,
        "seconds": round(seconds, 1),
        "packages": len(listed),
        "installed": listed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--installer", choices=("pip", "uv"), default="pip")
    parser.add_argument("--cache", choices=("warm", "cold"), default="warm")
    parser.add_argument("--ref", default="HEAD", help="the commit to clone (default HEAD)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    opts = parser.parse_args()
    record = measure(opts.installer, opts.cache, opts.ref)
    runs = json.loads(opts.out.read_text()) if opts.out.exists() else []
    runs.append(record)
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    opts.out.write_text(json.dumps(runs, indent=1) + "\n")
    print(f"{opts.installer}, {opts.cache} cache: {record['seconds']} s to a served lab, "
          f"{record['packages']} packages")


if __name__ == "__main__":
    main()
