"""The lessons layer: what the course's pages tell, each from real transitions.

The sample row and the stories (:mod:`stories`), the two-workers story (:mod:`two_workers`), the
whole fence (:mod:`fencing`), the three fields (:mod:`fields`), the Lua glosses
(:mod:`lua_notes`), the self-checks (:mod:`checks` with ``questions.toml``) and labelled
demonstrations with a guard taken out (:mod:`unfenced`: a complete without the fence, the
course's complete that checks the token only, an enqueue without its guard).

May import the protocol core (``echomq_lab``'s top level) and nothing else of the package: no
widgets, no labs, no ipywidgets, IPython or matplotlib.
"""
