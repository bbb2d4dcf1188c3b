# good: the LayerNorm training spec with the autograd.Function behind a helper nn.Module defined in the
# same file (`FusedLayerNorm`, the reference's `ln` name, weight and bias), whose forward calls
# `_LayerNormFn.apply`; the backward writes dx per row and the weight and bias gradients by a
# column-parallel kernel that walks every row (no atomics, no partials)
# spec: shipped:train_layernorm
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def ln_fwd(x_ptr, w_ptr, b_ptr, y_ptr, xhat_ptr, rstd_ptr, n, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + row * n + offs, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n
    d = tl.where(mask, x - mean, 0.0)
    rstd = tl.rsqrt(tl.sum(d * d, axis=0) / n + eps)
    xhat = d * rstd
    tl.store(xhat_ptr + row * n + offs, xhat, mask=mask)
    tl.store(rstd_ptr + row, rstd)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + row * n + offs, xhat * w + b, mask=mask)


@triton.jit
def ln_bwd_dx(dy_ptr, xhat_ptr, w_ptr, rstd_ptr, dx_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    xhat = tl.load(xhat_ptr + row * n + offs, mask=mask, other=0.0)
    dy = tl.load(dy_ptr + row * n + offs, mask=mask, other=0.0)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0)
    wdy = w * dy
    c1 = tl.sum(xhat * wdy, axis=0) / n
    c2 = tl.sum(wdy, axis=0) / n
    tl.store(dx_ptr + row * n + offs, (wdy - xhat * c1 - c2) * tl.load(rstd_ptr + row), mask=mask)


@triton.jit
def ln_bwd_dwdb(dy_ptr, xhat_ptr, dw_ptr, db_ptr, rows, n, BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = cols < n
    dw = tl.zeros((BLOCK_N,), dtype=tl.float32)
    db = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for r in range(rows):
        dy = tl.load(dy_ptr + r * n + cols, mask=mask, other=0.0)
        dw += dy * tl.load(xhat_ptr + r * n + cols, mask=mask, other=0.0)
        db += dy
    tl.store(dw_ptr + cols, dw, mask=mask)
    tl.store(db_ptr + cols, db, mask=mask)


class _LayerNormFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, eps):
        rows, n = x.shape
        block = triton.next_power_of_2(n)
        y = torch.empty_like(x)
        xhat = torch.empty_like(x)
        rstd = x.new_empty(rows)
        ln_fwd[(rows,)](x, weight, bias, y, xhat, rstd, n, eps, BLOCK=block)
        ctx.save_for_backward(xhat, weight, rstd)
        return y

    @staticmethod
    def backward(ctx, dy):
        xhat, weight, rstd = ctx.saved_tensors
        rows, n = xhat.shape
        dy = dy.contiguous()
        dx = torch.empty_like(xhat)
        ln_bwd_dx[(rows,)](dy, xhat, weight, rstd, dx, n, BLOCK=triton.next_power_of_2(n))
        dw = torch.empty_like(weight)
        db = torch.empty_like(weight)
        ln_bwd_dwdb[(triton.cdiv(n, 64),)](dy, xhat, dw, db, rows, n, BLOCK_N=64)
        return dx, dw, db, None


class FusedLayerNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _LayerNormFn.apply(x.contiguous(), self.weight, self.bias, self.eps)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.ln = FusedLayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)
