"""A dp=2 x tp=2 training step: the Megatron-style tensor-parallel MLP of mlp_tp2.py inside each data-parallel
replica, each replica on half of the batch, gradients and loss averaged over the data-parallel group, then an
SGD update. Groups are created at module level for every rank, as Megatron's initialize_model_parallel does.
BUG: the gradients are summed instead of averaged (twice the logical ones).
Expected verdict: not equivalent."""
import torch
import torch.distributed as dist
import torch.nn.functional as F

from paraproof_torch import Mesh, Shard, Replicate, Partial
from mappings import copy_to_tensor_model_parallel_region, reduce_from_tensor_model_parallel_region

MESH = Mesh({"dp": 2, "tp": 2})   # rank = 2 * dp + tp
DP, TP = 2, 2
LR = 0.1

TP_GROUP = DP_GROUP = None
for i in range(DP):               # tensor-parallel groups [0, 1], [2, 3]
    ranks = list(range(i * TP, (i + 1) * TP))
    g = dist.new_group(ranks)
    if dist.get_rank() in ranks:
        TP_GROUP = g
for j in range(TP):               # data-parallel groups [0, 2], [1, 3]
    ranks = list(range(j, DP * TP, TP))
    g = dist.new_group(ranks)
    if dist.get_rank() in ranks:
        DP_GROUP = g

INPUTS = {
    "x": ((8, 16), torch.float32),
    "w1": ((32, 16), torch.float32),
    "w2": ((16, 32), torch.float32),
}


def logical(x, w1, w2):
    y = F.linear(torch.relu(F.linear(x, w1)), w2)
    loss = (y * y).mean()
    g1, g2 = torch.autograd.grad(loss, [w1, w2])
    with torch.no_grad():
        w1_new = w1 - LR * g1
        w2_new = w2 - LR * g2
    return {"loss": loss, "w1.grad": g1, "w2.grad": g2, "w1.new": w1_new, "w2.new": w2_new}


def parallel(rank, x, w1, w2):
    xp = copy_to_tensor_model_parallel_region(x, TP_GROUP)
    h = torch.relu(F.linear(xp, w1))
    y = reduce_from_tensor_model_parallel_region(F.linear(h, w2), TP_GROUP)
    loss = (y * y).mean()
    g1, g2 = torch.autograd.grad(loss, [w1, w2])
    with torch.no_grad():
        for g in (loss, g1, g2):  # each replica saw half the batch: average over the replicas
            dist.all_reduce(g, op=dist.ReduceOp.SUM, group=DP_GROUP)  # BUG: SUM, not AVG
        w1_new = w1 - LR * g1
        w2_new = w2 - LR * g2
    return {"loss": loss, "w1.grad": g1, "w2.grad": g2, "w1.new": w1_new, "w2.new": w2_new}


PLACEMENTS = {
    "x": {"dp": Shard(0)},
    "w1": {"tp": Shard(0)}, "w2": {"tp": Shard(1)},
    "w1.grad": {"tp": Shard(0)}, "w2.grad": {"tp": Shard(1)},
    "w1.new": {"tp": Shard(0)}, "w2.new": {"tp": Shard(1)},
}
STATE = {"w1": "w1.new", "w2": "w2.new"}  # optional: parameters and their updates (the state contract)
