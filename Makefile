# aibuddy: two commands do all set-up on a fresh Debian machine.
#   make run   [PROJECT=/path/to/folder]   install what is missing, build, open the desktop window
#   make test                              install what is missing, run every test suite
#   make fuzz  [FUZZ_SECONDS=60]           run every cargo-fuzz target for FUZZ_SECONDS each (nightly)
SHELL := /bin/bash
PROJECT ?= $(CURDIR)/examples/sample-project
export CARGO_TERM_COLOR ?= never

.PHONY: run test setup build-ui build-app test-rust test-ui test-e2e lint bench fuzz package package-test

setup:
	@bash scripts/setup.sh

run: setup
	@bash scripts/run.sh "$(PROJECT)"

test: setup
	@bash scripts/test.sh

build-ui: setup
	npm run --silent build

build-app: build-ui
	cargo build --locked -p aibuddy-desktop --features custom-protocol

test-rust: build-ui
	cargo test --workspace --features aibuddy-desktop/custom-protocol --locked

test-ui: setup
	@bash scripts/test-ui.sh

test-e2e: setup
	@bash scripts/test-e2e.sh

lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings

# A .deb of the desktop app (release build), bundled skills as resources; prints its path.
package: setup
	@bash scripts/package.sh

# Unpack the .deb (debug build unless PACKAGE_PROFILE=release) and start it under Xvfb.
package-test: setup
	@bash scripts/test-package.sh

bench: setup
	@bash benches/run.sh

FUZZ_SECONDS ?= 60
fuzz: setup
	@FUZZ_SECONDS=$(FUZZ_SECONDS) bash scripts/fuzz.sh
