# `make test` and `make demo` need nothing but python3: the first run builds .venv.
# Another Python: `make test PYTHON=python3.12` builds and uses .venv-3.12 beside .venv.
PYTHON ?= python3
PYVER := $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
VENV ?= $(if $(filter python3,$(PYTHON)),.venv,.venv-$(PYVER))
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Test processes run side by side (pytest-xdist), each test file on one of them, so that
# a file's shared fixtures are built once; `make test WORKERS=1` runs them one by one.
# Three on two cores: the tests wait on subprocesses and files part of the time, which a
# third process fills (docs/testing.md has the times with 1, 2 and 3).
WORKERS ?= 3
# --no-loadscope-reorder: files are handed out in tests/conftest.py's order (the longest
# first), not pytest-xdist's default of the most tests first, which can leave a long file
# to start last while the other processes sit idle.
PYTEST := $(BIN)/python -m pytest -q -rs --durations=10 -p no:cacheprovider $(if $(filter-out 1,$(WORKERS)),-n $(WORKERS) --dist loadfile --no-loadscope-reorder)
# albert_tf's bytecode is cached (in __pycache__/, which git ignores), even where the
# environment turns caching off: the ~60 Python processes a test run starts then each skip
# compiling albert_tf's modules.
export PYTHONDONTWRITEBYTECODE :=

.PHONY: test test-fast test-peers demo bench venv clean

venv: $(STAMP)

# Rebuilt when pyproject.toml changes (new or changed dependencies).
$(STAMP): pyproject.toml
	@test -n "$(PYVER)" || { echo "$(PYTHON) does not run; set PYTHON=python3.11 (or 3.12, 3.13)"; exit 1; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "Installing albert_tf and its pinned stack into $(VENV) (first run: a few minutes)..."
	@$(BIN)/python -m pip install -e '.[test]' > $(VENV)/install.log 2>&1 \
	  || { tail -n 40 $(VENV)/install.log; echo "pip install failed; full log: $(VENV)/install.log"; exit 1; }
	@touch $(STAMP)

# Everything, the slow tests included.
test: $(STAMP)
	$(PYTEST) tests

# The inner loop: every test but those marked slow (learning runs, subprocess kills).
test-fast: $(STAMP)
	$(PYTEST) -m "not slow" tests

# albert_tf against the peers themselves (transformers on torch): the tests that `make test`
# skips for want of the [bench] extra, run in a virtualenv of their own (.venv-peers), so
# that `make test`'s install never carries torch.
PEERS := .venv-peers
$(PEERS)/.installed: pyproject.toml
	@test -n "$(PYVER)" || { echo "$(PYTHON) does not run; set PYTHON=python3.11 (or 3.12, 3.13)"; exit 1; }
	@test -x $(PEERS)/bin/python || $(PYTHON) -m venv $(PEERS)
	@echo "Installing albert_tf with its test and peer extras into $(PEERS) (first run: a few minutes)..."
	@$(PEERS)/bin/python -m pip install -e '.[test,bench]' > $(PEERS)/install.log 2>&1 \
	  || { tail -n 40 $(PEERS)/install.log; echo "pip install failed; full log: $(PEERS)/install.log"; exit 1; }
	@touch $@

test-peers: $(PEERS)/.installed
	$(PEERS)/bin/python -m pytest -q -s -rs -p no:cacheprovider -m peers tests/test_peers.py

demo: $(STAMP)
	$(BIN)/python demo.py

bench: $(STAMP)
	$(BIN)/python benchmarks/benchmark_encoder.py

clean:
	rm -rf $(VENV) $(PEERS) demo_output .pytest_cache
