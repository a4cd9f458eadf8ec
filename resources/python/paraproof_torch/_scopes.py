"""nn.Module scopes while tracing. make_fx in torch 1.13 keeps no nn_module_stack, so global forward pre/post
hooks keep a stack of module paths while a step is traced and every fx node created meanwhile is tagged with
the innermost one (node.meta["paraproof_scope"]). A module SCRIPT.py holds at module level is named by its
variable (MODEL.fc1 -> "model.fc1"); one made inside the step by its class ("mlp.fc1")."""
import contextlib

import torch
import torch.fx
from torch.nn.modules import module as _module

META = "paraproof_scope"
FRAMES = "paraproof_frames"  # the user frames ('FILE:LINE', function) a node is attributed to, innermost first
_attributed = []


@contextlib.contextmanager
def attributed(frames):
    """fx nodes created meanwhile are attributed to `frames` instead of their stack trace."""
    _attributed.append(frames)
    try:
        yield
    finally:
        _attributed.pop()


class _Tracker:
    def __init__(self, namespace):
        self.names = {}  # id(module) -> dotted path
        self.stack = []
        self.keep = []  # the modules named, so their ids stay theirs while tracing
        for var, obj in (namespace or {}).items():
            if isinstance(obj, torch.nn.Module) and not var.startswith("_"):
                self._name_tree(obj, var.lower())

    def _name_tree(self, root, prefix):
        for sub, m in root.named_modules():
            if id(m) not in self.names:
                self.names[id(m)] = prefix + ("." + sub if sub else "")
                self.keep.append(m)

    def pre(self, module, args):
        name = self.names.get(id(module))
        if name is None:  # made inside the step: under the module running it, by its class
            parent = self.stack[-1] if self.stack else ""
            self._name_tree(module, (parent + "." if parent else "") + type(module).__name__.lower())
            name = self.names[id(module)]
        self.stack.append(name)

    def post(self, module, args, out):
        if self.stack:
            self.stack.pop()


@contextlib.contextmanager
def tracking(namespace):
    """While tracing: fx nodes created inside an nn.Module's forward carry its path in node.meta[META]."""
    t = _Tracker(namespace)
    create_node = torch.fx.Graph.create_node

    def tagged(self, *args, **kwargs):
        node = create_node(self, *args, **kwargs)
        if t.stack:
            node.meta[META] = t.stack[-1]
        if _attributed:
            node.meta[FRAMES] = _attributed[-1]
        return node

    handles = [_module.register_module_forward_pre_hook(t.pre), _module.register_module_forward_hook(t.post)]
    torch.fx.Graph.create_node = tagged
    try:
        yield t
    finally:
        torch.fx.Graph.create_node = create_node
        for h in handles:
            h.remove()
