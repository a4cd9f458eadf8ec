"""Where a missing statement goes. A value that is one rank's part of the model's (a partial sum) is wrong
only where it is read as the whole: the collective that completes it was forgotten, and it belongs after the
value's last write, before the next statement of the SCRIPT.py function that wrote it (Megatron's
`dist.all_reduce(predicted_logits)` after `predicted_logits[target_mask] = 0.0`; a gradient left out of the
loop that all-reduces the others: the loop after the `autograd.grad` call). For every device op the importer
records that next statement (plan metadata `statement_after`, with "at", the statement the op runs in); the
verifier names it when a failing stage's first difference is such a part, and "at" when it is a tensor sent
that the model reads elsewhere (docs/report-format.md, "first difference")."""
import ast
import contextlib
import functools
import os
import sys

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@functools.lru_cache(maxsize=None)
def _module(path):
    try:
        with open(path) as f:
            return ast.parse(f.read())
    except (OSError, SyntaxError, ValueError):
        return None


def _blocks(st):
    """The statement lists nested directly in a compound statement."""
    lists = [getattr(st, f, None) for f in ("body", "orelse", "finalbody")]
    lists += [h.body for h in getattr(st, "handlers", [])]
    return [b for b in lists if isinstance(b, list) and b and isinstance(b[0], ast.stmt)]


def _chain(path, line):
    """(statement list, index) from the innermost function's body down to the statement holding `line`."""
    tree = _module(path)
    chain, body = [], tree.body if tree else []
    while True:
        at = next((i for i, st in enumerate(body) if st.lineno <= line <= (st.end_lineno or st.lineno)), None)
        if at is None:
            return chain
        st = body[at]
        if isinstance(st, _SCOPES):
            chain, body = [], st.body
            continue
        chain.append((body, at))
        inner = next((b for b in _blocks(st) if b[0].lineno <= line <= (b[-1].end_lineno or line)), None)
        if inner is None:
            return chain
        body = inner


EXECUTED = set()  # (absolute path, line) of the user lines run while the steps were traced
FUNCTION_METHODS = set()  # (absolute path, name) of the user autograd.Functions' forward and backward


@contextlib.contextmanager
def recording(script):
    """While tracing: the lines of SCRIPT.py and the modules beside it that run (an `if` body that ran is
    where a statement missing after its test belongs)."""
    from . import _aten

    def local(frame, event, arg):
        if event == "line":
            EXECUTED.add((frame.f_code.co_filename, frame.f_lineno))
        return local

    def call(frame, event, arg):
        if _aten.is_user_file(frame.f_code.co_filename, script):
            EXECUTED.add((frame.f_code.co_filename, frame.f_lineno))
            return local
        return None

    previous = sys.gettrace()
    sys.settrace(call)
    try:
        yield
    finally:
        sys.settrace(previous)


def _ran(path, st):
    return any((f, st.lineno) in EXECUTED for f in (path, os.path.abspath(path)))


def _entered(path, st):
    """The statement a step lands on: a `with` block's first, an `if` branch's first when it ran."""
    while True:
        if isinstance(st, (ast.With, ast.AsyncWith)):
            st = st.body[0]
        elif isinstance(st, ast.If) and _ran(path, st.body[0]):
            st = st.body[0]
        elif isinstance(st, ast.If) and st.orelse and _ran(path, st.orelse[0]):
            st = st.orelse[0]
        else:
            return st


def next_statement(path, line, past_loop=False):
    """The line of the first statement that runs after the one holding `line` in its function (`with` blocks
    and `if` branches that ran entered), or None at the function's end. past_loop: after the innermost loop
    holding it instead (a value a loop writes on every pass is complete after the loop), None outside loops."""
    chain = _chain(path, line)
    if past_loop:
        loops = [k for k, (body, i) in enumerate(chain) if isinstance(body[i], (ast.For, ast.While))]
        if not loops or loops[-1] == len(chain) - 1:
            return None
        chain = chain[:loops[-1] + 1]
    for body, i in reversed(chain):
        if i + 1 < len(body):
            return _entered(path, body[i + 1]).lineno
    return None


def loop_of(path, line):
    """'FILE:LINE' of the innermost loop (of its function) whose body holds `line`, else None."""
    chain = _chain(path, line)
    for body, i in reversed(chain[:-1]):
        if isinstance(body[i], (ast.For, ast.While)):
            return f"{os.path.basename(path)}:{body[i].lineno}"
    return None


def after(frames):
    """Where a statement missing after the op's own belongs ({"next": 'FUNCTION FILE:LINE'}, and for an op
    inside a loop "loop" and "after_loop"), from its frames (innermost first, as executed), going out to the
    caller when the statement ends its function; None when no user frame has a next statement."""
    for loc, func in frames:
        path, _, line = loc.rpartition(":")
        if not path or not line.isdigit():
            return None
        nxt = next_statement(path, int(line))
        past = next_statement(path, int(line), past_loop=True)
        if nxt is None and past is None and (os.path.abspath(path), func) in FUNCTION_METHODS:
            # The last statement of an autograd.Function's forward or backward: autograd, not the caller,
            # takes what it returns, so the missing collective belongs in that statement.
            return {"next": f"{func} {os.path.basename(path)}:{line}"}
        if nxt is None and past is None:
            continue
        out = {}
        if nxt is not None:
            out["next"] = f"{_function(path, nxt)} {os.path.basename(path)}:{nxt}"
        if past is not None:
            out["loop"] = loop_of(path, int(line))
            out["after_loop"] = f"{_function(path, past)} {os.path.basename(path)}:{past}"
        return out
    return None


def _function(path, line):
    name, body = "", (_module(path).body if _module(path) else [])
    while True:
        st = next((s for s in body if s.lineno <= line <= (s.end_lineno or s.lineno)), None)
        if st is None:
            return name
        if isinstance(st, _SCOPES):
            name = st.name
            body = st.body
        else:
            body = next((b for b in _blocks(st) if b[0].lineno <= line <= (b[-1].end_lineno or line)), [])
