"""as_strided and new_empty_strided: what autograd's CopySlices traces for a gradient through an in-place
write into a view (`out[mask, :] = 0.0` on an activation, `h[:, :k] += b`): the base's gradient is copied into
a fresh strided tensor, the written view is taken again with `as_strided`, and the view's gradient is written
back through it.

Exact only where `as_strided` reads the tensor's own elements in row-major order: its input must be
contiguous at storage offset 0 (what torch says of the traced example, `meta["val"]`), and every position
read must lie inside it. Then the view is a gather from the flattened tensor at the constant positions
`offset + sum_k i_k * stride_k`, and a write through it puts element q at position idx[q]: with distinct
positions (checked), the scattered value `sum_q (idx[q] == p) * w[q]` has one nonzero term, so it equals
w[q] exactly. Anything else is refused with the line."""
from math import prod as _prod

import torch

from ._aten import DTYPES, _Unsupported, handles



def _contiguous_strides(shape):
    strides, step = [], 1
    for e in reversed(shape):
        strides.append(step)
        step *= max(e, 1)
    return list(reversed(strides))


def geometry(n):
    """(base shape, view size, stride, offset) of an as_strided node, after checking it reads its input's own
    elements in row-major order."""
    val = n.args[0].meta["val"]
    base = list(val.shape)
    size, stride = [int(s) for s in n.args[1]], [int(s) for s in n.args[2]]
    offset = int(n.args[3]) if len(n.args) > 3 and n.args[3] is not None else int(val.storage_offset())
    if not val.is_contiguous() or val.storage_offset() != 0:
        raise _Unsupported("'aten.as_strided' of a tensor that is not contiguous at offset 0 (it reads the "
                           "storage, not the tensor)")
    if _prod(size) and (offset < 0 or offset + sum((s - 1) * t for s, t in zip(size, stride)) >= _prod(base)):
        raise _Unsupported("'aten.as_strided' reading past its input")
    return base, size, stride, offset


def _whole(base, size, stride, offset):
    """The view is the tensor itself (CopySlices of a write into a full-range slice)."""
    return size == base and offset == 0 and stride == _contiguous_strides(base)


def _positions(c, size, stride, offset):
    """The flat positions as_strided reads, an i64 tensor of shape [prod(size)] built from iota."""
    rank = len(size)
    idx = c.const([1] * rank, offset, "i64")
    for k, (s, t) in enumerate(zip(size, stride)):
        if s <= 1 or t == 0:
            continue
        along = [1] * rank
        along[k] = s
        i = c.reshape(c.emit("iota", [], {"n": s, "dtype": "i64"}), [s], along)
        if t != 1:
            i = c.emit("mul", [i, c.const([], t, "i64")])
        idx = c.emit("add", [idx, i])  # broadcasting: idx grows one dim at a time
    shape = [s if s > 1 and t != 0 else 1 for s, t in zip(size, stride)]
    return c.reshape(c.bcast(idx, shape, size), size, [_prod(size)])


@handles("aten.as_strided")
def _as_strided(c, n, a, full):
    base, size, stride, offset = geometry(n)
    if _whole(base, size, stride, offset):
        return a[0]
    flat = c.reshape(a[0], base, [_prod(base)])
    picked = c.emit("gather", [flat, _positions(c, size, stride, offset)], {"dim": 0})
    return c.reshape(picked, [_prod(size)], size)


@handles("aten.new_empty_strided")
def _new_empty_strided(c, n, a, full):
    size, stride = [int(s) for s in a[1]], [int(s) for s in a[2]]
    if stride != _contiguous_strides(size):
        raise _Unsupported(f"'{full}' with strides {stride} (not contiguous for {size})")
    # Uninitialised in torch; CopySlices overwrites it at once. Zeros, as `empty`.
    return c.const(size, 0.0, DTYPES[n.meta["val"].dtype])


def unview(c, v, before, written):
    """The base of as_strided view `v` (`before` the write) once the view's elements became `written`."""
    base, size, stride, offset = geometry(v)
    if _whole(base, size, stride, offset):
        return written
    positions = []
    for flat in range(_prod(size)):
        p, rest = offset, flat
        for s, t in zip(reversed(size), reversed(stride)):
            p += (rest % s) * t
            rest //= s
        positions.append(p)
    if len(set(positions)) != len(positions):
        raise _Unsupported("an in-place write through an 'aten.as_strided' view whose elements overlap")
    N, M = _prod(base), _prod(size)
    dtype = v.args[0].meta["val"].dtype
    if not dtype.is_floating_point:
        raise _Unsupported("an in-place write through an 'aten.as_strided' view of an integer tensor")
    idx = c.reshape(_positions(c, size, stride, offset), [M], [M, 1])
    hit = c.emit("compare", [c.bcast(idx, [M, 1], [M, N]),
                             c.bcast(c.reshape(c.emit("iota", [], {"n": N, "dtype": "i64"}), [N], [1, N]),
                                     [1, N], [M, N])], {"cmp": "eq"})
    hit_f = c.to_dtype(hit, torch.bool, dtype)
    scattered = c.emit("matmul", [c.emit("transpose", [hit_f], {"perm": [1, 0]}),
                                  c.reshape(written, size, [M, 1])])
    landed = c.emit("compare", [c.emit("sum", [hit], {"dims": [0]}), c.const([], 0, "i64")], {"cmp": "gt"})
    y = c.emit("where", [c.reshape(landed, [N], [N, 1]), scattered, c.reshape(before, base, [N, 1])])
    return c.reshape(y, [N, 1], base)
