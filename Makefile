# CardVault: `make run` and `make test` are all a fresh Debian machine needs.
SHELL := /bin/bash
SWIFT ?= swift
CONFIG ?= config/cardvault.json
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
RELEASE_BIN := .build/release/cardvault
SWIFT_STRICT := -Xswiftc -warnings-as-errors

# Debian packages, by what needs them.
PACKAGES_BUILD := libssl-dev libmicrohttpd-dev pkg-config
PACKAGES_TEST := $(PACKAGES_BUILD) python3-venv chromium chromium-driver
PACKAGES_BENCH := $(PACKAGES_BUILD) gcc nginx-light wrk postgresql postgresql-contrib
# The C baselines (anchors) of the benchmark suite, built with gcc from bench/c/.
BENCH_BASELINES := bench/.build/crypto_baseline bench/.build/fsync_baseline bench/.build/cardkit_baseline

.PHONY: run test test-sdk fuzz-api bench clean build release keys deps-build deps-test deps-bench

## run: install what is missing, build in release mode, create development keys, start the daemon
run: deps-build release keys
	@echo "Starting CardVault with $(CONFIG); it prints the URL it serves on (default http://127.0.0.1:8080)."
	@echo "  try: curl http://127.0.0.1:8080/health   curl http://127.0.0.1:8080/metrics   stop: Ctrl-C"
	exec $(RELEASE_BIN) serve --config $(CONFIG)

## test: the same set-up, then every test (Swift unit, CLI and live tests)
test: deps-test
	$(SWIFT) build --build-tests $(SWIFT_STRICT)
	# One test at a time: on a 2-core machine, tests that wait on child processes or sockets would
	# otherwise occupy the whole cooperative thread pool that the live-server tests' handlers need.
	$(SWIFT) test --skip-build --no-parallel
	$(MAKE) --no-print-directory test-sdk

## test-sdk: the official Mangopay Python SDK and the hosted checkout in headless Chromium (Tests/sdk, pytest in .venv) against a live daemon
test-sdk: deps-test
	$(SWIFT) build --product cardvault $(SWIFT_STRICT)
	@[ -x .venv/bin/python ] || python3 -m venv .venv
	.venv/bin/pip install -q -r Tests/sdk/requirements.txt
	.venv/bin/python -m pytest -q Tests/sdk

## fuzz-api: the heavy schemathesis run over the whole of docs/openapi.yaml against a daemon from the release
## binary: every check, positive and negative cases, at least 20,000 of them, a fresh seed each time (printed;
## repeat one with CARDVAULT_FUZZ_SEED=<seed>, size it with CARDVAULT_FUZZ_EXAMPLES=<per operation>)
fuzz-api: deps-test
	$(SWIFT) build -c release $(SWIFT_STRICT)
	@[ -x .venv/bin/python ] || python3 -m venv .venv
	.venv/bin/pip install -q -r Tests/sdk/requirements.txt
	CARDVAULT_BIN=$(CURDIR)/$(RELEASE_BIN) CARDVAULT_FUZZ_HEAVY=1 \
		.venv/bin/python -m pytest -q -s Tests/sdk/test_schemathesis.py -k schemathesis_finds

## bench: the tokenization benchmark suite: release build, C baselines, every suite side by side with
## its anchor; table on the terminal, bench/results/<timestamp>.json, bench/report.html.
## Narrow or shorten it with BENCH_ARGS, e.g. `make bench BENCH_ARGS="--quick crypto http"`.
bench: deps-bench
	$(MAKE) --no-print-directory $(BENCH_BASELINES)
	$(SWIFT) build -c release $(SWIFT_STRICT)
	.build/release/cardvault-bench $(BENCH_ARGS)

bench/.build/%: bench/c/%.c bench/c/card_record.h
	@mkdir -p bench/.build
	gcc -O2 -Wall -Wextra -Werror -o $@ $< -lcrypto -lpthread

build:
	$(SWIFT) build $(SWIFT_STRICT)

release:
	$(SWIFT) build -c release $(SWIFT_STRICT)

## keys: create development keys in keys/ if absent (never committed)
keys: release
	$(RELEASE_BIN) keys init --keys-dir keys

clean:
	rm -rf .build bench/results bench/report.html bench/.build

deps-build:
	@$(call install_missing,$(PACKAGES_BUILD))
deps-test:
	@$(call install_missing,$(PACKAGES_TEST))
deps-bench:
	@$(call install_missing,$(PACKAGES_BENCH))

# install_missing: apt-get install the listed Debian packages that dpkg does not know yet.
define install_missing
missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
if [ -n "$$missing" ]; then \
	echo "installing Debian packages:$$missing"; \
	$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
fi
endef
