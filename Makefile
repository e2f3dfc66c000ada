# Two commands do all the setup on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEVICES ?= 8

.PHONY: demo test lint format venv clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

## demo: install, then run the main job on $(DEVICES) fake CPU devices -> shardviz-demo.html
demo: $(STAMP)
	$(PY) -m shardviz demo --devices $(DEVICES) --out shardviz-demo.html

## test: install, lint, then the whole suite (notebooks included)
test: $(STAMP)
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
