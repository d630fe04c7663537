"""A room's memory budget, as its gateway watches it: the server runs with ``maxmemory`` and
``noeviction``, so a full server refuses writes; the gateway stops taking learners' calls a
margin *before* that, so no call is ever accepted whose line in the record could not be written
(the record and the protocol never disagree)."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

LOG = logging.getLogger("echomq_lab.classroom.gateway")
#: The margin kept free below ``maxmemory``: this share of it, and at least FLOOR bytes.
MARGIN_SHARE, MARGIN_FLOOR = 0.05, 16 << 20
#: How often the gateway reads the server's memory (seconds).
EVERY_S = 0.25


def margin(maxmemory: int) -> int:
    """The bytes kept free below ``maxmemory`` (0: no budget, no margin)."""
    return max(int(maxmemory * MARGIN_SHARE), MARGIN_FLOOR) if maxmemory else 0


def near_full(used: int, maxmemory: int) -> bool:
    """True when ``used`` bytes leave less than :func:`margin` below ``maxmemory``."""
    return bool(maxmemory) and used >= maxmemory - margin(maxmemory)


@dataclass
class Budget:
    """What the gateway last read of the server's memory; :attr:`full` while near the top."""

    used: int = 0
    maxmemory: int = 0
    full: bool = False

    @property
    def line(self) -> str:
        """The one line a learner's call gets while the room is full."""
        return (f"ERR the room is full: its server holds {self.used >> 20} MB of its "
                f"{self.maxmemory >> 20} MB, so no call is taken until the instructor makes "
                "room (nothing was changed)")

    def read(self, info: dict[str, Any]) -> None:
        """Take ``INFO memory``'s figures; say in the log when the room fills or has room."""
        self.used, self.maxmemory = int(info["used_memory"]), int(info.get("maxmemory", 0))
        full = near_full(self.used, self.maxmemory)
        if full != self.full:
            LOG.warning("gateway: %s", self.line[4:] if full else
                        "the room's server has room again: learners' calls are taken")
        self.full = full

    async def watch(self, conn: Any) -> None:
        """Read ``conn``'s server memory every :data:`EVERY_S` until cancelled (an away
        server leaves the last reading)."""
        while True:
            try:
                self.read(await conn.info("memory"))
            except Exception as exc:  # noqa: BLE001 - the server is away: keep the last reading
                LOG.debug("gateway: memory not read (%s)", exc)
            await asyncio.sleep(EVERY_S)
