#!/usr/bin/python3
"""The command line attacked on the surfaces added after the importers: `train`'s numbers, damaged
policy and checkpoint files, `gen` and gen: specs, every placer option, --robust, simulate
--step-model, and learned placers' budgets and determinism; and where files meet: an output
naming an input (by name, through ./, a link, a link to a link, a hard link), special files as
outputs (/dev/null, /dev/full, a FIFO with no reader), inputs that fail to read (an I/O error),
bad --stages and --devices. Each run is classified: exit 0, exit 2 with exactly one stderr line,
or a finding (exit 2 with other than one line, exit 1, a signal, a run past its time limit + 10% +
1 s, one without end: past --hang seconds, or an input or a special file replaced).

    /usr/bin/python3 fuzz/cli_attack.py [--runs N] [--seconds S] [--jobs J] [--seed K]
                                        [--hang S] [--dplace BINARY]

Prints the classification per surface and each finding's command; exits 1 on any finding.
"""

import argparse
import collections
import concurrent.futures
import json
import os
import random
import shutil
import stat
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VALUES = ["nan", "-nan", "inf", "-inf", "0", "-1", "1e308", "-0", "1e-300", "", "x", "true",
          "1.5", "2", "64", "2147483648", "1e9", "4294967296", "0x10", "1,2", "12abc", "1e6"]


def mutated(data, rng):
    """`data` with a byte flipped, a range cut, zeroed or repeated, or the end cut off."""
    b = bytearray(data)
    at = rng.randrange(len(b))
    kind = rng.randrange(5)
    n = rng.randrange(1, 64)
    if kind == 0:
        b[at] ^= 1 << rng.randrange(8)
    elif kind == 1:
        del b[at:at + n]
    elif kind == 2:
        b[at:at + n] = bytes(len(b[at:at + n]))
    elif kind == 3:
        b[at:at] = b[at:at + n]
    else:
        del b[at:]
    return bytes(b)


class Cases:
    """Draws command lines: (surface, args, time limit or None)."""

    def __init__(self, dplace, tmp, rng):
        self.dplace, self.tmp, self.rng = dplace, tmp, rng
        self.graph = os.path.join(ROOT, "testdata", "fuzz", "seeds", "graph.json")
        subprocess.run([dplace, "gen", "enas_cnn", "--count", "2", "--seed", "3", "--out",
                        os.path.join(tmp, "g"), "--quiet"], check=True)
        self.graphs = os.path.join(tmp, "g")
        self.train = ["train", "--graphs", self.graphs, "--cluster", "k80x4", "--max-units", "48",
                      "--episodes", "2"]
        ckpt = os.path.join(tmp, "good.ckpt")
        subprocess.run([dplace] + self.train + ["--updates", "1", "--checkpoint", ckpt,
                                                "--quiet"], check=True, capture_output=True)
        self.files = {"placeto": open(os.path.join(ROOT, "models/policies/placeto.pt"), "rb").read(),
                      "gdp": open(os.path.join(ROOT, "models/policies/gdp.pt"), "rb").read(),
                      "checkpoint": open(ckpt, "rb").read()}
        listed = json.loads(subprocess.run([dplace, "placers", "--json"], check=True,
                                           capture_output=True, text=True).stdout)
        self.placers = [p["name"] for p in listed]
        options = subprocess.run([dplace, "placers", "--options"], check=True,
                                 capture_output=True, text=True).stdout
        self.options = [line.split("=")[0].strip() for line in options.splitlines()
                        if line.startswith("    ") and "=" in line]
        self.families = ["enas_cnn", "enas_rnn", "nmt", "nasnet", "layered"]
        self.count = 0

    def value(self):
        return self.rng.choice(VALUES)

    def file(self, kind):
        self.count += 1
        path = os.path.join(self.tmp, f"{kind}_{self.count}.pt")
        with open(path, "wb") as f:
            f.write(mutated(self.files[kind], self.rng))
        return path

    def collide(self):
        """An output that names an input, a special file, or an input that cannot be read: the
        command line and a check, run after it, that the inputs and special files are intact."""
        r = self.rng
        self.count += 1
        d = os.path.join(self.tmp, f"collide_{self.count}")
        os.makedirs(d)
        files = {"graph": os.path.join(d, "g.json"), "cluster": os.path.join(d, "c.json"),
                 "plan": os.path.join(d, "plan.json"), "policy": os.path.join(d, "p.pt"),
                 "checkpoint": os.path.join(d, "ck.ckpt")}
        shutil.copy(self.graph, files["graph"])
        shutil.copy(os.path.join(ROOT, "clusters", "k80x4.json"), files["cluster"])
        shutil.copy(os.path.join(self.tmp, "plan.json"), files["plan"])
        with open(files["policy"], "wb") as f:
            f.write(self.files["placeto"])
        with open(files["checkpoint"], "wb") as f:
            f.write(self.files["checkpoint"])
        command = r.choice(["place", "simulate", "train_init", "train_resume", "train_graph"])
        if command == "place":
            inputs = ["graph", "cluster"] + (["plan"] if r.random() < 0.5 else [])
            args = ["place", "--graph", files["graph"], "--cluster", files["cluster"], "--placer",
                    r.choice(["heft", "m_etf", "single"])]
            if "plan" in inputs:
                args += ["--plan", files["plan"]]
            flags = ["--out", "--trace", "--export stages=", "--export device_map="]
        elif command == "simulate":
            inputs = ["graph", "cluster", "plan"]
            args = ["simulate", "--graph", files["graph"], "--cluster", files["cluster"], "--plan",
                    files["plan"]]
            flags = ["--trace"]
        else:
            shutil.copy(self.graph, os.path.join(d, "train_graph.json"))
            files["graph"] = os.path.join(d, "train_graph.json")
            inputs = ["graph"] + ({"train_init": ["policy"], "train_resume": ["checkpoint"]}
                                  .get(command, []))
            args = ["train", "--graphs", files["graph"], "--cluster", "k80x4", "--max-units", "48",
                    "--episodes", "2", "--updates", "1", "--quiet"]
            if command == "train_init":
                args += ["--init", files["policy"]]
            if command == "train_resume":
                args += ["--resume", files["checkpoint"]]
            flags = ["--out", "--log", "--checkpoint"]
        flag = r.choice(flags)
        victim = files[r.choice(inputs)]
        kind = r.choice(["same", "dot", "link", "chain", "hard", "null", "full", "fifo",
                         "unreadable", "stages", "devices"])
        target = os.path.join(d, "out.json")
        if kind == "same":
            target = victim
        elif kind == "dot":
            target = os.path.join(os.path.dirname(victim), ".", os.path.basename(victim))
        elif kind in ("link", "chain"):
            target = os.path.join(d, "link")
            os.symlink(os.path.basename(victim), target)
            if kind == "chain":
                os.symlink("link", os.path.join(d, "link2"))
                target = os.path.join(d, "link2")
        elif kind == "hard":
            target = os.path.join(d, "hard")
            os.link(victim, target)
        elif kind in ("null", "full"):
            target = "/dev/" + kind
        elif kind == "fifo":
            target = os.path.join(d, "fifo")
            os.mkfifo(target)
        elif kind == "unreadable":  # an input that fails with an I/O error
            position = args.index(victim) if victim in args else -1
            if position >= 0:
                args[position] = "/proc/self/mem"
        elif kind == "stages" and args[0] != "train":
            args += ["--stages", r.choice(["0", "00", "-1", "4097", "x", ""])]
        elif kind == "devices" and args[0] != "train":
            args += ["--devices", r.choice([",", "gpu0,,gpu1", "", ",gpu0", "gpu0,"])]
        if flag.startswith("--export"):
            args += ["--export", flag.split()[1] + target]
        else:
            args += [flag, target]
        if flag == "--checkpoint" and command == "train_resume" and victim == files["checkpoint"]:
            victim = None  # the next checkpoint may replace the one resumed from
        # The inputs by path (the victim among them), all unchanged afterwards.
        watched = {path: open(path, "rb").read() for path in files.values()}
        if victim is None:
            watched.pop(files["checkpoint"])

        def check():
            for path, before in watched.items():
                if not os.path.isfile(path) or os.path.islink(path) or \
                        open(path, "rb").read() != before:
                    return f"input {os.path.basename(path)} replaced"
            if kind == "fifo" and not stat.S_ISFIFO(os.lstat(target).st_mode):
                return "the FIFO was replaced"
            if kind in ("link", "chain") and not os.path.islink(target):
                return "a link was replaced"
            if kind in ("null", "full") and not stat.S_ISCHR(os.stat(target).st_mode):
                return f"/dev/{kind} was replaced"
            return None
        return "collide", args, None, check

    def draw(self):
        r = self.rng
        surface = r.choice(["train", "policy", "checkpoint", "gen", "spec", "opt", "robust",
                            "step_model", "collide", "collide"])
        if surface == "collide":
            return self.collide()
        out = os.path.join(self.tmp, f"out_{r.randrange(4)}")
        if surface == "train":
            flag = r.choice(["--lr", "--lr-end", "--max-grad-norm", "--updates", "--evaluations",
                             "--seconds", "--episodes", "--samples", "--hidden", "--groups",
                             "--max-units", "--checkpoint-every", "--clip", "--epochs",
                             "--entropy", "--discount", "--seed"])
            method = r.choice(["placeto", "colocrl", "hdp", "gdp"])
            args = self.train + ["--method", method, "--hidden", "8", flag, self.value(),
                                 "--out", out + ".pt", "--quiet"]
            # A budget the user may give is kept to a few seconds by another budget (training
            # stops at the first one reached): --seconds 1e6 is a valid request, not a hang.
            if flag == "--updates":
                args += ["--seconds", "3"]
            elif flag in ("--evaluations", "--seconds"):
                args += ["--updates", "2"]
            else:
                args += ["--updates", "1"]
            return surface, args, None
        if surface == "policy":
            method = r.choice(["placeto", "gdp"])
            if r.random() < 0.5:
                return surface, ["place", "--graph", self.graph, "--cluster", "k80x4", "--placer",
                                 method, "--opt", f"{method}.policy={self.file(method)}",
                                 "--time-limit", "1"], 1
            return surface, self.train + ["--method", method, "--hidden", "64", "--init",
                                          self.file(method), "--updates", "1", "--out",
                                          out + ".pt", "--quiet"], None
        if surface == "checkpoint":
            return surface, self.train + ["--resume", self.file("checkpoint"), "--updates", "2",
                                          "--out", out + ".pt", "--quiet"], None
        if surface == "gen":
            family = r.choice(self.families)
            keys = {"enas_cnn": ["cells", "nodes", "channels"], "enas_rnn": ["nodes", "hidden",
                                                                               "steps"],
                    "nmt": ["layers", "hidden", "steps"], "nasnet": ["cells", "channels"],
                    "layered": ["ops", "width", "fan_in", "cost_spread", "size_spread"]}[family]
            args = ["gen", family, "--out", out, "--quiet", "--seed", str(r.randrange(100))]
            for _ in range(r.randrange(1, 3)):
                args += ["--set", f"{r.choice(keys + ['bogus'])}={self.value()}"]
            if r.random() < 0.2:
                args += ["--count", self.value()]
            if r.random() < 0.3:
                args += ["--training"]
            return surface, args, None
        if surface == "spec":
            fields = ["1", "0", "-1", "18446744073709551615", "18446744073709551616", "2147483647",
                      "2147483648", "4294967296", "x", "", "1e3", "+2", " 1"]
            spec = f"gen:{r.choice(self.families + ['layerd', ''])}:{r.choice(fields)}:" \
                   f"{r.choice(fields)}"
            return surface, ["info", "--graph", spec], None
        if surface == "opt":
            option = r.choice(self.options + ["mcmc.bogus"])
            placer = option.split(".")[0]
            value = self.value() if r.random() < 0.8 else r.choice(self.placers)
            return surface, ["place", "--graph", self.graph, "--cluster", "k80x4", "--placer",
                             placer, "--opt", f"{option}={value}", "--time-limit", "1"], 1
        if surface == "robust":
            args = ["place", "--graph", self.graph, "--cluster", "k80x4", "--placer",
                    r.choice(["heft", "mcmc", "m_etf"]), "--robust", self.value(),
                    "--time-limit", "1"]
            if r.random() < 0.6:
                args += ["--robust-objective", r.choice(["worst", "median", "q0.9", "q0", "q2",
                                                         "", "x"])]
            if r.random() < 0.3:
                args += ["--objective", r.choice(["step", "throughput", "latency", "x"])]
            return surface, args, 1
        models = ["per_pair", "per_device", "gap", "arrival", "no_latency", "fast", ""]
        spec = ",".join(r.choice(models) for _ in range(r.randrange(1, 3)))
        plan = os.path.join(self.tmp, "plan.json")
        return surface, ["simulate", "--graph", self.graph, "--cluster", "k80x4", "--plan", plan,
                         "--step-model", spec], None


def run(dplace, args, limit, hang, check=None):
    """The outcome of one command line (and of `check`, which says what it broke, if anything)."""
    outcome = run_only(dplace, args, limit, hang)
    broken = check() if check is not None else None
    return (broken, outcome[1], outcome[2]) if broken else outcome


def run_only(dplace, args, limit, hang):
    start = time.monotonic()
    timeout = 1.1 * limit + 1 + 5 if limit else hang
    try:
        p = subprocess.run([dplace] + args, capture_output=True, text=True, timeout=timeout,
                           errors="replace")
    except subprocess.TimeoutExpired:
        return "no end", time.monotonic() - start, ""
    took = time.monotonic() - start
    lines = [line for line in p.stderr.splitlines()]
    if p.returncode < 0:
        return f"signal {-p.returncode}", took, p.stderr[-300:]
    if limit and took > 1.1 * limit + 1:
        return "past its limit", took, ""
    if p.returncode == 0:
        return "exit 0", took, ""
    if p.returncode == 2:
        return ("exit 2, one line" if len(lines) == 1 else f"exit 2, {len(lines)} lines"), took, \
            p.stderr[-300:]
    return f"exit {p.returncode}", took, p.stderr[-300:]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--hang", type=float, default=60)
    ap.add_argument("--dplace", default=os.environ.get(
        "DPLACE", os.path.join(ROOT, "build", "release", "dplace")))
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="dplace_attack_")
    try:
        # A copy of the binary: a rebuild while the campaign runs does not pull it away.
        binary = os.path.join(tmp, "dplace")
        shutil.copy2(a.dplace, binary)
        a.dplace = binary
        rng = random.Random(a.seed)
        cases = Cases(a.dplace, tmp, rng)
        subprocess.run([a.dplace, "place", "--graph", cases.graph, "--cluster", "k80x4",
                        "--placer", "heft", "--out", os.path.join(tmp, "plan.json")],
                       check=True, capture_output=True)
        tally = collections.defaultdict(collections.Counter)
        findings = []
        started = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
            pending = set()
            drawn = 0
            while drawn < a.runs or pending:
                while (drawn < a.runs and len(pending) < 2 * a.jobs and
                       not (a.seconds and time.monotonic() - started > a.seconds)):
                    surface, args, limit, *check = cases.draw()
                    pending.add(pool.submit(lambda s=surface, x=args, lim=limit, c=check:
                                            (s, x, run(a.dplace, x, lim, a.hang, *c))))
                    drawn += 1
                if a.seconds and time.monotonic() - started > a.seconds:
                    drawn = a.runs
                if not pending:
                    break
                done, pending = concurrent.futures.wait(
                    pending, return_when=concurrent.futures.FIRST_COMPLETED)
                for f in done:
                    surface, args, (outcome, took, err) = f.result()
                    tally[surface][outcome] += 1
                    runs = sum(sum(c.values()) for c in tally.values())
                    if runs % 500 == 0:
                        print(f"{runs} runs, {len(findings)} findings so far", flush=True)
                    if outcome not in ("exit 0", "exit 2, one line"):
                        findings.append(f"{surface}: {outcome} ({took:.1f} s): dplace "
                                        f"{' '.join(args)}\n    {err.strip()[-200:]}")
        total = sum(sum(c.values()) for c in tally.values())
        print(f"{total} runs in {time.monotonic() - started:.0f} s, seed {a.seed}")
        for surface in sorted(tally):
            print(f"  {surface:11s} " + ", ".join(f"{k}: {v}" for k, v in sorted(tally[surface].items())))
        for f in findings:
            print("FINDING " + f)
        return 1 if findings else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
