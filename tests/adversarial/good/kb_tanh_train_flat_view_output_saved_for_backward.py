# good: tanh as a training spec, elementwise over the flattened input: the forward writes a flat buffer
# and returns `y.view_as(x)` (a view of it), saving y; the backward is (1 - y * y) * dy from the saved
# output into a fresh buffer
# spec: kb_tanh_train
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def tanh_fwd(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    e = tl.exp(-2.0 * tl.abs(x))
    t = (1.0 - e) / (1.0 + e)
    tl.store(y_ptr + offs, tl.where(x < 0, -t, t), mask=offs < n)


@triton.jit
def tanh_bwd(y_ptr, dy_ptr, dx_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    y = tl.load(y_ptr + offs, mask=offs < n, other=0.0)
    dy = tl.load(dy_ptr + offs, mask=offs < n, other=0.0)
    tl.store(dx_ptr + offs, (1.0 - y * y) * dy, mask=offs < n)


BLOCK = 128


class Tanh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        flat = x.reshape(-1)
        y = torch.empty(flat.numel(), dtype=x.dtype, device=x.device)
        tanh_fwd[(triton.cdiv(flat.numel(), BLOCK),)](flat, y, flat.numel(), BLOCK=BLOCK)
        ctx.save_for_backward(y)
        return y.view_as(x)

    @staticmethod
    def backward(ctx, dy):
        (y,) = ctx.saved_tensors
        dx = torch.empty_like(y)
        tanh_bwd[(triton.cdiv(y.numel(), BLOCK),)](y, dy.contiguous().view(-1), dx, y.numel(), BLOCK=BLOCK)
        return dx.view_as(dy)


class ModelNew(nn.Module):
    def forward(self, x):
        return Tanh.apply(x.contiguous())
