# The two set-up commands of README.md: `make demo` and `make test`. Each installs the Debian
# packages it needs (as root), configures build/ with Meson and compiles, then runs.
BUILD ?= build

.PHONY: all build test demo bench clean

all: build

build:
	@scripts/install-deps.sh build
	@[ -f $(BUILD)/build.ninja ] || meson setup $(BUILD)
	ninja -C $(BUILD)

test:
	@scripts/install-deps.sh test
	@[ -f $(BUILD)/build.ninja ] || meson setup $(BUILD)
	ninja -C $(BUILD)
	scripts/run-tests.sh $(BUILD)

demo: build
	scripts/demo.sh $(BUILD)

# Benchmarks with release-quality timing (the test suite runs them only briefly).
bench: build
	meson test -C $(BUILD) --benchmark --verbose

clean:
	rm -rf $(BUILD) $(BUILD)-san
