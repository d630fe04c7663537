"""The job python-rq's worker runs in the side-by-side benchmark: it does nothing.

It is the library's own (:func:`echomq_lab.report.live.noop`), the job the lab's "measure now"
panel gives python-rq too, so both measure the same thing.
"""

from echomq_lab.report.live import noop as noop
