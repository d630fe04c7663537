# All targets call tools as .venv/bin/python -m ...; no activation needed.
PYTHON_BOOT ?= python3
VENV        := .venv
PY          := $(VENV)/bin/python
STAMP       := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: test lint typecheck pytest lab bench clean venv notebooks

venv: $(STAMP)

$(PY):
	$(PYTHON_BOOT) -m venv $(VENV)

# Re-install only when pyproject.toml changed since the last install.
$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --upgrade pip
	$(PY) -m pip install -e '.[test]'
	mkdir -p $(VENV)/share/jupyter/lab/settings
	echo '{"@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": false}}' \
		> $(VENV)/share/jupyter/lab/settings/overrides.json
	touch $(STAMP)

lint: $(STAMP)
	$(PY) -m ruff check echomq_lab tests benchmarks

typecheck: $(STAMP)
	$(PY) -m mypy echomq_lab benchmarks

# The tests, and every notebook top to bottom under strict nbval (outputs must match a fresh run).
NBVAL := --nbval --nbval-sanitize-with notebooks/sanitize.cfg

pytest: $(STAMP)
	$(PY) -m pytest tests notebooks $(NBVAL) $(PYTEST_ARGS)

test: lint typecheck pytest

# JupyterLab on notebooks/, opening the centre page. As root it needs --allow-root; a busy
# port moves to the next free one; the printed URL carries the login token.
LAB_ARGS ?=
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

lab: $(STAMP)
	@echo "Opening JupyterLab on notebooks/ (start with 00-the-record-hash.ipynb)."
	@echo "Server: $${ECHOMQ_REDIS_URL:-embedded fakeredis (set ECHOMQ_REDIS_URL for a real one)}"
	$(PY) -m jupyter lab $(ROOT_FLAG) --ServerApp.root_dir=notebooks $(LAB_ARGS) \
		notebooks/00-the-record-hash.ipynb

# Re-run every notebook and store its outputs and widget state (nbval compares against them).
# Needed after changing a handle or script a notebook shows: its source is part of the output.
notebooks: $(STAMP)
	for nb in notebooks/*.ipynb; do \
		env -u ECHOMQ_REDIS_URL $(PY) -m jupyter nbconvert --to notebook --execute --inplace \
			--ExecutePreprocessor.store_widget_state=True \
			--ExecutePreprocessor.record_timing=False "$$nb" || exit 1; \
	done

bench: $(STAMP)
	$(PY) -m benchmarks.run

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
