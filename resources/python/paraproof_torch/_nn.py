"""Statistics, norms, padding and repetition as engineers write them (torch.norm / vector_norm for gradient
clipping, var / std / logsumexp, F.pad, repeat / repeat_interleave for GQA's kv heads), each as the exact
composition of ParaProof ops torch's definition gives (docs/torch-import.md, "Supported aten ops"). Their
backwards are traced by make_fx as plain aten ops (torch's derivative formulas), so only forwards live here."""
import torch

from ._aten import DTYPES, _Unsupported, _dims, _norm_dim, _shape, handles, in_shape, out_shape


def _count(shape, dims):
    n = 1
    for d in dims:
        n *= shape[d]
    return n


def _keep(c, x, shape, dims, keepdim):
    """x reduced over dims with keepdim=True, as the result torch gives for `keepdim`."""
    if keepdim:
        return x
    return c.reshape(x, [1 if i in dims else s for i, s in enumerate(shape)],
                     [s for i, s in enumerate(shape) if i not in dims])


# ---- norms ----
def _vector_norm(c, n, x, shape, p, dims, keepdim, full):
    if p is None:
        p = 2
    p = float(p)
    if len(shape) == 0:
        dims = []
    attrs = {"dims": dims, "keepdim": bool(keepdim)}
    if not dims:  # a 0-d tensor: |x|
        return c.emit("maximum", [x, c.emit("neg", [x])])
    if p == 2:
        return c.emit("sqrt", [c.emit("sum", [c.emit("square", [x])], attrs)])
    ax = c.emit("maximum", [x, c.emit("neg", [x])])
    if p == 1:
        return c.emit("sum", [ax], attrs)
    if p == float("inf"):
        return c.emit("max", [ax], attrs)
    if p > 0 and p != float("inf"):
        s = c.emit("sum", [c.emit("pow", [ax], {"exponent": p})], attrs)
        return c.emit("pow", [s], {"exponent": 1.0 / p})
    raise _Unsupported(f"'{full}' with ord {p} (only p > 0 and inf)")


@handles("aten.linalg_vector_norm")
def _linalg_vector_norm(c, n, a, full):
    # (self, ord=2, dim=None, keepdim=False, dtype=None)
    shape = in_shape(n.args[0])
    x = a[0]
    if a[4] is not None:
        x = c.to_dtype(x, n.args[0].meta["val"].dtype, a[4])
    return _vector_norm(c, n, x, shape, a[1], _dims(a[2], len(shape)), a[3], full)


@handles("aten.norm.Scalar", "aten.norm.ScalarOpt_dim", "aten.norm.ScalarOpt_dtype", "aten.norm.ScalarOpt_dim_dtype")
def _norm(c, n, a, full):
    shape = in_shape(n.args[0])
    overload = full.split(".")[2]
    dims, keepdim = (a[2], a[3]) if "dim" in overload else (None, False)
    dtype = a[-1] if "dtype" in overload else None
    x = a[0]
    if dtype is not None:
        x = c.to_dtype(x, n.args[0].meta["val"].dtype, dtype)
    return _vector_norm(c, n, x, shape, a[1], _dims(dims, len(shape)), keepdim, full)


# ---- statistics ----
def _var(c, n, x, shape, dims, correction, keepdim, full):
    if len(shape) == 0:
        raise _Unsupported(f"'{full}' of a 0-d tensor")
    cnt = _count(shape, dims)
    divisor = cnt - correction
    if divisor <= 0:
        raise _Unsupported(f"'{full}' over {cnt} elements with correction {correction} (a division by zero)")
    mean = c.emit("mean", [x], {"dims": dims, "keepdim": True})
    d = c.emit("sub", [x, mean])
    s = c.emit("sum", [c.emit("square", [d])], {"dims": dims, "keepdim": bool(keepdim)})
    return c.emit("div_scalar", [s], {"divisor": float(divisor)}), mean


def _var_args(n, a, full):
    """(dims, correction, keepdim) of var / std / var_mean / std_mean in any of their overloads."""
    overload = full.split(".")[2]
    r = len(in_shape(n.args[0]))
    if overload == "correction":  # (self, dim=None, correction=None, keepdim=False)
        corr = 1 if a[2] is None else a[2]
        return _dims(a[1], r), corr, bool(a[3])
    if overload == "dim":  # (self, dim, unbiased=True, keepdim=False)
        return _dims(a[1], r), (1 if a[2] is None or a[2] else 0), bool(a[3])
    # default: (self, unbiased=True)
    return list(range(r)), (1 if a[1] is None or a[1] else 0), False


@handles("aten.var.correction", "aten.var.dim", "aten.var.default")
def _var_h(c, n, a, full):
    dims, corr, keepdim = _var_args(n, a, full)
    v, _ = _var(c, n, a[0], in_shape(n.args[0]), dims, corr, keepdim, full)
    return v


@handles("aten.std.correction", "aten.std.dim", "aten.std.default")
def _std_h(c, n, a, full):
    dims, corr, keepdim = _var_args(n, a, full)
    v, _ = _var(c, n, a[0], in_shape(n.args[0]), dims, corr, keepdim, full)
    return c.emit("sqrt", [v])


@handles("aten.var_mean.correction", "aten.var_mean.dim", "aten.var_mean.default",
         "aten.std_mean.correction", "aten.std_mean.dim", "aten.std_mean.default")
def _var_mean_h(c, n, a, full):
    dims, corr, keepdim = _var_args(n, a, full)
    shape = in_shape(n.args[0])
    v, mean = _var(c, n, a[0], shape, dims, corr, keepdim, full)
    if full.startswith("aten.std_mean"):
        v = c.emit("sqrt", [v])
    return [v, _keep(c, mean, shape, dims, keepdim)]


@handles("aten.logsumexp")
def _logsumexp(c, n, a, full):
    # m + log(sum(exp(x - m))), m the max over dims (torch's own stable form)
    shape = in_shape(n.args[0])
    if len(shape) == 0:
        return a[0]
    dims = _dims(a[1], len(shape))
    m = c.emit("max", [a[0]], {"dims": dims, "keepdim": True})
    s = c.emit("sum", [c.emit("exp", [c.emit("sub", [a[0], m])])], {"dims": dims, "keepdim": True})
    y = c.emit("add", [c.emit("log", [s]), m])
    return _keep(c, y, shape, dims, a[2])


# ---- padding ----
@handles("aten.constant_pad_nd")
def _constant_pad_nd(c, n, a, full):
    # pad = (left, right) of the last dim, then of the one before, ...; a negative amount crops.
    shape = list(in_shape(n.args[0]))
    pad = list(a[1])
    value = 0.0 if a[2] is None else float(a[2])
    if len(pad) % 2 or len(pad) // 2 > len(shape):
        raise _Unsupported(f"'{full}' with pad {pad}")
    dt = DTYPES.get(n.args[0].meta["val"].dtype)
    if dt is None:
        raise _Unsupported(f"'{full}' of dtype {n.args[0].meta['val'].dtype}")
    x = a[0]
    for k in range(len(pad) // 2):
        d = len(shape) - 1 - k
        left, right = pad[2 * k], pad[2 * k + 1]
        if left < 0 or right < 0:
            start, end = max(0, -left), shape[d] - max(0, -right)
            if end < start:
                raise _Unsupported(f"'{full}' cropping more than dim {d} holds")
            if (start, end) != (0, shape[d]):
                x = c.emit("slice", [x], {"dim": d, "start": start, "end": end})
            shape[d] = end - start
        pieces = []
        for amount in (max(0, left), max(0, right)):
            s = list(shape)
            s[d] = amount
            pieces.append(c.const(s, value, dt) if amount else None)
        if pieces[0] is None and pieces[1] is None:
            continue
        parts = [p for p in (pieces[0], x, pieces[1]) if p is not None]
        x = c.emit("concat", parts, {"dim": d})
        shape[d] += max(0, left) + max(0, right)
    return x


# ---- repetition ----
@handles("aten.repeat")
def _repeat(c, n, a, full):
    # Tiles: out[i * s + j] = x[j] along each dim, i.e. x as [1, s] broadcast to [r, s], row-major.
    shape = list(in_shape(n.args[0]))
    reps = list(a[1])
    if len(reps) < len(shape):
        raise _Unsupported(f"'{full}' with fewer repeats than dims")
    shape = [1] * (len(reps) - len(shape)) + shape
    lifted = [e for s in shape for e in (1, s)]
    wide = [e for r, s in zip(reps, shape) for e in (r, s)]
    x = c.reshape(a[0], in_shape(n.args[0]), lifted)
    x = c.bcast(x, lifted, wide)
    return c.reshape(x, wide, out_shape(c, n))


def _constant_chain(c, name):
    """The plan value `name` is made of constants and data movement only (no input reaches it)."""
    producers = {o: op for op in c.ops for o in op["outputs"]}
    moves = {"identity", "reshape", "transpose", "slice", "broadcast_to", "concat", "split", "cast"}
    todo, seen = [name], set()
    while todo:
        v = todo.pop()
        if v in seen:
            continue
        seen.add(v)
        op = producers.get(v)
        if op is None:
            return False  # an input
        if op["op"] in ("constant", "iota"):
            continue
        if op["op"] not in moves:
            return False
        todo.extend(op["inputs"])
    return True


@handles("aten.repeat_interleave.Tensor")
def _repeat_interleave(c, n, a, full):
    # x.repeat_interleave(r, dim) is index_select(x, dim, repeat_interleave(full(k, r))): the indices
    # 0,..,0, 1,..,1, ... (each r times). Only constant counts: data-dependent ones give a data-dependent shape.
    reps = n.args[0].meta["val"]
    if reps.dim() != 1 or reps.numel() == 0 or not _constant_chain(c, a[0]):
        raise _Unsupported(f"'{full}' with repeat counts computed from data (only a constant count)")
    r = int(reps[0])
    if not bool((reps == r).all()) or r < 1:
        raise _Unsupported(f"'{full}' with unequal repeat counts {reps.tolist()}")
    k = reps.numel()
    idx = c.emit("iota", [], {"n": k, "start": 0, "dtype": "i64"})
    idx = c.bcast(c.reshape(idx, [k], [k, 1]), [k, 1], [k, r])
    return c.reshape(idx, [k, r], [k * r])


@handles("aten.fill.Tensor")
def _fill_tensor(c, n, a, full):
    # x.fill_(t) with a 0-d tensor t (`x[:, 0] = False` traces as this): t broadcast to x, in x's dtype.
    v = c.meta(n)
    src = n.args[1].meta["val"]
    return c.bcast(c.reshape(c.to_dtype(a[1], src.dtype, v.dtype), _shape(src), []), [], _shape(v))
