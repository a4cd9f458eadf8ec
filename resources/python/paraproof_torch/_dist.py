"""torch.distributed without a process group: each call on the rank being traced becomes a paraproof.* custom
op in the make_fx graph (in-place calls write their result back with copy_, which the importer turns into SSA).
Groups are the user's (dist.new_group), also when created at module level."""
import os
import sys
import threading

import torch
import torch.distributed as dist

from . import ImportTorchError
from ._aten import is_user_file

_lib = torch.library.Library("paraproof", "DEF")
_lib.define("all_reduce(Tensor x, str reduce, int[] group, str instance) -> Tensor")
_lib.define("all_gather(Tensor x, int dim, int[] group, str instance) -> Tensor")
_lib.define("reduce_scatter(Tensor x, str reduce, int dim, int[] group, str instance) -> Tensor")
_lib.define("all_to_all(Tensor x, int[] group, str instance) -> Tensor")
_lib.define("broadcast(Tensor x, int src, int[] group, str instance) -> Tensor")
_lib.define("send(Tensor x, int peer, str instance) -> Tensor")
_lib.define("recv(Tensor like, int peer, str instance) -> Tensor")

# Values do not matter while tracing (only shapes): each op returns a tensor of the right shape.
_lib.impl("all_reduce", lambda x, reduce, group, instance: x.clone(), "CPU")
_lib.impl("all_gather", lambda x, dim, group, instance: torch.cat([x] * len(group), dim), "CPU")
_lib.impl("reduce_scatter",
          lambda x, reduce, dim, group, instance: x.narrow(dim, 0, x.shape[dim] // len(group)).clone(), "CPU")
_lib.impl("all_to_all", lambda x, group, instance: x.clone(), "CPU")
_lib.impl("broadcast", lambda x, src, group, instance: x.clone(), "CPU")
_lib.impl("send", lambda x, peer, instance: x.clone(), "CPU")
_lib.impl("recv", lambda like, peer, instance: torch.zeros_like(like), "CPU")


class ProcessGroup:
    """A group of global ranks (sorted, as torch.distributed.new_group sorts them)."""

    def __init__(self, ranks):
        self.ranks = sorted(int(r) for r in ranks)

    def __repr__(self):
        return f"ProcessGroup({self.ranks})"


class _Work:
    def wait(self, *a, **k):
        return True

    def is_completed(self):
        return True


class _State:
    script = None        # absolute path of SCRIPT.py (for line numbers)
    world = 1            # the mesh size
    rank = 0             # the rank being traced
    tracing = None       # "logical" or "parallel"
    counts = {}          # collective calls per group, and send/recv per (src, dst): instance ids
    world_group = None


S = _State()


def script_line():
    """The innermost line of SCRIPT.py (or a module beside it) on the Python stack ('FILE:LINE')."""
    f = sys._getframe(1)
    while f is not None:
        if S.script and is_user_file(f.f_code.co_filename, S.script):
            return f"{os.path.abspath(f.f_code.co_filename)}:{f.f_lineno}"
        f = f.f_back
    return S.script or "<script>"


def begin_trace(kind, rank, world):
    S.tracing, S.rank, S.world, S.counts = kind, rank, world, {}
    S.world_group = ProcessGroup(range(world))


def _group_ranks(group, what):
    if S.tracing == "logical":
        raise ImportTorchError(f"{script_line()}: logical calls torch.distributed.{what}; the single-device "
                               "step may not communicate")
    g = S.world_group if group is None or group is dist.group.WORLD else group
    if not isinstance(g, ProcessGroup):
        raise ImportTorchError(f"{script_line()}: {what}: group {group!r} is not a group from dist.new_group")
    if S.rank not in g.ranks:
        raise ImportTorchError(f"{script_line()}: {what} on group {g.ranks}, which does not contain rank "
                               f"{S.rank} (the rank being traced): pick the group this rank belongs to")
    return g.ranks


def _instance(ranks):
    key = tuple(ranks)
    k = S.counts.get(key, 0)
    S.counts[key] = k + 1
    return "g" + "-".join(map(str, ranks)) + f"#{k}"


def _p2p_instance(src, dst):
    key = ("p2p", src, dst)
    k = S.counts.get(key, 0)
    S.counts[key] = k + 1
    return f"p{src}to{dst}#{k}"


def _reduce_name(op, what, allowed=("sum", "avg", "max")):
    R = dist.ReduceOp
    for name, cand in (("sum", R.SUM), ("avg", R.AVG), ("max", R.MAX)):
        if op == cand and name in allowed:
            return name
    raise ImportTorchError(f"{script_line()}: {what} with op {op}: supported ops are "
                           + ", ".join("ReduceOp." + a.upper() for a in allowed))


def _done(async_op):
    return _Work() if async_op else None


def all_reduce(tensor, op=dist.ReduceOp.SUM, group=None, async_op=False):
    ranks = _group_ranks(group, "all_reduce")
    red = _reduce_name(op, "all_reduce")
    with torch.no_grad():
        tensor.copy_(torch.ops.paraproof.all_reduce(tensor, red, ranks, _instance(ranks)))
    return _done(async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    ranks = _group_ranks(group, "all_gather_into_tensor")
    with torch.no_grad():
        output_tensor.copy_(torch.ops.paraproof.all_gather(input_tensor, 0, ranks, _instance(ranks)))
    return _done(async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    ranks = _group_ranks(group, "all_gather")
    if len(tensor_list) != len(ranks):
        raise ImportTorchError(f"{script_line()}: all_gather into {len(tensor_list)} tensors on a group of "
                               f"{len(ranks)} ranks")
    with torch.no_grad():
        flat = torch.ops.paraproof.all_gather(tensor.unsqueeze(0), 0, ranks, _instance(ranks))
        for i, t in enumerate(tensor_list):
            t.copy_(flat[i])
    return _done(async_op)


def reduce_scatter_tensor(output, input, op=dist.ReduceOp.SUM, group=None, async_op=False):
    ranks = _group_ranks(group, "reduce_scatter_tensor")
    red = _reduce_name(op, "reduce_scatter_tensor", ("sum", "avg"))
    with torch.no_grad():
        output.copy_(torch.ops.paraproof.reduce_scatter(input, red, 0, ranks, _instance(ranks)))
    return _done(async_op)


def _stacked(output, input_list, what, ranks):
    """A list form (reduce_scatter, all_to_all): piece i goes to member i, so it is the tensor form on the
    pieces stacked along a new dim 0."""
    if len(input_list) != len(ranks) or any(t.shape != output.shape for t in input_list):
        raise ImportTorchError(f"{script_line()}: {what} of {len(input_list)} pieces on a group of {len(ranks)} "
                               f"ranks (one piece per rank, each of the output's shape {tuple(output.shape)})")
    return torch.stack(list(input_list))


def reduce_scatter(output, input_list, op=dist.ReduceOp.SUM, group=None, async_op=False):
    ranks = _group_ranks(group, "reduce_scatter")
    red = _reduce_name(op, "reduce_scatter", ("sum", "avg"))
    with torch.no_grad():
        stacked = _stacked(output, input_list, "reduce_scatter", ranks)
        output.copy_(torch.ops.paraproof.reduce_scatter(stacked, red, 0, ranks, _instance(ranks))[0])
    return _done(async_op)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    ranks = _group_ranks(group, "all_to_all")
    if len(output_tensor_list) != len(ranks):
        raise ImportTorchError(f"{script_line()}: all_to_all into {len(output_tensor_list)} tensors on a group of "
                               f"{len(ranks)} ranks")
    with torch.no_grad():
        stacked = _stacked(output_tensor_list[0], input_tensor_list, "all_to_all", ranks)
        received = torch.ops.paraproof.all_to_all(stacked, ranks, _instance(ranks))
        for i, t in enumerate(output_tensor_list):
            t.copy_(received[i])
    return _done(async_op)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None,
                      async_op=False):
    ranks = _group_ranks(group, "all_to_all_single")
    if output_split_sizes is not None or input_split_sizes is not None:
        raise ImportTorchError(f"{script_line()}: all_to_all_single with split sizes is not supported "
                               "(equal splits only)")
    with torch.no_grad():
        output.copy_(torch.ops.paraproof.all_to_all(input, ranks, _instance(ranks)))
    return _done(async_op)


def broadcast(tensor, src, group=None, async_op=False):
    ranks = _group_ranks(group, "broadcast")
    if src not in ranks:
        raise ImportTorchError(f"{script_line()}: broadcast from rank {src}, which is not in group {ranks}")
    with torch.no_grad():
        tensor.copy_(torch.ops.paraproof.broadcast(tensor, int(src), ranks, _instance(ranks)))
    return _done(async_op)


def _peer(peer, what):
    if S.tracing == "logical":
        raise ImportTorchError(f"{script_line()}: logical calls torch.distributed.{what}; the single-device "
                               "step may not communicate")
    if not isinstance(peer, int) or not 0 <= peer < S.world or peer == S.rank:
        raise ImportTorchError(f"{script_line()}: {what} with peer {peer!r} on rank {S.rank}: the peer must "
                               f"be another rank in [0, {S.world})")
    return peer


def send(tensor, dst, group=None, tag=0):
    dst = _peer(dst, "send")
    with torch.no_grad():
        torch.ops.paraproof.send(tensor, dst, _p2p_instance(S.rank, dst))


def recv(tensor, src=None, group=None, tag=0):
    if src is None:
        raise ImportTorchError(f"{script_line()}: recv without src is not supported (name the sender)")
    src = _peer(src, "recv")
    with torch.no_grad():
        tensor.copy_(torch.ops.paraproof.recv(tensor, src, _p2p_instance(src, S.rank)))
    return src


def isend(tensor, dst, group=None, tag=0):
    send(tensor, dst, group, tag)
    return _Work()


def irecv(tensor, src=None, group=None, tag=0):
    recv(tensor, src, group, tag)
    return _Work()


def new_group(ranks=None, timeout=None, backend=None, pg_options=None):
    if ranks is None:
        ranks = range(S.world)
    ranks = list(ranks)
    for r in ranks:
        if not isinstance(r, int) or not 0 <= r < S.world:
            raise ImportTorchError(f"{script_line()}: new_group({ranks}): rank {r!r} is not in the mesh "
                                   f"[0, {S.world})")
    return ProcessGroup(ranks)


def get_rank(group=None):
    g = S.world_group if group is None or group is dist.group.WORLD else group
    return g.ranks.index(S.rank) if S.rank in g.ranks else -1


def get_world_size(group=None):
    g = S.world_group if group is None or group is dist.group.WORLD else group
    return len(g.ranks)


def barrier(group=None, async_op=False, device_ids=None):
    return _done(async_op)


_PATCHES = {
    "all_reduce": all_reduce, "all_gather_into_tensor": all_gather_into_tensor,
    "_all_gather_base": lambda out, inp, group=None, async_op=False: all_gather_into_tensor(out, inp, group,
                                                                                            async_op),
    "all_gather": all_gather, "reduce_scatter_tensor": reduce_scatter_tensor,
    "_reduce_scatter_base": reduce_scatter_tensor, "reduce_scatter": reduce_scatter,
    "all_to_all": all_to_all, "all_to_all_single": all_to_all_single,
    "broadcast": broadcast, "send": send, "recv": recv, "isend": isend, "irecv": irecv,
    "new_group": new_group, "get_rank": get_rank, "get_world_size": get_world_size, "barrier": barrier,
    "init_process_group": lambda *a, **k: None, "destroy_process_group": lambda *a, **k: None,
    "is_initialized": lambda: True, "is_available": lambda: True,
}


# --check-numerics runs SCRIPT.py's functions eagerly, one thread per rank (_eager.py): while a thread has an
# eager rank here, its torch.distributed calls go to that rank's simulated process group instead of the trace.
# While an eager run is on (EAGER_ON), a call from a thread that is no rank's is refused rather than traced.
EAGER = threading.local()
EAGER_ON = False


def _dispatching(name, fn):
    def call(*args, **kwargs):
        ctx = getattr(EAGER, "ctx", None)
        if ctx is not None:
            return ctx.call(name, fn, *args, **kwargs)
        if EAGER_ON:
            raise ImportTorchError(f"{script_line()}: torch.distributed.{name} called on a thread that runs no "
                                   "rank (a backward on another thread?)")
        return fn(*args, **kwargs)

    call.__name__ = name
    call.__doc__ = fn.__doc__
    return call


def patch():
    """Replaces torch.distributed's calls before SCRIPT.py runs (so `from torch.distributed import ...` and
    module-level new_group calls see the fakes)."""
    for name, fn in _PATCHES.items():
        setattr(dist, name, _dispatching(name, fn))
