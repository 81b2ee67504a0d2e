"""dplace.train: the command line's `train` from Python (run::Train), on two generated graphs."""
import os
import subprocess

import pytest

import dplace

ROOT = os.environ.get("DPLACE_SOURCE_DIR", os.getcwd())
BINARY = os.environ.get("DPLACE", os.path.join(ROOT, "build", "release", "dplace"))


@pytest.fixture(scope="module")
def graphs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("graphs")
    subprocess.run([BINARY, "gen", "enas_cnn", "--count", "2", "--seed", "3", "--out", str(folder)],
                   check=True, capture_output=True)
    return str(folder)


def test_train_writes_a_policy_the_placer_takes_and_says_what_it_used(graphs, tmp_path):
    out = str(tmp_path / "p.pt")
    r = dplace.train(graphs, "k80x4", method="gdp", hidden=8, updates=2, episodes=2,
                     max_units=48, out=out, log=str(tmp_path / "curve.csv"))
    assert r["updates"] == 2 and r["problems"] == 2 and len(r["curve"]) == 2
    assert (r["hidden"], r["algorithm"], r["lr"]) == (8, "ppo", 1e-4)  # gdp's defaults but hidden
    problem = dplace.load_problem(os.path.join(graphs, sorted(os.listdir(graphs))[0]), "k80x4")
    placed = dplace.place(problem, "gdp", options={"gdp.policy": out}, evaluations=64)
    assert placed.feasible


def test_the_same_seed_trains_the_same_curve(graphs, tmp_path):
    run = [dplace.train(graphs, ["k80x4"], updates=2, episodes=2, max_units=48, seed=5,
                        out=str(tmp_path / f"p{i}.pt"))["curve"] for i in range(2)]
    assert run[0] == run[1]


def test_bad_options_are_refused_naming_them_before_any_work(graphs, tmp_path):
    with pytest.raises(dplace.Error, match=r"^lr_end: must be a number in \[0, 1\], not 2$"):
        dplace.train(graphs, "k80x4", lr_end=2.0, out=str(tmp_path / "p.pt"))
    with pytest.raises(dplace.Error, match="relabel: needs imitate and init"):
        dplace.train(graphs, "k80x4", relabel=True, out=str(tmp_path / "p.pt"))
    with pytest.raises(dplace.Error, match="train: no option 'update'.*updates"):
        dplace.train(graphs, "k80x4", update=2, out=str(tmp_path / "p.pt"))
    with pytest.raises(dplace.Error, match="^hidden: str is not a value of it"):
        dplace.train(graphs, "k80x4", hidden="wide", out=str(tmp_path / "p.pt"))
    with pytest.raises(dplace.Error, match="out: give the policy file"):
        dplace.train(graphs, "k80x4")
    graph = os.path.join(graphs, sorted(os.listdir(graphs))[0])
    with pytest.raises(dplace.Error, match="^out: .* is an input of this run"):
        dplace.train(graph, "k80x4", out=graph)
    assert not os.path.exists(str(tmp_path / "p.pt"))


def test_ctrl_c_stops_training_within_a_second_and_writes_nothing(graphs, tmp_path):
    import interrupting
    out = str(tmp_path / "p.pt")
    call = (f"dplace.train({graphs!r}, 'k80x4', seconds=30, episodes=2, max_units=48, "
            f"out={out!r})")
    assert interrupting.seconds_to_stop("", call) < 1.0
    assert not os.path.exists(out)
