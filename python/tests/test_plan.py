"""dplace.plan: the job planner from Python, its settings files parsed as the frameworks parse them."""
import json
import pathlib
import tomllib

import pytest

import dplace

ROOT = pathlib.Path(__file__).resolve().parents[2]
LLAMA = ROOT / "models" / "configs" / "llama3-8b.json"
VGG = ROOT / "models" / "train" / "vgg16.onnx"
DYNAMIC = ROOT / "testdata" / "onnx" / "dynamic_batch_opset13.onnx"  # its batch is symbolic

# Flags of Megatron-LM's megatron/training/arguments.py that the export may write.
MEGATRON_FLAGS = {
    "--num-layers", "--hidden-size", "--ffn-hidden-size", "--num-attention-heads", "--kv-channels",
    "--seq-length", "--max-position-embeddings", "--vocab-size", "--group-query-attention",
    "--num-query-groups", "--swiglu", "--untie-embeddings-and-output-weights", "--normalization",
    "--position-embedding-type", "--disable-bias-linear", "--add-qkv-bias", "--attention-dropout",
    "--hidden-dropout", "--bf16", "--fp16", "--fp8-format", "--tensor-model-parallel-size",
    "--pipeline-model-parallel-size", "--context-parallel-size", "--sequence-parallel",
    "--num-layers-per-virtual-pipeline-stage", "--pipeline-model-parallel-layout",
    "--recompute-granularity", "--recompute-method", "--recompute-num-layers", "--micro-batch-size",
    "--global-batch-size", "--use-distributed-optimizer", "--overlap-grad-reduce",
    "--overlap-param-gather",
}
# torchtitan's torchtitan/config/job_config.py sections and fields the export may write.
TITAN_KEYS = {
    "training": {"local_batch_size", "global_batch_size", "seq_len", "mixed_precision_param"},
    "parallelism": {"data_parallel_replicate_degree", "data_parallel_shard_degree",
                    "fsdp_reshard_after_forward", "tensor_parallel_degree",
                    "context_parallel_degree", "pipeline_parallel_degree",
                    "pipeline_parallel_schedule", "pipeline_parallel_microbatch_size",
                    "pipeline_parallel_layers_per_stage", "pipeline_parallel_split_points"},
    "activation_checkpoint": {"mode"},
    "model": {"converters"},
}
DEEPSPEED_KEYS = {"train_batch_size", "train_micro_batch_size_per_gpu",
                  "gradient_accumulation_steps", "gradient_clipping", "zero_optimization", "bf16",
                  "fp16", "tensor_parallel", "pipeline", "activation_checkpointing"}


def megatron_flags(text):
    flags = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        parts = line.rstrip(" \\").split(" ", 1)
        flags[parts[0]] = parts[1] if len(parts) > 1 else ""
    return flags


@pytest.mark.parametrize("fix, frameworks", [
    (None, ("megatron", "torchtitan", "deepspeed")),
    ({"pp": 4, "schedule": "interleaved", "vp": 2}, ("megatron", "torchtitan")),
    ({"tp": 4, "pp": 2, "sp": True, "recompute": "selective"}, ("megatron",)),
    ({"tp": 2, "pp": 1, "zero": 3, "recompute": "full"}, ("torchtitan",)),
])
def test_the_settings_files_parse_and_say_the_plan(tmp_path, fix, frameworks):
    files = {f: tmp_path / f"{f}.out" for f in frameworks}
    r = dplace.plan(LLAMA, "dgx-h100:2", global_batch=256, seq_len=4096, fix=fix, exports=files)
    assert r["fits"] and r["best"]["fits"]
    cfg = r["best"]["config"]
    assert cfg["tp"] * cfg["pp"] * cfg["dp"] * cfg["cp"] == 16
    if fix:
        for key, value in fix.items():
            name = {"sp": "sequence_parallel", "vp": "virtual_stages"}.get(key, key)
            assert cfg[name] == value
    by = {e["framework"]: e for e in r["exports"]}
    if "megatron" in files:
        check_megatron(files["megatron"].read_text(), by["megatron"]["plan"]["config"])
    if "torchtitan" in files:
        check_torchtitan(files["torchtitan"].read_text(), by["torchtitan"]["plan"]["config"])
    if "deepspeed" in files:
        check_deepspeed(files["deepspeed"].read_text(), by["deepspeed"]["plan"]["config"])
    # A framework that cannot run the best plan says why, and its plan is no faster.
    best = r["best"]["predicted"]["seconds_per_iteration"]
    for e in r["exports"]:
        assert e["plan"]["predicted"]["seconds_per_iteration"] >= best * (1 - 1e-12)
        assert bool(e["refusal"]) == (e["plan"]["config"] != r["best"]["config"])


def check_megatron(text, mplan):
    flags = megatron_flags(text)
    assert set(flags) <= MEGATRON_FLAGS, set(flags) - MEGATRON_FLAGS
    assert int(flags["--tensor-model-parallel-size"]) == mplan["tp"]
    assert int(flags["--pipeline-model-parallel-size"]) == mplan["pp"]
    assert int(flags["--micro-batch-size"]) == mplan["micro_batch"]
    assert int(flags["--global-batch-size"]) == 256
    assert ("--sequence-parallel" in flags) == mplan["sequence_parallel"]
    if mplan["virtual_stages"] > 1:
        per = int(flags["--num-layers-per-virtual-pipeline-stage"])
        assert per * mplan["pp"] * mplan["virtual_stages"] == int(flags["--num-layers"])
    if "--pipeline-model-parallel-layout" in flags:
        layout = flags["--pipeline-model-parallel-layout"].strip('"')
        assert layout.startswith("E") and layout.endswith("L")
        assert layout.count("E") == 1 and layout.count("L") == 1
        assert len(layout.split("|")) == mplan["pp"] * mplan["virtual_stages"]
    if mplan["recompute"] == "selective":
        assert flags["--recompute-granularity"] == "selective"
        assert "--recompute-method" not in flags  # Megatron-LM refuses a method with selective


def check_torchtitan(text, tplan):
    titan = tomllib.loads(text)
    for section, keys in titan.items():
        assert set(keys) <= TITAN_KEYS[section], (section, set(keys) - TITAN_KEYS[section])
    par = titan["parallelism"]
    assert (par["data_parallel_replicate_degree"] * par["data_parallel_shard_degree"] *
            par["tensor_parallel_degree"] * par["pipeline_parallel_degree"] *
            par["context_parallel_degree"]) == 16
    assert par["tensor_parallel_degree"] == tplan["tp"]
    assert titan["training"]["local_batch_size"] * tplan["dp"] == 256
    assert titan["activation_checkpoint"]["mode"] in ("none", "full")
    assert titan["activation_checkpoint"]["mode"] == tplan["recompute"]


def check_deepspeed(text, dplan):
    speed = json.loads(text)
    assert set(speed) <= DEEPSPEED_KEYS
    assert (speed["train_micro_batch_size_per_gpu"] * speed["gradient_accumulation_steps"] *
            dplan["dp"]) == speed["train_batch_size"] == 256
    assert speed["zero_optimization"]["stage"] == dplan["zero"]


def test_a_framework_that_runs_no_such_plan_says_why(tmp_path):
    with pytest.raises(dplace.Error, match="exports: deepspeed: DeepSpeed's pipeline engine .*, and no plan it runs fits"):
        dplace.plan(LLAMA, "dgx-h100:2", global_batch=256, seq_len=4096,
                    fix={"pp": 4, "schedule": "interleaved", "vp": 2},
                    exports={"deepspeed": tmp_path / "ds.json"})
    assert not (tmp_path / "ds.json").exists()


def test_memory_per_rank_adds_up():
    r = dplace.plan(LLAMA, "dgx-h100:2", global_batch=256, seq_len=4096)
    for m in r["best"]["memory_per_rank"]:
        assert m["total"] == pytest.approx(m["weights"] + m["gradients"] + m["optimizer"] +
                                           m["activations"])
        assert m["total"] <= r["machine"]["gpu_memory"]
    assert 0 < r["best"]["predicted"]["mfu"] <= r["best"]["predicted"]["hfu"] < 1
    assert "Megatron-LM" in r["flop_convention"]
    assert r["why"]
    assert "family" in r["table"]


def test_a_mixture_of_experts_config_is_refused(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model_type": "mixtral", "num_local_experts": 8,
                                  "hidden_size": 4096}))
    with pytest.raises(dplace.Error, match="mixture-of-experts"):
        dplace.plan(config, "dgx-h100", global_batch=64, seq_len=4096)



def test_a_graph_is_planned_as_data_parallelism_fsdp_tp_a_pipeline_and_a_placement():
    r = dplace.plan(VGG, "a100x8", global_batch=256, time_limit=2)
    families = sorted(a["family"] for a in r["alternatives"])
    assert families == ["data-parallel", "fsdp", "op-level", "pipeline", "tensor"]
    fitting = [a for a in r["alternatives"] if a["fits"]]
    assert r["best"]["predicted"]["seconds_per_iteration"] == min(
        a["predicted"]["seconds_per_iteration"] for a in fitting)
    for a in r["alternatives"]:
        assert 1 <= a["gpus"] <= 8
        assert a["predicted"]["samples_per_s"] == pytest.approx(
            256 / a["predicted"]["seconds_per_iteration"])
    # TP splits the classifier's first two linears, a column -> row pair; the rest stays whole.
    assert [(b["kind"], b["ways"]) for b in r["tensor_parallel_blocks"]] == [("mlp", 4096)]
    assert "family" in r["table"]


def test_a_graph_of_a_symbolic_batch_is_planned_with_its_shapes_fixed():
    r = dplace.plan(DYNAMIC, "a100x8", global_batch=64, time_limit=1, shapes=["x=8x16"])
    assert r["model"]["batch"] == 8
    assert r["best"]["fits"]


CONFIG_ARGS = {"global_batch": 256, "seq_len": 4096}
GRAPH_ARGS = {"global_batch": 256, "time_limit": 1}


@pytest.mark.parametrize("model, cluster, args, kwargs, words", [
    (LLAMA, "dgx-h100:2", CONFIG_ARGS, {"fix": {"tp": 3}},
     "does not divide the model's 32 attention heads"),
    (LLAMA, "dgx-h100:2", CONFIG_ARGS, {"fix": {"tp": 2, "pp": 2, "dp": 2}}, "not the 16 GPUs"),
    (LLAMA, "dgx-h100:2", CONFIG_ARGS, {"fix": "tpp=2"}, "did you mean 'tp'"),
    (LLAMA, "dgx-h100:2", CONFIG_ARGS, {"fix": {"mbs": 3}}, "does not divide --global-batch"),
    (LLAMA, "dgx-h100:2", CONFIG_ARGS, {"dtype": "fp4"}, "--dtype"),
    (LLAMA, "dgx-h100:2", CONFIG_ARGS, {"global_batch": 0}, "--global-batch"),
    (LLAMA, "dgx-h100", {"global_batch": 64}, {}, "seq_len: required"),
    (VGG, "a100x8", GRAPH_ARGS, {"seq_len": 512}, "seq_len: applies to a config.json"),
    (VGG, "a100x8", GRAPH_ARGS, {"fix": {"tp": 2}}, "fix: applies to a config.json"),
    (VGG, "a100x8", GRAPH_ARGS, {"global_batch": 100}, "not a multiple of the graph's batch 32"),
    (LLAMA, "dgx-h100", CONFIG_ARGS, {"shapes": ["x=1x2"]}, "shapes: applies to an ONNX graph"),
    (DYNAMIC, "a100x8", GRAPH_ARGS, {}, "symbolic dimension"),
])
def test_bad_input_raises_one_line(model, cluster, args, kwargs, words):
    with pytest.raises(dplace.Error) as e:
        dplace.plan(model, cluster, **{**args, **kwargs})
    assert words in str(e.value)
    assert "\n" not in str(e.value)
