"""A Megatron-style tensor-parallel MLP training step over tp=2: a column-parallel fc1 (its input through
copy-to-region), GELU, a row-parallel fc2 (its output through reduce-from-region), an MSE-style loss and the
backward. Expected verdict: equivalent."""
import torch
import torch.distributed as dist
import torch.nn.functional as F

from paraproof_torch import Mesh, Shard, Replicate, Partial
from mappings import copy_to_tensor_model_parallel_region, reduce_from_tensor_model_parallel_region

MESH = Mesh({"tp": 2})
TP = 2
TP_GROUP = dist.new_group(list(range(TP)))  # module level, as Megatron's initialize_model_parallel

INPUTS = {
    "x": ((8, 16), torch.float32),
    "w1": ((32, 16), torch.float32),   # fc1.weight [out, in]
    "b1": ((32,), torch.float32),
    "w2": ((16, 32), torch.float32),   # fc2.weight [out, in]
}


def mlp(x, w1, b1, w2):
    h = F.gelu(F.linear(x, w1, b1))
    return F.linear(h, w2)


def logical(x, w1, b1, w2):
    y = mlp(x, w1, b1, w2)
    loss = (y * y).mean()
    gx, g1, gb1, g2 = torch.autograd.grad(loss, [x, w1, b1, w2])
    return {"loss": loss, "x.grad": gx, "w1.grad": g1, "b1.grad": gb1, "w2.grad": g2}


def parallel(rank, x, w1, b1, w2):
    xp = copy_to_tensor_model_parallel_region(x, TP_GROUP)
    h = F.gelu(F.linear(xp, w1, b1))                 # column parallel: this rank's 16 of 32 features
    y = reduce_from_tensor_model_parallel_region(F.linear(h, w2), TP_GROUP)  # row parallel
    loss = (y * y).mean()
    gx, g1, gb1, g2 = torch.autograd.grad(loss, [x, w1, b1, w2])
    return {"loss": loss, "x.grad": gx, "w1.grad": g1, "b1.grad": gb1, "w2.grad": g2}


PLACEMENTS = {
    "w1": {"tp": Shard(0)}, "b1": {"tp": Shard(0)}, "w2": {"tp": Shard(1)},
    "w1.grad": {"tp": Shard(0)}, "b1.grad": {"tp": Shard(0)}, "w2.grad": {"tp": Shard(1)},
    # x, x.grad and loss: Replicate() over tp (an axis not named)
}
