# Thin wrapper over CMake: the README's two commands.
#   make demo   install missing Debian packages, build, run scenarios/default.json
#   make test   build and run the whole test suite
BUILD ?= build
JOBS ?= 2
WERROR ?= OFF
CMAKE_FLAGS ?=

.PHONY: all deps configure build demo test bench clean

all: build

# Debian 12 packages needed to build and test; installed with apt-get when any is missing.
PACKAGES = cmake make g++ pkg-config libsimgrid-dev libboost-graph-dev nlohmann-json3-dev doctest-dev \
           libbenchmark-dev libcli11-dev libfmt-dev libopenblas-dev libopenmpi-dev openmpi-bin \
           python3 chromium
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

bench: build
	./$(BUILD)/tests/dtsim_bench

clean:
	rm -rf $(BUILD)
