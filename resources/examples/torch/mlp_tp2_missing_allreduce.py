"""mlp_tp2.py with the classic Megatron bug: the copy-to-region backward forgets its all-reduce, so each
rank's input gradient holds only its own half of the features' contribution (x.grad differs).
Expected verdict: not equivalent."""
import torch
import torch.distributed as dist
import torch.nn.functional as F

from paraproof_torch import Mesh, Shard, Replicate, Partial
from mappings import reduce_from_tensor_model_parallel_region

MESH = Mesh({"tp": 2})
TP_GROUP = dist.new_group([0, 1])

INPUTS = {
    "x": ((8, 16), torch.float32),
    "w1": ((32, 16), torch.float32),
    "b1": ((32,), torch.float32),
    "w2": ((16, 32), torch.float32),
}


class CopyToModelParallelRegion(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group):
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad, None  # BUG: the gradient must be all-reduced over the tensor-parallel group


def logical(x, w1, b1, w2):
    y = F.linear(F.gelu(F.linear(x, w1, b1)), w2)
    loss = (y * y).mean()
    gx, g1, gb1, g2 = torch.autograd.grad(loss, [x, w1, b1, w2])
    return {"loss": loss, "x.grad": gx, "w1.grad": g1, "b1.grad": gb1, "w2.grad": g2}


def parallel(rank, x, w1, b1, w2):
    xp = CopyToModelParallelRegion.apply(x, TP_GROUP)
    h = F.gelu(F.linear(xp, w1, b1))
    y = reduce_from_tensor_model_parallel_region(F.linear(h, w2), TP_GROUP)
    loss = (y * y).mean()
    gx, g1, gb1, g2 = torch.autograd.grad(loss, [x, w1, b1, w2])
    return {"loss": loss, "x.grad": gx, "w1.grad": g1, "b1.grad": gb1, "w2.grad": g2}


PLACEMENTS = {
    "w1": {"tp": Shard(0)}, "b1": {"tp": Shard(0)}, "w2": {"tp": Shard(1)},
    "w1.grad": {"tp": Shard(0)}, "b1.grad": {"tp": Shard(0)}, "w2.grad": {"tp": Shard(1)},
}
