# `make test` is what CI runs (.ci/run). Everything installs into the current Python environment.
PYTHON ?= python3
PIP := $(PYTHON) -m pip

.PHONY: install install-test test test-quick test-gpu bench device-check lint fmt clean

install:            ## kgen itself (compile-feedback loop; no GPU stack)
	$(PIP) install -q .

install-test:       ## kgen (editable), the CPU build of torch, and the test tools, pinned
	$(PIP) install -q -c constraints.txt torch
	$(PIP) install -q -c constraints.txt -e '.[test]'

test: install-test lint  ## what CI runs: lint, then every test that needs no GPU (nvcc ones too)
	$(PYTHON) -m pytest -q

test-quick:         ## the same without the slow tests (no install, no lint)
	$(PYTHON) -m pytest -q -m "not slow and not gpu"

test-gpu:           ## on a GPU machine: the GPU tests (sandbox cheats, author kernels, GPU loop)
	$(PYTHON) -m pytest -q -m gpu --durations=15 $(PYTEST_ARGS)

bench:              ## on a GPU machine: the gemm table (naive, builtin, cuBLAS, Triton) and the ops table
	$(PYTHON) -m benchmarks.bench_table $(BENCH_ARGS)

device-check:       ## on a GPU machine without registries: carried bwrap/wheels, test-gpu, bench
	scripts/device-check.sh all

lint:               ## ruff and mypy, as CI runs them
	$(PYTHON) -m ruff check kgen sandbox tests benchmarks
	$(PYTHON) -m mypy

fmt:
	$(PYTHON) -m ruff format kgen sandbox tests benchmarks
	$(PYTHON) -m ruff check --fix kgen sandbox tests benchmarks

clean:
	rm -rf build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache
