#!/usr/bin/env bash
# End-to-end tests of the dplace binary on testdata/: outputs, files, exit codes, bad input.
set -u
source "$(dirname "$0")/test_lib.sh"
DATA=testdata/dnn-partitioning
GRAPH=$DATA/throughput-inputs/LayerGraphs/bert24_training.json
EXPERT=$DATA/human-experts/bert24_training_expert.json
ONNX=models/resnet50.onnx

# json_get FILE PYTHON_EXPR: evaluates the expression with `d` bound to the parsed file.
json_get() { /usr/bin/python3 -c "import json,sys; d=json.load(open('$1')); print(($2))"; }

# A three-op graph of the dplace format, used by several sections.
cat >"$TMP/toy.json" <<'JSON'
{"format": "dplace-graph/1", "name": "toy",
 "ops": [{"name": "a", "time_s": {"gpu": 0.001}, "flops": 2e9, "param_bytes": 4e6, "outputs": ["1MiB"]},
         {"name": "b", "time_s": {"gpu": 0.002}, "flops": 4e9, "outputs": [1000]},
         {"name": "c", "flops": 1e9}],
 "edges": [{"from": "a", "to": "b"}, {"from": "a", "to": "c"}, {"from": "b", "to": "c"}]}
JSON

# Place with every placer (JSON, plan, trace); simulate its plan, the expert split, pipelines.
section_place() {
  # Place with every placer, JSON, plan and trace.
  if "$DPLACE" place --graph "$GRAPH" --placer single,round_robin,random,expert,dp --plan "$EXPERT" \
      --json --out "$TMP/plan.json" \
      --trace "$TMP/trace.json" >"$TMP/place.json"; then
    ok
    [[ $(json_get "$TMP/place.json" "len(d['results'])") == 5 ]] && ok || fail "place: want 5 results"
    [[ $(json_get "$TMP/place.json" "d['best']['placer'], round(d['best']['value'], 4)") == "('dp', 41.7458)" ]] && ok || fail "place: best"
    [[ $(json_get "$TMP/place.json" "d['best']['note']") == "optimal contiguous split (30 ideals)" ]] && ok || fail "place: dp note"
    [[ $(json_get "$TMP/place.json" "sorted(d['best'].keys())") == \
      "['devices', 'feasible', 'gap', 'lower_bound', 'note', 'objective', 'placement', 'placer', 'search_time_s', 'value']" ]] \
      && ok || fail "place: keys $(json_get "$TMP/place.json" "sorted(d['best'].keys())")"
    [[ $(json_get "$TMP/place.json" "sorted(d['best']['devices'][0].keys())") == \
      "['kind', 'load', 'memory_capacity_bytes', 'name', 'ops', 'peak_memory_bytes']" ]] \
      && ok || fail "place: device keys"
    [[ $(json_get "$TMP/plan.json" "d['format'], len(d['placement'])") == "('dplace-plan/1', 64)" ]] \
      && ok || fail "place: plan file"
    [[ $(json_get "$TMP/trace.json" "len([e for e in d['traceEvents'] if e['ph']=='X'])") -gt 64 ]] \
      && ok || fail "place: trace has too few events"
  else
    fail "place exited non-zero"
  fi
  # Simulate the expert split: the paper program's figure.
  "$DPLACE" simulate --graph "$GRAPH" --plan "$EXPERT" --json >"$TMP/sim.json" || fail "simulate"
  [[ $(json_get "$TMP/sim.json" "d['format'], round(d['best']['value'], 4), len(d['results'])") \
    == "('dplace-result/1', 49.4049, 1)" ]] && ok || fail "simulate value"
  # ...and the best plan dplace wrote (dp's optimum) reads back to the same value.
  "$DPLACE" simulate --graph "$GRAPH" --plan "$TMP/plan.json" --json >"$TMP/sim2.json" || fail "simulate plan"
  [[ $(json_get "$TMP/sim2.json" "round(d['best']['value'], 4)") == 41.7458 ]] && ok || fail "simulate plan value"
  # ...and in the paper's split format too.
  "$DPLACE" place --graph "$GRAPH" --placer expert --plan "$EXPERT" --out "$TMP/split.json" \
    --out-format paper-split >/dev/null || fail "paper-split out"
  [[ $(json_get "$TMP/split.json" "round(d['maxLoad'], 4), len(d['fpgas'])") == "(49.4049, 6)" ]] \
    && ok || fail "paper split file"

  # Pipeline schedules of the dp plan: 1F1B holds fewer micro-batches than GPipe on the first stage.
  "$DPLACE" simulate --graph "$GRAPH" --plan "$TMP/plan.json" --pipeline gpipe --microbatches 8 --json \
    --trace "$TMP/gpipe.json" >"$TMP/gpipe_out.json" && ok || fail "simulate --pipeline gpipe"
  "$DPLACE" simulate --graph "$GRAPH" --plan "$TMP/plan.json" --pipeline 1f1b --microbatches 8 --json \
    >"$TMP/1f1b_out.json" && ok || fail "simulate --pipeline 1f1b"
  [[ $(json_get "$TMP/gpipe_out.json" "d['stages'][0]['peak_in_flight']") == 8 ]] && ok || fail "gpipe in flight"
  [[ $(json_get "$TMP/1f1b_out.json" "d['stages'][0]['peak_in_flight'] < 8") == True ]] && ok || fail "1f1b in flight"
  [[ $(json_get "$TMP/gpipe.json" "len([e for e in d['traceEvents'] if e['ph'] == 'X'])") -gt 16 ]] \
    && ok || fail "pipeline trace"
  # A training step split in two, the schedule chosen with the split: the stages file says which,
  # and a zero-bubble schedule's trace has weight-gradient tasks.
  "$DPLACE" place --graph "$ONNX" --training --cluster k80x4 --stages 2 --objective pipeline \
    --schedule auto:8 --recompute auto --placer contiguous --export stages="$TMP/auto_stages.json" \
    --out "$TMP/auto_plan.json" >/dev/null && ok || fail "place --schedule auto"
  [[ $(json_get "$TMP/auto_stages.json" "d['pipeline']['schedule'] in ('1f1b', 'interleaved', 'zb-h1', 'zb-h2')") \
    == True ]] && ok || fail "the stages file's schedule"
  # ...in the frameworks' terms: a schedule class, or a zero-bubble schedule's action table (a row
  # per rank, every micro-batch's F, I and W).
  [[ $(json_get "$TMP/auto_stages.json" "d['schedule']['schedule'] == d['pipeline']['schedule'] \
      and ('schedule_class' in d['schedule']['torch_pipelining'] or \
      [len(r) for r in d['schedule']['torch_pipelining']['actions']] == [24, 24])") == True ]] \
    && ok || fail "the schedule's terms"
  # Interleaved chunks, two a GPU round the two: torch's interleaved class, three split points,
  # and simulate finds the chunks in the plan file.
  "$DPLACE" place --graph "$ONNX" --training --cluster k80x4 --stages 2 --objective pipeline \
    --schedule interleaved:2:8 --placer dp --export stages="$TMP/chunk_stages.json" \
    --out "$TMP/chunk_plan.json" >/dev/null && ok || fail "place --schedule interleaved"
  [[ $(json_get "$TMP/chunk_stages.json" "d['pipeline']['virtual_stages'], \
      d['schedule']['torch_pipelining']['schedule_class'], len(d['split_points'])") \
    == "(2, 'ScheduleInterleaved1F1B', 3)" ]] && ok || fail "the interleaved stages file"
  "$DPLACE" simulate --graph "$ONNX" --training --cluster k80x4 --stages 2 --plan "$TMP/chunk_plan.json" \
    --pipeline interleaved --json >"$TMP/chunk_run.json" && ok || fail "simulate --pipeline interleaved"
  [[ $(json_get "$TMP/chunk_run.json" "d['virtual_stages']") == 2 ]] && ok || fail "the plan's chunks"
  # Replicas: two stages of two GPUs each, in the frameworks' terms (data-parallel degree 2, four
  # of the eight micro-batches a pipeline); stages of different degrees get a reason; under auto
  # dp chooses them and says what it chose.
  "$DPLACE" place --graph "$ONNX" --training --cluster k80x4 --stages 2 --replicas 2 \
    --objective pipeline --schedule 1f1b:8 --placer dp --export stages="$TMP/replica_stages.json" \
    >/dev/null && ok || fail "place --replicas 2"
  [[ $(json_get "$TMP/replica_stages.json" "[s['device'] for s in d['stages']], \
      [s['replicas'] for s in d['pipeline']['stages']], d['schedule']['data_parallel']['degree'], \
      d['schedule']['data_parallel']['microbatches_per_pipeline'], \
      d['pipeline']['stages'][0]['allreduce_s'] > 0") \
    == "(['gpu0+gpu1', 'gpu2+gpu3'], [2, 2], 2, 4, True)" ]] && ok || fail "the replicated stages file"
  "$DPLACE" place --graph "$ONNX" --training --cluster k80x4 --stages 3 --replicas 2,1,1 \
    --objective pipeline --placer dp --export stages="$TMP/uneven_stages.json" >/dev/null \
    && ok || fail "place --replicas 2,1,1"
  [[ $(json_get "$TMP/uneven_stages.json" "d['schedule']['data_parallel']['replicas'], \
      'one data-parallel degree' in d['schedule']['data_parallel']['reason']") \
    == "([2, 1, 1], True)" ]] && ok || fail "uneven replicas: the frameworks' reason"
  "$DPLACE" place --graph "$ONNX" --training --cluster k80x4 --stages 4 --replicas auto \
    --objective pipeline --placer dp,contiguous >"$TMP/replicas_auto.txt" \
    && grep -q "^replicas: " "$TMP/replicas_auto.txt" && ok || fail "place --replicas auto"
  expect_bad_input replicas_word "--replicas: 'x' is not a number of devices from 1 to 4096" place \
    --graph "$ONNX" --training --cluster k80x4 --stages 2 --objective pipeline --replicas x
  expect_bad_input replicas_count "--replicas: '2,1' names 2 stages, and stages asks for 3" place \
    --graph "$ONNX" --training --cluster k80x4 --stages 3 --objective pipeline --replicas 2,1
  expect_bad_input replicas_uneven "--replicas: '3' groups" place \
    --graph "$ONNX" --training --cluster k80x4 --devices gpu0,gpu1,gpu2,gpu3 --objective pipeline \
    --replicas 3
  expect_bad_input replicas_step "--replicas: stages have replicas under the pipeline objective only" \
    place --graph "$ONNX" --training --cluster k80x4 --stages 2 --replicas 2 --objective step
  # A plan of groups simulates with the same groups (replicas imply the pipeline objective), and
  # without them the error says what the plan's device names are.
  "$DPLACE" place --graph "$ONNX" --training --cluster k80x4 --stages 2 --replicas 2 --placer dp \
    --out "$TMP/replica_plan.json" >/dev/null && ok || fail "place --replicas 2 --out"
  "$DPLACE" simulate --graph "$ONNX" --training --cluster k80x4 --stages 2 --replicas 2 \
    --plan "$TMP/replica_plan.json" --pipeline 1f1b --json >"$TMP/replica_run.json" \
    && [[ $(json_get "$TMP/replica_run.json" "[s['replicas'] for s in d['stages']]") == "[2, 2]" ]] \
    && ok || fail "simulate a plan of replicas"
  expect_bad_input replicas_plan "give --replicas as the plan's groups" simulate --graph "$ONNX" \
    --training --cluster k80x4 --stages 2 --plan "$TMP/replica_plan.json" --pipeline 1f1b
  "$DPLACE" place --graph "$ONNX" --training --cluster k80x4 --stages 2 --objective pipeline \
    --schedule 1f1b:8 --placer contiguous --out "$TMP/split_plan.json" >/dev/null \
    && ok || fail "place a 1F1B split"
  "$DPLACE" simulate --graph "$ONNX" --training --cluster k80x4 --stages 2 --plan "$TMP/split_plan.json" \
    --pipeline zb-h1 --trace "$TMP/zb.json" >/dev/null && ok || fail "simulate --pipeline zb-h1"
  [[ $(json_get "$TMP/zb.json" "sum(e['name'].startswith('W') for e in d['traceEvents'] if e['ph'] == 'X')") \
    == 16 ]] && ok || fail "zb-h1 trace: a W task per micro-batch and stage"
  expect_bad_input pipeline_bad "--pipeline: 'zb' is not auto or a schedule" simulate \
    --graph "$ONNX" --training --cluster k80x4 --stages 2 --plan "$TMP/split_plan.json" --pipeline zb
}

# Infeasible instances are results from every placer.
# Plan a training job from a config: table, JSON, the frameworks' settings, bad input.
section_plan() {
  local LLAMA=models/configs/llama3-8b.json
  if "$DPLACE" plan --model "$LLAMA" --cluster dgx-h100:2 --global-batch 256 --seq-len 4096 \
      --export megatron="$TMP/megatron.txt" --export torchtitan="$TMP/titan.toml" \
      --export deepspeed="$TMP/ds.json" >"$TMP/plan.txt" 2>"$TMP/plan.err" &&
    grep -q "^data-parallel\|^fsdp\|^tensor\|^pipeline\|^3d" "$TMP/plan.txt" &&
    grep -q "^why: " "$TMP/plan.txt" &&
    grep -q -- "--tensor-model-parallel-size" "$TMP/megatron.txt" &&
    /usr/bin/python3 -c "import tomllib; tomllib.load(open('$TMP/titan.toml','rb'))" &&
    [[ $(json_get "$TMP/ds.json" 'd["train_batch_size"]') == 256 ]]; then
    ok
  else
    fail "plan: $(cat "$TMP/plan.err")"
  fi
  if "$DPLACE" plan --model "$LLAMA" --cluster dgx-h100:2 --global-batch 256 --seq-len 4096 \
      --fix tp=8,pp=2,dp=1,zero=0,sp=on,mbs=2,schedule=1f1b,recompute=full --json >"$TMP/plan.json" &&
    [[ $(json_get "$TMP/plan.json" 'd["best"]["config"]["tp"], d["best"]["config"]["micro_batch"], d["best"]["config"]["recompute"]') == "(8, 2, 'full')" ]]; then
    ok
  else
    fail "plan --fix: $(head -c 300 "$TMP/plan.json")"
  fi
  expect_bad_input plan_product "tp x pp x dp x cp = 8, not the 16 GPUs" plan --model "$LLAMA" \
    --cluster dgx-h100:2 --global-batch 256 --seq-len 4096 --fix tp=2,pp=2,dp=2
  expect_bad_input plan_heads "tp=3 does not divide the model's 32 attention heads" plan \
    --model "$LLAMA" --cluster dgx-h100:2 --global-batch 256 --seq-len 4096 --fix tp=3
  expect_bad_input plan_key "unknown key 'tpp' (did you mean 'tp'?)" plan --model "$LLAMA" \
    --cluster dgx-h100:2 --global-batch 256 --seq-len 4096 --fix tpp=2
  expect_bad_input plan_nodes "the number of nodes must be between 1 and 4096" plan \
    --model "$LLAMA" --cluster dgx-h100:0 --global-batch 256 --seq-len 4096
  expect_bad_input plan_moe "mixture-of-experts" plan --model testdata/configs/mixtral-8x7b.json \
    --cluster dgx-h100 --global-batch 64 --seq-len 4096
  expect_bad_input plan_not_config "not a model config" plan --model clusters/a100x8.json \
    --cluster dgx-h100 --global-batch 64 --seq-len 4096
  expect_bad_input plan_no_fit "least memory a GPU needs is" plan \
    --model models/configs/llama3-70b.json --cluster dgx-h100 --global-batch 64 --seq-len 4096
  echo '{"model_type": "llama", "hidden_size": 4096}' >"$TMP/partial.json"
  expect_bad_input plan_missing "num_hidden_layers" plan --model "$TMP/partial.json" \
    --cluster dgx-h100 --global-batch 64 --seq-len 4096
  expect_bad_input plan_export_input "--export megatron" plan --model "$LLAMA" \
    --cluster dgx-h100 --global-batch 64 --seq-len 4096 --export megatron="$LLAMA"
  expect_bad_input plan_export_kind "--export: 'nemo=x' is not megatron=FILE" plan --model "$LLAMA" \
    --cluster dgx-h100 --global-batch 64 --seq-len 4096 --export nemo=x
  expect_bad_input plan_no_cluster "--cluster: required for a config.json" plan --model "$LLAMA" \
    --global-batch 64 --seq-len 4096
  # A graph: data parallelism, FSDP, TP of its column -> row pairs, a pipeline and an op-level
  # placement weighed.
  local VGG=models/train/vgg16.onnx
  if "$DPLACE" plan --model "$VGG" --cluster a100x8 --global-batch 256 --time-limit 2 --json \
      >"$TMP/graph_plan.json" &&
    [[ $(json_get "$TMP/graph_plan.json" 'sorted(a["family"] for a in d["alternatives"])') == "['data-parallel', 'fsdp', 'op-level', 'pipeline', 'tensor']" ]] &&
    [[ $(json_get "$TMP/graph_plan.json" 'd["best"]["predicted"]["seconds_per_iteration"] == min(a["predicted"]["seconds_per_iteration"] for a in d["alternatives"] if a["fits"])') == True ]]; then
    ok
  else
    fail "plan on a graph: $(head -c 300 "$TMP/graph_plan.json")"
  fi
  expect_bad_input plan_graph_fix "--fix: applies to a config.json, not to $VGG, a graph" plan \
    --model "$VGG" --cluster a100x8 --global-batch 256 --fix tp=2
  expect_bad_input plan_graph_batch "--global-batch: 100 is not a multiple of the graph's batch 32" \
    plan --model "$VGG" --cluster a100x8 --global-batch 100
  expect_bad_input plan_graph_shapes "fix it with --shapes x=" plan \
    --model testdata/onnx/dynamic_batch_opset13.onnx --cluster a100x8 --global-batch 64
  expect_bad_input plan_not_a_config "not a model config" plan --model testdata/torch/saved_tensors.json \
    --cluster a100x8 --global-batch 64 --seq-len 0
  expect_bad_input plan_config_time "--time-limit: applies to a graph" plan --model "$LLAMA" \
    --cluster dgx-h100 --global-batch 64 --seq-len 4096 --time-limit 3
  # Piper's input, every option at every degree, by Piper's DP.
  local PIPER=testdata/piper/bert32a100.json
  if "$DPLACE" plan --model "$PIPER" --gpus 8 --gpu-memory 8GiB --bandwidth 25GiB/s --json \
      >"$TMP/piper.json" &&
    [[ $(json_get "$TMP/piper.json" 'sum(s["tp"] * s["dp"] for s in d["best"]["config"]["stages"]) <= 8') == True ]] &&
    [[ $(json_get "$TMP/piper.json" 'round(d["best"]["predicted"]["time_per_sample"], 6)') == 0.165856 ]]; then
    ok
  else
    fail "plan on Piper's input: $(head -c 300 "$TMP/piper.json")"
  fi
  expect_bad_input plan_piper_fit "no plan of Piper's space fits 8 devices of 2.00 GiB" plan \
    --model "$PIPER" --gpus 8 --gpu-memory 2GiB
  expect_bad_input plan_piper_export "Piper's inputs have no framework settings" plan \
    --model "$PIPER" --export megatron="$TMP/m.txt"
}

section_infeasible() {
  # Infeasible instances of the paper's format are results: exit 0, "feasible": false and the reason,
  # from every placer, with a complete plan.
  paper_instance() {  # NAME MAX_CPUS NODES_JSON
    cat >"$TMP/$1.json" <<JSON
{"maxSizePerFPGA": 100, "maxFPGAs": 2, "maxCPUs": $2, "nodes": $3,
 "edges": [{"sourceId": 1, "destId": 2, "cost": 1.0}]}
JSON
  }
  node() {  # ID SUPPORTED SIZE COLOR
    echo "{\"id\": $1, \"supportedOnFpga\": $2, \"cpuLatency\": 10, \"fpgaLatency\": 1, \"isBackwardNode\": 0, \"size\": $3, \"colorClass\": $4}"
  }
  paper_instance too_big 0 "[$(node 1 1 500 1), $(node 2 1 10 2)]"
  paper_instance class_too_big 0 "[$(node 1 1 60 7), $(node 2 1 60 7)]"
  paper_instance no_cpu 0 "[$(node 1 1 10 1), $(node 2 0 10 2)]"
  for case in "too_big:exceeds" "class_too_big:exceeds" "no_cpu:may only run on [cpu]"; do
    name=${case%%:*}
    why=${case#*:}
    if "$DPLACE" place --graph "$TMP/$name.json" --placer all --evaluations 16 --json \
        --out "$TMP/$name.plan.json" \
        >"$TMP/$name.out.json" 2>"$TMP/err"; then
      [[ $(json_get "$TMP/$name.out.json" "d['best']['feasible'], all(not r['feasible'] for r in d['results'])") \
        == "(False, True)" ]] && ok || fail "$name: want feasible false from every placer"
      json_get "$TMP/$name.out.json" "d['best']['reason']" | grep -qF -- "$why" && ok \
        || fail "$name: reason $(json_get "$TMP/$name.out.json" "d['best']['reason']") lacks '$why'"
      [[ $(json_get "$TMP/$name.plan.json" "len(d['placement'])") == 2 ]] && ok || fail "$name: plan"
    else
      fail "$name: exit code $?, want 0 ($(cat "$TMP/err"))"
    fi
  done
}

# Objective latency on the paper's latency input.
section_latency() {
  # Objective latency on the paper's latency input: every result judged by single-sample latency.
  LAT=$DATA/latency-inputs/LayerGraphs/bert24_inference.json
  if "$DPLACE" place --graph "$LAT" --objective latency --placer single,dp,local_search,ilp \
      --time-limit 5 --json --out "$TMP/lat_plan.json" >"$TMP/lat.json"; then
    [[ $(json_get "$TMP/lat.json" "d['best']['objective'], d['best']['feasible']") == "('latency', True)" ]] \
      && ok || fail "latency: best"
    [[ $(json_get "$TMP/lat.json" "d['best']['value'] <= min(r['value'] for r in d['results']) and d['best']['lower_bound'] > 0") == True ]] \
      && ok || fail "latency: best value or bound"
    [[ $(json_get "$TMP/lat.json" "[r for r in d['results'] if r['placer'] == 'ilp'][0]['note'].split(':')[0]") == \
      "time or node limit, single-sample latency split" || \
      $(json_get "$TMP/lat.json" "[r for r in d['results'] if r['placer'] == 'ilp'][0]['note'].split(':')[0]") == \
      "optimal single-sample latency split" || \
      $(json_get "$TMP/lat.json" "[r for r in d['results'] if r['placer'] == 'ilp'][0]['note'].split(' ran past')[0]") == \
      "CBC" ]] && ok || fail "latency: ilp note"
    "$DPLACE" simulate --graph "$LAT" --objective latency --plan "$TMP/lat_plan.json" --json >"$TMP/lat_sim.json" \
      && [[ $(json_get "$TMP/lat_sim.json" "d['best']['value']") == $(json_get "$TMP/lat.json" "d['best']['value']") ]] \
      && ok || fail "latency: simulate of the plan differs"
  else
    fail "place --objective latency exited non-zero"
  fi
}

# ONNX models, exports and bad ONNX files.
section_onnx() {
  # ONNX models: import, training expansion, placement by node name; bad files are bad input.
  if "$DPLACE" place --graph "$ONNX" --training --cluster v100x8-nvlink --placer single,local_search \
      --time-limit 5 --json --out "$TMP/onnx_plan.json" >"$TMP/onnx.json" 2>"$TMP/onnx_err"; then
    [[ $(json_get "$TMP/onnx.json" "d['best']['feasible'], d['best']['objective']") == "(True, 'step')" ]] \
      && ok || fail "onnx: best"
    training_ops=$("$DPLACE" info --graph "$ONNX" --training --json | /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)['ops'])")
    [[ $(json_get "$TMP/onnx_plan.json" "len(d['placement']), '/conv1/Conv' in d['placement'], '/conv1/Conv/grad' in d['placement']") \
      == "($training_ops, True, True)" && $training_ops -gt 338 ]] && ok || fail "onnx: plan by node name"
    [[ ! -s $TMP/onnx_err ]] && ok || fail "onnx: unexpected stderr $(cat "$TMP/onnx_err")"
  else
    fail "onnx place exited non-zero: $(cat "$TMP/onnx_err")"
  fi
  [[ $("$DPLACE" info --graph "$ONNX" --json | /usr/bin/python3 -c "import json,sys; d=json.load(sys.stdin); print(d['ops'], d['edges'], round(d['flops'] / 32 / 1e9, 2))") \
    == "169 184 8.21" ]] && ok || fail "onnx info"
  if "$DPLACE" place --graph "$ONNX" --cluster k80x4 --objective throughput --placer pipedream \
      --export stages="$TMP/stages.json" >/dev/null &&
    # A device map is judged as eager PyTorch runs it: runtime eager on whole modules.
    "$DPLACE" place --graph "$ONNX" --cluster k80x4 --placer uniform,mcmc --time-limit 2 \
      --export device_map="$TMP/device_map.json" --json >"$TMP/device_map_run.json"; then
    [[ $(json_get "$TMP/stages.json" "d['format'], len(d['split_points']) == len(d['stages']) - 1, len(d['stages']) > 1") \
      == "('dplace-stages/1', True, True)" ]] && ok || fail "onnx: stages export"
    [[ $(json_get "$TMP/device_map_run.json" "d['best']['objective'], d['best']['feasible']") \
      == "('step', True)" ]] && ok || fail "onnx: device_map run"
    # Flat and covering: each module has exactly one key as its prefix (itself or an ancestor).
    [[ $(json_get "$TMP/device_map.json" "[sum(m == '' or k == m or k.startswith(m + '.') for m in d) for k in ('layer1.0.conv1', 'fc', 'layer4.2.conv3')], all(v in range(4) or v == 'cpu' for v in d.values()), 'layer3.2.relu_1' in d") \
      == "([1, 1, 1], True, False)" ]] && ok || fail "onnx: device_map export"
  else
    fail "onnx: place with --export exited non-zero"
  fi
  expect_bad_input bad_export "--export: 'layout=x.json'" place --graph "$ONNX" --cluster k80x4 \
    --export layout=x.json
  expect_bad_input export_two_runtimes "--export: a device map and pipeline stages" place \
    --graph "$ONNX" --cluster k80x4 --export device_map=x.json --export stages=y.json
  expect_bad_input export_map_throughput "--export: a device map is judged by its step" place \
    --graph "$ONNX" --cluster k80x4 --objective throughput --export device_map=x.json
  expect_bad_input runtime_unknown "--runtime: 'async' is not executor or eager" place \
    --graph "$ONNX" --cluster k80x4 --runtime async
  expect_bad_input schedule_bad "--schedule: 'gpipe:0' is not auto or a schedule (gpipe, 1f1b, interleaved, zb-h1 or zb-h2)" place \
    --graph "$ONNX" --cluster k80x4 --schedule gpipe:0
  expect_bad_input recompute_bad "--recompute: 'some' is not none, selective, full or auto" place \
    --graph "$ONNX" --cluster k80x4 --recompute some
  expect_bad_input option_cycle "its own start or member (mcmc -> local_search -> mcmc)" place \
    --graph "$ONNX" --cluster k80x4 --placer mcmc --opt mcmc.start=local_search \
    --opt local_search.start=mcmc
  head -c 3000 "$ONNX" >"$TMP/truncated.onnx"
  head -c 5000 /dev/urandom >"$TMP/random.onnx"
  expect_bad_input onnx_truncated "truncated.onnx: not an ONNX model" info --graph "$TMP/truncated.onnx"
  expect_bad_input onnx_random "random.onnx: not an ONNX model" place --graph "$TMP/random.onnx" \
    --cluster k80x4 --out "$TMP/o4.json"
  expect_bad_input twice_training "already has backward ops" info --graph "$GRAPH" --training
}

# --placer all on the paper's file.
section_all() {
  # `all` runs every registered placer here (the paper's file, a plan given, objective throughput)
  # but `portfolio`, which would run them again.
  "$DPLACE" place --graph "$GRAPH" --placer all --plan "$EXPERT" --time-limit 2 --evaluations 100 --json >"$TMP/all.json" \
    || fail "place all"
  [[ $(json_get "$TMP/all.json" "len(d['results'])") == $(($("$DPLACE" placers | wc -l) - 1)) ]] && ok || fail "all"
  # A family's name stands for its placers that take the objective (the exact ones on the paper's
  # model), beside placer names.
  "$DPLACE" place --graph "$GRAPH" --placer exact,single --time-limit 2 --json >"$TMP/family.json" \
    || fail "place exact,single"
  [[ $(json_get "$TMP/family.json" "sorted(r['placer'] for r in d['results'])") == \
    "$(/usr/bin/python3 -c "import json,subprocess; print(sorted([p['name'] for p in json.loads(subprocess.run(['$DPLACE', 'placers', '--json'], capture_output=True).stdout) if p['family'] == 'exact' and 'throughput' in p['objectives']] + ['single']))")" ]] \
    && ok || fail "--placer exact,single: $(json_get "$TMP/family.json" "[r['placer'] for r in d['results']]")"
}

# The step objective on preset clusters; dp on a PipeDream profile; METIS.
section_step() {
  # Step objective on a preset cluster, from a dplace graph.
  "$DPLACE" place --graph "$TMP/toy.json" --cluster k80x4 --placer single,random --json >"$TMP/toy_place.json" \
    && ok || fail "place on k80x4"
  [[ $(json_get "$TMP/toy_place.json" "d['best']['objective'], d['best']['feasible']") == "('step', True)" ]] \
    && ok || fail "toy step result"
  "$DPLACE" info --graph "$TMP/toy.json" --json >"$TMP/info.json" && ok || fail "info"
  [[ $(json_get "$TMP/info.json" "d['ops'], d['edges'], d['flops']") == "(3, 3, 7000000000.0)" ]] \
    && ok || fail "info values: $(cat "$TMP/info.json")"
  [[ $("$DPLACE" placers | wc -l) -ge 4 ]] && ok || fail "placers"

  # dp on a PipeDream profile with a preset machine.
  "$DPLACE" place --graph testdata/pipedream-profiles/resnet50.graph.txt --cluster k80x4 \
    --objective throughput --placer dp --json >"$TMP/pd.json" && ok || fail "dp on a PipeDream profile"
  [[ $(json_get "$TMP/pd.json" "d['best']['feasible'], d['best']['placer'], len(d['best']['placement'])") \
    == "(True, 'dp', 354)" ]] && ok || fail "pd result: $(json_get "$TMP/pd.json" "len(d['best']['placement'])")"
  # METIS complains on stdout about small graphs split eight ways; --json must stay JSON.
  "$DPLACE" place --graph testdata/pipedream-profiles/alexnet.graph.txt --cluster v100x8-nvlink \
    --objective step --placer metis --json >"$TMP/metis.json" && ok || fail "metis on alexnet"
  [[ $(json_get "$TMP/metis.json" "d['best']['placer']") == "metis" ]] && ok || fail "metis: stdout is not JSON"
}

# The same seed gives the same plan.
section_determinism() {
  # Determinism: the same seed gives the same plan.
  "$DPLACE" place --graph "$GRAPH" --placer random --seed 7 --out "$TMP/r1.json" >/dev/null
  "$DPLACE" place --graph "$GRAPH" --placer random --seed 7 --out "$TMP/r2.json" >/dev/null
  cmp -s "$TMP/r1.json" "$TMP/r2.json" && ok || fail "same seed, different plan"
  # ...and so does a search that stops on its evaluation budget, whatever the time limit.
  for i in 1 2; do
    "$DPLACE" place --graph "$ONNX" --training --cluster v100x8-nvlink --placer mcmc --seed 3 \
      --evaluations 3000 --time-limit 60 --out "$TMP/mcmc$i.json" >/dev/null || fail "mcmc run $i"
  done
  cmp -s "$TMP/mcmc1.json" "$TMP/mcmc2.json" && ok || fail "mcmc: same seed and evaluations, different plan"
  # Scotch maps with threads: its context must ask for determinism (GNMT-v2 showed three results).
  for i in 1 2 3; do
    "$DPLACE" place --graph testdata/baechi-gnmt/gnmt_v2_fwd.json --cluster k80x4 --placer scotch \
      --out "$TMP/scotch$i.json" >/dev/null || fail "scotch run $i"
  done
  cmp -s "$TMP/scotch1.json" "$TMP/scotch2.json" && cmp -s "$TMP/scotch1.json" "$TMP/scotch3.json" &&
    ok || fail "scotch: same seed, different plan"
}

# Bad input is one line and exit 2.
section_bad_input() {
  # Bad input: one line naming file, place and problem; exit code 2; no output file.
  expect_bad_input stages_zero "--stages: must be between 1 and 4096, not 0" \
    place --graph "$GRAPH" --stages 0 --placer single
  expect_bad_input devices_comma "--devices: an empty device name" \
    place --graph "$GRAPH" --devices , --placer single
  expect_bad_input devices_gap "--devices: an empty device name" \
    place --graph "$GRAPH" --devices fpga0,,fpga1 --placer single
  head -c 300 "$GRAPH" >"$TMP/truncated.json"
  head -c 4096 /dev/urandom >"$TMP/random.bin"
  echo '{"format": "dplace-plan/1", "placement": {"nosuchop": "fpga0"}}' >"$TMP/badplan.json"
  echo '{"format": "dplace-plan/1", "placement": {"node1": "tpu7"}}' >"$TMP/baddev.json"
  cat >"$TMP/tpu.json" <<'JSON'
{"format": "dplace-graph/1", "ops": [{"name": "a", "device_kinds": ["tpu"]}]}
JSON
  cat >"$TMP/cycle.json" <<'JSON'
{"format": "dplace-graph/1", "ops": [{"name": "a"}, {"name": "b"}],
 "edges": [{"from": "a", "to": "b"}, {"from": "b", "to": "a"}]}
JSON
  cat >"$TMP/negative.json" <<'JSON'
{"format": "dplace-graph/1", "ops": [{"name": "a", "flops": -5}]}
JSON
  expect_bad_input missing "$TMP/none.json: no such file" place --graph "$TMP/none.json" --out "$TMP/o1.json"
  expect_bad_input truncated "truncated.json: line 1, column" place --graph "$TMP/truncated.json" --out "$TMP/o2.json"
  expect_bad_input random "random.bin: " info --graph "$TMP/random.bin"
  expect_bad_input cycle "graph has a cycle: " info --graph "$TMP/cycle.json"
  expect_bad_input negative "negative.json: ops[0].flops: must not be negative" info --graph "$TMP/negative.json"
  expect_bad_input unknown_op "badplan.json: placement.nosuchop: unknown op 'nosuchop'" \
    simulate --graph "$GRAPH" --plan "$TMP/badplan.json"
  expect_bad_input unknown_device "baddev.json: placement.node1: unknown device 'tpu7'" \
    simulate --graph "$GRAPH" --plan "$TMP/baddev.json"
  cat >"$TMP/baechi.json" <<'JSON'
{"nodes": [{"id": 0, "name": "a", "op": "MatMul", "compute_time_us": {"gpu": 5}}],
 "edges": [{"src": 0, "dst": 9, "src_output_slot": 0}]}
JSON
  expect_bad_input no_device "op 'a' may only run on [tpu]" place --graph "$TMP/tpu.json" --cluster k80x4 \
    --out "$TMP/o3.json"
  expect_bad_input bad_baechi "edges[0].dst: no node with id 9" place --graph "$TMP/baechi.json" \
    --cluster k80x4
  expect_bad_input no_cluster "--cluster: none given" place --graph "$TMP/toy.json"
  expect_bad_input bad_cluster "no such file" place --graph "$TMP/toy.json" --cluster nosuch
  expect_bad_input bad_objective "--objective: 'fast'" place --graph "$GRAPH" --objective fast
  expect_bad_input bad_placer "unknown placer 'magic'" place --graph "$GRAPH" --placer magic
  expect_bad_input portfolio_bad_member "--portfolio: unknown placer 'nope'" place --graph "$GRAPH" \
    --placer portfolio --portfolio single,nope
  # A bad limit is refused before the graph loads (a large one need not be read first).
  expect_bad_input limit_before_load "--time-limit: must be between 0 and 1e6 seconds" \
    place --graph "$TMP/none.onnx" --time-limit -1
  expect_bad_input tolerance_before_load "--tolerance: must be between 0 and 1" \
    place --graph "$TMP/none.onnx" --tolerance 2
}

# Placer options and suite manifests.
section_options() {
  # Placer options (--opt PLACER.KEY=VALUE): every placer rejects a key it does not have, and a value
  # out of range, with one line; a good option is taken (and reaches portfolio's members).
  for placer in $("$DPLACE" placers --json | /usr/bin/python3 -c "import json,sys; print(' '.join(p['name'] for p in json.load(sys.stdin)))"); do
    expect_bad_input "opt_unknown_$placer" "option $placer.bogus: $placer has no option 'bogus'" \
      place --graph "$GRAPH" --placer "$placer" --opt "$placer.bogus=1"
  done
  expect_bad_input opt_range "option mcmc.chains: '0' is not an integer from 1 to 64" \
    place --graph "$GRAPH" --placer mcmc --opt mcmc.chains=0
  expect_bad_input opt_typo "did you mean 'restarts'" \
    place --graph "$GRAPH" --placer local_search --opt local_search.restart=2
  expect_bad_input opt_form "--opt: 'mcmc' is not PLACER.KEY=VALUE" place --graph "$GRAPH" --opt mcmc
  expect_bad_input opt_member "option mcmc.epoch: '-1'" place --graph "$TMP/toy.json" \
    --cluster k80x4 --placer portfolio --portfolio single,mcmc --opt mcmc.epoch=-1
  if "$DPLACE" place --graph "$GRAPH" --placer mcmc --evaluations 200 --opt mcmc.chains=3 \
      --json >"$TMP/opt.json" 2>"$TMP/err"; then
    [[ $(json_get "$TMP/opt.json" "d['best']['note']") == *"3 chains"* ]] && ok \
      || fail "opt: mcmc.chains=3 not taken: $(json_get "$TMP/opt.json" "d['best']['note']")"
  else
    fail "opt: mcmc.chains=3 exited non-zero: $(cat "$TMP/err")"
  fi
  "$DPLACE" placers --options | grep -q "^    mcmc.chains = 2 " && ok || fail "placers --options: mcmc.chains"
  # A suite manifest of one's own, with options; a bad one is one line.
  cat >"$TMP/suite.json" <<'JSON'
{"format": "dplace-suite/1", "description": "one model", "objective": "step",
 "placers": ["single", "mcmc"], "options": ["mcmc.chains=3"],
 "workloads": [{"files": ["{models}/resnet50.onnx"], "name": "{stem}@{cluster}", "clusters": ["k80x4"]}]}
JSON
  if "$DPLACE" bench --suite "$TMP/suite.json" --evaluations 200 --json >"$TMP/suite_out.json" 2>"$TMP/err"; then
    [[ $(json_get "$TMP/suite_out.json" "d['workloads'][0]['workload'], d['workloads'][0]['results'][1]['options']") == \
      "('resnet50@k80x4', ['mcmc.chains=3'])" ]] && ok || fail "bench manifest: $(cat "$TMP/suite_out.json" | head -c 300)"
  else
    fail "bench manifest exited non-zero: $(cat "$TMP/err")"
  fi
  sed 's/mcmc.chains=3/mcmc.chain=3/' "$TMP/suite.json" >"$TMP/suite_bad.json"
  expect_bad_input suite_bad_option "did you mean 'chains'" bench --suite "$TMP/suite_bad.json"
  expect_bad_input suite_unknown "--suite: 'modles' is not a suite (did you mean 'models'?)" bench --suite modles
}

# Output paths, modes and links.
section_outputs() {
  # Output paths are checked before any search.
  expect_bad_input unwritable "--out: $TMP/nodir/out.json: folder $TMP/nodir does not exist" \
    place --graph "$GRAPH" --placer single --out "$TMP/nodir/out.json"
  expect_bad_input same_output "--trace: $TMP/same.json is also the file of --out" \
    place --graph "$GRAPH" --placer single --out "$TMP/same.json" --trace "$TMP/same.json"
  expect_bad_input empty_output "--out: the file name is empty" place --graph "$GRAPH" --placer single --out ""
  # A read-only plan keeps its mode, and a link stays a link to the new plan.
  : >"$TMP/mode.json"
  chmod 600 "$TMP/mode.json"
  ln -s "$TMP/mode.json" "$TMP/link.json"
  "$DPLACE" place --graph "$GRAPH" --placer single --out "$TMP/link.json" >/dev/null
  [[ -L $TMP/link.json && $(stat -c %a "$TMP/mode.json") == 600 && -s $TMP/mode.json ]] && ok \
    || fail "mode or link lost on rewrite"
  # No output replaces an input, under any name; a chain of links is followed to its end; a
  # special file is written in place, not replaced; a write that fails says so.
  cp "$DATA/throughput-inputs/LayerGraphs/bert24_training.json" "$TMP/in.json"
  cp "$TMP/in.json" "$TMP/in.orig"
  ln -s in.json "$TMP/in_link1"
  ln -s in_link1 "$TMP/in_link2"
  ln "$TMP/in.json" "$TMP/in_hard"
  expect_bad_input out_is_graph "--out: $TMP/in.json: is an input of this run" \
    place --graph "$TMP/in.json" --placer single --out "$TMP/in.json"
  expect_bad_input out_through_links "--out: $TMP/in_link2: is the input $TMP/in.json of this run" \
    place --graph "$TMP/in.json" --placer single --out "$TMP/in_link2"
  expect_bad_input trace_is_hard_link "--trace: $TMP/in_hard: is the input" \
    place --graph "$TMP/in.json" --placer single --trace "$TMP/in_hard"
  expect_bad_input export_is_graph "--export stages: $TMP/./in.json: is the input" \
    place --graph "$TMP/in.json" --placer uniform --objective pipeline --export "stages=$TMP/./in.json"
  "$DPLACE" place --graph "$TMP/in.json" --placer single --out "$TMP/plan.json" >/dev/null
  expect_bad_input trace_is_plan "--trace: $TMP/plan.json: is an input of this run" \
    simulate --graph "$TMP/in.json" --plan "$TMP/plan.json" --trace "$TMP/plan.json"
  cmp -s "$TMP/in.json" "$TMP/in.orig" && [[ -L $TMP/in_link2 ]] && ok || fail "an input was replaced"
  ln -s chained.json "$TMP/chain1"
  ln -s chain1 "$TMP/chain2"
  "$DPLACE" place --graph "$GRAPH" --placer single --out "$TMP/chain2" >/dev/null
  [[ -L $TMP/chain1 && -L $TMP/chain2 && -s $TMP/chained.json ]] && ok || fail "link chain lost"
  mkfifo "$TMP/fifo"
  expect_bad_input fifo_without_reader "$TMP/fifo: cannot open for writing: a FIFO with no" \
    place --graph "$GRAPH" --placer single --out "$TMP/fifo"
  cat "$TMP/fifo" >"$TMP/from_fifo" &
  sleep 0.2
  "$DPLACE" place --graph "$GRAPH" --placer single --out "$TMP/fifo" >/dev/null
  wait
  [[ -p $TMP/fifo ]] && grep -q dplace-plan "$TMP/from_fifo" && ok || fail "FIFO not written in place"
  "$DPLACE" place --graph "$GRAPH" --placer single --out /dev/null >/dev/null && [[ -c /dev/null ]] \
    && ok || fail "/dev/null not written in place"
  expect_bad_input full_device "/dev/full: write failed: No space left on device" \
    place --graph "$GRAPH" --placer single --out /dev/full
  expect_bad_input directory "is a directory" info --graph "$TMP"
  expect_bad_input bad_schedule "--pipeline: 'zigzag'" simulate --graph "$GRAPH" --plan "$EXPERT" --pipeline zigzag
  expect_bad_input cli_flags "--graph is required" place
  expect_bad_input bad_suite "--suite: 'bogus' is not" bench --suite bogus
  expect_bad_input bad_coarsen "--coarsen: must not be negative" place --graph "$GRAPH" --coarsen -1
  expect_bad_input bad_evaluations "--evaluations: must not be negative" place --graph "$GRAPH" \
    --evaluations -1
  expect_bad_input report_folder "--report: $TMP/nodir/r.html: folder" bench --suite models \
    --report "$TMP/nodir/r.html"
  cp bench/suites/models.json "$TMP/suite.json"
  expect_bad_input report_is_suite "--report: $TMP/suite.json: is an input of this run" \
    bench --suite "$TMP/suite.json" --report "$TMP/suite.json"
}

# Typos, bounds and terminal escapes.
section_typos() {
  # Typos get a suggestion; JSON that would be read wrongly is refused where it is wrong.
  expect_bad_input flag_typo "'--time-limt' is not a flag of place (did you mean '--time-limit'?)" \
    place --graph "$GRAPH" --time-limt 3
  expect_bad_input command_typo "did you mean 'place'?" plce
  expect_bad_input placer_typo "unknown placer 'mcmcc' (did you mean 'mcmc'?)" place --graph "$GRAPH" \
    --placer mcmcc
  /usr/bin/python3 -c "
import json; j = json.load(open('clusters/k80x4.json')); j['devices'][0]['peak_flop'] = 1e12
json.dump(j, open('$TMP/typo_cluster.json', 'w'))"
  expect_bad_input cluster_key_typo "devices[0]: unknown key 'peak_flop' (did you mean 'peak_flops'?)" \
    place --graph "$TMP/toy.json" --cluster "$TMP/typo_cluster.json"
  echo '{"format": "dplace-graph/1", "ops": [{"name": "a", "flops": 1e999}]}' >"$TMP/overflow.json"
  expect_bad_input number_overflow "line 1, column" info --graph "$TMP/overflow.json"
  echo '{"format": "dplace-graph/1", "ops": [{"name": "a", "flops": 1, "flops": 2}]}' >"$TMP/twice.json"
  expect_bad_input duplicate_key "key 'flops' is given twice" info --graph "$TMP/twice.json"
  [[ $("$DPLACE" --version) == "dplace "* ]] && ok || fail "--version"
  # Numbers beyond the documented bounds are refused where they are (docs/formats.md).
  cat >"$TMP/huge.json" <<'JSON'
{"format": "dplace-graph/1", "ops": [{"name": "a", "time_s": {"gpu": 1e308}, "device_kinds": ["gpu"]},
 {"name": "b", "time_s": {"gpu": 1e308}, "device_kinds": ["gpu"]}], "edges": [{"from": "a", "to": "b"}]}
JSON
  expect_bad_input huge_time "op 'a': time on 'gpu' is 1e+308 (above the bound 1e+06)" \
    place --graph "$TMP/huge.json" --cluster k80x4 --placer heft
  /usr/bin/python3 -c "
import json; j = json.load(open('clusters/k80x4.json')); j['default_link']['latency'] = 1e308
json.dump(j, open('$TMP/slow_link.json', 'w'))"
  expect_bad_input huge_latency "default_link.latency: must be at most 1e6 s" \
    place --graph "$TMP/toy.json" --cluster "$TMP/slow_link.json"
  # Terminal escapes in a file never reach the terminal raw.
  echo '{"format": "dplace-graph/1", "ops": [{"name": "a\u001b[31m"}, {"name": "a\u001b[31m"}]}' \
    >"$TMP/escape.json"
  "$DPLACE" info --graph "$TMP/escape.json" 2>"$TMP/err" >/dev/null
  [[ $? -eq 2 ]] && ! grep -q $'\033' "$TMP/err" && grep -qF 'a\x1b[31m' "$TMP/err" && ok \
    || fail "escape characters echoed raw: $(cat -v "$TMP/err")"
}

# --unit and --shapes.
section_units() {
  # --unit module:2 keeps GPT-2's blocks whole: every split falls between blocks (h.N).
  "$DPLACE" place --graph testdata/torch/gpt2_small.onnx --cluster v100x8-nvlink --objective throughput \
    --placer dp --unit module:2 --time-limit 20 --export stages="$TMP/blocks.json" >/dev/null 2>&1
  [[ $(json_get "$TMP/blocks.json" "all(m == '' or m.split('.')[0] in ('lm_head', 'ln_f', 'wte', 'wpe') or len(m.split('.')) >= 2 and m.split('.')[0] == 'h' and d['stages'][i + 1]['first'].startswith('/' + '.'.join(m.split('.')[:2]) + '/') for i, m in enumerate(d['split_modules'])) and len(d['split_modules']) > 1") \
    == True ]] && ok || fail "--unit module:2: $(json_get "$TMP/blocks.json" "d['split_points']")"
  # --export stages judges the split by its schedule: objective pipeline, the value the file reports.
  "$DPLACE" place --graph testdata/torch/gpt2_small.onnx --training --cluster a100x8 --stages 2 \
    --placer dp --unit module:2 --json --export stages="$TMP/scheduled.json" >"$TMP/scheduled_run.json" 2>/dev/null
  [[ $(/usr/bin/python3 -c "import json; r=json.load(open('$TMP/scheduled_run.json'))['best']; s=json.load(open('$TMP/scheduled.json')); print(r['objective'], abs(r['value'] - s['pipeline']['time_per_microbatch_s']) < 1e-12 * r['value'])") \
    == "pipeline True" ]] && ok || fail "--export stages: objective pipeline, the file's time"
  # A pipeline's units are its blocks unless asked: --stages without --unit splits GPT-2 as
  # --unit blocks does, between blocks; a graph that names no modules keeps its ops.
  "$DPLACE" place --graph testdata/torch/gpt2_small.onnx --training --cluster k80x4 --stages 2 \
    --placer dp --export stages="$TMP/default_units.json" >/dev/null 2>&1 && ok || fail "--stages, no --unit"
  [[ $(json_get "$TMP/default_units.json" "d['split_modules']") == "['h.8']" ]] \
    && ok || fail "--stages: blocks by default: $(json_get "$TMP/default_units.json" "d['split_modules']")"
  "$DPLACE" place --graph "$GRAPH" --stages 2 --placer single >/dev/null && ok || fail "--stages, no modules"
  expect_bad_input bad_unit "--unit: 'layer' is not op, blocks, module or module:DEPTH" info --graph "$GRAPH" --unit layer
  # A dynamic batch axis is fixed with --shapes.
  DYN=testdata/onnx/dynamic_batch_opset13.onnx
  expect_bad_input symbolic_axis "input 'x' has a symbolic dimension 0: its shapes cannot be inferred; fix it with --shapes x=" \
    info --graph "$DYN"
  [[ $("$DPLACE" info --graph "$DYN" --shapes x=64x16 --json | /usr/bin/python3 -c "import json,sys; print(int(json.load(sys.stdin)['flops']))") \
    == $((64 * (2 * 16 * 32 + 32 + 32 + 2 * 32 * 4 + 4))) ]] && ok || fail "--shapes: FLOPs at batch 64"
  expect_bad_input shapes_unknown_input "--shapes: the model has no input 'y'" info --graph "$DYN" --shapes y=4x16
  expect_bad_input shapes_bad_dims "--shapes: 'x=4xq'" info --graph "$DYN" --shapes x=4xq
}

# --robust and --step-model.
section_robust() {
  # --robust K judges every plan also on K variants of the model; --robust-objective makes the
  # searches minimise their worst, and the plan written is the best by it. simulate judges a plan
  # under another step model, and on the variants too.
  BAECHI=testdata/baechi-check
  if "$DPLACE" place --graph $BAECHI/inception_v3_fwd.json --cluster $BAECHI/baechi4.json \
      --placer m_etf,mcmc --evaluations 3000 --robust 4 --robust-objective worst --json \
      --out "$TMP/robust_plan.json" >"$TMP/robust.json" 2>"$TMP/err"; then
    [[ $(json_get "$TMP/robust.json" "[(len(r['robust']['values']), r['robust']['worst'] == max(r['robust']['values']), r['robust']['median'] == sorted(r['robust']['values'])[1] / 2 + sorted(r['robust']['values'])[2] / 2, r['robust']['value'] == r['robust']['worst'], r['robust']['optimised']) for r in d['results']]") \
      == "[(4, True, True, True, True), (4, True, True, True, True)]" ]] && ok \
      || fail "--robust: $(json_get "$TMP/robust.json" "[r.get('robust') for r in d['results']]")"
    [[ $(json_get "$TMP/robust.json" "d['best']['robust']['value'] == min(r['robust']['value'] for r in d['results'])") \
      == True ]] && ok || fail "--robust-objective: the best is not the best by the worst variant"
    mcmc_worst=$(json_get "$TMP/robust.json" "d['results'][1]['robust']['worst']")
    [[ $(json_get "$TMP/robust.json" "d['results'][1]['robust']['worst'] <= d['results'][0]['robust']['worst']") \
      == True ]] && ok || fail "--robust-objective: mcmc's worst is above its start's"
    # The same plan simulated: the same variants, so the same worst.
    [[ $("$DPLACE" simulate --graph $BAECHI/inception_v3_fwd.json --cluster $BAECHI/baechi4.json \
      --plan "$TMP/robust_plan.json" --robust 4 --json | /usr/bin/python3 -c \
      "import json,sys; print(json.load(sys.stdin)['best']['robust']['worst'])") == "$mcmc_worst" ]] \
      && ok || fail "simulate --robust: not the worst place reported"
  else
    fail "place --robust exited non-zero: $(cat "$TMP/err")"
  fi
  "$DPLACE" place --graph $BAECHI/inception_v3_fwd.json --cluster $BAECHI/baechi4.json \
    --placer single,m_etf --robust 3 >"$TMP/robust.txt" 2>&1
  grep -q "median of 3  worst of 3" "$TMP/robust.txt" && ok || fail "--robust table: $(head -4 "$TMP/robust.txt")"
  # Placeto's simulator (one bus per device, no latency) differs from dplace's on a split plan.
  step_of() {  # PLAN [STEP_MODEL]
    "$DPLACE" simulate --graph $BAECHI/inception_v3_fwd.json --cluster $BAECHI/baechi4.json \
      --plan "$1" ${2:+--step-model "$2"} --json | /usr/bin/python3 -c \
      "import json,sys; print(json.load(sys.stdin)['best']['value'])"
  }
  if [[ -e $TMP/robust_plan.json ]]; then
    [[ $(step_of "$TMP/robust_plan.json" per_pair,gap) == $(step_of "$TMP/robust_plan.json") && \
      $(step_of "$TMP/robust_plan.json" per_device,no_latency) != $(step_of "$TMP/robust_plan.json") ]] \
      && ok || fail "simulate --step-model"
  fi
  expect_bad_input robust_range "--robust: must be between 0 and 64 variants, got 65" \
    place --graph "$GRAPH" --robust 65
  expect_bad_input robust_objective "--robust-objective: 'q2' is not worst, median or qQ" \
    place --graph "$GRAPH" --robust 2 --robust-objective q2
  expect_bad_input robust_objective_alone "--robust-objective: needs --robust K" \
    bench --suite models --robust-objective worst
  expect_bad_input robust_spread "--robust-spread: must be between 0 and 2" \
    simulate --graph "$GRAPH" --plan "$EXPERT" --robust 2 --robust-spread 3
  expect_bad_input step_model "--step-model: 'fast' is not per_pair, per_device, gap, arrival or no_latency" \
    simulate --graph $BAECHI/inception_v3_fwd.json --cluster $BAECHI/baechi4.json \
    --plan "$TMP/robust_plan.json" --step-model per_device,fast
}
# Runs the sections named as arguments (all of them without), each a CTest test of its own.
run_sections "$@"
for f in o1 o2 o3 o4; do
  [[ -e $TMP/$f.json ]] && fail "partial output $f.json was written" || ok
done
ls "$TMP" | grep -q '\.tmp\.' && fail "temporary file left behind" || ok

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
