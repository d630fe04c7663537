"""Each learner's pace at the gateway: a token bucket per learner (shared by their sockets)
that every WebSocket frame (pings and pongs included) and every request over TCP draws from.
A learner over their pace is not refused: their socket is simply read no more until the bucket
refills, so a flood costs the gateway one read per pause, and other learners keep their speed."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from websockets.asyncio.server import ServerConnection

#: Bytes handed to the WebSocket protocol at a time (a few dozen pings at most).
SLICE = 512
#: The pace of a page that has not logged in yet (frames a second, at once): its login is one.
BEFORE_LOGIN = (10.0, 20.0)


@dataclass
class Bucket:
    """``rate`` frames a second on average, ``burst`` at once."""

    rate: float
    burst: float
    tokens: float = field(default=-1.0)
    at: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        if self.tokens < 0:
            self.tokens = self.burst

    def take(self, n: int) -> float:
        """Draw ``n``; the seconds to wait before reading more (0 within the pace)."""
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate) - n
        self.at = now
        return 0.0 if self.tokens >= 0 else -self.tokens / self.rate


class PacedConnection(ServerConnection):
    """A WebSocket connection whose frames draw from :attr:`bucket` (one of its own until the
    page logs in, then its learner's). What arrives is handed to the protocol a slice of
    :data:`SLICE` bytes at a time (the protocol answers a ping as it reads it): over pace,
    the rest waits, and the socket is not read, until the bucket refills."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.bucket = Bucket(*BEFORE_LOGIN)
        self._frames = 0
        self._paced = False
        self._backlog = bytearray()

    def process_event(self, event: Any) -> None:
        self._frames += 1
        super().process_event(event)

    def data_received(self, data: bytes) -> None:
        self._backlog += data
        if not self._paced:
            self._drain()

    def _drain(self) -> None:
        while self._backlog:
            piece = bytes(self._backlog[:SLICE])
            del self._backlog[:SLICE]
            before = self._frames
            super().data_received(piece)
            wait = self.bucket.take(self._frames - before)
            if wait > 0:
                self._paced = True
                self.transport.pause_reading()
                asyncio.get_running_loop().call_later(wait, self._resume)
                return

    def _resume(self) -> None:
        self._paced = False
        if self.transport.is_closing():
            return
        self._drain()
        if not self._paced:
            self.transport.resume_reading()
