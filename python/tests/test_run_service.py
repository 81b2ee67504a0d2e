"""Python on the run service: the same decisions as the command line (what `all` means, the total
time shared by the placers, the plan deployed), the fit report, and a batch for traced graphs."""

import json
import os
import subprocess

import pytest

import dplace

ROOT = os.environ.get("DPLACE_SOURCE_DIR",
                      os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
DPLACE = os.environ.get("DPLACE", os.path.join(ROOT, "build", "release", "dplace"))
RESNET = os.path.join(ROOT, "models", "resnet50.onnx")


def test_deploy_writes_the_plan_the_command_line_writes():
    placers = ["single", "m_etf", "heft", "m_topo"]
    cli = json.loads(subprocess.run(
        [DPLACE, "place", "--graph", RESNET, "--cluster", "k80x4", "--placer", ",".join(placers),
         "--tolerance", "0.05", "--json"], check=True, capture_output=True, text=True).stdout)
    problem = dplace.load_problem(RESNET, "k80x4")
    results = dplace.place_all(problem, placers)
    chosen, lines = dplace.deploy(problem, results, tolerance=0.05)
    assert chosen.placer == cli["best"]["placer"]
    assert chosen.value == pytest.approx(cli["best"]["value"])
    assert all(isinstance(line, str) for line in lines)
    with pytest.raises(dplace.Error, match="tolerance: must be between 0 and 1"):
        dplace.deploy(problem, results, tolerance=2)


def test_a_total_time_limit_is_shared_by_the_placers():
    problem = dplace.load_problem(RESNET, "k80x4")
    results = dplace.place_all(problem, ["mcmc", "local_search"], total_time_limit=1.0)
    assert sum(r.search_time_s for r in results) <= 1.0 + 0.5
    with pytest.raises(dplace.Error, match="total_time_limit"):
        dplace.place_all(problem, ["single"], total_time_limit=-1)


def test_errors_name_the_argument_not_a_flag():
    problem = dplace.load_problem(RESNET, "k80x4")
    with pytest.raises(dplace.Error) as e:
        dplace.place_all(problem, ["single"], robust=65)
    assert str(e.value).startswith("robust: must be between 0 and 64")
    with pytest.raises(dplace.Error) as e:
        dplace.place_all(problem, ["single"], robust=2, robust_objective="q2")
    assert "--" not in str(e.value)


def test_the_fit_report_uses_the_graphs_batch():
    problem = dplace.load_problem(RESNET, "k80x4")
    lines = dplace.fit_report(problem)
    assert any(line.startswith("one gpu (of 4): fits") for line in lines)
    assert any("largest batch that fits" in line for line in lines)
    assert any(line.startswith("data parallel on 4 gpu") for line in lines)
    plan = dplace.place(problem, "single")
    lines = dplace.fit_report(problem, plan=plan)
    assert any("the plan:" in line for line in lines)
    assert lines[-1].startswith("strategy that wins: data parallelism on 4 gpu")


def test_a_traced_graph_knows_its_batch():
    torch = pytest.importorskip("torch")
    import dplace.torch as dt
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    g = dt.from_module(model, (torch.randn(16, 8),), training=True)
    assert g.batch == 16
    assert g.to_json()["batch"] == 16
    lines = dplace.fit_report(dplace.Problem(g, "a100x8"))
    assert any("largest batch that fits" in line for line in lines)


def test_two_threads_placing_with_learned_placers_each_get_what_they_would_alone():
    import threading
    problem = dplace.load_problem(RESNET, "k80x4")
    if "hdp" not in [p["name"] for p in dplace.placers()]:
        pytest.skip("built without LibTorch")
    kwargs = dict(options={"hdp.hidden": 8, "colocrl.hidden": 8}, evaluations=16, seed=3)

    def plans(order):
        return [r.placement for r in dplace.place_all(problem, order, **kwargs)]

    alone = {"hdp": plans(["hdp"])[0], "colocrl": plans(["colocrl"])[0]}
    got = {}
    threads = [threading.Thread(target=lambda k=k, o=o: got.__setitem__(k, plans(o)))
               for k, o in (("a", ["hdp", "colocrl"]), ("b", ["colocrl", "hdp"]))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
        assert not t.is_alive(), "place_all from two threads did not end within 120 s"
    assert got["a"] == [alone["hdp"], alone["colocrl"]]
    assert got["b"] == [alone["colocrl"], alone["hdp"]]
