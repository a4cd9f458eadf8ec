"""Comparisons, boolean masks and what is built from them: where, masked_fill, tril/triu, clamp, sign.

A bool tensor is i64 0/1 in the plan (_aten.DTYPES): a comparison is `compare`, `&` / `|` / `^` / `~` on
masks are min / max / != / == 0 of 0/1 values, and `where` selects where its condition is nonzero; so every
form a user writes a mask in has one exact meaning in the proof (docs/torch-import.md, "Masks")."""
import torch

from ._aten import DTYPES, _Unsupported, _is_num, handles, in_shape

_RELATIONS = {"eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge"}


def _dtype(x_node):
    return x_node.meta["val"].dtype


def _operand(c, n, a, i, like):
    """Argument i as a plan tensor of torch dtype `like`: a number becomes a scalar constant of it, a tensor is
    converted to it."""
    if _is_num(a[i]):
        return c.const([], a[i], DTYPES[like])
    return c.to_dtype(a[i], _dtype(n.args[i]), like)


def _common(c, n, a, ports):
    """The tensor operands at `ports` in torch's promoted dtype (a float if any operand is one)."""
    dts = [(_dtype(n.args[i]) if isinstance(n.args[i], torch.fx.Node) else None) for i in ports]
    floats = [d for d in dts if d is not None and d.is_floating_point]
    scalar_float = any(isinstance(a[i], float) for i in ports)
    target = floats[0] if floats else (torch.float32 if scalar_float else torch.int64)
    vals = []
    for i, d in zip(ports, dts):
        if d is None:
            vals.append(_operand(c, n, a, i, target))
        else:
            vals.append(c.to_dtype(a[i], d, target) if (d.is_floating_point != target.is_floating_point or
                                                         (d == torch.bool) != (target == torch.bool)) else a[i])
    return vals


@handles(*[f"aten.{k}.{o}" for k in _RELATIONS for o in ("Tensor", "Scalar")])
def _compare(c, n, a, full):
    x, y = _common(c, n, a, (0, 1))
    return c.emit("compare", [x, y], {"cmp": _RELATIONS[full.split(".")[1]]})


def _truth(c, n, a, i):
    """Argument i as a 0/1 mask (a non-bool operand of a logical op is `x != 0`)."""
    if _is_num(a[i]):
        return c.const([], 1 if a[i] else 0, "i64")
    d = _dtype(n.args[i])
    return a[i] if d == torch.bool else c.to_dtype(a[i], d, torch.bool)


def _require_bool(n, full):
    for x in n.args[:2]:
        if isinstance(x, torch.fx.Node) and _dtype(x) != torch.bool:
            raise _Unsupported(f"'{full}' on {_dtype(x)} tensors (bitwise integer arithmetic)")


@handles("aten.logical_and", "aten.bitwise_and.Tensor", "aten.bitwise_and.Scalar")
def _and(c, n, a, full):
    if full.startswith("aten.bitwise"):
        _require_bool(n, full)
    return c.emit("minimum", [_truth(c, n, a, 0), _truth(c, n, a, 1)])


@handles("aten.logical_or", "aten.bitwise_or.Tensor", "aten.bitwise_or.Scalar")
def _or(c, n, a, full):
    if full.startswith("aten.bitwise"):
        _require_bool(n, full)
    return c.emit("maximum", [_truth(c, n, a, 0), _truth(c, n, a, 1)])


@handles("aten.logical_xor", "aten.bitwise_xor.Tensor", "aten.bitwise_xor.Scalar")
def _xor(c, n, a, full):
    if full.startswith("aten.bitwise"):
        _require_bool(n, full)
    return c.emit("compare", [_truth(c, n, a, 0), _truth(c, n, a, 1)], {"cmp": "ne"})


@handles("aten.logical_not", "aten.bitwise_not")
def _not(c, n, a, full):
    if full.startswith("aten.bitwise"):
        _require_bool(n, full)
    return c.emit("compare", [_truth(c, n, a, 0), c.const([], 0, "i64")], {"cmp": "eq"})


def _where(c, n, cond, a, ports):
    x, y = _common(c, n, a, ports)
    return c.emit("where", [cond, x, y])


@handles("aten.where.self", "aten.where.ScalarSelf", "aten.where.ScalarOther", "aten.where.Scalar")
def _where_h(c, n, a, full):
    return _where(c, n, _truth(c, n, a, 0), a, (1, 2))


@handles("aten.masked_fill.Scalar", "aten.masked_fill.Tensor")
def _masked_fill(c, n, a, full):
    return c.emit("where", [_truth(c, n, a, 1), _operand(c, n, a, 2, _dtype(n.args[0])), a[0]])


def _triangle(c, n, a, full, keep):
    """tril / triu over the last two dims: keep x where col - row `keep` diagonal, else 0."""
    shape = in_shape(n.args[0])
    if len(shape) < 2:
        raise _Unsupported(f"'{full}' of a {len(shape)}-d tensor")
    rows, cols = shape[-2], shape[-1]
    r = c.reshape(c.emit("iota", [], {"n": rows, "dtype": "i64"}), [rows], [rows, 1])
    k = c.reshape(c.emit("iota", [], {"n": cols, "dtype": "i64"}), [cols], [1, cols])
    off = c.emit("sub", [k, r])
    diag = int(a[1] or 0)
    mask = c.emit("compare", [off, c.const([], diag, "i64")], {"cmp": keep})
    return c.emit("where", [mask, a[0], c.const([], 0, DTYPES[_dtype(n.args[0])])])


@handles("aten.tril")
def _tril(c, n, a, full):
    return _triangle(c, n, a, full, "le")


@handles("aten.triu")
def _triu(c, n, a, full):
    return _triangle(c, n, a, full, "ge")


def _bound(c, n, a, i, kind, x):
    if a[i] is None:
        return x
    return c.emit(kind, [x, _operand(c, n, a, i, _dtype(n.args[0]))])


@handles("aten.clamp", "aten.clamp.Tensor", "aten.clip", "aten.clip.Tensor")
def _clamp(c, n, a, full):
    return _bound(c, n, a, 2, "minimum", _bound(c, n, a, 1, "maximum", a[0]))


@handles("aten.clamp_min", "aten.clamp_min.Tensor")
def _clamp_min(c, n, a, full):
    return _bound(c, n, a, 1, "maximum", a[0])


@handles("aten.clamp_max", "aten.clamp_max.Tensor")
def _clamp_max(c, n, a, full):
    return _bound(c, n, a, 1, "minimum", a[0])


@handles("aten.sgn", "aten.sign")
def _sign(c, n, a, full):
    """(x > 0) - (x < 0), exact: abs's backward is grad * sgn(x)."""
    dt = _dtype(n.args[0])
    zero = c.const([], 0, DTYPES[dt])
    pos = c.to_dtype(c.emit("compare", [a[0], zero], {"cmp": "gt"}), torch.bool, dt)
    neg = c.to_dtype(c.emit("compare", [a[0], zero], {"cmp": "lt"}), torch.bool, dt)
    return c.emit("sub", [pos, neg])


@handles("aten.native_dropout")
def _dropout(c, n, a, full):
    if not a[2] or a[1] == 0:
        return [a[0], c.const(in_shape(n.args[0]), 1, "i64")]  # eval mode: the identity, an all-true mask
    raise _Unsupported(f"'{full}' in training (a random mask): pass the mask as an input and write "
                       "x * mask / (1 - p), declaring the input Mask() in INPUTS")



def _reduced_dims(n, a, rank):
    dims = a[1] if len(a) > 1 else None
    if dims is None:
        return list(range(rank))
    dims = dims if isinstance(dims, (list, tuple)) else [dims]
    return sorted({d + rank if d < 0 else d for d in dims}) or list(range(rank))


def _count_true(c, n, a, dims, keep):
    """How many elements along dims are nonzero (an integer sum of 0/1: exact)."""
    return c.emit("sum", [_truth(c, n, a, 0)], {"dims": dims, "keepdim": keep})


@handles("aten.any", "aten.any.dim", "aten.all", "aten.all.dim")
def _any_all(c, n, a, full):
    shape = in_shape(n.args[0])
    if not shape:
        return _truth(c, n, a, 0)
    dims = _reduced_dims(n, a, len(shape))
    keep = bool(a[2]) if len(a) > 2 and a[2] is not None else False
    count = _count_true(c, n, a, dims, keep)
    if ".any" in full or full.startswith("aten.any"):
        return c.emit("compare", [count, c.const([], 0, "i64")], {"cmp": "gt"})
    total = 1
    for d in dims:
        total *= shape[d]
    return c.emit("compare", [count, c.const([], total, "i64")], {"cmp": "eq"})


@handles("aten.count_nonzero", "aten.count_nonzero.dim_IntList")
def _count_nonzero(c, n, a, full):
    shape = in_shape(n.args[0])
    if not shape:
        return _truth(c, n, a, 0)
    return _count_true(c, n, a, _reduced_dims(n, a, len(shape)), False)
