"""What the tests share beside their fixtures: the backends, the keyspace as plain values, what
a block sent, JupyterLab and Chromium driven headless, the repository's own files.

Importing it starts nothing. The servers themselves come from the lab's one launcher,
:mod:`echomq_lab.servers`; ``playwright`` is imported only by ``tools/browser.py`` when
a page is driven; pytest only by :mod:`.reader` (a pytest item) and :mod:`.binder` (whose
steps fail the test that asked for them); the fixtures in ``tests/conftest.py`` are built from
these modules.

- :mod:`.backends`: the registry of backends tests run on, and one session's server pool;
- :mod:`.cluster`: the fourth backend, a local three-primary Valkey Cluster;
- :mod:`.state`: the whole keyspace as plain values, and bracketing reads of the server clock;
- :mod:`.traffic`: what a block sent, seen from the client and from the server;
- :mod:`.axe`: axe-core run in a page open in headless Chromium, its serious and critical WCAG 2
  A/AA violations;
- :mod:`.story`: the two-workers story pressed as a reader does;
- :mod:`.authoring`: the repository's make targets, workflow and notebooks, read as files;
- :mod:`.envfiles`: conda environment files, read to keep them in step with pyproject.toml;
- :mod:`.front_ends`: the one front end each page runs live in besides nbval, and the count of
  every notebook's runs;
- :mod:`.reader`: the reader's probe, asked in the kernel nbval ran the page in;
- :mod:`.site`: a page of the static site opened and left to run by itself;
- :mod:`.binder`: a Binder-like install (binder's packages, then postBuild) in a fresh venv.
"""
