"""benchmarks.processor: the processor time of a tree of processes, read from ``/proc``, by
part. A child that spins counts under its program; one left out does not; a thread's time
before the first reading does not count; a reading of no process is empty."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks.processor import part, process_seconds, spent, tree_seconds

pytestmark = [pytest.mark.host, pytest.mark.skipif(
    not Path("/proc/self/stat").exists(), reason="no /proc here: the readings are Linux's")]

SPIN = "import time\nend = time.process_time() + 0.4\nwhile time.process_time() < end: pass\n" \
       "time.sleep(30)"


def _spinning() -> subprocess.Popen[bytes]:
    child = subprocess.Popen([sys.executable, "-c", SPIN])
    deadline = time.monotonic() + 30
    while process_seconds(child.pid) < 0.4 and time.monotonic() < deadline:
        time.sleep(0.05)
    return child


def test_a_child_that_spins_counts_under_its_program_and_one_left_out_does_not() -> None:
    before = tree_seconds(os.getpid())
    child = _spinning()
    try:
        after = tree_seconds(os.getpid())
        assert spent(before, after).get("python", 0) >= 0.35
        assert "python" not in spent(before, tree_seconds(os.getpid(), frozenset({child.pid})))
        # time already spent when the first reading is taken is not counted again
        assert spent(after, tree_seconds(os.getpid())).get("python", 0) < 0.2
    finally:
        child.kill()
        child.wait()


def test_no_process_gives_nothing_and_chromium_threads_have_their_parts() -> None:
    assert process_seconds(2**22 + 12345) == 0.0
    assert spent({}, {}) == {}
    assert part("chromium", "DedicatedWorker thread").startswith("Python")
    assert part("chromium", "CrRendererMain").startswith("page")
    assert part("chromium", "Chrome_IOThread") == "browser, the rest"
    assert part("node", "node-MainThread") == "node"
