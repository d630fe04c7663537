# All targets call tools as .venv/bin/python -m ...; no activation needed.
PYTHON_BOOT ?= python3
VENV        := .venv
PY          := $(VENV)/bin/python
STAMP       := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: test lint typecheck pytest lab bench clean venv

venv: $(STAMP)

$(PY):
	$(PYTHON_BOOT) -m venv $(VENV)

# Re-install only when pyproject.toml changed since the last install.
$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --upgrade pip
	$(PY) -m pip install -e '.[test]'
	touch $(STAMP)

lint: $(STAMP)
	$(PY) -m ruff check echomq_lab tests

typecheck: $(STAMP)
	$(PY) -m mypy echomq_lab

pytest: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

test: lint typecheck pytest

lab: $(STAMP)
	@if [ -d notebooks ]; then \
		$(PY) -m jupyter lab notebooks/; \
	else \
		echo "notebooks/ does not exist yet: the course notebooks have not been added."; \
		echo "Once they are, 'make lab' opens JupyterLab on notebooks/."; \
		exit 1; \
	fi

bench: $(STAMP)
	$(PY) -m benchmarks.run

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
