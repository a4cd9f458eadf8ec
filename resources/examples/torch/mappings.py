"""Megatron-style tensor-parallel mappings (megatron/core/tensor_parallel/mappings.py, reduced to what the
examples use): autograd.Functions whose forward and backward communicate over the tensor-parallel group."""
import torch
import torch.distributed as dist


def _reduce(x, group):
    if dist.get_world_size(group=group) == 1:
        return x
    dist.all_reduce(x, group=group)
    return x


def _gather_last_dim(x, group):
    world = dist.get_world_size(group=group)
    if world == 1:
        return x
    out = torch.empty((world,) + tuple(x.shape), dtype=x.dtype)
    dist.all_gather_into_tensor(out, x.unsqueeze(0).contiguous(), group=group)
    return torch.cat([out[i] for i in range(world)], dim=-1)


def _split_last_dim(x, group):
    world = dist.get_world_size(group=group)
    if world == 1:
        return x
    return x.chunk(world, dim=-1)[dist.get_rank(group=group)].contiguous()


class CopyToModelParallelRegion(torch.autograd.Function):
    """Identity forward; all-reduce of the gradient backward (the input of a column-parallel layer)."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x

    @staticmethod
    def backward(ctx, grad):
        return _reduce(grad, ctx.group), None


class ReduceFromModelParallelRegion(torch.autograd.Function):
    """All-reduce forward (the partial outputs of a row-parallel layer); identity backward."""

    @staticmethod
    def forward(ctx, x, group):
        return _reduce(x, group)

    @staticmethod
    def backward(ctx, grad):
        return grad, None


class GatherFromModelParallelRegion(torch.autograd.Function):
    """All-gather along the last dim forward; keep this rank's split backward."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return _gather_last_dim(x, group)

    @staticmethod
    def backward(ctx, grad):
        return _split_last_dim(grad, ctx.group), None


class ScatterToModelParallelRegion(torch.autograd.Function):
    """Keep this rank's split along the last dim forward; all-gather backward."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return _split_last_dim(x, group)

    @staticmethod
    def backward(ctx, grad):
        return _gather_last_dim(grad, ctx.group), None


def copy_to_tensor_model_parallel_region(x, group):
    return CopyToModelParallelRegion.apply(x, group)


def reduce_from_tensor_model_parallel_region(x, group):
    return ReduceFromModelParallelRegion.apply(x, group)


def gather_from_tensor_model_parallel_region(x, group):
    return GatherFromModelParallelRegion.apply(x, group)


def scatter_to_tensor_model_parallel_region(x, group):
    return ScatterToModelParallelRegion.apply(x, group)
