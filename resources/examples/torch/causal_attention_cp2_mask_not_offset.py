"""Causal self-attention with its mask built in the step (torch.tril of ones, masked_fill with -inf), the
queries split over cp=2 by sequence: each rank attends its query rows to every key.
BUG: each rank builds the causal mask of its local rows as if they were the first ones (no offset by the
rank's first query position), so rank 1's queries cannot see most of their past.
Expected verdict: not equivalent."""
import math

import torch
import torch.distributed as dist

from paraproof_torch import Mesh, Replicate, Shard

MESH = Mesh({"cp": 2})
S, D = 8, 4
CP = 2
CP_GROUP = dist.new_group([0, 1])

INPUTS = {"q": ((S, D), torch.float32), "k": ((S, D), torch.float32), "v": ((S, D), torch.float32),
          "dout": ((S, D), torch.float32)}


def attend(q, k, v, mask):
    scores = q @ k.transpose(0, 1) / math.sqrt(D)
    scores = scores.masked_fill(mask == 0, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def logical(q, k, v, dout):
    mask = torch.tril(torch.ones(S, S))
    out = attend(q, k, v, mask)
    dq, dk, dv = torch.autograd.grad(out, [q, k, v], dout)
    return {"out": out, "q.grad": dq, "k.grad": dk, "v.grad": dv}


def parallel(rank, q, k, v, dout):
    rows = S // CP
    mask = torch.tril(torch.ones(rows, S))  # BUG: rows rank * rows .. of the full mask are meant
    out = attend(q, k, v, mask)
    dq, dk, dv = torch.autograd.grad(out, [q, k, v], dout)
    dist.all_reduce(dk, group=CP_GROUP)
    dist.all_reduce(dv, group=CP_GROUP)
    return {"out": out, "q.grad": dq, "k.grad": dk, "v.grad": dv}


PLACEMENTS = {"q": {"cp": Shard(0)}, "dout": {"cp": Shard(0)}, "out": {"cp": Shard(0)},
              "q.grad": {"cp": Shard(0)}, "k": {"cp": Replicate()}}
