"""What a training step keeps, through from_module, against PyTorch's own count on five models
users write (tests/user_models.py): a decoder LLM, an MoE stack, a two-tower model, a UNet and a
CNN with BatchNorm."""

import itertools

import pytest

torch = pytest.importorskip("torch")

import dplace  # noqa: E402
import dplace.torch as dt  # noqa: E402
import user_models  # noqa: E402


@pytest.mark.parametrize("name", user_models.NAMES)
def test_saved_activations_match_what_autograd_saves(name):
    model, inputs = user_models.build(name)
    g = dt.from_module(model, inputs)
    theirs = user_models.saved_by_autograd(model, inputs)
    assert g.saved_activation_bytes == pytest.approx(theirs, rel=0.10)


@pytest.mark.parametrize("name", user_models.NAMES)
def test_recording_leaves_the_model_as_it_was(name):
    model, inputs = user_models.build(name)
    model.eval()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    dt.graph_dict(model, inputs, training=True)
    assert not model.training
    for k, v in model.state_dict().items():
        assert torch.equal(v, state[k]), k


def test_views_and_in_place_results_allocate_nothing():
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(8, 8)
            self.act = torch.nn.ReLU(inplace=True)

        def forward(self, x):
            return self.act(self.fc(x)).view(4, 2, 8).transpose(0, 1)

    doc = dt.graph_dict(Net(), (torch.randn(4, 2, 8),))
    outputs = {op["type"]: op["outputs"][0] for op in doc["ops"]}
    assert outputs["ReLU"] == {"bytes": 256, "view_of": {"op": "/fc/fc", "output": 0}}
    assert outputs["view"]["view_of"]["op"] == "/act/act"
    assert outputs["transpose"]["view_of"]["op"].endswith("view")
    assert outputs["Linear"] == 256


def test_max_pooling_keeps_its_indices_and_dropout_its_mask():
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.MaxPool2d(2),
                                torch.nn.Dropout(0.5), torch.nn.Flatten(), torch.nn.Linear(64, 2))
    doc = dt.graph_dict(model, (torch.randn(2, 3, 10, 10),), training=True)
    saved = {op["type"]: op.get("saved_bytes", 0) for op in doc["ops"]}
    assert saved["MaxPool2d"] == 2 * 4 * 4 * 4 * 8  # int64 indices shaped like the output
    assert saved["Dropout"] >= 2 * 4 * 4 * 4  # the mask, a byte or more per element
    assert saved["Conv2d"] == 0


def test_the_one_device_training_peak_holds_weights_states_and_what_backward_keeps():
    model, inputs = user_models.build("decoder", batch=8)
    g = dt.from_module(model, inputs, training=True)
    problem = dplace.Problem(g, dplace.load_cluster("a100x8"), "step")
    result = dplace.place(problem, "single")
    peak = max(d["peak_memory_bytes"] for d in result.devices)
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    saved = user_models.saved_by_autograd(model, inputs)
    # weights, gradients and Adam's two moments, what backward keeps, and what is alive at the
    # turn (the logits): within 15%.
    logits = 8 * 32 * 512 * 4
    assert peak == pytest.approx(4 * params + saved + logits, rel=0.15)


def _block_of(op_name):
    """The decoder's top-level block an op belongs to: "embed", "layers.2", "norm", "head"."""
    module = op_name.lstrip("/").split("/")[0]
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "layers" else parts[0]


def _stage_saved_by_autograd(model, inputs, stage_of_block):
    """Per stage, the bytes autograd saves while the stage's blocks run (each storage once per
    stage, parameters, buffers and inputs left out), and the stage's parameter bytes."""
    def key(t):
        return t._storage().data_ptr()

    outside = {key(t) for t in list(model.parameters()) + list(model.buffers())}
    outside.update(key(t) for t in inputs)
    current = [None]
    hooks = []
    for name, module in model.named_modules():
        if name in stage_of_block:
            stage = stage_of_block[name]
            hooks.append(module.register_forward_pre_hook(
                lambda m, a, s=stage: current.__setitem__(0, s)))
    saved = {}

    def pack(t):
        if key(t) not in outside:
            saved.setdefault(current[0], {}).setdefault(key(t), t._storage().nbytes())
        return t

    model.train()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(*inputs)
    for h in hooks:
        h.remove()
    params = {}
    for name, p in model.named_parameters():
        block = _block_of("/" + name)
        s = stage_of_block[block]
        params[s] = params.get(s, 0) + p.numel() * p.element_size()
    return {s: sum(v.values()) for s, v in saved.items()}, params


def _onnx_training_graph(model, inputs, tmp_path, **load):
    """The model exported in training mode (parameters as graph inputs), loaded as a step."""
    path = str(tmp_path / "model.onnx")
    model.train()
    torch.onnx.export(model, inputs, path, training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, opset_version=14, export_params=False)
    return dplace.load_graph(path, training=True, **load)


@pytest.mark.parametrize("path", ["from_module", "onnx"])
@pytest.mark.parametrize("stages", [2, 4])
def test_one_f_one_b_stage_peaks_match_pytorchs_per_stage_count(stages, path, tmp_path):
    model, inputs = user_models.build("decoder", batch=8)
    blocks = ["embed"] + [f"layers.{i}" for i in range(4)] + ["norm", "head"]
    # The layers split evenly; the embedding goes with the first stage, the head with the last.
    per = 4 // stages
    stage_of_block = {"embed": 0, "norm": stages - 1, "head": stages - 1}
    stage_of_block.update({f"layers.{i}": i // per for i in range(4)})
    g = (dt.from_module(model, inputs, training=True) if path == "from_module"
         else _onnx_training_graph(model, inputs, tmp_path))
    problem = dplace.Problem(g, "a100x8", stages=stages)
    assert problem.num_devices == stages
    # Ops of no module (an exported constant) go with the first stage.
    plan = {op: f"gpu{stage_of_block.get(_block_of(op), 0)}" for op in g.op_names()}
    microbatches = 8
    r = dplace.pipeline(problem, plan, "1f1b", microbatches)
    assert r["feasible"]
    saved, params = _stage_saved_by_autograd(model, inputs, stage_of_block)
    assert len(blocks) == len(stage_of_block)
    for s, stage in enumerate(r["stages"]):
        assert stage["name"] == f"gpu{s}"
        in_flight = min(stages - s, microbatches)
        assert stage["peak_in_flight"] == in_flight
        expected = 4 * params[s] + in_flight * saved[s]
        assert stage["peak_memory_bytes"] == pytest.approx(expected, rel=0.15), s


@pytest.mark.parametrize("path", ["from_module", "onnx"])
@pytest.mark.parametrize("stages", [2, 4])
def test_a_stages_file_run_in_processes_holds_per_stage_what_dplace_says(stages, path, tmp_path):
    """dp's split of the decoder written as a stages file, then run as a pipeline framework runs
    it (tests/pipeline_run.py: a process per stage over gloo, the file's split points, 8
    micro-batches in the schedule's order, a real Adam step): each stage's peak under 1F1B and
    under GPipe, as each process measured it, within 5% of the file's."""
    import json
    import pipeline_run
    model, inputs = user_models.build("decoder")
    g = (dt.from_module(model, inputs, training=True, unit="module:2") if path == "from_module"
         else _onnx_training_graph(model, inputs, tmp_path, unit="module:2"))
    problem = dplace.Problem(g, "a100x8", "pipeline", stages=stages)
    plan = dplace.place(problem, "dp")
    out = str(tmp_path / "stages.json")
    dplace.write_stages(out, problem, plan)
    split = json.load(open(out))["split_modules"]
    assert len(split) == stages - 1
    for schedule in ("1f1b", "gpipe"):
        ours = [s["peak_memory_bytes"] for s in dplace.pipeline(problem, plan, schedule, 8)["stages"]]
        theirs = [s["resident"] + s["activations"]
                  for s in pipeline_run.run("decoder", split, 8, schedule)]
        assert ours == pytest.approx(theirs, rel=0.05), (schedule, split)


def test_stages_of_replicas_run_in_processes_hold_per_replica_what_dplace_says(tmp_path):
    """dp's split of the decoder into 2 stages of 2 data-parallel replicas (--replicas 2 over 4
    GPUs), written as a stages file and run in 4 processes (tests/pipeline_run.py: each replica
    a pipeline of its 4 of the 8 micro-batches under 1F1B, each stage's gradients all-reduced
    over its replicas before Adam's step): each replica's peak within 5% of its stage's in the
    file, which gives the frameworks' data-parallel degree."""
    import json
    import pipeline_run
    model, inputs = user_models.build("decoder")
    g = dt.from_module(model, inputs, training=True, unit="blocks")
    problem = dplace.Problem(g, "a100x8", stages=2, replicas="2", schedule="1f1b:8")
    assert problem.cluster.devices == ["gpu0+gpu1", "gpu2+gpu3"]
    plan = dplace.place(problem, "dp")
    out = str(tmp_path / "stages.json")
    dplace.write_stages(out, problem, plan)
    f = json.load(open(out))
    assert f["schedule"]["data_parallel"]["degree"] == 2
    assert f["schedule"]["data_parallel"]["microbatches_per_pipeline"] == 4
    ours = [s["peak_memory_bytes"] for s in f["pipeline"]["stages"]]
    theirs = [s["resident"] + s["activations"]
              for s in pipeline_run.run("decoder", f["split_modules"], 8, "1f1b", replicas=2)]
    assert [ours[0], ours[0], ours[1], ours[1]] == pytest.approx(theirs, rel=0.05), \
        f["split_modules"]


@pytest.mark.parametrize("schedule,recompute,path",
                         [("zb-h1", "none", "from_module"), ("zb-h2", "none", "from_module"),
                          ("1f1b", "full", "from_module"), ("zb-h1", "full", "from_module"),
                          ("1f1b", "selective", "from_module"),
                          ("interleaved:2", "none", "from_module"),
                          ("zb-h1", "none", "onnx"), ("1f1b", "selective", "onnx"),
                          ("interleaved:2", "none", "onnx")])
def test_zero_bubble_and_recomputing_stages_hold_what_their_pytorch_run_holds(
        schedule, recompute, path, tmp_path):
    """dp's 4-stage split of the decoder (block units) under a zero-bubble schedule or recomputing
    on every stage, or its interleaved plan of two chunks on each of 2 GPUs, written as a stages
    file and run in processes (tests/pipeline_run.py): the file's per-rank action table (each
    linear layer's weight gradient deferred to its W; each rank running both its chunks), and
    torch.utils.checkpoint around each stage (full) or each attention's core (selective). Each
    device's peak within 15% of what its process held (the file also counts what the norms'
    weight gradients keep until W). The graph traced from the module or exported to ONNX."""
    import json
    import pipeline_run
    model, inputs = user_models.build("decoder")
    g = (dt.from_module(model, inputs, training=True, unit="blocks") if path == "from_module"
         else _onnx_training_graph(model, inputs, tmp_path, unit="blocks"))
    interleaved = schedule.startswith("interleaved")
    problem = dplace.Problem(g, "a100x8", "pipeline", stages=2 if interleaved else 4,
                             schedule=schedule + ":8", recompute=recompute)
    # On this small model dp keeps one chunk a GPU (the transfers cost more than the bubble it
    # would save); the frameworks' uniform split of the chunks makes four.
    plan = dplace.place(problem, "uniform" if interleaved else "dp")
    out = str(tmp_path / "stages.json")
    dplace.write_stages(out, problem, plan)
    f = json.load(open(out))
    actions = f["schedule"]["torch_pipelining"].get("actions")
    assert (actions is not None) == (schedule.startswith("zb") or interleaved)
    assert f["pipeline"]["virtual_stages"] == (2 if interleaved else 1)
    assert len(f["split_modules"]) == 3
    ours = [s["peak_memory_bytes"] for s in f["pipeline"]["stages"]]
    assert all(s["recompute"] == recompute for s in f["pipeline"]["stages"])
    theirs = [s["resident"] + s["activations"]
              for s in pipeline_run.run("decoder", f["split_modules"], 8, schedule,
                                        actions=actions, recompute=recompute)]
    assert ours == pytest.approx(theirs, rel=0.15), f["split_modules"]
    if schedule == "zb-h2":  # the deeper warm-up holds more than 1F1B's on the first stage
        one_f_one_b = pipeline_run.run("decoder", f["split_modules"], 8, "1f1b")
        assert theirs[0] > one_f_one_b[0]["resident"] + one_f_one_b[0]["activations"]


@pytest.mark.parametrize("path", ["from_module", "onnx"])
def test_selective_recomputation_frees_exactly_the_attention_probabilities_of_a_vit(path, tmp_path):
    """torchvision's VisionTransformer (its authors' code: nn.MultiheadAttention, 17 tokens, 4
    heads), 4 layers over 2 GPUs: recomputing attention's core frees, per micro-batch, each
    layer's softmax output, batch x heads x 17 x 17 floats, and nothing else; traced from the
    module, nn.MultiheadAttention is one op, so there is no core to recompute."""
    from torchvision.models.vision_transformer import VisionTransformer
    torch.manual_seed(0)
    model = VisionTransformer(image_size=32, patch_size=8, num_layers=4, num_heads=4,
                              hidden_dim=64, mlp_dim=128)
    inputs = (torch.randn(8, 3, 32, 32),)
    g = (dt.from_module(model, inputs, training=True, unit="blocks") if path == "from_module"
         else _onnx_training_graph(model, inputs, tmp_path, unit="blocks"))
    problem = dplace.Problem(g, "a100x8", "pipeline", stages=2, recompute="selective")
    plan = dplace.place(problem, "uniform")  # two layers a GPU
    run = dplace.pipeline(problem, plan, "1f1b", 8)
    probabilities = 2 * 8 * 4 * 17 * 17 * 4  # two layers a stage
    for stage in run["stages"]:
        freed = stage["held_per_microbatch_bytes"] - stage["held_selective_bytes"]
        assert freed == (probabilities if path == "onnx" else 0), stage["name"]


@pytest.mark.parametrize("name", user_models.NAMES)
def test_every_state_dict_key_is_covered_by_the_device_map(name):
    model, inputs = user_models.build(name)
    g = dt.from_module(model, inputs, training=True)
    problem = dplace.Problem(g, "a100x8", stages=4)
    scattered = dplace.place(problem, "random", seed=1)
    m = dt.device_map(model, scattered, problem)  # raises dplace.Error for a key no map key covers
    assert len(set(m.values())) > 1
    for key in model.state_dict():
        assert dt._covered(key, m), key
    assert not any(k in m for k in ("tokens", "images", "x", "timestep"))


@pytest.mark.parametrize("name", user_models.NAMES)
def test_the_onnx_paths_device_map_covers_every_state_dict_key(name, tmp_path):
    """The same five models exported in training mode with export_params=False (parameters as
    graph inputs, decided by how they are read), a scattered plan, the CLI's device map."""
    import json
    import os
    import subprocess
    root = os.environ.get("DPLACE_SOURCE_DIR", os.getcwd())
    binary = os.environ.get("DPLACE", os.path.join(root, "build", "release", "dplace"))
    model, inputs = user_models.build(name, batch=2)
    model.train()
    path = str(tmp_path / f"{name}.onnx")
    torch.onnx.export(model, inputs, path, training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, opset_version=14, export_params=False)
    out = str(tmp_path / "device_map.json")
    subprocess.run([binary, "place", "--graph", path, "--training", "--cluster", "a100x8",
                    "--placer", "random", "--export", f"device_map={out}"],
                   check=True, capture_output=True)
    m = json.load(open(out))
    assert len(set(m.values())) > 1
    for key in model.state_dict():
        assert dt._covered(key, m), key
    modules = dict(model.named_modules())
    params = dict(model.named_parameters())
    for key in m:
        assert key == "" or key in modules or key in params, key  # no model input is a key


def test_a_model_on_the_meta_device_traces_to_the_same_graph():
    """No memory and no arithmetic: a model too big for this machine is traced on meta tensors."""
    model, inputs = user_models.build("decoder", batch=8)
    real = dt.graph_dict(model, inputs, training=True)
    on_meta = dt.graph_dict(model.to("meta"),
                            tuple(torch.empty_like(x, device="meta") for x in inputs),
                            training=True)
    assert on_meta == real


@pytest.mark.parametrize("name", user_models.NAMES)
def test_dp_is_never_slower_in_the_schedule_than_a_frameworks_default_split(name):
    """The pipeline objective judges splits by the 1F1B simulation; dp's split is at least as fast
    there as DeepSpeed's uniform and parameters splits and torchtitan's equal blocks, at 2 and 4
    stages (the two-tower model at 4 stages is where the DP's optima alone lose), with each block
    a unit found from the model (--unit blocks) as with module:2."""
    model, inputs = user_models.build(name, batch=8)
    for unit, stages in itertools.product(("module:2", "blocks"), (2, 4)):
        g = dt.from_module(model, inputs, training=True, unit=unit)
        problem = dplace.Problem(g, "a100x8", "pipeline", stages=stages)
        results = {r.placer: r for r in
                   dplace.place_all(problem, ["dp", "uniform", "parameters", "blocks"])}
        dp = results.pop("dp")
        assert dp.feasible
        for rule, r in results.items():
            assert dp.value <= r.value * (1 + 1e-9), (unit, stages, rule, dp.value, r.value)
        # The value is the schedule's own time per micro-batch.
        run = dplace.pipeline(problem, dp, "1f1b", 8)
        assert run["time_per_microbatch_s"] == pytest.approx(dp.value, rel=1e-12)
