# The two commands of the README: `make run` and `make test`.
.PHONY: run test deps build bench asan-test format clean

EXAMPLE_GRAPH := testdata/dnn-partitioning/throughput-inputs/LayerGraphs/bert24_training.json

deps:
	bash scripts/install_deps.sh

build: deps
	cmake --preset release >/dev/null
	cmake --build --preset release

run: build
	./build/release/dplace place --graph $(EXAMPLE_GRAPH) --placer all --objective throughput

test: build
	ctest --preset release

asan-test: deps
	cmake --preset asan >/dev/null
	cmake --build --preset asan
	ctest --preset asan

bench: build
	./build/release/bench/sim_benchmark

format:
	clang-format -i $$(git ls-files '*.cc' '*.h')

clean:
	rm -rf build
