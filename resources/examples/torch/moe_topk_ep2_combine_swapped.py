"""A mixture-of-experts layer with top-k routing over ep=2: a softmax router picks each token's top K=1 expert
(torch.topk, the routing mask scattered from its indices), each rank holds half of the tokens and one expert,
sends every token to every expert with all_to_all_single, runs its expert on what it received and sends the
results back, then combines them with the masked gate weights (dense dispatch: capacity = all tokens).
BUG: the combine reads the returned outputs in the wrong order (expert 1's output weighted by expert 0's
gate): after all_to_all, index e of `back` is expert e's, but the loop walks them reversed.
Expected verdict: not equivalent."""
import torch
import torch.distributed as dist

from paraproof_torch import Mesh, Shard

MESH = Mesh({"ep": 2})
T, H, F, E, K = 8, 4, 6, 2, 1
EP_GROUP = dist.new_group([0, 1])

INPUTS = {"x": ((T, H), torch.float32), "router": ((H, E), torch.float32),
          "w1": ((E, H, F), torch.float32), "w2": ((E, F, H), torch.float32)}


def route(x, router):
    gate = torch.softmax(x @ router, dim=-1)
    top = torch.topk(gate, K, dim=-1).indices
    mask = torch.zeros_like(gate).scatter(-1, top, 1.0)
    return gate * mask  # [tokens, E]: the weight of each chosen expert, 0 for the others


def expert(h, w1, w2):
    return torch.relu(h @ w1) @ w2


def logical(x, router, w1, w2):
    weights = route(x, router)
    out = sum(weights[:, e:e + 1] * expert(x, w1[e], w2[e]) for e in range(E))
    return {"out": out}


def parallel(rank, x, router, w1, w2):
    weights = route(x, router)                                    # my tokens' routing, [T/ep, E]
    dispatch = x.unsqueeze(0).expand(E, x.shape[0], H).contiguous()  # one copy of my tokens per expert
    received = torch.empty_like(dispatch)
    dist.all_to_all_single(received, dispatch, group=EP_GROUP)    # every rank's tokens, for my expert
    y = expert(received.reshape(-1, H), w1[0], w2[0]).reshape(E, x.shape[0], H)
    back = torch.empty_like(y)
    dist.all_to_all_single(back, y, group=EP_GROUP)               # every expert's output, for my tokens
    out = sum(weights[:, e:e + 1] * back[E - 1 - e] for e in range(E))  # BUG: back[e] is expert e's
    return {"out": out}


PLACEMENTS = {"x": {"ep": Shard(0)}, "out": {"ep": Shard(0)}, "w1": {"ep": Shard(0)}, "w2": {"ep": Shard(0)}}
