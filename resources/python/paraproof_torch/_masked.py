"""Boolean-mask reads `x[mask]` that end in a full reduction: `per_token_loss[mask].mean()`, `.sum()`, the
elementwise chain before one, and their backward.

x[mask] has an extent K = mask.sum() known only with the data, so the plan cannot hold it. When every use of
the read is elementwise (with numbers, with tensors over the trailing dims, or with reads of the same mask) and
ends in a sum or mean over the masked axis, the value is exact without K: the read is kept dense (x itself, the
mask beside it), a sum is sum(where(mask, v, 0)) and a mean that over sum(mask) times the trailing extent.
Positions outside the mask hold anything; only `where` reads them, and drops them.

The backward torch traces writes the gradient back with index_put(zeros, [mask], g, accumulate=True) after an
expand of the reduced gradient to [K, ...]; a mean's backward divides by K * trailing, a number baked into the
trace: it is read as that count only on a MeanBackward0 node (autograd's own, not the user's). The user's code
cannot read K either: while a step is traced, asking a read's size (numel, shape, size, len) is an error naming
the line (_SizeGuard), so no number in the graph is K. Anything else on a read is an error naming its line."""
import os
import sys

from math import prod as _prod

import torch
from torch.overrides import TorchFunctionMode

from . import ImportTorchError
from ._aten import DTYPES, _Unsupported, _norm_dim, handles, in_shape, is_user_file


class Masked:
    """x[mask] kept dense: `dense` (of plan shape `dshape`) is mask's shape + `rest` (the read's trailing dims);
    `mask` is the plan's 0/1 mask of shape `mshape`, None for a gradient broadcast (the same for every kept
    position; `dshape` then has rest's rank) whose mask is known only where it meets a read or is written back;
    `per_count`: r when still to be divided by K * r (a mean's backward; r its trailing extent then)."""

    def __init__(self, dense, dshape, mask, mshape, rest, extent, per_count=None):
        self.dense, self.dshape, self.mask, self.mshape = dense, list(dshape), mask, mshape
        self.rest, self.extent, self.per_count = list(rest), extent, per_count

    def like(self, dense, dshape, rest=None):
        return Masked(dense, dshape, self.mask, self.mshape, self.rest if rest is None else rest, self.extent,
                      self.per_count)


# The grad_fns of the user's ops on reads (SizeGuard): a backward node of one may meet a read's extent.
READ_FNS = {}



def is_bool_read(idx_nodes, shape):
    """x[mask] with one boolean mask over x's leading dims."""
    return (len(idx_nodes) == 1 and isinstance(idx_nodes[0], torch.fx.Node) and
            idx_nodes[0].meta["val"].dtype == torch.bool and
            list(idx_nodes[0].meta["val"].shape) == list(shape[:idx_nodes[0].meta["val"].dim()]))


def read(c, n, a):
    """aten.index.Tensor(x, [mask]): the dense read."""
    shape = in_shape(n.args[0])
    mshape = in_shape(n.args[1][0])
    return Masked(a[0], shape, a[1][0], mshape, shape[len(mshape):], c.meta(n).shape[0])


def _count(c, m, dtype, r):
    """K * r as a float scalar (K * prod(rest): the number of elements of the read)."""
    k = c.emit("cast", [c.emit("sum", [m.mask], {"dims": list(range(len(m.mshape)))})], {"dtype": DTYPES[dtype]})
    return k if r == 1 else c.emit("scale", [k], {"factor": float(r)})


def _resolved(c, m, mask, mshape, dtype):
    """A gradient broadcast given the mask it meets (and a mean's 1/count applied)."""
    if m.mask is not None:
        return m
    full = list(mshape) + m.rest
    lifted = c.reshape(m.dense, m.dshape, [1] * len(mshape) + m.dshape)
    m = Masked(c.bcast(lifted, [1] * len(mshape) + m.dshape, full), full, mask, mshape, m.rest, m.extent,
               m.per_count)
    if m.per_count is not None:
        m = Masked(c.emit("div", [m.dense, _count(c, m, dtype, m.per_count)]), full, mask, mshape, m.rest,
                   m.extent)
    return m


def _lifted_mask(c, m):
    return c.reshape(m.mask, m.mshape, m.mshape + [1] * len(m.rest))


def _zeroed(c, m, dtype):
    return c.emit("where", [_lifted_mask(c, m), m.dense, c.const([], 0, DTYPES[dtype])])


# Elementwise ops whose value at each position depends only on the operands at that position.
_ELEMENTWISE = {"aten.neg", "aten.exp", "aten.log", "aten.sqrt", "aten.rsqrt", "aten.sigmoid", "aten.tanh",
                "aten.relu", "aten.silu", "aten.reciprocal", "aten.abs", "aten.sgn", "aten.sign",
                "aten.pow.Tensor_Scalar", "aten.add", "aten.sub", "aten.rsub", "aten.mul", "aten.div.Tensor",
                "aten.div.Scalar", "aten.maximum", "aten.minimum", "aten.clone", "aten.detach", "aten.alias",
                "aten._to_copy", "aten.where.self", "aten.masked_fill.Scalar", "aten.clamp", "aten.clamp_min",
                "aten.clamp_max", "aten.sigmoid_backward", "aten.tanh_backward", "aten.threshold_backward",
                "aten.silu_backward", "aten.gelu", "aten.gelu_backward", "aten.log1p", "aten.square",
                "aten.eq", "aten.ne", "aten.lt", "aten.le", "aten.gt", "aten.ge"}


def _base(full):
    ns, packet, overload = full.split(".")
    packet = packet[:-1] if packet.endswith("_") and not packet.endswith("__") else packet
    return f"{ns}.{packet}", f"{ns}.{packet}.{overload}"


def _read_backward(n):
    """The name of the grad_fn n differentiates when that is a user op on a read, or an op of torch's own
    reading a masked_select (F.cross_entropy's label smoothing), else None."""
    fwd = n.meta.get("paraproof_forward")
    fn = fwd[2] if fwd is not None and len(fwd) > 2 else None
    if fn is None:
        return None
    if READ_FNS.get(id(fn)) is fn or any(f is not None and f.name() == "MaskedSelectBackward0"
                                         for f, _ in fn.next_functions):
        return fn.name()
    return None


def _view(c, n, args, full, m):
    """unsqueeze / squeeze of a trailing dim, expand of the trailing dims: the masked axis stays first."""
    base, _ = _base(full)
    out = list(c.meta(n).shape)
    rest = out[1:]
    lead = len(m.dshape) - len(m.rest)  # the mask's dims in dense (0 for a gradient broadcast)
    if base == "aten.expand":
        if len(out) != 1 + len(m.rest) or out[0] != m.extent or in_shape(n.args[0])[0] != m.extent:
            raise _Unsupported(f"'{full}' of a read x[mask] over its masked axis")
        want = m.dshape[:lead] + rest
        lifted = c.reshape(m.dense, m.dshape, m.dshape[:lead] + [1] * (len(rest) - len(m.rest)) + m.dshape[lead:])
        return m.like(c.emit("broadcast_to", [lifted], {"shape": want}), want, rest)
    rank = len(out) if base == "aten.unsqueeze" else 1 + len(m.rest)
    d = _norm_dim(int(args[1]), rank) if len(args) > 1 and isinstance(args[1], int) else -1
    if d < 1:
        raise _Unsupported(f"'{full}' of a read x[mask] at its masked axis")
    ds = list(m.dshape)
    if base == "aten.unsqueeze":
        ds.insert(lead + d - 1, 1)
    elif ds[lead + d - 1] == 1:
        ds.pop(lead + d - 1)
    return m.like(c.reshape(m.dense, m.dshape, ds), ds, rest)


def apply(c, n, args, full, handlers):
    """An op reading a Masked value."""
    base, exact = _base(full)
    reads = [a for a in args if isinstance(a, Masked)]
    dtype = c.meta(n).dtype if isinstance(c.meta(n), torch.Tensor) else torch.float32
    known = [m for m in reads if m.mask is not None]
    backward_of = _read_backward(n)
    if backward_of == "MeanBackward1":  # its divisor may be K: read only as mean.default's
        raise _Unsupported("the gradient of a mean over some dims of a read x[mask]: write .sum(dims) and "
                           "divide by the count (mask.sum())")
    if base in ("aten.new_zeros", "aten.new_empty", "aten.new_ones", "aten.new_full"):
        return handlers[base](c, n, [None] + list(args[1:]), full)  # only the shape and dtype are read
    if base == "aten.masked_scatter" and len(reads) == 1 and args[2] is reads[0]:
        if in_shape(n.args[1]) != in_shape(n.args[0]):
            raise _Unsupported(f"'{full}' with a mask of another shape than the tensor")
        return write_back(c, n, [args[0], [args[1]], args[2], False], dtype, in_shape(n.args[1]))
    if base in ("aten.sum", "aten.mean") and len(reads) == 1 and args[0] is reads[0]:
        return _reduce(c, n, args, full, reads[0], dtype)
    if base in ("aten.unsqueeze", "aten.squeeze", "aten.expand") and args[0] is reads[0]:
        return _view(c, n, args, full, reads[0])
    m = reads[0]
    if exact == "aten.div.Scalar" and len(reads) == 1 and m.mask is None and m.per_count is None \
            and args[1] == m.extent * _prod(m.rest) and backward_of == "MeanBackward0":
        return Masked(m.dense, m.dshape, None, None, m.rest, m.extent, per_count=_prod(m.rest))
    if base not in _ELEMENTWISE and exact not in _ELEMENTWISE:
        raise _Unsupported(f"'{full}' of a boolean-mask read x[mask] (a shape that depends on the data): only "
                           "elementwise ops ending in a sum or mean over the masked axis are supported; use "
                           "torch.where or multiply by the mask")
    if len({m.mask for m in known}) > 1:
        raise _Unsupported(f"'{full}' on reads x[mask] of two different masks")
    if known:
        resolved = {id(m): _resolved(c, m, known[0].mask, known[0].mshape, dtype) for m in reads}
    elif any(m.per_count is not None for m in reads) and not (len(reads) == 1 and base in ("aten.mul",
                                                                                             "aten.neg")):
        raise _Unsupported(f"'{full}' on a masked mean's gradient before its mask is known")
    else:
        resolved = {id(m): m for m in reads}
    ref = resolved[id(reads[0])] if not known else resolved[id(known[0])]
    others = []
    for i, a in enumerate(args):
        node = n.args[i] if i < len(n.args) else None
        if isinstance(a, Masked) or not isinstance(node, torch.fx.Node):
            continue
        if node.meta["val"].dim() > len(ref.rest):  # it would meet the masked axis: not the read's positions
            raise _Unsupported(f"'{full}' of a read x[mask] with a tensor of shape {list(node.meta['val'].shape)}"
                               " (its positions are not the mask's)")
        others.append(list(node.meta["val"].shape))
    dense_args = [resolved[id(a)].dense if isinstance(a, Masked) else a for a in args]
    out = (handlers.get(exact) or handlers.get(base))(c, n, dense_args, full)
    rest = list(c.meta(n).shape[1:])
    shapes = [resolved[id(m)].dshape for m in reads] + others
    dshape = list(torch.broadcast_shapes(*[tuple(s) for s in shapes]))
    counts = [m.per_count for m in resolved.values() if m.per_count is not None]
    return Masked(out, dshape, ref.mask, ref.mshape, rest, ref.extent, counts[0] if counts else None)


def _reduce(c, n, args, full, m, dtype):
    if m.mask is None:
        raise _Unsupported(f"'{full}' of a gradient broadcast of a masked read")
    rank = 1 + len(m.rest)
    whole = full.endswith(".default") or len(args) < 2 or not args[1]  # sum/mean.default: (self, dtype)
    dims = list(range(rank)) if whole else sorted({_norm_dim(d, rank) for d in args[1]})
    keep = bool(args[2]) if not full.endswith(".default") and len(args) > 2 and args[2] is not None else False
    nm = len(m.mshape)
    dense_dims = lambda ds: [d - 1 + nm for d in ds]  # the read's dim 0 is the mask's dims
    mean = ".mean" in full
    if 0 not in dims:  # over trailing dims only: still a read of the same mask
        kind = "mean" if mean else "sum"
        y = c.emit(kind, [m.dense], {"dims": dense_dims(dims), "keepdim": keep})
        rest = list(c.meta(n).shape[1:])
        return m.like(y, list(m.mshape) + rest, rest)
    if keep:
        raise _Unsupported(f"'{full}' over the masked axis with keepdim")
    z = _zeroed(c, m, dtype)
    y = c.emit("sum", [z], {"dims": list(range(nm)) + dense_dims([d for d in dims if d > 0])})
    if mean:
        k = c.emit("cast", [c.emit("sum", [m.mask], {"dims": list(range(nm))})], {"dtype": DTYPES[dtype]})
        r = _prod(m.rest[d - 1] for d in dims if d > 0)
        y = c.emit("div", [y, k if r == 1 else c.emit("scale", [k], {"factor": float(r)})])
    return y


def gradient_broadcast(c, n, a):
    """expand(g, [K, ...]) in the backward of a sum / mean of a read (its extent among the reads'), else None."""
    if _read_backward(n) not in ("SumBackward0", "MeanBackward0", "SumBackward1", "MeanBackward1"):
        return None
    out = list(c.meta(n).shape)
    if not out or out[0] not in c.masked_extents:
        return None
    gshape = in_shape(n.args[0])
    g = [1] * (len(out) - len(gshape)) + gshape
    if g[0] != 1:
        return None
    return Masked(c.reshape(a[0], gshape, g[1:]), g[1:], None, None, out[1:], out[0])


@handles("aten.masked_select")
def _masked_select(c, n, a, full):
    """x.masked_select(mask) = x[mask] for a mask of x's shape (1-d: the read of every element kept)."""
    shape, mshape = in_shape(n.args[0]), in_shape(n.args[1])
    if shape != mshape:
        raise _Unsupported(f"'{full}' with a mask of shape {mshape} over a tensor of shape {shape}")
    c.masked_extents.add(c.meta(n).shape[0])
    return Masked(a[0], shape, a[1], mshape, [], c.meta(n).shape[0])


def write_back(c, n, a, dtype, mshape):
    """index_put(x, [mask], v, accumulate) of a Masked v (mask of shape mshape): where the mask is, v (added to
    x when accumulating)."""
    m = a[2]
    if m.mask is not None and m.mask != a[1][0]:
        raise _Unsupported("x[mask1] = y[mask2] with two different masks")
    m = _resolved(c, m, a[1][0], mshape, dtype)
    v = m.dense
    lifted = _lifted_mask(c, m)
    if a[3]:
        return c.emit("add", [a[0], c.emit("where", [lifted, v, c.const([], 0, DTYPES[dtype])])])
    return c.emit("where", [lifted, v, a[0]])


# ---- while tracing: no user code reads K ----
_SIZE_QUERIES = {torch.Tensor.numel, torch.Tensor.size, torch.Tensor.__len__, torch.Tensor.nelement,
                 torch.Tensor.shape.__get__, torch.numel}
_HERE = (os.path.abspath(__file__), os.path.abspath(torch.overrides.__file__))


def _user_caller(script):
    f = sys._getframe(2)
    while f is not None and os.path.abspath(f.f_code.co_filename) in _HERE:
        f = f.f_back
    if f is not None and is_user_file(f.f_code.co_filename, script):
        return f"{os.path.abspath(f.f_code.co_filename)}:{f.f_lineno}"
    return None


class SizeGuard(TorchFunctionMode):
    """Marks the reads x[mask] (and the non-scalar results of user ops on them) and rejects a size query on
    one from SCRIPT.py: K would enter the trace as a number."""

    def __init__(self, script):
        super().__init__()
        self.script = script
        self.marked = {}
        READ_FNS.clear()

    def _is_marked(self, t):
        return isinstance(t, torch.Tensor) and self.marked.get(id(t)) is t

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        flat = list(args) + [x for a in args if isinstance(a, (list, tuple)) for x in a]
        touches = any(self._is_marked(t) for t in flat)
        if touches and func in _SIZE_QUERIES:
            at = _user_caller(self.script)
            if at is not None:
                raise ImportTorchError(f"{at}: the size of a boolean-mask read x[mask] depends on the data (it is "
                                       "mask.sum()); ParaProof cannot take it as a number: use mask.sum()")
        out = func(*args, **kwargs)
        bool_index = (func is torch.Tensor.__getitem__ or func is torch.ops.aten.index.Tensor) and any(
            isinstance(i, torch.Tensor) and i.dtype == torch.bool
            for i in (args[1] if len(args) > 1 and isinstance(args[1], (list, tuple)) else args[1:2]))
        if (bool_index or touches) and isinstance(out, torch.Tensor):
            if out.grad_fn is not None:
                READ_FNS[id(out.grad_fn)] = out.grad_fn
            if out.dim() > 0:
                self.marked[id(out)] = out
        return out
