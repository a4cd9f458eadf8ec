"""Maps a make_fx graph (aten ops and paraproof.* collectives) to ParaProof ops (docs/operators.md).

Values are SSA tensor names. In-place ops (add_, copy_, ...) are traced by make_fx as nodes whose later
users see the node, so mapping each to its out-of-place op is the SSA form. An unsupported op becomes a
poison value: it is an error only when something the plan needs (an output, a send) depends on it."""
import math
import operator
import os

import torch

from . import ImportTorchError, _insertion, _scopes

# A bool tensor is an i64 tensor of 0 and 1 in the plan (comparisons give 0/1, `where` reads nonzero as true):
# the verifier's arithmetic has no booleans, and every producer of a bool here yields only 0 or 1.
DTYPES = {torch.float32: "f32", torch.bfloat16: "bf16", torch.float16: "f16", torch.float64: "f64",
          torch.int64: "i64", torch.int32: "i32", torch.bool: "i64"}

# Non-finite fills (`float("-inf")` in a causal mask) stand for this magnitude: over the reals a masked score
# x - 1e30 still differs from x (so a mask applied on one side only is caught), and in float64 exp() of it
# is 0 as torch's exp(-inf) is (so the import's self-check holds the reading to torch's values).
INF_STANDIN = 1e30


class Poison:
    """What makes a value unavailable: every unsupported construct it depends on, in trace order (one import
    names them all, not one per try)."""

    def __init__(self, message, more=()):
        self.messages = list(dict.fromkeys([message, *more]))

    @property
    def message(self):
        return "\nerror: ".join(self.messages)

    @staticmethod
    def merge(poisons, own=None):
        msgs = [m for p in poisons for m in p.messages] + ([own] if own else [])
        return Poison(msgs[0], msgs[1:])


def node_line(node, script):
    """'FILE:LINE' of the innermost frame of SCRIPT.py or a module beside it in the node's stack trace (fx
    records it), and its function. A backward op whose own line is the `autograd.grad` / `backward` call has
    the line of the forward op it differentiates (_backlines.py), with the calling function."""
    return _frames(node, script)[0]


def _frames(node, script):
    """The node's user frames ('FILE:LINE', function), innermost first, never empty ((script, '') when none);
    a backward op's are its forward op's from the line it takes on."""
    own = exec_frames(node, script)
    fwd = node.meta.get("paraproof_forward")
    if fwd is not None and _scopes.FRAMES not in node.meta and own[0][0] == fwd[1]:
        forward = _stack_frames(fwd[0], script)
        if forward[0][0] != script:
            return [(forward[0][0], own[0][1])] + forward[1:]
    return own


def exec_frames(node, script):
    """The user frames running when the node was made, innermost first: a backward op's are the
    `autograd.grad` / `backward` call's, not its forward op's."""
    if _scopes.FRAMES in node.meta:
        return node.meta[_scopes.FRAMES]
    return _stack_frames(node.stack_trace or "", script)


def _stack_frames(st, script):
    frames = []
    for ln in st.splitlines():
        ln = ln.strip()
        if ln.startswith("File \"") and "\", line " in ln:
            fname = ln[len("File \""):ln.index("\", line ")]
            if is_user_file(fname, script):
                rest = ln[ln.index("\", line ") + len("\", line "):]
                num = rest.split(",")[0]
                func = rest.split(" in ", 1)[1] if " in " in rest else ""
                frames.append((f"{os.path.abspath(fname)}:{num}", func))
    return frames or [(script, "")]


# Calling lines kept in a scope: enough to tell apart the calls of a helper (rope(q, ...) and rope(k, ...)).
# The step's own function closes the chain, named only when it calls the helper itself.
_CALLERS = 2
_STEPS = ("logical", "parallel")


def node_scope(node, script):
    """The op's scope: the nn.Module path it ran in ("model.fc1"), else the SCRIPT.py function, then after a
    space its line ("model.fc1 mlp.py:20", "parallel mlp_tp2.py:40"); the text after the space is a note, not
    a level of the hierarchy. Inside a helper of the step the note goes on with the lines that called it
    ("rope llama.py:24 < block llama.py:73", docs/plan-format.md): a helper's line is right on one call and
    wrong on another when the bug is in the call's arguments."""
    frames = _frames(node, script)
    loc, func = frames[0]
    line = os.path.basename(loc) if loc != script else ""
    path = node.meta.get("paraproof_scope") or func
    scope = " ".join(p for p in (path, line) if p)
    callers = [f for i, f in enumerate(frames[1:], 1) if f[0] != frames[i - 1][0]]  # a comprehension's own
    for k, (caller_loc, caller) in enumerate(callers[:_CALLERS]):
        if caller in _STEPS and k > 0:
            break
        scope += f" < {caller} {os.path.basename(caller_loc)}"
        if caller in _STEPS:
            break
    return scope


def is_user_file(fname, script):
    """SCRIPT.py and the modules beside it (its own helpers, e.g. Megatron-style mappings.py)."""
    fname = os.path.abspath(fname)
    return fname == script or (os.path.dirname(fname) == os.path.dirname(script) and fname.endswith(".py"))


def _shape(v):
    return list(v.shape)


def _norm_dim(d, rank):
    return d + rank if d < 0 else d


class Converter:
    def __init__(self, gm, script, where, input_names, reserved, input_examples, preconditions=None):
        self.gm, self.script, self.where = gm, script, where
        self.input_names = input_names
        self.preconditions = preconditions or {}  # input name -> (Precondition, torch dtype)
        self.input_examples = input_examples
        self.ops = []
        self.used = set(reserved) | set(input_names)
        self.values = {}
        self.masked_extents = set()  # the extents K of the reads x[mask] seen (_masked.py)
        self.cur = None  # the node being converted (for scope and ids)
        from ._storage import Memory
        self.memory = Memory(self)  # views and in-place writes as torch has them

    # ---- emitting ----
    def fresh(self, base):
        base = base.replace("/", "_")
        name, k = base, 1
        while name in self.used:
            name = f"{base}_{k}"
            k += 1
        self.used.add(name)
        return name

    def emit(self, kind, inputs, attrs=None, n_out=1, out_names=None):
        node = self.cur
        base = node.name if node is not None else kind
        for k, v in (attrs or {}).items():
            if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
                raise _Unsupported(f"a non-finite constant ({k} = {v}) in {kind}: ParaProof works over the reals")
        outs = out_names or [self.fresh(base if n_out == 1 else f"{base}.{i}") for i in range(n_out)]
        op = {"id": self.fresh("op." + base), "op": kind, "inputs": list(inputs), "outputs": outs}
        if attrs:
            op["attrs"] = attrs
        if node is not None:
            scope = node_scope(node, self.script)
            if scope:
                op["scope"] = scope
            frames = exec_frames(node, self.script)
            record = _insertion.after(frames) or {}
            if frames[0][0] != self.script:  # where it runs: a tensor sent was made there
                record["at"] = f"{frames[0][1]} {os.path.basename(frames[0][0])}"
            if record:
                op["_after"] = record
        self.ops.append(op)
        return outs[0] if n_out == 1 and out_names is None else outs

    # ---- helpers used by the handlers ----
    def meta(self, node):
        return node.meta.get("val")

    def const(self, shape, value, dtype="f32"):
        value = float(value)
        if value != value:
            raise _Unsupported("a NaN constant: ParaProof works over the reals")
        if value in (float("inf"), float("-inf")):
            value = INF_STANDIN if value > 0 else -INF_STANDIN
        return self.emit("constant", [], {"shape": list(shape), "value": value, "dtype": dtype})

    def to_dtype(self, x, src, dst):
        """x of torch dtype src as torch dtype dst: a bool is `x != 0`, other changes a cast."""
        if dst == torch.bool and src != torch.bool:
            return self.emit("compare", [x, self.const([], 0, DTYPES[src])], {"cmp": "ne"})
        if DTYPES.get(dst) is None:
            raise _Unsupported(f"dtype {dst}")
        return x if DTYPES[src] == DTYPES[dst] else self.emit("cast", [x], {"dtype": DTYPES[dst]})

    def promoted(self, n, args, ports):
        """args with the tensor operands at `ports` cast to the result's dtype where torch promotes an
        integer or bool operand to a float result (`x * mask`, `g / count`)."""
        out = self.meta(n)
        out = out[0] if isinstance(out, (list, tuple)) else out
        args = list(args)
        for i in ports:
            node = n.args[i] if i < len(n.args) else None
            if isinstance(node, torch.fx.Node) and out.dtype.is_floating_point:
                src = node.meta["val"].dtype
                if not src.is_floating_point:
                    args[i] = self.to_dtype(args[i], src, out.dtype)
        return args

    def reshape(self, x, in_shape, out_shape):
        if list(in_shape) == list(out_shape):
            return x
        return self.emit("reshape", [x], {"shape": list(out_shape)})

    def bcast(self, x, in_shape, out_shape):
        if list(in_shape) == list(out_shape):
            return x
        return self.emit("broadcast_to", [x], {"shape": list(out_shape)})

    # ---- the walk ----
    def run(self):
        placeholders = [n for n in self.gm.graph.nodes if n.op == "placeholder"]
        for n, name in zip(placeholders, self.input_names):
            self.values[n] = name
            if name in self.preconditions:  # the step reads f(input) (_preconditions.py)
                pre, dtype = self.preconditions[name]
                self.values[n] = pre.emit(self, name, dtype)
            self.memory.fresh(n)
        # On copies: a step that updates its inputs in place (opt.step() on the parameters) must not change
        # the examples the self-check evaluates the mapped graph on.
        _Record(self.gm).run(*[x.clone() for x in self.input_examples])
        out_node = None
        for n in self.gm.graph.nodes:
            if n.op == "placeholder":
                continue
            if n.op == "output":
                out_node = n
                continue
            self.cur = n
            try:
                self.values[n] = self.convert(n)
            except _Unsupported as u:
                loc, _ = node_line(n, self.script)
                self.values[n] = Poison(f"{loc}: {u} in {self.where}")
            self.memory.after(n)
            if isinstance(self.values[n], Poison) and "paraproof.send" in str(n.target):
                raise ImportTorchError(f"{self.values[n].message} (needed by a send)")
        self.cur = None
        return out_node

    def value(self, a):
        if isinstance(a, torch.fx.Node):
            return self.memory.read(a)
        if isinstance(a, (list, tuple)):
            return type(a)(self.value(x) for x in a)
        return a

    def _unsupported(self, n, poisons, why):
        """An op with no mapping: an error, or a poison joining those of its inputs (all are reported)."""
        if not poisons:
            raise _Unsupported(why)
        loc, _ = node_line(n, self.script)
        return Poison.merge(poisons, f"{loc}: {why} in {self.where}")

    # A constant with distinct values (a rotary frequency table, torch.tensor([...]) in the step) is written
    # element by element: exact, but one op per element, so only small tables.
    TABLE_LIMIT = 4096

    def _table(self, t):
        if t.numel() > self.TABLE_LIMIT:
            raise _Unsupported(f"a tensor constant with {t.numel()} distinct values (over {self.TABLE_LIMIT}: "
                               "pass it as an INPUT)")
        if t.dtype not in DTYPES:
            raise _Unsupported(f"a tensor constant of dtype {t.dtype}")
        dt = DTYPES[t.dtype]
        flat = t.flatten()
        items = [self.const([1], v.item(), dt) for v in flat]
        x = items[0] if len(items) == 1 else self.emit("concat", items, {"dim": 0})
        return self.reshape(x, [flat.numel()], list(t.shape))

    def convert(self, n):
        if n.op == "get_attr":
            t = getattr(self.gm, n.target)
            if t.numel() >= 1 and bool((t == t.flatten()[0]).all()):
                return self.const(list(t.shape), t.flatten()[0].item(), DTYPES.get(t.dtype, "f32"))
            return self._table(t)
        if n.op != "call_function":
            raise _Unsupported(f"fx node {n.op} {n.target}")
        args = [self.value(a) for a in n.args]
        if n.target is operator.getitem:  # one output of a multi-output op (poison only if that one is)
            return args[0] if isinstance(args[0], Poison) else args[0][args[1]]
        kwargs = {k: self.value(v) for k, v in n.kwargs.items()}
        if isinstance(n.target, torch._ops.OpOverload) and "native_layer_norm_backward" in str(n.target):
            args[3] = args[4] = None  # the forward's mean/rstd: the registry's backward recomputes them
        poisons = [p for a in list(args) + list(kwargs.values())
                   for p in (a if isinstance(a, (list, tuple)) else [a]) if isinstance(p, Poison)]
        target = n.target
        if not isinstance(target, torch._ops.OpOverload):
            return self._unsupported(n, poisons, f"unsupported call {getattr(target, '__name__', target)}")
        ns = target.namespace
        packet = target._schema.name.split("::")[-1]
        overload = target._overloadname
        full = f"{ns}.{packet}.{overload}"
        h = HANDLERS.get(f"{ns}.{packet}.{overload}") or HANDLERS.get(f"{ns}.{packet}")
        if h is None and ns == "aten" and packet.endswith("_") and not packet.endswith("__"):
            # In place: the out-of-place op gives the written tensor's new value (_storage.py its aliases').
            h = HANDLERS.get(f"aten.{packet[:-1]}.{overload}") or HANDLERS.get(f"aten.{packet[:-1]}")
        from . import _masked
        if any(isinstance(x, _masked.Masked) for a in args for x in (a if isinstance(a, (list, tuple)) else [a])):
            if poisons:
                return Poison.merge(poisons)
            if not (ns == "aten" and packet in ("index_put", "_index_put_impl", "index_put_")):
                return _masked.apply(self, n, self._with_defaults(target, args, kwargs), full, HANDLERS)
        if h is None:
            return self._unsupported(n, poisons, f"unsupported aten op '{full}'")
        if poisons:
            return Poison.merge(poisons)
        full_args = self._with_defaults(target, args, kwargs)
        self.memory.record_call(n, h, full_args, full)
        return h(self, n, full_args, full)

    @staticmethod
    def _with_defaults(target, args, kwargs):
        """args completed with the schema's defaults (and kwargs) for the arguments fx left out."""
        schema_args = target._schema.arguments
        full_args = list(args)
        for i in range(len(full_args), len(schema_args)):
            a = schema_args[i]
            if a.name in kwargs:
                full_args.append(kwargs[a.name])
            elif a.has_default_value():
                full_args.append(a.default_value)
            else:
                full_args.append(None)
        return full_args


class _Record(torch.fx.Interpreter):
    """Runs the traced graph once to record every node's value (make_fx in real mode keeps only some)."""

    def run_node(self, n):
        v = super().run_node(n)
        n.meta["val"] = v
        return v


class _Unsupported(Exception):
    pass


HANDLERS = {}


def handles(*names):
    def deco(fn):
        for nm in names:
            HANDLERS[nm] = fn
        return fn
    return deco


def out_shape(c, n):
    return _shape(c.meta(n))


def in_shape(a_node):
    return _shape(a_node.meta["val"])


def _is_num(x):
    return isinstance(x, (int, float, bool)) and not isinstance(x, torch.fx.Node)


def _unary(kind):
    return lambda c, n, a, full: c.emit(kind, [a[0]])


for _k in ["neg", "exp", "log", "sqrt", "sigmoid", "tanh", "sin", "cos", "erf", "rsqrt", "reciprocal", "relu", "silu"]:
    HANDLERS[f"aten.{_k}"] = _unary(_k)


@handles("aten.gelu")
def _gelu(c, n, a, full):
    return c.emit("gelu", [a[0]], {"approximate": a[1] or "none"})


@handles("aten.clone", "aten.detach", "aten.alias", "aten.lift_fresh_copy", "aten.contiguous")
def _identity(c, n, a, full):
    if _scopes.FRAMES in n.meta:  # a value an autograd.Function passes through: keep its return line
        return c.emit("identity", [a[0]])
    return a[0]


@handles("aten._to_copy", "aten.to")
def _to_copy(c, n, a, full):
    return c.to_dtype(a[0], n.args[0].meta["val"].dtype, c.meta(n).dtype)


def _integer_result(c, n):
    """Integer arithmetic with a number (`target - vocab_start`): exact integer ops, not float scalars."""
    v = c.meta(n)
    return isinstance(v, torch.Tensor) and not v.dtype.is_floating_point


def _scalar_or_tensor(c, n, a, tensor_kind, scalar_fn):
    x, y = a[0], a[1]
    if _is_num(y):
        return scalar_fn(x, y)
    return c.emit(tensor_kind, [x, y])


@handles("aten.add")
def _add(c, n, a, full):
    a = c.promoted(n, a, (0, 1))
    alpha = a[2] if len(a) > 2 and a[2] is not None else 1
    if _is_num(a[1]) and _integer_result(c, n):
        return c.emit("add", [a[0], c.const([], a[1] * alpha, DTYPES[c.meta(n).dtype])])
    if _is_num(a[1]):
        return c.emit("add_scalar", [a[0]], {"value": float(a[1]) * alpha})
    b = a[1] if alpha == 1 else c.emit("scale", [a[1]], {"factor": float(alpha)})
    return c.emit("add", [a[0], b])


@handles("aten.sub")
def _sub(c, n, a, full):
    a = c.promoted(n, a, (0, 1))
    alpha = a[2] if len(a) > 2 and a[2] is not None else 1
    if _is_num(a[1]) and _integer_result(c, n):
        return c.emit("sub", [a[0], c.const([], a[1] * alpha, DTYPES[c.meta(n).dtype])])
    if _is_num(a[1]):
        return c.emit("add_scalar", [a[0]], {"value": -float(a[1]) * alpha})
    b = a[1] if alpha == 1 else c.emit("scale", [a[1]], {"factor": float(alpha)})
    return c.emit("sub", [a[0], b])


@handles("aten.rsub")
def _rsub(c, n, a, full):
    a = c.promoted(n, a, (0, 1))
    alpha = a[2] if len(a) > 2 and a[2] is not None else 1
    x = c.emit("scale", [a[0]], {"factor": -float(alpha)})
    if _is_num(a[1]):
        return c.emit("add_scalar", [x], {"value": float(a[1])})
    return c.emit("add", [a[1], x])


@handles("aten.mul")
def _mul(c, n, a, full):
    a = c.promoted(n, a, (0, 1))
    if _is_num(a[1]) and _integer_result(c, n):
        return c.emit("mul", [a[0], c.const([], a[1], DTYPES[c.meta(n).dtype])])
    if _is_num(a[1]):
        return c.emit("scale", [a[0]], {"factor": float(a[1])})
    return c.emit("mul", [a[0], a[1]])


@handles("aten.addcmul", "aten.addcdiv")
def _addc(c, n, a, full):
    # self + value * t1 * t2 (addcmul) or self + value * t1 / t2 (addcdiv): torch.optim's Adam update.
    t = c.emit("mul" if "addcmul" in full else "div", [a[1], a[2]])
    value = a[3] if a[3] is not None else 1
    if value != 1:
        t = c.emit("scale", [t], {"factor": float(value)})
    return c.emit("add", [a[0], t])


@handles("aten.div.Tensor", "aten.div.Scalar")
def _div(c, n, a, full):
    a = c.promoted(n, a, (0, 1))
    if _is_num(a[1]):
        if a[1] == 0:
            raise _Unsupported("division by the constant 0")
        return c.emit("div_scalar", [a[0]], {"divisor": float(a[1])})
    return c.emit("div", [a[0], a[1]])


@handles("aten.maximum")
def _maximum(c, n, a, full):
    a = c.promoted(n, a, (0, 1))
    return c.emit("maximum", [a[0], a[1]])


@handles("aten.minimum")
def _minimum(c, n, a, full):
    a = c.promoted(n, a, (0, 1))
    return c.emit("minimum", [a[0], a[1]])


def _producer(c, name):
    for op in reversed(c.ops):
        if name in op["outputs"]:
            return op
    return None


def _sqrt_of_squares(c, name):
    """The y of `name` = sqrt(y) with y a sum of squares (so y >= 0 and sqrt(y)^2 = y), else None: the 2-norm
    squared (`torch.norm(g) ** 2` of gradient clipping) is then y itself, which the proof can relate to a
    sum of parts (sqrt is uninterpreted there: sqrt(y)^2 = y is not derivable)."""
    op = _producer(c, name)
    if op is None or op["op"] != "sqrt":
        return None
    y = op["inputs"][0]
    inner = _producer(c, y)
    if inner is not None and inner["op"] == "sum":
        inner = _producer(c, inner["inputs"][0])
    return y if inner is not None and inner["op"] == "square" else None


@handles("aten.pow.Tensor_Scalar")
def _pow(c, n, a, full):
    if a[1] == 2:
        y = _sqrt_of_squares(c, a[0])
        if y is not None:
            return y
        return c.emit("square", [a[0]])
    if a[1] == 1:
        return a[0]
    return c.emit("pow", [a[0]], {"exponent": float(a[1])})


def _constant_base(c, node):
    """The one value of a constant tensor argument (`10000 ** t` traces its base as a 0-d constant), or None."""
    while isinstance(node, torch.fx.Node) and node.op == "call_function" and \
            str(node.target).split(".")[1] in ("lift_fresh_copy", "clone", "detach", "_to_copy"):
        node = node.args[0]
    if isinstance(node, torch.fx.Node) and node.op == "get_attr":
        t = getattr(c.gm, node.target)
        if t.numel() >= 1 and bool((t == t.flatten()[0]).all()):
            return t.flatten()[0].item()
    return None


@handles("aten.pow.Scalar", "aten.pow.Tensor_Tensor")
def _pow_base(c, n, a, full):
    """base ** x for a constant base > 0 (rotary frequencies, `10000 ** (2i / d)`) is exp(x * ln(base)):
    the identity over the reals, ln(base) rounded to a double as every constant is."""
    base = n.args[0] if full.endswith("Scalar") else _constant_base(c, n.args[0])
    if not isinstance(base, (int, float)) or isinstance(base, bool) or base <= 0:
        raise _Unsupported(f"'{full}' other than a positive constant to a tensor power")
    if not c.meta(n).dtype.is_floating_point:
        raise _Unsupported(f"'{full}' with an integer result")
    x = a[1]
    src = n.args[1].meta["val"].dtype if isinstance(n.args[1], torch.fx.Node) else c.meta(n).dtype
    if src != c.meta(n).dtype:
        x = c.to_dtype(x, src, c.meta(n).dtype)
    if base == 1:
        return c.const(list(c.meta(n).shape), 1.0, DTYPES[c.meta(n).dtype])
    return c.emit("exp", [c.emit("scale", [x], {"factor": math.log(base)})])


@handles("aten.threshold_backward")
def _threshold_backward(c, n, a, full):
    if a[2] != 0:
        raise _Unsupported(f"'{full}' with threshold {a[2]} (only relu's 0)")
    return c.emit("relu_backward", [a[1], a[0]])


@handles("aten.sigmoid_backward")
def _sigmoid_backward(c, n, a, full):
    return c.emit("sigmoid_backward", [a[1], a[0]])


@handles("aten.tanh_backward")
def _tanh_backward(c, n, a, full):
    return c.emit("tanh_backward", [a[1], a[0]])


@handles("aten.silu_backward")
def _silu_backward(c, n, a, full):
    return c.emit("silu_backward", [a[1], a[0]])


@handles("aten.gelu_backward")
def _gelu_backward(c, n, a, full):
    return c.emit("gelu_backward", [a[1], a[0]], {"approximate": a[2] or "none"})


# ---- creation ----
def _fill(c, n, value):
    v = c.meta(n)
    dt = DTYPES.get(v.dtype)
    if dt is None:
        raise _Unsupported(f"a tensor of dtype {v.dtype}")
    return c.const(_shape(v), value, dt)


@handles("aten.ones_like", "aten.ones", "aten.new_ones")
def _ones(c, n, a, full):
    return _fill(c, n, 1.0)


@handles("aten.zeros_like", "aten.zeros", "aten.new_zeros", "aten.empty_like", "aten.empty", "aten.new_empty",
         "aten.zero")
def _zeros(c, n, a, full):
    return _fill(c, n, 0.0)


@handles("aten.full_like", "aten.fill.Scalar")
def _full_like(c, n, a, full):
    return _fill(c, n, a[1])


@handles("aten.full", "aten.new_full")
def _full(c, n, a, full):
    return _fill(c, n, a[1] if full.startswith("aten.full") else a[2])


@handles("aten.scalar_tensor")
def _scalar_tensor(c, n, a, full):
    return _fill(c, n, a[0])


# ---- shapes ----
@handles("aten.view", "aten._unsafe_view", "aten.reshape", "aten.unsqueeze", "aten.squeeze", "aten.flatten",
         "aten.unflatten", "aten._reshape_alias")
def _view(c, n, a, full):
    return c.reshape(a[0], in_shape(n.args[0]), out_shape(c, n))


@handles("aten.expand")
def _expand(c, n, a, full):
    from . import _masked
    g = _masked.gradient_broadcast(c, n, a)
    if g is not None:
        return g
    return c.bcast(a[0], in_shape(n.args[0]), out_shape(c, n))


@handles("aten.t")
def _t(c, n, a, full):
    if len(in_shape(n.args[0])) < 2:
        return a[0]
    return c.emit("transpose", [a[0]], {"perm": [1, 0]})


@handles("aten.transpose.int")
def _transpose(c, n, a, full):
    r = len(in_shape(n.args[0]))
    d0, d1 = _norm_dim(a[1], r), _norm_dim(a[2], r)
    if d0 == d1:
        return a[0]
    perm = list(range(r))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return c.emit("transpose", [a[0]], {"perm": perm})


@handles("aten.permute")
def _permute(c, n, a, full):
    r = len(in_shape(n.args[0]))
    perm = [_norm_dim(d, r) for d in a[1]]
    if perm == list(range(r)):
        return a[0]
    return c.emit("transpose", [a[0]], {"perm": perm})


def _slice(c, x, shape, dim, start, end):
    size = shape[dim]
    start = 0 if start is None else (start + size if start < 0 else start)
    end = size if end is None else (end + size if end < 0 else end)
    start, end = max(0, min(start, size)), max(0, min(end, size))
    if start == 0 and end == size:
        return x
    return c.emit("slice", [x], {"dim": dim, "start": start, "end": end})


def _bounds(size, start, end):
    start = 0 if start is None else (start + size if start < 0 else start)
    end = size if end is None else (end + size if end < 0 else end)
    return max(0, min(start, size)), max(0, min(end, size))


def strided_read(c, x, shape, dim, start, end, step, dtype):
    """x[start:end:step] along dim: the slice padded to a multiple of step, viewed as [m, step] along dim, its
    first column (exact data movement)."""
    shape = list(shape)
    x = _slice(c, x, shape, dim, start, end)
    length = end - start
    m = -(-length // step)
    if m == 0:
        raise _Unsupported("an empty strided slice")
    shape[dim] = length
    if m * step > length:
        s = list(shape)
        s[dim] = m * step - length
        x = c.emit("concat", [x, c.const(s, 0.0, dtype)], {"dim": dim})
    grid = shape[:dim] + [m, step] + shape[dim + 1:]
    x = c.reshape(x, shape[:dim] + [m * step] + shape[dim + 1:], grid)
    x = c.emit("slice", [x], {"dim": dim + 1, "start": 0, "end": 1})
    col = shape[:dim] + [m, 1] + shape[dim + 1:]
    return c.reshape(x, col, shape[:dim] + [m] + shape[dim + 1:])


def strided_place(c, g, sizes, dim, start, end, step, dtype, fill=0.0):
    """A tensor of `sizes` holding g ([.., m, ..] along dim) at start, start + step, ... < end, `fill` elsewhere
    (the backward of a strided slice, and where a write through one lands)."""
    sizes = list(sizes)
    length = end - start
    m = -(-length // step)
    col = sizes[:dim] + [m, 1] + sizes[dim + 1:]
    x = c.reshape(g, sizes[:dim] + [m] + sizes[dim + 1:], col)
    if step > 1:
        rest = sizes[:dim] + [m, step - 1] + sizes[dim + 1:]
        x = c.emit("concat", [x, c.const(rest, fill, dtype)], {"dim": dim + 1})
    x = c.reshape(x, sizes[:dim] + [m, step] + sizes[dim + 1:], sizes[:dim] + [m * step] + sizes[dim + 1:])
    if m * step > length:
        x = c.emit("slice", [x], {"dim": dim, "start": 0, "end": length})
    pieces = []
    if start > 0:
        s = list(sizes)
        s[dim] = start
        pieces.append(c.const(s, fill, dtype))
    pieces.append(x)
    if end < sizes[dim]:
        s = list(sizes)
        s[dim] = sizes[dim] - end
        pieces.append(c.const(s, fill, dtype))
    return pieces[0] if len(pieces) == 1 else c.emit("concat", pieces, {"dim": dim})


@handles("aten.slice.Tensor")
def _slice_h(c, n, a, full):
    shape = in_shape(n.args[0])
    dim = _norm_dim(a[1], len(shape))
    step = 1 if a[4] is None else a[4]
    if step != 1:
        start, end = _bounds(shape[dim], a[2], a[3])
        return strided_read(c, a[0], shape, dim, start, end, step, DTYPES[c.meta(n).dtype])
    return _slice(c, a[0], shape, dim, a[2], a[3])


@handles("aten.narrow")
def _narrow(c, n, a, full):
    shape = in_shape(n.args[0])
    return _slice(c, a[0], shape, _norm_dim(a[1], len(shape)), a[2], a[2] + a[3])


@handles("aten.select.int")
def _select(c, n, a, full):
    shape = in_shape(n.args[0])
    d = _norm_dim(a[1], len(shape))
    i = a[2] + shape[d] if a[2] < 0 else a[2]
    s = _slice(c, a[0], shape, d, i, i + 1)
    sliced = list(shape)
    sliced[d] = 1
    return c.reshape(s, sliced, out_shape(c, n))


@handles("aten.cat")
def _cat(c, n, a, full):
    nodes = [t for t in n.args[0]]
    keep = [(v, t) for v, t in zip(a[0], nodes) if t.meta["val"].numel() > 0 or t.meta["val"].dim() > 1]
    if len(keep) == 1:
        return keep[0][0]
    r = len(out_shape(c, n))
    return c.emit("concat", [v for v, _ in keep], {"dim": _norm_dim(a[1] or 0, r)})


def _split_sizes(c, n, a, sizes, dim):
    outs = c.meta(n)
    if len(sizes) == 1:
        return [a[0]]
    return c.emit("split", [a[0]], {"dim": dim, "sizes": list(sizes)}, n_out=len(outs))


@handles("aten.split.Tensor")
def _split(c, n, a, full):
    shape = in_shape(n.args[0])
    dim = _norm_dim(a[2] or 0, len(shape))
    sizes = [t.shape[dim] for t in c.meta(n)]
    return _split_sizes(c, n, a, sizes, dim)


@handles("aten.split_with_sizes")
def _split_ws(c, n, a, full):
    shape = in_shape(n.args[0])
    dim = _norm_dim(a[2] or 0, len(shape))
    return _split_sizes(c, n, a, list(a[1]), dim)


@handles("aten.unbind.int")
def _unbind(c, n, a, full):
    shape = in_shape(n.args[0])
    dim = _norm_dim(a[1] or 0, len(shape))
    parts = _split_sizes(c, n, a, [1] * shape[dim], dim)
    piece = list(shape)
    piece[dim] = 1
    return [c.reshape(p, piece, _shape(v)) for p, v in zip(parts, c.meta(n))]


@handles("aten.copy", "aten.copy_")
def _copy(c, n, a, full):
    dst, src = n.args[0].meta["val"], n.args[1].meta["val"]
    return c.bcast(c.to_dtype(a[1], src.dtype, dst.dtype), _shape(src), _shape(dst))


# ---- linear algebra ----
@handles("aten.mv")
def _mv(c, n, a, full):
    """matrix @ vector: a matmul with the vector as a column."""
    (m, k) = in_shape(n.args[0])
    col = c.emit("matmul", [a[0], c.reshape(a[1], [k], [k, 1])])
    return c.reshape(col, [m, 1], [m])


@handles("aten.dot")
def _dot(c, n, a, full):
    return c.emit("sum", [c.emit("mul", [a[0], a[1]])], {"dims": [0]})


@handles("aten.mm", "aten.bmm", "aten.matmul")
def _mm(c, n, a, full):
    return c.emit("matmul", [a[0], a[1]])


@handles("aten.addmm", "aten.baddbmm")
def _addmm(c, n, a, full):
    beta, alpha = (a[3] if a[3] is not None else 1), (a[4] if a[4] is not None else 1)
    p = c.emit("matmul", [a[1], a[2]])
    if alpha != 1:
        p = c.emit("scale", [p], {"factor": float(alpha)})
    if beta == 0:
        return p
    b = a[0] if beta == 1 else c.emit("scale", [a[0]], {"factor": float(beta)})
    return c.emit("add", [p, b])


# ---- reductions ----
def _dims(dims, r):
    if dims is None or len(dims) == 0:
        return list(range(r))
    return sorted({_norm_dim(d, r) for d in dims})


@handles("aten.sum.dim_IntList", "aten.mean.dim", "aten.amax")
def _reduce(c, n, a, full):
    kind = {"sum": "sum", "mean": "mean", "amax": "max"}[full.split(".")[1]]
    r = len(in_shape(n.args[0]))
    if r == 0:
        return a[0]
    return c.emit(kind, [a[0]], {"dims": _dims(a[1], r), "keepdim": bool(a[2])})


@handles("aten.max.default")
def _max_all(c, n, a, full):
    r = len(in_shape(n.args[0]))
    return a[0] if r == 0 else c.emit("max", [a[0]], {"dims": list(range(r))})


@handles("aten.sum.default", "aten.mean.default")
def _reduce_all(c, n, a, full):
    kind = full.split(".")[1]
    r = len(in_shape(n.args[0]))
    if r == 0:
        return a[0]
    return c.emit(kind, [a[0]], {"dims": list(range(r))})


_MSE_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


@handles("aten.mse_loss")
def _mse_loss(c, n, a, full):
    shape = in_shape(n.args[0])
    d = c.emit("square", [c.emit("sub", [a[0], c.bcast(a[1], in_shape(n.args[1]), shape)])])
    red = _MSE_REDUCTIONS.get(a[2] if a[2] is not None else 1)
    if red == "none" or not shape:
        return d
    return c.emit(red, [d], {"dims": list(range(len(shape)))})


@handles("aten.mse_loss_backward")
def _mse_loss_backward(c, n, a, full):
    # d/dx of (x - t)^2, reduced: 2 (x - t) g, divided by the element count for the mean.
    shape = in_shape(n.args[1])
    red = _MSE_REDUCTIONS.get(a[3] if a[3] is not None else 1)
    diff = c.emit("sub", [a[1], c.bcast(a[2], in_shape(n.args[2]), shape)])
    g = c.bcast(a[0], in_shape(n.args[0]), shape)
    count = 1
    for e in shape:
        count *= e
    factor = 2.0 / count if red == "mean" and count else 2.0
    return c.emit("scale", [c.emit("mul", [diff, g])], {"factor": factor})


@handles("aten.abs")
def _abs(c, n, a, full):
    return c.emit("maximum", [a[0], c.emit("neg", [a[0]])])  # |x| = max(x, -x), exactly


@handles("aten.stack")
def _stack(c, n, a, full):
    nodes = list(n.args[0])
    r = len(out_shape(c, n))
    dim = _norm_dim(a[1] or 0, r)
    parts = []
    for v, t in zip(a[0], nodes):
        piece = in_shape(t)
        parts.append(c.reshape(v, piece, piece[:dim] + [1] + piece[dim:]))
    return parts[0] if len(parts) == 1 else c.emit("concat", parts, {"dim": dim})


@handles("aten.arange")
def _arange(c, n, a, full):
    overload = full.split(".")[2]
    start, end, step = (0, a[0], 1) if overload == "default" else (a[0], a[1], a[2] if overload == "start_step" else 1)
    if not all(isinstance(x, int) for x in (start, end, step)) or step == 0:
        raise _Unsupported(f"'{full}' other than integer bounds and step")
    dt = DTYPES.get(c.meta(n).dtype)
    if dt is None:
        raise _Unsupported(f"'{full}' of dtype {c.meta(n).dtype}")
    if step == 1:
        return c.emit("iota", [], {"n": max(0, end - start), "start": start, "dtype": dt})
    # start + step * i for the torch length ceil((end - start) / step): integers, exact.
    count = max(0, -((start - end) // step))
    x = c.emit("iota", [], {"n": count, "dtype": dt})
    x = c.emit("mul", [x, c.const([], step, dt)])
    return x if start == 0 else c.emit("add", [x, c.const([], start, dt)])


def _arange_values(node):
    """(start, length) when node is an arange start, start + 1, .. with start >= 0, else None."""
    if not (isinstance(node, torch.fx.Node) and "aten.arange" in str(node.target)):
        return None
    v = node.meta["val"].tolist()
    if not v or v[0] < 0 or v != list(range(v[0], v[0] + len(v))):
        return None
    return v[0], len(v)


@handles("aten.remainder.Scalar", "aten.remainder.Tensor", "aten.floor_divide", "aten.div.Tensor_mode",
         "aten.div.Scalar_mode")
def _int_division(c, n, a, full):
    """Integer // and % of an arange (positions: block ids, offsets in a window) by a positive number, as
    tiled iotas: (s + i) // d is iota(q) repeated d times, (s + i) % d iota(d) tiled q times, from s on. Of
    any other integers they have no exact form here (the verifier has no integer division)."""
    mode = a[2] if full.startswith("aten.div") else ("floor" if "floor_divide" in full else "mod")
    span = _arange_values(n.args[0])
    d = a[1]
    if c.meta(n).dtype.is_floating_point or mode not in ("floor", "trunc", "mod") or span is None or \
            not isinstance(d, int) or isinstance(d, bool) or d <= 0:
        raise _Unsupported(f"'{full}' other than of an arange (start >= 0, step 1) by a positive integer: "
                           "integer division and remainder need a verifier op")
    start, length = span
    q = -(-(start + length) // d)
    dt = DTYPES[c.meta(n).dtype]
    if mode == "mod":
        tile = c.reshape(c.emit("iota", [], {"n": d, "dtype": dt}), [d], [1, d])
    else:
        tile = c.reshape(c.emit("iota", [], {"n": q, "dtype": dt}), [q], [q, 1])
    flat = c.reshape(c.bcast(tile, [1, d] if mode == "mod" else [q, 1], [q, d]), [q, d], [q * d])
    if start == 0 and length == q * d:
        return flat
    return c.emit("slice", [flat], {"dim": 0, "start": start, "end": start + length})


@handles("aten.topk")
def _topk(c, n, a, full):
    r = len(in_shape(n.args[0]))
    dim = _norm_dim(a[2] if a[2] is not None else -1, r)
    if dim != r - 1 or a[3] is False:
        raise _Unsupported(f"'{full}' other than the largest along the last dim")
    return c.emit("topk", [a[0]], {"k": int(a[1])}, n_out=2)


@handles("paraproof_leaf.one_hot")
def _one_hot(c, n, a, full):
    return c.emit("one_hot", [a[0]], {"num_classes": int(a[1]), "dtype": "i64"})


@handles("aten._softmax", "aten._log_softmax")
def _softmax(c, n, a, full):
    kind = "softmax" if "_softmax" == full.split(".")[1] else "log_softmax"
    return c.emit(kind, [a[0]], {"dim": _norm_dim(a[1], len(in_shape(n.args[0])))})


@handles("aten._softmax_backward_data", "aten._log_softmax_backward_data")
def _softmax_bw(c, n, a, full):
    kind = "softmax_backward" if full.split(".")[1] == "_softmax_backward_data" else "log_softmax_backward"
    dim = _norm_dim(a[2], len(in_shape(n.args[0])))
    fwd = n.args[1]
    while isinstance(fwd, torch.fx.Node) and str(fwd.target) in ("aten.detach.default", "aten.alias.default"):
        fwd = fwd.args[0]  # autograd saves the forward's output through a detach
    if kind == "log_softmax_backward" and "aten._log_softmax" in str(fwd.target):
        # dy - softmax(x) * sum(dy), with softmax(x) from x rather than exp(log_softmax(x)): exp is
        # uninterpreted in the proof, so exp(x - m - log s) = exp(x - m) / s (how every parallel form writes
        # it) would not be provable.
        sm = c.emit("softmax", [c.value(fwd.args[0])], {"dim": dim})
        total = c.emit("sum", [a[0]], {"dims": [dim], "keepdim": True})
        return c.emit("sub", [a[0], c.emit("mul", [sm, total])])
    return c.emit(kind, [a[1], a[0]], {"dim": dim})


# ---- nn ----
def _ln_params(c, n, a, w_i, b_i, h):
    w = a[w_i] if a[w_i] is not None else c.const([h], 1.0)
    b = a[b_i] if b_i is not None and a[b_i] is not None else c.const([h], 0.0)
    return w, b


@handles("aten.native_layer_norm")
def _layer_norm(c, n, a, full):
    shape = in_shape(n.args[0])
    if len(a[1]) != 1:
        raise _Unsupported(f"'{full}' over {len(a[1])} dims (only the last)")
    w, b = _ln_params(c, n, a, 2, 3, shape[-1])
    y = c.emit("layernorm", [a[0], w, b], {"eps": float(a[4])})
    stat = Poison(f"{node_line(n, c.script)[0]}: the mean/rstd outputs of '{full}' are used outside "
                  f"layer_norm's backward in {c.where} (not supported)")
    return [y, stat, stat]


@handles("aten.native_layer_norm_backward")
def _layer_norm_bw(c, n, a, full):
    # Reads the statistics of the forward only through x, w: the registry's backward recomputes them.
    shape = in_shape(n.args[1])
    w, _ = _ln_params(c, n, a, 5, None, shape[-1])
    return c.emit("layernorm_backward", [a[1], w, a[0]], {"eps": float(_ln_eps(n))}, n_out=3)


def _ln_eps(n):
    # eps is not an argument of the backward: take it from the forward whose mean it reads.
    mean = n.args[3]
    fwd = mean.args[0] if mean.target is operator.getitem else None
    if fwd is None or "native_layer_norm" not in str(fwd.target):
        raise _Unsupported("native_layer_norm_backward whose statistics are not from native_layer_norm")
    return fwd.args[4]


@handles("aten.embedding")
def _embedding(c, n, a, full):
    return c.emit("embedding", [a[1], a[0]])  # padding_idx changes only the backward


@handles("aten.embedding_dense_backward")
def _embedding_bw(c, n, a, full):
    if a[4]:
        raise _Unsupported(f"'{full}' with scale_grad_by_freq")
    dy = a[0]
    if a[3] not in (None, -1):  # nn.Embedding(padding_idx=p): the rows of id p get no gradient
        if a[3] < 0:
            raise _Unsupported(f"'{full}' with padding_idx {a[3]}")
        ishape = in_shape(n.args[1])
        keep = c.emit("compare", [a[1], c.const([], int(a[3]), DTYPES[n.args[1].meta["val"].dtype])],
                      {"cmp": "ne"})
        dy = c.emit("where", [c.reshape(keep, ishape, ishape + [1]), dy, c.const([], 0, DTYPES[c.meta(n).dtype])])
    return c.emit("embedding_backward", [a[1], dy], {"num_embeddings": int(a[2])})


def _nll_check(full, a, shape):
    if a[2] is not None:
        raise _Unsupported(f"'{full}' with class weights")
    if len(shape) != 2:
        raise _Unsupported(f"'{full}' on a {len(shape)}-d input (flatten to [tokens, classes])")


_MOVES = {"identity", "reshape", "transpose", "slice", "broadcast_to", "concat", "split"}


def _moved_input(c, name):
    """Whether the value `name` holds only elements of the graph's inputs (a chain of data movement from them)."""
    producers = {o: op for op in c.ops for o in op["outputs"]}
    todo, seen = [name], set()
    while todo:
        v = todo.pop()
        if v in seen:
            continue
        seen.add(v)
        if v in c.input_names and v not in c.preconditions:
            continue
        op = producers.get(v)
        if op is None or op["op"] not in _MOVES:
            return False
        todo.extend(op["inputs"])
    return True


def _nll_valid(c, n, target, V, ignore_index, dtype):
    """The one-hot of the targets with ignored rows zero, and the per-row weight in dtype (1 kept, 0 ignored;
    None: every row kept). torch requires every target to be a class in [0, V) or ignore_index."""
    oh = c.emit("one_hot", [target], {"num_classes": V, "dtype": dtype})
    if ignore_index is None:
        return oh, None
    outside = not 0 <= ignore_index < V
    if outside and _moved_input(c, target):
        # Targets that are an input's values (moved, not computed) are classes of the model in the proof
        # (docs/soundness.md, "Integer values"), so none is ignored there: the mean divides by N.
        return oh, None
    keep = c.emit("compare", [target, c.const([], ignore_index, "i64")], {"cmp": "ne"})
    keep = c.emit("cast", [keep], {"dtype": dtype})
    if outside:  # an ignored row's one-hot is zero already
        return oh, keep
    return c.emit("mul", [oh, c.reshape(keep, [n], [n, 1])]), keep


@handles("aten.nll_loss_forward")
def _nll(c, n, a, full):
    # (self [N, V] log-probabilities, target [N], weight, reduction, ignore_index) -> (loss, total_weight):
    # -sum of the picked entries over the kept rows; the mean divides by the kept rows' count (torch's
    # total_weight), not by N: F.cross_entropy(..., ignore_index=-100) with padded labels.
    shape = in_shape(n.args[0])
    _nll_check(full, a, shape)
    N, V = shape
    dt = DTYPES[n.args[0].meta["val"].dtype]
    oh, keep = _nll_valid(c, N, a[1], V, a[4], dt)
    picked = c.emit("mul", [a[0], oh])
    red = a[3]
    total = c.const([], float(N)) if keep is None else c.emit("sum", [keep], {"dims": [0]})
    if red == 0:  # none
        s = c.emit("sum", [picked], {"dims": [1]})
        loss = c.emit("neg", [s])
    elif red == 2 or keep is not None:
        s = c.emit("sum", [picked], {"dims": [0, 1]})
        loss = c.emit("neg", [s]) if red == 2 else c.emit("div", [c.emit("neg", [s]), total])
    else:
        s = c.emit("sum", [picked], {"dims": [0, 1]})
        loss = c.emit("div_scalar", [s], {"divisor": -float(N)})
    return [loss, total]


@handles("aten.nll_loss_backward")
def _nll_bw(c, n, a, full):
    # (grad, self, target, weight, reduction, ignore_index, total_weight): -grad at the kept rows' targets,
    # divided by total_weight for the mean.
    shape = in_shape(n.args[1])
    _nll_check(full, [None, None, a[3]], shape)
    N, V = shape
    dt = DTYPES[n.args[1].meta["val"].dtype]
    oh, keep = _nll_valid(c, N, a[2], V, a[5], dt)
    g = a[0]
    if a[4] == 0:
        g = c.reshape(g, [N], [N, 1])
        g = c.bcast(g, [N, 1], [N, V])
    else:
        g = c.bcast(g, in_shape(n.args[0]), [N, V])
    d = c.emit("mul", [oh, g])
    if a[4] != 1:
        return c.emit("scale", [d], {"factor": -1.0})
    if keep is None:
        return c.emit("div_scalar", [d], {"divisor": -float(N)})
    return c.emit("div", [c.emit("neg", [d]), c.bcast(a[6], in_shape(n.args[6]), [N, V])])


# ---- collectives (paraproof.* custom ops, from _dist) ----
@handles("paraproof.all_reduce")
def _all_reduce(c, n, a, full):
    return c.emit("all_reduce", [a[0]], {"group": list(a[2]), "instance": a[3], "reduce": a[1]})


@handles("paraproof.all_gather")
def _all_gather(c, n, a, full):
    return c.emit("all_gather", [a[0]], {"group": list(a[2]), "instance": a[3], "dim": a[1]})


@handles("paraproof.reduce_scatter")
def _reduce_scatter(c, n, a, full):
    return c.emit("reduce_scatter", [a[0]], {"group": list(a[3]), "instance": a[4], "dim": a[2],
                                              "reduce": a[1]})


@handles("paraproof.all_to_all")
def _all_to_all(c, n, a, full):
    return c.emit("all_to_all", [a[0]], {"group": list(a[1]), "instance": a[2], "split_dim": 0,
                                          "concat_dim": 0})


@handles("paraproof.broadcast")
def _broadcast(c, n, a, full):
    return c.emit("broadcast", [a[0]], {"group": list(a[2]), "instance": a[3], "src": a[1]})


@handles("paraproof.send")
def _send(c, n, a, full):
    c.emit("send", [a[0]], {"peer": a[1], "instance": a[2]}, n_out=0, out_names=[])
    c.ops[-1]["_root"] = True
    return a[0]


@handles("paraproof.recv")
def _recv(c, n, a, full):
    v = c.meta(n)
    return c.emit("recv", [], {"peer": a[1], "instance": a[2], "shape": _shape(v),
                               "dtype": DTYPES.get(v.dtype, "f32")})


def supported_ops():
    return sorted(HANDLERS)


def prune(ops, roots):
    """Keeps the ops the roots (graph outputs) and sends depend on, in order."""
    need = set(roots)
    keep = []
    for op in reversed(ops):
        if op.get("_root") or any(o in need for o in op["outputs"]):
            keep.append(op)
            need.update(op["inputs"])
    keep.reverse()
    return keep


# Ops whose result is not a function of their inputs and attributes alone (the communication pairs by
# instance, which differs anyway) or that name a graph output: never merged.
_NO_CSE = {"identity", "send", "recv"}


def cse(ops):
    """Merges ops that compute the same value twice (same kind, inputs and attributes: `y - t` in mse_loss's
    forward and again in its backward, the mean of `var` and of `std`, a causal mask built per layer). Every op
    is a pure function, so the merge is exact; it keeps the cut-point search from tying a device value to one
    copy while the logical consumers read the other (docs/torch-import.md, "Cut points")."""
    import json
    rename, seen, out = {}, {}, []
    for op in ops:
        op["inputs"] = [rename.get(i, i) for i in op["inputs"]]
        if op["op"] not in _NO_CSE and not op.get("_root") and op["outputs"]:
            key = (op["op"], tuple(op["inputs"]), json.dumps(op.get("attrs"), sort_keys=True),
                   len(op["outputs"]))
            first = seen.get(key)
            if first is not None:
                for o, f in zip(op["outputs"], first["outputs"]):
                    rename[o] = f
                continue
            seen[key] = op
        out.append(op)
    return out


def check_poison(c, value, what):
    if isinstance(value, Poison):
        raise ImportTorchError(f"{value.message} (needed by {what})")


def _pad_along(c, g, sizes, dim, start, end, dtype):
    """g placed at [start, end) along dim of a zero tensor of `sizes` (the backward of a slice)."""
    pieces = []
    if start > 0:
        s = list(sizes)
        s[dim] = start
        pieces.append(c.const(s, 0.0, dtype))
    pieces.append(g)
    if end < sizes[dim]:
        s = list(sizes)
        s[dim] = sizes[dim] - end
        pieces.append(c.const(s, 0.0, dtype))
    return pieces[0] if len(pieces) == 1 else c.emit("concat", pieces, {"dim": dim})


@handles("aten.slice_backward")
def _slice_backward(c, n, a, full):
    sizes = list(a[1])
    dim = _norm_dim(a[2], len(sizes))
    start, end = _bounds(sizes[dim], a[3], a[4])
    if a[5] not in (None, 1):
        return strided_place(c, a[0], sizes, dim, start, end, a[5], DTYPES[c.meta(n).dtype])
    return _pad_along(c, a[0], sizes, dim, start, end, DTYPES[c.meta(n).dtype])


@handles("aten.select_backward")
def _select_backward(c, n, a, full):
    sizes = list(a[1])
    dim = _norm_dim(a[2], len(sizes))
    i = a[3] + sizes[dim] if a[3] < 0 else a[3]
    piece = list(sizes)
    piece[dim] = 1
    g = c.reshape(a[0], in_shape(n.args[0]), piece)
    return _pad_along(c, g, sizes, dim, i, i + 1, DTYPES[c.meta(n).dtype])


# Handlers of masks and indexing live beside this module; importing them registers them.
from . import _masks, _indexing, _nn, _pointwise, _products, _reorder  # noqa: E402,F401  (after HANDLERS exists)
