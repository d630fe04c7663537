"""The job python-rq's worker runs in the side-by-side benchmark: it does nothing.

It is the library's own (:func:`echomq_lab.measure.noop`), the job the lab's "measure now"
panel gives python-rq too, so both measure the same thing.
"""

from echomq_lab.measure import noop as noop
