"""paraproof_torch: import a PyTorch training step and its distributed version into a ParaProof plan.

A SCRIPT.py defines MESH, INPUTS, logical(...), parallel(rank, ...) and PLACEMENTS (docs/torch-import.md);
`paraproof import-torch SCRIPT.py -o PLAN.json` (or `python3 -m paraproof_torch SCRIPT.py -o PLAN.json`)
traces both with make_fx and writes the plan.
"""

__all__ = ["Mesh", "Shard", "Replicate", "Partial", "ImportTorchError", "NonNegative", "Mask", "OneHot",
           "Probabilities"]


class ImportTorchError(Exception):
    """An error the author of SCRIPT.py can act on; the message names the place (SCRIPT.py:LINE)."""


class Mesh:
    """Named mesh axes, e.g. Mesh({"dp": 2, "tp": 2}); ranks are row-major over the axes (the last varies
    fastest), so rank = dp * 2 + tp here."""

    def __init__(self, axes):
        if not isinstance(axes, dict) or not axes:
            raise ImportTorchError("Mesh takes a non-empty dict of axis name -> size, e.g. Mesh({'tp': 2})")
        for name, size in axes.items():
            if not isinstance(name, str) or not isinstance(size, int) or size < 1:
                raise ImportTorchError(f"Mesh axis {name!r}: size must be an integer >= 1, got {size!r}")
        self.axes = list(axes.keys())
        self.shape = [axes[a] for a in self.axes]

    @property
    def size(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    def coord(self, rank):
        c = []
        for s in reversed(self.shape):
            c.append(rank % s)
            rank //= s
        return list(reversed(c))

    def rank(self, coord):
        r = 0
        for c, s in zip(coord, self.shape):
            r = r * s + c
        return r

    def __repr__(self):
        return "Mesh({%s})" % ", ".join(f"{a!r}: {s}" for a, s in zip(self.axes, self.shape))


class Shard:
    """The tensor is split evenly along dim `dim` over the mesh axis (as DTensor's Shard)."""

    def __init__(self, dim):
        if not isinstance(dim, int):
            raise ImportTorchError(f"Shard(dim) takes an integer dim, got {dim!r}")
        self.dim = dim

    def __repr__(self):
        return f"Shard({self.dim})"


class Replicate:
    """Every rank along the mesh axis holds the whole tensor (the default for an axis not named)."""

    def __repr__(self):
        return "Replicate()"


class Partial:
    """The ranks along the mesh axis hold value parts that sum to the tensor (as DTensor's Partial)."""

    def __init__(self, op="sum"):
        if op != "sum":
            raise ImportTorchError(f"Partial(op={op!r}): only op='sum' is supported (scale before summing)")
        self.op = op

    def __repr__(self):
        return "Partial()"


# Input preconditions (INPUTS[name] = (shape, dtype, precondition)); after ImportTorchError, which they raise.
from ._preconditions import Mask, NonNegative, OneHot, Probabilities  # noqa: E402
