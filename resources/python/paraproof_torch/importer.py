"""Loads SCRIPT.py, traces `logical` once and `parallel` per rank with make_fx, and builds the plan JSON."""
import ast
import importlib.util
import json
import os
import sys
import traceback

import torch
from torch.fx.experimental.proxy_tensor import make_fx, PythonKeyTracer

from . import ImportTorchError, Mesh, Partial, Replicate, Shard
from . import _aten, _backlines, _dist, _functions, _insertion, _leaves, _masked, _preconditions, _scopes

# fx records the Python stack of every traced op: errors and scopes name the SCRIPT.py line.
PythonKeyTracer.record_stack_traces = True


class Script:
    """SCRIPT.py's source facts: lines of its PLACEMENTS / INPUTS keys and of `parallel`'s returns."""

    def __init__(self, path):
        self.path = os.path.abspath(path)
        try:
            with open(self.path, encoding="utf-8") as f:
                self.source = f.read()
        except OSError as e:
            raise ImportTorchError(f"{path}: cannot read: {e.strerror}")
        try:
            self.tree = ast.parse(self.source, self.path)
        except SyntaxError as e:
            raise ImportTorchError(f"{self.path}:{e.lineno}: syntax error: {e.msg}")
        self.key_lines = {}
        self.def_lines = {}
        self.return_lines = {}
        for node in self.tree.body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        self.def_lines[t.id] = node.lineno
                        for k in node.value.keys:
                            if isinstance(k, ast.Constant):
                                self.key_lines[(t.id, k.value)] = k.lineno
            elif isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        self.def_lines[t.id] = node.lineno
            elif isinstance(node, ast.FunctionDef):
                self.def_lines[node.name] = node.lineno
                self.return_lines[node.name] = [r.lineno for r in ast.walk(node) if isinstance(r, ast.Return)]

    def at(self, line):
        return f"{self.path}:{line}" if line else self.path

    def key_at(self, table, key):
        return self.at(self.key_lines.get((table, key)) or self.def_lines.get(table))

    def ret_at(self, func):
        lines = self.return_lines.get(func) or []
        return self.at(lines[-1] if lines else self.def_lines.get(func))


def _load_module(script, tag):
    """Runs SCRIPT.py as a fresh module (once per trace: module-level get_rank()/new_group see that rank)."""
    name = f"_paraproof_script_{tag}"
    spec = importlib.util.spec_from_file_location(name, script.path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    d = os.path.dirname(script.path)
    if d not in sys.path:
        sys.path.insert(0, d)
    try:
        spec.loader.exec_module(mod)
    except ImportTorchError:
        raise
    except Exception as e:
        raise ImportTorchError(f"{_user_line(script, e)}: running the script failed: {type(e).__name__}: {e}")
    return mod


def _user_line(script, exc):
    line = None
    for fr in traceback.extract_tb(exc.__traceback__):
        if os.path.abspath(fr.filename) == script.path:
            line = fr.lineno
    return script.at(line)


def _required(script, mod, name, kind):
    if not hasattr(mod, name):
        raise ImportTorchError(f"{script.path}: SCRIPT.py must define {name} ({kind}; docs/torch-import.md)")
    return getattr(mod, name)


DTYPE_NAMES = {torch.float32: "f32", torch.float: "f32", torch.bfloat16: "bf16", torch.float16: "f16",
               torch.float64: "f64", torch.int64: "i64", torch.int32: "i32", torch.bool: "i64"}  # bool: 0/1


def _inputs(script, mod):
    raw = _required(script, mod, "INPUTS", 'a dict name -> (shape, dtype[, precondition])')
    if not isinstance(raw, dict) or not raw:
        raise ImportTorchError(f"{script.at(script.def_lines.get('INPUTS'))}: INPUTS must be a non-empty dict "
                               "name -> (shape, dtype[, precondition])")
    out = {}
    for name, spec in raw.items():
        where = script.key_at("INPUTS", name)
        if not (isinstance(spec, (tuple, list)) and len(spec) in (2, 3)):
            raise ImportTorchError(f"{where}: INPUTS[{name!r}] must be (shape, dtype) or (shape, dtype, "
                                   f"precondition), got {spec!r}")
        shape, dtype = spec[0], spec[1]
        pre = spec[2] if len(spec) == 3 else None
        if pre is not None and not isinstance(pre, _preconditions.Precondition):
            raise ImportTorchError(f"{where}: INPUTS[{name!r}]'s third entry {pre!r} is not a precondition "
                                   "(NonNegative(), Mask(), OneHot(), Probabilities() from paraproof_torch)")
        if not all(isinstance(s, int) and s >= 0 for s in shape):
            raise ImportTorchError(f"{where}: INPUTS[{name!r}] shape {shape!r} is not a list of sizes")
        if dtype not in DTYPE_NAMES:
            raise ImportTorchError(f"{where}: INPUTS[{name!r}] dtype {dtype} is not supported (float32, "
                                   "bfloat16, float16, float64, int64, int32, bool)")
        if pre is not None:
            pre.check_dtype(dtype, where)
        if dtype == torch.bool:
            pre = _preconditions.BoolValue()
        out[name] = (list(shape), dtype, pre)
    return out


class Layout:
    """One logical tensor's placement on the mesh: its local shape and lineage on each rank."""

    def __init__(self, script, mesh, name, shape, placement, table):
        self.name, self.shape = name, list(shape)
        where = script.key_at("PLACEMENTS", name)
        placement = placement or {}
        if not isinstance(placement, dict):
            raise ImportTorchError(f"{where}: PLACEMENTS[{name!r}] must be a dict mesh axis -> placement, "
                                   f"got {placement!r}")
        self.shards = {}   # dim -> [axis index, ...] in mesh-axis order
        self.partial = []  # axis indices
        for axis, p in placement.items():
            if axis not in mesh.axes:
                raise ImportTorchError(f"{where}: PLACEMENTS[{name!r}] names axis {axis!r}, which is not an "
                                       f"axis of {mesh!r}")
            ai = mesh.axes.index(axis)
            if isinstance(p, Shard):
                d = p.dim + len(shape) if p.dim < 0 else p.dim
                if not 0 <= d < len(shape):
                    raise ImportTorchError(f"{where}: {name!r} is {table} of shape {self.shape}: Shard({p.dim}) "
                                           "names no dim of it")
                self.shards.setdefault(d, []).append(ai)
            elif isinstance(p, Partial):
                self.partial.append(ai)
            elif not isinstance(p, Replicate):
                raise ImportTorchError(f"{where}: PLACEMENTS[{name!r}][{axis!r}] = {p!r}: expected Shard(d), "
                                       "Replicate() or Partial()")
        for d, axes in self.shards.items():
            axes.sort()
            n = 1
            for ai in axes:
                n *= mesh.shape[ai]
            if self.shape[d] % n:
                names = " x ".join(f"'{mesh.axes[ai]}' ({mesh.shape[ai]})" for ai in axes)
                raise ImportTorchError(f"{where}: placement of {name!r} does not divide its shape: dim {d} of "
                                       f"{self.shape} has size {self.shape[d]}, not divisible by {n} (Shard({d}) "
                                       f"over {names})")
        self.mesh = mesh

    def box(self, coord):
        box = []
        for d, size in enumerate(self.shape):
            idx, n = 0, 1
            for ai in self.shards.get(d, []):
                idx = idx * self.mesh.shape[ai] + coord[ai]
                n *= self.mesh.shape[ai]
            chunk = size // n
            box.append([idx * chunk, (idx + 1) * chunk])
        return box

    def local_shape(self, coord):
        return [e - s for s, e in self.box(coord)]

    def lineage(self, coord):
        lin = {"tensor": self.name}
        box = self.box(coord)
        if box != [[0, s] for s in self.shape]:
            lin["box"] = box
        if self.partial:
            part, parts = 0, 1
            for ai in self.partial:
                part = part * self.mesh.shape[ai] + coord[ai]
                parts *= self.mesh.shape[ai]
            lin["part"], lin["parts"] = part, parts
        return lin


def _example(shape, dtype, pre=None):
    if pre is not None:
        return pre.example(shape, dtype)
    if dtype.is_floating_point:
        return torch.randn(shape, dtype=dtype)
    return torch.zeros(shape, dtype=dtype)


def _trace(script, fn, fn_name, names, args, where, namespace=None):
    """make_fx of fn over args (floats require grad, as parameters do); returns (graph module, output keys).
    The nn.Modules of `namespace` (SCRIPT.py's globals) name the scopes of the ops they run."""
    keys = []

    def step(*tensors):
        ins = []
        for t in tensors:
            t = t.detach()
            if t.dtype.is_floating_point:
                t.requires_grad_(True)
            ins.append(t)
        out = fn(*ins)
        if not isinstance(out, dict):
            raise ImportTorchError(f"{script.ret_at(fn_name)}: {fn_name} must return a dict name -> tensor, "
                                   f"got {type(out).__name__}")
        vals = []
        for k, v in out.items():
            if not isinstance(v, torch.Tensor):
                raise ImportTorchError(f"{script.ret_at(fn_name)}: {fn_name} returns {k!r} = {v!r}, not a "
                                       "tensor")
            keys.append(k)
            vals.append(v.detach())
        return vals

    try:
        with _scopes.tracking(namespace if namespace is not None else getattr(fn, "__globals__", None)), \
                _backlines.tracking(), _masked.SizeGuard(script.path), _functions.marking(script.path), \
                _insertion.recording(script.path):
            gm = make_fx(step)(*[a.clone() for a in args])  # copies: the step may update its inputs in place
    except ImportTorchError:
        raise
    except Exception as e:
        at = _user_line(script, e)
        if at == script.path:  # raised calling the function itself (a wrong signature): name its def
            at = script.at(script.def_lines.get(fn_name))
        raise ImportTorchError(f"{at}: tracing {where} failed: {type(e).__name__}: {e}")
    return gm, keys


def _graph(script, gm, keys, where, input_specs, out_names, reserved, examples, preconditions):
    """ParaProof graph dict (inputs, ops, outputs) of a traced step; out_names[k] names output key k."""
    c = _aten.Converter(gm, script.path, where, [n for n, _, _ in input_specs], reserved, examples,
                        preconditions)
    out_node = c.run()
    results = out_node.args[0]
    ops_out = []
    needed = {}  # every unsupported construct an output needs, with the first output that needs it
    for key, r in zip(keys, results):
        v = c.value(r)
        if isinstance(v, _masked.Masked):
            src = r
            while isinstance(src, torch.fx.Node) and "detach" in str(src.target):  # the step's own .detach()
                src = src.args[0]
            loc, _ = _aten.node_line(src, script.path)
            v = _aten.Poison(f"{loc}: a boolean-mask read x[mask] as an output (a shape that depends on the data)")
        if isinstance(v, _aten.Poison):
            for m in v.messages:
                needed.setdefault(m, key)
    if needed:
        raise ImportTorchError("\nerror: ".join(f"{m} (needed by output {k!r})" for m, k in needed.items()))
    for key, r in zip(keys, results):
        v = c.value(r)
        c.cur = r if isinstance(r, torch.fx.Node) and r.op != "placeholder" else None
        c.emit("identity", [v], out_names=[out_names[key]])
        ops_out.append(out_names[key])
    ops = _aten.cse(_aten.prune(c.ops, ops_out))
    c.statement_after = {}
    for op in ops:
        op.pop("_where", None)
        op.pop("_root", None)
        if "_after" in op:
            c.statement_after[op["id"]] = op.pop("_after")
    inputs = [{"name": n, "shape": s, "dtype": d} for n, s, d in input_specs]
    return {"inputs": inputs, "ops": ops, "outputs": ops_out}, c


def import_script(path):
    script = Script(path)
    _dist.patch()
    _leaves.patch()
    _backlines.patch(script.path)
    _dist.S.script = script.path
    _dist.begin_trace("logical", 0, 1 << 16)  # MESH is not known yet: any rank of a group is fine
    mod = _load_module(script, "mesh")
    mesh = _required(script, mod, "MESH", "a paraproof_torch.Mesh")
    if not isinstance(mesh, Mesh):
        raise ImportTorchError(f"{script.at(script.def_lines.get('MESH'))}: MESH must be a paraproof_torch.Mesh, "
                               f"got {mesh!r}")
    inputs = _inputs(script, mod)
    placements = _required(script, mod, "PLACEMENTS", "a dict tensor -> {axis: placement}")
    logical = _required(script, mod, "logical", "the single-device step")
    _required(script, mod, "parallel", "one rank's step")
    layouts = {n: Layout(script, mesh, n, spec[0], placements.get(n), "an input") for n, spec in inputs.items()}
    preconditions = {n: (spec[2], spec[1]) for n, spec in inputs.items() if spec[2] is not None}
    for n, (pre, _) in preconditions.items():
        _preconditions.check_layout(pre, n, layouts[n], script.key_at("INPUTS", n))

    # The logical step, on full shapes.
    _dist.begin_trace("logical", 0, mesh.size)
    logical = _load_module(script, "logical").logical
    names = list(inputs)
    args = [_example(*inputs[n]) for n in names]
    gm, keys = _trace(script, logical, "logical", names, args, "logical")
    for k in placements:
        if k not in inputs and k not in keys:
            raise ImportTorchError(f"{script.key_at('PLACEMENTS', k)}: PLACEMENTS names {k!r}, which is neither "
                                   "an input (INPUTS) nor an output of logical")
    for k in keys:
        if k in inputs:
            raise ImportTorchError(f"{script.ret_at('logical')}: logical returns {k!r}, the name of an input: "
                                   f"name outputs apart from inputs (e.g. {k + '.new'!r}, and STATE = "
                                   f"{{{k!r}: {k + '.new'!r}}} for a parameter and its update)")
    reserved = set(names) | set(keys)
    specs = [(n, inputs[n][0], DTYPE_NAMES[inputs[n][1]]) for n in names]
    lgraph, lconv = _graph(script, gm, keys, "logical", specs, {k: k for k in keys}, reserved, args,
                           preconditions)
    _self_check(script, gm, keys, lgraph, names, args, inputs)
    out_node = [n for n in gm.graph.nodes if n.op == "output"][0]
    out_vals = {k: n.meta["val"] for k, n in zip(keys, out_node.args[0])}
    for k, v in out_vals.items():
        layouts[k] = Layout(script, mesh, k, list(v.shape), placements.get(k), "an output of logical")
    state = getattr(mod, "STATE", None)
    if state is not None:
        lgraph["state"] = _state(script, state, inputs, keys)
        _check_state_preconditions(script, lgraph, inputs, names, out_vals)

    devices = []
    statement_after = {}  # rank -> op id -> the statement after it (_insertion.py)
    for rank in range(mesh.size):
        coord = mesh.coord(rank)
        _dist.begin_trace("parallel", rank, mesh.size)
        rmod = _load_module(script, f"rank{rank}")
        where = f"parallel (rank {rank})"
        args = [_example(layouts[n].local_shape(coord), inputs[n][1], inputs[n][2]) for n in names]
        fn = rmod.parallel
        gm, pkeys = _trace(script, lambda *a: fn(rank, *a), "parallel", names, args, where,
                           getattr(fn, "__globals__", None))
        missing = [k for k in keys if k not in pkeys]
        if missing:
            raise ImportTorchError(f"{script.ret_at('parallel')}: output {missing[0]!r} of logical is missing "
                                   f"from parallel on rank {rank} (it returns {pkeys})")
        extra = [k for k in pkeys if k not in keys]
        if extra:
            raise ImportTorchError(f"{script.ret_at('parallel')}: parallel returns {extra[0]!r} on rank {rank}, "
                                   "which logical does not return (outputs must have the same names)")
        dspecs = [(n, layouts[n].local_shape(coord), DTYPE_NAMES[inputs[n][1]]) for n in names]
        dgraph, dconv = _graph(script, gm, pkeys, where, dspecs, {k: k for k in pkeys}, reserved, args,
                               preconditions)
        statement_after[str(rank)] = dconv.statement_after
        out_node = [n for n in gm.graph.nodes if n.op == "output"][0]
        for k, node in zip(pkeys, out_node.args[0]):
            want = layouts[k].local_shape(coord)
            got = list(node.meta["val"].shape)
            if got != want:
                raise ImportTorchError(f"{script.ret_at('parallel')}: parallel returns {k!r} of shape {got} on "
                                       f"rank {rank}, but its placement {_placement_str(placements.get(k))} of "
                                       f"the logical {layouts[k].shape} gives {want}")
        lineage = {n: layouts[n].lineage(coord) for n in names}
        for k in pkeys:
            lineage[k] = layouts[k].lineage(coord)
        devices.append({"rank": rank, "coord": coord, **dgraph, "lineage": lineage})

    plan = {
        "format": "paraproof-plan",
        "version": 1,
        "name": os.path.basename(script.path),
        "metadata": {"source": script.path, "importer": "paraproof import-torch (torch " + torch.__version__ + ")",
                     "statement_after": statement_after},
        "mesh": {"axes": mesh.axes, "shape": mesh.shape},
        "logical": lgraph,
        "devices": devices,
    }
    if not os.environ.get("PARAPROOF_TORCH_NO_LINEAGE"):
        from . import _lineage
        try:
            plan["metadata"]["inferred_lineage"] = _lineage.infer(plan)
        except ImportTorchError:
            pass  # e.g. ranks that would hang: the verifier reports that with its own message
    return plan


def _self_check(script, gm, keys, lgraph, names, args, inputs):
    """The mapped logical graph, evaluated in float64, must reproduce what torch computed while tracing: a
    mapping bug of the importer would otherwise be proved about the wrong model."""
    if os.environ.get("PARAPROOF_TORCH_NO_SELFCHECK"):
        return
    from . import _eval
    got = _eval.evaluate(lgraph, _plan_inputs(inputs, names, args))
    out_node = [n for n in gm.graph.nodes if n.op == "output"][0]
    for k, node in zip(keys, out_node.args[0]):
        ok, err = _eval.close(got[k], node.meta["val"], rtol=1e-3)
        if not ok:
            raise ImportTorchError(f"{script.ret_at('logical')}: internal: the imported logical graph does not "
                                   f"reproduce torch's value of {k!r} (max abs difference {err:.3g}): a bug of "
                                   "the importer's aten mapping, please report it with SCRIPT.py "
                                   "(PARAPROOF_TORCH_NO_SELFCHECK=1 skips this check)")


def _plan_inputs(inputs, names, args):
    """The plan's (float64 / int64) input values that make the step read `args`: a precondition's raw value."""
    ins = {}
    for n, a in zip(names, args):
        pre = inputs[n][2]
        r = pre.raw(a) if pre is not None else a
        ins[n] = r.double() if r.dtype.is_floating_point else r.long()
    return ins


def _check_state_preconditions(script, lgraph, inputs, names, traced, samples=16):
    """A successor STATE feeds back as an input must keep that input's precondition: checked on the traced
    values and on `samples` more random inputs that honour every precondition (a test, not a proof)."""
    from . import _eval
    pairs = [p for p in lgraph["state"] if inputs[p["input"]][2] is not None]
    if not pairs:
        return
    runs = [traced]
    for _ in range(samples):
        args = [_example(*inputs[n]) for n in names]
        runs.append(_eval.evaluate(lgraph, _plan_inputs(inputs, names, args)))
    for p in pairs:
        pre = inputs[p["input"]][2]
        for values in runs:
            if not pre.holds(values[p["output"]]):
                raise ImportTorchError(f"{script.key_at('STATE', p['input'])}: logical's {p['output']!r} breaks "
                                       f"{pre!r}, which INPUTS declares for {p['input']!r}, the input STATE feeds "
                                       "it back as")


def _placement_str(p):
    if not p:
        return "Replicate()"
    return "{" + ", ".join(f"{a!r}: {v!r}" for a, v in p.items()) + "}"


def _state(script, state, inputs, keys):
    where = script.at(script.def_lines.get("STATE"))
    if not isinstance(state, dict):
        raise ImportTorchError(f"{where}: STATE must be a dict input -> output (a parameter and its update)")
    pairs = []
    for i, o in state.items():
        if i not in inputs:
            raise ImportTorchError(f"{script.key_at('STATE', i)}: STATE names {i!r}, which is not an input")
        if o not in keys:
            raise ImportTorchError(f"{script.key_at('STATE', i)}: STATE's successor {o!r} of {i!r} is not an "
                                   "output of logical")
        pairs.append({"input": i, "output": o})
    return pairs


def write_plan(plan, path):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(plan, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)
