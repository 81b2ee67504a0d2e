"""dplace.torch: PyTorch models as graphs (torch.fx), profiles, plans applied and measured."""

import copy
import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")

import dplace  # noqa: E402
import dplace.torch as dt  # noqa: E402

ROOT = os.environ.get("DPLACE_SOURCE_DIR",
                      os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TWO_CPUS = {"format": "dplace-cluster/1", "name": "two-cpus",
            "devices": [{"name": "cpu", "count": 2, "kind": "cpu", "peak_flops": 1e11,
                         "memory_bandwidth": "10GB/s"}],
            "default_link": {"bandwidth": "2GB/s", "latency": "2us"}}


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(4, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x))) + x  # relu and add: functions inside "body.0"


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 4, 3, stride=2, padding=1, bias=False)
        self.body = torch.nn.Sequential(Block(), Block())
        self.fc = torch.nn.Linear(4 * 8 * 8, 10)

    def forward(self, x):
        return self.fc(torch.flatten(self.body(self.stem(x)), 1))


class Recurrent(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(16, 32, 2)
        self.head = torch.nn.Linear(32, 5)

    def forward(self, x):
        out, (h, c) = self.lstm(x)
        return self.head(out) + self.head(h[-1])  # head called twice: its weights once


def net():
    torch.manual_seed(0)
    return Net(), (torch.randn(2, 3, 16, 16),)


def ops_of(doc):
    return {o["name"]: o for o in doc["ops"]}


def test_import_dplace_torch_does_not_import_torch():
    code = "import sys, dplace, dplace.torch; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False"]


def test_op_names_keep_module_paths():
    model, x = net()
    names = list(ops_of(dt.graph_dict(model, x)))
    assert names == ["/stem/stem", "/body.0.conv/body_0_conv", "/body.0.bn/body_0_bn",
                     "/body.0/relu", "/body.0/add", "/body.1.conv/body_1_conv",
                     "/body.1.bn/body_1_bn", "/body.1/relu_1", "/body.1/add_1", "/flatten",
                     "/fc/fc"]
    for name in names:  # the module the core reads back from a name is a real submodule
        path = name.rsplit("/", 1)[0].lstrip("/")
        assert model.get_submodule(path) is not None


def test_flops_and_bytes_of_linear_and_conv_are_hand_computed():
    model, x = net()
    ops = ops_of(dt.graph_dict(model, x))
    # stem: 3 -> 4 channels, 3x3, stride 2 on 16x16: output 2x4x8x8, no bias.
    assert ops["/stem/stem"]["flops"] == 2 * (2 * 4 * 8 * 8) * (3 * 3 * 3)
    assert ops["/stem/stem"]["outputs"] == [2 * 4 * 8 * 8 * 4]
    assert ops["/stem/stem"]["param_bytes"] == 4 * 3 * 3 * 3 * 4
    assert ops["/stem/stem"]["bytes_accessed"] == (2 * 3 * 16 * 16 + 2 * 4 * 8 * 8 + 108) * 4
    # conv with bias: one more FLOP per output element.
    assert ops["/body.0.conv/body_0_conv"]["flops"] == 2 * 512 * 36 + 512
    # fc: 256 -> 10 on a batch of 2, with bias.
    assert ops["/fc/fc"]["flops"] == 2 * 2 * 10 * 256 + 2 * 10
    assert ops["/fc/fc"]["param_bytes"] == (256 * 10 + 10) * 4
    assert ops["/flatten"]["flops"] == 0 and ops["/flatten"]["bytes_accessed"] == 0
    edges = {(e["from"], e["to"]) for e in dt.graph_dict(model, x)["edges"]}
    assert ("/stem/stem", "/body.0/add") in edges  # the residual
    assert ("/body.0/relu", "/body.0/add") in edges


def test_tuple_outputs_and_getitem_pick_the_right_output():
    model = Recurrent()
    x = torch.randn(7, 3, 16)
    doc = dt.graph_dict(model, (x,))
    ops = ops_of(doc)
    lstm = ops["/lstm/lstm"]
    assert lstm["outputs"] == [7 * 3 * 32 * 4, 2 * 3 * 32 * 4, 2 * 3 * 32 * 4]  # out, h_n, c_n
    # 2 layers, 4 gates, 7 steps, batch 3: input and hidden products + biases + 3 per gate.
    assert lstm["flops"] == 7 * 3 * 4 * 32 * ((2 * (16 + 32) + 5) + (2 * (32 + 32) + 5))
    by_to = {}
    for e in doc["edges"]:
        by_to.setdefault(e["to"], []).append((e["from"], e["output"]))
    assert by_to["/head/head"] == [("/lstm/lstm", 0)]
    h_last = [name for name, o in ops.items() if o["type"] == "getitem"]
    assert len(h_last) == 1 and by_to[h_last[0]] == [("/lstm/lstm", 1)]
    # the second call of head holds no parameters: they are counted once.
    assert ops["/head/head_1"]["param_bytes"] == 0 and ops["/head/head"]["param_bytes"] > 0


def test_transformer_encoder_is_traced_into_its_layers():
    torch.manual_seed(0)
    model = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(32, 4, 64), 2).eval()
    x = torch.randn(5, 2, 32)
    names = list(ops_of(dt.graph_dict(model, (x,))))
    assert "/layers.0.self_attn/layers_0_self_attn" in names
    assert "/layers.1.linear2/layers_1_linear2" in names
    assert "/layers.0/add" in names
    mha = ops_of(dt.graph_dict(model, (x,)))["/layers.0.self_attn/layers_0_self_attn"]
    # q, k, v and output projections, Q K^T and the weighted sum, softmax per score.
    assert mha["flops"] == 2 * 2 * 4 * 5 * 32 * 32 + 2 * (2 * 2 * 5 * 5 * 32) + 5 * 2 * 4 * 5 * 5
    placed = dt.apply(copy.deepcopy(model), {n: "cpu0" for n in names})
    with torch.no_grad():
        assert torch.allclose(placed(x), model(x), atol=1e-6)


def test_torchvision_models_trace_with_their_module_paths():
    x = torch.randn(1, 3, 64, 64)
    doc = dt.graph_dict(torchvision.models.resnet50(), (x,))
    assert len(doc["ops"]) == 175
    assert "/layer1.0.conv1/layer1_0_conv1" in ops_of(doc)
    assert "/layer1.0/add" in ops_of(doc)
    total = sum(o["param_bytes"] for o in doc["ops"])
    assert total == sum(p.numel() * 4 for p in torchvision.models.resnet50().parameters())
    doc = dt.graph_dict(torchvision.models.mobilenet_v2(), (x,))
    assert "/features.1.conv.0.0/features_1_conv_0_0" in ops_of(doc)


def test_training_expansion_is_the_cores():
    model, x = net()
    g = dt.from_module(model, x, training=True)
    names = g.op_names()
    assert "/fc/fc/grad" in names and "/fc/fc/update" in names
    assert "/body.0/add/grad" in names and "/body.0/add/update" not in names
    assert g.num_ops == 11 + 11 + 6  # forward, backward, an update per op with parameters


def test_profile_attaches_measured_times():
    model, x = net()
    prof = dt.profile(model, x, training=True, warmup=1, repeat=3)
    assert set(prof.forward_s) == set(ops_of(dt.graph_dict(model, x)))
    assert all(t > 0 for t in prof.forward_s.values())
    assert prof.backward_s["/fc/fc"] > 0 and prof.update_s["/fc/fc"] > 0
    assert "/body.0/add" not in prof.update_s
    g = dt.from_module(model, x, training=True, profile=prof)
    times = {o["name"]: o["time_s"] for o in g.to_json()["ops"]}
    assert times["/stem/stem"] == {"cpu": prof.forward_s["/stem/stem"]}
    assert times["/fc/fc/grad"] == {"cpu": prof.backward_s["/fc/fc"]}
    assert times["/fc/fc/update"] == {"cpu": prof.update_s["/fc/fc"]}
    # On one device the simulated step is the sum of the op times.
    problem = dplace.Problem(g, dplace.load_cluster(dt.local_cluster("cpu")), "step")
    one = dplace.simulate(problem, {n: "cpu0" for n in g.op_names()})
    assert one.value == pytest.approx(prof.total_s(), rel=1e-9)
    # the model is left as it was: same weights, same mode
    fresh, _ = net()
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(),
                                                  fresh.state_dict().values()))
    assert model.training


def test_inference_profile_does_not_fit_a_training_graph():
    model, x = net()
    prof = dt.profile(model, x, warmup=0, repeat=1)
    with pytest.raises(dplace.Error, match="profile is of inference"):
        dt.from_module(model, x, training=True, profile=prof)


@pytest.mark.parametrize("emulate", [False, True])
def test_apply_outputs_equal_the_unplaced_model(emulate):
    model, x = net()
    model.eval()
    g = dt.from_module(model, x, training=True)
    ops = [n for n in g.op_names() if not n.endswith(("/grad", "/update"))]
    alternate = {op: f"cpu{i % 2}" for i, op in enumerate(ops)}
    placed = dt.apply(copy.deepcopy(model), alternate, cluster=TWO_CPUS, emulate_transfers=emulate)
    copies = [n for n in placed.graph.nodes if n.meta.get("dplace_transfer")]
    assert len(copies) == (10 if emulate else 0)  # one per crossing edge of the alternation
    with torch.no_grad():
        assert torch.equal(placed(*x), model(*x))
    resnet = torchvision.models.resnet18().eval()
    y = torch.randn(2, 3, 32, 32)
    problem = dplace.Problem(dt.from_module(resnet, (y,)), dplace.load_cluster(TWO_CPUS), "step")
    result = dplace.place(problem, "m_etf")
    placed = dt.apply(copy.deepcopy(resnet), result, cluster=TWO_CPUS, emulate_transfers=True)
    with torch.no_grad():
        assert torch.equal(placed(y), resnet(y))


def test_device_map_keys_are_submodule_paths_and_round_trip():
    resnet = torchvision.models.resnet18().eval()
    x = torch.randn(1, 3, 32, 32)
    g = dt.from_module(resnet, (x,), training=True)
    problem = dplace.Problem(g, dplace.load_cluster("k80x4"), "step")
    forward = [n for n in g.op_names() if not n.endswith(("/grad", "/update"))]
    plan = {op: ("gpu0" if i < len(forward) // 2 else "gpu1") for i, op in enumerate(forward)}
    dm = dt.device_map(resnet, plan, problem)
    assert dm and set(dm.values()) == {0, 1}
    for key in dm:
        assert resnet.get_submodule(key) is not None
    assert dm["conv1"] == 0 and dm["fc"] == 1
    # The device map applied gives each op the device the plan gave it (modules split by the
    # plan excepted: the core maps them whole).
    placed = dt.apply(copy.deepcopy(resnet), {k: "cpu" for k in dm})
    with torch.no_grad():
        assert torch.equal(placed(x), resnet(x))


def test_measure_times_real_steps():
    model, x = net()
    assert 0 < dt.measure(model, x, warmup=1, repeat=3) < 1
    before = copy.deepcopy(model.state_dict())
    assert 0 < dt.measure(model, x, training=True, warmup=1, repeat=3) < 1
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    g = dt.from_module(model, x)
    plan = {n: "cpu1" for n in g.op_names()}
    assert dt.measure(model, x, plan=plan, cluster=TWO_CPUS, warmup=1, repeat=3) > 0


def test_a_search_by_measured_steps_runs_the_model_it_places():
    """place(measure=dt.measure(...)): mcmc on real steps of the model placed over two CPUs (each
    tensor that crosses copied), its result measured once more."""
    model, x = net()
    problem = dplace.load_problem(dt.from_module(model, x), TWO_CPUS)
    runs = []

    def measure(plan):
        runs.append(plan)
        return dt.measure(model, x, plan=plan, cluster=TWO_CPUS, emulate_transfers=True,
                          warmup=1, repeat=2)

    r = dplace.place(problem, "mcmc", evaluations=12, measure=measure)
    assert r.feasible and 0 < r.measured < 1
    assert 1 < len(runs) <= r.evaluations + 1
    assert {d for plan in runs for d in plan.values()} <= {"cpu0", "cpu1"}


def test_check_compares_predicted_and_measured():
    model, x = net()
    check = dt.check(model, x, warmup=1, repeat=3)
    predicted, measured = check.step("one device")
    assert predicted > 0 and measured > 0
    whats = [r["what"] for r in check.rows]
    assert whats[:3] == ["step", "step", "cpu0"]
    assert check.rows[0]["placement"] == "model on cpu" and check.rows[0]["measured_s"] > 0
    assert "predicted" in str(check) and "one device" in str(check)


def test_local_cluster_loads_in_the_core():
    one = dplace.load_cluster(dt.local_cluster("cpu"))
    assert one.devices == ["cpu0"]
    doc = dt.local_cluster("cpu+cpu")
    assert [d["name"] for d in doc["devices"]] == ["cpu0", "cpu1"]
    assert doc["links"][0]["bandwidth"] > 1e8 and doc["devices"][0]["memory"] > 0
    assert dplace.load_cluster(doc).devices == ["cpu0", "cpu1"]
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="needs a GPU"):
            dt.local_cluster("cpu+gpu")


def test_bad_input_raises_one_clear_error():
    model, x = net()
    with pytest.raises(TypeError, match="torch.nn.Module"):
        dt.graph_dict(lambda t: t, x)
    with pytest.raises(TypeError, match="example_inputs"):
        dt.graph_dict(model, "x")
    with pytest.raises(dplace.Error) as e:
        dt.graph_dict(model, (torch.randn(2, 5, 16, 16),))
    assert "example inputs do not fit the model" in str(e.value)
    assert "\n" not in str(e.value)
    with pytest.raises(dplace.Error, match="takes 1 inputs, 2 were given"):
        dt.graph_dict(model, (x[0], x[0]))
    other = {o["name"]: "cpu0" for o in dt.graph_dict(Recurrent(), (torch.randn(3, 2, 16),))["ops"]}
    with pytest.raises(dplace.Error, match="a plan of another model"):
        dt.apply(copy.deepcopy(model), other)
    names = [o["name"] for o in dt.graph_dict(model, x)["ops"]]
    with pytest.raises(dplace.Error, match="does not have"):
        dt.apply(copy.deepcopy(model), {n: "cpu9" for n in names}, cluster=TWO_CPUS)
    if torch.cuda.device_count() < 4:
        with pytest.raises(dplace.Error, match="GPUs"):
            dt.apply(copy.deepcopy(model), {n: "gpu3" for n in names}, cluster="k80x4")

    class Branchy(torch.nn.Module):
        def forward(self, t):
            return t * 2 if t.sum() > 0 else t

    # A branch on a value: the graph is the path these inputs take; apply needs fx and says
    # where it stopped and what to do.
    doc = dt.graph_dict(Branchy(), x)
    taken = ["sum", "gt", "mul"] if float(x[0].sum()) > 0 else ["sum", "gt"]
    assert [op["type"] for op in doc["ops"]] == taken
    with pytest.raises(dplace.Error, match=r"torch.fx cannot trace Branchy at test_torch.py:\d+: "
                       r".*leaves=\[Branchy\]") as e:
        dt.apply(Branchy(), {}, cluster="k80x4")
    assert "\n" not in str(e.value)


def run_example(name, *args):
    env = {**os.environ}
    out = subprocess.run([sys.executable, os.path.join(ROOT, "examples", name), *args],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_example_place_torchvision():
    out = run_example("place_torchvision.py", "--model", "resnet18", "--batch", "8",
                      "--placers", "single,m_etf", "--time-limit", "1")
    assert "m_etf" in out and "lower bound" in out
    dm = json.loads(out.split("device_map of ", 1)[1].split(" ", 1)[1])
    assert dm and all(torchvision.models.resnet18().get_submodule(k) is not None for k in dm)


def test_example_profile_place_apply():
    out = run_example("profile_place_apply.py", "--batch", "2", "--size", "32")
    assert "placed outputs equal the unplaced model's: True" in out
    assert "predicted/measured" in out


def test_example_check_fidelity():
    out = run_example("check_fidelity.py", "mlp", "--batch", "4", "--training", "--ranking",
                      "--threads", "1", "--warmup", "1", "--repeat", "3")
    assert "alternate" in out and "halves" in out and "transfers" in out


def test_a_traced_decoder_is_planned_with_tensor_parallelism_of_its_attention_and_mlp(tmp_path):
    # user_models' Llama-style decoder as its authors write it: rotary (chunk, cat), a causal mask
    # added to the scores, SwiGLU; 4 layers of 4 heads, MLP 256 wide.
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import user_models
    model, inputs = user_models.build("decoder")
    doc = dt.graph_dict(model, inputs, name="decoder")
    doc["batch"] = 4
    path = tmp_path / "decoder.json"
    path.write_text(json.dumps(doc))
    r = dplace.plan(str(path), "a100x8", global_batch=32, time_limit=1)
    blocks = [(b["module"], b["kind"], b["ways"]) for b in r["tensor_parallel_blocks"]]
    assert blocks == [(f"layers.{i}.{part}", kind, ways) for i in range(4)
                      for part, kind, ways in (("attn", "attention", 4), ("mlp", "mlp", 256))]
    tensor = [a for a in r["alternatives"] if a["family"] == "tensor"]
    assert len(tensor) == 1 and tensor[0]["gpus"] % 2 == 0
    assert "8 blocks" in tensor[0]["plan"] or "4 attention and 4 MLP" in tensor[0]["plan"]
