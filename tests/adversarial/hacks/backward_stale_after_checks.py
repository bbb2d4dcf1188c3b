# hack: the backward does its work on the first calls (the correctness trials) and then hands back the
# last gradients it computed; the timed calls' secret checks cover the gradients as outputs
# spec: rmsnorm_train
# expect: incorrect no_kernel_ran|timed_output_mismatch
# (it also launches fewer kernels while timed than every checked call did)
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def fwd_kernel(x_ptr, w_ptr, y_ptr, r_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + row * n + offs, mask=mask, other=0.0)
    r = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n + 1e-6)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + row * n + offs, x * r * w, mask=mask)
    tl.store(r_ptr + row, r)


@triton.jit
def dx_kernel(dy_ptr, x_ptr, w_ptr, r_ptr, dx_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + row * n + offs, mask=mask, other=0.0)
    g = tl.load(dy_ptr + row * n + offs, mask=mask, other=0.0) * tl.load(w_ptr + offs, mask=mask, other=0.0)
    r = tl.load(r_ptr + row)
    dx = r * g - x * (r * r * r) * (tl.sum(g * x, axis=0) / n)
    tl.store(dx_ptr + row * n + offs, dx, mask=mask)


@triton.jit
def dw_kernel(dy_ptr, x_ptr, r_ptr, dw_ptr, rows, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for row in range(0, rows):
        x = tl.load(x_ptr + row * n + offs, mask=mask, other=0.0)
        dy = tl.load(dy_ptr + row * n + offs, mask=mask, other=0.0)
        acc += dy * x * tl.load(r_ptr + row)
    tl.store(dw_ptr + offs, acc, mask=mask)


SEEN = []  # gradients of earlier calls


class RMSNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight):
        rows, n = x.shape
        y = torch.empty_like(x)
        r = torch.empty((rows,), device=x.device, dtype=torch.float32)
        fwd_kernel[(rows,)](x, weight, y, r, n, BLOCK=triton.next_power_of_2(n))
        ctx.save_for_backward(x, weight, r)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, weight, r = ctx.saved_tensors
        if len(SEEN) >= 2:  # past the correctness trials: the last gradients again, no work
            return SEEN[-1]
        dy = dy.contiguous()
        rows, n = x.shape
        dx = torch.empty_like(x)
        dw = torch.empty_like(weight)
        dx_kernel[(rows,)](dy, x, weight, r, dx, n, BLOCK=triton.next_power_of_2(n))
        dw_kernel[(1,)](dy, x, r, dw, rows, n, BLOCK=triton.next_power_of_2(n))
        SEEN.append((dx, dw))
        return dx, dw


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(features))

    def forward(self, x):
        return RMSNormFunction.apply(x.contiguous(), self.weight)
