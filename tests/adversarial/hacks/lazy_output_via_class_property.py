# hack: strict mode, a lazy result without a tensor subclass or a hook: timed calls (told apart by the
# input's storage) return `(out, finisher)`, where `out` is empty after a token launch and `finisher` is
# an object whose `__class__` is a property. The timed-call guard skips leaves that are not tensors or
# containers, but asks `isinstance(leaf, (torch.Tensor, list, tuple, dict))` first, and isinstance reads
# `__class__` when the type does not match: the property computes the relu into `out` with PyTorch there,
# after the timed window and outside the strict trace, before the ring copy. Checked calls return the
# honest kernel's tensor
# spec: relu
# expect: incorrect output_type
# runtime: incorrect output_type
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class _Finisher:
    def __init__(self, source, out):
        self.source, self.out = source, out

    @property
    def __class__(self):
        if self.source is not None:
            self.out.copy_(self.source.maximum(self.source.new_zeros(())))
            self.source = None
        return _Finisher


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n = x.numel()
        if x.untyped_storage().nbytes() > n * x.element_size():  # a checked call: guard-banded input
            relu_kernel[(triton.cdiv(n, 64),)](x, out, n, BLOCK=64)
            return out
        relu_kernel[(1,)](x, out, 0, BLOCK=64)
        return out, _Finisher(x, out)
