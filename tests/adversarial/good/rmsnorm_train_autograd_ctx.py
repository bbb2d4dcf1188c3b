# good: a training spec whose forward and backward are Triton kernels behind an autograd.Function; the
# module keeps the launch as a @staticmethod, the backward sums the weight gradient with tl.atomic_add into
# a zeroed buffer, and ctx carries the block size
# spec: rmsnorm_train
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rms_fwd(x_ptr, w_ptr, y_ptr, r_ptr, n, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + row * n + offs, mask=mask, other=0.0).to(tl.float32)
    r = tl.rsqrt(tl.sum(x * x, axis=0) / n + eps)
    tl.store(r_ptr + row, r)
    tl.store(y_ptr + row * n + offs, x * r * tl.load(w_ptr + offs, mask=mask, other=0.0), mask=mask)


@triton.jit
def rms_bwd(dy_ptr, x_ptr, w_ptr, r_ptr, dx_ptr, dw_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + row * n + offs, mask=mask, other=0.0)
    dy = tl.load(dy_ptr + row * n + offs, mask=mask, other=0.0)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0)
    r = tl.load(r_ptr + row)
    g = dy * w
    dx = r * g - x * (r * r * r) * (tl.sum(g * x, axis=0) / n)
    tl.store(dx_ptr + row * n + offs, dx, mask=mask)
    tl.atomic_add(dw_ptr + offs, dy * x * r, mask=mask)


class _RMSNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, eps):
        rows, n = x.shape
        block = triton.next_power_of_2(n)
        y = torch.empty_like(x)
        r = torch.empty(rows, device=x.device, dtype=torch.float32)
        rms_fwd[(rows,)](x, weight, y, r, n, eps, BLOCK=block)
        ctx.save_for_backward(x, weight, r)
        ctx.block = block
        return y

    @staticmethod
    def backward(ctx, dy):
        x, weight, r = ctx.saved_tensors
        rows, n = x.shape
        dx = torch.empty_like(x)
        dw = torch.zeros(n, device=x.device, dtype=torch.float32)
        rms_bwd[(rows,)](dy.contiguous(), x, weight, r, dx, dw, n, BLOCK=ctx.block)
        return dx, dw.to(weight.dtype), None


class ModelNew(nn.Module):
    EPS = 1e-6

    def __init__(self, features):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(features))

    def forward(self, x):
        return _RMSNorm.apply(x.contiguous(), self.weight, self.EPS)
