# Two commands do all the setup on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# The pinned typescript (package-lock.json) that type-checks the widgets' JS; installed by npm ci.
NODE_STAMP := node_modules/.installed
TSC := node_modules/.bin/tsc
DEVICES ?= 8
# pytest arguments: two pytest-xdist workers, whole files to each, the longest first
# (tests/conftest.py schedules them). 2026-11-29 on this 2-core machine: the whole suite in
# 37 min on two workers against about 54 min in one process. PYTEST_ARGS= runs one process.
PYTEST_ARGS ?= -n 2

.PHONY: demo test lint format venv clean browser-deps typecheck docs python313 test-current plans

# The current-jax leg (issue 39): Debian's Python 3.13 with the newest jax, jaxlib, libtpu and
# CUDA plugin that pyproject.toml allows, in a venv of its own beside $(VENV).
PYTHON313 ?= /usr/bin/python3.13
VENV_CURRENT ?= .venv-current
PY_CURRENT := $(VENV_CURRENT)/bin/python
STAMP_CURRENT := $(VENV_CURRENT)/.installed

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,tpu,gpu,cluster,docs]'
	touch $(STAMP)

venv: $(STAMP)

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $(NODE_STAMP)

## typecheck: shardviz/ by mypy ([tool.mypy] in pyproject.toml), and the widgets' ES modules
## (shardviz/widgets/static/*.js) from their JSDoc by tsc --noEmit (tsconfig.json), with the
## typescript pinned in package-lock.json
typecheck: $(STAMP) $(NODE_STAMP)
	$(PY) -m mypy
	$(TSC) --noEmit -p tsconfig.json

## demo: install (with the tpu and gpu extras for deviceless compiles), then run the main job on $(DEVICES) fake CPU devices -> shardviz-demo.html
demo: $(STAMP)
	$(PY) -m shardviz demo --devices $(DEVICES) --out shardviz-demo.html

## browser-deps: Debian's Chromium for tests/browser, installed with apt only when missing
## (see tools/install-chromium.sh; SHARDVIZ_SKIP_BROWSER=1 skips it and the browser tests).
browser-deps:
	@bash tools/install-chromium.sh

## python313: Debian's Python 3.13 (from the trixie suite at a low apt pin priority) for
## test-current, installed with apt only when missing (see tools/install-python313.sh)
python313:
	@bash tools/install-python313.sh

$(STAMP_CURRENT): pyproject.toml
	@PYTHON313=$(PYTHON313) bash tools/install-python313.sh
	test -x $(PY_CURRENT) || $(PYTHON313) -m venv $(VENV_CURRENT)
	$(PY_CURRENT) -m pip install --quiet --upgrade pip
	$(PY_CURRENT) -m pip install --quiet --upgrade --upgrade-strategy eager -e '.[dev,tpu,gpu]'
	touch $(STAMP_CURRENT)

## test-current: the current-jax leg: Python 3.13 (make python313) with the newest jax, jaxlib,
## libtpu and CUDA plugin, then the subset of the suite listed in tests/current_jax.txt (why each
## is there is written beside it; under 15 minutes on 2 cores)
test-current: $(STAMP_CURRENT)
	$(PY_CURRENT) -c 'import sys, jax, jaxlib; print("test-current: Python", sys.version.split()[0], "jax", jax.__version__, "jaxlib", jaxlib.__version__)'
	set -f; $(PY_CURRENT) -m pytest $$(sed -e 's/#.*//' tests/current_jax.txt)

## test: install (Python packages, Chromium, typescript), lint, type-check the Python and the JS,
## then the whole suite (notebooks and browser tests included)
test: $(STAMP) browser-deps $(NODE_STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy
	$(TSC) --noEmit -p tsconfig.json
	$(PY) -m pytest $(PYTEST_ARGS)

## docs: the docs site (Sphinx + MyST-NB) into docs/_build/html, offline, warnings as errors.
## Notebooks and how-to pages are executed; a rebuild re-runs only those whose cells changed,
## or all of them when the library or the environment changed (the cache is keyed by both).
## SPHINXOPTS='-D nb_execution_mode=force' runs every page regardless.
SPHINXOPTS ?=
docs: $(STAMP)
	$(PY) -m sphinx -W --keep-going -b html $(SPHINXOPTS) docs docs/_build/html

## plans: compile the plans shardviz ships (notebook 11's Llama 3.1 8B on a v5e pod: minutes of
## CPU) and store them in shardviz/strategies/plans/ with the jax, jaxlib and libtpu versions
plans: $(STAMP)
	$(PY) benchmarks/plans.py

lint: $(STAMP)
	$(PY) -m ruff check .

format: $(STAMP)
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

clean:
	rm -rf $(VENV) $(VENV_CURRENT) node_modules shardviz-demo.html .pytest_cache .ruff_cache .hypothesis docs/_build
