"""Ops that reorder or scan along a dim: flip, roll, cumsum.

Each is written with operators the proof already has, so it needs no semantics of its own: flip is a gather at
the reversed positions, roll two slices concatenated, and cumsum a matmul with the 0/1 matrix T[j, i] = (j <= i)
(its backward, the reversed cumsum torch traces as flip / cumsum / flip, follows). docs/torch-import.md lists
them under "Supported ops"."""
from ._aten import DTYPES, _norm_dim, _Unsupported, handles, in_shape

def _dims(a, rank):
    dims = a if isinstance(a, (list, tuple)) else [a]
    return [_norm_dim(int(d), rank) for d in dims]


def _positions(c, n, dim, rank):
    """iota(n) shaped to broadcast along `dim` of a rank-`rank` tensor."""
    shape = [1] * rank
    shape[dim] = n
    return c.reshape(c.emit("iota", [], {"n": n, "dtype": "i64"}), [n], shape)


@handles("aten.flip")
def _flip(c, n, a, full):
    shape = in_shape(n.args[0])
    x = a[0]
    for dim in _dims(a[1], len(shape)):
        if shape[dim] <= 1:
            continue
        last = c.const([], shape[dim] - 1, "i64")
        idx = c.emit("sub", [last, _positions(c, shape[dim], dim, len(shape))])
        x = c.emit("gather", [x, c.bcast(idx, [shape[dim] if d == dim else 1 for d in range(len(shape))],
                                         shape)], {"dim": dim})
    return x


def _roll_dim(c, x, shape, shift, dim):
    size = shape[dim]
    s = shift % size if size else 0
    if s == 0:
        return x
    tail = c.emit("slice", [x], {"dim": dim, "start": size - s, "end": size})
    head = c.emit("slice", [x], {"dim": dim, "start": 0, "end": size - s})
    return c.emit("concat", [tail, head], {"dim": dim})


@handles("aten.roll")
def _roll(c, n, a, full):
    shape = list(in_shape(n.args[0]))
    shifts = a[1] if isinstance(a[1], (list, tuple)) else [a[1]]
    dims = [] if a[2] is None else (a[2] if isinstance(a[2], (list, tuple)) else [a[2]])
    if not dims:  # torch rolls the flattened tensor
        if len(shifts) != 1:
            raise _Unsupported(f"'{full}' with {len(shifts)} shifts and no dims")
        total = 1
        for e in shape:
            total *= e
        flat = c.reshape(a[0], shape, [total])
        return c.reshape(_roll_dim(c, flat, [total], int(shifts[0]), 0), [total], shape)
    if len(shifts) != len(dims):
        raise _Unsupported(f"'{full}' with {len(shifts)} shifts for {len(dims)} dims")
    x = a[0]
    for shift, dim in zip(shifts, dims):
        x = _roll_dim(c, x, shape, int(shift), _norm_dim(int(dim), len(shape)))
    return x


@handles("aten.cumsum")
def _cumsum(c, n, a, full):
    shape = in_shape(n.args[0])
    out_dtype = c.meta(n).dtype
    if not out_dtype.is_floating_point:
        raise _Unsupported(f"'{full}' of integers (a cumulative count): only a float cumsum is supported")
    rank = len(shape)
    if rank == 0:
        return a[0]
    dim = _norm_dim(int(a[1]), rank)
    size = shape[dim]
    x = c.to_dtype(a[0], n.args[0].meta["val"].dtype, out_dtype)
    rows = c.reshape(c.emit("iota", [], {"n": size, "dtype": "i64"}), [size], [size, 1])
    cols = c.reshape(c.emit("iota", [], {"n": size, "dtype": "i64"}), [size], [1, size])
    upper = c.emit("compare", [rows, cols], {"cmp": "le"})  # T[j, i] = j <= i: row j adds into i >= j
    tri = c.emit("cast", [upper], {"dtype": DTYPES[out_dtype]})
    if rank == 1:
        return c.reshape(c.emit("matmul", [c.reshape(x, [size], [1, size]), tri]), [1, size], [size])
    # The scanned dim last, times T, and back (a transpose is its own inverse when it swaps two axes).
    perm = list(range(rank))
    perm[dim], perm[-1] = perm[-1], perm[dim]
    swap = (lambda t: t) if dim == rank - 1 else (lambda t: c.emit("transpose", [t], {"perm": perm}))
    return swap(c.emit("matmul", [swap(x), tri]))
