"""Five models written as their authors write them (tests/held_out_models.py: a T5 encoder-decoder,
an MAE, a Mistral-like GQA decoder with tied embeddings, a MeshGraphNet, a CNN with data-dependent
control flow), each read both ways a user reads it -- ONNX exported with either constant-folding
setting, and dplace.torch on the model as written -- against PyTorch's own counts: the training
step's matmul and convolution FLOPs at the aten level (forward and backward), and the bytes autograd
saves (dropout as a GPU keeps it)."""

import os
import warnings

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")

import dplace  # noqa: E402
import dplace.torch as dt  # noqa: E402
import held_out_models as hm  # noqa: E402

# Op types of GEMMs and convolutions: ONNX's, and the aten ops dplace.torch records.
GEMMS = {"MatMul", "Gemm", "Conv", "ConvTranspose", "Einsum",
         "mm", "addmm", "bmm", "baddbmm", "convolution", "Linear", "Conv2d", "linear", "matmul"}


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


@pytest.mark.parametrize("recipe", ["onnx", "torch"])
def test_every_multi_gpu_device_map_runs_with_the_batch_on_the_first_device(recipe, exports):
    """Every feasible plan of every placer on two GPUs, each with room for 85% of the step (so
    that a plan must split), as a device map: its keys resolve, it covers the state_dict (tied
    names, parameters of a branch not taken), and each model runs under the emulated dispatch
    with its inputs on the first mapped device, as accelerate is fed."""
    ran = {}
    for name in hm.NAMES:
        g = graph_of(name, recipe, exports, unit="module:64")
        one = dplace.place(dplace.Problem(g, "a100x8", "step", runtime="eager"), "single")
        need = max(d["peak_memory_bytes"] for d in one.devices)
        cluster = {"format": "dplace-cluster/1", "name": "two-small-gpus",
                   "devices": [{"name": "gpu", "count": 2, "kind": "gpu",
                                "memory": int(need * 0.85), "peak_flops": 1e13,
                                "memory_bandwidth": "900GB/s"}],
                   "default_link": {"bandwidth": "10GB/s", "latency": "5us"}}
        problem = dplace.Problem(g, cluster, "step", runtime="eager")
        for result in dplace.place_all(problem, None, time_limit=0.2):
            if not result.feasible or len(set(result.placement.values())) < 2:
                continue
            model, inputs, _ = hm.build(name)
            device_map = dt.device_map(model, result, problem)
            # Fed where dplace's eager model feeds it: the device of the first op it maps.
            first = result.placement[problem.graph.op_names()[0]]
            fed = "cpu" if first.startswith("cpu") else int(first[len("gpu"):])
            for x in inputs:
                setattr(x, "_dplace_device", fed)
            with torch.no_grad():
                dt.dispatch(model, device_map)(*inputs)
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
