# hack: a training step whose forward returns an empty tensor and whose backward fills it: one fused kernel
# computes the output and the input gradient in a single pass over x (one read of x saved). The step
# returned the forward's output after the backward had run, so it was right by then; in a model the next
# layer reads it before any backward. The forward alone (timed apart) must be right, so the forward tells
# the two apart: the training step asks ModelNew for its named_parameters() before each forward
# spec: rmsnorm_train
# expect: incorrect forward_output_deferred
# runtime: incorrect forward_output_deferred
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def fwd_kernel(x_ptr, w_ptr, y_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + row * n + offs, mask=mask, other=0.0)
    r = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n + 1e-6)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + row * n + offs, x * r * w, mask=mask)


@triton.jit
def fused_kernel(dy_ptr, x_ptr, w_ptr, y_ptr, dx_ptr, r_ptr, n, WRITE_Y: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + row * n + offs, mask=mask, other=0.0)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0)
    r = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n + 1e-6)
    if WRITE_Y:  # the forward's output, written now
        tl.store(y_ptr + row * n + offs, x * r * w, mask=mask)
    g = tl.load(dy_ptr + row * n + offs, mask=mask, other=0.0) * w
    dx = r * g - x * (r * r * r) * (tl.sum(g * x, axis=0) / n)
    tl.store(dx_ptr + row * n + offs, dx, mask=mask)
    tl.store(r_ptr + row, r)


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


STEP = {"next": False}  # whether the coming forward is a training step's (a backward follows)


class RMSNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, deferred):
        rows, n = x.shape
        y = torch.empty_like(x)
        if not deferred:
            fwd_kernel[(rows,)](x, weight, y, n, BLOCK=triton.next_power_of_2(n))
        ctx.deferred = deferred
        ctx.save_for_backward(x, weight, y)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, weight, y = ctx.saved_tensors
        dy = dy.contiguous()
        rows, n = x.shape
        dx = torch.empty_like(x)
        dw = torch.empty_like(weight)
        r = torch.empty((rows,), device=x.device, dtype=torch.float32)
        block = triton.next_power_of_2(n)
        fused_kernel[(rows,)](dy, x, weight, y, dx, r, n, WRITE_Y=ctx.deferred, BLOCK=block)
        dw_kernel[(1,)](dy, x, r, dw, rows, n, BLOCK=block)
        return dx, dw, None


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(features))

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        STEP["next"] = True
        return super().named_parameters(prefix, recurse, remove_duplicate)

    def forward(self, x):
        deferred = STEP["next"]
        STEP["next"] = False
        return RMSNormFunction.apply(x.contiguous(), self.weight, deferred)
