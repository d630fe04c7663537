"""The job python-rq's worker runs in the side-by-side benchmark (an importable module, as rq
needs): it does nothing, so what a job costs is the queue's own bookkeeping."""


def noop() -> None:
    """Do nothing."""
