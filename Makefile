# CardVault: `make run` and `make test` are all a fresh Debian machine needs.
SHELL := /bin/bash
SWIFT ?= swift
CONFIG ?= config/cardvault.json
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
RELEASE_BIN := .build/release/cardvault
SWIFT_STRICT := -Xswiftc -warnings-as-errors
RELEASE_TEST_PATH := .build/release-tests
# Every test that starts the daemon or a CLI command runs this binary: the release build `make run` starts.
TEST_ENV := CARDVAULT_BIN=$(CURDIR)/$(RELEASE_BIN)
# Sanitizer runs report to stderr and fail the test on the first report.
SANITIZE_ENV := ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 TSAN_OPTIONS=halt_on_error=1:suppressions=$(CURDIR)/Tests/tsan.supp

# Debian packages, by what needs them.
PACKAGES_BUILD := libssl-dev libmicrohttpd-dev pkg-config
PACKAGES_TEST := $(PACKAGES_BUILD) python3-venv chromium chromium-driver
PACKAGES_BENCH := $(PACKAGES_BUILD) gcc nginx-light wrk postgresql postgresql-contrib
# The C baselines (anchors) of the benchmark suite, built with gcc from bench/c/.
BENCH_BASELINES := bench/.build/crypto_baseline bench/.build/fsync_baseline bench/.build/cardkit_baseline

.PHONY: run test test-sdk test-debug test-sanitize venv fuzz-api bench clean build release keys deps-build deps-test deps-bench

## run: install what is missing, build in release mode, create development keys, start the daemon
run: deps-build release keys
	@echo "Starting CardVault with $(CONFIG); it prints the URL it serves on (default http://127.0.0.1:8080)."
	@echo "  try: curl http://127.0.0.1:8080/health   curl http://127.0.0.1:8080/metrics   stop: Ctrl-C"
	exec $(RELEASE_BIN) serve --config $(CONFIG)

## test: the same set-up, then every test, against the optimised code users run: the Swift suite built
## with -c release (its own build directory, -enable-testing for @testable imports), the CLI tests and
## Tests/sdk (official SDK, schemathesis, headless Chromium) driving the release binary `make run` starts
test: deps-test release
	$(SWIFT) build -c release --build-tests --build-path $(RELEASE_TEST_PATH) -Xswiftc -enable-testing $(SWIFT_STRICT)
	# One test at a time: on a 2-core machine, tests that wait on child processes or sockets would
	# otherwise occupy the whole cooperative thread pool that the live-server tests' handlers need.
	$(TEST_ENV) $(SWIFT) test -c release --skip-build --build-path $(RELEASE_TEST_PATH) --no-parallel
	$(MAKE) --no-print-directory test-sdk

## test-sdk: the official Mangopay Python SDK and the hosted checkout in headless Chromium (Tests/sdk, pytest in .venv) against the release daemon
test-sdk: deps-test release venv
	$(TEST_ENV) .venv/bin/python -m pytest -q Tests/sdk

## test-debug: the Swift suite in a debug build (quicker to rebuild while working; CLI tests still run the release binary)
test-debug: deps-test release
	$(SWIFT) build --build-tests $(SWIFT_STRICT)
	$(TEST_ENV) $(SWIFT) test --skip-build --no-parallel

## test-sanitize: the Swift suite under AddressSanitizer, then under ThreadSanitizer (each in its own build
## directory; the CLI tests run the sanitized cardvault built beside the tests)
test-sanitize: deps-test
	$(SWIFT) build --build-tests --sanitize=address --build-path .build/sanitize-address $(SWIFT_STRICT)
	$(SANITIZE_ENV) $(SWIFT) test --skip-build --sanitize=address --build-path .build/sanitize-address --no-parallel
	$(SWIFT) build --build-tests --sanitize=thread --build-path .build/sanitize-thread $(SWIFT_STRICT)
	$(SANITIZE_ENV) $(SWIFT) test --skip-build --sanitize=thread --build-path .build/sanitize-thread --no-parallel

venv:
	@[ -x .venv/bin/python ] || python3 -m venv .venv
	.venv/bin/pip install -q -r Tests/sdk/requirements.txt

## fuzz-api: the heavy schemathesis run over the whole of docs/openapi.yaml against a daemon from the release
## binary: every check, positive and negative cases, at least 20,000 of them, a fresh seed each time (printed;
## repeat one with CARDVAULT_FUZZ_SEED=<seed>, size it with CARDVAULT_FUZZ_EXAMPLES=<per operation>)
fuzz-api: deps-test release venv
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
