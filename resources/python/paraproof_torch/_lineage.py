"""Lineage for intermediate device tensors, found numerically and then proved by the verifier: a device
tensor that equals a box of a logical tensor made by the same op kind (on random inputs, every rank
simulated) gets that lineage. Such cut points split the step into small stages (fast proofs, and a failing
stage that names the few SCRIPT.py lines of the bug). A wrong guess cannot make a plan pass: lineage is an
obligation of the stage producing it; the guesses are only required to be numerically exact."""
import itertools

import torch

from ._eval import COMM, evaluate, random_inputs, simulate

# Data movement is cheap to keep inside a stage; a max may equal the global one by chance (the maximum lay in
# this shard), so selections (max, where, topk) and masks are never cut.
_SKIP = COMM | {"identity", "constant", "reshape", "transpose", "broadcast_to", "cast", "slice", "concat", "split",
                "gather", "max", "maximum", "minimum", "where", "compare", "topk", "topk_indicator", "iota"}
_MAX_BOXES = 64


def _boxes(shape, full):
    options = []
    for s, n in zip(shape, full):
        if s == n:
            options.append([[0, n]])
        elif s and n % s == 0:
            options.append([[k * s, (k + 1) * s] for k in range(n // s)])
        else:
            return []
    count = 1
    for o in options:
        count *= len(o)
    if count > _MAX_BOXES:
        return []
    return [list(b) for b in itertools.product(*options)]


def _view(t, box):
    for d, (s, e) in enumerate(box):
        t = t.narrow(d, s, e - s)
    return t


def _informative(v):
    # Coincidences are likeliest for tensors of few distinct values (zeros, masks): leave them uncut.
    return v.numel() > 0 and torch.unique(v).numel() >= min(4, v.numel())


def _constant(v, v2):
    # The same on two random inputs: a value of the step's constants alone (a loss scale's backward `1 / micro
    # / world`). A logical cut value is free in its stage's proof, so tying a device constant to a logical one
    # of equal value by chance (0.5 = 1/2/1 = 1/1/2) makes a stage unprovable; constants stay in their stage.
    return v2 is not None and v.shape == v2.shape and torch.equal(v, v2)


def _run(plan, seed):
    lin_inputs, dev_inputs = random_inputs(plan, seed)
    return (evaluate(plan["logical"], lin_inputs, everything=True),
            simulate(plan["devices"], dev_inputs, everything=True))


def infer(plan, seed=12345):
    """Adds the lineage found to the plan's devices; a match must hold on two independent random inputs."""
    logical = plan["logical"]
    env_l, envs = _run(plan, seed)
    env_l2, envs2 = _run(plan, seed + 1)
    by_kind = {}
    for op in logical["ops"]:
        if op["op"] in _SKIP:
            continue
        for o in op["outputs"]:
            v = env_l[o]
            if v.dtype.is_floating_point and _informative(v) and not _constant(v, env_l2.get(o)):
                by_kind.setdefault(op["op"], []).append((o, v))
    inferred = {}  # device value -> the ranks it got lineage on
    candidates = {}  # device value -> ranks whose graph makes it where a cut could be inferred
    for d in plan["devices"]:
        lineage = d["lineage"]
        outs = set(d["outputs"])
        env = envs[d["rank"]]
        for op in d["ops"]:
            if op["op"] in _SKIP:
                continue
            for t in op["outputs"]:
                v = env.get(t)
                if t in lineage or t in outs:
                    continue
                candidates.setdefault(t, set()).add(d["rank"])
                if v is None or not v.dtype.is_floating_point or not _informative(v):
                    continue
                if _constant(v, envs2[d["rank"]].get(t)):
                    continue
                found = _match(v, by_kind.get(op["op"], []), envs2[d["rank"]][t], env_l2)
                if found:
                    name, box, full = found
                    lineage[t] = {"tensor": name} if box == [[0, n] for n in full] else {"tensor": name, "box": box}
                    inferred.setdefault(t, set()).add(d["rank"])
    # A cut on some ranks only is inconsistent: the logical value becomes free in the next stage while a rank
    # without the cut computes its counterpart there from earlier values, so a correct step fails (one rank's
    # tokens repeated an id, its value looked uninformative). Cut a value on every rank that makes it, or on none.
    added = 0
    for t, ranks in inferred.items():
        if ranks == candidates.get(t, set()):
            added += len(ranks)
            continue
        for d in plan["devices"]:
            if d["rank"] in ranks:
                del d["lineage"][t]
    return added


def _match(v, candidates, v2, env_l2):
    """The one box of a logical tensor that `v` equals on both draws, else None. Two logical tensors of equal
    value (smooth L1 with beta 1 and Huber with delta 1, `exp(x - logsumexp(x))` and `exp(log_softmax(x))`, a
    value the model computes twice) are equal in the proof only through how each was made, with exp and tanh
    uninterpreted: a cut tying the device value to one of them leaves every stage that uses it in the other's
    place unprovable, and its random check fails on inputs no step can produce (a false NOT EQUIVALENT). An
    ambiguous match is no cut; the device value stays inside a stage that makes both logical ones."""
    fits = []
    for name, lv in candidates:
        if lv.dim() != v.dim():
            continue
        for box in _boxes(list(v.shape), list(lv.shape)):
            if torch.allclose(v, _view(lv, box), rtol=1e-9, atol=1e-12) and \
                    torch.allclose(v2, _view(env_l2[name], box), rtol=1e-9, atol=1e-12):
                fits.append((name, box, list(lv.shape)))
                if len(fits) > 1:
                    return None
    return fits[0] if fits else None
