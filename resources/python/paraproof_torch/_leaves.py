"""torch functions whose implementation reads tensor data (one_hot checks its ids' range) cannot be traced by
make_fx ("trying to get value out of a tracing tensor"); while SCRIPT.py runs they are paraproof_leaf.* custom ops,
recorded as one node each, as the collectives are (_dist.py)."""
import torch
import torch.nn.functional as F

from . import ImportTorchError

_lib = torch.library.Library("paraproof_leaf", "DEF")  # ("paraproof" is _dist.py's; 1.13 has no FRAGMENT)
_lib.define("one_hot(Tensor ids, int num_classes) -> Tensor")

_real_one_hot = F.one_hot
_lib.impl("one_hot", lambda ids, num_classes: _real_one_hot(ids, num_classes), "CPU")


def one_hot(tensor, num_classes=-1):
    if num_classes is None or num_classes < 0:
        from ._dist import script_line
        raise ImportTorchError(f"{script_line()}: one_hot without num_classes: the class count would be read "
                               "from the traced data; pass num_classes")
    return torch.ops.paraproof_leaf.one_hot(tensor, int(num_classes))


def patch():
    F.one_hot = one_hot
