"""Products along a dim: prod (over one dim or the whole tensor) and cumprod, which prod's backward traces.

The verifier has no product reduction, so each is written out over the slices of the dim: split into its
entries and multiply them left to right ((x0 * x1) * x2 ...), exactly the real product. That is one op per
entry, so only over small extents (PROD_LIMIT).

prod's backward, as torch 1.13 traces it under make_fx (prod_safe_zeros_backward, correct with zeros in the
input), is grad * (exclusive cumprod from the front) * (exclusive cumprod from the back, by flip: an
index_select at a reversed arange): ones / cat / slice / cumprod / index_select / mul, all mapped."""
from math import prod as _prod

from ._aten import _Unsupported, _norm_dim, handles, in_shape

PROD_LIMIT = 64


def _entries(c, x, shape, dim, what):
    k = shape[dim]
    if k > PROD_LIMIT:
        raise _Unsupported(f"'{what}' over an extent {k} (over {PROD_LIMIT}: written out entry by entry)")
    if k == 1:
        return [x]
    return c.emit("split", [x], {"dim": dim, "sizes": [1] * k}, n_out=k)


def _as_out(c, n, x):
    """x (the input, of torch dtype src) in the result's dtype (prod of integers is int64, dtype=)."""
    src, dst = n.args[0].meta["val"].dtype, c.meta(n).dtype
    return c.to_dtype(x, src, dst)


def _running(c, parts):
    """The running products of the entries, left to right (the last is the product)."""
    run = [parts[0]]
    for p in parts[1:]:
        run.append(c.emit("mul", [run[-1], p]))
    return run


@handles("aten.prod.dim_int")
def _prod_dim(c, n, a, full):
    shape = in_shape(n.args[0])
    x = _as_out(c, n, a[0])
    if not shape:
        return x
    dim = _norm_dim(int(a[1]), len(shape))
    if shape[dim] == 0:
        raise _Unsupported(f"'{full}' over an empty dim")
    y = _running(c, _entries(c, x, shape, dim, full))[-1]
    kept = shape[:dim] + [1] + shape[dim + 1:]
    return y if a[2] else c.reshape(y, kept, shape[:dim] + shape[dim + 1:])


@handles("aten.prod.default")
def _prod_all(c, n, a, full):
    shape = in_shape(n.args[0])
    x = _as_out(c, n, a[0])
    if not shape:
        return x
    total = _prod(shape)
    if total == 0:
        raise _Unsupported(f"'{full}' of an empty tensor")
    flat = c.reshape(x, shape, [total])
    return c.reshape(_running(c, _entries(c, flat, [total], 0, full))[-1], [1], [])


@handles("aten.cumprod")
def _cumprod(c, n, a, full):
    shape = in_shape(n.args[0])
    x = _as_out(c, n, a[0])
    if not shape:
        return x
    dim = _norm_dim(int(a[1]), len(shape))
    if shape[dim] <= 1:
        return x
    return c.emit("concat", _running(c, _entries(c, x, shape, dim, full)), {"dim": dim})
