"""Five held-out models, written the way their authors write them, and PyTorch's own counts.

The models are small (d_model 64, two layers, four heads, batch 2) so that one training step
runs on a CPU in well under a second, but their code follows the original sources line by line
where it matters for a graph tool: how parameters are shared, which tensors are made inside
``forward``, where dropout sits, which ops carry the data-dependent parts.

Models (``build(name)`` gives ``(model, inputs, input_names)``, seeded, in train mode):

* ``"t5"`` mirrors HuggingFace ``modeling_t5.py`` (T5 v1.0): one ``nn.Embedding`` shared by the
  encoder, the decoder and the LM head (``lm_head.weight is shared.weight``; the decoder output
  is scaled by ``d_model ** -0.5`` before the head, as HF does for tied embeddings), relative
  position buckets computed in ``forward`` from ``torch.arange(qlen)``, a bias table only in the
  first layer of each stack and its result reused by the later layers, ``T5LayerNorm`` (RMS, no
  bias, no mean subtraction), bias-free q/k/v/o and ReLU FFN, no 1/sqrt(d) score scaling,
  cross-attention, and ``nn.Dropout(0.1)`` on the embeddings, attention probabilities, FFN
  hidden state, every residual branch and the final norm. Inputs: ``input_ids`` (2, 32) and
  ``decoder_input_ids`` (2, 16); output: logits (2, 16, vocab).
* ``"mae"`` mirrors ``facebookresearch/mae`` ``models_mae.py`` (He et al.): a Conv2d patch
  embedding, fixed 2-D sin-cos position embeddings held as ``nn.Parameter(requires_grad=False)``,
  a class token, per-sample random masking in ``forward`` (``torch.rand`` noise, ``argsort``,
  ``int(L * (1 - mask_ratio))`` kept, ``torch.gather``), timm-style ViT blocks (fused ``qkv``
  Linear, GELU MLP, pre-LayerNorm), a narrower decoder that appends a learned mask token and
  unshuffles with ``gather``, and the normalised-pixel MSE on the masked patches only. The
  original returns ``(loss, pred, mask)``; this one returns the scalar loss alone. The timm
  ``nn.Dropout(0.)`` / ``DropPath(0.)`` modules MAE leaves at rate zero are omitted. Input:
  ``imgs`` (2, 3, 32, 32), patch 4 (64 patches, 16 kept).
* ``"mistral"`` mirrors HuggingFace ``modeling_mistral.py``: ``MistralRMSNorm`` (computed in
  float32), rotary embeddings from ``register_buffer("inv_freq")`` and cos/sin cache buffers
  sliced ``cos_cached[:seq_len]`` and gathered by ``position_ids`` made with ``torch.arange`` in
  ``forward``, grouped-query attention (4 query heads, 2 key/value heads) through ``repeat_kv``,
  the sliding-window causal mask built in ``forward`` (``torch.full`` / ``tril`` / ``triu`` /
  ``log``), softmax in float32 cast back, a SwiGLU MLP, bias-free Linears, and the LM head tied
  to the token embedding (``lm_head.weight = model.embed_tokens.weight``). Input: ``input_ids``
  (2, 32); output: float logits (2, 32, vocab) -- no labels, no loss.
* ``"meshgraphnet"`` mirrors MeshGraphNet (Pfaff et al., DeepMind's ``meshgraphnets`` and NVIDIA
  Modulus): node and edge encoder MLPs ending in LayerNorm, processor blocks whose edge update
  reads ``x.index_select(0, senders)`` and ``x.index_select(0, receivers)`` and whose node update
  sums incoming messages with ``torch.zeros(...).scatter_add(0, receivers[:, None].expand(-1, d),
  messages)``, residual connections, and a decoder MLP without LayerNorm. Inputs: node features
  (64, 12), edge features (256, 4), senders and receivers (256,) int64 (a fixed random graph);
  output: per-node predictions (64, 3).
* ``"adaptive"`` is a small CNN with the control flow users write: ``if x.mean() > 0:`` picks one
  of two branches, ``for _ in range(x.shape[-1] // 8)`` applies one shared residual conv as many
  times as the image is wide / 8 (one set of weights read four times), and the pooled size and
  the flattened width come from ``int(...)`` arithmetic on shapes. Input: ``x`` (2, 3, 32, 32);
  output: logits (2, 10). A trace keeps the branch taken and the unrolled loop.

Reference counts, all from PyTorch itself:

* ``aten_gemm_flops(model, inputs)``: one training forward, a loss (the model's scalar output if
  it returns one, else the sum of every floating output, ``out.float().sum()``) and backward,
  under a ``TorchDispatchMode`` that sees the aten ops that actually run (after
  CompositeImplicitAutograd decompositions: ``aten.linear`` / ``aten.matmul`` / ``aten.einsum``
  never reach it; they arrive as ``mm`` / ``addmm`` / ``bmm``). FLOPs are 2 x multiply-adds of
  ``mm``, ``addmm``, ``bmm``, ``baddbmm``, ``addbmm``, ``mv``, ``addmv``, ``dot``, ``vdot``,
  ``convolution`` and ``convolution_backward`` (only the gradients its ``output_mask`` asks for:
  grad-input and grad-weight each cost one forward convolution, the bias gradient is a reduction
  and costs nothing). Bias additions, elementwise ops and reductions are not counted. Result:
  ``{"forward": F, "backward": B}``; the loss's own ops count as forward.
* ``saved_bytes(model, inputs, dropout="cuda")``: the bytes autograd saves in one training
  forward, seen through ``torch.autograd.graph.saved_tensors_hooks``; each storage counted once
  at its full size (a saved view counts its base storage), the storages of parameters, buffers
  and the model's inputs left out. With ``dropout="cuda"`` every training-mode dropout keeps what
  CUDA's fused kernel keeps, a 1-byte bool mask per element (``F.dropout`` is patched for the
  duration); with ``dropout="cpu"`` nothing is patched and CPU's float32 noise tensor (4 bytes
  per element) is what is kept.
* ``export_onnx(model, inputs, input_names, path, fold)``: ``torch.onnx.export`` with
  ``export_params=False`` (parameters become graph inputs), ``training=TrainingMode.TRAINING``
  (Dropout stays a node in training mode, BatchNorm exports with ``training_mode=1``) and the
  opset of ``OPSET`` (14 -- Mistral's ``tril``/``triu`` need Trilu -- but 16 for
  ``meshgraphnet``: below 16 the exporter writes ``scatter_add`` as a plain ``ScatterElements``
  into zeros followed by ``Add``, which overwrites rather than sums repeated receivers; 16 gives
  ``ScatterElements(reduction="add")``). With ``fold=True`` the constant folder precomputes
  parameter-only subgraphs (e.g. a Linear weight's transpose) and, without exported params,
  those results appear as extra graph inputs named ``onnx::...``. ``onnx_summary(path)`` reads
  an export back with ``onnx.load``: op-type counts and the ``onnx::...`` inputs.
* ``state_dict_bytes(model)`` and ``tied_parameters(model)`` (groups of names sharing one
  tensor).

Run ``python3 held_out_models.py`` for the table of all five.
"""

import collections
import contextlib
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

NAMES = ["t5", "mae", "mistral", "meshgraphnet", "adaptive"]

# The opset each model exports at (see the module docstring).
OPSET = {"t5": 14, "mae": 14, "mistral": 14, "meshgraphnet": 16, "adaptive": 14}


# --------------------------------------------------------------------------------------------
# T5 (HuggingFace modeling_t5.py, v1.0 configuration)
# --------------------------------------------------------------------------------------------


class T5Config:
    """The few fields of HF's T5Config the model reads."""

    def __init__(self, vocab_size=256, d_model=64, d_kv=16, d_ff=128, num_layers=2,
                 num_decoder_layers=2, num_heads=4, relative_attention_num_buckets=32,
                 relative_attention_max_distance=128, dropout_rate=0.1,
                 layer_norm_epsilon=1e-6, tie_word_embeddings=True):
        self.vocab_size = vocab_size
        self.d_model = d_model
        self.d_kv = d_kv
        self.d_ff = d_ff
        self.num_layers = num_layers
        self.num_decoder_layers = num_decoder_layers
        self.num_heads = num_heads
        self.relative_attention_num_buckets = relative_attention_num_buckets
        self.relative_attention_max_distance = relative_attention_max_distance
        self.dropout_rate = dropout_rate
        self.layer_norm_epsilon = layer_norm_epsilon
        self.tie_word_embeddings = tie_word_embeddings
        self.is_decoder = False


class T5LayerNorm(nn.Module):
    """Root-mean-square norm: a scale, no bias, no mean subtraction."""

    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        variance = hidden_states.to(torch.float32).pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states


class T5DenseActDense(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.wi = nn.Linear(config.d_model, config.d_ff, bias=False)
        self.wo = nn.Linear(config.d_ff, config.d_model, bias=False)
        self.dropout = nn.Dropout(config.dropout_rate)
        self.act = nn.ReLU()

    def forward(self, hidden_states):
        hidden_states = self.wi(hidden_states)
        hidden_states = self.act(hidden_states)
        hidden_states = self.dropout(hidden_states)
        return self.wo(hidden_states)


class T5LayerFF(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.DenseReluDense = T5DenseActDense(config)
        self.layer_norm = T5LayerNorm(config.d_model, eps=config.layer_norm_epsilon)
        self.dropout = nn.Dropout(config.dropout_rate)

    def forward(self, hidden_states):
        forwarded_states = self.layer_norm(hidden_states)
        forwarded_states = self.DenseReluDense(forwarded_states)
        return hidden_states + self.dropout(forwarded_states)


class T5Attention(nn.Module):
    def __init__(self, config, has_relative_attention_bias=False):
        super().__init__()
        self.is_decoder = config.is_decoder
        self.has_relative_attention_bias = has_relative_attention_bias
        self.relative_attention_num_buckets = config.relative_attention_num_buckets
        self.relative_attention_max_distance = config.relative_attention_max_distance
        self.d_model = config.d_model
        self.key_value_proj_dim = config.d_kv
        self.n_heads = config.num_heads
        self.dropout = config.dropout_rate
        self.inner_dim = self.n_heads * self.key_value_proj_dim

        self.q = nn.Linear(self.d_model, self.inner_dim, bias=False)
        self.k = nn.Linear(self.d_model, self.inner_dim, bias=False)
        self.v = nn.Linear(self.d_model, self.inner_dim, bias=False)
        self.o = nn.Linear(self.inner_dim, self.d_model, bias=False)
        if self.has_relative_attention_bias:
            self.relative_attention_bias = nn.Embedding(self.relative_attention_num_buckets,
                                                        self.n_heads)

    @staticmethod
    def _relative_position_bucket(relative_position, bidirectional=True, num_buckets=32,
                                  max_distance=128):
        """Mesh TensorFlow's bucketing: exact buckets for small distances, log-spaced beyond."""
        relative_buckets = 0
        if bidirectional:
            num_buckets //= 2
            relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
            relative_position = torch.abs(relative_position)
        else:
            relative_position = -torch.min(relative_position,
                                           torch.zeros_like(relative_position))
        max_exact = num_buckets // 2
        is_small = relative_position < max_exact
        relative_position_if_large = max_exact + (
            torch.log(relative_position.float() / max_exact)
            / math.log(max_distance / max_exact)
            * (num_buckets - max_exact)
        ).to(torch.long)
        relative_position_if_large = torch.min(
            relative_position_if_large,
            torch.full_like(relative_position_if_large, num_buckets - 1))
        relative_buckets += torch.where(is_small, relative_position, relative_position_if_large)
        return relative_buckets

    def compute_bias(self, query_length, key_length, device=None):
        """The (1, heads, query_length, key_length) position bias."""
        if device is None:
            device = self.relative_attention_bias.weight.device
        context_position = torch.arange(query_length, dtype=torch.long, device=device)[:, None]
        memory_position = torch.arange(key_length, dtype=torch.long, device=device)[None, :]
        relative_position = memory_position - context_position
        relative_position_bucket = self._relative_position_bucket(
            relative_position,
            bidirectional=(not self.is_decoder),
            num_buckets=self.relative_attention_num_buckets,
            max_distance=self.relative_attention_max_distance,
        )
        values = self.relative_attention_bias(relative_position_bucket)
        return values.permute([2, 0, 1]).unsqueeze(0)

    def forward(self, hidden_states, mask=None, key_value_states=None, position_bias=None):
        batch_size, seq_length = hidden_states.shape[:2]
        real_seq_length = seq_length
        key_length = (real_seq_length if key_value_states is None
                      else key_value_states.shape[1])

        def shape(states):
            return states.view(batch_size, -1, self.n_heads,
                               self.key_value_proj_dim).transpose(1, 2)

        def unshape(states):
            return states.transpose(1, 2).contiguous().view(batch_size, -1, self.inner_dim)

        query_states = shape(self.q(hidden_states))
        source = hidden_states if key_value_states is None else key_value_states
        key_states = shape(self.k(source))
        value_states = shape(self.v(source))

        scores = torch.matmul(query_states, key_states.transpose(3, 2))  # no 1/sqrt(d_kv)

        if position_bias is None:
            if not self.has_relative_attention_bias:
                position_bias = torch.zeros((1, self.n_heads, real_seq_length, key_length),
                                            device=scores.device, dtype=scores.dtype)
            else:
                position_bias = self.compute_bias(real_seq_length, key_length,
                                                  device=scores.device)
            if mask is not None:
                position_bias = position_bias + mask  # (batch, heads, q, k)

        scores += position_bias
        attn_weights = nn.functional.softmax(scores.float(), dim=-1).type_as(scores)
        attn_weights = nn.functional.dropout(attn_weights, p=self.dropout,
                                             training=self.training)
        attn_output = unshape(torch.matmul(attn_weights, value_states))
        attn_output = self.o(attn_output)
        return attn_output, position_bias


class T5LayerSelfAttention(nn.Module):
    def __init__(self, config, has_relative_attention_bias=False):
        super().__init__()
        self.SelfAttention = T5Attention(config, has_relative_attention_bias)
        self.layer_norm = T5LayerNorm(config.d_model, eps=config.layer_norm_epsilon)
        self.dropout = nn.Dropout(config.dropout_rate)

    def forward(self, hidden_states, attention_mask=None, position_bias=None):
        normed_hidden_states = self.layer_norm(hidden_states)
        attention_output, position_bias = self.SelfAttention(
            normed_hidden_states, mask=attention_mask, position_bias=position_bias)
        hidden_states = hidden_states + self.dropout(attention_output)
        return hidden_states, position_bias


class T5LayerCrossAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.EncDecAttention = T5Attention(config, has_relative_attention_bias=False)
        self.layer_norm = T5LayerNorm(config.d_model, eps=config.layer_norm_epsilon)
        self.dropout = nn.Dropout(config.dropout_rate)

    def forward(self, hidden_states, key_value_states, attention_mask=None, position_bias=None):
        normed_hidden_states = self.layer_norm(hidden_states)
        attention_output, position_bias = self.EncDecAttention(
            normed_hidden_states, mask=attention_mask, key_value_states=key_value_states,
            position_bias=position_bias)
        layer_output = hidden_states + self.dropout(attention_output)
        return layer_output, position_bias


class T5Block(nn.Module):
    def __init__(self, config, has_relative_attention_bias=False):
        super().__init__()
        self.is_decoder = config.is_decoder
        self.layer = nn.ModuleList()
        self.layer.append(T5LayerSelfAttention(config, has_relative_attention_bias))
        if self.is_decoder:
            self.layer.append(T5LayerCrossAttention(config))
        self.layer.append(T5LayerFF(config))

    def forward(self, hidden_states, attention_mask=None, position_bias=None,
                encoder_hidden_states=None, encoder_attention_mask=None,
                encoder_decoder_position_bias=None):
        hidden_states, position_bias = self.layer[0](
            hidden_states, attention_mask=attention_mask, position_bias=position_bias)
        if self.is_decoder and encoder_hidden_states is not None:
            hidden_states, encoder_decoder_position_bias = self.layer[1](
                hidden_states, key_value_states=encoder_hidden_states,
                attention_mask=encoder_attention_mask,
                position_bias=encoder_decoder_position_bias)
        hidden_states = self.layer[-1](hidden_states)
        return hidden_states, position_bias, encoder_decoder_position_bias


class T5Stack(nn.Module):
    def __init__(self, config, embed_tokens):
        super().__init__()
        self.embed_tokens = embed_tokens  # the shared module itself, as HF passes it
        self.is_decoder = config.is_decoder
        self.block = nn.ModuleList(
            [T5Block(config, has_relative_attention_bias=bool(i == 0))
             for i in range(config.num_layers)])
        self.final_layer_norm = T5LayerNorm(config.d_model, eps=config.layer_norm_epsilon)
        self.dropout = nn.Dropout(config.dropout_rate)

    def forward(self, input_ids, encoder_hidden_states=None):
        batch_size, seq_length = input_ids.size()
        inputs_embeds = self.embed_tokens(input_ids)
        dtype = inputs_embeds.dtype

        # HF's get_extended_attention_mask for an all-ones attention_mask: nothing masked in the
        # encoder, a causal mask in the decoder, made additive with finfo.min.
        if self.is_decoder:
            seq_ids = torch.arange(seq_length, device=input_ids.device)
            causal_mask = seq_ids[None, None, :].repeat(batch_size, seq_length, 1) <= \
                seq_ids[None, :, None]
            extended_attention_mask = causal_mask[:, None, :, :].to(dtype)
            extended_attention_mask = (1.0 - extended_attention_mask) * torch.finfo(dtype).min
        else:
            extended_attention_mask = None

        position_bias = None
        encoder_decoder_position_bias = None
        hidden_states = self.dropout(inputs_embeds)
        for layer_module in self.block:
            hidden_states, position_bias, encoder_decoder_position_bias = layer_module(
                hidden_states, attention_mask=extended_attention_mask,
                position_bias=position_bias, encoder_hidden_states=encoder_hidden_states,
                encoder_decoder_position_bias=encoder_decoder_position_bias)
        hidden_states = self.final_layer_norm(hidden_states)
        return self.dropout(hidden_states)


class T5ForConditionalGeneration(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.model_dim = config.d_model
        self.config = config
        self.shared = nn.Embedding(config.vocab_size, config.d_model)

        encoder_config = T5Config(**_t5_fields(config))
        encoder_config.is_decoder = False
        self.encoder = T5Stack(encoder_config, self.shared)

        decoder_config = T5Config(**_t5_fields(config))
        decoder_config.is_decoder = True
        decoder_config.num_layers = config.num_decoder_layers
        self.decoder = T5Stack(decoder_config, self.shared)

        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.shared.weight  # HF's _tie_or_clone_weights

    def forward(self, input_ids, decoder_input_ids):
        hidden_states = self.encoder(input_ids)
        sequence_output = self.decoder(decoder_input_ids, encoder_hidden_states=hidden_states)
        if self.config.tie_word_embeddings:
            # Rescale before projecting on the (tied) vocabulary, as Mesh TensorFlow does.
            sequence_output = sequence_output * (self.model_dim ** -0.5)
        return self.lm_head(sequence_output)


def _t5_fields(config):
    return {k: v for k, v in vars(config).items() if k != "is_decoder"}


# --------------------------------------------------------------------------------------------
# MAE (facebookresearch/mae models_mae.py, with timm's PatchEmbed and Block written out)
# --------------------------------------------------------------------------------------------


def get_2d_sincos_pos_embed(embed_dim, grid_size, cls_token=False):
    """(grid_size**2 [+1], embed_dim) fixed sin-cos embedding, MAE's util/pos_embed.py."""
    grid_h = torch.arange(grid_size, dtype=torch.float64)
    grid_w = torch.arange(grid_size, dtype=torch.float64)
    grid = torch.stack(torch.meshgrid(grid_w, grid_h, indexing="xy"), dim=0)  # w goes first

    def one_axis(dim, pos):
        omega = torch.arange(dim // 2, dtype=torch.float64) / (dim / 2.0)
        omega = 1.0 / 10000 ** omega
        out = pos.reshape(-1)[:, None] * omega[None, :]
        return torch.cat([torch.sin(out), torch.cos(out)], dim=1)

    emb = torch.cat([one_axis(embed_dim // 2, grid[0]), one_axis(embed_dim // 2, grid[1])],
                    dim=1)
    if cls_token:
        emb = torch.cat([torch.zeros(1, embed_dim, dtype=torch.float64), emb], dim=0)
    return emb


class PatchEmbed(nn.Module):
    """Image to patch embedding (timm)."""

    def __init__(self, img_size=32, patch_size=4, in_chans=3, embed_dim=64):
        super().__init__()
        self.img_size = (img_size, img_size)
        self.patch_size = (patch_size, patch_size)
        self.grid_size = (img_size // patch_size, img_size // patch_size)
        self.num_patches = self.grid_size[0] * self.grid_size[1]
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        x = self.proj(x)
        return x.flatten(2).transpose(1, 2)  # BCHW -> BNC


class Attention(nn.Module):
    """timm's ViT attention: one fused qkv Linear."""

    def __init__(self, dim, num_heads=4, qkv_bias=True):
        super().__init__()
        self.num_heads = num_heads
        head_dim = dim // num_heads
        self.scale = head_dim ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads)
        qkv = qkv.permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        attn = (q @ k.transpose(-2, -1)) * self.scale
        attn = attn.softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(B, N, C)
        return self.proj(x)


class Mlp(nn.Module):
    def __init__(self, in_features, hidden_features):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden_features, in_features)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Block(nn.Module):
    """timm's pre-norm ViT block."""

    def __init__(self, dim, num_heads, mlp_ratio=4.0, qkv_bias=True, norm_layer=nn.LayerNorm):
        super().__init__()
        self.norm1 = norm_layer(dim)
        self.attn = Attention(dim, num_heads=num_heads, qkv_bias=qkv_bias)
        self.norm2 = norm_layer(dim)
        self.mlp = Mlp(in_features=dim, hidden_features=int(dim * mlp_ratio))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class MaskedAutoencoderViT(nn.Module):
    """Masked Autoencoder with a VisionTransformer backbone."""

    def __init__(self, img_size=32, patch_size=4, in_chans=3, embed_dim=64, depth=2,
                 num_heads=4, decoder_embed_dim=32, decoder_depth=2, decoder_num_heads=4,
                 mlp_ratio=4.0, norm_layer=nn.LayerNorm, norm_pix_loss=True, mask_ratio=0.75):
        super().__init__()
        self.mask_ratio = mask_ratio

        # MAE encoder specifics
        self.patch_embed = PatchEmbed(img_size, patch_size, in_chans, embed_dim)
        num_patches = self.patch_embed.num_patches
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, num_patches + 1, embed_dim),
                                      requires_grad=False)  # fixed sin-cos embedding
        self.blocks = nn.ModuleList([
            Block(embed_dim, num_heads, mlp_ratio, qkv_bias=True, norm_layer=norm_layer)
            for _ in range(depth)])
        self.norm = norm_layer(embed_dim)

        # MAE decoder specifics
        self.decoder_embed = nn.Linear(embed_dim, decoder_embed_dim, bias=True)
        self.mask_token = nn.Parameter(torch.zeros(1, 1, decoder_embed_dim))
        self.decoder_pos_embed = nn.Parameter(torch.zeros(1, num_patches + 1, decoder_embed_dim),
                                              requires_grad=False)
        self.decoder_blocks = nn.ModuleList([
            Block(decoder_embed_dim, decoder_num_heads, mlp_ratio, qkv_bias=True,
                  norm_layer=norm_layer)
            for _ in range(decoder_depth)])
        self.decoder_norm = norm_layer(decoder_embed_dim)
        self.decoder_pred = nn.Linear(decoder_embed_dim, patch_size ** 2 * in_chans, bias=True)

        self.norm_pix_loss = norm_pix_loss
        self.initialize_weights()

    def initialize_weights(self):
        grid = int(self.patch_embed.num_patches ** 0.5)
        pos_embed = get_2d_sincos_pos_embed(self.pos_embed.shape[-1], grid, cls_token=True)
        self.pos_embed.data.copy_(pos_embed.float().unsqueeze(0))
        decoder_pos_embed = get_2d_sincos_pos_embed(self.decoder_pos_embed.shape[-1], grid,
                                                    cls_token=True)
        self.decoder_pos_embed.data.copy_(decoder_pos_embed.float().unsqueeze(0))
        w = self.patch_embed.proj.weight.data
        torch.nn.init.xavier_uniform_(w.view([w.shape[0], -1]))
        torch.nn.init.normal_(self.cls_token, std=0.02)
        torch.nn.init.normal_(self.mask_token, std=0.02)
        self.apply(self._init_weights)

    def _init_weights(self, m):
        if isinstance(m, nn.Linear):
            torch.nn.init.xavier_uniform_(m.weight)
            if m.bias is not None:
                nn.init.constant_(m.bias, 0)
        elif isinstance(m, nn.LayerNorm):
            nn.init.constant_(m.bias, 0)
            nn.init.constant_(m.weight, 1.0)

    def patchify(self, imgs):
        """imgs: (N, 3, H, W) -> x: (N, L, patch_size**2 * 3)."""
        p = self.patch_embed.patch_size[0]
        assert imgs.shape[2] == imgs.shape[3] and imgs.shape[2] % p == 0
        h = w = imgs.shape[2] // p
        x = imgs.reshape(shape=(imgs.shape[0], 3, h, p, w, p))
        x = torch.einsum("nchpwq->nhwpqc", x)
        return x.reshape(shape=(imgs.shape[0], h * w, p ** 2 * 3))

    def random_masking(self, x, mask_ratio):
        """Per-sample random masking by per-sample shuffling (argsort of random noise)."""
        N, L, D = x.shape  # batch, length, dim
        len_keep = int(L * (1 - mask_ratio))

        noise = torch.rand(N, L, device=x.device)  # noise in [0, 1]
        # sort noise for each sample: ascend, small is keep, large is remove
        ids_shuffle = torch.argsort(noise, dim=1)
        ids_restore = torch.argsort(ids_shuffle, dim=1)

        # keep the first subset
        ids_keep = ids_shuffle[:, :len_keep]
        x_masked = torch.gather(x, dim=1, index=ids_keep.unsqueeze(-1).repeat(1, 1, D))

        # generate the binary mask: 0 is keep, 1 is remove
        mask = torch.ones([N, L], device=x.device)
        mask[:, :len_keep] = 0
        # unshuffle to get the binary mask
        mask = torch.gather(mask, dim=1, index=ids_restore)
        return x_masked, mask, ids_restore

    def forward_encoder(self, x, mask_ratio):
        x = self.patch_embed(x)
        x = x + self.pos_embed[:, 1:, :]
        x, mask, ids_restore = self.random_masking(x, mask_ratio)
        cls_token = self.cls_token + self.pos_embed[:, :1, :]
        cls_tokens = cls_token.expand(x.shape[0], -1, -1)
        x = torch.cat((cls_tokens, x), dim=1)
        for blk in self.blocks:
            x = blk(x)
        x = self.norm(x)
        return x, mask, ids_restore

    def forward_decoder(self, x, ids_restore):
        x = self.decoder_embed(x)
        # append mask tokens to sequence
        mask_tokens = self.mask_token.repeat(x.shape[0], ids_restore.shape[1] + 1 - x.shape[1],
                                             1)
        x_ = torch.cat([x[:, 1:, :], mask_tokens], dim=1)  # no cls token
        x_ = torch.gather(x_, dim=1,
                          index=ids_restore.unsqueeze(-1).repeat(1, 1, x.shape[2]))  # unshuffle
        x = torch.cat([x[:, :1, :], x_], dim=1)  # append cls token
        x = x + self.decoder_pos_embed
        for blk in self.decoder_blocks:
            x = blk(x)
        x = self.decoder_norm(x)
        x = self.decoder_pred(x)
        return x[:, 1:, :]  # remove cls token

    def forward_loss(self, imgs, pred, mask):
        """Mean squared error of the (per-patch normalised) pixels, over removed patches."""
        target = self.patchify(imgs)
        if self.norm_pix_loss:
            mean = target.mean(dim=-1, keepdim=True)
            var = target.var(dim=-1, keepdim=True)
            target = (target - mean) / (var + 1.e-6) ** .5
        loss = (pred - target) ** 2
        loss = loss.mean(dim=-1)  # [N, L], mean loss per patch
        return (loss * mask).sum() / mask.sum()  # mean loss on removed patches

    def forward(self, imgs):
        latent, mask, ids_restore = self.forward_encoder(imgs, self.mask_ratio)
        pred = self.forward_decoder(latent, ids_restore)  # [N, L, p*p*3]
        return self.forward_loss(imgs, pred, mask)  # the original also returns pred, mask


# --------------------------------------------------------------------------------------------
# Mistral (HuggingFace modeling_mistral.py)
# --------------------------------------------------------------------------------------------


class MistralConfig:
    def __init__(self, vocab_size=256, hidden_size=64, intermediate_size=224,
                 num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                 max_position_embeddings=64, rms_norm_eps=1e-6, rope_theta=10000.0,
                 sliding_window=8, tie_word_embeddings=True):
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.intermediate_size = intermediate_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.num_key_value_heads = num_key_value_heads
        self.max_position_embeddings = max_position_embeddings
        self.rms_norm_eps = rms_norm_eps
        self.rope_theta = rope_theta
        self.sliding_window = sliding_window
        self.tie_word_embeddings = tie_word_embeddings


def _make_sliding_window_causal_mask(input_ids_shape, dtype, device, sliding_window=4096):
    """A causal mask banded to the sliding window: 0 to attend, -inf not to."""
    bsz, tgt_len = input_ids_shape
    tensor = torch.full((tgt_len, tgt_len), fill_value=1, device=device)
    mask = torch.tril(tensor, diagonal=0)
    # make the mask banded to account for sliding window
    mask = torch.triu(mask, diagonal=-sliding_window)
    mask = torch.log(mask).to(dtype)
    return mask[None, None, :, :].expand(bsz, 1, tgt_len, tgt_len)


class MistralRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class MistralRotaryEmbedding(nn.Module):
    def __init__(self, dim, max_position_embeddings=2048, base=10000, device=None):
        super().__init__()
        self.dim = dim
        self.max_position_embeddings = max_position_embeddings
        self.base = base
        inv_freq = 1.0 / (self.base ** (torch.arange(0, self.dim, 2).float().to(device)
                                        / self.dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self._set_cos_sin_cache(seq_len=max_position_embeddings, device=self.inv_freq.device,
                                dtype=torch.get_default_dtype())

    def _set_cos_sin_cache(self, seq_len, device, dtype):
        self.max_seq_len_cached = seq_len
        t = torch.arange(self.max_seq_len_cached, device=device, dtype=self.inv_freq.dtype)
        freqs = torch.einsum("i,j->ij", t, self.inv_freq)
        # Different from paper, but it uses a different permutation to obtain the same result
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", emb.cos().to(dtype), persistent=False)
        self.register_buffer("sin_cached", emb.sin().to(dtype), persistent=False)

    def forward(self, x, seq_len=None):
        # x: [bs, num_attention_heads, seq_len, head_size]
        if seq_len > self.max_seq_len_cached:
            self._set_cos_sin_cache(seq_len=seq_len, device=x.device, dtype=x.dtype)
        return (self.cos_cached[:seq_len].to(dtype=x.dtype),
                self.sin_cached[:seq_len].to(dtype=x.dtype))


def rotate_half(x):
    """Rotates half the hidden dims of the input."""
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, position_ids):
    cos = cos[position_ids].unsqueeze(1)  # [bs, 1, seq_len, dim]
    sin = sin[position_ids].unsqueeze(1)  # [bs, 1, seq_len, dim]
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed, k_embed


class MistralMLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


def repeat_kv(hidden_states, n_rep):
    """torch.repeat_interleave(x, dim=1, repeats=n_rep): (batch, kv_heads, seqlen, head_dim) ->
    (batch, kv_heads * n_rep, seqlen, head_dim)."""
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep,
                                                           slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class MistralAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.hidden_size = config.hidden_size
        self.num_heads = config.num_attention_heads
        self.head_dim = self.hidden_size // self.num_heads
        self.num_key_value_heads = config.num_key_value_heads
        self.num_key_value_groups = self.num_heads // self.num_key_value_heads
        self.q_proj = nn.Linear(self.hidden_size, self.num_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(self.hidden_size, self.num_key_value_heads * self.head_dim,
                                bias=False)
        self.v_proj = nn.Linear(self.hidden_size, self.num_key_value_heads * self.head_dim,
                                bias=False)
        self.o_proj = nn.Linear(self.num_heads * self.head_dim, self.hidden_size, bias=False)
        self.rotary_emb = MistralRotaryEmbedding(
            self.head_dim, max_position_embeddings=config.max_position_embeddings,
            base=config.rope_theta)

    def forward(self, hidden_states, attention_mask, position_ids):
        bsz, q_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states)
        key_states = self.k_proj(hidden_states)
        value_states = self.v_proj(hidden_states)

        query_states = query_states.view(bsz, q_len, self.num_heads,
                                         self.head_dim).transpose(1, 2)
        key_states = key_states.view(bsz, q_len, self.num_key_value_heads,
                                     self.head_dim).transpose(1, 2)
        value_states = value_states.view(bsz, q_len, self.num_key_value_heads,
                                         self.head_dim).transpose(1, 2)

        kv_seq_len = key_states.shape[-2]
        cos, sin = self.rotary_emb(value_states, seq_len=kv_seq_len)
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin,
                                                        position_ids)

        # repeat k/v heads if n_kv_heads < n_heads
        key_states = repeat_kv(key_states, self.num_key_value_groups)
        value_states = repeat_kv(value_states, self.num_key_value_groups)

        attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / \
            math.sqrt(self.head_dim)
        attn_weights = attn_weights + attention_mask
        # upcast attention to fp32
        attn_weights = nn.functional.softmax(attn_weights, dim=-1,
                                             dtype=torch.float32).to(query_states.dtype)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).contiguous()
        attn_output = attn_output.reshape(bsz, q_len, self.hidden_size)
        return self.o_proj(attn_output)


class MistralDecoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.self_attn = MistralAttention(config)
        self.mlp = MistralMLP(config)
        self.input_layernorm = MistralRMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.post_attention_layernorm = MistralRMSNorm(config.hidden_size,
                                                       eps=config.rms_norm_eps)

    def forward(self, hidden_states, attention_mask, position_ids):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states = self.self_attn(hidden_states, attention_mask, position_ids)
        hidden_states = residual + hidden_states

        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        return residual + hidden_states


class MistralModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList([MistralDecoderLayer(config)
                                     for _ in range(config.num_hidden_layers)])
        self.norm = MistralRMSNorm(config.hidden_size, eps=config.rms_norm_eps)

    def forward(self, input_ids):
        batch_size, seq_length = input_ids.shape
        position_ids = torch.arange(0, seq_length, dtype=torch.long, device=input_ids.device)
        position_ids = position_ids.unsqueeze(0).view(-1, seq_length)
        inputs_embeds = self.embed_tokens(input_ids)
        attention_mask = _make_sliding_window_causal_mask(
            (batch_size, seq_length), inputs_embeds.dtype, device=inputs_embeds.device,
            sliding_window=self.config.sliding_window)
        hidden_states = inputs_embeds
        for decoder_layer in self.layers:
            hidden_states = decoder_layer(hidden_states, attention_mask, position_ids)
        return self.norm(hidden_states)


class MistralForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.model = MistralModel(config)
        self.vocab_size = config.vocab_size
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight

    def forward(self, input_ids):
        hidden_states = self.model(input_ids)
        logits = self.lm_head(hidden_states)
        return logits.float()


# --------------------------------------------------------------------------------------------
# MeshGraphNet (Pfaff et al. 2021; DeepMind meshgraphnets, NVIDIA Modulus)
# --------------------------------------------------------------------------------------------


class MeshGraphMLP(nn.Module):
    """Linear-ReLU x hidden_layers, a last Linear, then LayerNorm (none in the decoder)."""

    def __init__(self, input_dim, output_dim, hidden_dim=64, hidden_layers=2, norm=True):
        super().__init__()
        layers = [nn.Linear(input_dim, hidden_dim), nn.ReLU()]
        for _ in range(hidden_layers - 1):
            layers += [nn.Linear(hidden_dim, hidden_dim), nn.ReLU()]
        layers.append(nn.Linear(hidden_dim, output_dim))
        if norm:
            layers.append(nn.LayerNorm(output_dim))
        self.model = nn.Sequential(*layers)

    def forward(self, x):
        return self.model(x)


class MeshEdgeBlock(nn.Module):
    """e'_ij = e_ij + MLP([e_ij, x_i, x_j]) for edge i -> j."""

    def __init__(self, latent_dim):
        super().__init__()
        self.edge_mlp = MeshGraphMLP(3 * latent_dim, latent_dim, latent_dim)

    def forward(self, edge_features, node_features, senders, receivers):
        src = node_features.index_select(0, senders)
        dst = node_features.index_select(0, receivers)
        updated = self.edge_mlp(torch.cat([edge_features, src, dst], dim=-1))
        return edge_features + updated


class MeshNodeBlock(nn.Module):
    """x'_i = x_i + MLP([x_i, sum of messages into i])."""

    def __init__(self, latent_dim):
        super().__init__()
        self.node_mlp = MeshGraphMLP(2 * latent_dim, latent_dim, latent_dim)

    def forward(self, edge_features, node_features, receivers):
        num_nodes, d = node_features.shape[0], edge_features.shape[1]
        aggregated = torch.zeros(num_nodes, d, dtype=edge_features.dtype,
                                 device=edge_features.device)
        aggregated = aggregated.scatter_add(0, receivers[:, None].expand(-1, d), edge_features)
        updated = self.node_mlp(torch.cat([node_features, aggregated], dim=-1))
        return node_features + updated


class MeshGraphNet(nn.Module):
    def __init__(self, input_dim_nodes=12, input_dim_edges=4, output_dim=3, latent_dim=64,
                 processor_size=3):
        super().__init__()
        self.node_encoder = MeshGraphMLP(input_dim_nodes, latent_dim, latent_dim)
        self.edge_encoder = MeshGraphMLP(input_dim_edges, latent_dim, latent_dim)
        self.edge_blocks = nn.ModuleList(MeshEdgeBlock(latent_dim)
                                         for _ in range(processor_size))
        self.node_blocks = nn.ModuleList(MeshNodeBlock(latent_dim)
                                         for _ in range(processor_size))
        self.node_decoder = MeshGraphMLP(latent_dim, output_dim, latent_dim, norm=False)

    def forward(self, node_features, edge_features, senders, receivers):
        x = self.node_encoder(node_features)
        e = self.edge_encoder(edge_features)
        for edge_block, node_block in zip(self.edge_blocks, self.node_blocks):
            e = edge_block(e, x, senders, receivers)
            x = node_block(e, x, receivers)
        return self.node_decoder(x)


# --------------------------------------------------------------------------------------------
# A CNN with data-dependent control flow
# --------------------------------------------------------------------------------------------


class AdaptiveNet(nn.Module):
    """Branches on the data, loops over a shape, sizes its head with int() on shapes."""

    def __init__(self, channels=16, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, channels, 3, padding=1, bias=False),
                                  nn.BatchNorm2d(channels), nn.ReLU(inplace=True))
        self.bright = nn.Sequential(nn.Conv2d(channels, channels, 3, padding=1), nn.ReLU())
        self.dark = nn.Sequential(nn.Conv2d(channels, channels, 1), nn.Tanh())
        self.refine = nn.Conv2d(channels, channels, 3, padding=1)  # applied in a loop
        self.dropout = nn.Dropout(0.2)
        self.head = nn.Linear(channels * 4 * 4, classes)

    def forward(self, x):
        h = self.stem(x)
        if x.mean() > 0:  # data-dependent: a trace keeps the branch this input took
            h = self.bright(h)
        else:
            h = self.dark(h)
        for _ in range(x.shape[-1] // 8):  # trip count from a shape: 4 for 32x32 images
            h = h + F.relu(self.refine(h))
        b, c, height, width = h.shape
        side = int(math.sqrt(height * width) // 8)  # 4 for 32x32
        h = F.adaptive_avg_pool2d(h, (side, side))
        h = h.reshape(b, int(c * side * side))
        return self.head(self.dropout(h))


# --------------------------------------------------------------------------------------------
# build()
# --------------------------------------------------------------------------------------------


def _random_graph(num_nodes=64, num_edges=256):
    """A fixed random directed graph without self-loops: senders and receivers (int64)."""
    senders = torch.randint(0, num_nodes, (num_edges,))
    receivers = (senders + torch.randint(1, num_nodes, (num_edges,))) % num_nodes  # no loops
    return senders, receivers


def build(name):
    """(model, inputs, input_names) of one of NAMES, seeded with torch.manual_seed(0).

    Args:
        name: one of NAMES.

    Returns:
        The model in train mode, a tuple of example inputs and a list of their names (the
        forward's argument names).
    """
    torch.manual_seed(0)
    if name == "t5":
        model = T5ForConditionalGeneration(T5Config())
        inputs = (torch.randint(0, 256, (2, 32)), torch.randint(0, 256, (2, 16)))
        names = ["input_ids", "decoder_input_ids"]
    elif name == "mae":
        model = MaskedAutoencoderViT()
        inputs = (torch.randn(2, 3, 32, 32),)
        names = ["imgs"]
    elif name == "mistral":
        model = MistralForCausalLM(MistralConfig())
        inputs = (torch.randint(0, 256, (2, 32)),)
        names = ["input_ids"]
    elif name == "meshgraphnet":
        model = MeshGraphNet()
        senders, receivers = _random_graph()
        positions = torch.randn(64, 3)
        displacement = positions[receivers] - positions[senders]
        edge_features = torch.cat([displacement, displacement.norm(dim=-1, keepdim=True)], -1)
        inputs = (torch.randn(64, 12), edge_features, senders, receivers)
        names = ["node_features", "edge_features", "senders", "receivers"]
    elif name == "adaptive":
        model = AdaptiveNet()
        inputs = (torch.randn(2, 3, 32, 32),)
        names = ["x"]
    else:
        raise ValueError(f"unknown model {name!r}; one of {NAMES}")
    model.train()
    return model, inputs, names


# --------------------------------------------------------------------------------------------
# Reference counts
# --------------------------------------------------------------------------------------------


def _prod(xs):
    out = 1
    for x in xs:
        out *= int(x)
    return out


def _conv_flops(x_shape, w_shape, out_shape, transposed):
    """2 x multiply-adds of one convolution: each output position of the non-transposed
    direction reads the whole weight."""
    spatial = x_shape[2:] if transposed else out_shape[2:]
    return 2 * _prod(w_shape) * int(x_shape[0]) * _prod(spatial)


def _gemm_flops(func, args, kwargs, out):
    """FLOPs of one aten call, or None when it is not a matmul-family op."""
    name = func.overloadpacket.__name__
    if name == "mm":
        (m, k), n = args[0].shape, args[1].shape[1]
        return 2 * m * k * n
    if name == "addmm":
        (m, k), n = args[1].shape, args[2].shape[1]
        return 2 * m * k * n
    if name in ("bmm", "baddbmm"):
        a, b = (args[0], args[1]) if name == "bmm" else (args[1], args[2])
        (bs, m, k), n = a.shape, b.shape[2]
        return 2 * bs * m * k * n
    if name == "addbmm":
        (bs, m, k), n = args[1].shape, args[2].shape[2]
        return 2 * bs * m * k * n
    if name in ("mv", "addmv"):
        m, k = (args[0] if name == "mv" else args[1]).shape
        return 2 * m * k
    if name in ("dot", "vdot"):
        return 2 * args[0].numel()
    if name == "convolution":
        x, w = args[0], args[1]
        transposed = args[6] if len(args) > 6 else kwargs.get("transposed", False)
        return _conv_flops(x.shape, w.shape, out.shape, transposed)
    if name == "convolution_backward":
        grad_out, x, w = args[0], args[1], args[2]
        transposed = args[7]
        mask = args[10]
        one = _conv_flops(x.shape, w.shape, grad_out.shape, transposed)
        return one * (int(bool(mask[0])) + int(bool(mask[1])))
    return None


class _FlopCounter(TorchDispatchMode):
    """Sums matmul-family FLOPs per phase and records every aten op that runs."""

    def __init__(self):
        super().__init__()
        self.phase = "forward"
        self.flops = {"forward": 0, "backward": 0}
        self.counted = collections.Counter()
        self.seen = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = func.overloadpacket.__name__
        self.seen.add(name)
        flops = _gemm_flops(func, args, kwargs, out)
        if flops is not None:
            self.flops[self.phase] += flops
            self.counted[name] += 1
        return out


def _loss_of(output):
    """The model's scalar loss, or the sum of every floating output."""
    if isinstance(output, torch.Tensor) and output.dim() == 0 and output.is_floating_point():
        return output
    leaves = output if isinstance(output, (tuple, list)) else (output,)
    terms = [t.float().sum() for t in leaves
             if isinstance(t, torch.Tensor) and t.is_floating_point()]
    return sum(terms[1:], terms[0])


def aten_gemm_flops(model, inputs, seen=None, counted=None):
    """FLOPs (2 x multiply-adds) of the matmul-family aten ops of one training step.

    Args:
        model: the module; put in train mode for the step and left so.
        inputs: tuple of example inputs.
        seen: an optional set to which every aten op name that ran is added.
        counted: an optional Counter to which the counted op names are added (calls).

    Returns:
        {"forward": F, "backward": B}: forward includes the loss reduction, backward is
        everything ``loss.backward()`` runs. Like any training step, the forward updates
        BatchNorm running statistics; gradients are cleared again afterwards.
    """
    model.train()
    model.zero_grad(set_to_none=True)
    counter = _FlopCounter()
    with counter:
        loss = _loss_of(model(*inputs))
        counter.phase = "backward"
        loss.backward()
    model.zero_grad(set_to_none=True)
    if seen is not None:
        seen.update(counter.seen)
    if counted is not None:
        counted.update(counter.counted)
    return dict(counter.flops)


class _CudaLikeDropout(torch.autograd.Function):
    """Training-mode dropout keeping what CUDA's fused kernel keeps: a bool mask."""

    @staticmethod
    def forward(ctx, x, p):
        mask = torch.empty_like(x, dtype=torch.bool).bernoulli_(1 - p)
        ctx.scale = 1.0 / (1 - p)
        ctx.save_for_backward(mask)
        return x * mask * ctx.scale

    @staticmethod
    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        return grad * mask * ctx.scale, None


@contextlib.contextmanager
def _cuda_like_dropout():
    """Patch F.dropout (nn.Dropout calls it) to keep a 1-byte mask, as CUDA does."""
    original = F.dropout

    def dropout(input, p=0.5, training=True, inplace=False):
        if not training or p == 0:
            return input  # aten::dropout returns its input; nothing is saved
        if p == 1:
            return input * 0.0
        return _CudaLikeDropout.apply(input, p)

    F.dropout = dropout
    try:
        yield
    finally:
        F.dropout = original


def two_small_gpus(memory):
    """A dplace-cluster/1 dict of two GPUs of `memory` bytes each (a step needing more than one
    holds must be split)."""
    return {"format": "dplace-cluster/1", "name": "two-small-gpus",
            "devices": [{"name": "gpu", "count": 2, "kind": "gpu", "memory": memory,
                         "peak_flops": 1e13, "memory_bandwidth": "900GB/s"}],
            "default_link": {"bandwidth": "10GB/s", "latency": "5us"}}


def split_plans(graph):
    """(problem, result) of every placer's plan that splits `graph` (a training graph of module
    units) over two GPUs each with room for 85% of its one-device step, under the eager runtime:
    the device maps a user of two small GPUs would get."""
    import dplace
    one = dplace.place(dplace.Problem(graph, "a100x8", "step", runtime="eager"), "single")
    need = max(d["peak_memory_bytes"] for d in one.devices)
    problem = dplace.Problem(graph, two_small_gpus(int(need * 0.85)), "step", runtime="eager")
    for result in dplace.place_all(problem, None, time_limit=0.2):
        if result.feasible and len(set(result.placement.values())) >= 2:
            yield problem, result


def storage(t):
    """A tensor's storage, on torch 1.13 and 2.x alike."""
    return t.untyped_storage() if hasattr(t, "untyped_storage") else t._storage()


def saved_bytes(model, inputs, dropout="cuda"):
    """Bytes autograd saves for backward in one training forward.

    Each storage counts once, at its full size (a saved view counts its base's storage); the
    storages of the parameters, buffers and inputs are left out.

    Args:
        model: the module; put in train mode.
        inputs: tuple of example inputs.
        dropout: "cuda" counts each training-mode dropout as a 1-byte bool mask per element (as
            CUDA's fused dropout keeps), "cpu" leaves torch's CPU dropout alone (float noise).

    Returns:
        The byte count.
    """
    if dropout not in ("cuda", "cpu"):
        raise ValueError(f"dropout must be 'cuda' or 'cpu', not {dropout!r}")

    def key(t):
        return storage(t).data_ptr()

    outside = {key(t) for t in list(model.parameters()) + list(model.buffers())}
    outside.update(key(t) for t in inputs if isinstance(t, torch.Tensor))
    saved = {}

    def pack(t):
        if key(t) not in outside:
            saved.setdefault(key(t), storage(t).nbytes())
        return t

    model.train()
    patch = _cuda_like_dropout() if dropout == "cuda" else contextlib.nullcontext()
    with patch, torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(*inputs)
    return sum(saved.values())


def export_onnx(model, inputs, input_names, path, fold, opset=14,
                training=torch.onnx.TrainingMode.TRAINING, export_params=False):
    """torch.onnx.export in training mode, by default without the parameters' values (they become
    graph inputs).

    Args:
        model: the module.
        inputs: tuple of example inputs.
        input_names: names of the model's inputs in the graph.
        path: where to write the .onnx file.
        fold: do_constant_folding.
        opset: the ONNX opset (see OPSET).
        training: the TrainingMode.
        export_params: write the parameters' values (initializers).

    Returns:
        path.
    """
    model.train()
    torch.onnx.export(model, inputs, path, export_params=export_params, opset_version=opset,
                      input_names=input_names, do_constant_folding=fold, training=training)
    return path


def onnx_summary(path):
    """(Counter of op types, graph inputs named onnx::..., number of graph inputs) of a file."""
    import onnx
    g = onnx.load(path).graph
    op_types, inputs = [n.op_type for n in g.node], [i.name for i in g.input]
    folded = [name for name in inputs if name.startswith("onnx::")]
    return collections.Counter(op_types), folded, len(inputs)


def state_dict_bytes(model, unique=True):
    """Bytes of the state dict; with unique, tensors sharing a storage (tied weights) once."""
    total, seen = 0, set()
    for t in model.state_dict().values():
        k = (storage(t).data_ptr(), storage(t).nbytes())
        if unique and k in seen:
            continue
        seen.add(k)
        total += storage(t).nbytes() if unique else t.numel() * t.element_size()
    return total


def tied_parameters(model):
    """Groups (lists, two names or more) of parameter names that are one tensor."""
    groups = collections.OrderedDict()
    for prefix, module in model.named_modules(remove_duplicate=False):
        for name, p in module._parameters.items():
            if p is not None:
                full = f"{prefix}.{name}" if prefix else name
                groups.setdefault(id(p), []).append(full)
    return [sorted(set(names)) for names in groups.values() if len(set(names)) > 1]


def parameter_bytes(model):
    """Bytes of the distinct parameters (a tied one once)."""
    return sum(p.numel() * p.element_size() for p in model.parameters())


# --------------------------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------------------------


def _main():
    import os
    import tempfile
    import warnings

    import importlib.util
    if importlib.util.find_spec("onnx") is not None:
        print("ONNX files read with onnx.load")
    else:
        print("ONNX files read with the built-in protobuf reader (no onnx package)")
    all_seen, all_counted = set(), collections.Counter()
    with tempfile.TemporaryDirectory() as tmp:
        for name in NAMES:
            start = time.perf_counter()
            model, inputs, input_names = build(name)
            seen = set()
            flops = aten_gemm_flops(model, inputs, seen=seen, counted=all_counted)
            all_seen |= seen
            cuda = saved_bytes(model, inputs, dropout="cuda")
            cpu = saved_bytes(model, inputs, dropout="cpu")
            print(f"== {name}: params {parameter_bytes(model)} B, "
                  f"state dict {state_dict_bytes(model)} B "
                  f"({state_dict_bytes(model, unique=False)} B with repeats), "
                  f"tied {tied_parameters(model)}")
            print(f"   GEMM FLOPs forward {flops['forward']} backward {flops['backward']} "
                  f"(ratio {flops['backward'] / flops['forward']:.3f})")
            print(f"   saved bytes: cuda dropout {cuda}, cpu dropout {cpu}")
            for fold in (False, True):
                path = os.path.join(tmp, f"{name}_{int(fold)}.onnx")
                mode = torch.onnx.TrainingMode.TRAINING
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        export_onnx(model, inputs, input_names, path, fold, opset=OPSET[name])
                    except Exception as e:  # noqa: BLE001 -- report it, then try PRESERVE
                        print(f"   TRAINING export failed ({type(e).__name__}: {e}); PRESERVE")
                        mode = torch.onnx.TrainingMode.PRESERVE
                        export_onnx(model, inputs, input_names, path, fold, opset=OPSET[name],
                                    training=mode)
                ops, folded, n_inputs = onnx_summary(path)
                print(f"   onnx {mode.name} opset {OPSET[name]} fold={fold}: {n_inputs} inputs, "
                      f"{sum(ops.values())} nodes {dict(sorted(ops.items()))}")
                if fold:
                    print(f"   folded inputs: {folded}")
            print(f"   {time.perf_counter() - start:.2f} s")
    print("aten ops seen:", sorted(all_seen))
    print("aten ops counted (calls):", dict(sorted(all_counted.items())))


if __name__ == "__main__":
    _main()
