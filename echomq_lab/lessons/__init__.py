"""The lessons layer: what the course's pages tell, each from real transitions.

The sample row and the stories (:mod:`stories`), the two-workers story (:mod:`two_workers`), the
whole fence (:mod:`fencing`), the three fields (:mod:`fields`), the Lua glosses
(:mod:`lua_notes`), the self-checks (:mod:`checks` with ``questions.toml``) and two labelled
demonstrations without a guard (:mod:`unfenced`).

May import the protocol core (``echomq_lab``'s top level) and nothing else of the package: no
widgets, no labs, no ipywidgets, IPython or matplotlib.
"""
