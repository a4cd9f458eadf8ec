"""A one-block GPT-style language-model training step, data parallel over dp=2: token embedding, pre-norm
causal self-attention (the causal mask is an additive bias input), a GELU MLP, the LM head and the
cross-entropy loss; each replica takes half of the sequences, scales its loss by 1/dp (as DDP averages), and
the loss and every gradient are summed over the replicas.
BUG: the embedding gradient is left out of the averaging loop (each replica keeps its own).
Expected verdict: not equivalent."""
import torch
import torch.distributed as dist
import torch.nn.functional as F

from paraproof_torch import Mesh, Shard, Replicate, Partial

MESH = Mesh({"dp": 2})
B, S, H, V = 4, 4, 8, 16
PARAMS = ["embed", "ln1.w", "ln1.b", "wqkv", "wo", "ln2.w", "ln2.b", "fc1", "fc2", "head"]

INPUTS = {
    "ids": ((B, S), torch.int64),
    "labels": ((B * S,), torch.int64),
    "causal_bias": ((S, S), torch.float32),  # 0 on and below the diagonal, -1e9 above
    "embed": ((V, H), torch.float32),
    "ln1.w": ((H,), torch.float32), "ln1.b": ((H,), torch.float32),
    "wqkv": ((3 * H, H), torch.float32), "wo": ((H, H), torch.float32),
    "ln2.w": ((H,), torch.float32), "ln2.b": ((H,), torch.float32),
    "fc1": ((4 * H, H), torch.float32), "fc2": ((H, 4 * H), torch.float32),
    "head": ((V, H), torch.float32),
}


def model(ids, causal_bias, embed, ln1_w, ln1_b, wqkv, wo, ln2_w, ln2_b, fc1, fc2, head):
    b = ids.shape[0]
    x = F.embedding(ids, embed)
    q, k, v = F.linear(F.layer_norm(x, (H,), ln1_w, ln1_b), wqkv).split(H, dim=-1)
    scores = q @ k.transpose(-2, -1) / H ** 0.5 + causal_bias
    x = x + F.linear(torch.softmax(scores, dim=-1) @ v, wo)
    x = x + F.linear(F.gelu(F.linear(F.layer_norm(x, (H,), ln2_w, ln2_b), fc1)), fc2)
    return F.linear(x, head).view(b * S, V)


def logical(ids, labels, causal_bias, *params):
    loss = F.cross_entropy(model(ids, causal_bias, *params), labels)
    grads = torch.autograd.grad(loss, params)
    return {"loss": loss, **{p + ".grad": g for p, g in zip(PARAMS, grads)}}


def parallel(rank, ids, labels, causal_bias, *params):
    loss = F.cross_entropy(model(ids, causal_bias, *params), labels) / dist.get_world_size()
    grads = torch.autograd.grad(loss, params)
    with torch.no_grad():
        for t in (loss,) + tuple(grads[1:]):  # BUG: grads[0], the embedding's, is not averaged
            dist.all_reduce(t)  # the sum of the scaled parts: the average
    return {"loss": loss, **{p + ".grad": g for p, g in zip(PARAMS, grads)}}


PLACEMENTS = {"ids": {"dp": Shard(0)}, "labels": {"dp": Shard(0)}}
