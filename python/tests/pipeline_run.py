"""A training step run as a pipeline on the CPU, as a pipeline framework runs it: one process per
stage (torch.distributed over gloo), each holding the blocks of its stage, micro-batches sent
forward and their gradients sent back in the schedule's order (1F1B or GPipe, or a table of
per-rank actions as torch pipelining runs one), and each rank measuring what it holds: its
parameters, their gradients and Adam's two moments after a real optimiser step, and at its
fullest moment the storages autograd keeps for the micro-batches in flight together with the
inputs it received and the outputs it sent (kept until their backward).

    held = run(name, split_modules, microbatches, schedule="1f1b")   # bytes per stage
    held = run(name, split_modules, microbatches, actions=table)     # "0F0", "0I0", "0W0", ...
                                                                     # (stage k on rank k mod R)
    held = run(name, split_modules, microbatches, recompute="full")  # torch.utils.checkpoint
    held = run(name, split_modules, microbatches, replicas=2)        # 2 data-parallel replicas
                                                                     # a stage (bytes per rank)

An action table's I(k) runs the micro-batch's backward with every linear layer's weight gradient
deferred (the zero-bubble schedules' split: the layer keeps its input and its output's gradient,
autograd frees the rest), and W(k) computes those weight gradients. With recompute="full", each
stage runs under torch.utils.checkpoint: its forward keeps only its input, and its backward runs
the forward again, whose saved tensors are counted with what the rank holds then; with
"selective", only attention's core (scores, softmax, the product with the values) runs under it,
as Megatron-LM's selective recomputation.

With replicas=d every stage runs on d ranks (stage s on ranks s*d .. s*d+d-1, as torchtitan,
Megatron-LM and DeepSpeed lay them out): replica r runs micro-batches r, r+d, ... as its own
pipeline with the replicas r of the other stages, and after its last backward each stage
all-reduces its gradients over its replicas (gloo), before the optimiser step.

`name` is a model of user_models whose forward is a chain of blocks (CHAINS says how each block is
called); `split_modules` are the modules the stages after the first begin at, as a stages file
names them. The backward of the last stage starts from a gradient of ones on the output: the
graph dplace places has no loss either.
"""

import json
import os
import re
import socket
import tempfile

import torch
import torch.distributed as dist
import torch.utils.checkpoint

import math

import user_models


def _decoder_chain(model):
    chain = [("embed", lambda x: model.embed(x))]
    for i, layer in enumerate(model.layers):
        chain.append((f"layers.{i}",
                      lambda x, layer=layer: layer(x, model.cos, model.sin, model.mask)))
    chain += [("norm", lambda x: model.norm(x)), ("head", lambda x: model.head(x))]
    return chain


# Per model: its forward as a list of (module path, the block called on the running value).
CHAINS = {"decoder": _decoder_chain}


def order(schedule, stage, stages, microbatches):
    """The stage's actions in the schedule's order: ("F", k) and ("B", k) for micro-batch k."""
    if schedule == "gpipe":
        return ([("F", k) for k in range(microbatches)] +
                [("B", k) for k in range(microbatches)])
    warmup = min(stages - stage - 1, microbatches)
    actions = [("F", k) for k in range(warmup)]
    for k in range(microbatches - warmup):
        actions += [("F", warmup + k), ("B", k)]
    return actions + [("B", k) for k in range(microbatches - warmup, microbatches)]


ACTION = re.compile(r"^(\d+)([FBIW])(\d+)$")


def parse(actions):
    """A rank's action table ("0F0", "0I0", "0W0", ...) as (letter, stage, micro-batch)."""
    out = []
    for a in actions:
        m = ACTION.match(a)
        assert m, a
        out.append((m.group(2), int(m.group(1)), int(m.group(3))))
    return out


class _DeferredLinear(torch.autograd.Function):
    """A linear layer whose backward computes only its input's gradient and queues what its
    weight gradient needs (its input, its output's gradient) on `pending[0]`."""

    @staticmethod
    def forward(ctx, x, weight, bias, pending):
        ctx.save_for_backward(x)
        # The parameters themselves (a saved tensor comes back as another object, whose .grad
        # would not be theirs).
        ctx.pending, ctx.weight, ctx.bias = pending, weight, bias
        return torch.nn.functional.linear(x, weight, bias)

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        ctx.pending[0].append((x, grad, ctx.weight, ctx.bias))
        return grad @ ctx.weight, None, None, None


def _checkpoint_attention_core(attn):
    """user_models.Attention's forward with its core (scores, softmax, the product with the
    values) under torch.utils.checkpoint."""
    def core(q, k, v, mask):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        return torch.softmax(scores + mask, dim=-1) @ v

    def forward(x, cos, sin, mask):
        b, t, d = x.shape
        h = attn.heads

        def split(y):
            return y.view(b, t, h, d // h).transpose(1, 2)

        q, k, v = split(attn.q(x)), split(attn.k(x)), split(attn.v(x))
        q, k = user_models.rotate(q, cos, sin), user_models.rotate(k, cos, sin)
        y = torch.utils.checkpoint.checkpoint(core, q, k, v, mask, use_reentrant=True)
        return attn.o(y.transpose(1, 2).reshape(b, t, d))
    attn.forward = forward


def _weight_gradients(queued):
    """W: the deferred weight (and bias) gradients, accumulated as autograd would."""
    with torch.no_grad():
        _accumulate(queued)


def _accumulate(queued):
    for x, grad, weight, bias in queued:
        g2 = grad.reshape(-1, grad.shape[-1])
        dw = g2.t() @ x.reshape(-1, x.shape[-1])
        weight.grad = dw if weight.grad is None else weight.grad + dw
        if bias is not None:
            db = g2.sum(0)
            bias.grad = db if bias.grad is None else bias.grad + db


def _storage(t):
    return t._storage().data_ptr(), t._storage().nbytes()


def _rank(world_rank, world, name, split_modules, microbatches, schedule, actions, recompute,
          replicas, port, out_dir):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=world_rank, world_size=world)
    # This rank's pipeline (its replica) and its place in it; a peer at pipeline rank q is world
    # rank q * replicas + replica.
    rank, replica = divmod(world_rank, replicas)
    ranks = world // replicas
    microbatches //= replicas
    groups = ([dist.new_group(list(range(q * replicas, (q + 1) * replicas)))
               for q in range(ranks)] if replicas > 1 else [])

    def peer(q):
        return q * replicas + replica
    model, inputs = user_models.build(name)  # seeded: every rank builds the same model
    model.train()
    chain = CHAINS[name](model)
    names = [n for n, _ in chain]
    starts = [0] + [names.index(m) for m in split_modules] + [len(chain)]
    stages = len(starts) - 1  # stage k runs on rank k mod ranks (several a rank: interleaved)
    blocks = {k: chain[starts[k]:starts[k + 1]] for k in range(rank, stages, ranks)}
    mine = [block for k in sorted(blocks) for block in blocks[k]]
    params = list({id(p): p for n, _ in mine
                   for p in model.get_submodule(n).parameters()}.values())
    torch.manual_seed(1)
    batches = [tuple(torch.randint_like(x, 0, 512) if not x.is_floating_point()
                     else torch.randn_like(x) for x in inputs) for _ in range(microbatches)]
    entering = {}  # per stage of this rank: the shape of the value that enters it
    with torch.no_grad():
        for k in blocks:
            x = batches[0][0]
            for _, block in chain[:starts[k]]:
                x = block(x)
            entering[k] = (x.shape, x.dtype)

    pending = [None]  # where the linear layers' deferred weight gradients go
    if actions is not None and any("I" in a for a in actions[rank]):
        for n, _ in mine:
            for m in model.get_submodule(n).modules():
                if isinstance(m, torch.nn.Linear):
                    m.forward = (lambda x, m=m:
                                 _DeferredLinear.apply(x, m.weight, m.bias, pending))

    if recompute == "selective":
        for n, _ in mine:
            for m in model.get_submodule(n).modules():
                if isinstance(m, user_models.Attention):
                    _checkpoint_attention_core(m)

    outside = {_storage(t)[0] for t in list(model.parameters()) + list(model.buffers())}
    in_flight = {}  # (stage, micro-batch) -> {storage: bytes}, (input, output)
    weights = {}  # (stage, micro-batch) -> what its deferred weight gradients hold
    queued = {}  # (stage, micro-batch) -> its deferred weight gradients
    peak, sends = 0, []
    dummy = torch.ones(1, requires_grad=True)  # checkpoint's gradient path on the first stage

    def held(extra=()):
        every = dict(extra)
        for kept, _ in in_flight.values():
            every.update(kept)
        for kept in weights.values():
            every.update(kept)
        return sum(every.values())

    def tag(stage, k, backward):  # messages between two ranks matched by what they carry
        return (stage * microbatches + k) * 2 + backward

    steps = (parse(actions[rank]) if actions is not None
             else [(a, rank, k) for a, k in order(schedule, rank, ranks, microbatches)])
    for action, stage, k in steps:
        key = stage, k
        if action == "W":
            _weight_gradients(queued.pop(key))
            weights.pop(key)
        elif action == "F":
            if stage == 0:
                x = batches[k][0]
            else:
                x = torch.empty(entering[stage][0], dtype=entering[stage][1])
                dist.recv(x, peer((stage - 1) % ranks), tag=tag(stage, k, 0))
                x.requires_grad_(True)
            kept = {}

            def pack(t, kept=kept):
                storage, nbytes = _storage(t)
                if storage not in outside:
                    kept[storage] = nbytes
                return t

            def run_blocks(y, _, stage=stage):
                for _, block in blocks[stage]:
                    y = block(y)
                return y

            with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                if recompute == "full":
                    y = torch.utils.checkpoint.checkpoint(run_blocks, x, dummy,
                                                          use_reentrant=True)
                else:
                    y = run_blocks(x, dummy)
            for t in (x, y):
                if t.is_floating_point():
                    kept.setdefault(*_storage(t))
            in_flight[key] = kept, (x, y)
            peak = max(peak, held())
            if stage + 1 < stages:
                sends.append(dist.isend(y.detach().contiguous(), peer((stage + 1) % ranks),
                                        tag=tag(stage + 1, k, 0)))
        else:
            _, (x, y) = in_flight[key]
            grad = torch.ones_like(y)
            if stage + 1 < stages:
                dist.recv(grad, peer((stage + 1) % ranks), tag=tag(stage, k, 1))
            again = {}  # what recomputing the forward saves, until the backward is done

            def pack_again(t, again=again):
                storage, nbytes = _storage(t)
                if storage not in outside:
                    again[storage] = nbytes
                return t

            pending[0] = queued[key] = []
            with torch.autograd.graph.saved_tensors_hooks(pack_again, lambda t: t):
                y.backward(grad)
            peak = max(peak, held(again))
            in_flight.pop(key)
            if action == "I":
                weights[key] = {}
                for t in (t for q in queued[key] for t in q[:2]):
                    weights[key].setdefault(*_storage(t))
            if stage > 0:
                sends.append(dist.isend(x.grad.contiguous(), peer((stage - 1) % ranks),
                                        tag=tag(stage - 1, k, 1)))
    for s in sends:
        s.wait()
    if replicas > 1:  # the stage's gradients, summed over its replicas (in place)
        for p in params:
            dist.all_reduce(p.grad, group=groups[rank])
    optimiser = torch.optim.Adam(params)
    optimiser.step()
    resident = sum(t.numel() * t.element_size() for p in params
                   for t in [p, p.grad] + [v for v in optimiser.state[p].values()
                                          if isinstance(v, torch.Tensor) and v.dim() > 0])
    with open(os.path.join(out_dir, f"{world_rank}.json"), "w") as f:
        json.dump({"resident": resident, "activations": peak}, f)
    dist.barrier()
    dist.destroy_process_group()


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(name, split_modules, microbatches, schedule="1f1b", actions=None, recompute="none",
        replicas=1):
    """Per rank, the bytes its process held at its fullest: {"resident", "activations"}.
    `actions`: a list per rank of torch pipelining's actions, run instead of `schedule` (with
    more stages than ranks, stage k on rank k mod ranks: interleaved); `recompute`: "none",
    "selective" or "full"; `replicas`: data-parallel replicas of every stage (with `schedule`; the
    micro-batches a multiple of them), ranks s*replicas .. (s+1)*replicas-1 stage s's."""
    assert recompute in ("none", "selective", "full")
    assert replicas == 1 or (actions is None and microbatches % replicas == 0)
    ranks = (len(actions) if actions is not None else len(split_modules) + 1) * replicas
    with tempfile.TemporaryDirectory() as out_dir:
        torch.multiprocessing.spawn(
            _rank, args=(ranks, name, list(split_modules), microbatches, schedule, actions,
                         recompute, replicas, _free_port(), out_dir), nprocs=ranks, join=True)
        return [json.load(open(os.path.join(out_dir, f"{r}.json"))) for r in range(ranks)]
