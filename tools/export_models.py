#!/usr/bin/python3
"""Exports the benchmark models of the device-placement papers to ONNX, without weights.

Run with Debian's Python and packages (python3-torch, python3-torchvision):

    /usr/bin/python3 tools/export_models.py models/
    /usr/bin/python3 tools/export_models.py --training models/train/ resnet50 inception_v3 mobilenet_v2 vgg16
    /usr/bin/python3 tools/export_models.py --coverage testdata/onnx/

Each model is exported with export_params=False (parameters become graph inputs, so the files are
small and need no weight data), opset 13, at the batch size written in MODELS. The .onnx files are
committed under models/, so that tests and `make run` need no Python. The plain exports are eval
mode (torch.onnx folds BatchNorm into the convolutions and drops Dropout): what inference runs.
--training writes the exports in training mode (BatchNorm with its batch statistics,
Dropout with its mask): what a training step runs, and what `--training` should be given
(`make run` plans models/train/resnet50.onnx).
"""
import os
import sys

import torch
import torch.nn as nn
import torchvision


class EncoderLayer(nn.Module):
    """Post-norm Transformer encoder layer (BERT): self-attention and a GELU feed-forward block.

    Shapes are fixed at construction, so that the export has constant reshapes and ONNX shape
    inference knows every tensor (PyTorch's own layer slices its fused projection with computed
    bounds, which shape inference cannot follow)."""

    def __init__(self, batch, seq, d_model, heads, ffn):
        super().__init__()
        self.shape = (batch, seq, heads, d_model // heads)
        self.d_model = d_model
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)
        self.v = nn.Linear(d_model, d_model)
        self.out = nn.Linear(d_model, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.ffn1 = nn.Linear(d_model, ffn)
        self.ffn2 = nn.Linear(ffn, d_model)
        self.norm2 = nn.LayerNorm(d_model)

    def forward(self, x):
        b, s, h, d = self.shape
        q = self.q(x).view(b, s, h, d).transpose(1, 2)
        k = self.k(x).view(b, s, h, d).transpose(1, 2)
        v = self.v(x).view(b, s, h, d).transpose(1, 2)
        attention = torch.softmax(torch.matmul(q, k.transpose(2, 3)) / d ** 0.5, -1)
        context = torch.matmul(attention, v).transpose(1, 2).reshape(b, s, self.d_model)
        x = self.norm1(x + self.out(context))
        return self.norm2(x + self.ffn2(nn.functional.gelu(self.ffn1(x))))


class Encoder(nn.Module):
    """BERT-base-style Transformer encoder: 12 layers, d_model 768, 12 heads, FFN 3072."""

    def __init__(self, batch=8, seq=128, layers=12, d_model=768, heads=12, ffn=3072, vocab=30522):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.layers = nn.ModuleList(
            [EncoderLayer(batch, seq, d_model, heads, ffn) for _ in range(layers)])
        self.head = nn.Linear(d_model, vocab)

    def forward(self, tokens):
        x = self.embed(tokens)
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


class RnnLm(nn.Module):
    """RNN language model: 2-layer LSTM unrolled over the time steps (LSTMCell per step)."""

    def __init__(self, vocab=10000, hidden=1024, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.cells = nn.ModuleList([nn.LSTMCell(hidden, hidden) for _ in range(layers)])
        self.proj = nn.Linear(hidden, vocab)

    def forward(self, tokens):
        batch, steps = tokens.shape
        x = self.embed(tokens)
        state = [(torch.zeros(batch, c.hidden_size), torch.zeros(batch, c.hidden_size))
                 for c in self.cells]
        outputs = []
        for t in range(steps):
            h = x[:, t]
            for i, cell in enumerate(self.cells):
                state[i] = cell(h, state[i])
                h = state[i][0]
            outputs.append(self.proj(h))
        return torch.stack(outputs, 1)


class Nmt(nn.Module):
    """NMT: 2-layer LSTM encoder and decoder with Luong (dot) attention, unrolled."""

    def __init__(self, vocab=32000, hidden=1024, layers=2, target_steps=20):
        super().__init__()
        self.target_steps = target_steps
        self.src_embed = nn.Embedding(vocab, hidden)
        self.tgt_embed = nn.Embedding(vocab, hidden)
        self.enc = nn.ModuleList([nn.LSTMCell(hidden, hidden) for _ in range(layers)])
        self.dec = nn.ModuleList([nn.LSTMCell(hidden, hidden) for _ in range(layers)])
        self.attn_out = nn.Linear(2 * hidden, hidden)
        self.proj = nn.Linear(hidden, vocab)

    def forward(self, src, tgt):
        batch, steps = src.shape
        x = self.src_embed(src)
        hidden = self.enc[0].hidden_size
        state = [(torch.zeros(batch, hidden), torch.zeros(batch, hidden)) for _ in self.enc]
        memory = []
        for t in range(steps):
            h = x[:, t]
            for i, cell in enumerate(self.enc):
                state[i] = cell(h, state[i])
                h = state[i][0]
            memory.append(h)
        memory = torch.stack(memory, 1)  # batch x steps x hidden
        y = self.tgt_embed(tgt)
        outputs = []
        for t in range(self.target_steps):
            h = y[:, t]
            for i, cell in enumerate(self.dec):
                state[i] = cell(h, state[i])
                h = state[i][0]
            scores = torch.bmm(memory, h.unsqueeze(2)).squeeze(2)
            context = torch.bmm(torch.softmax(scores, 1).unsqueeze(1), memory).squeeze(1)
            attended = torch.tanh(self.attn_out(torch.cat([h, context], 1)))
            outputs.append(self.proj(attended))
        return torch.stack(outputs, 1)


class WaveNet(nn.Module):
    """WaveNet-style stack: gated dilated causal convolutions with residual and skip paths."""

    def __init__(self, channels=64, skip=256, layers=20, cycle=10, classes=256):
        super().__init__()
        self.input = nn.Conv1d(1, channels, 1)
        self.filters = nn.ModuleList()
        self.gates = nn.ModuleList()
        self.residuals = nn.ModuleList()
        self.skips = nn.ModuleList()
        self.dilations = [2 ** (i % cycle) for i in range(layers)]
        for d in self.dilations:  # causal: pad both sides by d, drop the last d outputs
            self.filters.append(nn.Conv1d(channels, channels, 2, dilation=d, padding=d))
            self.gates.append(nn.Conv1d(channels, channels, 2, dilation=d, padding=d))
            self.residuals.append(nn.Conv1d(channels, channels, 1))
            self.skips.append(nn.Conv1d(channels, skip, 1))
        self.out1 = nn.Conv1d(skip, skip, 1)
        self.out2 = nn.Conv1d(skip, classes, 1)

    def forward(self, audio):
        x = self.input(audio)
        total = 0
        for d, f, g, r, s in zip(self.dilations, self.filters, self.gates, self.residuals,
                                 self.skips):
            z = torch.tanh(f(x)[:, :, :-d]) * torch.sigmoid(g(x)[:, :, :-d])
            x = x + r(z)
            total = total + s(z)
        return self.out2(torch.relu(self.out1(torch.relu(total))))


def vision(name, batch, size=224, **kwargs):
    model = getattr(torchvision.models, name)(weights=None, **kwargs)
    return model, (torch.randn(batch, 3, size, size),), ["images"]


# name -> (constructor, description). Batch sizes as the papers used them where they say.
MODELS = {
    "inception_v3": (lambda: vision("inception_v3", 32, 299, aux_logits=False, init_weights=False),
                     "Inception-V3, batch 32, 299x299"),
    "resnet50": (lambda: vision("resnet50", 32), "ResNet-50, batch 32, 224x224"),
    "vgg16": (lambda: vision("vgg16", 32), "VGG-16, batch 32, 224x224"),
    "mobilenet_v2": (lambda: vision("mobilenet_v2", 32), "MobileNet-V2, batch 32, 224x224"),
    "bert_encoder": (lambda: (Encoder(), (torch.randint(0, 30522, (8, 128)),), ["tokens"]),
                     "Transformer encoder, 12 layers, d 768, batch 8, sequence 128"),
    "rnnlm": (lambda: (RnnLm(), (torch.randint(0, 10000, (64, 20)),), ["tokens"]),
              "RNNLM, 2-layer LSTM 1024, unrolled 20 steps, batch 64"),
    "nmt": (lambda: (Nmt(), (torch.randint(0, 32000, (64, 20)), torch.randint(0, 32000, (64, 20))),
                     ["source", "target"]),
            "NMT, 2-layer LSTM 1024 encoder-decoder with attention, unrolled 20+20, batch 64"),
    "wavenet": (lambda: (WaveNet(), (torch.randn(4, 1, 16000),), ["audio"]),
                "WaveNet-style stack, 20 gated dilated conv layers, batch 4, 16000 samples"),
}


class Recurrent(nn.Module):
    """nn.LSTM or nn.GRU as one ONNX op each (not unrolled)."""

    def __init__(self, kind):
        super().__init__()
        self.rnn = getattr(nn, kind)(64, 128, num_layers=2, bidirectional=True)

    def forward(self, x):
        return self.rnn(x)[0]


def transformer():
    model = nn.Transformer(d_model=64, nhead=4, num_encoder_layers=2, num_decoder_layers=2,
                           dim_feedforward=128)
    return model, (torch.randn(10, 2, 64), torch.randn(7, 2, 64)), ["source", "target"]


def detection(name):
    model = getattr(torchvision.models.detection, name)(weights=None, weights_backbone=None)
    return model, ([torch.randn(3, 320, 320)],), ["image"]


def segmentation(name):
    model = getattr(torchvision.models.segmentation, name)(weights=None, weights_backbone=None)
    return model, (torch.randn(1, 3, 224, 224),), ["images"]


# Small exports that cover the op types of torchvision's detection and segmentation models and of
# nn.LSTM / nn.GRU / nn.Transformer at opsets 13 and 17, for the importer's tests (testdata/onnx).
COVERAGE = {
    "lstm": (lambda: (Recurrent("LSTM"), (torch.randn(12, 2, 64),), ["x"]), (13, 17)),
    "gru": (lambda: (Recurrent("GRU"), (torch.randn(12, 2, 64),), ["x"]), (13, 17)),
    "transformer": (transformer, (13, 17)),
    "fcn_resnet50": (lambda: segmentation("fcn_resnet50"), (13,)),
    "deeplabv3_mobilenet": (lambda: segmentation("deeplabv3_mobilenet_v3_large"), (13,)),
    "ssdlite": (lambda: detection("ssdlite320_mobilenet_v3_large"), (13,)),
    "fasterrcnn": (lambda: detection("fasterrcnn_mobilenet_v3_large_320_fpn"), (13,)),
}


def export(model, inputs, input_names, path, opset, training=False):
    model.train(training)
    mode = torch.onnx.TrainingMode.TRAINING if training else torch.onnx.TrainingMode.EVAL
    torch.onnx.export(model, inputs, path, export_params=False, opset_version=opset,
                      input_names=input_names, do_constant_folding=False, training=mode)


def main():
    args = sys.argv[1:]
    coverage = bool(args) and args[0] == "--coverage"
    training = bool(args) and args[0] == "--training"
    if coverage or training:
        args = args[1:]
    out_dir = args[0] if args else ("testdata/onnx" if coverage else "models")
    only = set(args[1:])
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(0)
    if coverage:
        for name, (make, opsets) in COVERAGE.items():
            if only and name not in only:
                continue
            for opset in opsets:
                model, inputs, input_names = make()
                path = os.path.join(out_dir, f"{name}_opset{opset}.onnx")
                export(model, inputs, input_names, path, opset)
                print(f"{path}: {os.path.getsize(path)} bytes")
        return
    for name, (make, description) in MODELS.items():
        if only and name not in only:
            continue
        model, inputs, input_names = make()
        path = os.path.join(out_dir, name + ".onnx")
        export(model, inputs, input_names, path, 13, training)
        print(f"{path}: {description}, {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
