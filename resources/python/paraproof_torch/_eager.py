"""--check-numerics: SCRIPT.py's own functions run eagerly, independent of the importer's trace.

`logical(...)` runs once and `parallel(rank, ...)` once per rank of MESH, each rank in its own thread with its
own fresh copy of SCRIPT.py (and of the helper modules beside it), on the same random float64 inputs (declared
preconditions honoured; each rank gets its box of every input per PLACEMENTS, a Partial() input a value part).
Their torch.distributed calls meet in a simulated process group (barrier-style rendezvous per group and call
index, as the trace numbers them) and write their results into the real tensors in place, so a collective into
a view writes its base, as on real processes. Autograd, .backward() and custom autograd.Functions run as torch
runs them (CPU backward runs on the calling thread, so a Function's backward communicates as its rank). Every
rank's outputs are then compared with the logical outputs through their placements."""
import os
import sys
import threading
import time
import traceback

import torch
import torch.distributed as dist

from . import ImportTorchError
from . import _dist
from ._aten import is_user_file

HOW = "float64; SCRIPT.py's functions run eagerly, every rank a thread with real storage and collectives"
_TIMEOUT = float(os.environ.get("PARAPROOF_TORCH_EAGER_TIMEOUT", "600"))


class _Aborted(Exception):
    """Another rank failed or the ranks would hang: this rank stops."""


class _Work:
    def __init__(self, fn=None):
        self._fn = fn

    def wait(self, *a, **k):
        if self._fn is not None:
            fn, self._fn = self._fn, None
            fn()
        return True

    def is_completed(self):
        return self._fn is None


class _World:
    """The simulated process group: collective rendezvous slots and p2p mailboxes, under one condition."""

    def __init__(self, size):
        self.size = size
        self.cv = threading.Condition()
        self.slots = {}
        self.mail = {}
        self.waiting = {}  # rank -> (predicate, what it waits for)
        self.done = set()
        self.abort = False
        self.hang = None

    def _wait(self, rank, pred, what):
        self.waiting[rank] = (pred, what)
        try:
            while not pred():
                if self.abort:
                    raise _Aborted()
                stuck = all(r in self.waiting or r in self.done for r in range(self.size))
                if stuck and not any(p() for p, _ in self.waiting.values()):
                    self.hang = "; ".join(f"rank {r} waits for {w}" for r, (_, w) in sorted(self.waiting.items()))
                    finished = sorted(self.done)
                    if finished:
                        self.hang += (f"; rank{'s' if len(finished) > 1 else ''} "
                                      + ", ".join(map(str, finished)) + " finished")
                    self.abort = True
                    self.cv.notify_all()
                    raise _Aborted()
                self.cv.wait(1.0)
        finally:
            del self.waiting[rank]

    def meet(self, inst, group, rank, call):
        with self.cv:
            slot = self.slots.setdefault(inst, {"calls": {}})
            slot["calls"][rank] = call
            if len(slot["calls"]) == len(group):
                try:
                    slot["results"] = _resolve(inst, group, slot["calls"])
                except ImportTorchError as e:
                    slot["error"] = str(e)
                self.cv.notify_all()
            self._wait(rank, lambda: "results" in slot or "error" in slot,
                       f"{call[0]} {inst} at {call[3]}")
            if "error" in slot:
                raise ImportTorchError(slot["error"])
            return slot["results"][rank]

    def post(self, key, value):
        with self.cv:
            self.mail[key] = value
            self.cv.notify_all()

    def take(self, key, rank, what):
        with self.cv:
            self._wait(rank, lambda: key in self.mail, what)
            return self.mail.pop(key)

    def finish(self, rank, failed):
        with self.cv:
            self.done.add(rank)
            if failed:
                self.abort = True
            self.cv.notify_all()


def _shape(t):
    return list(t.shape)


def _resolve(inst, group, calls):
    """Every member's result of one collective, or an error if the members do not make the same call."""
    first = calls[group[0]]
    for r in group[1:]:
        c = calls[r]
        if c[0] != first[0] or c[1] != first[1] or _shape(c[2]) != _shape(first[2]):
            raise ImportTorchError(
                f"{c[3]}: the ranks of group {group} make different calls as collective {inst}: rank {group[0]} "
                f"{first[0]}({first[1]}) of {_shape(first[2])} at {first[3]}, rank {r} {c[0]}({c[1]}) of "
                f"{_shape(c[2])} at {c[3]}")
    kind, params = first[0], first[1]
    xs = [calls[r][2] for r in group]
    n = len(group)
    if kind == "all_reduce":
        if params == "max":
            total = torch.stack(xs).amax(0)
        else:
            total = xs[0].clone()
            for x in xs[1:]:
                total = total + x
            if params == "avg":
                total = total / n
        return {r: total for r in group}
    if kind == "all_gather":
        return {r: xs for r in group}
    if kind == "reduce_scatter":
        if xs[0].shape[0] % n:
            raise ImportTorchError(f"{first[3]}: reduce_scatter of dim 0 of size {xs[0].shape[0]} over {n} ranks")
        total = xs[0].clone()
        for x in xs[1:]:
            total = total + x
        if params == "avg":
            total = total / n
        parts = total.chunk(n, 0)
        return {r: parts[i] for i, r in enumerate(group)}
    if kind == "all_to_all":
        if xs[0].shape[0] % n:
            raise ImportTorchError(f"{first[3]}: all_to_all_single of dim 0 of size {xs[0].shape[0]} over {n} "
                                   "ranks")
        chunks = [x.chunk(n, 0) for x in xs]
        return {r: torch.cat([chunks[i][j] for i in range(n)], 0) for j, r in enumerate(group)}
    if kind == "broadcast":
        return {r: xs[group.index(params)] for r in group}
    raise ImportTorchError(f"internal: no eager collective {kind}")


def _into(dst, value, what):
    if _shape(dst) != _shape(value):
        raise ImportTorchError(f"{_dist.script_line()}: {what}: the result has shape {_shape(value)}, the tensor it "
                               f"is written into {_shape(dst)}")
    with torch.no_grad():
        dst.copy_(value)


class _Rank:
    """One thread's torch.distributed: the rank it runs as, and its call counts per group (instance ids)."""

    def __init__(self, world, rank, kind):
        self.world, self.rank, self.kind = world, rank, kind
        self.counts = {}

    def call(self, name, fallback, *args, **kwargs):
        m = getattr(self, "op" + (name if name.startswith("_") else "_" + name), None)
        if m is None:
            return fallback(*args, **kwargs)
        return m(*args, **kwargs)

    # -- groups and instance ids, as in the trace (_dist.py) --
    def _group(self, group, what):
        if self.kind == "logical":
            raise ImportTorchError(f"{_dist.script_line()}: logical calls torch.distributed.{what}; the "
                                   "single-device step may not communicate")
        if group is None or group is dist.group.WORLD:
            return list(range(self.world.size))
        if not isinstance(group, _dist.ProcessGroup):
            raise ImportTorchError(f"{_dist.script_line()}: {what}: group {group!r} is not a group from "
                                   "dist.new_group")
        if self.rank not in group.ranks:
            raise ImportTorchError(f"{_dist.script_line()}: {what} on group {group.ranks}, which does not contain "
                                   f"rank {self.rank} (the rank running it): pick the group this rank belongs to")
        return group.ranks

    def _next(self, key):
        k = self.counts.get(key, 0)
        self.counts[key] = k + 1
        return k

    def _meet(self, group, kind, params, x):
        inst = "g" + "-".join(map(str, group)) + f"#{self._next(tuple(group))}"
        return self.world.meet(inst, group, self.rank, (kind, params, x.detach().clone(), _dist.script_line()))

    def _done(self, async_op):
        return _Work() if async_op else None

    # -- the calls --
    def op_all_reduce(self, tensor, op=dist.ReduceOp.SUM, group=None, async_op=False):
        g = self._group(group, "all_reduce")
        red = _dist._reduce_name(op, "all_reduce")
        _into(tensor, self._meet(g, "all_reduce", red, tensor), "all_reduce")
        return self._done(async_op)

    def op_all_gather_into_tensor(self, output_tensor, input_tensor, group=None, async_op=False):
        g = self._group(group, "all_gather_into_tensor")
        _into(output_tensor, torch.cat(self._meet(g, "all_gather", None, input_tensor), 0), "all_gather_into_tensor")
        return self._done(async_op)

    def op__all_gather_base(self, output_tensor, input_tensor, group=None, async_op=False):
        return self.op_all_gather_into_tensor(output_tensor, input_tensor, group, async_op)

    def op_all_gather(self, tensor_list, tensor, group=None, async_op=False):
        g = self._group(group, "all_gather")
        if len(tensor_list) != len(g):
            raise ImportTorchError(f"{_dist.script_line()}: all_gather into {len(tensor_list)} tensors on a group "
                                   f"of {len(g)} ranks")
        for t, v in zip(tensor_list, self._meet(g, "all_gather", None, tensor)):
            _into(t, v, "all_gather")
        return self._done(async_op)

    def op_reduce_scatter_tensor(self, output, input, op=dist.ReduceOp.SUM, group=None, async_op=False):
        g = self._group(group, "reduce_scatter_tensor")
        red = _dist._reduce_name(op, "reduce_scatter_tensor", ("sum", "avg"))
        _into(output, self._meet(g, "reduce_scatter", red, input), "reduce_scatter_tensor")
        return self._done(async_op)

    def op__reduce_scatter_base(self, output, input, op=dist.ReduceOp.SUM, group=None, async_op=False):
        return self.op_reduce_scatter_tensor(output, input, op, group, async_op)

    def op_reduce_scatter(self, output, input_list, op=dist.ReduceOp.SUM, group=None, async_op=False):
        g = self._group(group, "reduce_scatter")
        red = _dist._reduce_name(op, "reduce_scatter", ("sum", "avg"))
        stacked = _dist._stacked(output, input_list, "reduce_scatter", g)
        _into(output, self._meet(g, "reduce_scatter", red, stacked)[0], "reduce_scatter")
        return self._done(async_op)

    def op_all_to_all(self, output_tensor_list, input_tensor_list, group=None, async_op=False):
        g = self._group(group, "all_to_all")
        if len(output_tensor_list) != len(g):
            raise ImportTorchError(f"{_dist.script_line()}: all_to_all into {len(output_tensor_list)} tensors on a "
                                   f"group of {len(g)} ranks")
        stacked = _dist._stacked(output_tensor_list[0], input_tensor_list, "all_to_all", g)
        received = self._meet(g, "all_to_all", None, stacked)
        for i, t in enumerate(output_tensor_list):
            _into(t, received[i], "all_to_all")
        return self._done(async_op)

    def op_all_to_all_single(self, output, input, output_split_sizes=None, input_split_sizes=None, group=None,
                             async_op=False):
        g = self._group(group, "all_to_all_single")
        if output_split_sizes is not None or input_split_sizes is not None:
            raise ImportTorchError(f"{_dist.script_line()}: all_to_all_single with split sizes is not supported "
                                   "(equal splits only)")
        _into(output, self._meet(g, "all_to_all", None, input), "all_to_all_single")
        return self._done(async_op)

    def op_broadcast(self, tensor, src, group=None, async_op=False):
        g = self._group(group, "broadcast")
        if src not in g:
            raise ImportTorchError(f"{_dist.script_line()}: broadcast from rank {src}, which is not in group {g}")
        _into(tensor, self._meet(g, "broadcast", int(src), tensor), "broadcast")
        return self._done(async_op)

    def _peer(self, peer, what):
        if self.kind == "logical":
            raise ImportTorchError(f"{_dist.script_line()}: logical calls torch.distributed.{what}; the "
                                   "single-device step may not communicate")
        if not isinstance(peer, int) or not 0 <= peer < self.world.size or peer == self.rank:
            raise ImportTorchError(f"{_dist.script_line()}: {what} with peer {peer!r} on rank {self.rank}: the "
                                   f"peer must be another rank in [0, {self.world.size})")
        return peer

    def op_send(self, tensor, dst, group=None, tag=0):
        dst = self._peer(dst, "send")
        k = self._next(("p2p", self.rank, dst))
        self.world.post((self.rank, dst, k), tensor.detach().clone())

    def _recv(self, tensor, src, k, where):
        v = self.world.take((src, self.rank, k), self.rank, f"recv #{k} from rank {src} at {where}")
        _into(tensor, v, "recv")

    def op_recv(self, tensor, src=None, group=None, tag=0):
        if src is None:
            raise ImportTorchError(f"{_dist.script_line()}: recv without src is not supported (name the sender)")
        src = self._peer(src, "recv")
        self._recv(tensor, src, self._next(("p2p", src, self.rank)), _dist.script_line())
        return src

    def op_isend(self, tensor, dst, group=None, tag=0):
        self.op_send(tensor, dst, group, tag)
        return _Work()

    def op_irecv(self, tensor, src=None, group=None, tag=0):
        if src is None:
            raise ImportTorchError(f"{_dist.script_line()}: irecv without src is not supported (name the sender)")
        src = self._peer(src, "irecv")
        k, where = self._next(("p2p", src, self.rank)), _dist.script_line()
        return _Work(lambda: self._recv(tensor, src, k, where))  # received at wait(), as torch fills it

    def op_get_rank(self, group=None):
        if group is None or group is dist.group.WORLD:
            return self.rank
        return group.ranks.index(self.rank) if self.rank in group.ranks else -1

    def op_get_world_size(self, group=None):
        if group is None or group is dist.group.WORLD:
            return self.world.size
        return len(group.ranks)

    def op_barrier(self, group=None, async_op=False, device_ids=None):
        return self._done(async_op)


def _user_error(script, e):
    """'FILE:LINE: Type: message' at the innermost frame of SCRIPT.py or a helper module beside it."""
    where = script
    for fr in traceback.extract_tb(e.__traceback__):
        if is_user_file(fr.filename, script):
            where = f"{os.path.abspath(fr.filename)}:{fr.lineno}"
    return f"{where}: {type(e).__name__}: {e}"


def _fresh_module(script, importer, tag):
    """SCRIPT.py as a fresh module, with fresh copies of the helper modules beside it (a rank's own process)."""
    for name, m in list(sys.modules.items()):
        f = getattr(m, "__file__", None)
        if f and is_user_file(f, script.path) and not name.startswith("_paraproof_script_"):
            del sys.modules[name]
    return importer._load_module(script, tag)


def _draw(shape, dtype, pre, bound, wide):
    if dtype.is_floating_point:
        v = pre.example(shape, torch.float64) if pre is not None else torch.randn(shape, dtype=torch.float64)
        return v if wide else v.to(dtype)
    if pre is not None:
        return pre.example(shape, dtype)
    return torch.randint(0, bound, shape).to(dtype)


def _box(t, lin):
    for d, (s, e) in enumerate(lin.get("box", [])):
        t = t.narrow(d, s, e - s)
    return t


def _leaf(v):
    v = v.detach().clone()
    return v.requires_grad_(True) if v.is_floating_point() else v


def _outputs(script, fn_name, out):
    if not isinstance(out, dict):
        raise ImportTorchError(f"{script.ret_at(fn_name)}: {fn_name} must return a dict name -> tensor, got "
                               f"{type(out).__name__}")
    res = {}
    for k, v in out.items():
        if not isinstance(v, torch.Tensor):
            raise ImportTorchError(f"{script.ret_at(fn_name)}: {fn_name} returns {k!r} = {v!r}, not a tensor")
        res[k] = v.detach().clone()
    return res


def run(script_path, plan, seed=0, wide=True):
    """Runs the steps eagerly; returns (logical outputs, {rank: outputs}) or raises ImportTorchError with the
    reason they could not run (the message says which step, and the SCRIPT.py line). `wide`: float inputs in
    float64 (and float64 the default dtype), else in their declared dtypes."""
    from . import importer
    from ._eval import _int_bounds
    script = importer.Script(script_path)
    world = plan["mesh"]["shape"]
    size = 1
    for s in world:
        size *= s
    _dist.S.script = script.path
    _dist.begin_trace("logical", 0, size)
    lmod = _fresh_module(script, importer, "eager_logical")
    inputs = importer._inputs(script, lmod)
    names = list(inputs)
    bounds = _int_bounds(plan["logical"])
    torch.manual_seed(seed)
    full = {n: _draw(inputs[n][0], inputs[n][1], inputs[n][2], bounds.get(n, 2), wide) for n in names}

    old_dtype = torch.get_default_dtype()
    if wide:
        torch.set_default_dtype(torch.float64)  # constants made in the step (torch.zeros(n)) follow the inputs
    try:
        _dist.EAGER.ctx = _Rank(_World(1), 0, "logical")
        _dist.EAGER_ON = True
        try:
            want = _outputs(script, "logical", lmod.logical(*[_leaf(full[n]) for n in names]))
        except ImportTorchError:
            raise
        except Exception as e:
            raise ImportTorchError(f"logical could not run eagerly: {_user_error(script.path, e)}")
        finally:
            _dist.EAGER.ctx = None
            _dist.EAGER_ON = False

        mods, args = {}, {}
        for d in plan["devices"]:
            r = d["rank"]
            _dist.begin_trace("parallel", r, size)  # module-level get_rank() / new_group see this rank
            mods[r] = _fresh_module(script, importer, f"eager_rank{r}")
            ins = []
            for n in names:
                lin = d["lineage"][n]
                v = _box(full[n], lin)
                if v.is_floating_point() and lin.get("parts", 1) > 1:
                    v = v / lin["parts"]
                ins.append(_leaf(v))
            args[r] = ins

        sim = _World(size)
        got, errors = {}, {}
        _dist.EAGER_ON = True

        def body(r):
            _dist.EAGER.ctx = _Rank(sim, r, "parallel")
            failed = True
            try:
                got[r] = _outputs(script, "parallel", mods[r].parallel(r, *args[r]))
                failed = False
            except _Aborted:
                pass
            except ImportTorchError as e:
                errors[r] = str(e)
            except BaseException as e:  # noqa: B902 - the user's code: report it, never take the process down
                errors[r] = _user_error(script.path, e)
            finally:
                _dist.EAGER.ctx = None
                sim.finish(r, failed)

        threads = [threading.Thread(target=body, args=(r,), daemon=True, name=f"paraproof-rank{r}")
                   for r in sorted(mods)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + _TIMEOUT
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        if any(t.is_alive() for t in threads):
            with sim.cv:
                sim.abort = True
                sim.cv.notify_all()
            raise ImportTorchError(f"parallel did not finish within {_TIMEOUT:.0f} s when run eagerly")
        if errors:
            r = min(errors)
            raise ImportTorchError(f"parallel (rank {r}) could not run eagerly: {errors[r]}")
        if sim.hang:
            raise ImportTorchError(f"the ranks would hang when run eagerly: {sim.hang}")
        return want, got
    finally:
        torch.set_default_dtype(old_dtype)
        _dist.EAGER.ctx = None
        _dist.EAGER_ON = False


# Relative tolerance of an output against the logical one: float64 differs only by rounding order; a step run
# in its declared dtypes (float64 made it fail, e.g. `x.float() @ w`) by that dtype's rounding.
_RTOL = {torch.float64: 1e-6, torch.float32: 1e-4, torch.float16: 5e-2, torch.bfloat16: 5e-2}


def _narrowest(plan):
    names = {"f64": torch.float64, "f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
    dts = [names[t["dtype"]] for t in plan["logical"]["inputs"] if t["dtype"] in names]
    return max(dts, key=lambda d: _RTOL[d]) if dts else torch.float64


def check_numerics(script_path, plan, draws=3):
    """The metadata.check_numerics record: {agree, ran, eager, dtype, draws, detail, seconds, note}. The steps
    run on `draws` independent random inputs; the first disagreement is the verdict. In float64 first; a step
    that fails there (an explicit `.float()` meeting a float64 tensor) runs in its declared dtypes instead."""
    from ._eval import compare_outputs
    t0 = time.monotonic()
    agree, detail, wide, how = True, "agree", True, HOW
    for seed in range(draws):
        try:
            want, got = run(script_path, plan, seed, wide)
        except ImportTorchError as e:
            if wide:
                try:
                    want, got = run(script_path, plan, seed, False)
                    wide = False
                    how = (f"the declared dtypes, as float64 fails ({e}); SCRIPT.py's functions run eagerly, every "
                           "rank a thread with real storage and collectives")
                except ImportTorchError:
                    pass
            if wide:
                detail = str(e)
                return {"agree": False, "ran": False, "eager": True, "draws": seed, "detail": detail,
                        "seconds": round(time.monotonic() - t0, 3),
                        "note": f"check-numerics: not run, no verdict: {detail} (a test, not a proof)"}
        agree, detail = compare_outputs(plan, want, got, rtol=_RTOL[torch.float64 if wide else _narrowest(plan)])
        if not agree:
            break
    secs = round(time.monotonic() - t0, 3)
    where = f"{draws} draws of random inputs" if agree else f"random inputs (draw {seed + 1} of {draws})"
    note = ("check-numerics: logical and parallel " + ("agree" if agree else "DISAGREE: " + detail)
            + f" on {where} ({how}; a test, not a proof)")
    return {"agree": agree, "ran": True, "eager": True, "dtype": "float64" if wide else "declared",
            "draws": seed + 1, "detail": detail, "seconds": secs, "note": note}
