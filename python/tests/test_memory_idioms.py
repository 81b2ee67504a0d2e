"""One small model per memory idiom a user's model is made of, each read the three ways a user
reads it (ONNX with constant folding off and on, dplace.torch on the module as written), against
the bytes PyTorch's autograd saves for it (saved_tensors_hooks; dropout as a GPU keeps it): a
same-type cast is no copy, a reshape of an expanded or transposed tensor copies, scatter and
gather keep their index only, dropout keeps a 1-byte mask (the float noise on a CPU), mean over some axes keeps what torch's
mean keeps, a norm written out over the channels is no F.layer_norm, a tied embedding and head hold
one weight."""

import warnings

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")

import dplace  # noqa: E402
import dplace.torch as dt  # noqa: E402
import held_out_models as hm  # noqa: E402

nn = torch.nn
F = torch.nn.functional


class SameTypeCast(nn.Module):
    """HF attention's softmax(..., dtype=torch.float32) and .float() on fp32: no copy."""

    def __init__(self):
        super().__init__()
        self.q = nn.Linear(32, 32)

    def forward(self, x):
        q = self.q(x)
        att = F.softmax(q @ q.transpose(-1, -2), dim=-1, dtype=torch.float32).to(q.dtype)
        return (att @ q.float()).sum()


class RepeatKv(nn.Module):
    """Grouped-query attention's repeat_kv: a reshape of an expanded tensor copies."""

    def __init__(self):
        super().__init__()
        self.kv = nn.Linear(32, 16)
        self.q = nn.Linear(32, 64)

    def forward(self, x):
        b, t, _ = x.shape
        kv = self.kv(x).view(b, t, 2, 8).transpose(1, 2)
        kv = kv[:, :, None, :, :].expand(b, 2, 4, t, 8).reshape(b, 8, t, 8)
        q = self.q(x).view(b, t, 8, 8).transpose(1, 2)
        return (q @ kv.transpose(-1, -2)).relu().sum()


class TransposedReshape(nn.Module):
    """Heads merged back: transpose then reshape copies (contiguous() implied)."""

    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(32, 32)
        self.out = nn.Linear(32, 32)

    def forward(self, x):
        b, t, _ = x.shape
        h = self.inp(x).view(b, t, 4, 8).transpose(1, 2).tanh()
        return self.out(h.transpose(1, 2).reshape(b, t, 32)).sum()


class ScatterGather(nn.Module):
    """A message-passing layer: index_select of node features, scatter_add of the messages."""

    def __init__(self):
        super().__init__()
        self.edge = nn.Linear(32, 32)
        self.node = nn.Linear(32, 32)

    def forward(self, x, senders, receivers):
        messages = self.edge(torch.index_select(x, 0, senders)).relu()
        summed = torch.zeros_like(x).scatter_add(0, receivers[:, None].expand(-1, 32), messages)
        return self.node(summed).sum()


class Dropouts(nn.Module):
    """nn.Dropout and F.dropout in training: a 1-byte mask per element on a GPU."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(32, 64)
        self.drop = nn.Dropout(0.1)
        self.head = nn.Linear(64, 8)

    def forward(self, x):
        h = self.drop(self.fc(x).relu())
        return self.head(F.dropout(h, 0.2, training=self.training)).sum()


class MeanOverAxes(nn.Module):
    """A mean over some axes (pooling tokens) and over all of them."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(32, 32)

    def forward(self, x):
        h = self.fc(x).tanh()
        return h.mean(dim=1).square().sum() + h.square().mean()


class ChannelsFirstNorm(nn.Module):
    """ConvNeXt's channels-first LayerNorm, written out over dimension 1: ops PyTorch runs and
    keeps one by one (not F.layer_norm, which an export over the last dimension decomposes)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.weight = nn.Parameter(torch.ones(8))
        self.bias = nn.Parameter(torch.zeros(8))

    def forward(self, x):
        x = self.conv(x)
        # (ConvNeXt computes x - u twice; torch.onnx merges the two into one Sub, so an export
        # cannot show the second copy PyTorch keeps: here it is computed once.)
        d = x - x.mean(1, keepdim=True)
        x = d / torch.sqrt(d.pow(2).mean(1, keepdim=True) + 1e-6)
        return (self.weight[:, None, None] * x + self.bias[:, None, None]).relu().sum()


class TiedHead(nn.Module):
    """An embedding read again as the output projection."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(100, 32)
        self.mix = nn.Linear(32, 32)
        self.head = nn.Linear(32, 100, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, ids):
        return self.head(self.mix(self.embed(ids)).relu()).logsumexp(-1).sum()


def _tokens():
    return torch.randint(0, 100, (2, 16))


def _graph():
    generator = torch.Generator().manual_seed(0)
    senders = torch.randint(0, 12, (40,), generator=generator)
    receivers = torch.randint(0, 12, (40,), generator=generator)
    return (torch.randn(12, 32), senders, receivers), ["x", "senders", "receivers"]


IDIOMS = {
    "same_type_cast": (SameTypeCast, lambda: ((torch.randn(2, 16, 32),), ["x"])),
    "repeat_kv": (RepeatKv, lambda: ((torch.randn(2, 16, 32),), ["x"])),
    "transposed_reshape": (TransposedReshape, lambda: ((torch.randn(2, 16, 32),), ["x"])),
    "scatter_gather": (ScatterGather, _graph),
    "dropout": (Dropouts, lambda: ((torch.randn(4, 16, 32),), ["x"])),
    "mean_over_axes": (MeanOverAxes, lambda: ((torch.randn(2, 16, 32),), ["x"])),
    "tied_head": (TiedHead, lambda: ((_tokens(),), ["ids"])),
    "channels_first_norm": (ChannelsFirstNorm, lambda: ((torch.randn(2, 3, 8, 8),), ["x"])),
}


def _build(idiom):
    make, example = IDIOMS[idiom]
    torch.manual_seed(0)
    inputs, names = example()
    return make(), inputs, names


def _read(idiom, way, tmp_path):
    """The graph of an idiom read one way: "torch" (dplace.torch), "kept" or "folded" (ONNX with
    constant folding off or on), "folded+values" (folded, the parameters' values in the file)."""
    model, inputs, names = _build(idiom)
    if way == "torch":
        return dt.from_module(model, inputs)
    path = str(tmp_path / f"{idiom}_{way}.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hm.export_onnx(model, inputs, names, path, fold=way.startswith("folded"),
                       opset=16 if idiom == "scatter_gather" else 14,
                       export_params=way.endswith("values"))
    return dplace.load_graph(path)


@pytest.mark.parametrize("way", ["kept", "folded", "torch"])
@pytest.mark.parametrize("idiom", sorted(IDIOMS))
def test_each_idiom_keeps_what_autograd_saves(idiom, way, tmp_path):
    expected = hm.saved_bytes(*_build(idiom)[:2])
    assert expected > 0
    graph = _read(idiom, way, tmp_path)
    assert graph.saved_activation_bytes == pytest.approx(expected, rel=0.02), (
        graph.saved_activation_bytes, expected)


@pytest.mark.parametrize("way", ["kept", "folded", "torch"])
def test_dropout_on_a_cpu_keeps_what_the_cpu_kernel_saves(way, tmp_path):
    """On a CPU, F.dropout keeps the scaled float noise (4 bytes an fp32 element), not CUDA's
    one-byte mask: what the step simulator counts on a device of kind "cpu"."""
    model, inputs, _ = _build("dropout")
    cpu, gpu = hm.saved_bytes(model, inputs, dropout="cpu"), hm.saved_bytes(model, inputs)
    assert cpu > gpu
    graph = _read("dropout", way, tmp_path)
    assert graph.saved_activation_bytes == pytest.approx(gpu, rel=0.02)
    assert graph.saved_activation_bytes_cpu == pytest.approx(cpu, rel=0.02), (
        graph.saved_activation_bytes_cpu, cpu)


@pytest.mark.parametrize("way", ["kept", "folded+values", "torch"])
def test_a_tied_embedding_and_head_hold_one_weight(way, tmp_path):
    """Folded with its values in the file, the head's weight is the embedding's transpose: the
    same parameter, read again (held once, shared by the head)."""
    model = _build("tied_head")[0]
    ops = _read("tied_head", way, tmp_path).to_json()["ops"]
    assert sum(op.get("param_bytes", 0) for op in ops) == hm.parameter_bytes(model)
    if way != "torch":
        assert {p for op in ops for p in op.get("shared_parameters", [])} == {"embed.weight"}


def test_a_folded_export_without_values_says_a_tie_cannot_be_seen(tmp_path, capfd):
    _read("tied_head", "folded", tmp_path)
    assert "a tied weight folded this way counts twice" in capfd.readouterr().err
    _read("tied_head", "folded+values", tmp_path)
    assert "counts twice" not in capfd.readouterr().err
