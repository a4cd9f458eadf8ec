"""A user autograd.Function whose forward or backward hands back a tensor it was given (Megatron's
copy-to-region backward `return grad_output`, a reduce forward whose all-reduce was forgotten) makes no op:
the value passes its `return` line unseen, and a failing stage could only name the ops around it. While a
step is traced, each such tensor is returned through an alias whose op is scoped at that `return` line
(_scopes.FRAMES); the converter keeps it as an identity op (_aten's alias handler)."""
import contextlib
import os
import sys

import torch

from . import _aten, _insertion, _scopes


def _user_functions(script):
    """The autograd.Function subclasses defined in SCRIPT.py or a module beside it."""
    found, todo = [], [torch.autograd.Function]
    while todo:
        for sub in todo.pop().__subclasses__():
            todo.append(sub)
            path = getattr(sys.modules.get(sub.__module__), "__file__", None)
            if path and _aten.is_user_file(path, script):
                found.append(sub)
    return found


def _passing(fn):
    """fn (a forward or backward) with the tensors it returns unchanged marked at its return line."""
    code = fn.__code__

    def marked(ctx, *args):
        returned_at = []

        def profile(frame, event, arg):
            if event == "return" and frame.f_code is code:
                returned_at.append(frame.f_lineno)

        previous = sys.getprofile()
        sys.setprofile(profile)
        try:
            out = fn(ctx, *args)
        finally:
            sys.setprofile(previous)
        given = {id(a) for a in args if isinstance(a, torch.Tensor)}
        if not returned_at or not given:
            return out
        at = [(f"{os.path.abspath(code.co_filename)}:{returned_at[-1]}", code.co_name)]

        def mark(t):
            if not isinstance(t, torch.Tensor) or id(t) not in given:
                return t
            with _scopes.attributed(at):
                return torch.ops.aten.alias.default(t)
        return tuple(mark(t) for t in out) if isinstance(out, tuple) else mark(out)
    return marked


@contextlib.contextmanager
def marking(script):
    """While tracing: the user's autograd.Functions mark the tensors they pass through."""
    saved = []
    for cls in _user_functions(script):
        for name in ("forward", "backward"):
            fn = cls.__dict__.get(name)
            if isinstance(fn, staticmethod):
                saved.append((cls, name, fn))
                code = fn.__func__.__code__
                _insertion.FUNCTION_METHODS.add((os.path.abspath(code.co_filename), code.co_name))
                setattr(cls, name, staticmethod(_passing(fn.__func__)))
    try:
        yield
    finally:
        for cls, name, fn in reversed(saved):
            setattr(cls, name, fn)
