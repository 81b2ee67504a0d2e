#!/usr/bin/env python3
"""The planner's activation bytes against what PyTorch itself saves for backward, on a GPT written
as nanoGPT writes it (karpathy/nanoGPT model.py: LayerNorm with bias, manual attention with its
dropout, GELU MLP, tied head), in bf16 on the CPU.

  PYTHONPATH=build/release/python python3 bench/plan_memory_check.py

Counts every tensor autograd saves (torch.autograd.graph.saved_tensors_hooks), each storage once,
for one micro-batch through the whole model and its loss, and compares with the activations of
`dplace plan --fix tp=1,pp=1,dp=1,mbs=B,recompute=none --no-flash-attention` on a one-GPU machine.
"""
import json
import math
import pathlib
import subprocess
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = pathlib.Path(__file__).resolve().parents[1]


class Block(nn.Module):  # nanoGPT's Block, attention without flash
    def __init__(self, h, heads, p):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(h), nn.LayerNorm(h)
        self.c_attn, self.c_proj = nn.Linear(h, 3 * h), nn.Linear(h, h)
        self.attn_dropout, self.resid_dropout = nn.Dropout(p), nn.Dropout(p)
        self.c_fc, self.mlp_proj, self.mlp_dropout = nn.Linear(h, 4 * h), nn.Linear(4 * h, h), nn.Dropout(p)
        self.heads = heads

    def attn(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
        att = att.masked_fill(~mask, float("-inf"))
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp_dropout(self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)))))


class GPT(nn.Module):
    def __init__(self, layers, h, heads, vocab, positions, p):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, h), nn.Embedding(positions, h)
        self.drop = nn.Dropout(p)
        self.h = nn.ModuleList(Block(h, heads, p) for _ in range(layers))
        self.ln_f = nn.LayerNorm(h)
        self.lm_head = nn.Linear(h, vocab, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx, targets):
        pos = torch.arange(idx.size(1))
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.float().view(-1, logits.size(-1)), targets.view(-1))


def saved_bytes(model, idx, targets, p):
    """(bytes autograd saves, the same with dropout masks at 1 byte as CUDA's bool masks)."""
    weights = {q.storage().data_ptr() for q in model.parameters()}
    seen, masks = {}, {}

    def pack(t):
        key = t.storage().data_ptr()
        if key in weights:  # a parameter or a view of one (a transposed weight): not activations
            return t
        seen[key] = max(seen.get(key, 0), t.storage().nbytes())
        # CPU dropout keeps its mask in the input's dtype (values 0 and 1 / (1 - p)).
        if t.is_floating_point() and t.numel() > 1:
            values = torch.unique(t.float())
            if len(values) <= 2 and bool(((values == 0) | ((values - 1 / (1 - p)).abs() < 1e-2)).all()):
                masks[key] = t.numel()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = model(idx, targets)
    loss.backward()
    total = sum(seen.values())
    return total, total - sum(seen[k] for k in masks) + sum(masks.values())


def main():
    layers, h, heads, vocab, seq, batch = 4, 512, 8, 8192, 512, 2
    torch.manual_seed(0)
    model = GPT(layers, h, heads, vocab, seq, 0.1).to(torch.bfloat16).train()
    idx = torch.randint(0, vocab, (batch, seq))
    measured, as_cuda = saved_bytes(model, idx, torch.randint(0, vocab, (batch, seq)), 0.1)
    with tempfile.TemporaryDirectory() as tmp:
        config = pathlib.Path(tmp, "config.json")
        config.write_text(json.dumps({"model_type": "gpt2", "n_layer": layers, "n_embd": h,
                                      "n_head": heads, "n_inner": None, "vocab_size": vocab,
                                      "n_positions": seq, "attn_pdrop": 0.1,
                                      "resid_pdrop": 0.1, "embd_pdrop": 0.1}))
        cluster = pathlib.Path(tmp, "one.json")
        cluster.write_text(json.dumps({
            "format": "dplace-cluster/1", "name": "one-a100",
            "devices": [{"name": "gpu0", "kind": "gpu", "memory": "80GiB",
                         "peak_flops_half": 3.12e14, "memory_bandwidth": "2039GB/s"}]}))
        out = subprocess.run(
            [str(ROOT / "build/release/dplace"), "plan", "--model", str(config), "--cluster",
             str(cluster), "--global-batch", str(batch), "--seq-len", str(seq),
             "--fix", f"mbs={batch},recompute=none", "--no-flash-attention", "--json"],
            check=True, capture_output=True, text=True).stdout
    predicted = json.loads(out)["best"]["memory_per_rank"][0]["activations"]
    print(f"PyTorch (CPU) saves {measured / 2**20:.2f} MiB; with its dropout masks at 1 byte, as "
          f"CUDA's bool masks, {as_cuda / 2**20:.2f} MiB; dplace predicts {predicted / 2**20:.2f} "
          f"MiB: {predicted / measured:.3f} and {predicted / as_cuda:.3f}")


if __name__ == "__main__":
    main()
