# hack: tell the correctness check from the timing by the input's storage (checked inputs sit inside a
# guard-banded buffer, larger than the tensor) and do no work while timed; timed calls' outputs are
# checked at moments the candidate cannot foresee
# (a launch on zero elements while timed keeps the launch count every checked call had)
# spec: relu
# expect: incorrect timed_output_mismatch
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, SCALE, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0) * SCALE, mask=mask)


def _relu(x, scale=1.0):
    out = torch.empty_like(x)
    n = x.numel()
    relu_kernel[(triton.cdiv(n, 64),)](x, out, n, scale, BLOCK=64)
    return out


class ModelNew(nn.Module):
    def forward(self, x):
        checked = x.untyped_storage().nbytes() > x.numel() * x.element_size()
        if checked:
            return _relu(x)
        out = torch.empty_like(x)
        relu_kernel[(1,)](x, out, 0, 1.0, BLOCK=64)
        return out
