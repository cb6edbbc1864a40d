# netfl: `make demo` runs the default scenario; `make test` runs the test suite.
# Both create .venv with pip when it is missing (or when pyproject.toml changed).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test test-slow test-all lint bench clean

$(BIN)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $@

demo: $(BIN)/.installed
	$(BIN)/netfl run scenarios/quickstart.yaml

test: $(BIN)/.installed
	$(BIN)/python -m pytest -q

test-slow: $(BIN)/.installed
	$(BIN)/python -m pytest -q -m slow

test-all: $(BIN)/.installed
	$(BIN)/python -m pytest -q -m ''

lint: $(BIN)/.installed
	$(BIN)/ruff check .

bench: $(BIN)/.installed
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) runs .pytest_cache
