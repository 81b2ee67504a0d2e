"""The Python module against the command line: same loaders, placers, budgets, outputs, errors."""

import json
import os
import subprocess
import sys

import pytest

import dplace
import interrupting

ROOT = os.environ.get("DPLACE_SOURCE_DIR",
                      os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
DPLACE = os.environ.get("DPLACE", os.path.join(ROOT, "build", "release", "dplace"))
TD = os.path.join(ROOT, "testdata")
TOY = {
    "format": "dplace-graph/1", "name": "toy",
    "ops": [{"name": "a", "flops": 4e9, "outputs": ["64MiB"]},
            {"name": "b", "flops": 2e9, "outputs": ["64MiB"]},
            {"name": "c", "flops": 2e9, "outputs": ["64MiB"]},
            {"name": "d", "flops": 1e9}],
    "edges": [{"from": "a", "to": "b"}, {"from": "a", "to": "c"},
              {"from": "b", "to": "d"}, {"from": "c", "to": "d"}],
}


def cli(*args):
    return subprocess.run([DPLACE, *args], capture_output=True, text=True)


def test_import_does_not_load_torch():
    code = "import sys, dplace; print('torch' in sys.modules, 'numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ}, check=True).stdout.split()
    assert out == ["False", "False"]


@pytest.mark.parametrize("path,ops", [
    ("testdata/fuzz/seeds/graph.json", None),
    ("testdata/pipedream-profiles/resnet18.graph.txt", None),
    ("testdata/baechi-check/inception_v3_fwd.json", None),
    ("testdata/piper/gnmt.json", None),
    ("testdata/dnn-partitioning/throughput-inputs/LayerGraphs/gnmt_inference.json", None),
    ("testdata/torch/resnet50.onnx", None),
])
def test_every_format_loads_as_the_cli_reads_it(path, ops):
    g = dplace.load_graph(os.path.join(ROOT, path))
    info = cli("info", "--graph", os.path.join(ROOT, path), "--json")
    assert info.returncode == 0, info.stderr
    assert g.num_ops == json.loads(info.stdout)["ops"]
    assert len(g.op_names()) == g.num_ops


def test_dict_graph_round_trips_and_expands_for_training():
    g = dplace.load_graph(TOY)
    assert g.name == "toy" and g.op_names() == ["a", "b", "c", "d"]
    again = dplace.load_graph(g.to_json())
    assert again.to_json() == g.to_json()
    t = dplace.load_graph(TOY, training=True)
    names = t.op_names()
    assert "a/grad" in names and t.num_ops == 8  # no parameters: no update ops


def test_place_matches_the_cli_for_the_same_seed_and_budget():
    path = os.path.join(ROOT, "testdata/torch/resnet50.onnx")
    p = dplace.load_problem(path, "k80x4", training=True)
    r = dplace.place(p, "mcmc", seed=3, evaluations=3000)
    out = cli("place", "--graph", path, "--cluster", "k80x4", "--training", "--placer", "mcmc",
              "--seed", "3", "--evaluations", "3000", "--json")
    assert out.returncode == 0, out.stderr
    cli_result = json.loads(out.stdout)["results"][0]
    assert r.value == pytest.approx(cli_result["value"], rel=1e-12)
    assert r.evaluations > 0
    assert r.feasible and r.lower_bound > 0 and 0 <= r.gap < 1
    assert dplace.place(p, "mcmc", seed=3, evaluations=3000).placement == r.placement


def test_results_judge_and_report():
    p = dplace.Problem(dplace.load_graph(TOY), "k80x4")
    results = dplace.place_all(p, ["single", "m_etf", "round_robin"])
    assert [r.placer for r in results] == ["single", "m_etf", "round_robin"]
    for r in results:
        again = dplace.simulate(p, r.placement)
        assert again.value == pytest.approx(r.value)
        assert sum(d["ops"] for d in r.devices) == 4
        assert {d["name"] for d in r.devices} == set(p.cluster.devices)
    single = results[0]
    # one K80 die: 9 GFLOP at 4.37 TFLOP/s
    assert single.value == pytest.approx(9e9 / 4.37e12, rel=1e-3)
    assert "best:" in dplace.table(p, results)
    assert p.cluster.device_kinds == ["gpu"] * 4 + ["cpu"] and p.cluster.kinds == ["gpu", "cpu"]
    assert dplace.simulate(p, {"a": "gpu0", "b": "gpu1", "c": "gpu0", "d": "gpu0"}).value > 0


def test_outputs_are_the_cli_files(tmp_path):
    p = dplace.Problem(dplace.load_graph(TOY), "k80x4")
    r = dplace.place(p, "m_etf")
    plan = tmp_path / "plan.json"
    dplace.write_plan(str(plan), p, r)
    doc = json.loads(plan.read_text())
    assert doc["format"] == "dplace-plan/1" and doc["placer"] == "m_etf"
    assert dplace.simulate(p, str(plan)).value == pytest.approx(r.value)
    dplace.write_trace(str(tmp_path / "t.json"), p, r)
    assert "traceEvents" in json.loads((tmp_path / "t.json").read_text())
    dplace.write_report(str(tmp_path / "r.json"), p, [r])
    assert json.loads((tmp_path / "r.json").read_text())["results"][0]["placer"] == "m_etf"
    pipe = dplace.pipeline(p, r, schedule="gpipe", microbatches=4)
    assert pipe["microbatches"] == 4 and pipe["makespan_s"] > 0


def test_a_zero_bubble_schedule_splits_backward_and_auto_chooses_the_fastest_that_fits():
    g = dplace.load_graph(os.path.join(ROOT, "models", "resnet50.onnx"), training=True)
    p = dplace.Problem(g, "k80x4", "pipeline", stages=2, schedule="auto:8", recompute="auto")
    r = dplace.place(p, "contiguous")
    runs = {s: dplace.pipeline(p, r, s, 8) for s in ("1f1b", "zb-h1", "zb-h2", "auto")}
    assert runs["zb-h1"]["time_per_microbatch_s"] < runs["1f1b"]["time_per_microbatch_s"]
    assert all(st["weight_s"] > 0 for st in runs["zb-h1"]["stages"])
    fastest = min(("1f1b", "zb-h1", "zb-h2"), key=lambda s: runs[s]["time_per_microbatch_s"])
    assert runs["auto"]["schedule"] == fastest
    assert r.value == pytest.approx(runs["auto"]["time_per_microbatch_s"])
    with pytest.raises(dplace.Error, match="recompute: 'some' is not none, selective, full or auto"):
        dplace.Problem(g, "k80x4", "pipeline", stages=2, recompute="some")
    with pytest.raises(dplace.Error, match="'zb' is not auto or a schedule"):
        dplace.pipeline(p, r, "zb", 8)


def test_stages_of_replicas_run_a_share_of_the_micro_batches_and_auto_lets_dp_choose_them():
    g = dplace.load_graph(os.path.join(ROOT, "models", "resnet50.onnx"), training=True)
    p = dplace.Problem(g, "k80x4", "pipeline", stages=2, replicas="2", schedule="1f1b:8")
    assert p.num_devices == 2 and p.cluster.devices == ["gpu0+gpu1", "gpu2+gpu3"]
    r = dplace.place(p, "dp")
    run = dplace.pipeline(p, r, "1f1b", 8)
    assert [st["replicas"] for st in run["stages"]] == [2, 2]
    assert all(st["allreduce_s"] > 0 for st in run["stages"])
    one_each = dplace.Problem(g, "k80x4", "pipeline", stages=2, schedule="1f1b:8")
    assert r.value < dplace.place(one_each, "dp").value
    # Under auto dp chooses the groups as the problem is made; the devices are the groups.
    auto = dplace.Problem(g, "k80x4", "pipeline", stages=4, replicas="auto", schedule="1f1b:8")
    assert auto.replicas_chosen.startswith("replicas: ")
    assert sum(len(d.split("+")) for d in auto.cluster.devices) == 4
    assert dplace.place(auto, "contiguous").feasible
    assert dplace.Problem(g, "k80x4", "pipeline", stages=2).replicas_chosen == ""
    with pytest.raises(dplace.Error, match="replicas: '2,1' names 2 stages, and stages asks for 3"):
        dplace.Problem(g, "k80x4", "pipeline", stages=3, replicas="2,1")
    with pytest.raises(dplace.Error, match="replicas: stages have replicas under the pipeline"):
        dplace.Problem(g, "k80x4", "step", stages=2, replicas="2")


def test_no_output_replaces_what_its_problem_was_read_from(tmp_path):
    """As the CLI: the graph, the cluster file and the plan file a write reads are never
    replaced, under any name; the error says which."""
    graph, cluster = tmp_path / "g.json", tmp_path / "c.json"
    graph.write_text(json.dumps(TOY))
    cluster.write_bytes(open(os.path.join(ROOT, "clusters", "k80x4.json"), "rb").read())
    (tmp_path / "link").symlink_to("g.json")
    p = dplace.Problem(dplace.load_graph(str(graph)), str(cluster))
    r = dplace.place(p, "m_etf")
    for target in (graph, cluster, tmp_path / "link", tmp_path / "." / "c.json"):
        with pytest.raises(dplace.Error, match="is (an|the) input"):
            dplace.write_plan(str(target), p, r)
    dplace.write_plan(str(tmp_path / "plan.json"), p, r)
    with pytest.raises(dplace.Error, match="is an input"):
        dplace.write_trace(str(tmp_path / "plan.json"), p, str(tmp_path / "plan.json"))
    assert json.loads(graph.read_text()) == TOY
    dplace.write_trace(str(tmp_path / "trace.json"), p, str(tmp_path / "plan.json"))


def test_other_objectives():
    path = os.path.join(TD, "dnn-partitioning/throughput-inputs/LayerGraphs/gnmt_inference.json")
    p = dplace.load_problem(path)
    assert p.objective == "throughput"
    r = dplace.place(p, "dp")
    assert r.note.startswith("optimal")
    lat = p.with_objective("latency")
    judged = dplace.simulate(lat, r.placement)
    assert judged.objective == "latency" and judged.value > 0


def test_bad_input_raises_the_cli_message():
    with pytest.raises(dplace.Error) as e:
        dplace.load_graph("/no/such/graph.json")
    out = cli("info", "--graph", "/no/such/graph.json")
    assert out.returncode == 2 and str(e.value) in out.stderr
    p = dplace.Problem(dplace.load_graph(TOY), "k80x4")
    with pytest.raises(dplace.Error, match="unknown op 'zz'"):
        dplace.simulate(p, {"zz": "gpu0"})
    with pytest.raises(dplace.Error, match="unknown device"):
        dplace.simulate(p, {"a": "tpu9", "b": "gpu0", "c": "gpu0", "d": "gpu0"})
    with pytest.raises(dplace.Error, match="not placed"):
        dplace.simulate(p, {"a": "gpu0"})
    other = dplace.Problem(dplace.load_graph(TOY, training=True), "k80x4")
    with pytest.raises(dplace.Error, match="another problem"):
        dplace.simulate(other, dplace.place(p, "single"))
    with pytest.raises(dplace.Error, match="unknown option|mcmc"):
        dplace.place(p, "mcmc", options={"mcmc.no_such_key": 1})
    with pytest.raises(dplace.Error, match="did you mean"):
        dplace.place(p, "mcmcc")
    with pytest.raises(dplace.Error, match="objective"):
        dplace.Problem(dplace.load_graph(TOY), "k80x4", "fastest")
    with pytest.raises(dplace.Error, match="k80x4"):
        dplace.load_cluster("k80x44")
    with pytest.raises(dplace.Error, match="cycle"):
        dplace.load_graph({**TOY, "edges": TOY["edges"] + [{"from": "d", "to": "a"}]})
    with pytest.raises(TypeError):
        dplace.load_graph(42)
    with pytest.raises(TypeError, match="graph must be a dplace.Graph"):
        dplace.Problem(None)
    with pytest.raises(TypeError, match="graph must be a dplace.Graph"):
        dplace.Problem(None, "k80x4")
    with pytest.raises(TypeError):
        dplace.simulate(p, 3.5)
    with pytest.raises(dplace.Error, match="time_limit"):
        dplace.place(p, "mcmc", time_limit=-1)
    assert issubclass(dplace.Error, ValueError)


def test_robust_judgement_as_the_cli():
    check = os.path.join(TD, "baechi-check")
    graph, cluster = os.path.join(check, "inception_v3_fwd.json"), os.path.join(check, "baechi4.json")
    p = dplace.load_problem(graph, cluster)
    r = dplace.place(p, "m_etf", robust=4)
    out = cli("place", "--graph", graph, "--cluster", cluster, "--placer", "m_etf", "--robust", "4",
              "--json")
    assert out.returncode == 0, out.stderr
    expected = json.loads(out.stdout)["results"][0]["robust"]
    assert r.robust["worst"] == pytest.approx(expected["worst"])
    assert len(r.robust["values"]) == 4 and max(r.robust["values"]) == r.robust["worst"]
    searched = dplace.place(p, "mcmc", evaluations=2000, robust=4, robust_objective="worst")
    assert searched.robust["optimised"] and searched.robust["value"] == searched.robust["worst"]
    assert dplace.place(p, "m_etf").robust is None
    with pytest.raises(dplace.Error, match="robust"):
        dplace.place(p, "m_etf", robust=65)


def test_a_measured_search_searches_by_the_measure_it_is_given():
    """measure=: every evaluation of the search is a call of the function (here a stand-in that
    prefers every op on gpu1); the result is measured once more; errors are the function's."""
    p = dplace.load_problem(TOY, "k80x4")
    calls = []

    def measure(plan):
        calls.append(dict(plan))
        return 1.0 + sum(d != "gpu1" for d in plan.values())

    r = dplace.place(p, "mcmc", evaluations=400, measure=measure)
    assert r.measured == 1.0 and set(r.placement.values()) == {"gpu1"}
    assert set(calls[0]) == {"a", "b", "c", "d"} and len(calls) >= r.evaluations // 2
    assert r.to_json()["measured_s"] == 1.0
    assert dplace.place(p, "mcmc", evaluations=400, measure=measure).placement == r.placement
    assert dplace.place(p, "m_etf").measured is None

    def broken(plan):
        raise RuntimeError("CUDA out of memory")

    with pytest.raises(dplace.Error, match="measure: .*CUDA out of memory"):
        dplace.place(p, "mcmc", evaluations=50, measure=broken)
    with pytest.raises(dplace.Error, match="measure: must return a number"):
        dplace.place(p, "mcmc", evaluations=50, measure=lambda plan: "fast")
    with pytest.raises(dplace.Error, match="measure: must be a callable"):
        dplace.place(p, "mcmc", evaluations=50, measure=3)


@pytest.mark.parametrize("placers", ["mcmc", "local_search,portfolio", "placeto"])
def test_ctrl_c_stops_place_all_at_once(placers):
    """SIGINT while the core searches on a 20-s limit: KeyboardInterrupt within a second."""
    setup = 'problem = dplace.Problem(dplace.load_graph("gen:layered:1:0"), "a100x8", "step")'
    call = f"dplace.place_all(problem, {placers.split(',')!r}, time_limit=20)"
    assert interrupting.seconds_to_stop(setup, call) < 1.0
