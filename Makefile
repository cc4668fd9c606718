# `make test` is what CI runs (.ci/run). Everything installs into the current Python environment.
PYTHON ?= python3
PIP := $(PYTHON) -m pip

.PHONY: install install-test test test-gpu bench device-check lint fmt clean

install:            ## kgen itself (compile-feedback loop; no GPU stack)
	$(PIP) install -q .

install-test:       ## kgen (editable), the CPU build of torch, and the test tools, pinned
	$(PIP) install -q -c constraints.txt torch
	$(PIP) install -q -c constraints.txt -e '.[test]'

test: install-test  ## every test that needs no GPU (nvcc tests included where nvcc exists)
	$(PYTHON) -m pytest -q

test-gpu:           ## on a GPU machine: the GPU tests (sandbox cheats, author kernels, GPU loop)
	$(PYTHON) -m pytest -q -m gpu $(PYTEST_ARGS)

bench:              ## on a GPU machine: naive, builtin best, cuBLAS, Triton side by side
	$(PYTHON) -m kgen.benchtable $(BENCH_ARGS)

device-check:       ## on a GPU machine without registries: carried bwrap/wheels, test-gpu, bench
	scripts/device-check.sh all

lint:
	$(PYTHON) -m ruff check kgen sandbox tests
	$(PYTHON) -m mypy

fmt:
	$(PYTHON) -m ruff format kgen sandbox tests
	$(PYTHON) -m ruff check --fix kgen sandbox tests

clean:
	rm -rf build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache
