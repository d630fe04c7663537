"""``python -m echomq_lab.cluster up|status|down``: see :func:`echomq_lab.cluster.main`."""

from echomq_lab.cluster import main

raise SystemExit(main())
