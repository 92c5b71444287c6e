# kfleet — the newcomer's entry points. Everything goes through CMake; this
# file only sequences: install dependencies, configure, build, run.
#   make demo    install deps, build, run `kfleet run examples/quickstart.yaml`
#   make test    install deps, build with ASan+UBSan, run the whole suite
#   make bundle  relocatable agent/CLI bundle (binaries + their libraries)
#   make bench   benchmarks (not part of test)
#   make fuzz    libFuzzer targets (clang, build-fuzz/), FUZZ_SECONDS each (300)
#   make chaos   the long chaos run: >= 2,000 tasks under kills and partitions
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
BUILD ?= build
TBUILD ?= build-test
FBUILD ?= build-fuzz
FUZZ_SECONDS ?= 300

.PHONY: deps deps-test build demo test test-build bundle bench fuzz chaos clean

deps:
	@bash deploy/install-deps.sh

deps-test:
	@bash deploy/install-deps.sh --test

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	@$(BUILD)/kfleet run examples/quickstart.yaml

test-build: deps-test
	@cmake -S . -B $(TBUILD) -DCMAKE_BUILD_TYPE=Debug -DKF_SANITIZE=ON -DKF_WERROR=ON -DBUILD_TESTING=ON >/dev/null
	@cmake --build $(TBUILD) -j $(JOBS)

test: test-build
	@cd $(TBUILD) && ctest --output-on-failure -j $(JOBS)

bundle: build
	@bash deploy/bundle.sh $(BUILD) bundle

bench: build
	@bash bench/run.sh $(BUILD)

fuzz: deps-test
	@bash tests/fuzz/run.sh --build $(FBUILD) --seconds $(FUZZ_SECONDS) --jobs $(JOBS)

# The long chaos run (docs/reliability.md): >= 2,000 tasks while agents and
# the coordinator are killed and links cut; CHAOS_ARGS="--seed N" replays one.
chaos: test-build
	@python3 tests/chaos/chaos.py --bin $(TBUILD) --tasks 2000 --agents 4 --min-faults 20 $(CHAOS_ARGS)

clean:
	rm -rf $(BUILD) $(TBUILD) $(FBUILD) bundle
