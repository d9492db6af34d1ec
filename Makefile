# NeuroGC: `make demo` and `make test` work from a fresh clone; both run `make setup` first.
# Setup is idempotent: every step is a file target that is rebuilt only when its inputs change.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
CARGO ?= cargo
# Extra interpreters the suite also runs on, where pyenv provides them (abi3: one wheel for all).
EXTRA_PYTHONS ?= 3.9 3.12 3.13
PY_DEPS := maturin==1.16.* pytest==8.* fastapi uvicorn flask gunicorn ruff==0.* prometheus_client numpy
# Debian packages the project needs (checked with dpkg, installed with apt-get when missing):
# Chromium for the dashboard's browser tests.
DEB_PACKAGES ?= chromium
# The dashboard's web page: uPlot (embedded in the binary) and the browser-test tools, from npm.
WEB := crates/neurogc-dashboard/web
NPM_STAMP := $(WEB)/node_modules/.package-lock.json
WEB_SOURCES := $(shell find $(WEB)/src -type f 2>/dev/null)

RUST_SOURCES := $(shell find crates -name '*.rs' -o -name Cargo.toml 2>/dev/null) Cargo.toml Cargo.lock
PY_SOURCES := $(shell find python -type f -not -path '*/__pycache__/*' -not -path 'python/neurogc/bin/*' -not -name '*.so' 2>/dev/null) pyproject.toml docs/pypi.md
WHEEL_STAMP := target/wheels/.built
# The wheel to install elsewhere (make wheel): in dist/, tagged manylinux2014 (glibc 2.17 and
# newer), the `neurogc` command inside. zig (PyPI's ziglang) links the extension and the CLI
# against glibc 2.17; it lives in its own virtualenv so that `make setup` does not fetch it.
WHEEL_VENV := .venv-wheel
WHEEL_DEPS := maturin==1.16.* ziglang==0.17.*
ZIG_TARGET := x86_64-unknown-linux-gnu
ZIG_CC := target/zig/cc
# The CLI's zig build has a target folder of its own: maturin builds the extension with other
# cargo settings (target-applies-to-host), and sharing one folder rebuilt every dependency of one
# after a build of the other; it also keeps target/release free for the development build.
ZIG_CLI_DIR := target/zig-cli
DIST_CLI := $(ZIG_CLI_DIR)/$(ZIG_TARGET)/release/neurogc
DIST_STAMP := dist/.built
# The Rust test binaries (`make test-rust`), built by setup: from nothing they took 7.5 of the 15
# minutes `make test` ran in a bare clone, where the rest of it is about 8.
TEST_BINS_STAMP := target/test-release/.built


.PHONY: setup wheel dev-cli demo test test-matrix test-slow test-trainers bench-suite bench-suite-quick bench-suite-long test-rust test-python test-python-versions test-web lint fmt bench bench-load bench-dashboard bench-models bench-scheduler-latency bench-soak bench-sweep bench-workers clean system-packages

setup: system-packages $(NPM_STAMP) $(VENV)/.deps $(VENV)/.neurogc dev-cli $(TEST_BINS_STAMP)

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

# .venv/bin/neurogc links to the release binary; installing the wheel (its console script)
# replaces the link, so every setup puts it back if it is anything else.
dev-cli: target/release/neurogc $(VENV)/.neurogc
	@test "$$(readlink $(VENV)/bin/neurogc)" = ../../target/release/neurogc || \
	  ln -sfn ../../target/release/neurogc $(VENV)/bin/neurogc

$(WHEEL_VENV)/.deps: Makefile
	@test -x $(WHEEL_VENV)/bin/python || $(PYTHON) -m venv $(WHEEL_VENV)
	$(WHEEL_VENV)/bin/python -m pip install -q --upgrade pip
	$(WHEEL_VENV)/bin/python -m pip install -q $(WHEEL_DEPS)
	@touch $@

# zig cc as cargo's linker for the CLI, through maturin's wrapper (it drops the flags zig refuses).
$(ZIG_CC): $(WHEEL_VENV)/.deps
	@mkdir -p $(@D)
	@printf '%s\n' '#!/bin/sh' '# Written by make: links with zig against glibc 2.17.' \
	  'export CARGO_ZIGBUILD_ZIG_COMMAND="$(CURDIR)/$(WHEEL_VENV)/bin/python" CARGO_ZIGBUILD_ZIG_COMMAND_ARGS="-m ziglang"' \
	  'exec "$(CURDIR)/$(WHEEL_VENV)/bin/maturin" zig cc -- -g -fno-sanitize=all -target x86_64-linux-gnu.2.17 "$$@"' > $@
	@chmod +x $@

# An explicit --target links only the CLI with zig (build scripts keep the system's linker).
$(DIST_CLI): $(RUST_SOURCES) $(WEB_SOURCES) $(NPM_STAMP) python/neurogc/_bootstrap/sitecustomize.py $(ZIG_CC)
	CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER=$(CURDIR)/$(ZIG_CC) $(CARGO) build --release -q \
	  -p neurogc-cli --target $(ZIG_TARGET) --target-dir $(ZIG_CLI_DIR)
	@touch $@

# The binary is in python/neurogc/bin/ only while maturin runs, interrupted or not (make setup's
# development wheel must not pick it up).
$(DIST_STAMP): $(DIST_CLI) $(RUST_SOURCES) $(PY_SOURCES) $(WHEEL_VENV)/.deps
	@rm -f dist/neurogc-*.whl
	trap 'rm -rf python/neurogc/bin' EXIT; trap 'exit 130' INT TERM; \
	install -D -m 755 $(DIST_CLI) python/neurogc/bin/neurogc && \
	  PATH="$(CURDIR)/$(WHEEL_VENV)/bin:$$PATH" maturin build --release -q --zig \
	  --compatibility manylinux2014 -o dist
	@touch $@

# dist/neurogc-<version>-cp39-abi3-manylinux2014_x86_64...whl: pip install it anywhere (README).
wheel: $(DIST_STAMP)
	@ls -l dist/neurogc-*.whl

# The seed's three phases on the demo app: collect, train an LSTM, bench with and without; ~4 min.
demo: setup
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/neurogc demo

# The README's test command: lint, Rust, Python 3.11 end to end, the dashboard in Chromium.
test: setup lint test-rust test-python test-web

# What CI runs after `make test`: the slow tests (the wheel installed on 3.9-3.13 among them),
# the Python suite on the other interpreters.
test-matrix: test-slow test-python-versions

lint: setup
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy -q --workspace --all-targets -- -D warnings
	$(VENV)/bin/ruff check python tests bench
	$(VENV)/bin/ruff format --check python tests bench

# The test-release profile (Cargo.toml): optimised (the trainer's tests train models fast), not
# link-time optimised. Examples are not linked here (clippy --all-targets in `lint` compiles
# them); --tests takes every target with tests (libraries, binaries, tests/), not the fuzzkit.
# Setup builds with the same command what test-rust then runs.
CARGO_TEST := $(CARGO) test --profile test-release -q --workspace --exclude neurogc-agent

$(TEST_BINS_STAMP): $(RUST_SOURCES) $(WEB_SOURCES) $(NPM_STAMP)
	$(CARGO_TEST) --tests --no-run
	@touch $@

test-rust: $(NPM_STAMP)
	$(CARGO_TEST) --tests
	$(CARGO_TEST) --doc

test-python: setup
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VPY) -m pytest -q -m "not slow" tests

# Tests that measure for minutes, and tests/test_wheel.py (CI runs them after `make test`).
test-slow: setup $(DIST_STAMP)
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VPY) -m pytest -q -m slow tests

# The same suite on the other interpreters pyenv provides; skipped (and said so) where absent.
test-python-versions: $(WHEEL_STAMP)
	@for v in $(EXTRA_PYTHONS); do \
	  py=$$(ls -d $${PYENV_ROOT:-$$HOME/.pyenv}/versions/$$v.*/bin/python$$v 2>/dev/null | sort -V | tail -1); \
	  if [ -z "$$py" ]; then echo "Python $$v not found under pyenv: skipped"; continue; fi; \
	  venv=.venv-py$${v/./}; \
	  test -x $$venv/bin/python || $$py -m venv $$venv || exit 1; \
	  test -f $$venv/.deps-2 || { $$venv/bin/python -m pip install -q pytest fastapi uvicorn flask gunicorn prometheus_client numpy && touch $$venv/.deps-2; } || exit 1; \
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

# The workload suite's scoreboard (bench/suite/RESULTS.md, ~75 min); bench-suite-quick: --quick.
bench-suite: setup
	bash bench/suite/run.sh

bench-suite-quick: setup
	QUICK=1 bash bench/suite/run.sh

# The workloads whose heap turns over, and large-heap, 3 minutes a policy
# (bench/suite/RESULTS-long.md, ~65 min).
bench-suite-long: setup
	LONG=1 bash bench/suite/run.sh

# The memory guard's budget over 10 minutes on cycle-leak (bench/soak/RESULTS.md, ~11 min).
bench-soak: setup
	bash bench/soak/run.sh

# The step policies on every bundled training loop, and the learned one against issue 15's bar
# (bench/sweep/RESULTS.md); installs PyTorch into .venv-torch for torch_cnn.
# PyTorch and the trainers whose callbacks neurogc.training ships (Lightning, Hugging Face's
# Trainer): heavy (PyTorch from PyPI brings its CUDA libraries, ~5 GB), so in a virtualenv of
# their own, for the benchmark and the trainer tests only, never for `make test`.
TORCH_VENV := .venv-torch
TORCH_DEPS := numpy torch lightning transformers accelerate pytest
$(TORCH_VENV)/.deps: Makefile
	@test -x $(TORCH_VENV)/bin/python || $(PYTHON) -m venv $(TORCH_VENV)
	$(TORCH_VENV)/bin/python -m pip install -q $(TORCH_DEPS)
	@touch $@

# The step hook with the real trainers: the torch loop and the Lightning and Trainer callbacks
# (tests/test_training.py skips them where those packages are missing, as in `make test`).
test-trainers: $(WHEEL_STAMP) $(TORCH_VENV)/.deps
	$(TORCH_VENV)/bin/python -m pip install -q --force-reinstall --no-deps target/wheels/neurogc-*.whl
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(TORCH_VENV)/bin/python -m pytest -q -p no:cacheprovider \
	  tests/test_training.py -k "torch or lightning or transformers"

bench-sweep: setup $(TORCH_VENV)/.deps
	bash bench/sweep/run.sh

# gunicorn --preload -w 2: freezing in the master before fork (PSS/USS per worker, p99;
# bench/workers/prefork.md) and staggered full collections (p99; bench/workers/stagger.md).
bench-workers: setup
	$(VPY) bench/workers/run.py prefork
	$(VPY) bench/workers/run.py stagger

# Models vs PyTorch (bench/models/RESULTS.md); installs torch into .venv-bench itself.
bench-models: setup
	bash bench/models/run.sh

# The scheduler's quiet-window net per question (bench/models/SCHEDULER-LATENCY.md).
bench-scheduler-latency: setup
	bash bench/models/scheduler_latency.sh

clean:
	rm -rf target dist $(VENV) $(WHEEL_VENV) .venv-py* $(WEB)/node_modules
