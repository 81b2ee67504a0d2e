"""Five models written as their authors write them (tests/held_out_models.py: a T5 encoder-decoder,
an MAE, a Mistral-like GQA decoder with tied embeddings, a MeshGraphNet, a CNN with data-dependent
control flow), each read both ways a user reads it -- ONNX exported with either constant-folding
setting, and dplace.torch on the model as written -- against PyTorch's own counts: the training
step's matmul and convolution FLOPs at the aten level (forward and backward), and the bytes autograd
saves (dropout as a GPU keeps it)."""

import json
import os
import warnings

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")

import dplace  # noqa: E402
import dplace.torch as dt  # noqa: E402
import held_out_models as hm  # noqa: E402
import user_models  # noqa: E402

# Op types of GEMMs and convolutions: ONNX's, and the aten ops dplace.torch records.
# (and the fx front end's modules and functions, for the models fx traces).
GEMMS = {"MatMul", "Gemm", "Conv", "ConvTranspose", "Einsum", "LSTM", "GRU", "RNN",
         "mm", "addmm", "bmm", "baddbmm", "convolution",
         "Linear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose2d", "MultiheadAttention", "linear",
         "matmul", "bmm", "einsum"}


def gemm_flops(graph):
    """FLOPs of a training graph's GEMM and convolution ops, forward and backward."""
    total = 0.0
    for op in graph.to_json()["ops"]:
        kind = op.get("type", "")
        if (kind[:-4] if kind.endswith("Grad") else kind) in GEMMS:
            total += op.get("flops", 0)
    return total


@pytest.fixture(scope="module")
def reference():
    """PyTorch's counts of every model, once."""
    out = {}
    for name in hm.NAMES:
        flops = hm.aten_gemm_flops(*hm.build(name)[:2])
        out[name] = {"flops": flops["forward"] + flops["backward"],
                     "saved": hm.saved_bytes(*hm.build(name)[:2]),
                     "params": hm.parameter_bytes(hm.build(name)[0])}
    return out


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """{(model, fold): path} of both export recipes of every model."""
    folder = tmp_path_factory.mktemp("held_out")
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in hm.NAMES:
            for fold in (False, True):
                model, inputs, names = hm.build(name)
                path = os.path.join(folder, f"{name}_{'folded' if fold else 'kept'}.onnx")
                out[name, fold] = hm.export_onnx(model, inputs, names, path, fold, hm.OPSET[name])
    return out


@pytest.mark.parametrize("fold", [False, True], ids=["kept", "folded"])
@pytest.mark.parametrize("name", hm.NAMES)
def test_onnx_training_flops_match_pytorchs_gemm_count(name, fold, exports, reference):
    g = dplace.load_graph(exports[name, fold], training=True)
    assert gemm_flops(g) == pytest.approx(reference[name]["flops"], rel=0.05)


@pytest.mark.parametrize("fold", [False, True], ids=["kept", "folded"])
@pytest.mark.parametrize("name", hm.NAMES)
def test_onnx_saved_bytes_match_what_autograd_saves(name, fold, exports, reference):
    g = dplace.load_graph(exports[name, fold])
    assert g.saved_activation_bytes == pytest.approx(reference[name]["saved"], rel=0.10)


@pytest.mark.parametrize("name", hm.NAMES)
def test_both_recipes_give_one_step(name, exports):
    kept = dplace.load_graph(exports[name, False], training=True)
    folded = dplace.load_graph(exports[name, True], training=True)
    assert gemm_flops(folded) == pytest.approx(gemm_flops(kept), rel=0.01)
    assert dplace.load_graph(exports[name, True]).saved_activation_bytes == pytest.approx(
        dplace.load_graph(exports[name, False]).saved_activation_bytes, rel=0.01)


@pytest.mark.parametrize("name", hm.NAMES)
def test_folded_weights_get_state_dict_names(name, exports):
    """Every parameter name of either recipe is a state_dict key, but for the tensors the folder
    merged from several (MAE's class token and position embedding)."""
    model = hm.build(name)[0]
    keys = set(model.state_dict())
    for fold in (False, True):
        ops = dplace.load_graph(exports[name, fold]).to_json()["ops"]
        names = {p for op in ops for p in op.get("parameters", [])}
        strange = {n for n in names - keys if not n.startswith("onnx::")}
        assert not strange, strange
        if not fold:
            assert names <= keys


@pytest.mark.parametrize("name", hm.NAMES)
def test_dplace_torch_traces_the_model_as_written(name, reference):
    model, inputs, _ = hm.build(name)
    g = dt.from_module(model, inputs)
    assert g.saved_activation_bytes == pytest.approx(reference[name]["saved"], rel=0.10)
    step = dt.from_module(*hm.build(name)[:2], training=True)
    assert gemm_flops(step) == pytest.approx(reference[name]["flops"], rel=0.05)
    # The training step's figure is the forward graph's, not the whole step's tensors.
    assert step.saved_activation_bytes == pytest.approx(g.saved_activation_bytes)


@pytest.mark.parametrize("name", ["t5", "mistral"])
def test_tied_weights_are_held_once(name, reference):
    """The tied embedding and head are one parameter: the graph holds the model's bytes."""
    doc = dt.graph_dict(*hm.build(name)[:2])
    held = sum(op.get("param_bytes", 0) for op in doc["ops"])
    assert held == pytest.approx(reference[name]["params"], rel=0.001)


def test_an_error_names_the_module_and_the_line():
    class Broken(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = torch.nn.Linear(4, 4)

        def forward(self, x):
            if x.sum() > 0:
                return self.inner(x[:, :3])  # 3 features into a layer of 4
            return x

    with pytest.raises(dplace.Error, match=r"module 'inner' at test_held_out_models.py:\d+"):
        dt.from_module(Broken(), torch.ones(2, 4))


def graph_of(name, recipe, exports, **kwargs):
    """The training graph of a model read one way: "onnx" (folding off) or "torch"."""
    if recipe == "onnx":
        return dplace.load_graph(exports[name, False], training=True, **kwargs)
    return dt.from_module(*hm.build(name)[:2], training=True, **kwargs)


def run_fed_as_accelerate_feeds(model, inputs, device_map, plan, problem):
    """A forward of `model` under the emulated dispatch of `device_map`, its inputs on the device
    of the plan's first op (where accelerate's users put the batch, and dplace's eager model
    feeds it)."""
    first = plan.placement[problem.graph.op_names()[0]]
    fed = "cpu" if first.startswith("cpu") else int(first[len("gpu"):])
    for x in inputs:
        setattr(x, "_dplace_device", fed)
    with torch.no_grad():
        dt.dispatch(model, device_map)(*inputs)


@pytest.mark.parametrize("recipe", ["onnx", "torch"])
def test_every_multi_gpu_device_map_runs_with_the_batch_on_the_first_device(recipe, exports):
    """Every feasible plan of every placer on two GPUs, each with room for 85% of the step (so
    that a plan must split), as a device map: its keys resolve, it covers the state_dict (tied
    names, parameters of a branch not taken), and each model runs under the emulated dispatch
    with its inputs on the first mapped device, as accelerate is fed."""
    ran = {}
    for name in hm.NAMES:
        for problem, result in hm.split_plans(graph_of(name, recipe, exports, unit="module:64")):
            model, inputs, _ = hm.build(name)
            run_fed_as_accelerate_feeds(model, inputs, dt.device_map(model, result, problem),
                                        result, problem)
            ran[name] = ran.get(name, 0) + 1
    # The frameworks' splits and the contiguous placers split four of the five every time.
    assert len(ran) >= 4, ran


@pytest.mark.parametrize("recipe", ["onnx", "torch"])
def test_a_map_that_splits_a_tied_weight_is_infeasible_with_the_reason(recipe, exports):
    """Mistral's head reads the token embedding: under the eager runtime they are one unit."""
    g = graph_of("mistral", recipe, exports, unit="module:64")
    problem = dplace.Problem(g, "a100x8", "step", runtime="eager")
    names = problem.graph.op_names()
    head = [n for n in names if "lm_head" in n and "/grad" not in n and "/update" not in n]
    plan = {n: ("gpu1" if n in head else "gpu0") for n in names}
    result = dplace.simulate(problem, plan)
    assert not result.feasible
    assert "tied:model.embed_tokens.weight" in result.reason


def stage_memory_by_pytorch(model, inputs, split_modules, stages):
    """Per stage of a split at the beginning of `split_modules` (in order), what PyTorch holds in
    1F1B: its parameters with their gradients and Adam's two moments (4x), and for each of its
    (stages - s) micro-batches in flight what autograd saves while the stage runs and what a
    pipeline stage keeps to run its backward (torch.distributed.pipelining's forward cache: the
    outputs it sent, the inputs it received), each storage once."""
    current = [0]
    names = {id(m): n for n, m in model.named_modules()}
    order = {name: i + 1 for i, name in enumerate(split_modules)}
    params, owned = [0] * stages, set()
    made = {}  # storage -> (stage that made it, bytes): what modules return
    kept = [{} for _ in range(stages)]  # per stage: storages kept for its backward

    def storages(obj):
        return [(t._storage().data_ptr(), t._storage().nbytes())
                for t in torch.utils._pytree.tree_flatten(obj)[0] if isinstance(t, torch.Tensor)]

    def enter(module, args):
        if names.get(id(module)) in order:
            current[0] = order[names[id(module)]]
        for p in module._parameters.values():
            if p is not None and id(p) not in owned:
                owned.add(id(p))
                params[current[0]] += p.numel() * p.element_size()
        for key, nbytes in storages(args):  # a tensor crossing from an earlier stage
            if key in made and made[key][0] < current[0]:
                kept[made[key][0]].setdefault(key, nbytes)
                kept[current[0]].setdefault(key, nbytes)

    def leave(module, args, out):
        for key, nbytes in storages(out):
            made.setdefault(key, (current[0], nbytes))

    hooks = [m.register_forward_pre_hook(enter) for m in model.modules()]
    hooks += [m.register_forward_hook(leave) for m in model.modules()]
    outside = {t._storage().data_ptr() for t in list(model.parameters()) + list(model.buffers())}
    outside.update(t._storage().data_ptr() for t in inputs)

    def pack(t):
        if t._storage().data_ptr() not in outside:
            kept[current[0]].setdefault(t._storage().data_ptr(), t._storage().nbytes())
        return t

    model.train()
    with hm._cuda_like_dropout(), torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(*inputs)
    for h in hooks:
        h.remove()
    return [4 * params[s] + (stages - s) * sum(kept[s].values()) for s in range(stages)]


@pytest.mark.parametrize("recipe", ["onnx", "torch"])
@pytest.mark.parametrize("name", hm.NAMES)
def test_stages_files_name_modules_and_hold_what_pytorch_holds(name, recipe, exports, tmp_path):
    """The frameworks' default splits of every model in two stages, as stages files: each split
    point is a module of the model (torch.distributed.pipelining's split_spec, the stages'
    modules), the frameworks' terms are given or refused with a reason, and each stage's 1F1B
    peak is what PyTorch holds for it (8 micro-batches) within 15% -- or, for a stage that holds
    little, within 3% of the model's whole step (the tensors crossing the boundary, which a
    stage keeps per micro-batch in flight, then weigh)."""
    problem = dplace.Problem(graph_of(name, recipe, exports, unit="module:3"), "a100x8",
                             "pipeline", stages=2)
    checked = 0
    for result in dplace.place_all(problem, ["uniform", "parameters", "blocks"]):
        assert result.feasible, (result.placer, result.reason)
        path = str(tmp_path / f"{result.placer}.json")
        dplace.write_stages(path, problem, result)
        stages = json.load(open(path))
        model, inputs, _ = hm.build(name)
        frameworks = stages["frameworks"]
        points = list(frameworks.get("torch_pipelining", {}).get("split_spec", {}))
        assert points or frameworks.get("reason"), frameworks
        for key in points + stages["split_modules"]:
            model.get_submodule(key)  # raises AttributeError for a key that is no module
        for framework in ("deepspeed", "megatron", "vllm"):
            assert framework not in frameworks or frameworks[framework], framework
        run = dplace.pipeline(problem, result, "1f1b", 8)
        ours = [s["peak_memory_bytes"] for s in run["stages"]]
        theirs = stage_memory_by_pytorch(model, inputs, stages["split_modules"], len(ours))
        for a, b in zip(ours, theirs):
            assert a == pytest.approx(b, rel=0.15, abs=0.03 * sum(theirs)), (result.placer,
                                                                              ours, theirs)
        checked += 1
    assert checked == 3


@pytest.mark.parametrize("name", user_models.NAMES)
def test_the_fx_front_end_counts_pytorchs_gemm_flops(name):
    """The models fx traces (tests/user_models.py) keep their fx graph: its training step's
    GEMM and convolution FLOPs against PyTorch's aten count too."""
    flops = hm.aten_gemm_flops(*user_models.build(name))
    step = dt.from_module(*user_models.build(name), training=True)
    assert gemm_flops(step) == pytest.approx(flops["forward"] + flops["backward"], rel=0.05)


@pytest.mark.parametrize("name", ["t5", "mistral"])
def test_a_real_run_finds_the_tied_weights_a_meta_run_finds(name):
    from dplace import _torch_record
    model, inputs, _ = hm.build(name)
    on_meta = _torch_record._run(model, inputs, meta=True)[0]
    for_real = _torch_record._run(model, inputs, meta=False)[0]
    params = {id(p) for p in model.parameters()}
    read = sum(1 for op in for_real.ops for t in op.inputs if id(t) in params)
    assert read > 0 and len(on_meta.ops) == len(for_real.ops)
    meta_doc = dt.graph_dict(model, inputs)
    held = sum(op.get("param_bytes", 0) for op in meta_doc["ops"])
    assert held == hm.parameter_bytes(model)


@pytest.mark.parametrize("name", hm.NAMES)
def test_the_command_lines_device_map_completed_from_the_model_runs(name, exports, tmp_path):
    """The command line has the graph, not the model: its map keys what the graph reads (each key
    a module or a parameter of the model) and says what it cannot key; dplace.torch.device_map of
    its plan file adds the rest from the model (T5's second name of the shared embedding, MAE's
    mask token, the adaptive model's branch not taken), and the map runs with the batch on its
    first device."""
    import subprocess
    root = os.environ.get("DPLACE_SOURCE_DIR", os.getcwd())
    binary = os.environ.get("DPLACE", os.path.join(root, "build", "release", "dplace"))
    g = dplace.load_graph(exports[name, False], training=True, unit="module:64")
    one = dplace.place(dplace.Problem(g, "a100x8", "step", runtime="eager"), "single")
    cluster = hm.two_small_gpus(int(0.85 * max(d["peak_memory_bytes"] for d in one.devices)))
    cluster_path, plan_path, map_path = (str(tmp_path / f) for f in ("c.json", "p.json", "m.json"))
    json.dump(cluster, open(cluster_path, "w"))
    run = subprocess.run([binary, "place", "--graph", exports[name, False], "--training", "--unit",
                          "module:64", "--cluster", cluster_path, "--runtime", "eager", "--placer",
                          "mcmc", "--evaluations", "3000", "--out", plan_path, "--export",
                          f"device_map={map_path}"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "dplace.torch.device_map(model, plan, problem) adds them" in run.stderr
    model, inputs, _ = hm.build(name)
    by_graph = json.load(open(map_path))
    modules, params = dict(model.named_modules()), dict(model.named_parameters())
    assert all(k in modules or k in params for k in by_graph), by_graph
    assert len(set(by_graph.values())) == 2
    problem = dplace.Problem(g, cluster, "step", runtime="eager")
    full = dt.device_map(model, plan_path, problem)
    assert all(full[k] == v for k, v in by_graph.items())
    assert all(dt._covered(k, full) for k in model.state_dict())
    plan = dplace.simulate(problem, plan_path)
    assert plan.feasible, plan.reason
    run_fed_as_accelerate_feeds(model, inputs, full, plan, problem)
