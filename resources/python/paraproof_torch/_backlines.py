"""The SCRIPT.py line of each backward op: the forward op it differentiates, not the `autograd.grad` /
`.backward()` call. While a step is traced, anomaly mode keeps each grad_fn's forward stack
(grad_fn.metadata["traceback_"]); when the step calls autograd.grad / backward, a pre-hook on every grad_fn of
the graph names the stack current while the engine runs that grad_fn (on the calling thread: CPU tensors), and
every fx node created meanwhile records it. A node whose own innermost SCRIPT.py frame is the backward call
then takes the forward's line (_aten.node_line); ops of a user autograd.Function's backward keep their own."""
import contextlib
import traceback

import torch
from torch.fx.experimental.proxy_tensor import PythonKeyTracer

from . import _aten

_state = {"active": False, "current": None, "script": None}
_real = {}


def _user_loc(frames, script):
    """'FILE:LINE' of the innermost SCRIPT.py (or helper module) frame of an extract_stack list, else None."""
    import os
    for fr in reversed(frames):
        if _aten.is_user_file(fr.filename, script):
            return f"{os.path.abspath(fr.filename)}:{fr.lineno}"
    return None


def _hook_graph(tensors):
    """Pre- and post-hooks on every grad_fn reachable from `tensors` (the roots of one backward call)."""
    call = _user_loc(traceback.extract_stack()[:-2], _state["script"])
    todo = [t.grad_fn for t in tensors if isinstance(t, torch.Tensor) and t.grad_fn is not None]
    seen = set()
    while todo:
        fn = todo.pop()
        if fn in seen:
            continue
        seen.add(fn)
        tb = fn.metadata.get("traceback_") if hasattr(fn, "metadata") else None
        if tb and call:
            stack = "".join(reversed(tb))  # innermost first, as fx's own stack_trace
            fn.register_prehook(lambda grads, s=stack, f=fn: _set((s, call, f)))
            fn.register_hook(lambda gin, gout: _set(None))
        for nxt, _ in getattr(fn, "next_functions", ()):
            if nxt is not None:
                todo.append(nxt)


def _set(v):
    _state["current"] = v


def _roots(x):
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for t in x if isinstance(t, torch.Tensor)]
    return []


def _grad(outputs, *args, **kwargs):
    if _state["active"]:
        try:
            _hook_graph(_roots(outputs))
        except Exception:  # attribution is a nicety: never change what is traced
            pass
    try:
        return _real["grad"](outputs, *args, **kwargs)
    finally:
        _state["current"] = None


def _backward(tensors, *args, **kwargs):
    if _state["active"]:
        try:
            _hook_graph(_roots(tensors))
        except Exception:
            pass
    try:
        return _real["backward"](tensors, *args, **kwargs)
    finally:
        _state["current"] = None


def _create_proxy(self, *args, **kwargs):
    p = _real["create_proxy"](self, *args, **kwargs)
    cur = _state["current"]
    if cur is not None and hasattr(p, "node"):
        p.node.meta["paraproof_forward"] = cur
    return p


def patch(script):
    _state["script"] = script
    if _real:
        return
    _real["grad"], _real["backward"] = torch.autograd.grad, torch.autograd.backward
    _real["create_proxy"] = PythonKeyTracer.create_proxy
    torch.autograd.grad, torch.autograd.backward = _grad, _backward
    PythonKeyTracer.create_proxy = _create_proxy


@contextlib.contextmanager
def tracking():
    _state["active"], _state["current"] = True, None
    try:
        with torch.autograd.set_detect_anomaly(True, check_nan=False):
            yield
    finally:
        _state["active"], _state["current"] = False, None
