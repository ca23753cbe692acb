# Thin wrapper over CMake: the README's two commands.
#   make demo   install missing Debian packages, build, run scenarios/default.json
#   make test   build and run the whole test suite
#   make sanitize    the suite again in a clang build with AddressSanitizer + UndefinedBehaviorSanitizer
#   make fuzz-smoke  each libFuzzer target of the input readers for a few seconds (after make sanitize)
BUILD ?= build
JOBS ?= 2
WERROR ?= OFF
CMAKE_FLAGS ?=

SANITIZE_BUILD = build-sanitize
FUZZ_SECONDS ?= 10
SANITIZER_ENV = ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

.PHONY: all deps configure build demo test bench sanitize fuzz-smoke clean

all: build

# Debian 12 packages needed to build and test; installed with apt-get when any is missing.
PACKAGES = cmake make g++ pkg-config libsimgrid-dev libboost-graph-dev nlohmann-json3-dev doctest-dev \
           libbenchmark-dev libcli11-dev libfmt-dev libopenblas-dev libopenmpi-dev openmpi-bin \
           python3 chromium clang libclang-rt-14-dev
SUDO = $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)

deps:
	@missing=""; for p in $(PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

configure:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DDTSIM_WARNINGS_AS_ERRORS=$(WERROR) $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD) -j$(JOBS)

demo: deps build
	./$(BUILD)/dtsim run scenarios/default.json --out $(BUILD)/default.json --format json
	./$(BUILD)/dtsim run scenarios/default.json --trace $(BUILD)/default.trace.json
	@echo "wrote $(BUILD)/default.json (result) and $(BUILD)/default.trace.json (open in ui.perfetto.dev)"

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS)

sanitize:
	cmake --preset sanitize
	cmake --build $(SANITIZE_BUILD) -j$(JOBS)
	$(SANITIZER_ENV) ctest --test-dir $(SANITIZE_BUILD) --output-on-failure -j$(JOBS)

fuzz-smoke:
	$(SANITIZER_ENV) python3 tests/fuzz/run_fuzzers.py $(SANITIZE_BUILD) --seconds $(FUZZ_SECONDS)

bench: build
	./$(BUILD)/tests/dtsim_bench

clean:
	rm -rf $(BUILD) $(SANITIZE_BUILD)
