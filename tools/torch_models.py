"""PyTorch models shared by the export and check scripts: each constructor returns
(model, example_inputs, input_names), with random initial weights and fixed input shapes.

    resnet50            torchvision ResNet-50, batch 32, 224x224
    vit_b_16            torchvision ViT-B/16, batch 32, 224x224
    gpt2_small          GPT-2-small-like decoder (12 pre-norm blocks, d 768), batch 8, sequence 512
    mobilenet_v3_large  torchvision MobileNet-V3-Large, batch 32, 224x224
    lstm_seq2seq        2-layer LSTM encoder-decoder (hidden 512, vocabulary 8000), batch 16, 20+20

Module names follow the originals (torchvision's, and GPT-2's `wte`, `wpe`, `h.N.attn.c_attn`,
`ln_f`, `lm_head`), so that state_dict keys and device maps read as they do for those models.
"""
import torch
import torch.nn as nn
import torchvision


def vision(name, batch, size=224):
    """A torchvision classifier without pretrained weights, with a batch of random images."""
    model = getattr(torchvision.models, name)(weights=None)
    return model, (torch.randn(batch, 3, size, size),), ["images"]


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention with a fused q/k/v projection (GPT-2's c_attn) and an
    output projection (c_proj). Shapes are fixed at construction: constant views and constant
    slice bounds, so that ONNX shape inference can follow every tensor."""

    def __init__(self, batch, seq, d_model, heads):
        super().__init__()
        self.shape = (batch, seq, heads, d_model // heads)
        self.d_model = d_model
        self.c_attn = nn.Linear(d_model, 3 * d_model)
        self.c_proj = nn.Linear(d_model, d_model)

    def forward(self, x, mask):
        b, s, h, d = self.shape
        n = self.d_model
        qkv = self.c_attn(x)
        q = qkv[:, :, :n].reshape(b, s, h, d).transpose(1, 2)
        k = qkv[:, :, n:2 * n].reshape(b, s, h, d).transpose(1, 2)
        v = qkv[:, :, 2 * n:].reshape(b, s, h, d).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(2, 3)) / d ** 0.5
        attention = torch.softmax(scores.masked_fill(mask, float("-inf")), -1)
        context = torch.matmul(attention, v).transpose(1, 2).reshape(b, s, n)
        return self.c_proj(context)


class Mlp(nn.Module):
    """GPT-2's feed-forward block: d -> 4d -> d with exact (erf) GELU."""

    def __init__(self, d_model, ffn):
        super().__init__()
        self.c_fc = nn.Linear(d_model, ffn)
        self.c_proj = nn.Linear(ffn, d_model)

    def forward(self, x):
        return self.c_proj(nn.functional.gelu(self.c_fc(x)))


class Block(nn.Module):
    """Pre-norm decoder block: x + attn(ln_1(x)), then x + mlp(ln_2(x))."""

    def __init__(self, batch, seq, d_model, heads, ffn):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(batch, seq, d_model, heads)
        self.ln_2 = nn.LayerNorm(d_model)
        self.mlp = Mlp(d_model, ffn)

    def forward(self, x, mask):
        x = x + self.attn(self.ln_1(x), mask)
        return x + self.mlp(self.ln_2(x))


class Gpt2(nn.Module):
    """GPT-2-small-like decoder: token and learned position embeddings, 12 pre-norm blocks
    (d 768, 12 heads, FFN 3072), final LayerNorm and an lm_head that is not tied to the token
    embedding. No dropout. The causal mask and the position ids are constant buffers kept out of
    the state_dict (persistent=False), so the state_dict holds the parameters only."""

    def __init__(self, batch=8, seq=512, layers=12, d_model=768, heads=12, ffn=3072, vocab=50257,
                 positions=1024):
        super().__init__()
        self.wte = nn.Embedding(vocab, d_model)
        self.wpe = nn.Embedding(positions, d_model)
        self.h = nn.ModuleList([Block(batch, seq, d_model, heads, ffn) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab, bias=False)
        self.register_buffer("position_ids", torch.arange(seq), persistent=False)
        # True above the diagonal: the positions a token may not attend to.
        self.register_buffer("causal_mask", torch.ones(seq, seq, dtype=torch.bool).triu(1),
                             persistent=False)

    def forward(self, tokens):
        x = self.wte(tokens) + self.wpe(self.position_ids)
        for block in self.h:
            x = block(x, self.causal_mask)
        return self.lm_head(self.ln_f(x))


def gpt2_small(batch=8, seq=512):
    """GPT-2 small (about 124M parameters plus an untied 38.6M lm_head), batch 8, sequence 512."""
    return Gpt2(batch, seq), (torch.randint(0, 50257, (batch, seq)),), ["tokens"]


class LstmSeq2Seq(nn.Module):
    """Encoder-decoder of two 2-layer nn.LSTMs (hidden 512); the decoder starts from the
    encoder's final state, and a linear head maps its outputs to the target vocabulary."""

    def __init__(self, vocab=8000, embed=256, hidden=512, layers=2):
        super().__init__()
        self.src_embed = nn.Embedding(vocab, embed)
        self.tgt_embed = nn.Embedding(vocab, embed)
        self.encoder = nn.LSTM(embed, hidden, num_layers=layers, batch_first=True)
        self.decoder = nn.LSTM(embed, hidden, num_layers=layers, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, source, target):
        _, state = self.encoder(self.src_embed(source))
        outputs, _ = self.decoder(self.tgt_embed(target), state)
        return self.head(outputs)


def lstm_seq2seq(batch=16, source_steps=20, target_steps=20, vocab=8000):
    """The LSTM encoder-decoder, batch 16, 20 source and 20 target steps."""
    inputs = (torch.randint(0, vocab, (batch, source_steps)),
              torch.randint(0, vocab, (batch, target_steps)))
    return LstmSeq2Seq(vocab), inputs, ["source", "target"]


# name -> constructor returning (model, example_inputs, input_names).
MODELS = {
    "resnet50": lambda: vision("resnet50", 32),
    "vit_b_16": lambda: vision("vit_b_16", 32),
    "gpt2_small": gpt2_small,
    "mobilenet_v3_large": lambda: vision("mobilenet_v3_large", 32),
    "lstm_seq2seq": lstm_seq2seq,
}


def build(name):
    """(model, example_inputs, input_names) for a name of MODELS."""
    if name not in MODELS:
        raise KeyError(f"unknown model {name!r}; known: {', '.join(MODELS)}")
    return MODELS[name]()
