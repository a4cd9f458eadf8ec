"""Ops that reorder or scan along a dim: flip, roll, cumsum, sort / argsort.

Each is written with operators the proof already has, so it needs no semantics of its own: flip is a gather at
the reversed positions, roll two slices concatenated, cumsum a matmul with the 0/1 matrix T[j, i] = (j <= i)
(its backward, the reversed cumsum torch traces as flip / cumsum / flip, follows; of integers a `where` and
`sum` over T), sort a topk with k = n. docs/torch-import.md lists them under "Supported ops"."""
import operator

from ._aten import DTYPES, Poison, _norm_dim, _Unsupported, handles, in_shape, node_line

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
    rank = len(shape)
    if rank == 0:
        return a[0]
    dim = _norm_dim(int(a[1]), rank)
    size = shape[dim]
    x = c.to_dtype(a[0], n.args[0].meta["val"].dtype, out_dtype)
    rows = c.reshape(c.emit("iota", [], {"n": size, "dtype": "i64"}), [size], [size, 1])
    cols = c.reshape(c.emit("iota", [], {"n": size, "dtype": "i64"}), [size], [1, size])
    upper = c.emit("compare", [rows, cols], {"cmp": "le"})  # T[j, i] = j <= i: row j adds into i >= j
    if not out_dtype.is_floating_point:
        return _int_cumsum(c, x, shape, dim, upper, DTYPES[out_dtype])
    tri = c.emit("cast", [upper], {"dtype": DTYPES[out_dtype]})
    if rank == 1:
        return c.reshape(c.emit("matmul", [c.reshape(x, [size], [1, size]), tri]), [1, size], [size])
    # The scanned dim last, times T, and back (a transpose is its own inverse when it swaps two axes).
    perm = list(range(rank))
    perm[dim], perm[-1] = perm[-1], perm[dim]
    swap = (lambda t: t) if dim == rank - 1 else (lambda t: c.emit("transpose", [t], {"perm": perm}))
    return swap(c.emit("matmul", [swap(x), tri]))


def _last(c, x, shape, dim):
    """x with `dim` swapped to the last axis, and the swap (its own inverse)."""
    if dim == len(shape) - 1:
        return x, (lambda t: t)
    perm = list(range(len(shape)))
    perm[dim], perm[-1] = perm[-1], perm[dim]
    return c.emit("transpose", [x], {"perm": perm}), (lambda t: c.emit("transpose", [t], {"perm": perm}))


@handles("aten.sort", "aten.sort.stable")
def _sort(c, n, a, full):
    """sort (and argsort, traced as sort) as topk with k = n along the last dim: descending is topk of x,
    ascending topk of -x negated. topk breaks ties by the lower index, which is torch's stable sort; torch's
    default sort leaves the order of ties unspecified, so its indices are taken only with stable=True."""
    shape = in_shape(n.args[0])
    if full.endswith(".stable"):
        stable, dim, descending = bool(a[1]), a[2], bool(a[3])
    else:
        stable, dim, descending = False, a[1], bool(a[2])
    if not shape:
        return [a[0], c.const([], 0, "i64")]
    dim = _norm_dim(int(dim if dim is not None else -1), len(shape))
    x, back = _last(c, a[0], shape, dim)
    dtype = n.args[0].meta["val"].dtype
    key = x if dtype.is_floating_point else c.emit("cast", [x], {"dtype": "f32"})  # topk orders reals; exact
    if not descending:
        key = c.emit("neg", [key])
    vals, idx = c.emit("topk", [key], {"k": shape[dim]}, n_out=2)
    if not dtype.is_floating_point:  # the integers themselves, at the sorted positions
        vals = c.emit("gather", [x, idx], {"dim": len(shape) - 1})
    elif not descending:
        vals = c.emit("neg", [vals])
    vals, idx = back(vals), back(idx)
    if not stable and any(u.args[1] == 1 for u in n.users if u.target is operator.getitem):
        loc, _ = node_line(n, c.script)
        idx = Poison(f"{loc}: the indices of '{full}' without stable=True (torch leaves the order of ties "
                     f"unspecified): pass stable=True to sort / argsort in {c.where}")
    return [vals, idx]


@handles("aten.argsort", "aten.argsort.stable")
def _argsort(c, n, a, full):
    if not (full.endswith(".stable") and a[1]):
        raise _Unsupported(f"'{full}' without stable=True (torch leaves the order of ties unspecified): pass "
                           "stable=True")
    return _sort(c, n, a, "aten.sort.stable")[1]


def _int_cumsum(c, x, shape, dim, upper, dtype):
    """An integer cumsum (a running count, `mask.cumsum(-1)`): y[.., i, ..] = sum_j where(j <= i, x[.., j, ..], 0)
    over a new axis j beside dim, with the integer `where` and `sum` (no float matmul)."""
    size = shape[dim]
    rank = len(shape)
    lifted = shape[:dim + 1] + [1] + shape[dim + 1:]  # x[.., j, 1, ..]
    tri = [1] * (rank + 1)
    tri[dim], tri[dim + 1] = size, size  # T[j, i] at axes (dim, dim + 1)
    picked = c.emit("where", [c.reshape(upper, [size, size], tri), c.reshape(x, shape, lifted),
                              c.const([], 0, dtype)])
    return c.emit("sum", [picked], {"dims": [dim]})
