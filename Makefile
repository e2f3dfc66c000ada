# Two commands do all the setup on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEVICES ?= 8

.PHONY: demo test lint format venv clean browser-deps

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,tpu,gpu]'
	touch $(STAMP)

venv: $(STAMP)

## demo: install (with the tpu and gpu extras for deviceless compiles), then run the main job on $(DEVICES) fake CPU devices -> shardviz-demo.html
demo: $(STAMP)
	$(PY) -m shardviz demo --devices $(DEVICES) --out shardviz-demo.html

## browser-deps: Debian's Chromium for tests/browser, installed with apt only when missing
## (see tools/install-chromium.sh; SHARDVIZ_SKIP_BROWSER=1 skips it and the browser tests).
browser-deps:
	@bash tools/install-chromium.sh

## test: install (Python packages and Chromium), lint, then the whole suite (notebooks and
## browser tests included)
test: $(STAMP) browser-deps
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m pytest

lint: $(STAMP)
	$(PY) -m ruff check .

format: $(STAMP)
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

clean:
	rm -rf $(VENV) shardviz-demo.html .pytest_cache .ruff_cache .hypothesis
