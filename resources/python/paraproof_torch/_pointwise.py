"""Activations and losses torch has as fused kernels, written out with the verifier's ops: hardtanh, leaky_relu,
elu, glu, softplus, mish, logsigmoid, log1p, expm1, lerp, xlogy, smooth_l1 / huber / BCE-with-logits losses, and
the backward kernels torch traces for them; nan_to_num, isnan and isinf, which over the reals (every value
finite) are the identity and false.

Each is the same real function as torch's formula (torch's clamps against overflow, e.g. BCE's max_val, change
no value over the reals); exp / log / sigmoid stay uninterpreted in the proof, so the logical and parallel
steps must use the same form, which they do since both are imported alike."""
from ._aten import DTYPES, _Unsupported, _norm_dim, handles, in_shape

_REDUCTIONS = {0: None, 1: "mean", 2: "sum"}


def _num(c, n, v):
    return c.const([], v, DTYPES[c.meta(n).dtype if not isinstance(c.meta(n), (list, tuple)) else
                                  c.meta(n)[0].dtype])


def _cmp(c, x, rel, v):
    return c.emit("compare", [x, c.const([], v, "f32")], {"cmp": rel})


def _scale(c, x, f):
    return x if f == 1 else c.emit("scale", [x], {"factor": float(f)})


def _reduce(c, n, x, shape, code):
    kind = _REDUCTIONS.get(code if code is not None else 1)
    if kind is None or not shape:
        return x
    return c.emit(kind, [x], {"dims": list(range(len(shape)))})


def _grad_reduced(c, n, g, shape, gshape, code):
    """The loss gradient g broadcast to the input's shape, over N for the mean."""
    g = c.bcast(g, gshape, shape)
    if _REDUCTIONS.get(code if code is not None else 1) == "mean" and shape:
        count = 1
        for e in shape:
            count *= e
        g = c.emit("div_scalar", [g], {"divisor": float(count)})
    return g


def _log1pexp(c, x):
    """log(1 + exp(x)), softplus."""
    return c.emit("log", [c.emit("add_scalar", [c.emit("exp", [x])], {"value": 1.0})])


@handles("aten.hardtanh")
def _hardtanh(c, n, a, full):
    return c.emit("minimum", [c.emit("maximum", [a[0], _num(c, n, a[1])]), _num(c, n, a[2])])


@handles("aten.hardtanh_backward")
def _hardtanh_bw(c, n, a, full):
    inside = c.emit("minimum", [_cmp(c, a[1], "gt", a[2]), _cmp(c, a[1], "lt", a[3])])
    return c.emit("where", [inside, a[0], _num(c, n, 0)])


@handles("aten.leaky_relu")
def _leaky(c, n, a, full):
    return c.emit("where", [_cmp(c, a[0], "gt", 0), a[0], _scale(c, a[0], a[1])])


@handles("aten.leaky_relu_backward")
def _leaky_bw(c, n, a, full):
    if a[3] and a[2] <= 0:
        raise _Unsupported(f"'{full}' of an in-place leaky_relu with a slope <= 0 (its sign is lost)")
    return c.emit("where", [_cmp(c, a[1], "gt", 0), a[0], _scale(c, a[0], a[2])])


@handles("aten.elu")
def _elu(c, n, a, full):
    alpha, scale, in_scale = float(a[1]), float(a[2]), float(a[3])
    neg = c.emit("add_scalar", [c.emit("exp", [_scale(c, a[0], in_scale)])], {"value": -1.0})
    return c.emit("where", [_cmp(c, a[0], "gt", 0), _scale(c, a[0], scale), _scale(c, neg, scale * alpha)])


@handles("aten.elu_backward")
def _elu_bw(c, n, a, full):
    g, alpha, scale, in_scale, is_result, x = a[0], float(a[1]), float(a[2]), float(a[3]), a[4], a[5]
    if is_result:
        raise _Unsupported(f"'{full}' of an in-place elu")
    neg = c.emit("mul", [g, _scale(c, c.emit("exp", [_scale(c, x, in_scale)]), in_scale * scale * alpha)])
    return c.emit("where", [_cmp(c, x, "gt", 0), _scale(c, g, scale), neg])


def _halves(c, n, a):
    shape = in_shape(n.args[1] if "backward" in str(n.target) else n.args[0])
    x = a[1] if "backward" in str(n.target) else a[0]
    d = _norm_dim(int(a[2] if "backward" in str(n.target) else a[1]), len(shape))
    if shape[d] % 2:
        raise _Unsupported(f"'{n.target}' over an odd extent {shape[d]}")
    h = shape[d] // 2
    first, second = c.emit("split", [x], {"dim": d, "sizes": [h, h]}, n_out=2)
    return first, second, d


@handles("aten.glu")
def _glu(c, n, a, full):
    first, second, _ = _halves(c, n, a)
    return c.emit("mul", [first, c.emit("sigmoid", [second])])


@handles("aten.glu_backward")
def _glu_bw(c, n, a, full):
    first, second, d = _halves(c, n, a)
    s = c.emit("sigmoid", [second])
    da = c.emit("mul", [a[0], s])
    one_minus = c.emit("add_scalar", [c.emit("neg", [s])], {"value": 1.0})
    db = c.emit("mul", [c.emit("mul", [da, first]), one_minus])
    return c.emit("concat", [da, db], {"dim": d})


@handles("aten.softplus")
def _softplus(c, n, a, full):
    beta, threshold = float(a[1]), float(a[2])
    soft = _scale(c, _log1pexp(c, _scale(c, a[0], beta)), 1.0 / beta)
    return c.emit("where", [_cmp(c, _scale(c, a[0], beta), "gt", threshold), a[0], soft])


@handles("aten.softplus_backward")
def _softplus_bw(c, n, a, full):
    beta, threshold = float(a[2]), float(a[3])
    bx = _scale(c, a[1], beta)
    return c.emit("where", [_cmp(c, bx, "gt", threshold), a[0], c.emit("mul", [a[0], c.emit("sigmoid", [bx])])])


@handles("aten.mish")
def _mish(c, n, a, full):
    """x * tanh(log(1 + exp(x))), torch's kernel (no softplus threshold). Its backward is traced by make_fx as
    sigmoid / softplus / tanh / mul, each mapped on its own."""
    return c.emit("mul", [a[0], c.emit("tanh", [_log1pexp(c, a[0])])])


@handles("aten.log_sigmoid_forward")
def _logsigmoid(c, n, a, full):
    out = c.emit("neg", [_log1pexp(c, c.emit("neg", [a[0]]))])
    return [out, _num(c, n, 0)]  # the buffer: log_sigmoid_backward here reads x, not it


@handles("aten.log_sigmoid_backward")
def _logsigmoid_bw(c, n, a, full):
    return c.emit("mul", [a[0], c.emit("sigmoid", [c.emit("neg", [a[1]])])])


@handles("aten.log1p")
def _log1p(c, n, a, full):
    return c.emit("log", [c.emit("add_scalar", [a[0]], {"value": 1.0})])


@handles("aten.expm1")
def _expm1(c, n, a, full):
    return c.emit("add_scalar", [c.emit("exp", [a[0]])], {"value": -1.0})


@handles("aten.lerp.Scalar", "aten.lerp.Tensor")
def _lerp(c, n, a, full):
    diff = c.emit("sub", [a[1], a[0]])
    step = _scale(c, diff, a[2]) if full.endswith(".Scalar") else c.emit("mul", [diff, a[2]])
    return c.emit("add", [a[0], step])


@handles("aten.xlogy.Tensor", "aten.xlogy.Scalar_Other")
def _xlogy(c, n, a, full):
    y = a[1] if full.endswith(".Tensor") else _num(c, n, a[1])
    return c.emit("where", [_cmp(c, a[0], "eq", 0), _num(c, n, 0), c.emit("mul", [a[0], c.emit("log", [y])])])


def _abs(c, x):
    return c.emit("maximum", [x, c.emit("neg", [x])])


@handles("aten.smooth_l1_loss")
def _smooth_l1(c, n, a, full):
    shape = in_shape(n.args[0])
    d = c.emit("sub", [a[0], c.bcast(a[1], in_shape(n.args[1]), shape)])
    ad, beta = _abs(c, d), float(a[3])
    if beta == 0:
        return _reduce(c, n, ad, shape, a[2])
    quad = _scale(c, c.emit("square", [d]), 0.5 / beta)
    lin = c.emit("add_scalar", [ad], {"value": -0.5 * beta})
    return _reduce(c, n, c.emit("where", [_cmp(c, ad, "lt", beta), quad, lin]), shape, a[2])


@handles("aten.smooth_l1_loss_backward")
def _smooth_l1_bw(c, n, a, full):
    shape = in_shape(n.args[1])
    d = c.emit("sub", [a[1], c.bcast(a[2], in_shape(n.args[2]), shape)])
    beta = float(a[4])
    slope = c.emit("div_scalar", [d], {"divisor": beta}) if beta else None
    zero = _num(c, n, 0)
    sign = c.emit("sub", [c.emit("where", [_cmp(c, d, "gt", 0), _num(c, n, 1), zero]),
                          c.emit("where", [_cmp(c, d, "lt", 0), _num(c, n, 1), zero])])
    local = sign if slope is None else c.emit("where", [_cmp(c, _abs(c, d), "lt", beta), slope, sign])
    return c.emit("mul", [local, _grad_reduced(c, n, a[0], shape, in_shape(n.args[0]), a[3])])


@handles("aten.huber_loss")
def _huber(c, n, a, full):
    shape = in_shape(n.args[0])
    d = c.emit("sub", [a[0], c.bcast(a[1], in_shape(n.args[1]), shape)])
    ad, delta = _abs(c, d), float(a[3])
    quad = _scale(c, c.emit("square", [d]), 0.5)
    lin = _scale(c, c.emit("add_scalar", [ad], {"value": -0.5 * delta}), delta)
    return _reduce(c, n, c.emit("where", [_cmp(c, ad, "lt", delta), quad, lin]), shape, a[2])


@handles("aten.huber_loss_backward")
def _huber_bw(c, n, a, full):
    shape = in_shape(n.args[1])
    d = c.emit("sub", [a[1], c.bcast(a[2], in_shape(n.args[2]), shape)])
    delta = float(a[4])
    clipped = c.emit("minimum", [c.emit("maximum", [d, _num(c, n, -delta)]), _num(c, n, delta)])
    return c.emit("mul", [clipped, _grad_reduced(c, n, a[0], shape, in_shape(n.args[0]), a[3])])


@handles("aten.binary_cross_entropy_with_logits")
def _bce_logits(c, n, a, full):
    """(1 - t) x + w_pos log(1 + exp(-x)), w_pos = (pos_weight - 1) t + 1 (torch's formula without its
    overflow guard), times weight; reduced."""
    shape = in_shape(n.args[0])
    x, t = a[0], c.bcast(a[1], in_shape(n.args[1]), shape)
    soft = _log1pexp(c, c.emit("neg", [x]))
    if a[3] is not None:
        soft = c.emit("mul", [soft, c.emit("add_scalar", [c.emit("mul", [c.emit("add_scalar", [a[3]],
                                                                                {"value": -1.0}), t])],
                                           {"value": 1.0})])
    loss = c.emit("add", [c.emit("mul", [c.emit("add_scalar", [c.emit("neg", [t])], {"value": 1.0}), x]), soft])
    if a[2] is not None:
        loss = c.emit("mul", [loss, a[2]])
    return _reduce(c, n, loss, shape, a[4])


@handles("aten.amin")
def _amin(c, n, a, full):
    r = len(in_shape(n.args[0]))
    if r == 0:
        return a[0]
    dims = sorted({_norm_dim(d, r) for d in a[1]}) if a[1] else list(range(r))
    return c.emit("neg", [c.emit("max", [c.emit("neg", [a[0]])], {"dims": dims, "keepdim": bool(a[2])})])


# ---- non-finite values ----
# ParaProof's tensors hold reals, every one finite (a non-finite constant is refused, -inf fills stand for
# -1e30): nan_to_num changes no value, and isnan / isinf are false everywhere (x.max()'s backward asks
# isnan of the input and of the max).
@handles("aten.nan_to_num")
def _nan_to_num(c, n, a, full):
    return a[0]


@handles("aten.isnan", "aten.isinf", "aten.isposinf", "aten.isneginf")
def _never(c, n, a, full):
    return c.const(list(c.meta(n).shape), 0, "i64")  # a bool tensor is 0/1 in i64 (_aten.DTYPES)
