"""Evaluates ParaProof graphs with torch in float64: checks the aten mapping on every import (the mapped
logical graph must reproduce what torch computed) and runs --check-numerics (every rank simulated in one
process, collectives resolved across ranks, outputs compared with the logical ones through lineage)."""
import json

import torch
import torch.nn.functional as F

from . import ImportTorchError

_DT = {"f32": torch.float64, "bf16": torch.float64, "f16": torch.float64, "f64": torch.float64,
       "i64": torch.int64, "i32": torch.int64, "bool": torch.bool}


def _dims(x, attrs):
    d = attrs.get("dims")
    return list(range(x.dim())) if d is None else d


def _ln(x, w, b, eps):
    return F.layer_norm(x, (x.shape[-1],), w, b, eps)


def _grad(fn, xs, dy):
    xs = [x.detach().requires_grad_(True) for x in xs]
    with torch.enable_grad():
        y = fn(*xs)
        return torch.autograd.grad(y, xs, dy, allow_unused=True)


def _gelu(x, a):
    return F.gelu(x, approximate=a.get("approximate", "tanh"))


def _emb(ids, table, start):
    v = table.shape[0]
    local = ids - start
    ok = (local >= 0) & (local < v)
    out = table[local.clamp(0, max(v - 1, 0))]
    return out * ok.unsqueeze(-1).to(out.dtype)


def _emb_bw(ids, dy, n, start):
    out = torch.zeros((n, dy.shape[-1]), dtype=dy.dtype)
    local = (ids - start).reshape(-1)
    rows = dy.reshape(-1, dy.shape[-1])
    for i in range(local.numel()):
        if 0 <= local[i] < n:
            out[local[i]] += rows[i]
    return out


def _one_hot(ids, a):
    n, start = a["num_classes"], a.get("start", 0)
    local = ids - start
    ok = (local >= 0) & (local < n)
    oh = F.one_hot(local.clamp(0, max(n - 1, 0)), n) * ok.unsqueeze(-1)
    return oh.to(_DT[a.get("dtype", "f32")])


_CMP = {"eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge}


def _topk(x, k):
    """The k largest along the last dim, ties by the lower index (the op's meaning; torch.topk's tie order is
    unspecified)."""
    v, i = torch.sort(x, dim=-1, descending=True, stable=True)
    return [v[..., :k], i[..., :k]]


def _topk_indicator(x, k):
    idx = torch.topk(x, k, dim=-1).indices
    return torch.zeros_like(x).scatter(-1, idx, 1.0)


def _gather(x, idx, dim):
    n = x.shape[dim]
    ok = (idx >= 0) & (idx < n)
    out = torch.gather(x, dim, idx.clamp(0, max(n - 1, 0)))
    return out * ok.to(out.dtype)


LOCAL = {
    "identity": lambda x, a: [x[0]],
    "neg": lambda x, a: [-x[0]], "exp": lambda x, a: [x[0].exp()], "log": lambda x, a: [x[0].log()],
    "sqrt": lambda x, a: [x[0].sqrt()], "sigmoid": lambda x, a: [x[0].sigmoid()],
    "tanh": lambda x, a: [x[0].tanh()], "rsqrt": lambda x, a: [x[0].rsqrt()],
    "sin": lambda x, a: [x[0].sin()], "cos": lambda x, a: [x[0].cos()],
    "erf": lambda x, a: [torch.erf(x[0])],
    "erf": lambda x, a: [torch.erf(x[0])],
    "reciprocal": lambda x, a: [1 / x[0]], "square": lambda x, a: [x[0] * x[0]],
    "relu": lambda x, a: [x[0].relu()], "silu": lambda x, a: [F.silu(x[0])],
    "gelu": lambda x, a: [_gelu(x[0], a)], "pow": lambda x, a: [x[0] ** a["exponent"]],
    "scale": lambda x, a: [x[0] * a["factor"]], "div_scalar": lambda x, a: [x[0] / a["divisor"]],
    "add_scalar": lambda x, a: [x[0] + a["value"]], "cast": lambda x, a: [x[0].to(_DT[a["dtype"]])],
    "add": lambda x, a: [x[0] + x[1]], "sub": lambda x, a: [x[0] - x[1]], "mul": lambda x, a: [x[0] * x[1]],
    "div": lambda x, a: [x[0] / x[1]], "maximum": lambda x, a: [torch.maximum(x[0], x[1])],
    "minimum": lambda x, a: [torch.minimum(x[0], x[1])],
    "constant": lambda x, a: [torch.full(a["shape"], a["value"], dtype=_DT[a.get("dtype", "f32")])],
    "reshape": lambda x, a: [x[0].reshape(a["shape"])], "transpose": lambda x, a: [x[0].permute(a["perm"])],
    "slice": lambda x, a: [x[0].narrow(a["dim"], a["start"], a["end"] - a["start"])],
    "concat": lambda x, a: [torch.cat(x, a["dim"])], "split": lambda x, a: list(x[0].split(a["sizes"], a["dim"])),
    "broadcast_to": lambda x, a: [x[0].expand(a["shape"])], "matmul": lambda x, a: [x[0] @ x[1]],
    "sum": lambda x, a: [x[0].sum(_dims(x[0], a), keepdim=a.get("keepdim", False))],
    "mean": lambda x, a: [x[0].mean(_dims(x[0], a), keepdim=a.get("keepdim", False))],
    "max": lambda x, a: [x[0].amax(_dims(x[0], a), keepdim=a.get("keepdim", False))],
    "softmax": lambda x, a: [x[0].softmax(a["dim"])], "log_softmax": lambda x, a: [x[0].log_softmax(a["dim"])],
    "softmax_backward": lambda x, a: [x[0] * (x[1] - (x[1] * x[0]).sum(a["dim"], keepdim=True))],
    "log_softmax_backward": lambda x, a: [x[1] - x[0].exp() * x[1].sum(a["dim"], keepdim=True)],
    "layernorm": lambda x, a: [_ln(x[0], x[1], x[2], a["eps"])],
    "layernorm_backward": lambda x, a: list(_grad(lambda u, w, b: _ln(u, w, b, a["eps"]),
                                                  [x[0], x[1], torch.zeros_like(x[1])], x[2])),
    "silu_backward": lambda x, a: list(_grad(F.silu, [x[0]], x[1])),
    "gelu_backward": lambda x, a: list(_grad(lambda u: _gelu(u, a), [x[0]], x[1])),
    "relu_backward": lambda x, a: [x[1] * (x[0] > 0)],
    "sigmoid_backward": lambda x, a: [x[1] * x[0] * (1 - x[0])],
    "tanh_backward": lambda x, a: [x[1] * (1 - x[0] * x[0])],
    "embedding": lambda x, a: [_emb(x[0], x[1], a.get("start", 0))],
    "embedding_backward": lambda x, a: [_emb_bw(x[0], x[1], a["num_embeddings"], a.get("start", 0))],
    "one_hot": lambda x, a: [_one_hot(x[0], a)],
    "iota": lambda x, a: [torch.arange(a.get("start", 0), a.get("start", 0) + a["n"], dtype=_DT[a.get("dtype", "i64")])],
    "topk": lambda x, a: _topk(x[0], a["k"]),
    "topk_indicator": lambda x, a: [_topk_indicator(x[0], a["k"])],
    "compare": lambda x, a: [_CMP[a["cmp"]](x[0], x[1]).to(torch.int64)],
    "where": lambda x, a: [torch.where(x[0] != 0, x[1], x[2])],
    "gather": lambda x, a: [_gather(x[0], x[1], a["dim"])],
}

COMM = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send", "recv"}


def _run_local(op, env):
    fn = LOCAL.get(op["op"])
    if fn is None:
        raise ImportTorchError(f"internal: no evaluator for {op['op']}")
    outs = fn([env[i] for i in op["inputs"]], op.get("attrs", {}))
    for name, v in zip(op["outputs"], outs):
        env[name] = v


def evaluate(graph, inputs, everything=False):
    env = dict(inputs)
    for op in graph["ops"]:
        _run_local(op, env)
    return env if everything else {o: env[o] for o in graph["outputs"]}


def _collective(kind, a, vals, group):
    """Each member's result of one collective (vals: member -> input, in group order)."""
    xs = [vals[r] for r in group]
    if kind == "all_reduce":
        red = a["reduce"]
        total = torch.stack(xs).amax(0) if red == "max" else sum(xs)
        if red == "avg":
            total = total / len(xs)
        return {r: total for r in group}
    if kind == "all_gather":
        y = torch.cat(xs, a["dim"])
        return {r: y for r in group}
    if kind == "reduce_scatter":
        total = sum(xs) / (len(xs) if a["reduce"] == "avg" else 1)
        parts = total.chunk(len(group), a["dim"])
        return {r: parts[i] for i, r in enumerate(group)}
    if kind == "all_to_all":
        n = len(group)
        chunks = [x.chunk(n, a["split_dim"]) for x in xs]
        return {r: torch.cat([chunks[i][j] for i in range(n)], a["concat_dim"]) for j, r in enumerate(group)}
    if kind == "broadcast":
        return {r: vals[a["src"]] for r in group}
    raise ImportTorchError(f"internal: no evaluator for {kind}")


def simulate(devices, inputs, everything=False):
    """Runs every device in one process: ranks advance until a collective or recv waits for a partner."""
    envs = {d["rank"]: dict(inputs[d["rank"]]) for d in devices}
    pcs = {d["rank"]: 0 for d in devices}
    prog = {d["rank"]: d["ops"] for d in devices}
    mailbox = {}
    while True:
        progressed = False
        for r in prog:
            while pcs[r] < len(prog[r]):
                op = prog[r][pcs[r]]
                kind = op["op"]
                if kind not in COMM:
                    _run_local(op, envs[r])
                elif kind == "send":
                    mailbox[(r, op["attrs"]["peer"], op["attrs"]["instance"])] = envs[r][op["inputs"][0]]
                elif kind == "recv":
                    key = (op["attrs"]["peer"], r, op["attrs"]["instance"])
                    if key not in mailbox:
                        break
                    envs[r][op["outputs"][0]] = mailbox.pop(key)
                else:
                    a = op["attrs"]
                    group = a["group"]
                    waiting = {}
                    for m in group:
                        if pcs[m] < len(prog[m]) and prog[m][pcs[m]].get("attrs", {}).get("instance") == a["instance"]:
                            waiting[m] = prog[m][pcs[m]]
                    if len(waiting) < len(group):
                        break
                    res = _collective(kind, a, {m: envs[m][waiting[m]["inputs"][0]] for m in group}, group)
                    for m in group:
                        envs[m][waiting[m]["outputs"][0]] = res[m]
                        if m != r:
                            pcs[m] += 1
                pcs[r] += 1
                progressed = True
        if all(pcs[r] == len(prog[r]) for r in prog):
            if everything:
                return envs
            return {r: {o: envs[r][o] for o in d_out} for r, d_out in
                    ((d["rank"], d["outputs"]) for d in devices)}
        if not progressed:
            stuck = [r for r in prog if pcs[r] < len(prog[r])]
            raise ImportTorchError(f"check-numerics: the simulated ranks {stuck} would hang")


def _box(t, lin):
    for d, (s, e) in enumerate(lin.get("box", [])):
        t = t.narrow(d, s, e - s)
    return t


def close(a, b, rtol=1e-6):
    a, b = a.to(torch.float64), b.to(torch.float64)
    if a.shape != b.shape:
        return False, float("inf")
    err = (a - b).abs().max().item() if a.numel() else 0.0
    return err <= rtol * (1.0 + b.abs().max().item() if b.numel() else 1.0), err


def _int_bounds(graph):
    """Integer inputs as indices: ids range over the embedding table's rows, labels over the classes."""
    shapes = {t["name"]: t["shape"] for t in graph["inputs"]}
    bounds = {}

    def bound(name, n):
        if name in shapes:
            bounds[name] = max(1, min(bounds.get(name, n), n))

    for op in graph["ops"]:
        a = op.get("attrs", {})
        if op["op"] == "embedding" and op["inputs"][1] in shapes:
            bound(op["inputs"][0], shapes[op["inputs"][1]][0])
        elif op["op"] == "embedding_backward":
            bound(op["inputs"][0], a["num_embeddings"])
        elif op["op"] == "one_hot":
            bound(op["inputs"][0], a["num_classes"])
    return bounds


def random_inputs(plan, seed):
    """Random logical inputs and each device's pieces of them (by lineage; a value part gets 1/parts)."""
    g = torch.Generator().manual_seed(seed)
    logical = plan["logical"]
    lin_inputs = {}
    bounds = _int_bounds(logical)
    for t in logical["inputs"]:
        dt = _DT[t["dtype"]]
        if dt.is_floating_point:
            lin_inputs[t["name"]] = torch.randn(t["shape"], generator=g, dtype=torch.float64)
        elif dt == torch.bool:
            lin_inputs[t["name"]] = torch.randint(0, 2, t["shape"], generator=g).bool()
        else:
            lin_inputs[t["name"]] = torch.randint(0, bounds.get(t["name"], 2), t["shape"], generator=g)
    dev_inputs = {}
    for d in plan["devices"]:
        ins = {}
        for t in d["inputs"]:
            lin = d["lineage"][t["name"]]
            v = _box(lin_inputs[lin["tensor"]], lin)
            ins[t["name"]] = v / lin.get("parts", 1) if v.dtype.is_floating_point else v
        dev_inputs[d["rank"]] = ins
    return lin_inputs, dev_inputs


def check_numerics(plan, seed=0):
    """(agree, message): the mapped logical graph and the simulated device graphs on the same random inputs
    (the importer's reading of the script; --check-numerics runs the script itself, _eager.py)."""
    lin_inputs, dev_inputs = random_inputs(plan, seed)
    return compare_outputs(plan, evaluate(plan["logical"], lin_inputs), simulate(plan["devices"], dev_inputs))


def compare_outputs(plan, want, got, rtol=1e-6):
    """(agree, message): every device's outputs (got: rank -> name -> value) against the logical ones (want)
    through their lineage: a box of the logical tensor, or value parts that sum to that box."""
    worst, parts = None, {}
    for d in plan["devices"]:
        for o in d["outputs"]:
            lin = d["lineage"].get(o)
            if lin is None or lin["tensor"] not in want:
                continue
            if o not in got[d["rank"]]:
                return False, f"rank {d['rank']} does not return output '{o}'"
            v = got[d["rank"]][o]
            if lin.get("parts", 1) > 1:
                key = (lin["tensor"], json.dumps(lin.get("box")), lin["parts"])
                parts.setdefault(key, {}).setdefault(lin["part"], v)
                continue
            w = _box(want[lin["tensor"]], lin)
            if list(v.shape) != list(w.shape):
                return False, (f"rank {d['rank']} output '{o}' has shape {list(v.shape)}, its box of logical "
                               f"'{lin['tensor']}' {list(w.shape)}")
            ok, err = close(v, w, rtol)
            if not ok and (worst is None or err > worst[0]):
                worst = (err, f"rank {d['rank']} output '{o}' differs from logical '{lin['tensor']}'")
    for (tensor, box, n), ps in parts.items():
        if len(ps) == n:
            lin = {"box": json.loads(box)} if box != "null" else {}
            ok, err = close(sum(ps.values()), _box(want[tensor], lin), rtol)
            if not ok and (worst is None or err > worst[0]):
                worst = (err, f"the {n} value parts of '{tensor}' do not sum to it")
    if worst:
        return False, f"{worst[1]} (max abs difference {worst[0]:.3g})"
    return True, "agree"
