"""A sequence-parallel layer norm over tp=2 (Megatron's sequence parallelism): each rank normalizes its half
of the sequence, the halves are all-gathered for a column-parallel linear layer (reduce-scatter backward), the
loss is a partial sum over the output features of each rank, and the
layer norm's weight and bias gradients, partial per rank, are all-reduced over the group.
Expected verdict: equivalent."""
import torch
import torch.distributed as dist
import torch.nn.functional as F

from paraproof_torch import Mesh, Shard, Replicate, Partial

MESH = Mesh({"tp": 2})
S, H = 8, 16
TP_GROUP = dist.new_group([0, 1])

INPUTS = {
    "x": ((S, H), torch.float32),
    "ln.weight": ((H,), torch.float32),
    "ln.bias": ((H,), torch.float32),
    "w": ((H, H), torch.float32),
}


class GatherFromSequenceParallelRegion(torch.autograd.Function):
    """All-gather along the sequence (dim 0) forward; reduce-scatter of the gradient backward."""

    @staticmethod
    def forward(ctx, x):
        world = dist.get_world_size(group=TP_GROUP)
        out = torch.empty((x.shape[0] * world,) + tuple(x.shape[1:]), dtype=x.dtype)
        dist.all_gather_into_tensor(out, x.contiguous(), group=TP_GROUP)
        return out

    @staticmethod
    def backward(ctx, grad):
        world = dist.get_world_size(group=TP_GROUP)
        out = torch.empty((grad.shape[0] // world,) + tuple(grad.shape[1:]), dtype=grad.dtype)
        dist.reduce_scatter_tensor(out, grad.contiguous(), group=TP_GROUP)
        return out


def logical(x, ln_w, ln_b, w):
    h = F.layer_norm(x, (H,), ln_w, ln_b, 1e-5)
    y = F.linear(h, w)
    loss = (y * y).sum() / (S * H)
    gx, gw_ln, gb_ln, gw = torch.autograd.grad(loss, [x, ln_w, ln_b, w])
    return {"loss": loss, "x.grad": gx, "ln.weight.grad": gw_ln, "ln.bias.grad": gb_ln, "w.grad": gw}


def parallel(rank, x, ln_w, ln_b, w):
    h = F.layer_norm(x, (H,), ln_w, ln_b, 1e-5)           # this rank's S/2 tokens
    y = F.linear(GatherFromSequenceParallelRegion.apply(h), w)  # column parallel: H/2 output features
    loss = (y * y).sum() / (S * H)                         # this rank's part of the loss
    gx, gw_ln, gb_ln, gw = torch.autograd.grad(loss, [x, ln_w, ln_b, w])
    for g in (gw_ln, gb_ln):                               # sequence-parallel params: sum the partial grads
        dist.all_reduce(g, group=TP_GROUP)
    return {"loss": loss, "x.grad": gx, "ln.weight.grad": gw_ln, "ln.bias.grad": gb_ln, "w.grad": gw}


PLACEMENTS = {
    "x": {"tp": Shard(0)}, "x.grad": {"tp": Shard(0)},
    "w": {"tp": Shard(0)}, "w.grad": {"tp": Shard(0)},
    "loss": {"tp": Partial()},
}
