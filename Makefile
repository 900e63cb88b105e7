# `make test` and `make demo` need nothing but python3: the first run builds .venv.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export TF_CPP_MIN_LOG_LEVEL ?= 2
export PYTHONDONTWRITEBYTECODE = 1

.PHONY: test demo bench venv clean

venv: $(STAMP)

# Rebuilt when pyproject.toml changes (new or changed dependencies).
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "Installing albert_tf and its pinned stack into $(VENV) (first run: a few minutes)..."
	@$(BIN)/python -m pip install -e '.[test]' > $(VENV)/install.log 2>&1 \
	  || { tail -n 40 $(VENV)/install.log; echo "pip install failed; full log: $(VENV)/install.log"; exit 1; }
	@touch $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest -q -rs tests

demo: $(STAMP)
	$(BIN)/python demo.py

bench: $(STAMP)
	$(BIN)/python benchmarks/benchmark_encoder.py

clean:
	rm -rf $(VENV) demo_output .pytest_cache
