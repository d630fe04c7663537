"""The job python-rq's worker runs in the side-by-side benchmark: it does nothing."""


def noop() -> None:
    """Return at once, so the figure is the queue's cost, not the job's."""
    return None
