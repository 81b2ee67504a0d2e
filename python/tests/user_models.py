"""Five models written the way users write them, in plain PyTorch, small enough for a CPU test:
a Llama-style decoder (RMSNorm, SwiGLU, rotary embeddings), a mixture-of-experts stack (top-2
router), a CLIP-like two-tower model (a ViT tower with a class token, a text tower, a contrastive
head with a learned temperature), a diffusion-style UNet (GroupNorm, SiLU, skip connections, a
timestep embedding) and a CNN with BatchNorm. build(name) gives (model, example inputs).
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate(x, cos, sin):
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


class Attention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, d, bias=False)
        self.v = nn.Linear(d, d, bias=False)
        self.o = nn.Linear(d, d, bias=False)

    def forward(self, x, cos, sin, mask):
        b, t, d = x.shape
        h = self.heads

        def split(y):
            return y.view(b, t, h, d // h).transpose(1, 2)

        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // h)
        y = torch.softmax(scores + mask, dim=-1) @ v
        return self.o(y.transpose(1, 2).reshape(b, t, d))


class SwiGLU(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.gate = nn.Linear(d, hidden, bias=False)
        self.up = nn.Linear(d, hidden, bias=False)
        self.down = nn.Linear(hidden, d, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


class DecoderBlock(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.input_norm = RMSNorm(d)
        self.attn = Attention(d, heads)
        self.post_norm = RMSNorm(d)
        self.mlp = SwiGLU(d, 4 * d)

    def forward(self, x, cos, sin, mask):
        x = x + self.attn(self.input_norm(x), cos, sin, mask)
        return x + self.mlp(self.post_norm(x))


class Decoder(nn.Module):
    def __init__(self, vocab=512, d=64, heads=4, layers=4, seq=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(DecoderBlock(d, heads) for _ in range(layers))
        self.norm = RMSNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        pos = torch.arange(seq).float()[:, None] / 10000 ** (torch.arange(0, d // heads, 2) /
                                                            (d // heads))
        pos = torch.cat((pos, pos), dim=-1)
        self.register_buffer("cos", pos.cos(), persistent=False)
        self.register_buffer("sin", pos.sin(), persistent=False)
        self.register_buffer("mask", torch.full((seq, seq), float("-inf")).triu(1),
                             persistent=False)

    def forward(self, tokens):
        x = self.embed(tokens)
        for layer in self.layers:
            x = layer(x, self.cos, self.sin, self.mask)
        return self.head(self.norm(x))


class Expert(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.fc1 = nn.Linear(d, hidden)
        self.fc2 = nn.Linear(hidden, d)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class MoEBlock(nn.Module):
    """Top-2 routing, written densely (every expert sees every token, weighted by the router):
    symbolic tracing cannot follow a data-dependent dispatch."""

    def __init__(self, d, experts):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.router = nn.Linear(d, experts, bias=False)
        self.experts = nn.ModuleList(Expert(d, 2 * d) for _ in range(experts))

    def forward(self, x):
        h = self.norm(x)
        logits = self.router(h)
        top, index = logits.topk(2, dim=-1)
        weights = torch.zeros_like(logits).scatter(-1, index, torch.softmax(top, dim=-1))
        out = x
        for e, expert in enumerate(self.experts):
            out = out + weights[..., e:e + 1] * expert(h)
        return out


class MoE(nn.Module):
    def __init__(self, d=64, blocks=4, experts=8):
        super().__init__()
        self.inp = nn.Linear(d, d)
        self.blocks = nn.ModuleList(MoEBlock(d, experts) for _ in range(blocks))
        self.out = nn.Linear(d, d)

    def forward(self, x):
        x = self.inp(x)
        for block in self.blocks:
            x = block(x)
        return self.out(x)


class TowerBlock(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.norm1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class VisionTower(nn.Module):
    def __init__(self, d=64, heads=4, layers=3, patch=8, image=32):
        super().__init__()
        self.patch = nn.Conv2d(3, d, patch, stride=patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, d))
        self.pos = nn.Parameter(torch.zeros(1, (image // patch) ** 2 + 1, d))
        self.blocks = nn.ModuleList(TowerBlock(d, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(d)

    def forward(self, images):
        x = self.patch(images).flatten(2).transpose(1, 2)
        x = torch.cat((self.cls.expand(x.shape[0], -1, -1), x), dim=1) + self.pos
        for block in self.blocks:
            x = block(x)
        return self.norm(x[:, 0])


class TextTower(nn.Module):
    def __init__(self, vocab=256, d=64, heads=4, layers=3, seq=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.zeros(1, seq, d))
        self.blocks = nn.ModuleList(TowerBlock(d, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(d)

    def forward(self, tokens):
        x = self.embed(tokens) + self.pos
        for block in self.blocks:
            x = block(x)
        return self.norm(x[:, -1])


class Clip(nn.Module):
    def __init__(self, d=64):
        super().__init__()
        self.vision = VisionTower(d)
        self.text = TextTower(d=d)
        self.image_proj = nn.Linear(d, d, bias=False)
        self.text_proj = nn.Linear(d, d, bias=False)
        self.logit_scale = nn.Parameter(torch.tensor(math.log(1 / 0.07)))

    def forward(self, images, tokens):
        i = F.normalize(self.image_proj(self.vision(images)), dim=-1)
        t = F.normalize(self.text_proj(self.text(tokens)), dim=-1)
        return self.logit_scale.exp() * i @ t.t()


class ResBlock(nn.Module):
    def __init__(self, cin, cout, tdim):
        super().__init__()
        self.norm1 = nn.GroupNorm(8, cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.time = nn.Linear(tdim, cout)
        self.norm2 = nn.GroupNorm(8, cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x, t):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.time(t)[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        return h + self.skip(x)


class UNet(nn.Module):
    def __init__(self, widths=(32, 64, 96), tdim=64):
        super().__init__()
        self.tdim = tdim
        self.time_mlp = nn.Sequential(nn.Linear(tdim, tdim), nn.SiLU(), nn.Linear(tdim, tdim))
        self.stem = nn.Conv2d(3, widths[0], 3, padding=1)
        self.down = nn.ModuleList()
        cin = widths[0]
        for w in widths:
            self.down.append(ResBlock(cin, w, tdim))
            cin = w
        self.mid = ResBlock(cin, cin, tdim)
        self.up = nn.ModuleList()
        for w in reversed(widths):
            self.up.append(ResBlock(cin + w, w, tdim))
            cin = w
        self.out = nn.Conv2d(cin, 3, 3, padding=1)

    def forward(self, x, timestep):
        half = self.tdim // 2
        freqs = torch.exp(-math.log(10000) * torch.arange(half) / half)
        angles = timestep[:, None].float() * freqs[None]
        t = self.time_mlp(torch.cat((angles.sin(), angles.cos()), dim=-1))
        h = self.stem(x)
        skips = []
        for i, block in enumerate(self.down):
            h = block(h, t)
            skips.append(h)
            if i < len(self.down) - 1:
                h = F.avg_pool2d(h, 2)
        h = self.mid(h, t)
        for i, block in enumerate(self.up):
            h = block(torch.cat((h, skips.pop()), dim=1), t)
            if i < len(self.up) - 1:
                h = F.interpolate(h, scale_factor=2.0, mode="nearest")
        return self.out(h)


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                   nn.BatchNorm2d(cout)) if stride != 1 or cin != cout else None)

    def forward(self, x):
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return self.relu(y + (x if self.down is None else self.down(x)))


class Cnn(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, 1, 1, bias=False), nn.BatchNorm2d(32),
                                  nn.ReLU(inplace=True), nn.MaxPool2d(2))
        self.layers = nn.Sequential(BasicBlock(32, 32, 1), BasicBlock(32, 64, 2),
                                    BasicBlock(64, 128, 2))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(128, classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.layers(self.stem(x))), 1))


def build(name, batch=4):
    """(model, example inputs) of one of NAMES, seeded."""
    torch.manual_seed(0)
    if name == "decoder":
        return Decoder(), (torch.randint(0, 512, (batch, 32)),)
    if name == "moe":
        return MoE(), (torch.randn(batch, 16, 64),)
    if name == "clip":
        return Clip(), (torch.randn(batch, 3, 32, 32), torch.randint(0, 256, (batch, 16)))
    if name == "unet":
        return UNet(), (torch.randn(batch, 3, 32, 32), torch.randint(0, 1000, (batch,)))
    if name == "cnn":
        return Cnn(), (torch.randn(batch, 3, 32, 32),)
    raise ValueError(name)


NAMES = ("decoder", "moe", "clip", "unet", "cnn")


def saved_by_autograd(model, inputs):
    """PyTorch's own count (tools/saved_tensors.py): bytes of the storages autograd saves in one
    training-mode forward, each once, less the parameters', buffers' and inputs' storages."""
    def key(t):
        return t._storage().data_ptr()

    outside = {key(t) for t in list(model.parameters()) + list(model.buffers())}
    outside.update(key(t) for t in inputs if isinstance(t, torch.Tensor))
    packed = []
    model.train()
    with torch.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
        model(*inputs)
    seen = {}
    for t in packed:
        if key(t) not in outside:
            seen.setdefault(key(t), t._storage().nbytes())
    return sum(seen.values())
