"""ZeRO-1 with Adam over dp=2: each rank computes the gradient of its half of the batch (a local mean),
reduce-scatters it with an AVG reduce-scatter (the mean over the whole batch, each rank getting the rows of
the weight it owns), updates its rows of the weight with its shard of Adam's moments, and all-gathers the
updated weight. Adam's second moment is declared NonNegative(), as it is. Expected verdict: equivalent."""
import torch
import torch.distributed as dist

from paraproof_torch import Mesh, NonNegative, Shard

MESH = Mesh({"dp": 2})
N, H, O = 4, 4, 3
DP = 2
DP_GROUP = dist.new_group([0, 1])
LR, BETA1, BETA2, EPS = 1e-3, 0.9, 0.999, 1e-8

INPUTS = {"x": ((N, H), torch.float32), "dout": ((N, O), torch.float32), "w": ((H, O), torch.float32),
          "exp_avg": ((H, O), torch.float32), "exp_avg_sq": ((H, O), torch.float32, NonNegative())}
STATE = {"w": "w.new", "exp_avg": "exp_avg.new", "exp_avg_sq": "exp_avg_sq.new"}


def adam(w, g, exp_avg, exp_avg_sq):
    """One Adam step (step 1, so the bias corrections are 1 - beta), in place as torch.optim.Adam does."""
    exp_avg.mul_(BETA1).add_(g, alpha=1 - BETA1)
    exp_avg_sq.mul_(BETA2).addcmul_(g, g, value=1 - BETA2)
    denom = (exp_avg_sq.sqrt() / (1 - BETA2) ** 0.5).add_(EPS)
    w.addcdiv_(exp_avg, denom, value=-LR / (1 - BETA1))
    return w


def loss_of(x, w, dout):
    return ((x @ w) * dout).sum() / x.shape[0]


def logical(x, dout, w, exp_avg, exp_avg_sq):
    (g,) = torch.autograd.grad(loss_of(x, w, dout), [w])
    with torch.no_grad():
        m, v = exp_avg.clone(), exp_avg_sq.clone()
        w_new = adam(w.clone(), g, m, v)
    return {"w.new": w_new, "exp_avg.new": m, "exp_avg_sq.new": v}


def parallel(rank, x, dout, w, exp_avg, exp_avg_sq):
    (g,) = torch.autograd.grad(loss_of(x, w, dout), [w])  # the mean over my half of the batch
    rows = H // DP
    with torch.no_grad():
        g_shard = torch.empty(rows, O)
        dist.reduce_scatter_tensor(g_shard, g, op=dist.ReduceOp.AVG, group=DP_GROUP)
        m, v = exp_avg.clone(), exp_avg_sq.clone()
        w_shard = adam(w[rank * rows:(rank + 1) * rows].clone(), g_shard, m, v)
        w_new = torch.empty(H, O)
        dist.all_gather_into_tensor(w_new, w_shard, group=DP_GROUP)
    return {"w.new": w_new, "exp_avg.new": m, "exp_avg_sq.new": v}


PLACEMENTS = {"x": {"dp": Shard(0)}, "dout": {"dp": Shard(0)}, "exp_avg": {"dp": Shard(0)},
              "exp_avg_sq": {"dp": Shard(0)}, "exp_avg.new": {"dp": Shard(0)}, "exp_avg_sq.new": {"dp": Shard(0)}}
