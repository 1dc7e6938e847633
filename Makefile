# EdgeStudio: `make run` opens the app on the sample model, `make test` runs every check.
# Both create .venv and install the project with everything it needs on first use.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
EXTRAS ?= dev,torch,netron
SAMPLE := resources/samples/digits_cnn.onnx

export ORT_DISABLE_TELEMETRY := 1

.PHONY: install run test lint typecheck pytest bench screenshots sample clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[$(EXTRAS)]"
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/edgestudio $(SAMPLE)

lint: $(STAMP)
	$(BIN)/ruff check edgestudio tests resources packaging docs

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest $(PYTEST_ARGS)

test: lint typecheck pytest

bench: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m tests.benchmarks

screenshots: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(BIN)/python docs/make_screenshots.py

sample: $(STAMP)
	$(BIN)/python resources/samples/make_digits_sample.py

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .mypy_cache .ruff_cache
