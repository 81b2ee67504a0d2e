# The two commands of the README: `make run` and `make test`.
.PHONY: run test deps build bench asan-test format clean

EXAMPLE_GRAPH := models/train/resnet50.onnx
EXAMPLE_CLUSTER := v100x8-nvlink

deps:
	bash scripts/install_deps.sh

build: deps
	cmake --preset release >/dev/null
	cmake --build --preset release

PLAN_MODEL := models/configs/llama3-8b.json
PLAN_CLUSTER := dgx-h100:2

run: build
	./build/release/dplace plan --model $(PLAN_MODEL) --cluster $(PLAN_CLUSTER) --global-batch 256 \
	  --seq-len 4096 --export megatron=build/example_megatron.txt \
	  --export torchtitan=build/example_torchtitan.toml --export deepspeed=build/example_deepspeed.json
	./build/release/dplace place --graph $(EXAMPLE_GRAPH) --training --cluster $(EXAMPLE_CLUSTER) \
	  --placer one-shot,search,exact --time-limit 10 --out build/example_plan.json \
	  --trace build/example_trace.json
	./build/release/dplace plan --model $(EXAMPLE_GRAPH) --cluster $(EXAMPLE_CLUSTER) \
	  --global-batch 256 --time-limit 4

test: build
	ctest --preset release

asan-test: deps
	cmake --preset asan >/dev/null
	cmake --build --preset asan
	ctest --preset asan

bench: build
	./build/release/bench/sim_benchmark
	./build/release/bench/paper_dp_benchmark
	./build/release/bench/incremental_benchmark
	./build/release/bench/large_graph_benchmark
	./build/release/bench/learn_benchmark

format:
	clang-format -i $$(git ls-files '*.cc' '*.h')

clean:
	rm -rf build
