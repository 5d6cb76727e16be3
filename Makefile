# Two commands do all set-up on a fresh machine:
#   make demo   — create .venv (torch pinned to the CPU wheel when torch is missing),
#                 install tilelang, run the quickstart GEMM (GPU if present, else CPU)
#   make test   — same set-up plus the test/LSP extras, then ruff + pytest
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
TORCH   := torch==2.13.0
CORE    := $(VENV)/.core-installed
DEV     := $(VENV)/.dev-installed
export PYTHONPATH := $(CURDIR)
# hipcc picks the NVIDIA platform whenever nvcc is on PATH; the HIP backend builds for AMD
export HIP_PLATFORM ?= amd

.PHONY: demo test hip-toolchain test-python test-vscode lint format gpu-test gpu-sanitize bench clean e2e-vscode

$(BIN)/python:
	$(PY) -m venv --system-site-packages $(VENV)

# On a machine whose python3 already has torch (e.g. a GPU box with a CUDA build of torch in
# its own environment), the demo runs with that interpreter; otherwise with .venv.
DEMO_PY := $(shell $(PY) -c "import torch" >/dev/null 2>&1 && echo $(PY) || echo $(BIN)/python)

$(CORE): $(BIN)/python pyproject.toml
	@$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/pip install -q $(TORCH)
	@$(BIN)/pip install -q --no-build-isolation --no-deps -e . 2>/dev/null \
	  || echo "note: editable install skipped (offline?); using PYTHONPATH=$(CURDIR)"
	@touch $@

$(DEV): $(CORE)
	$(BIN)/pip install -q -e ".[lsp,test]"
	@touch $@

demo:
	@if [ "$(DEMO_PY)" = "$(BIN)/python" ]; then $(MAKE) --no-print-directory $(CORE); fi
	$(DEMO_PY) examples/quickstart.py

test: test-python test-vscode

# the HIP compiler for the HIP compile tests (apt-get as root; otherwise a note and they skip)
hip-toolchain:
	@.ci/hip_toolchain.sh

test-python: $(DEV)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest -p no:cacheprovider -n auto --dist loadfile tests

# the VS Code extension: typecheck, eslint, node tests against the real server, .vsix build + manifest check
test-vscode: $(DEV)
	cd vscode-extension && npm ci --no-audit --no-fund && TILELANG_LSP_PYTHON=$(CURDIR)/$(BIN)/python npm test

# slow, not in CI: code-server + Playwright + chromium-headless-shell, saves docs/screenshot.png
e2e-vscode: $(DEV)
	cd vscode-extension && npm ci --no-audit --no-fund && node scripts/e2e.mjs

lint: $(DEV)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# GPU machine (tests/gpu, marker `cuda`) and benchmarks: see README
gpu-test:
	python3 -m pytest -q -m cuda tests/gpu

# compute-sanitizer memcheck, racecheck and synccheck over every catalogue kernel (seeds, examples)
SANITIZE := compute-sanitizer --error-exitcode 1 --print-limit 20
gpu-sanitize:
	python3 tests/gpu/catalog_vs_cpu.py   # builds every kernel once (disk cache) and checks results
	$(SANITIZE) --tool memcheck python3 tests/gpu/catalog_vs_cpu.py
	$(SANITIZE) --tool racecheck python3 tests/gpu/catalog_vs_cpu.py
	$(SANITIZE) --tool synccheck python3 tests/gpu/catalog_vs_cpu.py

bench:
	python3 benchmarks/run_all.py

clean:
	rm -rf $(VENV) build *.egg-info
