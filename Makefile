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
PACKAGES_BUILD := libssl-dev libmicrohttpd-dev libcurl4-openssl-dev libpq-dev libp11-kit-dev pkg-config
PACKAGES_TEST := $(PACKAGES_BUILD) python3-venv chromium chromium-driver openssl postgresql softhsm2
PACKAGES_BENCH := $(PACKAGES_BUILD) gcc nginx-light wrk openssl postgresql postgresql-contrib
# The C baselines (anchors) of the benchmark suite, built with gcc from bench/c/.
BENCH_BASELINES := bench/.build/crypto_baseline bench/.build/fsync_baseline bench/.build/cardkit_baseline

.PHONY: run test test-sdk test-postgres-pair test-scripts test-debug test-sanitize lint format venv bench clean build release keys deps-build \
	deps-test deps-bench \
	fuzz fuzz-parsers fuzz-build fuzz-seeds fuzz-api

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
	$(MAKE) --no-print-directory test-scripts
	$(MAKE) --no-print-directory test-sdk
	$(MAKE) --no-print-directory test-postgres-pair

# The SDK tests of the second pass, against two daemons sharing one PostgreSQL database (requests alternate
# between them; /metrics is read from each daemon and summed, "the daemon's log" is both logs): every file that
# drives the API through the SDK or a browser on the session's daemon. Left out, each for its reason:
#   test_abuse_limits, test_http_framing, test_hardening: the HTTP layer below the proxy (the same on either
#     backend), each with daemons of its own;
#   test_lifetimes, test_hooks, test_readme: daemons of their own, restarted on one data directory or started as
#     the README says (the file store); hooks across two daemons: test_postgres_pair_jobs.py (first pass);
#   test_forward: a daemon of its own that trusts the receiver's CA; a card's security code is held in the memory
#     of the daemon that tokenized it, so a forward with the CVC goes to that daemon (docs/operations.md);
#   test_schemathesis: a daemon of its own, the HTTP contract (the first pass covers it);
#   test_postgres_pair, test_postgres_pair_jobs: they start their own pairs (in the first pass);
#   test_thread_names: the file store's flusher and indexer threads, which a daemon on PostgreSQL does not have.
# test_checkout_browser runs before the other browser files (name order, as in the first pass): its attacker pays
# with a documented sandbox card from headless Chromium, and after test_payins_e2e, test_web_payin and
# test_pages_browser the shared risk history blocks that card validation (score 140), on the pair as on one daemon.
# test_paypal runs here but for its hook test, which starts a daemon of its own (skipped in this pass).
# test_device_completion runs here: a card tokenized through one daemon is completed through the other (its
# daemons of their own, for the JS kit's origin and short lifetimes, are single daemons in both passes).
# test_sdk_live_suite: a daemon of its own, and the sdist's tests hold one client for the whole suite.
# This pass: 148 tests, 1 min 25 s on the 2-core machine.
PAIR_SDK_TESTS := Tests/sdk/test_business_metrics.py Tests/sdk/test_card_lifecycle.py \
	Tests/sdk/test_checkout_browser.py Tests/sdk/test_device_completion.py Tests/sdk/test_hostile_values.py \
	Tests/sdk/test_lifecycle.py \
	Tests/sdk/test_mangopay_sdk.py Tests/sdk/test_pages_browser.py Tests/sdk/test_payins_e2e.py \
	Tests/sdk/test_paypal.py \
	Tests/sdk/test_preauthorizations.py Tests/sdk/test_sdk_flows.py Tests/sdk/test_systemd_unit.py \
	Tests/sdk/test_tokenization_cors.py Tests/sdk/test_web_payin.py Tests/sdk/test_zz_scan.py

## test-postgres-pair: Tests/sdk (PAIR_SDK_TESTS) with CARDVAULT_TEST_BACKEND=postgres-pair: a throw-away
## PostgreSQL cluster (initdb in a temporary directory, Unix socket on a free port) and two daemons on it
## behind a round-robin proxy. The Swift suite's PostgreSQL cases start their own throw-away cluster the same
## way (or use CARDVAULT_TEST_DATABASE_URL); Tests/sdk/test_postgres_pair*.py start pairs of their own (first pass).
test-postgres-pair: deps-test release venv
	$(TEST_ENV) CARDVAULT_TEST_BACKEND=postgres-pair .venv/bin/python -m pytest -q $(PAIR_SDK_TESTS)

## test-scripts: the repository's own tools (scripts/check-imports against fake packages and this one)
test-scripts:
	python3 -m unittest discover -s Tests/scripts -v

## lint: swift-format's rules (.swift-format) over every Swift file, then the module map: each target's imports
## against Package.swift and the import table of docs/architecture.md (scripts/check-imports)
lint:
	$(SWIFT) format lint --strict --parallel -r Package.swift Sources Tests Fuzz/Targets
	scripts/check-imports --fuzz

## format: apply swift-format's fixes in place (then review and commit them on their own)
format:
	$(SWIFT) format format --in-place --parallel -r Package.swift Sources Tests Fuzz/Targets

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
	# The SDK's source distribution, for its own live tests (Tests/sdk/test_sdk_live_suite.py).
	@[ -f .cache/sdk-sdist/mangopaysdk-3.51.1.tar.gz ] || .venv/bin/pip download -q --no-binary :all: --no-deps \
		-d .cache/sdk-sdist mangopaysdk==3.51.1
	# axe-core for the browser tests' accessibility checks: the file axe.min.js that this package ships (its
	# Playwright dependency is not needed: Tests/sdk/browser_support.py injects it through Selenium).
	.venv/bin/pip install -q --no-deps axe-playwright-python==0.1.8

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

## fuzz: every fuzzer: the libFuzzer targets of the parsers (fuzz-parsers), then schemathesis's heavy run
## over the whole API (fuzz-api)
fuzz: fuzz-parsers fuzz-api

# The libFuzzer targets (Fuzz/Targets, docs/fuzzing.md), built only here: CARDVAULT_FUZZ=1 adds them to the
# package, in their own build directory, instrumented for libFuzzer and AddressSanitizer.
FUZZ_TARGETS := fuzz-urlencoded-form fuzz-mangopay-json fuzz-mangopay-api fuzz-checkout-request fuzz-callback-url \
	fuzz-request-headers fuzz-record-frame fuzz-segment-scanner fuzz-index-checkpoint fuzz-key-file fuzz-store-recovery \
	fuzz-record-codec fuzz-key-custody
## FUZZ_SECONDS: how long each target runs (make fuzz FUZZ_SECONDS=600); FUZZ=<name> runs one target only
FUZZ_SECONDS ?= 60
FUZZ ?= $(FUZZ_TARGETS)
FUZZ_BUILD := CARDVAULT_FUZZ=1 $(SWIFT) build -c release --scratch-path .build/fuzz $(SWIFT_STRICT) \
	-Xswiftc -sanitize=fuzzer,address -Xswiftc -enable-testing
FUZZ_BIN := .build/fuzz/release
# New inputs go to .build/fuzz/corpus/<target> (the committed seeds in Fuzz/corpus stay as they are);
# crashes, timeouts and out-of-memory inputs to .build/fuzz/findings/<target>/.
# -fork=1 with -ignore_*: one fuzzing child at a time, restarted after a finding, so one bug does not hide
# the next; every finding is still written and fails the run.
FUZZ_FLAGS ?= -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 -timeout=10 -rss_limit_mb=2048 \
	-malloc_limit_mb=512
FUZZ_ENV := ASAN_OPTIONS=detect_leaks=0 SWIFT_BACKTRACE=enable=no

## fuzz-build: build the libFuzzer targets
fuzz-build: deps-build
	@for target in $(FUZZ); do \
		echo "building $$target"; \
		$(FUZZ_BUILD) --product $$target 2>&1 | grep -v '^\[' || exit 1; \
	done

## fuzz-parsers: run each libFuzzer target for FUZZ_SECONDS over its seed corpus; fails on the first finding
fuzz-parsers: fuzz-build
	@mkdir -p .build/fuzz/logs
	@failed=""; for target in $(FUZZ); do \
		findings=.build/fuzz/findings/$$target; log=.build/fuzz/logs/$$target.log; \
		mkdir -p .build/fuzz/corpus/$$target $$findings; rm -f $$findings/*; \
		echo "fuzzing $$target for $(FUZZ_SECONDS) s"; \
		$(FUZZ_ENV) $(FUZZ_BIN)/$$target $(FUZZ_FLAGS) -max_total_time=$(FUZZ_SECONDS) -artifact_prefix=$$findings/ \
			.build/fuzz/corpus/$$target Fuzz/corpus/$$target > $$log 2>&1; status=$$?; \
		runs=$$(grep -o '^#[0-9]*' $$log | tail -1 | tr -d '#'); \
		found=$$(ls $$findings | wc -l); \
		echo "  $$target: $${runs:-0} executions, $$found findings (log $$log)"; \
		[ "$$found" = 0 ] && [ "$$status" = 0 ] || failed="$$failed $$target"; \
		rm -rf /dev/shm/cardvault-fuzz-* $${TMPDIR:-/tmp}/cardvault-fuzz-*; \
	done; \
	if [ -n "$$failed" ]; then \
		echo "findings in:$$failed"; \
		echo "inputs in .build/fuzz/findings/<target>/; reproduce one: $(FUZZ_ENV) $(FUZZ_BIN)/<target> <input>"; \
		exit 1; \
	fi

## fuzz-seeds: rewrite the binary seeds (segments, frames, checkpoint, keyring) from a real store under the throwaway key
fuzz-seeds:
	$(MAKE) --no-print-directory fuzz-build FUZZ=fuzz-segment-scanner
	CARDVAULT_FUZZ_SEEDS=1 $(FUZZ_BIN)/fuzz-segment-scanner

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
