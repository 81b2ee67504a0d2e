"""The local machine as a dplace-cluster/1 document, with its figures measured here.

Ops profiled by dplace.torch carry their own measured times, so a device's peak FLOP/s and memory
bandwidth are only the roofline's fallback for ops without one: a few milliseconds of matmul and
copy give them. Links are measured the way dplace.torch.apply moves tensors: a copy between two
CPU "devices" (Tensor.clone, what apply(emulate_transfers=True) does), Tensor.to between the CPU
and a GPU. Imported only by dplace.torch.
"""

import ctypes
import os
import statistics
import time

import torch


def meminfo_bytes(key="MemTotal"):
    """A /proc/meminfo field in bytes, or None where there is no /proc/meminfo."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _median_time(fn, device, repeat=5):
    fn()
    samples = []
    for _ in range(repeat):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def peak_flops(device, n=512):
    """FLOP/s of an n x n fp32 matmul on `device` (a rough peak for the roofline fallback)."""
    device = torch.device(device)
    n = 4096 if device.type == "cuda" else n
    a = torch.randn(n, n, device=device)
    b = torch.randn(n, n, device=device)
    return 2 * n ** 3 / _median_time(lambda: a @ b, device)


def copy_link(src, dst, nbytes=64 << 20):
    """(bandwidth B/s, latency s) of moving a tensor from `src` to `dst` as apply() does: a clone
    when both are one torch device, Tensor.to otherwise. Latency: a 4-byte tensor's move."""
    src, dst = torch.device(src), torch.device(dst)
    big = torch.empty(nbytes // 4, device=src).fill_(1.0)
    small = torch.ones(1, device=src)
    sync = dst if dst.type == "cuda" else src
    if src == dst:
        move_big, move_small = big.clone, small.clone
    else:
        def move_big():
            return big.to(dst)

        def move_small():
            return small.to(dst)
    latency = _median_time(move_small, sync, repeat=20)
    t = _median_time(move_big, sync)
    return nbytes / max(t - latency, 1e-9), latency


def memory_bandwidth(device):
    """Bytes read and written per second by a 64 MiB copy on `device`."""
    bw, _ = copy_link(device, device)
    return 2 * bw


def local_cluster(devices="cpu", name=None):
    """A dplace-cluster/1 dict of this machine (see the module doc).

    devices: "cpu" (one CPU device, "cpu0"), "cpu+cpu" (two CPU devices sharing this machine's
    cores and memory, each given half the memory, joined by a link of measured memcpy speed), or
    "cpu+gpu" (the CPU and every GPU torch sees, "gpu0", …, links measured by Tensor.to).
    """
    if devices not in ("cpu", "cpu+cpu", "cpu+gpu"):
        raise ValueError(f"devices is 'cpu', 'cpu+cpu' or 'cpu+gpu', not {devices!r}")
    memory = meminfo_bytes("MemTotal")
    cpu = {"kind": "cpu", "peak_flops": peak_flops("cpu"),
           "memory_bandwidth": memory_bandwidth("cpu")}
    threads = torch.get_num_threads()
    source = (f"measured on {os.uname().nodename} by dplace.torch.local_cluster with "
              f"{threads} torch threads")
    doc = {"format": "dplace-cluster/1", "name": name or f"local-{devices}", "source": source}
    if devices == "cpu":
        doc["devices"] = [dict(cpu, name="cpu0", **({"memory": memory} if memory else {}))]
        return doc
    if devices == "cpu+cpu":
        half = {"memory": memory // 2} if memory else {}
        doc["devices"] = [dict(cpu, name="cpu0", **half), dict(cpu, name="cpu1", **half)]
        bw, lat = copy_link("cpu", "cpu")
        doc["links"] = [{"between": ["cpu0", "cpu1"], "bandwidth": bw, "latency": lat}]
        return doc
    if not torch.cuda.is_available():
        raise ValueError("devices='cpu+gpu' needs a GPU, and torch.cuda.is_available() is False")
    doc["devices"] = [dict(cpu, name="cpu0", **({"memory": memory} if memory else {}))]
    doc["links"] = []
    for i in range(torch.cuda.device_count()):
        gpu = torch.device("cuda", i)
        doc["devices"].append({
            "name": f"gpu{i}", "kind": "gpu",
            "memory": torch.cuda.get_device_properties(i).total_memory,
            "peak_flops": peak_flops(gpu), "memory_bandwidth": memory_bandwidth(gpu)})
        bw, lat = copy_link("cpu", gpu)
        doc["links"].append({"between": ["cpu0", f"gpu{i}"], "bandwidth": bw, "latency": lat})
        for j in range(i):
            bw, lat = copy_link(torch.device("cuda", j), gpu)
            doc["links"].append({"between": [f"gpu{j}", f"gpu{i}"], "bandwidth": bw,
                                 "latency": lat})
    return doc


def keep_freed_memory():
    """Tells glibc's malloc to keep freed memory for reuse (no mmap for large blocks, no trim),
    as PyTorch's caching allocator does on a GPU; True where it applied (glibc), else False.

    With glibc's defaults a CPU step that allocates large activations returns them to the system
    and faults fresh pages in on every step, and how much it pays depends on the order of its
    allocations: a profile (which holds a little more) pays more of it than the real step, so
    predictions run high (1.3-1.4x for training steps at batch 32, docs/fidelity.md). This is a
    process-wide setting: call it first, before the model allocates."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return False
    m_trim_threshold, m_mmap_max = -1, -4
    return bool(libc.mallopt(m_mmap_max, 0)) and bool(libc.mallopt(m_trim_threshold, 2**31 - 1))
