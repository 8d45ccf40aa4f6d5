# The two set-up commands of README.md: `make demo` and `make test`. Each installs the Debian
# packages it needs (as root), configures build/ with Meson and compiles, then runs.
BUILD ?= build

.PHONY: all configure build devmgr test tsan demo bench soak clean

all: build

configure:
	@scripts/install-deps.sh build
	@[ -f $(BUILD)/build.ninja ] || meson setup $(BUILD)

# Everything: the program, the library, the tests, the benchmarks and the examples.
build: configure
	ninja -C $(BUILD)

# The devmgr program alone, what the demo runs.
devmgr: configure
	ninja -C $(BUILD) cmd/devmgr/devmgr

# scripts/run-tests.sh configures and compiles what the tests need: $(BUILD)-san with clang's
# sanitizers when clang is there (make test installs it), else $(BUILD).
test:
	@scripts/install-deps.sh test
	scripts/run-tests.sh $(BUILD)

# The ThreadSanitizer run of docs/RELIABILITY.md, not in `make test` (it does not fit its time
# budget on a clean machine; .ci/run runs it after `make test` where its cache is warm): builds
# Debian's Abseil and gRPC sources with -fsanitize=thread once per machine (cached outside the
# clone), then $(BUILD)-tsan, and runs the concurrency-heavy suites.
tsan:
	@scripts/install-deps.sh test
	scripts/run-tsan.sh $(BUILD)-tsan

demo: devmgr
	scripts/demo.sh $(BUILD)

# Benchmarks with release-quality timing (the test suite runs them only briefly).
bench: build
	meson test -C $(BUILD) --benchmark --verbose

# The soak of docs/RELIABILITY.md, not part of `make test`: SOAK_SECONDS (default 180) of load on
# one daemon, then the daemon killed with SIGKILL SOAK_KILLS times during admissions, and as many
# times during admissions and removals of pods with DRA claims (prepares and unprepares).
SOAK_KILLS ?= 200
soak: build
	ninja -C $(BUILD) tests/integration/soak_test
	DEVMGR_BIN=$(BUILD)/cmd/devmgr/devmgr $(BUILD)/tests/integration/soak_test
	DEVMGR_BIN=$(BUILD)/cmd/devmgr/devmgr DEVMGR_FAULT_KILLS=$(SOAK_KILLS) \
	  $(BUILD)/tests/integration_faults_test --gtest_filter='*DaemonKilled*'
	DEVMGR_BIN=$(BUILD)/cmd/devmgr/devmgr DEVMGR_FAULT_KILLS=$(SOAK_KILLS) \
	  $(BUILD)/tests/integration_dra_test --gtest_filter='*DaemonKilledDuringPrepareAndUnprepare*'

clean:
	rm -rf $(BUILD) $(BUILD)-san
