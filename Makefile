# Quire: `make run` starts the product on its embedded defaults, `make test` runs the tests.
# Both create their own virtual environment (.venv) and data folder ($QUIRE_HOME, default .quire/).

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PORT ?= 2025
HOST ?= 127.0.0.1
export LANGGRAPH_CLI_NO_ANALYTICS := 1
export LANGGRAPH_NO_VERSION_CHECK := true
export LANGSMITH_TRACING := false

.PHONY: install run serve test lint clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip wheel
	# the first install compiles llama-cpp-python (10-15 min on 2 cores); pip caches the wheel
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

install: $(BIN)/.installed

# The LangGraph server with the chat graph (Studio) and the HTTP API on one port.
run: install
	$(BIN)/quire init
	$(BIN)/langgraph dev --no-browser --no-reload --host $(HOST) --port $(PORT)

# The HTTP API alone (uvicorn).
serve: install
	$(BIN)/quire init
	$(BIN)/quire serve --host $(HOST) --port 8000

test: install
	$(BIN)/ruff check .
	$(BIN)/pytest

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
