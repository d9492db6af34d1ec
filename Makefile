# NeuroGC: `make demo` and `make test` work from a fresh clone; both run `make setup` first.
# Setup is idempotent: every step is a file target that is rebuilt only when its inputs change.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
CARGO ?= cargo
# Extra interpreters the suite also runs on, where pyenv provides them (abi3: one wheel for all).
EXTRA_PYTHONS ?= 3.9 3.12 3.13
PY_DEPS := maturin==1.16.* pytest==8.* fastapi uvicorn flask gunicorn ruff==0.* prometheus_client
# Debian packages the project needs (checked with dpkg, installed with apt-get when missing):
# Chromium for the dashboard's browser tests.
DEB_PACKAGES ?= chromium
# The dashboard's web page: uPlot (embedded in the binary) and the browser-test tools, from npm.
WEB := crates/neurogc-dashboard/web
NPM_STAMP := $(WEB)/node_modules/.package-lock.json
WEB_SOURCES := $(shell find $(WEB)/src -type f 2>/dev/null)

RUST_SOURCES := $(shell find crates -name '*.rs' -o -name Cargo.toml 2>/dev/null) Cargo.toml Cargo.lock
PY_SOURCES := $(shell find python -name '*.py' 2>/dev/null) pyproject.toml
WHEEL_STAMP := target/wheels/.built


.PHONY: setup demo test test-matrix test-slow bench-suite bench-suite-quick test-rust test-python test-python-versions test-web lint fmt bench bench-load bench-dashboard bench-models bench-soak clean system-packages

setup: system-packages $(NPM_STAMP) $(VENV)/.deps $(VENV)/.neurogc $(VENV)/bin/neurogc

system-packages:
	@missing=""; for p in $(DEB_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

$(NPM_STAMP): $(WEB)/package.json $(WEB)/package-lock.json
	cd $(WEB) && npm ci --no-audit --no-fund
	@touch $@

$(VENV)/.deps: Makefile
	@test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q $(PY_DEPS)
	@touch $@

# One abi3 wheel (cp39-abi3) serves every Python from 3.9 on.
$(WHEEL_STAMP): $(RUST_SOURCES) $(PY_SOURCES) $(VENV)/.deps
	@rm -f target/wheels/neurogc-*.whl
	$(VENV)/bin/maturin build --release -q -o target/wheels
	@touch $@

$(VENV)/.neurogc: $(WHEEL_STAMP)
	$(VPY) -m pip install -q --force-reinstall --no-deps target/wheels/neurogc-*.whl
	@touch $@

target/release/neurogc: $(RUST_SOURCES) $(WEB_SOURCES) $(NPM_STAMP) python/neurogc/_bootstrap/sitecustomize.py
	$(CARGO) build --release -q -p neurogc-cli

$(VENV)/bin/neurogc: target/release/neurogc $(VENV)/.deps
	ln -sf ../../target/release/neurogc $@

# The seed's three phases on the demo app: collect, train an LSTM, bench with and without; ~4 min.
demo: setup
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/neurogc demo

# The README's test command: lint, Rust, Python 3.11 end to end, the dashboard in Chromium.
test: setup lint test-rust test-python test-web

# What CI runs after `make test`: the slow tests, the Python suite on the other interpreters.
test-matrix: test-slow test-python-versions

lint: setup
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy -q --workspace --all-targets -- -D warnings
	$(VENV)/bin/ruff check python tests bench
	$(VENV)/bin/ruff format --check python tests bench

# --release shares compiled dependencies with the release binary (and trains test models fast).
test-rust: $(NPM_STAMP)
	$(CARGO) test --release -q --workspace --exclude neurogc-agent

test-python: setup
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VPY) -m pytest -q -m "not slow" tests

# Tests that measure for minutes (CI runs them after `make test`).
test-slow: setup
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VPY) -m pytest -q -m slow tests

# The same suite on the other interpreters pyenv provides; skipped (and said so) where absent.
test-python-versions: $(WHEEL_STAMP)
	@for v in $(EXTRA_PYTHONS); do \
	  py=$$(ls -d $${PYENV_ROOT:-$$HOME/.pyenv}/versions/$$v.*/bin/python$$v 2>/dev/null | sort -V | tail -1); \
	  if [ -z "$$py" ]; then echo "Python $$v not found under pyenv: skipped"; continue; fi; \
	  venv=.venv-py$${v/./}; \
	  test -x $$venv/bin/python || $$py -m venv $$venv || exit 1; \
	  test -f $$venv/.deps-orm || { $$venv/bin/python -m pip install -q pytest fastapi uvicorn flask gunicorn && touch $$venv/.deps-orm; } || exit 1; \
	  $$venv/bin/python -m pip install -q --force-reinstall --no-deps target/wheels/neurogc-*.whl || exit 1; \
	  echo "== Python $$v"; \
	  PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $$venv/bin/python -m pytest -q -p no:cacheprovider -m "not slow" tests || exit 1; \
	done

# The dashboard in a real headless Chromium (playwright-core), against the release binary.
test-web: system-packages target/release/neurogc $(NPM_STAMP)
	cd $(WEB) && NEUROGC_BIN=$(CURDIR)/target/release/neurogc npm test

fmt:
	$(CARGO) fmt --all
	$(VENV)/bin/ruff format python tests bench
	$(VENV)/bin/ruff check --fix python tests bench

# Agent overhead (bench/results/agent_overhead.md).
bench: setup
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VPY) bench/agent_overhead.py

# neurogc load vs wrk vs Locust (bench/load/RESULTS.md); installs wrk and Locust itself.
bench-load: setup
	bash bench/load/run.sh

# The dashboard under ingestion load, ingest-to-browser delay (bench/dashboard/RESULTS.md):
# its load test in headless Chromium at full length; builds the binary itself.
bench-dashboard: system-packages $(NPM_STAMP)
	bash bench/dashboard/run.sh

# The workload suite's scoreboard (bench/suite/RESULTS.md, ~55 min); bench-suite-quick: --quick.
bench-suite: setup
	bash bench/suite/run.sh

bench-suite-quick: setup
	QUICK=1 bash bench/suite/run.sh

# The memory guard's budget over 10 minutes on cycle-leak (bench/soak/RESULTS.md, ~11 min).
bench-soak: setup
	bash bench/soak/run.sh

# Models vs PyTorch (bench/models/RESULTS.md); installs torch into .venv-bench itself.
bench-models: setup
	bash bench/models/run.sh

clean:
	rm -rf target $(VENV) .venv-py* $(WEB)/node_modules
