# good: relu through a @triton.jit device helper, a module-level tl.constexpr global, @triton.jit(...) called
# with do_not_specialize, a 16-byte alignment check on data_ptr() picking a hint, the launch under
# torch.cuda.device(...) on GPUs (contextlib.nullcontext elsewhere), a @property and extra_repr
# spec: relu
import contextlib
from typing import ClassVar

import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_SIZE: tl.constexpr = tl.constexpr(64)


@triton.jit
def _relu(v):
    return tl.where(v > 0, v, tl.zeros_like(v))


@triton.jit(do_not_specialize=["n"])
def relu_kernel(x_ptr, out_ptr, n, ALIGNED: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    if ALIGNED:
        offs = tl.max_contiguous(tl.multiple_of(offs, BLOCK_SIZE), BLOCK_SIZE)
    mask = offs < n
    tl.store(out_ptr + offs, _relu(tl.load(x_ptr + offs, mask=mask, other=0.0)), mask=mask)


class ModelNew(nn.Module):
    ALIGNMENT: ClassVar[int] = 16

    def __init__(self):
        super().__init__()
        self._launches = 0

    @property
    def block(self) -> int:
        return BLOCK_SIZE.value

    def extra_repr(self) -> str:
        return f"block={self.block}, launches={self._launches}"

    def forward(self, x):
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"expected a tensor, got {type(x).__name__}")
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        aligned = x.data_ptr() % self.ALIGNMENT == 0 and out.data_ptr() % self.ALIGNMENT == 0
        device_ctx = torch.cuda.device(x.device) if x.is_cuda else contextlib.nullcontext()
        with device_ctx:
            relu_kernel[(triton.cdiv(n, self.block),)](x, out, n, ALIGNED=aligned)
        self._launches += 1
        return out
