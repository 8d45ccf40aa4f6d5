# The two set-up commands of README.md: `make demo` and `make test`. Each installs the Debian
# packages it needs (as root), configures build/ with Meson and compiles, then runs.
BUILD ?= build

.PHONY: all build test demo bench soak clean

all: build

build:
	@scripts/install-deps.sh build
	@[ -f $(BUILD)/build.ninja ] || meson setup $(BUILD)
	ninja -C $(BUILD)

# scripts/run-tests.sh configures and compiles what the tests need: $(BUILD)-san with clang's
# sanitizers when clang is there (make test installs it), else $(BUILD).
test:
	@scripts/install-deps.sh test
	scripts/run-tests.sh $(BUILD)

demo: build
	scripts/demo.sh $(BUILD)

# Benchmarks with release-quality timing (the test suite runs them only briefly).
bench: build
	meson test -C $(BUILD) --benchmark --verbose

# The soak of docs/RELIABILITY.md, not part of `make test`: SOAK_SECONDS (default 180) of load on
# one daemon, then the daemon killed with SIGKILL SOAK_KILLS times during admissions.
SOAK_KILLS ?= 200
soak: build
	ninja -C $(BUILD) tests/integration/soak_test
	DEVMGR_BIN=$(BUILD)/cmd/devmgr/devmgr $(BUILD)/tests/integration/soak_test
	DEVMGR_BIN=$(BUILD)/cmd/devmgr/devmgr DEVMGR_FAULT_KILLS=$(SOAK_KILLS) \
	  $(BUILD)/tests/integration_faults_test --gtest_filter='*DaemonKilled*'

clean:
	rm -rf $(BUILD) $(BUILD)-san
