"""Storage semantics for the SSA mapping: views share memory with their base, so an in-place write (an op's or
a collective's copy_) changes every tensor that aliases the written one, as in torch.

make_fx points later uses of a written tensor at the writing node, which is SSA for that tensor alone. Its
aliases (a view taken before the write, the base of a written view, sibling views) still name the nodes that
made them. Here every tensor belongs to a storage: its root (a tensor that is not a view) and the chain of
view nodes from the root to it. A write computes the root's new value by undoing the chain (a reshape back,
the inverse permutation, a slice written into its base with concat); an alias read after a write is made
again from the current root by replaying its chain. What torch's schema marks as a view (`Tensor(a)`) or a
write (`Tensor(a!)`) decides, not a list of names. A write through a view that cannot be undone (expand,
an overlapping as_strided) poisons the storage: an error naming the line where the plan needs a value of it.
"""
import operator

import torch

from . import _aten, _strided

# Views that only reinterpret the shape: undone by reshaping back.
_RESHAPES = {"view", "_unsafe_view", "reshape", "_reshape_alias", "unsqueeze", "squeeze", "flatten", "unflatten",
             "alias", "detach", "view_as"}
_PERMUTES = {"t", "transpose", "permute"}
_SLICES = {"slice", "narrow", "select"}
_SPLITS = {"split", "split_with_sizes", "unbind", "chunk"}


def _schema(n):
    t = n.target
    return t._schema if isinstance(t, torch._ops.OpOverload) else None


def is_view(n):
    """torch's schema says the op returns an alias of its first argument (Tensor(a) -> Tensor(a)), or it is
    _unsafe_view, which aliases without saying so."""
    s = _schema(n)
    if s is None or not s.arguments or not s.returns:
        return False
    a0, r0 = s.arguments[0].alias_info, s.returns[0].alias_info
    if s.name.split("::")[-1] == "_unsafe_view":
        return True
    return a0 is not None and not a0.is_write and r0 is not None


def written_argument(n):
    """The index of the argument the op writes in place (Tensor(a!)), or None."""
    s = _schema(n)
    if s is None:
        return None
    for i, a in enumerate(s.arguments):
        if a.alias_info is not None and a.alias_info.is_write:
            return i
    return None


def _packet(n):
    return _schema(n).name.split("::")[-1]


class _Root:
    def __init__(self, value):
        self.value = value  # the current value of the whole storage (a converter value or a Poison)
        self.version = 0


class Memory:
    """The storages of one traced graph, for one Converter."""

    def __init__(self, conv):
        self.c = conv
        self.where = {}  # fx node -> (root, chain of view nodes from the root to it)
        self.seen = {}   # fx node -> the root version its value in conv.values reflects
        self.calls = {}  # view node -> (handler, args, full name), to replay it on a new base

    def fresh(self, n):
        self.where[n] = (_Root(self.c.values[n]), [])
        self.seen[n] = 0

    def record_call(self, n, handler, args, full):
        if is_view(n):
            self.calls[n] = (handler, list(args), full)

    def read(self, n):
        """n's value now: made again from its root when a write happened since it was last made."""
        entry = self.where.get(n)
        if entry is None:
            return self.c.values[n]
        root, chain = entry
        if self.seen.get(n) != root.version:
            self.c.values[n] = self._replay(root, chain)
            self.seen[n] = root.version
        return self.c.values[n]

    def after(self, n):
        """Places a converted node: a view joins its base's storage, a write updates its storage, anything
        else starts a storage of its own."""
        value = self.c.values[n]
        base = n.args[0] if n.args and isinstance(n.args[0], torch.fx.Node) else None
        if n.target is operator.getitem and base in self.where and base in self.calls:
            root, chain = self.where[base]
            self.where[n], self.seen[n] = (root, chain + [n]), root.version
            return
        k = written_argument(n) if _schema(n) is not None else None
        if k is not None:
            name = _schema(n).arguments[k].name
            target = n.args[k] if k < len(n.args) else n.kwargs.get(name)
            # The first argument (x.op_()) or an out= variant (torch.exp(x, out=y)): the result is written.
            if (k != 0 and name != "out") or target not in self.where:
                self._poison_all(n, target, "an in-place write to an argument other than the first")
                return
            root, chain = self.where[target]
            root.value = value if isinstance(value, _aten.Poison) else self._undo(root, chain, value)
            root.version += 1
            self.where[n], self.seen[n] = (root, chain), root.version
            return
        if base in self.where and is_view(n):
            root, chain = self.where[base]
            self.where[n], self.seen[n] = (root, chain + [n]), root.version
            return
        self.fresh(n)

    def _poison_all(self, n, target, why):
        loc, _ = _aten.node_line(n, self.c.script)
        p = _aten.Poison(f"{loc}: {why} ('{n.target}') is not modelled in {self.c.where}")
        if target in self.where:
            root, _ = self.where[target]
            root.value, root.version = p, root.version + 1
        self.c.values[n] = p
        self.fresh(n)

    # ---- replaying and undoing views ----
    def _replay(self, root, chain):
        x = root.value
        for v in chain:
            if isinstance(x, _aten.Poison):
                return x
            x = self._view_again(v, x)
        return x

    def _view_again(self, v, base_value):
        if v.target is operator.getitem:
            return base_value[v.args[1]]
        handler, args, full = self.calls[v]
        saved = self.c.cur
        try:
            return handler(self.c, v, [base_value] + args[1:], full)
        except _aten._Unsupported as u:
            loc, _ = _aten.node_line(v, self.c.script)
            return _aten.Poison(f"{loc}: {u} in {self.c.where}")
        finally:
            self.c.cur = saved

    def _undo(self, root, chain, new_value):
        """The root's value after the tensor at the end of `chain` became `new_value`."""
        # The values of the chain's tensors before the write: what a partial write leaves in place.
        befores = [root.value]
        for v in chain[:-1]:
            befores.append(self._view_again(v, befores[-1]))
        x = new_value
        for v, before in zip(reversed(chain), reversed(befores)):
            if isinstance(before, _aten.Poison):
                return before
            x = self._unview(v, before, x)
            if isinstance(x, _aten.Poison):
                return x
        return x

    def _unview(self, v, before, written):
        """The base of view `v` (`before` the write) once the view's elements became `written`."""
        c = self.c
        loc, _ = _aten.node_line(v, c.script)
        if v.target is operator.getitem:  # one piece of a split: the list with that piece replaced
            pieces = list(before)
            pieces[v.args[1]] = written
            return pieces
        name = _packet(v)
        base_shape = _aten.in_shape(v.args[0])
        view_shape = list(v.meta["val"].shape)
        if name in _RESHAPES:
            return c.reshape(written, view_shape, base_shape)
        if name in _PERMUTES:
            perm = _permutation(v, len(base_shape))
            inverse = [perm.index(d) for d in range(len(perm))]
            return written if inverse == list(range(len(perm))) else c.emit("transpose", [written],
                                                                                {"perm": inverse})
        if name in _SLICES:
            dim, start, end = _slice_bounds(v, base_shape)
            if dim is None:  # x[a:b:k] = ...: the written elements at their strided places, `before` elsewhere
                dim, start, end, step = _strided_bounds(v, base_shape)
                dt = _aten.DTYPES[v.args[0].meta["val"].dtype]
                placed = _aten.strided_place(c, written, base_shape, dim, start, end, step, dt)
                at = _aten.strided_place(c, c.const(view_shape, 1, "i64"), base_shape, dim, start, end, step,
                                         "i64")
                return c.emit("where", [at, placed, before])
            piece = list(base_shape)
            piece[dim] = end - start
            parts = []
            if start > 0:
                parts.append(c.emit("slice", [before], {"dim": dim, "start": 0, "end": start}))
            parts.append(c.reshape(written, view_shape, piece))
            if end < base_shape[dim]:
                parts.append(c.emit("slice", [before], {"dim": dim, "start": end, "end": base_shape[dim]}))
            return parts[0] if len(parts) == 1 else c.emit("concat", parts, {"dim": dim})
        if name == "as_strided":  # autograd's CopySlices: the gradient written back into its base
            try:
                return _strided.unview(c, v, before, written)
            except _aten._Unsupported as u:
                return _aten.Poison(f"{loc}: {u} in {c.where}")
        if name in _SPLITS:
            dim = _aten._norm_dim(_arg(v, 2 if name != "unbind" else 1, 0), len(base_shape))
            if name == "unbind":
                piece = list(base_shape)
                piece[dim] = 1
                written = [c.reshape(w, list(m.shape), piece) for w, m in zip(written, v.meta["val"])]
            return written[0] if len(written) == 1 else c.emit("concat", list(written), {"dim": dim})
        return _aten.Poison(f"{loc}: an in-place write through a '{v.target}' view is not modelled in {c.where} "
                            "(write the result out of place)")


def _arg(v, i, default):
    return v.args[i] if len(v.args) > i and v.args[i] is not None else default


def _permutation(v, rank):
    name = _packet(v)
    if name == "t":
        return [1, 0] if rank == 2 else list(range(rank))
    if name == "transpose":
        perm = list(range(rank))
        d0, d1 = _aten._norm_dim(v.args[1], rank), _aten._norm_dim(v.args[2], rank)
        perm[d0], perm[d1] = perm[d1], perm[d0]
        return perm
    return [_aten._norm_dim(d, rank) for d in v.args[1]]


def _strided_bounds(v, shape):
    """(dim, start, end, step) of a slice with a step."""
    dim = _aten._norm_dim(_arg(v, 1, 0), len(shape))
    start, end = _aten._bounds(shape[dim], _arg(v, 2, None), _arg(v, 3, None))
    return dim, start, end, _arg(v, 4, 1)


def _slice_bounds(v, shape):
    """(dim, start, end) of a slice, narrow or select with step 1; (None, ...) for a strided slice."""
    name = _packet(v)
    dim = _aten._norm_dim(_arg(v, 1, 0), len(shape))
    size = shape[dim]
    if name == "select":
        i = v.args[2] + size if v.args[2] < 0 else v.args[2]
        return dim, i, i + 1
    if name == "narrow":
        return dim, v.args[2], v.args[2] + v.args[3]
    if _arg(v, 4, 1) != 1:
        return None, 0, 0
    start, end = _arg(v, 2, 0), _arg(v, 3, size)
    start = start + size if start < 0 else start
    end = end + size if end < 0 else end
    return dim, max(0, min(start, size)), max(0, min(end, size))
