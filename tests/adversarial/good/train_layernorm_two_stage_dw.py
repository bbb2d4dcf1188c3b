# good: the LayerNorm training spec behind an autograd.Function: the forward kernel saves each row's mean
# and rstd; the backward kernel writes dx and each row group's partial weight and bias gradients into an
# fp32 partials buffer, and a second kernel sums the groups (the Triton tutorial's two-stage reduction,
# without atomics); ModelNew holds an nn.LayerNorm for its parameters and never calls it
# spec: shipped:train_layernorm
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def ln_fwd(x_ptr, w_ptr, b_ptr, y_ptr, mean_ptr, rstd_ptr, n, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + row * n + offs, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n
    diff = tl.where(mask, x - mean, 0.0)
    rstd = tl.rsqrt(tl.sum(diff * diff, axis=0) / n + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + row * n + offs, diff * rstd * w + b, mask=mask)


@triton.jit
def ln_bwd_dx_partials(
    dy_ptr,
    x_ptr,
    w_ptr,
    mean_ptr,
    rstd_ptr,
    dx_ptr,
    pw_ptr,
    pb_ptr,
    rows,
    n,
    GROUP: tl.constexpr,
    BLOCK: tl.constexpr,
):
    g = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    w = tl.load(w_ptr + offs, mask=mask, other=0.0)
    dw = tl.zeros((BLOCK,), dtype=tl.float32)
    db = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(GROUP):
        row = g * GROUP + i
        if row < rows:
            x = tl.load(x_ptr + row * n + offs, mask=mask, other=0.0)
            dy = tl.load(dy_ptr + row * n + offs, mask=mask, other=0.0)
            xhat = tl.where(mask, (x - tl.load(mean_ptr + row)) * tl.load(rstd_ptr + row), 0.0)
            wdy = w * dy
            c1 = tl.sum(xhat * wdy, axis=0) / n
            c2 = tl.sum(wdy, axis=0) / n
            tl.store(dx_ptr + row * n + offs, (wdy - (xhat * c1 + c2)) * tl.load(rstd_ptr + row), mask=mask)
            dw += dy * xhat
            db += dy
    tl.store(pw_ptr + g * n + offs, dw, mask=mask)
    tl.store(pb_ptr + g * n + offs, db, mask=mask)


@triton.jit
def sum_groups(pw_ptr, pb_ptr, dw_ptr, db_ptr, groups, n, BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    gs = tl.arange(0, BLOCK_G)
    mask = (gs[:, None] < groups) & (cols[None, :] < n)
    pw = tl.load(pw_ptr + gs[:, None] * n + cols[None, :], mask=mask, other=0.0)
    pb = tl.load(pb_ptr + gs[:, None] * n + cols[None, :], mask=mask, other=0.0)
    tl.store(dw_ptr + cols, tl.sum(pw, axis=0), mask=cols < n)
    tl.store(db_ptr + cols, tl.sum(pb, axis=0), mask=cols < n)


class LayerNormFn(torch.autograd.Function):
    GROUP = 4

    @staticmethod
    def forward(ctx, x, weight, bias, eps):
        rows, n = x.shape
        block = triton.next_power_of_2(n)
        y = torch.empty_like(x)
        mean = torch.empty(rows, device=x.device, dtype=torch.float32)
        rstd = torch.empty_like(mean)
        ln_fwd[(rows,)](x, weight, bias, y, mean, rstd, n, eps, BLOCK=block)
        ctx.save_for_backward(x, weight, mean, rstd)
        return y

    @staticmethod
    def backward(ctx, dy):
        x, weight, mean, rstd = ctx.saved_tensors
        rows, n = x.shape
        block = triton.next_power_of_2(n)
        groups = triton.cdiv(rows, LayerNormFn.GROUP)
        dx = torch.empty_like(x)
        pw = torch.empty((groups, n), device=x.device, dtype=torch.float32)
        pb = torch.empty_like(pw)
        ln_bwd_dx_partials[(groups,)](
            dy.contiguous(), x, weight, mean, rstd, dx, pw, pb, rows, n, GROUP=LayerNormFn.GROUP, BLOCK=block
        )
        dw = torch.empty(n, device=x.device, dtype=weight.dtype)
        db = torch.empty_like(dw)
        sum_groups[(triton.cdiv(n, 64),)](
            pw, pb, dw, db, groups, n, BLOCK_G=triton.next_power_of_2(groups), BLOCK_N=64
        )
        return dx, dw, db, None


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.ln = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return LayerNormFn.apply(x.contiguous(), self.ln.weight, self.ln.bias, self.ln.eps)
