# Thin wrapper over CMake + CTest. Every target installs missing Debian packages first
# (scripts/install-deps.sh is idempotent and quick when everything is present).
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
# ccache: hash paths relative to the checkout so a fresh clone elsewhere still hits the cache.
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1

.PHONY: all deps configure build test demo bench bench-twin fuzz sanitize sanitize-ci sanitize-thread soak soak-ci kernel-matrix clean

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD)/build.ninja: | deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

configure: deps $(BUILD)/build.ninja

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# The soak tests (label soak) run apart: `make soak-ci` (60 s) and `make soak` (minutes).
test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 900 -LE soak

# Builds only the `duet` binary it runs (not the test suite or the benchmarks).
demo: configure
	cmake --build $(BUILD) --target duet -j $(JOBS)
	bash scripts/demo.sh $(BUILD)

bench: build
	bash scripts/bench.sh $(BUILD)

# The serving model against the real server on this machine (docs/serving.md "The host twin"): ~3 min.
bench-twin: build
	bash bench/server/host_twin.sh $(BUILD)

# libFuzzer targets, FUZZ_SECONDS (default 25) each, clang + ASan + UBSan in build-fuzz/.
fuzz: deps
	bash scripts/fuzz.sh

# The whole test suite under ASan + UBSan (GCC) in build-asan/; docs/testing.md.
sanitize: deps
	JOBS=$(JOBS) bash scripts/sanitize.sh address

# CI's share: kernels, core, format and graph unit tests under ASan + UBSan (scripts/sanitize.sh address-ci).
sanitize-ci: deps
	JOBS=$(JOBS) bash scripts/sanitize.sh address-ci

# The server and runtime tests under TSan in build-tsan/.
sanitize-thread: deps
	JOBS=$(JOBS) bash scripts/sanitize.sh thread

# Soak and fault test against the real server: 60 s (CI) or DUET_SOAK_SECONDS (default 300).
soak-ci: build
	cd $(BUILD) && ctest --output-on-failure -R '^soak\.ci$$'

soak: build
	cd $(BUILD) && ctest --output-on-failure -R '^soak\.long$$'

# kernels_test for gcc and clang x every build type x no sanitizer / ASan / UBSan / TSan.
kernel-matrix: deps
	JOBS=$(JOBS) bash scripts/kernel-matrix.sh

clean:
	rm -rf $(BUILD) build-fuzz build-asan build-tsan build-matrix
