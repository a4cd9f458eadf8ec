"""Input preconditions declared in INPUTS: what the step may assume about an input's values.

Each is a reparametrisation, not a side condition: the plan's input is a free value r and the step reads
f(r), where the values f takes are exactly the inputs the precondition admits (NonNegative: r*r; Mask:
r != 0; OneHot: the top-1 indicator of r's row; Probabilities: softmax of r's row). So the proof ranges over
every admitted input and nothing else, with no premise to keep consistent, and random inputs (the trace,
--check-numerics) honour it by construction. f is elementwise or row-wise, so it commutes with taking a
device's box of the tensor; a row-wise one needs the row whole on every rank, and none applies to a value
part (Partial): both are refused with the INPUTS line."""
import torch
import torch.nn.functional as F

from . import ImportTorchError


class Precondition:
    rowwise = False

    def check_dtype(self, dtype, where):
        pass

    def example(self, shape, dtype):
        """A random input that satisfies it (what the trace runs on)."""
        raise NotImplementedError

    def raw(self, value):
        """An r with f(r) == value (the self-check feeds the traced example through f)."""
        return value

    def emit(self, c, x, dtype):
        """The ops computing f(x) in the plan; returns the value the step reads."""
        raise NotImplementedError

    def holds(self, value):
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}()"


class NonNegative(Precondition):
    """Every element >= 0 (Adam's second moment, a variance, a count)."""

    def check_dtype(self, dtype, where):
        if not dtype.is_floating_point:
            raise ImportTorchError(f"{where}: NonNegative() needs a float input, got {dtype}")

    def example(self, shape, dtype):
        return torch.randn(shape, dtype=dtype).abs()

    def raw(self, value):
        return value.sqrt()

    def emit(self, c, x, dtype):
        return c.emit("square", [x])

    def holds(self, value):
        return bool((value >= 0).all())


class Mask(Precondition):
    """Every element 0 or 1 (an attention or loss mask, a dropout mask, a routing choice)."""

    def example(self, shape, dtype):
        # Random, but keeping at least one element and dropping at least one: an all-dropped example makes a
        # masked mean 0/0, which the importer's self-check cannot compare (a flaky import, 1 in 2^n).
        m = torch.randint(0, 2, shape)
        flat = m.view(-1)
        if flat.numel() >= 1:
            flat[0] = 1
        if flat.numel() >= 2:
            flat[-1] = 0
        return m.to(dtype)

    def emit(self, c, x, dtype):
        return c.to_dtype(c.to_dtype(x, dtype, torch.bool), torch.bool, dtype)

    def holds(self, value):
        return bool(((value == 0) | (value == 1)).all())


class OneHot(Precondition):
    """Every row along the last dim is one-hot (one 1, the rest 0): targets given as a float tensor."""
    rowwise = True

    def check_dtype(self, dtype, where):
        if not dtype.is_floating_point:
            raise ImportTorchError(f"{where}: OneHot() needs a float input (integer targets are ids: give them "
                                   f"as int64 and F.one_hot them in the step), got {dtype}")

    def example(self, shape, dtype):
        if not shape or shape[-1] == 0:
            return torch.zeros(shape, dtype=dtype)
        return F.one_hot(torch.randint(0, shape[-1], shape[:-1]), shape[-1]).to(dtype)

    def emit(self, c, x, dtype):
        return c.emit("topk_indicator", [x], {"k": 1})

    def holds(self, value):
        return bool((((value == 0) | (value == 1)).all()) and ((value.sum(-1) == 1).all()))


class Probabilities(Precondition):
    """Every row along the last dim is a distribution (entries >= 0 summing to 1): soft targets."""
    rowwise = True

    def check_dtype(self, dtype, where):
        if not dtype.is_floating_point:
            raise ImportTorchError(f"{where}: Probabilities() needs a float input, got {dtype}")

    def example(self, shape, dtype):
        return torch.randn(shape, dtype=torch.float64).softmax(-1).to(dtype)

    def raw(self, value):
        return value.log()

    def emit(self, c, x, dtype):
        return c.emit("softmax", [x], {"dim": -1})

    def holds(self, value):
        v = value.double()
        return bool((v >= 0).all() and ((v.sum(-1) - 1).abs() <= 1e-4).all())


class BoolValue(Precondition):
    """A bool input: the plan's i64 input read as `!= 0`, so it holds 0 or 1 as torch's bool does."""

    def example(self, shape, dtype):
        return torch.randint(0, 2, shape).bool()

    def raw(self, value):
        return value.long()

    def emit(self, c, x, dtype):
        return c.to_dtype(x, torch.int64, torch.bool)

    def holds(self, value):
        return True


def check_layout(pre, name, layout, where):
    """Refuses a precondition that does not commute with the input's placement."""
    if layout.partial:
        raise ImportTorchError(f"{where}: {pre!r} on {name!r}, which is placed Partial(): a precondition holds "
                               "of the summed value, not of each rank's part")
    last = len(layout.shape) - 1
    if pre.rowwise and last in layout.shards:
        axes = ", ".join(f"'{layout.mesh.axes[ai]}'" for ai in layout.shards[last])
        raise ImportTorchError(f"{where}: {pre!r} on {name!r} needs its rows whole, but its last dim is "
                               f"Shard()ed over {axes}")
