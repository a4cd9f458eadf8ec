"""Where a missing statement goes. A value that is one rank's part of the model's (a partial sum) is wrong
only where it is read as the whole: the collective that completes it was forgotten, and it belongs after the
value's last write, before the next statement of the SCRIPT.py function that wrote it (Megatron's
`dist.all_reduce(predicted_logits)` after `predicted_logits[target_mask] = 0.0`; a gradient left out of the
loop that all-reduces the others: the loop after the `autograd.grad` call). For every device op the importer
records that next statement (plan metadata `statement_after`); the verifier names it when a failing stage's
first difference is such a part (docs/report-format.md, "first difference")."""
import ast
import functools
import os

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


def next_statement(path, line):
    """The line of the first statement that runs after the one holding `line` in its function (`with`
    headers entered: a context is no step), or None at the function's end."""
    for body, i in reversed(_chain(path, line)):
        if i + 1 < len(body):
            st = body[i + 1]
            while isinstance(st, (ast.With, ast.AsyncWith)):
                st = st.body[0]
            return st.lineno
    return None


def after(frames):
    """'FUNCTION FILE:LINE' of the statement after the op's frames (innermost first, as executed), going out
    to the caller when the innermost statement ends its function; None when none is in user code."""
    for loc, _ in frames:
        path, _, line = loc.rpartition(":")
        if not path or not line.isdigit():
            return None
        nxt = next_statement(path, int(line))
        if nxt is not None:
            return f"{_function(path, nxt)} {os.path.basename(path)}:{nxt}"
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
