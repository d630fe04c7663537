"""How a simulated run behaves: sizes, chances, lease and work times, and how often the
housekeepers run. :meth:`Settings.check` refuses a setting out of range before anything starts.
"""

from __future__ import annotations

from dataclasses import dataclass

from echomq_lab import keyspace

_INTS = ("jobs", "workers", "max_attempts", "payload_bytes", "seed", "evictions")
_CHANCES = ("stall", "fail")
_RANGES = ("lease_ms", "work_ms", "overrun_ms", "retry_delay_ms")
_PERIODS = ("reap_every_s", "promote_every_s", "sample_every_s", "timeout_s", "evict_every_s")


@dataclass(frozen=True)
class Settings:
    """How a run behaves. Times in ms unless named ``_s``; ranges are (low, high)."""

    jobs: int = 1000
    workers: int = 4
    stall: float = 0.2  # chance a lease stalls past its deadline
    fail: float = 0.1  # chance the work fails and is retried
    max_attempts: int = 3
    lease_ms: tuple[int, int] = (50, 200)
    work_ms: tuple[float, float] = (0.0, 2.0)
    overrun_ms: tuple[int, int] = (15, 40)  # how far past the lease a stall runs
    retry_delay_ms: tuple[int, int] = (0, 5)
    reap_every_s: float = 0.005
    promote_every_s: float = 0.005
    sample_every_s: float = 0.25
    timeout_s: float = 600.0
    seed: int = 0
    queue: str = ""  # "" -> a fresh name per run
    payload_bytes: int = 16
    evictions: int = 0  # job rows deleted under live leases during the run (the eviction fault)
    evict_every_s: float = 0.01

    def check(self) -> None:
        """Raise ValueError/TypeError when a setting is out of range."""
        self._check_counts()
        self._check_chances_and_ranges()
        for name in _PERIODS:
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive")
        if self.queue:
            keyspace.check_queue(self.queue)

    def _check_counts(self) -> None:
        """The whole-number settings: ints (not bools), and in range."""
        for name in _INTS:
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{name} must be an int, not {type(value).__name__}")
        if self.jobs < 1 or self.workers < 1 or self.max_attempts < 1:
            raise ValueError("jobs, workers and max_attempts must be at least 1")
        if self.evictions < 0:
            raise ValueError("evictions must not be negative")
        if not 0 <= self.payload_bytes <= 1 << 20:
            raise ValueError("payload_bytes must be between 0 and 1 MiB")

    def _check_chances_and_ranges(self) -> None:
        """Chances between 0 and 1; ranges ordered and not negative; leases of at least 1 ms."""
        for name in _CHANCES:
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} is a probability: between 0 and 1")
        for name in _RANGES:
            low, high = getattr(self, name)
            if not 0 <= low <= high:
                raise ValueError(f"{name} must be a range (low, high) with 0 <= low <= high")
        if self.lease_ms[0] < 1:
            raise ValueError("leases must be at least 1 ms")
