# Quire: `make run` starts the product on its embedded defaults, `make test` runs the tests.
# Both create their own virtual environment (.venv) and data folder ($QUIRE_HOME, default .quire/).
# Every install resolves the versions pinned in constraints.txt (`make lock` renews them), and
# llama.cpp is built for any x86-64 CPU with AVX2, never for the machine that builds it.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PORT ?= 2025
HOST ?= 127.0.0.1
CONSTRAINTS := constraints.txt
export LANGGRAPH_CLI_NO_ANALYTICS := 1
export LANGGRAPH_NO_VERSION_CHECK := true
export LANGSMITH_TRACING := false

.PHONY: install run serve test test-unit lint lock clean

$(BIN)/.installed: pyproject.toml $(CONSTRAINTS) scripts/install-llama-cpp.sh
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -c $(CONSTRAINTS) --upgrade pip wheel
	# the first install compiles llama-cpp-python (5-15 min on 2 cores); the wheel is kept
	scripts/install-llama-cpp.sh $(BIN)/python $(CONSTRAINTS)
	$(BIN)/pip install --quiet -c $(CONSTRAINTS) -e '.[dev]'
	touch $@

install: $(BIN)/.installed

# The LangGraph server with the chat graph (Studio) and the HTTP API on one port; the local
# model runs in a process of its own, started and restarted by the server.
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

# The fast tests alone (no database, no servers, no model): well under a minute.
test-unit: install
	$(BIN)/pytest tests/unit tests/test_layers.py

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Resolve the newest allowed versions in a scratch venv and pin them in constraints.txt.
lock:
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/pip install --quiet --upgrade pip wheel
	CMAKE_ARGS="-DGGML_NATIVE=OFF" .lock-venv/bin/pip install --quiet --no-cache-dir -e '.[dev]'
	{ echo "# Every install resolves these versions (make, .ci/run). Renew with: make lock"; \
	  .lock-venv/bin/pip freeze --all --exclude-editable; } > $(CONSTRAINTS)
	rm -rf .lock-venv

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
